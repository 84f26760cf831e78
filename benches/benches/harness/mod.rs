//! Running a bench group: under criterion, or in interleaved rounds (`TABULA_BENCH_ROUNDS`).
//! Shared by the bench targets as `#[macro_use] mod harness;`.
//!
//! Criterion measures one entry after another, so on a shared machine a load change between
//! `tabula` and `raw` skews their ratio. With `TABULA_BENCH_ROUNDS=<n>` set, each group
//! instead runs its entries in `n` rounds, each entry once per round for the same number of
//! passes (about 2 ms of the slowest entry), and reports every entry's fastest round (the cost
//! with the least interference) and its ratio to the baseline:
//!
//! ```text
//! TABULA_BENCH_ROUNDS=300 cargo bench -p tabula-benches --bench <query | storage> [-- <group filter>]
//! ```
//!
//! A pass finds in the caches what the pass before it left there, so each round runs the
//! entries in a freshly drawn order, and the 1M-entity groups empty the caches before every
//! round (their 24 MB of columns would otherwise sit partly in a 32 MB L3, warmer after a pass
//! over the same data). Interleaved mode also builds each group's state [`PLACEMENTS`] times,
//! all alive at once, with tabula's and raw's data allocated in alternating order, and runs
//! the rounds on the copies in turn: where the allocator and the kernel put a group's memory
//! moves a memory-bound pass by up to 10%, so one copy per process would make the ratio a
//! lottery. The history of docs/benchmarks.md (`git log -p`) tells how each of these showed.

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::BenchmarkGroup;
use criterion::measurement::WallTime;

/// A seeded xorshift64* generator: the same sequence every run.
pub struct Rng(pub u64);

impl Rng {
    /// The next number of the sequence.
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

/// `TABULA_BENCH_ROUNDS`, when set: the number of interleaved rounds.
pub fn interleaved_rounds() -> Option<usize> {
    let rounds = std::env::var("TABULA_BENCH_ROUNDS").ok()?;
    Some(
        rounds
            .parse()
            .expect("TABULA_BENCH_ROUNDS must be a number of rounds"),
    )
}

/// In interleaved mode, whether the group is selected by the command line's filter.
pub fn selected(group: &str) -> bool {
    std::env::args()
        .skip(1)
        .find(|arg| !arg.starts_with("--"))
        .is_none_or(|filter| group.contains(&filter))
}

/// How many copies of each group's state interleaved mode builds (see the module docs).
pub const PLACEMENTS: usize = 4;

/// The states a group runs on: [`PLACEMENTS`] copies made by `make` (given the copy's
/// number) in interleaved mode, one under criterion.
pub fn placements<S>(make: impl FnMut(usize) -> S) -> Vec<S> {
    let copies = if interleaved_rounds().is_some() {
        PLACEMENTS
    } else {
        1
    };
    (0..copies).map(make).collect()
}

/// `(tabula(), raw())`, allocated in that order for even copies and the other way round for
/// odd ones: what is allocated first lands elsewhere in memory than what follows it, which
/// moved big_iter by up to 5% either way in a standalone test, so neither side keeps the
/// same turn.
pub fn in_turn<T, R>(copy: usize, tabula: impl FnOnce() -> T, raw: impl FnOnce() -> R) -> (T, R) {
    if copy.is_multiple_of(2) {
        let tabula = tabula();
        (tabula, raw())
    } else {
        let raw = raw();
        (tabula(), raw)
    }
}

/// One entry under criterion. With `prepare`, it runs before every timed pass, untimed.
pub fn criterion_entry<S>(
    group: &mut BenchmarkGroup<'_, WallTime>,
    name: &str,
    state: &mut S,
    prepare: Option<impl FnMut(&mut S)>,
    mut run: impl FnMut(&mut S),
) {
    match prepare {
        None => group.bench_function(name, |b| b.iter(|| run(state))),
        Some(mut prepare) => group.bench_function(name, |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    prepare(state);
                    let start = Instant::now();
                    run(state);
                    total += start.elapsed();
                }
                total
            })
        }),
    };
}

/// Fastest time of one pass over one interleaved round; `reps` passes make a round.
pub fn interleaved_round<S>(
    state: &mut S,
    reps: usize,
    prepare: &mut Option<impl FnMut(&mut S)>,
    run: &mut impl FnMut(&mut S),
) -> f64 {
    let mut total = Duration::ZERO;
    match prepare {
        None => {
            let start = Instant::now();
            for _ in 0..reps {
                run(state);
            }
            total = start.elapsed();
        }
        Some(prepare) => {
            for _ in 0..reps {
                prepare(state);
                let start = Instant::now();
                run(state);
                total += start.elapsed();
            }
        }
    }
    total.as_secs_f64() / reps as f64
}

