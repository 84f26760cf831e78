//! The sparse path: how a query that names a [sparse-set](crate::ComponentRegistration::sparse_set)
//! component walks its rows.
//!
//! A sparse component is in no archetype's component set, so archetype matching cannot
//! decide a term over it: `&T`, `&mut T`, `Ref<T>`, `Mut<T>`, `Has<T>`, `Option<..>`,
//! `With<T>`, `Without<T>`, `Added<T>` and `Changed<T>` over a sparse `T` match every
//! archetype (the table terms of the query still narrow the list), and are decided per row
//! instead: the row's entity is looked up in the component's `SparseSet`
//! (two dependent loads), and the row is skipped when a required component is missing.
//! The item of a sparse term comes from the set's dense row, with its ticks, so change
//! detection works as for a table column: a written `Mut<T>` marks the dense row's tick,
//! and `Changed<T>` reads it.
//!
//! Whether a query takes this path is decided once, when its state is built (does its
//! access name a sparse component?), and each pass (`iter`, `for_each`, `get`, ...)
//! dispatches once to it or to the table path, whose row loops are unchanged: an all-table
//! query pays nothing for sparse storage. The sparse path marks changes per written row
//! (no deferred marks, no column floors).
//!
//! `par_for_each` splits a sparse query's archetypes into runs of rows as it does a table
//! query's (`query/par.rs`), each run doing [`for_each_sparse_rows`] on its thread. That is
//! sound for the same reason the table path's runs are, carried over to the sets: runs
//! never share an archetype row, an archetype row is one entity, and one entity has at most
//! one dense row in each set, so no two threads reach the same value or tick (an item marks
//! its own dense row, never a column floor). The sets are only read in structure (the
//! `sparse` index, the dense entities), and nothing changes their shape during the pass.
//!
//! The fetch of a sparse term holds a raw pointer to the set inside the world's
//! `SparseSets`. The sets are created (and their vector grown) only by registration, which
//! takes `&mut World`, and rows are pushed or removed only by inserts, removals and
//! despawns, which take `&mut World` too; a query run holds the world borrowed (or, through
//! an `UnsafeWorldCell`, a scheduler keeps structural changes out of the system's run), so
//! the set neither moves nor changes shape while a fetch of it is alive.

use std::ops::Range;

use super::fetch::QueryData;
use super::filter::QueryFilter;
use super::state::{Matched, non_empty};
use crate::archetype::Archetype;
use crate::change::RunTicks;
use crate::entity::Entity;
use crate::world::World;

/// A walk over the matching rows of a query with sparse terms: the sparse half of a
/// [`QueryIter`](super::QueryIter).
pub(crate) struct SparseIter<'w, 's, D: QueryData, F: QueryFilter> {
    world: &'w World,
    data_state: &'s D::State,
    filter_state: &'s F::State,
    matched: std::slice::Iter<'s, Matched<D::Cache, F::Cache>>,
    ticks: RunTicks,
    current: Option<(D::Fetch<'w>, F::Fetch<'w>, &'w [Entity])>,
    row: usize,
}

impl<'w, 's, D: QueryData, F: QueryFilter> SparseIter<'w, 's, D, F> {
    /// # Safety
    /// As for [`QueryIter::new`](super::QueryIter): the caller holds the query's access for
    /// `'w`, `world` is the state's world and the state (whose states and matches these are,
    /// matched on the sparse path) is up to date; only the structure is read through `world`.
    pub(crate) unsafe fn new(
        world: &'w World,
        data_state: &'s D::State,
        filter_state: &'s F::State,
        matched: &'s [Matched<D::Cache, F::Cache>],
        ticks: RunTicks,
    ) -> Self {
        Self {
            world,
            data_state,
            filter_state,
            matched: matched.iter(),
            ticks,
            current: None,
            row: 0,
        }
    }

    /// The fetches of one matched archetype.
    ///
    /// # Safety
    /// As for [`new`](Self::new); `matched` is one of the state's matches.
    #[inline]
    unsafe fn fetch(
        &self,
        matched: &Matched<D::Cache, F::Cache>,
        archetype: &'w Archetype,
    ) -> (D::Fetch<'w>, F::Fetch<'w>) {
        // SAFETY: the caches came from `match_sparse` on this archetype (the state is up to
        // date and on the sparse path); the sets stay in place for `'w` (module docs); the
        // access is the caller's.
        unsafe {
            (
                D::fetch_sparse(self.data_state, matched.data, archetype, self.world, self.ticks),
                F::fetch_sparse(
                    self.filter_state,
                    matched.filter,
                    archetype,
                    self.world,
                    self.ticks,
                ),
            )
        }
    }

