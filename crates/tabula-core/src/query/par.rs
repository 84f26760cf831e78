//! `par_for_each`: a query's rows spread over rayon's thread pool.
//!
//! The matched archetypes are cut into *runs* of rows, each handed to one task. By default
//! rayon cuts them as it goes: every archetype is one run that is halved whenever a thread
//! is idle to take the other half (rayon's adaptive splitting, as for a `par_iter` over a
//! `Vec`), down to a least length: each pass times its runs, and the next keeps its runs
//! long enough for about 20 us of rows at that cost per row. So expensive rows are shared
//! out to the last few rows, while cheap ones make a handful of runs however many threads
//! the pool has: cut finer, a 50-flop kernel spent more on tasks and on waking threads than
//! it gained, and a pool of 8 threads on 2 cores made the pass slower than 2 threads did.
//! With [`BatchSize::Fixed`] the runs are that many rows each. Runs never
//! share a row, so the mutable items handed to different threads never alias. Below a size
//! threshold the query runs serially: spawning tasks would cost more than the work.
//!
//! Change marks follow `for_each`'s scheme per run: a run that wrote every row leaves its
//! marks pending, and after the parallel section an archetype whose pending runs cover all
//! of its rows gets one changed floor; the pending runs of any other archetype fill their
//! rows' ticks. The pending runs travel back up rayon's join tree as each run's return
//! value, neighbours merged into one range, so no run takes a lock or touches memory another
//! run writes; in the steady state (every row written) each archetype comes back as one
//! range and nothing is allocated. A panic out of the closure is caught per run and rethrown
//! after the marks are made.
//!
//! Command scopes (`ParallelCommandQueue`) recorded by the closure apply in serial row
//! order: a pass takes one event of the calling thread's command context as its base, and
//! each run records under `base ++ [archetype, start]` on whichever thread runs it; a pass
//! that runs serially is one run, `base ++ [0, 0]`. A pass nested in the closure takes its
//! base from the run it is called in. See `command/parallel.rs`.
//!
//! A query with sparse-set terms (`query/sparse.rs`) is cut into the same runs; a run looks
//! each row's entity up in the sets and every written item marks its own dense row there, so
//! its runs leave nothing pending. Distinct archetype rows are distinct entities, whose
//! dense rows in a set are distinct, so runs of a sparse query never alias either.
//!
//! A tracer (the schedule's traced runs) sees each run of a pass through a *batch sink*
//! ([`with_batch_sink`]): a pass reads the calling thread's sink once, when it starts, and
//! every run reports its rows and times to it on whichever thread ran it.

use std::any::Any;
use std::cell::Cell;
use std::num::NonZeroUsize;
use std::ops::Range;
use std::panic::{self, AssertUnwindSafe};
use std::sync::OnceLock;
use std::sync::atomic::Ordering;
use std::time::Instant;

use rayon::prelude::*;

use super::fetch::QueryData;
use super::filter::QueryFilter;
use super::for_each::{Marks, run_rows};
use super::state::{QueryState, fetch_matched};
use crate::archetype::Archetype;
use crate::change::RunTicks;
use crate::command::parallel::PassBase;
use crate::world::{UnsafeWorldCell, World};

/// Queries with at most this many matching rows run serially unless a batch size is set.
const SERIAL_THRESHOLD: usize = 128;

/// What a batch sink is called with: a run of `rows` rows (the third argument) ran on the
/// current thread from the first instant to the second.
type BatchSink<'a> = dyn Fn(Instant, Instant, usize) + Sync + 'a;

thread_local! {
    /// The sink of the passes started on this thread, set by [`with_batch_sink`] for the length
    /// of its call (its lifetime erased) and `None` outside it.
    static BATCH_SINK: Cell<Option<&'static BatchSink<'static>>> = const { Cell::new(None) };
}

thread_local! {
    /// Set by [`with_serial_passes`] for the length of its call: passes started on this
    /// thread run on it, serially.
    static SERIAL_PASSES: Cell<bool> = const { Cell::new(false) };
}

