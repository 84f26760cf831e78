//! The run plan: a query's non-empty archetypes with their column pointers already read out,
//! for whole passes.
//!
//! Without it, a pass goes from each matched archetype to its table, from the table to its
//! column array, and from the column to its value and tick pointers, before the first row.
//! Over many short archetypes (26 archetypes of 20 rows in `frag_iter`) those dependent loads
//! cost as much as the rows themselves. The plan keeps, per non-empty archetype, the
//! [prepared](super::WorldQuery::prepare) pointers of every term and the row count in one
//! dense array, made at one *shape* of the world (see `ArchetypeList::shape`). A pass whose
//! world still has that shape reads the array straight through. Otherwise it walks the
//! archetypes as before. `for_each` / `for_each_chunk` (which hold the state mutably) make
//! the plan again before a pass when the world has settled: when the previous pass saw the
//! same shape. Making a plan costs about what it saves on one pass, so a world that changes
//! before every pass never pays for plans it cannot use.
//!
//! Why the pointers hold: a table's length, block and columns change only through `&mut`
//! access to its archetype, and the archetype list hands that out only through `all_mut`,
//! which moves the shape on. Writes that leave the shape alone (values, ticks, floors) go
//! through the same raw pointers the plan keeps.

use super::fetch::QueryData;
use super::filter::QueryFilter;
use super::state::{QueryState, fetch_matched, non_empty};
use crate::change::RunTicks;
use crate::world::World;

/// One non-empty matched archetype, prepared.
pub(crate) struct Planned<DP, FP> {
    pub(crate) data: DP,
    pub(crate) filter: FP,
    pub(crate) len: usize,
}

/// The prepared archetypes of a query at one shape of its world. `Send` and `Sync` when the
/// prepared forms are, as [`WorldQuery::Prepared`](super::WorldQuery::Prepared) requires.
pub(crate) struct RunPlan<DP, FP> {
    /// The shape the entries were read at; `None` before the first plan.
    shape: Option<u64>,
    /// The shape the previous `update_plan` saw (whole passes call it too).
    seen: Option<u64>,
    entries: Vec<Planned<DP, FP>>,
}

impl<DP, FP> Default for RunPlan<DP, FP> {
    fn default() -> Self {
        Self {
            shape: None,
            seen: None,
            entries: Vec::new(),
        }
    }
}

impl<DP, FP> RunPlan<DP, FP> {
    /// The entries, when they were read at `shape`.
    #[inline]
    pub(crate) fn at(&self, shape: u64) -> Option<&[Planned<DP, FP>]> {
        (self.shape == Some(shape)).then_some(&self.entries[..])
    }
}

impl<D: QueryData, F: QueryFilter> QueryState<D, F> {
    /// Brings the state up to date for whole passes: matches new archetypes
    /// ([`update_archetypes`](Self::update_archetypes)), and when the world's tables
    /// changed since the plan was made but not since the previous call (the world has
    /// settled), reads the column pointers of the non-empty archetypes again.
    ///
    /// [`for_each`](Self::for_each) and [`for_each_chunk`](Self::for_each_chunk) call it
    /// before their pass, which then reads the plan when it is fresh. A scheduler
    /// calls it before running a system, so that
    /// [`for_each_unchecked`](Self::for_each_unchecked) reads the plan; without a fresh
    /// plan, that pass finds each archetype's columns itself, as fast as before plans
    /// existed.
    ///
    /// # Panics
    /// When `world` is not the world the state was built for.
    #[inline]
    pub fn update_plan(&mut self, world: &World) {
        self.update_archetypes(world);
        let shape = world.archetype_shape();
        // A stale plan is made again only when the previous call saw the same shape, i.e.
        // the world has settled. Making a plan costs about as much as the walk it saves on
        // one pass (about 1.5 ns per archetype), so a world that changes between every two
        // passes keeps walking, as cheap as before plans existed, and a settled one pays for
        // one plan and then reads it.
        if self.plan.shape != Some(shape) && self.plan.seen.replace(shape) == Some(shape) {
            self.make_plan(world, shape);
        }
    }

    #[inline(never)]
    fn make_plan(&mut self, world: &World, shape: u64) {
        if self.sparse {
            // The sparse path keeps no plan: its fetches come from the world's sets.
            return;
        }
        let archetypes = world.archetype_list();
        self.plan.entries.clear();
        // SAFETY: the archetypes were just brought up to date for this world.
        for (matched, archetype, len) in unsafe { non_empty(&self.matched, archetypes) } {
            // SAFETY: the caches came from matching this archetype.
            let (data, filter) = unsafe {
                (
                    D::prepare(matched.data, archetype),
                    F::prepare(matched.filter, archetype),
                )
            };
            self.plan.entries.push(Planned { data, filter, len });
        }
        self.plan.shape = Some(shape);
    }

    /// Calls `pass` with the fetches of every non-empty matched archetype and its row
    /// count: from the plan when it was made at the world's shape, else by walking the
    /// archetypes.
    ///
    /// # Safety
    /// As for [`iter_unchecked`](Self::iter_unchecked): the caller holds the query's access
    /// for `'w`, and the state's archetypes are up to date for `world`, the state's world.
    #[inline(always)]
    pub(crate) unsafe fn for_each_archetype<'w>(
        &self,
        world: &'w World,
        ticks: RunTicks,
        mut pass: impl FnMut(D::Fetch<'w>, F::Fetch<'w>, usize),
    ) {
        if let Some(entries) = self.plan.at(world.archetype_shape()) {
            for planned in entries {
                // SAFETY: the plan was made at the world's current shape, so its pointers and
                // lengths still hold; the caller holds the access.
                unsafe {
                    pass(
                        D::fetch_prepared(planned.data, ticks),
                        F::fetch_prepared(planned.filter, ticks),
                        planned.len,
                    );
                }
            }
            return;
        }
        let archetypes = world.archetype_list();
        // SAFETY: up to date (the caller's contract).
        for (matched, archetype, len) in unsafe { non_empty(&self.matched, archetypes) } {
            // SAFETY: the caches came from matching this archetype; the caller holds the
            // access.
            let (data, filter) = unsafe { fetch_matched::<D, F>(matched, archetype, ticks) };
            pass(data, filter, len);
        }
    }
}