    /// The [`row_fetch`](QueryData::row_fetch) of the next row that passes the filter and
    /// has every required sparse component: its item is the fetch's row 0.
    #[inline]
    pub(crate) fn next_row_fetch(&mut self) -> Option<D::Fetch<'w>> {
        loop {
            if let Some((data, filter, entities)) = &mut self.current {
                while let Some(&entity) = entities.get(self.row) {
                    let row = self.row;
                    self.row += 1;
                    // SAFETY: `row` is a live row of the current archetype, whose fetches
                    // these are; the filter reads it before any item of it exists.
                    unsafe {
                        if F::filter_entity(filter, row, entity)
                            && let Some(row_fetch) = D::row_fetch(data, row, entity)
                        {
                            return Some(row_fetch);
                        }
                    }
                }
            }
            self.next_archetype()?;
        }
    }

    /// [`next_row_fetch`](Self::next_row_fetch), out of line: for `QueryIter::next`, which
    /// makes the item where it makes a table row's (see there).
    #[inline(never)]
    pub(crate) fn next_row_fetch_out_of_line(&mut self) -> Option<D::Fetch<'w>> {
        self.next_row_fetch()
    }

    /// Moves on to the next matched archetype (its fetches, or none when it is empty);
    /// `None` when none is left.
    #[inline]
    fn next_archetype(&mut self) -> Option<()> {
        let matched = self.matched.next()?;
        let archetype = &self.world.archetype_list()[matched.archetype.index()];
        self.row = 0;
        self.current = (!archetype.is_empty()).then(|| {
            // SAFETY: a match of the state, per `new`.
            let (data, filter) = unsafe { self.fetch(matched, archetype) };
            (data, filter, archetype.entities())
        });
        Some(())
    }

    /// Folds the remaining items into `acc` (out of line: see [`for_each_sparse`]).
    #[inline(never)]
    pub(crate) fn fold<B>(mut self, mut acc: B, mut g: impl FnMut(B, D::Item<'w>) -> B) -> B {
        while let Some(mut row_fetch) = self.next_row_fetch() {
            // SAFETY: the fetch of a live row that has every required component; each row is
            // visited once, so no other item of it is live.
            acc = g(acc, unsafe { D::fetch(&mut row_fetch, 0) });
        }
        acc
    }
}

/// Calls `f` on every matching item of a query on the sparse path.
///
/// Out of line, so that the table path's `for_each`, which dispatches here, stays as small
/// (and its callees as inlined) as without it.
///
/// # Safety
/// As for [`SparseIter::new`].
#[inline(never)]
pub(crate) unsafe fn for_each_sparse<D: QueryData, F: QueryFilter>(
    world: &World,
    data_state: &D::State,
    filter_state: &F::State,
    matched: &[Matched<D::Cache, F::Cache>],
    ticks: RunTicks,
    f: &mut impl FnMut(D::Item<'_>),
) {
    // SAFETY: `matched` are the state's matches in `world` (the caller's contract).
    for (matched, archetype, len) in unsafe { non_empty(matched, world.archetype_list()) } {
        // SAFETY: a match of the state on `archetype`, whose rows `0..len` are all live; the
        // rest is the caller's contract.
        unsafe {
            for_each_sparse_rows::<D, F>(
                world,
                data_state,
                filter_state,
                matched,
                archetype,
                0..len,
                ticks,
                f,
            )
        };
    }
}

/// Calls `f` on the matching items among rows `rows` of one matched archetype of a query on
/// the sparse path: the row loop of [`for_each_sparse`] and of each run of a parallel pass.
///
/// Every row is looked up in the sets it needs and every item marks its own row as it is
/// written, so two calls on disjoint rows of the world's archetypes touch disjoint memory
/// (distinct rows hold distinct entities, whose dense rows in a set are distinct too) and may
/// run on different threads at once.
///
/// # Safety
/// As for [`SparseIter::new`]; `matched` is one of the state's matches and `archetype` the
/// archetype it names, `rows` lie within its live rows, and no item of them is live
/// elsewhere.
#[allow(clippy::too_many_arguments)]
#[inline]
pub(crate) unsafe fn for_each_sparse_rows<D: QueryData, F: QueryFilter>(
    world: &World,
    data_state: &D::State,
    filter_state: &F::State,
    matched: &Matched<D::Cache, F::Cache>,
    archetype: &Archetype,
    rows: Range<usize>,
    ticks: RunTicks,
    f: &mut impl FnMut(D::Item<'_>),
) {
    // SAFETY: as in `SparseIter::fetch`.
    let (mut data, mut filter) = unsafe {
        (
            D::fetch_sparse(data_state, matched.data, archetype, world, ticks),
            F::fetch_sparse(filter_state, matched.filter, archetype, world, ticks),
        )
    };
    let entities = &archetype.entities()[rows.clone()];
    for (row, &entity) in rows.zip(entities) {
        // SAFETY: a live row of this archetype, visited once; the filter reads it before
        // the item (which may mark it) is made.
        unsafe {
            if F::filter_entity(&mut filter, row, entity)
                && let Some(item) = D::fetch_entity(&mut data, row, entity)
            {
                f(item);
            }
        }
    }
}