/// Runs `f` with every `par_for_each` pass started on this thread within it run serially,
/// on this thread, as a pass too small to split is. Nested calls nest; the previous setting
/// is back when `f` returns or unwinds.
///
/// For schedulers: a set's run condition is evaluated once while other threads may wait
/// for its verdict, and a pass split over rayon would let a waiting thread hold a piece of
/// it (rayon's work stealing), so that each waits for the other. Cost: one thread-local
/// load per pass.
#[doc(hidden)]
pub fn with_serial_passes<R>(f: impl FnOnce() -> R) -> R {
    /// Puts the previous setting back, on return and on unwinding alike.
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            SERIAL_PASSES.set(self.0);
        }
    }
    let _restore = Restore(SERIAL_PASSES.replace(true));
    f()
}

/// Runs `f` with `sink` told of every run of rows of the `par_for_each` passes started on
/// this thread within it (a pass run serially is one run, on this thread): the sink is called
/// on the thread that ran the run, right after it, with its start, end and row count. Nested
/// calls see the innermost sink; the previous one is back when `f` returns or unwinds.
///
/// For tracers (the schedule installs one around each system of a traced run). Cost when no
/// sink is set: one thread-local load per pass (a `const`-initialised `Cell`, no lazy
/// initialisation) and one well-predicted branch per run, and no clock read beyond what an
/// automatic pass already takes to size its runs.
#[doc(hidden)]
pub fn with_batch_sink<R>(sink: &BatchSink<'_>, f: impl FnOnce() -> R) -> R {
    /// Puts the previous sink back, on return and on unwinding alike.
    struct Restore(Option<&'static BatchSink<'static>>);
    impl Drop for Restore {
        fn drop(&mut self) {
            BATCH_SINK.set(self.0);
        }
    }
    // SAFETY: only the lifetime changes. The erased reference stays in the thread-local until
    // `Restore` drops, at the end of this call, while `sink` is still borrowed; it is read
    // only by passes started within `f`, which use it until they return, also within `f`.
    let erased = unsafe { std::mem::transmute::<&BatchSink<'_>, &'static BatchSink<'static>>(sink) };
    let _restore = Restore(BATCH_SINK.replace(Some(erased)));
    f()
}

/// How `par_for_each` cuts a query into batches.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum BatchSize {
    /// Let rayon halve each archetype's rows while threads are idle to take the halves (its
    /// adaptive splitting), and run serially when the query is small.
    #[default]
    Automatic,
    /// Exactly this many rows per batch (at least 1); serial when everything fits one batch.
    Fixed(usize),
}

impl<D: QueryData, F: QueryFilter> QueryState<D, F> {
    /// Sets how [`par_for_each`](Self::par_for_each) splits the work.
    pub fn set_batch_size(&mut self, batch_size: BatchSize) -> &mut Self {
        self.par_batch_size = batch_size;
        self
    }

