//! `Scratch`: the arena is emptied and reused run after run (its size stays flat), what a run
//! builds in it is right, per-worker arenas work from `par_for_each` and give the same result
//! with one thread or four, and the parameter orders no systems.

use tabula_core::World;
use tabula_schedule::prelude::*;

/// Entries the frame-building systems put in their temporary collection each run.
const ENTRIES: usize = 10_000;

/// A position on a 1-D line, bucketed into cells.
struct Position(u32);

/// What the bucketing system saw: per run, the arena's bytes after building, and the
/// collection's checksum.
#[derive(Default)]
struct Report {
    arena_bytes: Vec<usize>,
    checksums: Vec<u64>,
}

/// Folds a (cell, position) list with each entry's rank.
fn checksum(entries: &[(u32, u32)]) -> u64 {
    entries.iter().enumerate().fold(0u64, |acc, (rank, &(cell, x))| {
        acc.wrapping_mul(31)
            .wrapping_add(rank as u64 ^ (u64::from(cell) << 20) ^ u64::from(x))
    })
}

/// The checksum `bucket_positions` computes, the plain way, in a `Vec`.
fn expected_checksum(positions: &[u32]) -> u64 {
    let entries: Vec<(u32, u32)> = positions.iter().map(|&x| (x / 64, x)).collect();
    checksum(&entries)
}

/// Builds a 10,000-entry (cell, position) list in the arena by pushing (so it grows, in
/// place: it is the arena's last allocation), copies its cells into a slice, and folds the
/// list into a checksum.
fn bucket_positions(q: Query<&Position>, scratch: Scratch, mut report: ResMut<Report>) {
    let mut entries = scratch.vec();
    for p in &q {
        entries.push((p.0 / 64, p.0));
    }
    assert_eq!(entries.len(), ENTRIES);
    // And a slice filled at once, beside the vector.
    let cells = scratch.alloc_slice_fill_iter(entries.iter().map(|&(cell, _)| cell));
    assert!(cells.iter().zip(&entries).all(|(&c, &(cell, _))| c == cell));
    report.arena_bytes.push(scratch.allocated_bytes());
    report.checksums.push(checksum(&entries));
}

fn positions(n: usize) -> Vec<u32> {
    let mut state = 0x9e37_79b9u32;
    (0..n)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            state % 100_000
        })
        .collect()
}

#[test]
fn the_arena_is_reused_run_after_run_and_its_size_stays_flat() {
    let xs = positions(ENTRIES);
    let mut world = World::new();
    world.init_resource::<Report>();
    world
        .spawn_batch(xs.iter().map(|&x| (Position(x),)))
        .for_each(drop);
    let mut schedule = Schedule::new();
    schedule.add_systems(bucket_positions);
    for _ in 0..1_000 {
        schedule.run(&mut world);
    }

    let report = world.resource::<Report>().unwrap();
    assert_eq!(report.checksums.len(), 1_000);
    let expected = expected_checksum(&xs);
    assert!(
        report.checksums.iter().all(|&c| c == expected),
        "a run built a wrong list"
    );

    // The first runs grow the arena until one block holds a run; from then on it is flat.
    let bytes = &report.arena_bytes;
    let settled = bytes[10];
    assert!(
        bytes[10..].iter().all(|&b| b == settled),
        "the arena kept growing after 10 runs: {:?} .. {:?}",
        &bytes[..12],
        &bytes[bytes.len() - 3..],
    );
    // A run needs 80 KB for the list and 40 KB for the slice (pushing grows the list to
    // 128 KB); once settled, the arena is one block of no more than a few times that.
    let needed = ENTRIES * (size_of::<(u32, u32)>() + size_of::<u32>());
    assert!(settled >= needed, "{settled} bytes cannot hold {needed}");
    assert!(settled <= 4 * needed, "{settled} bytes for a run of {needed}");
}

/// A number and what the per-worker system computes from it.
struct Seed(u32);
#[derive(Default)]
struct Divisors {
    count: u32,
    sum: u64,
    // The divisors, sorted descending, folded: exercises a per-row collection's content.
    folded: u64,
}

