//! `par_for_each`: a query's rows spread over rayon's thread pool.
//!
//! The matched archetypes are cut into batches of rows (several per archetype when it is
//! large, so one big archetype still uses every core). Batches never share a row, so the
//! mutable items handed to different threads never alias. Below a size threshold the query
//! runs serially: spawning tasks would cost more than the work.

use std::ops::Range;
use std::panic::{self, AssertUnwindSafe};

use rayon::prelude::*;

use super::fetch::{QueryData, RunTicks};
use super::filter::QueryFilter;
use super::for_each::{Marks, run_rows};
use super::state::QueryState;
use crate::archetype::Archetype;
use crate::world::{UnsafeWorldCell, World};

/// Queries with at most this many matching rows run serially unless a batch size is set.
const SERIAL_THRESHOLD: usize = 128;
/// The smallest automatic batch.
const MIN_AUTO_BATCH: usize = 32;
/// Automatic batches aim at this many batches per thread, for load balance.
const BATCHES_PER_THREAD: usize = 4;

/// How `par_for_each` cuts a query into batches.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum BatchSize {
    /// Aim for a few batches per thread, and run serially when the query is small.
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
    /// use tabula_core::World;
    /// let mut world = World::new();
    /// world.spawn_batch((0..10_000u32).map(|i| (i, 0u64)));
    /// let mut q = world.query::<(&u32, &mut u64)>();
    /// q.par_for_each(&mut world, |(n, mut square)| *square = u64::from(*n) * u64::from(*n));
    /// let total: u64 = world.query::<&u64>().iter(&world).sum();
    /// assert_eq!(total, (0..10_000u64).map(|n| n * n).sum());
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
        let archetypes = unsafe { world.world() }.archetypes.archetypes.all();
        let total: usize = self
            .matched
            .iter()
            .map(|m| archetypes[m.archetype.index()].len())
            .sum();
        let threads = rayon::current_num_threads();
        let batch = match self.par_batch_size {
            BatchSize::Fixed(n) => n.max(1),
            BatchSize::Automatic if total <= SERIAL_THRESHOLD => total.max(1),
            BatchSize::Automatic => total.div_ceil(threads * BATCHES_PER_THREAD).max(MIN_AUTO_BATCH),
        };
        if total <= batch || threads <= 1 {
            // SAFETY: forwarded contract.
            unsafe { self.for_each_unchecked(world, ticks, f) };
            return;
        }

        let mut batches = Vec::with_capacity(total.div_ceil(batch) + self.matched.len());
        for (index, matched) in self.matched.iter().enumerate() {
            let len = archetypes[matched.archetype.index()].len();
            batches.extend((0..len).step_by(batch).map(|start| Batch {
                index,
                rows: start..(start + batch).min(len),
                pending: false,
            }));
        }
        let matched = &self.matched;
        let run = panic::catch_unwind(AssertUnwindSafe(|| {
            batches.par_iter_mut().for_each(|batch| {
                let matched = &matched[batch.index];
                let archetype = &archetypes[matched.archetype.index()];
                // A batch that spans the whole archetype is the only one working on it and
                // may set the column's floor; the others leave their marks pending.
                let marks = if batch.rows.start == 0 && batch.rows.end == archetype.len() {
                    Marks::Whole
                } else {
                    Marks::Defer
                };
                // SAFETY: the caches came from matching this archetype; the caller holds the
                // query's access; batches cover disjoint rows, so items on different threads
                // never alias; components are `Send + Sync`.
                batch.pending = unsafe {
                    let mut data = D::fetch_archetype(matched.data, archetype, ticks);
                    let mut filter = F::fetch_archetype(matched.filter, archetype, ticks);
                    // Each batch tries deferred marks on its own (no `plain` carried over).
                    run_rows::<D, F>(
                        &mut data,
                        &mut filter,
                        batch.rows.clone(),
                        marks,
                        &mut false,
                        &mut &f,
                    )
                };
            });
        }));
        // Every task has finished, also when one panicked (rayon joins before it rethrows):
        // the pending marks are made here, by this thread alone, and a batch that finished
        // wrote every one of its rows, so none of them may go unmarked.
        // SAFETY: forwarded contract; no item is live any more.
        unsafe { self.mark_pending(archetypes, &batches, ticks) };
        if let Err(panic) = run {
            panic::resume_unwind(panic);
        }
    }

    /// Marks the batches `run_rows` left pending: with one floor per archetype whose batches
    /// all are, and by filling the rows of the others.
    ///
    /// # Safety
    /// As for [`par_for_each_unchecked`](Self::par_for_each_unchecked), with no item of these
    /// rows live and no other thread working on them; `batches` are grouped by archetype, in
    /// row order, and cover each of their archetypes.
    unsafe fn mark_pending(&self, archetypes: &[Archetype], batches: &[Batch], ticks: RunTicks) {
        for group in batches.chunk_by(|a, b| a.index == b.index) {
            if !group.iter().any(|batch| batch.pending) {
                continue;
            }
            let matched = &self.matched[group[0].index];
            let archetype = &archetypes[matched.archetype.index()];
            // SAFETY: the caller's contract; the rows are live, ours, and no item of them
            // exists. When every batch of the archetype is pending, every row was written and
            // no other thread is at work, so the floor may be set.
            unsafe {
                let mut data = D::fetch_archetype(matched.data, archetype, ticks);
                if group.iter().all(|batch| batch.pending) {
                    D::mark_rows(&mut data, 0..archetype.len(), true);
                } else {
                    for batch in group.iter().filter(|batch| batch.pending) {
                        D::mark_rows(&mut data, batch.rows.clone(), false);
                    }
                }
            }
        }
    }
}

/// Rows `rows` of the `index`th matched archetype, and whether their marks are still to be
/// made ([`Marks::Defer`]).
struct Batch {
    index: usize,
    rows: Range<usize>,
    pending: bool,
}