/// What a group's state does before each interleaved round, untimed.
pub trait Rounds {
    /// Nothing, by default. A state whose passes stream more than the caches hold empties
    /// them here ([`evict_caches`]): otherwise a pass would run partly from whatever the pass
    /// before it left in the 32 MB L3, which depends on which entry that was.
    fn before_round(&mut self) {}
}

/// Reads 64 MB of memory that no entry uses, so that the next pass finds none of its data
/// in the caches (and no dirty lines to write back).
pub fn evict_caches() {
    static SCRATCH: std::sync::OnceLock<Vec<u64>> = std::sync::OnceLock::new();
    let scratch = SCRATCH.get_or_init(|| (0..8 << 20).collect());
    black_box(black_box(scratch).iter().fold(0u64, |a, &b| a ^ b));
}

/// `0..n` in an order drawn from `rng`.
pub fn shuffled(n: usize, rng: &mut Rng) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        order.swap(i, (rng.next() % (i as u64 + 1)) as usize);
    }
    order
}

/// Prints each entry's fastest round and its ratio to the group's baseline (`raw`, or the
/// first entry whose name starts with `raw`), then its median round and that ratio: the
/// fastest round is the cost with the least interference, the median shows how typical it
/// is. `rounds[entry]` holds the entry's per-pass time of every round.
pub fn interleaved_report(group: &str, names: &[&str], rounds: &mut [Vec<f64>]) {
    let baseline = names
        .iter()
        .position(|&n| n == "raw")
        .or_else(|| names.iter().position(|n| n.starts_with("raw")))
        .unwrap_or(0);
    for times in rounds.iter_mut() {
        times.sort_by(f64::total_cmp);
    }
    let fastest = |entry: usize| rounds[entry][0];
    let median = |entry: usize| rounds[entry][rounds[entry].len() / 2];
    for (entry, name) in names.iter().enumerate() {
        println!(
            "{:<40} fastest round {:>12.1} ns   x{:.3} of {}   median {:>12.1} ns   x{:.3}",
            format!("{group}/{name}"),
            fastest(entry) * 1e9,
            fastest(entry) / fastest(baseline),
            names[baseline],
            median(entry) * 1e9,
            median(entry) / median(baseline),
        );
    }
}

/// Optional `prepare` closure of an entry.
#[allow(unused_macros)]
macro_rules! prepare {
    () => {
        None::<fn(&mut _)>
    };
    ($prepare:expr) => {
        Some($prepare)
    };
}

/// Runs the entries `name => |state| pass` (optionally `, prepare |state| untimed setup`) of
/// one group over `states` (from [`placements`]), under criterion (on the first state) or
/// interleaved (each round on the next state). `configure |group| ..` before the entries
/// adjusts the criterion group (sample size, measurement time).
macro_rules! bench_group {
    ($c:expr, $group:expr, $states:expr, $(configure $configure:expr,)? [$($name:literal => $run:expr $(, prepare $prepare:expr)?;)+]) => {{
        let states: &mut [_] = $states;
        match interleaved_rounds() {
            None => {
                let mut group = $c.benchmark_group($group);
                $(($configure)(&mut group);)?
                $(criterion_entry(&mut group, $name, &mut states[0], prepare!($($prepare)?), $run);)+
                group.finish();
            }
            Some(_) if !selected($group) => {}
            Some(rounds) => {
                let names = [$($name),+];
                let mut times = vec![Vec::with_capacity(rounds); names.len()];
                let mut slowest = 0.0f64;
                let mut order_rng = Rng(0x2545_f491_4f6c_dd1d);
                let mut reps = 0;
                for round in 0..=rounds {
                    let copies = states.len();
                    let state = &mut states[round % copies];
                    // Each round runs the entries in a fresh random order, so that every
                    // entry follows every other about equally often: a pass finds in the
                    // caches what the pass before it left there (big_iter's 24 MB of columns
                    // fit in a 32 MB L3), and any fixed cycle would give each entry the same
                    // predecessor every round.
                    let order = shuffled(names.len(), &mut order_rng);
                    for turn in 0..names.len() {
                        let mut entry = 0;
                        $(
                            if entry == order[turn] {
                                let mut prepare = prepare!($($prepare)?);
                                let mut run = $run;
                                if round == 0 {
                                    // Warm up, timing one pass.
                                    let once = interleaved_round(&mut *state, 1, &mut prepare, &mut run);
                                    slowest = slowest.max(once);
                                } else {
                                    state.before_round();
                                    let secs = interleaved_round(&mut *state, reps, &mut prepare, &mut run);
                                    times[entry].push(secs);
                                }
                            }
                            entry += 1;
                        )+
                        let _ = entry;
                    }
                    // Every entry runs the same number of passes per round, enough for about
                    // 2 ms of the slowest, so that each has the same share of passes that
                    // follow a pass of its own.
                    reps = ((2e-3 / slowest.max(1e-9)) as usize).clamp(1, 100_000);
                }
                interleaved_report($group, &names, &mut times);
            }
        }
    }};
}