/// For every seed, lists its divisors in the thread's arena, sorts them, and folds them.
fn divisors(mut q: Query<(&Seed, &mut Divisors)>, scratch: Scratch) {
    let workers = scratch.per_worker();
    q.par_for_each_mut(|(seed, mut out)| {
        let arena = workers.get();
        let mut list = arena.vec();
        list.extend((1..=seed.0).filter(|d| seed.0.is_multiple_of(*d)));
        list.sort_unstable_by(|a, b| b.cmp(a));
        // A second allocation per row, filled at once.
        let squares = arena.alloc_slice_fill_iter(list.iter().map(|&d| u64::from(d) * u64::from(d)));
        out.count = list.len() as u32;
        out.sum = list.iter().map(|&d| u64::from(d)).sum();
        out.folded = squares
            .iter()
            .fold(0u64, |acc, &s| acc.wrapping_mul(1_000_003) ^ s);
    });
}

fn expected_divisors(n: u32) -> (u32, u64, u64) {
    let mut list: Vec<u32> = (1..=n).filter(|d| n.is_multiple_of(*d)).collect();
    list.reverse();
    let folded = list.iter().fold(0u64, |acc, &d| {
        acc.wrapping_mul(1_000_003) ^ (u64::from(d) * u64::from(d))
    });
    (
        list.len() as u32,
        list.iter().map(|&d| u64::from(d)).sum(),
        folded,
    )
}

/// Runs `divisors` over 2,000 seeds for `runs` runs in a pool of `threads` threads, and returns
/// every seed's result.
fn run_divisors(threads: usize, runs: usize) -> Vec<(u32, u64, u64)> {
    let mut world = World::new();
    let ids: Vec<_> = world
        .spawn_batch((1..=2_000u32).map(|n| (Seed(n), Divisors::default())))
        .collect();
    let mut schedule = Schedule::new();
    schedule.add_systems(divisors);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap();
    pool.install(|| {
        for _ in 0..runs {
            schedule.run(&mut world);
        }
    });
    ids.iter()
        .map(|&e| {
            let d = world.get::<Divisors>(e).unwrap();
            (d.count, d.sum, d.folded)
        })
        .collect()
}

/// Under ThreadSanitizer (CI runs every test of this crate there), the four-thread run also
/// shows that no two threads share an arena: `Bump` is not `Sync`, so sharing one would race.
#[test]
fn per_worker_arenas_from_par_for_each_give_the_same_result_with_one_thread_and_four() {
    let one = run_divisors(1, 3);
    let four = run_divisors(4, 3);
    let expected: Vec<_> = (1..=2_000u32).map(expected_divisors).collect();
    assert_eq!(one, expected);
    assert_eq!(four, expected);
}

/// The per-worker arenas are emptied at the start of each run too: on one thread, where the
/// system's thread is the only worker, that arena's size stays flat.
#[test]
fn par_for_each_worker_arenas_are_reset_every_run() {
    #[derive(Default)]
    struct Sizes(Vec<usize>);

    fn fill(q: Query<&Seed>, scratch: Scratch, mut sizes: ResMut<Sizes>) {
        let workers = scratch.per_worker();
        q.par_for_each(|seed| {
            // Kept until the next run: 2,000 rows of 16 bytes each.
            let row = workers.get().alloc_slice_fill_copy(4, seed.0);
            assert_eq!(row[3], seed.0);
        });
        sizes.0.push(workers.get().allocated_bytes());
    }

    let mut world = World::new();
    world.init_resource::<Sizes>();
    world
        .spawn_batch((0..2_000u32).map(|n| (Seed(n),)))
        .for_each(drop);
    let mut schedule = Schedule::new();
    schedule.add_systems(fill);
    let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
    pool.install(|| {
        for _ in 0..200 {
            schedule.run(&mut world);
        }
    });
    let sizes = &world.resource::<Sizes>().unwrap().0;
    assert!(sizes[0] >= 2_000 * 16);
    assert!(
        sizes[10..].iter().all(|&b| b == sizes[10]) && sizes[10] <= 4 * 2_000 * 16,
        "the worker arena kept growing: {:?} .. {:?}",
        &sizes[..12],
        &sizes[sizes.len() - 3..],
    );
}