    /// Calls `f` on every matching item, on all of rayon's threads.
    ///
    /// ```
    /// use tabula::World;
    /// let mut world = World::new();
    /// world.spawn_batch((0..2_000u32).map(|i| (i, 0u64)));
    /// let mut q = world.query::<(&u32, &mut u64)>();
    /// q.par_for_each(&mut world, |(n, mut square)| *square = u64::from(*n) * u64::from(*n));
    /// let total: u64 = world.query::<&u64>().iter(&world).sum();
    /// assert_eq!(total, (0..2_000u64).map(|n| n * n).sum::<u64>());
    /// ```
    pub fn par_for_each<Func>(&mut self, world: &mut World, f: Func)
    where
        Func: Fn(D::Item<'_>) + Send + Sync,
    {
        let ticks = self.begin_run_mut(world);
        // SAFETY: `&mut World` is exclusive for the call, the state is this world's and up to
        // date, and its access was checked for self-aliasing when built.
        unsafe { self.par_for_each_unchecked(UnsafeWorldCell::new_mutable(world), ticks, f) }
    }

    /// [`par_for_each`](Self::par_for_each) through an [`UnsafeWorldCell`], for schedulers.
    ///
    /// # Safety
    /// As for [`iter_unchecked`](Self::iter_unchecked).
    pub unsafe fn par_for_each_unchecked<Func>(&self, world: UnsafeWorldCell<'_>, ticks: RunTicks, f: Func)
    where
        Func: Fn(D::Item<'_>) + Send + Sync,
    {
        // SAFETY: only the archetype list (structure) is read through this reference.
        let archetypes = unsafe { world.world() }.archetype_list();
        let total: usize = self
            .matched
            .iter()
            .map(|m| archetypes[m.archetype.index()].len())
            .sum();
        let threads = rayon::current_num_threads();
        let serial = match self.par_batch_size {
            BatchSize::Fixed(n) => total <= n.max(1),
            BatchSize::Automatic => total <= SERIAL_THRESHOLD,
        };
        // The pass takes its place in the calling thread's command context, and command
        // scopes made in the closure are keyed under it by their run's archetype and start,
        // so they apply in serial row order (`command/parallel.rs`).
        let pass = crate::command::parallel::begin_pass();
        // A tracer's sink (see `with_batch_sink`): one thread-local load per pass, `None`
        // unless a traced schedule run installed one.
        let sink = BATCH_SINK.get();
        if serial || threads <= 1 || SERIAL_PASSES.get() {
            let start = sink.map(|_| Instant::now());
            // One run, `base ++ [0, 0]`: its scopes follow row order, and sort against
            // everything outside the pass as the parallel runs' scopes would.
            crate::command::parallel::in_run(&pass, 0, 0, || {
                // SAFETY: forwarded contract.
                unsafe { self.for_each_unchecked(world, ticks, f) }
            });
            if let (Some(sink), Some(start)) = (sink, start) {
                sink(start, Instant::now(), total);
            }
            return;
        }
        // SAFETY: forwarded contract.
        unsafe { self.par_runs(world, ticks, f, archetypes, total, threads, &pass, sink) };
    }

    /// The parallel half of [`par_for_each_unchecked`](Self::par_for_each_unchecked): the
    /// pass cut into runs on rayon's threads, for the table or the sparse path.
    ///
    /// Out of line so that the serial half stays small: inlined, this body pushed the
    /// serial `for_each` walk over an inlining budget, its fetches stayed in memory and
    /// game_frame's `steer` lost its vector loop (4.2 M against 2.8 M instructions a frame
    /// on one thread, callgrind).
    ///
    /// # Safety
    /// As for [`par_for_each_unchecked`](Self::par_for_each_unchecked); `archetypes` is the
    /// world's list, `total` the matched rows in it, `pass` begun for this pass.
    #[allow(clippy::too_many_arguments)]
    #[inline(never)]
    unsafe fn par_runs<Func>(
        &self,
        world: UnsafeWorldCell<'_>,
        ticks: RunTicks,
        f: Func,
        archetypes: &[Archetype],
        total: usize,
        threads: usize,
        pass: &PassBase,
        sink: Option<&BatchSink<'_>>,
    ) where
        Func: Fn(D::Item<'_>) + Send + Sync,
    {
        let matched = &self.matched;
        let automatic = self.par_batch_size == BatchSize::Automatic;
        if self.sparse {
            let (data_state, filter_state) = (&self.data_state, &self.filter_state);
            // The sparse path's run: each row looked up in the sets and marked as it is
            // written (see `query/sparse.rs`), so nothing is left pending.
            let run = |index: usize, rows: Range<usize>, _len: usize| -> Outcome {
                let matched = &matched[index];
                let archetype = &archetypes[matched.archetype.index()];
                run_timed(pass, sink, automatic, index, rows.clone(), |_| {
                    // SAFETY: the caller holds the query's access and keeps structural
                    // changes out (so no set moves or changes shape while the run reads it);
                    // the state is up to date and on the sparse path; only the structure is
                    // read through the world. Runs cover disjoint rows of one archetype, and
                    // distinct rows hold distinct entities, whose dense rows in each set are
                    // distinct too, so the items (and the tick each `Mut` marks) handed to
                    // different threads never alias; components are `Send + Sync`.
                    unsafe {
                        super::sparse::for_each_sparse_rows::<D, F>(
                            world.world(),
                            data_state,
                            filter_state,
                            matched,
                            archetype,
                            rows,
                            ticks,
                            &mut |item| f(item),
                        );
                    }
                })
            };
            // SAFETY: forwarded contract; the runs leave no marks pending.
            unsafe { self.spread_runs(archetypes, total, threads, ticks, run) };
            return;
        }
        // Runs `f` over one run of rows of the `index`th matched archetype (`len` rows), and
        // reports what is left to mark.
        let run = |index: usize, rows: Range<usize>, len: usize| -> Outcome {
            let matched = &matched[index];
            let archetype = &archetypes[matched.archetype.index()];
            run_timed(pass, sink, automatic, index, rows.clone(), |pending| {
                // SAFETY: the caches came from matching this archetype; the caller holds the
                // query's access; runs cover disjoint rows, so items on different threads
                // never alias; components are `Send + Sync`.
                let (mut data, mut filter) = unsafe { fetch_matched::<D, F>(matched, archetype, ticks) };
                // The run goes through its rows in chunks, a loop around the row loop.
                // That nesting is what gets the closure inlined: LLVM raises its inlining
                // threshold for a call its block-frequency estimate calls hot, and a call in
                // a single loop is not (a loop is guessed at 32 trips, under the 60x bar),
                // while one in two nested loops is, as in `for_each`'s walk over
                // archetypes. Without it a closure of ~100 instructions (game_frame's
                // `steer`, inline cost 380 against thresholds of 325 cold and 525 hot)
                // stayed a call per row and never vectorised: 153 M instructions for 50
                // passes against `for_each`'s 56 M (callgrind; 55 M chunked), and 2
                // threads no faster than 1 (190 µs; 114 µs chunked).
                let mut first = rows.start;
                while first < rows.end {
                    let chunk = first..(first + RUN_CHUNK).min(rows.end);
                    first = chunk.end;
                    // A chunk that spans the whole archetype is the only one working on it
                    // and may set the column's floor; the others leave their marks pending.
                    let marks = if chunk.len() == len {
                        Marks::Whole
                    } else {
                        Marks::Defer
                    };
                    // SAFETY: as above; the chunk lies within the run's rows, each visited
                    // once. Each chunk tries deferred marks on its own (no `plain` carried
                    // over).
                    let deferred = unsafe {
                        run_rows::<D, F>(
                            &mut data,
                            &mut filter,
                            chunk.clone(),
                            marks,
                            &mut false,
                            &mut |item| f(item),
                        )
                    };
                    if deferred {
                        *pending = std::mem::take(pending).merge(Pending::One(chunk));
                    }
                }
            })
        };
        // SAFETY: forwarded contract.
        unsafe { self.spread_runs(archetypes, total, threads, ticks, run) };
    }

    /// The parallel half of a pass: cuts the matched archetypes into runs (as the module
    /// explains), calls `run` on each on rayon's threads, then makes the marks the runs left
    /// pending, rethrows the first panic, and records the row cost for the next automatic
    /// pass.
    ///
    /// # Safety
    /// As for [`par_for_each_unchecked`](Self::par_for_each_unchecked); `archetypes` is the
    /// world's list and `total` the matched rows in it; `run(index, rows, len)` does the rows
    /// `rows` of the `index`th matched archetype (`len` rows), safe to call on disjoint runs
    /// at once, and a run's pending marks are of the table path (the sparse path leaves
    /// none).
    unsafe fn spread_runs<Run>(
        &self,
        archetypes: &[Archetype],
        total: usize,
        threads: usize,
        ticks: RunTicks,
        run: Run,
    ) where
        Run: Fn(usize, Range<usize>, usize) -> Outcome + Sync,
    {
        // One entry per non-empty matched archetype, and what its runs left to mark: each
        // archetype's runs combine their outcomes up rayon's join tree, so no run touches
        // anything another run touches.
        let units: Vec<(usize, usize)> = (self.matched.iter())
            .enumerate()
            .map(|(index, m)| (index, archetypes[m.archetype.index()].len()))
            .filter(|&(_, len)| len > 0)
            .collect();
        let mut outcomes = Vec::with_capacity(units.len());
        match self.par_batch_size {
            BatchSize::Fixed(n) => {
                let batch = n.max(1);
                units
                    .par_iter()
                    .map(|&(index, len)| {
                        (0..len.div_ceil(batch))
                            .into_par_iter()
                            .map(|b| run(index, b * batch..((b + 1) * batch).min(len), len))
                            .reduce(Outcome::default, Outcome::merge)
                    })
                    .collect_into_vec(&mut outcomes);
            }
            BatchSize::Automatic => {
                let min_len = min_run_len(self.par_row_cost.load(Ordering::Relaxed), total, threads);
                units
                    .par_iter()
                    .map(|&(index, len)| {
                        rayon::iter::split(0..len, |rows| halve(rows, min_len))
                            .map(|rows| run(index, rows, len))
                            .reduce(Outcome::default, Outcome::merge)
                    })
                    .collect_into_vec(&mut outcomes);
            }
        }
        // Every task has finished, also when one panicked: the pending marks are made here,
        // by this thread alone, and a run that finished wrote every one of its rows, so none
        // of them may go unmarked.
        let mut panic = None;
        let mut timed = Timed::default();
        for (&(index, len), outcome) in units.iter().zip(outcomes) {
            panic = panic.or(outcome.panic);
            timed = timed.merge(outcome.timed);
            // SAFETY: forwarded contract; no item is live any more, no other thread works on
            // these rows, and the pending runs are disjoint and lie within the archetype.
            unsafe { self.mark_pending(archetypes, index, len, outcome.pending, ticks) };
        }
        if let Some(panic) = panic {
            panic::resume_unwind(panic);
        }
        if self.par_batch_size == BatchSize::Automatic && timed.rows > 0 {
            let picos = timed.nanos.saturating_mul(1000) / timed.rows as u128;
            let picos = u64::try_from(picos).unwrap_or(u64::MAX).max(1);
            self.par_row_cost.store(picos, Ordering::Relaxed);
        }
    }

    /// Marks the runs of the `index`th matched archetype (`len` rows) that `run_rows` left
    /// pending: with one floor when they cover all of its rows, else by filling their rows.
    ///
    /// # Safety
    /// As for [`par_for_each_unchecked`](Self::par_for_each_unchecked), with no item of these
    /// rows live and no other thread working on them; the runs are disjoint and each lies
    /// within the archetype's rows.
    unsafe fn mark_pending(
        &self,
        archetypes: &[Archetype],
        index: usize,
        len: usize,
        pending: Pending,
        ticks: RunTicks,
    ) {
        let runs = match &pending {
            Pending::Nothing => return,
            Pending::One(rows) => std::slice::from_ref(rows),
            Pending::Many(runs) => &runs[..],
        };
        let matched = &self.matched[index];
        let archetype = &archetypes[matched.archetype.index()];
        // SAFETY: the caller's contract; the rows are live, ours, and no item of them exists.
        // Disjoint runs covering the archetype's length cover every row, all written, and no
        // other thread is at work, so the floor may be set.
        unsafe {
            let mut data = D::fetch_archetype(matched.data, archetype, ticks);
            if runs.iter().map(ExactSizeIterator::len).sum::<usize>() == len {
                D::mark_rows(&mut data, 0..len, true);
            } else {
                for rows in runs {
                    D::mark_rows(&mut data, rows.clone(), false);
                }
            }
        }
    }
}

/// Rows per chunk of a run (see the run closure in `par_for_each_unchecked`): long enough
/// that the chunk loop's own cost vanishes, short enough that a run of a few thousand rows
/// still has several.
const RUN_CHUNK: usize = 1024;

/// One run of a parallel pass: `body` over rows `rows` of the `index`th matched archetype,
/// inside the run's command context (`base ++ [index, rows.start]`), timed when the pass is
/// automatic (to size the next pass's runs) or traced (to tell the sink). `body` adds what
/// it leaves to mark to the `Pending` it is given.
///
/// A panic out of `body` is caught here, per run, so that the pending runs of the others
/// still reach `mark_pending`; what `body` recorded as pending before the panic is kept, as
/// those rows were written and must still be marked (the unwind guard in `run_rows` has
/// marked the rest of what the panicking chunk wrote).
#[inline(always)]
fn run_timed(
    pass: &PassBase,
    sink: Option<&BatchSink<'_>>,
    automatic: bool,
    index: usize,
    rows: Range<usize>,
    body: impl FnOnce(&mut Pending),
) -> Outcome {
    let start = (automatic || sink.is_some()).then(Instant::now);
    let mut pending = Pending::Nothing;
    let result = panic::catch_unwind(AssertUnwindSafe(|| {
        crate::command::parallel::in_run(pass, index, rows.start, || body(&mut pending))
    }));
    let end = start.map(|_| Instant::now());
    if let (Some(sink), Some(start), Some(end)) = (sink, start, end) {
        sink(start, end, rows.len());
    }
    let timed = Timed {
        rows: rows.len(),
        nanos: start.zip(end).map_or(0, |(start, end)| (end - start).as_nanos()),
    };
    Outcome {
        pending,
        panic: result.err(),
        timed,
    }
}

/// The least time a run should take when rayon cuts the rows itself, in nanoseconds. A cut
/// costs a task, and the task's thread may have to be woken: a pool's round trip is about
/// 13 us on the 2-core machine of `light_par`, so shorter runs spend more on being shared
/// out than they save, most of all in a pool with more threads than cores.
const RUN_TARGET_NANOS: u64 = 20_000;

/// The least rows per run, when the previous automatic pass measured a row at `row_picos`
/// picoseconds (0: no pass yet, so any length, as rayon would cut them), for a pass of
/// `total` rows in a pool of `threads`.
///
/// In a pool with more threads than cores, a short pass (a few runs' worth per core) is cut
/// into no more runs than there are cores: further runs could not run at once anyway, and
/// each one a thread takes wakes another (rayon's `Sleep::work_found`), which there shares a
/// core with the working threads. Measured on `light_par` with 8 threads on 2 cores
/// (fastest of 300 rounds, interleaved): without this rule the pass took 1.16 and 1.19x its
/// 2-thread time in two runs, with it 1.03 and 1.12x.
fn min_run_len(row_picos: u64, total: usize, threads: usize) -> usize {
    if row_picos == 0 {
        return 1;
    }
    let len = usize::try_from(RUN_TARGET_NANOS.saturating_mul(1000) / row_picos)
        .unwrap_or(usize::MAX)
        .max(1);
    let cores = cores();
    if threads > cores && total / len <= 4 * cores {
        len.max(total.div_ceil(cores))
    } else {
        len
    }
}

/// The machine's cores (as `std::thread::available_parallelism` counts them), looked up once.
fn cores() -> usize {
    static CORES: OnceLock<usize> = OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, NonZeroUsize::get))
}

/// Rows run and the time they took, summed over runs.
#[derive(Clone, Copy, Default)]
struct Timed {
    rows: usize,
    nanos: u128,
}

impl Timed {
    fn merge(self, other: Self) -> Self {
        Self {
            rows: self.rows + other.rows,
            nanos: self.nanos + other.nanos,
        }
    }
}

/// What the runs of one archetype left to do once they have all finished.
#[derive(Default)]
struct Outcome {
    /// The rows of runs that wrote every row and whose marks are still to be made
    /// ([`Marks::Defer`]).
    pending: Pending,
    /// The first panic out of the closure, to rethrow once the marks are made.
    panic: Option<Box<dyn Any + Send>>,
    /// The runs' rows and time.
    timed: Timed,
}

impl Outcome {
    /// Both outcomes, of disjoint runs of one archetype.
    fn merge(self, other: Self) -> Self {
        Self {
            pending: self.pending.merge(other.pending),
            panic: self.panic.or(other.panic),
            timed: self.timed.merge(other.timed),
        }
    }
}

/// Disjoint runs of rows, merged where they meet. When every run writes every row (the
/// steady state), rayon's join tree combines neighbours, so the runs of an archetype end as
/// one range and nothing is allocated.
#[derive(Default)]
enum Pending {
    #[default]
    Nothing,
    One(Range<usize>),
    Many(Vec<Range<usize>>),
}

impl Pending {
    fn merge(self, other: Self) -> Self {
        match (self, other) {
            (Pending::Nothing, other) | (other, Pending::Nothing) => other,
            (Pending::One(a), Pending::One(b)) => match join(&a, &b) {
                Some(rows) => Pending::One(rows),
                None => Pending::Many(vec![a, b]),
            },
            (Pending::Many(mut runs), Pending::One(rows)) | (Pending::One(rows), Pending::Many(mut runs)) => {
                match runs
                    .iter_mut()
                    .find_map(|run| join(run, &rows).map(|joined| (run, joined)))
                {
                    Some((run, joined)) => *run = joined,
                    None => runs.push(rows),
                }
                Pending::Many(runs)
            }
            (Pending::Many(mut a), Pending::Many(b)) => {
                a.extend(b);
                Pending::Many(a)
            }
        }
    }
}

/// The rows of `a` and `b` as one range, when they meet.
fn join(a: &Range<usize>, b: &Range<usize>) -> Option<Range<usize>> {
    if a.end == b.start {
        Some(a.start..b.end)
    } else if b.end == a.start {
        Some(b.start..a.end)
    } else {
        None
    }
}

/// Splits a run of rows in two halves, or keeps it whole when a half would be shorter than
/// `min_len`: rayon calls this only when it wants more pieces (a thread is idle, or the first
/// few splits).
fn halve(rows: Range<usize>, min_len: usize) -> (Range<usize>, Option<Range<usize>>) {
    if rows.len() < 2 * min_len.max(1) {
        return (rows, None);
    }
    let middle = rows.start + rows.len() / 2;
    (rows.start..middle, Some(middle..rows.end))
}
