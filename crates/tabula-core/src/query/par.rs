//! `par_for_each`: a query's rows spread over rayon's thread pool.
//!
//! The matched archetypes are cut into batches of rows (several per archetype when it is
//! large, so one big archetype still uses every core). Batches never share a row, so the
//! mutable items handed to different threads never alias. Below a size threshold the query
//! runs serially: spawning tasks would cost more than the work.

use rayon::prelude::*;

use super::fetch::{QueryData, RunTicks};
use super::filter::QueryFilter;
use super::for_each::run_rows;
use super::state::QueryState;
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
        let archetypes = &unsafe { world.world() }.archetypes.archetypes;
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
            batches.extend(
                (0..len)
                    .step_by(batch)
                    .map(|start| (index, start..(start + batch).min(len))),
            );
        }
        let matched = &self.matched;
        batches.into_par_iter().for_each(|(index, rows)| {
            let matched = &matched[index];
            let archetype = &archetypes[matched.archetype.index()];
            // SAFETY: the caches came from matching this archetype; the caller holds the
            // query's access; batches cover disjoint rows, so items on different threads
            // never alias; components are `Send + Sync`.
            // A batch that spans the whole archetype is the only one working on it.
            unsafe {
                let whole = rows.start == 0 && rows.end == archetype.len();
                let mut data = D::fetch_archetype(matched.data, archetype, ticks);
                let mut filter = F::fetch_archetype(matched.filter, archetype, ticks);
                run_rows::<D, F>(&mut data, &mut filter, rows, whole, &mut &f);
            }
        });
    }
}