/// Two systems with nothing but scratch memory (and a third with it beside data) share no
/// edge: the parameter declares no access.
#[test]
fn scratch_declares_no_access_so_systems_with_it_run_in_parallel() {
    #[derive(Default)]
    struct Left(u64);
    #[derive(Default)]
    struct Right(u64);

    fn only_scratch(scratch: Scratch) {
        let xs = scratch.alloc_slice_fill_iter(0..100u32);
        assert_eq!(xs.iter().sum::<u32>(), 4_950);
    }
    fn also_only_scratch(scratch: Scratch, mut local: Local<u32>) {
        *local += 1;
        scratch.alloc(*local);
    }
    fn left(scratch: Scratch, mut left: ResMut<Left>) {
        left.0 += scratch.alloc_slice_copy(&[1u64, 2, 3]).iter().sum::<u64>();
    }
    fn right(scratch: Scratch, mut right: ResMut<Right>) {
        let mut v = scratch.vec_with_capacity(3);
        v.extend([4u64, 5, 6]);
        right.0 += v.iter().sum::<u64>();
    }

    let mut world = World::new();
    world.init_resource::<Left>();
    world.init_resource::<Right>();
    let mut schedule = Schedule::new();
    schedule.add_systems((only_scratch, also_only_scratch, left, right));
    let edges = schedule.dependencies(&mut world).unwrap();
    assert!(
        edges.is_empty(),
        "scratch memory ordered systems: {:?}",
        edges
            .iter()
            .map(|d| format!("{} -> {}: {}", d.before, d.after, d.reason))
            .collect::<Vec<_>>()
    );
    schedule.run(&mut world);
    schedule.run(&mut world);
    assert_eq!(world.resource::<Left>().unwrap().0, 12);
    assert_eq!(world.resource::<Right>().unwrap().0, 30);
}

/// Values that own heap memory go in a `ScratchVec`, which drops them.
#[test]
fn a_scratch_vec_drops_its_elements() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[derive(Default)]
    struct Drops(Arc<AtomicUsize>);
    struct Counted(Arc<AtomicUsize>);
    impl Drop for Counted {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn build(scratch: Scratch, drops: Res<Drops>) {
        let mut v = scratch.vec();
        v.extend((0..10).map(|_| Counted(drops.0.clone())));
        assert_eq!(v.len(), 10);
    }

    let counter = Arc::new(AtomicUsize::new(0));
    let mut world = World::new();
    world.insert_resource(Drops(counter.clone()));
    let mut schedule = Schedule::new();
    schedule.add_systems(build);
    schedule.run(&mut world);
    schedule.run(&mut world);
    assert_eq!(counter.load(Ordering::Relaxed), 20);
}

/// `ScratchVec` does what `Vec` does, step for step; `into_slice` and `alloc_str` keep
/// values for the rest of the run.
#[test]
fn a_scratch_vec_matches_a_vec() {
    fn compare(scratch: Scratch) {
        let mut mine = scratch.vec_with_capacity(4);
        let mut theirs = Vec::with_capacity(4);
        for i in 0..50u32 {
            mine.push(i * 7 % 13);
            theirs.push(i * 7 % 13);
        }
        mine.insert(3, 99);
        theirs.insert(3, 99);
        assert_eq!(mine.remove(10), theirs.remove(10));
        assert_eq!(mine.swap_remove(0), theirs.swap_remove(0));
        mine.retain(|&x| x % 2 == 0);
        theirs.retain(|&x| x % 2 == 0);
        mine.extend_from_slice(&[1, 2, 3]);
        theirs.extend_from_slice(&[1, 2, 3]);
        mine.extend([4, 5]);
        theirs.extend([4, 5]);
        assert_eq!(mine.pop(), theirs.pop());
        mine.sort_unstable();
        theirs.sort_unstable();
        for x in &mut mine {
            *x += 1;
        }
        for x in &mut theirs {
            *x += 1;
        }
        assert_eq!(mine.as_slice(), &theirs[..]);
        assert_eq!(format!("{mine:?}"), format!("{theirs:?}"));
        mine.truncate(5);
        mine.resize(8, 0);
        assert_eq!(mine.len(), 8);
        assert!(mine.capacity() >= 8);
        let kept: &mut [u32] = mine.into_slice();
        kept[7] = 1;
        let name = scratch.alloc_str("scratch");
        name.make_ascii_uppercase();
        assert_eq!(&*name, "SCRATCH");
        let mut empty = scratch.vec::<u8>();
        empty.reserve(10);
        assert!(empty.is_empty() && empty.capacity() >= 10);
        empty.clear();
        assert_eq!(kept[..5], theirs[..5]);
        assert_eq!(kept[5..], [0, 0, 1]);
    }

    let mut world = World::new();
    let mut schedule = Schedule::new();
    schedule.add_systems(compare);
    schedule.run(&mut world);
    schedule.run(&mut world);
}
