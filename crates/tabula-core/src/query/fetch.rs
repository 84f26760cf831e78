//! What a query fetches: the [`WorldQuery`] / [`QueryData`] traits and their implementations
//! for `&T`, `&mut T`, `Option<Q>`, `Entity`, `Has<T>`, `Ref<T>`, `Mut<T>` and tuples.
//!
//! A query term is used in three steps, each cheaper and more frequent than the last:
//!
//! 1. `init_state` once per query: register component types, resolve their ids.
//! 2. `match_archetype` once per archetype ever created: does it match, and which columns to
//!    read (the *cache*, stored by the query state).
//! 3. `fetch_archetype` once per archetype per iteration: turn the cache into raw column
//!    pointers (the *fetch*); then `fetch(row)` per entity: one pointer offset.
//!
//! Step 3 is split in two, so that whole passes can skip the walk from archetype to table to
//! column: `prepare` reads the pointers out of the table (the *prepared* form, valid while
//! the world's tables keep their shape), and `fetch_prepared` adds the run's ticks and the
//! columns' changed floors. [`QueryState`](super::QueryState) keeps the prepared forms of its
//! non-empty archetypes in a *run plan*, so `for_each` reads them from one dense array.

use std::marker::PhantomData;
use std::ops::Range;

use super::access::Access;
use crate::archetype::Archetype;
use crate::change::{ComponentTicks, Mut, Ref, RunTicks, Tick};
use crate::component::{Component, ComponentId};
use crate::entity::Entity;
use crate::storage::{Column, SparseSet, Table};
use crate::world::World;

/// How one query term finds its archetypes and reads their tables.
///
/// # Safety
/// Implementations must report in `update_access` every component they read or write
/// through the fetch's pointers, and only hand out references that this access allows.
/// `match_archetype` must return `Some` only for archetypes whose columns `prepare` can
/// read. `Prepared` may hold only what stays true while the world's tables keep their shape
/// (the table's column and entity pointers, facts about the archetype); anything that can
/// change without a structural change (ticks, changed floors) is read in `fetch_prepared`.
/// Pointers in `Prepared` must point into storage the table owns (as
/// `archetype.entities().as_ptr()` does), never into the [`Archetype`] itself: the world
/// borrows its archetype list mutably to cache edges without changing the shape (a failing
/// `remove` does), which under Stacked Borrows invalidates any pointer to an `Archetype`.
/// A [`QueryState`](super::QueryState) keeps its prepared forms, so `Prepared` is bound to
/// be `Send` and `Sync`: a type of raw pointers declares that it may be sent and shared
/// because its pointers are dereferenced only under the query's access, from any thread.
pub unsafe trait WorldQuery {
    /// Resolved component ids; built once per query.
    type State: Send + Sync + 'static;
    /// What is remembered per matched archetype (column indices).
    type Cache: Copy + Send + Sync + 'static;
    /// Raw pointers into one archetype's table, for the duration of one iteration.
    type Fetch<'w>;
    /// The part of a fetch that depends on the archetype's table alone (column pointers),
    /// valid while the world's tables keep their shape.
    type Prepared: Copy + Send + Sync;

    /// Registers the term's component types.
    fn init_state(world: &mut World) -> Self::State;

    /// Adds the term's access; `Err(id)` when it aliases access already recorded.
    fn update_access(state: &Self::State, access: &mut Access) -> Result<(), ComponentId>;

    /// Whether the archetype matches, and the cache to read it with.
    fn match_archetype(state: &Self::State, archetype: &Archetype) -> Option<Self::Cache>;

    /// The column pointers of one matched archetype.
    ///
    /// # Safety
    /// `cache` came from `match_archetype` on this archetype.
    unsafe fn prepare(cache: Self::Cache, archetype: &Archetype) -> Self::Prepared;

    /// The fetch for one run over the archetype `prepared` was made from.
    ///
    /// # Safety
    /// `prepared` came from [`prepare`](Self::prepare) on an archetype of a world whose
    /// tables have kept their shape since: no `&mut` access to any table in between (no
    /// spawn, despawn, insert, remove, clear or new archetype), which the world tracks with
    /// a stamp that `&mut` table access moves on. And the
    /// caller holds the access reported by `update_access` on that archetype's rows for `'w`.
    unsafe fn fetch_prepared<'w>(prepared: Self::Prepared, ticks: RunTicks) -> Self::Fetch<'w>;

    // The sparse path (see `query/sparse.rs`): a query that names a sparse-set component
    // matches and fetches with these instead; terms over a sparse component read its set's
    // dense table, looked up by entity per row. The table path never calls them.

    /// Whether the term can read sparse-set components (the built-in terms can); a query
    /// naming a sparse component through a term that cannot is refused when built.
    #[doc(hidden)]
    const SPARSE_AWARE: bool = false;

    /// [`match_archetype`](Self::match_archetype) for the sparse path: a term over a sparse
    /// component cannot exclude an archetype by its component set, so it matches every one.
    #[doc(hidden)]
    #[inline]
    fn match_sparse(state: &Self::State, archetype: &Archetype, _world: &World) -> Option<Self::Cache> {
        Self::match_archetype(state, archetype)
    }

    /// [`fetch_archetype`](Self::fetch_archetype) for the sparse path: terms over a sparse
    /// component point into the set's dense table, and carry the set to look rows up in.
    ///
    /// # Safety
    /// As for `fetch_archetype`, with `cache` from [`match_sparse`](Self::match_sparse) on
    /// this archetype of `world`; no sparse set of `world` is added, moved or changed in
    /// shape (no insert or removal) for `'w`.
    #[doc(hidden)]
    #[inline]
    unsafe fn fetch_sparse<'w>(
        _state: &Self::State,
        cache: Self::Cache,
        archetype: &'w Archetype,
        _world: &'w World,
        ticks: RunTicks,
    ) -> Self::Fetch<'w> {
        // SAFETY: the caller's contract is `fetch_archetype`'s.
        unsafe { Self::fetch_archetype(cache, archetype, ticks) }
    }

    /// The fetch of one matched archetype: [`prepare`](Self::prepare), then
    /// [`fetch_prepared`](Self::fetch_prepared).
    ///
    /// # Safety
    /// `cache` came from `match_archetype` on this archetype; the caller holds the access
    /// reported by `update_access` on this archetype's rows for `'w`.
    #[inline]
    unsafe fn fetch_archetype<'w>(
        cache: Self::Cache,
        archetype: &'w Archetype,
        ticks: RunTicks,
    ) -> Self::Fetch<'w> {
        // SAFETY: the pointers are fresh from this archetype; the caller's contract covers
        // the rest.
        unsafe { Self::fetch_prepared(Self::prepare(cache, archetype), ticks) }
    }
}

/// A query term that yields an item per entity, e.g. `&Position` or `(Entity, &mut Health)`.
///
/// # Safety
/// As for [`WorldQuery`]; `fetch` must return only references within the access reported.
/// `ReadOnly` must read only what `Self` reports reading or writing, through the same state,
/// caches and prepared forms (so its fetch may be built from `Self`'s matches), and write
/// nothing.
pub unsafe trait QueryData: WorldQuery {
    /// The same term without its writes: `&T` for `&mut T`, `Ref<T>` for `Mut<T>`, member by
    /// member for tuples and `Option`, and the term itself for one that only reads. A query
    /// with mutable terms hands these out through shared access (`Query::iter` on a
    /// `Query<&mut T>` yields `&T`).
    type ReadOnly: ReadOnlyQueryData<State = Self::State, Cache = Self::Cache, Prepared = Self::Prepared>;
    /// The item for one entity.
    type Item<'w>;
    /// The items of a whole archetype at once, for [`for_each_chunk`](super::QueryState::for_each_chunk):
    /// `&[T]` for `&T`, `&mut [T]` for `&mut T`.
    type Chunk<'w>;

    /// The item of `row`.
    ///
    /// # Safety
    /// `row` is below the archetype's length; for a mutable term, no other item for the same
    /// row is live.
    unsafe fn fetch<'w>(fetch: &mut Self::Fetch<'w>, row: usize) -> Self::Item<'w>;

    /// The chunk of rows `0..len`; mutable terms mark all of them changed.
    ///
    /// # Safety
    /// `len` is the archetype's length; for a mutable term, no other item of this archetype
    /// is live.
    unsafe fn fetch_chunk<'w>(fetch: &mut Self::Fetch<'w>, len: usize) -> Self::Chunk<'w>;

    // Deferred change marks, for `for_each` (see `query/for_each.rs`): a mutable term's item
    // marks a scratch tick in the fetch instead of the row's tick, the loop reads the scratch
    // back, and a run of rows that were all marked is recorded at once.

    /// Whether some term defers marks (a `&mut T` or `Mut<T>`, possibly inside a tuple or an
    /// `Option`); when false the deferred methods below do nothing.
    const DEFERS_MARKS: bool = false;

    /// The item of `row`, with mutable terms marking their fetch's scratch tick.
    ///
    /// # Safety
    /// As for [`fetch`](Self::fetch); in addition the item must be gone before `fetch` is used
    /// again, moved or dropped (the item points into it).
    #[inline]
    unsafe fn fetch_deferred<'w>(fetch: &mut Self::Fetch<'w>, row: usize) -> Self::Item<'w> {
        // SAFETY: the caller's contract covers `fetch`'s.
        unsafe { Self::fetch(fetch, row) }
    }

    /// After the item of [`fetch_deferred`](Self::fetch_deferred) is gone: whether every
    /// mutable term counts its row as changed in this run.
    #[inline]
    fn row_marked(_fetch: &Self::Fetch<'_>) -> bool {
        true
    }

    /// Records that `rows` were all marked. `whole` says they are every row of the
    /// archetype, so the column's floor can record it in O(1).
    ///
    /// # Safety
    /// The rows are live, and no item of them is live; the caller holds the write access to
    /// them; `whole` only when no other thread touches this archetype's rows.
    #[inline]
    unsafe fn mark_rows(_fetch: &mut Self::Fetch<'_>, _rows: Range<usize>, _whole: bool) {}

    /// Stores the scratch mark left by the last deferred item (of `row`) into the row.
    ///
    /// # Safety
    /// As for [`mark_rows`](Self::mark_rows), for the one row.
    #[inline]
    unsafe fn store_mark(_fetch: &mut Self::Fetch<'_>, _row: usize) {}

    /// The sparse path's fetch of one row: a fetch whose row 0 is the item of archetype row
    /// `row`, whose entity is `entity` (a term over a table component points at `row`, one
    /// over a sparse component at the entity's dense row); `None` when a sparse component
    /// the term requires is missing. Every sparse-aware term implements it; the sparse path
    /// refuses the others before any fetch is made.
    ///
    /// Its item is made by [`fetch`](Self::fetch) at row 0, so that `QueryIter::next` makes
    /// a sparse row's item where it makes a table row's (`query/iter.rs`).
    ///
    /// # Safety
    /// The fetch came from [`fetch_sparse`](WorldQuery::fetch_sparse) and `row` is one of its
    /// archetype's live rows. The returned fetch is read at row 0 only, under the same
    /// contract as [`fetch`](Self::fetch) there.
    #[doc(hidden)]
    #[inline]
    unsafe fn row_fetch<'w>(
        _fetch: &Self::Fetch<'w>,
        _row: usize,
        _entity: Entity,
    ) -> Option<Self::Fetch<'w>> {
        unreachable!(
            "`{}` is not sparse-aware (`WorldQuery::SPARSE_AWARE`), so no query on the sparse path has it",
            std::any::type_name::<Self>()
        )
    }

    /// The sparse path's item of archetype row `row`, whose entity is `entity`: the item of
    /// its [`row_fetch`](Self::row_fetch), or `None` when a sparse component the term
    /// requires is missing.
    ///
    /// # Safety
    /// As for [`fetch`](Self::fetch), with a fetch from
    /// [`fetch_sparse`](WorldQuery::fetch_sparse).
    #[doc(hidden)]
    #[inline]
    unsafe fn fetch_entity<'w>(
        fetch: &mut Self::Fetch<'w>,
        row: usize,
        entity: Entity,
    ) -> Option<Self::Item<'w>> {
        // SAFETY: the caller's contract; the row fetch is read at its row 0, once.
        unsafe { Self::row_fetch(fetch, row, entity).map(|mut row_fetch| Self::fetch(&mut row_fetch, 0)) }
    }
}

/// A [`QueryData`] that never writes, so it can be iterated through `&World`.
///
/// # Safety
/// `update_access` records no writes.
#[diagnostic::on_unimplemented(
    message = "`{Self}` writes components, so this needs exclusive access to the query",
    label = "this query has a `&mut` or `Mut` term",
    note = "use the method's `_mut` form (`iter_mut`, `get_mut`, `par_for_each_mut`) on a `mut` query"
)]
pub unsafe trait ReadOnlyQueryData: QueryData<ReadOnly = Self> {}

// ---------------------------------------------------------------------------------------
// Entity

// SAFETY: reads only the table's entity list, which is not component access.
unsafe impl WorldQuery for Entity {
    type State = ();
    type Cache = ();
    type Fetch<'w> = *const Entity;
    type Prepared = PreparedEntities;

    fn init_state(_: &mut World) {}

    fn update_access(_: &(), _: &mut Access) -> Result<(), ComponentId> {
        Ok(())
    }

    fn match_archetype(_: &(), _: &Archetype) -> Option<()> {
        Some(())
    }

    const SPARSE_AWARE: bool = true;

    #[inline]
    unsafe fn prepare(_: (), archetype: &Archetype) -> PreparedEntities {
        PreparedEntities(archetype.entities().as_ptr())
    }

    #[inline]
    unsafe fn fetch_prepared<'w>(entities: PreparedEntities, _: RunTicks) -> Self::Fetch<'w> {
        entities.0
    }
}

/// One archetype's entity list, prepared: a pointer into its table.
// Hidden: an implementation detail of the built-in terms' `WorldQuery` impls, public only
// because it names their associated types.
#[doc(hidden)]
#[derive(Clone, Copy)]
pub struct PreparedEntities(*const Entity);

// SAFETY: the pointer is only read through, by query runs that hold the world (entity lists
// change only through `&mut` access to the table, which moves the shape on).
unsafe impl Send for PreparedEntities {}
// SAFETY: as above; a shared `PreparedEntities` only copies the pointer.
unsafe impl Sync for PreparedEntities {}

// SAFETY: hands out copies of entity ids only.
unsafe impl QueryData for Entity {
    type ReadOnly = Self;
    type Item<'w> = Entity;
    type Chunk<'w> = &'w [Entity];

    #[inline]
    unsafe fn fetch<'w>(fetch: &mut Self::Fetch<'w>, row: usize) -> Self::Item<'w> {
        // SAFETY: `row` is below the table length (the caller's contract).
        unsafe { *fetch.add(row) }
    }

    #[inline]
    unsafe fn fetch_chunk<'w>(fetch: &mut Self::Fetch<'w>, len: usize) -> Self::Chunk<'w> {
        // SAFETY: the entity list holds `len` ids and is not mutated during the iteration.
        unsafe { std::slice::from_raw_parts(*fetch, len) }
    }

    #[inline]
    unsafe fn row_fetch<'w>(fetch: &Self::Fetch<'w>, row: usize, _: Entity) -> Option<Self::Fetch<'w>> {
        // SAFETY: `row` is a live row of the list (the caller's contract).
        Some(unsafe { fetch.add(row) })
    }
}

// SAFETY: no writes.
unsafe impl ReadOnlyQueryData for Entity {}

// ---------------------------------------------------------------------------------------
// &T and Ref<T>

/// One column of one archetype, prepared: its arrays, and the column itself for its floor.
// Hidden: an implementation detail of the built-in terms' `WorldQuery` impls, public only
// because it names their associated types.
#[doc(hidden)]
#[derive(Clone, Copy)]
pub struct PreparedColumn {
    values: *mut u8,
    pub(super) ticks: *mut ComponentTicks,
    column: *const Column,
}

// SAFETY: the pointers are dereferenced only by query runs holding the access the query
// declares (the schedule or the borrow checker keeps runs with conflicting access apart),
// from whatever thread runs them; components are `Send + Sync`.
unsafe impl Send for PreparedColumn {}
// SAFETY: as above; a shared `PreparedColumn` only copies the pointers.
unsafe impl Sync for PreparedColumn {}

impl PreparedColumn {
    /// Column `index` of `archetype`'s table.
    ///
    /// # Safety
    /// `index` came from matching this archetype (so it is one of its table's columns).
    #[inline]
    pub(super) unsafe fn of(archetype: &Archetype, index: usize) -> Self {
        // SAFETY: in bounds (the caller's contract).
        let column = unsafe { archetype.table.column_unchecked(index) };
        Self {
            values: column.data_ptr(),
            ticks: column.ticks_base(),
            column,
        }
    }

    /// The column, for its floor.
    ///
    /// # Safety
    /// As for [`WorldQuery::fetch_prepared`]: the table has kept its shape, so the column
    /// is where it was, for `'w`.
    #[inline]
    pub(super) unsafe fn column<'w>(self) -> &'w Column {
        // SAFETY: the caller's contract; columns are only changed through `&mut`, which
        // moves the shape on.
        unsafe { &*self.column }
    }
}

impl PreparedColumn {
    /// Column `index` of `table`.
    ///
    /// # Safety
    /// `index` is one of the table's columns.
    #[inline]
    pub(super) unsafe fn of_table(table: &Table, index: usize) -> Self {
        // SAFETY: in bounds (the caller's contract).
        let column = unsafe { table.column_unchecked(index) };
        Self {
            values: column.data_ptr(),
            ticks: column.ticks_base(),
            column,
        }
    }
}

/// Where a term's fetch finds an entity's row: the archetype row itself (a table
/// component), or the dense row of the entity in a sparse set.
// Hidden: part of the built-in terms' fetches, public only because their types name it.
#[doc(hidden)]
#[derive(Clone, Copy)]
pub struct SparseLookup(*const SparseSet);

impl SparseLookup {
    /// A table component: rows are archetype rows.
    pub(super) const TABLE: Self = Self(std::ptr::null());

    /// True for a table component.
    #[inline]
    pub(super) fn is_table(self) -> bool {
        self.0.is_null()
    }

    /// A sparse component stored in `set`.
    #[inline]
    pub(super) fn of(set: &SparseSet) -> Self {
        Self(set)
    }

    /// The row to read for `entity`, whose archetype row is `row`; `None` when `entity`
    /// has no value in the set.
    ///
    /// # Safety
    /// For a sparse lookup, the set it was made from is still in place and keeps its shape
    /// (the [`WorldQuery::fetch_sparse`] contract).
    #[inline]
    pub(super) unsafe fn row(self, entity: Entity, row: usize) -> Option<usize> {
        if self.0.is_null() {
            return Some(row);
        }
        // SAFETY: non-null: made from a live set that has not moved (the caller's contract).
        unsafe { (*self.0).row_of(entity) }
    }
}

/// The fetch of a component read: the column's values, its ticks and its changed floor.
// Hidden: an implementation detail of the built-in terms' `WorldQuery` impls, public only
// because it names their associated types.
#[doc(hidden)]
pub struct ReadFetch<'w, T> {
    values: *const T,
    ticks: *const ComponentTicks,
    floor: Tick,
    run: RunTicks,
    sparse: SparseLookup,
    _marker: PhantomData<&'w T>,
}

/// The fetch of a component write: as [`ReadFetch`], plus the column itself (to move its
/// floor) and the scratch tick that deferred items mark.
// Hidden: an implementation detail of the built-in terms' `WorldQuery` impls, public only
// because it names their associated types.
#[doc(hidden)]
pub struct WriteFetch<'w, T> {
    values: *mut T,
    ticks: *mut ComponentTicks,
    floor: Tick,
    column: &'w Column,
    scratch: Tick,
    run: RunTicks,
    sparse: SparseLookup,
    _marker: PhantomData<&'w mut T>,
}

// The state, cache and prepared form of a term over one component's column: the component
// terms here, and the tick filters (`filter.rs`).
macro_rules! component_state {
    () => {
        fn init_state(world: &mut World) -> ComponentId {
            world.component_id_or_register::<T>()
        }

        fn match_archetype(id: &ComponentId, archetype: &Archetype) -> Option<usize> {
            archetype.column_of(*id)
        }

        component_state!(@common);
    };
    // A term that writes the column: refused for an immutable component, when the state is
    // made and (for a component made immutable later) when an archetype holding it is matched.
    (write) => {
        fn init_state(world: &mut World) -> ComponentId {
            let id = world.component_id_or_register::<T>();
            if world.components().info(id).is_immutable() {
                crate::world::hooks::write_refused(&crate::short_type_name(std::any::type_name::<T>()), "a query term");
            }
            id
        }

        fn match_archetype(id: &ComponentId, archetype: &Archetype) -> Option<usize> {
            if archetype.is_immutable(*id) {
                crate::world::hooks::write_refused(&crate::short_type_name(std::any::type_name::<T>()), "a query term");
            }
            archetype.column_of(*id)
        }

        component_state!(@common);
    };
    (@common) => {
        type State = ComponentId;
        type Cache = usize;
        type Prepared = PreparedColumn;

        const SPARSE_AWARE: bool = true;

        #[inline]
        fn match_sparse(id: &ComponentId, archetype: &Archetype, world: &World) -> Option<usize> {
            match world.sparse.get(*id) {
                // Every archetype: the rows are decided by the set. The cache is unused.
                Some(_) => Some(usize::MAX),
                None => Self::match_archetype(id, archetype),
            }
        }

        #[inline]
        unsafe fn fetch_sparse<'w>(
            id: &ComponentId,
            cache: usize,
            archetype: &'w Archetype,
            world: &'w World,
            ticks: RunTicks,
        ) -> Self::Fetch<'w> {
            match world.sparse.get(*id) {
                // SAFETY: a dense table has the one column, 0; the set stays in place and
                // keeps its shape for `'w` (the caller's contract), so its column pointers
                // stay valid, and the caller holds the term's access to `T`'s values.
                Some(set) => unsafe {
                    let mut fetch = Self::fetch_prepared(PreparedColumn::of_table(set.table(), 0), ticks);
                    fetch.sparse = SparseLookup::of(set);
                    fetch
                },
                // SAFETY: the caller's contract is `fetch_archetype`'s.
                None => unsafe { Self::fetch_archetype(cache, archetype, ticks) },
            }
        }

        #[inline]
        unsafe fn prepare(column: usize, archetype: &Archetype) -> PreparedColumn {
            // SAFETY: `column` came from matching this archetype (the caller's contract).
            unsafe { PreparedColumn::of(archetype, column) }
        }
    };
}
pub(super) use component_state;

macro_rules! read_term {
    ($ty:ty, $item:ty, |$fetch:ident, $row:ident| $make:expr) => {
        // SAFETY: reads column `cache` of `T` and its ticks, reported as a read of `T`.
        unsafe impl<'a, T: Component> WorldQuery for $ty {
            component_state!();
            type Fetch<'w> = ReadFetch<'w, T>;

            fn update_access(id: &ComponentId, access: &mut Access) -> Result<(), ComponentId> {
                access.add_with(*id);
                access.add_read(*id)
            }

            #[inline]
            unsafe fn fetch_prepared<'w>(column: PreparedColumn, ticks: RunTicks) -> Self::Fetch<'w> {
                ReadFetch {
                    values: column.values.cast::<T>(),
                    ticks: column.ticks,
                    // SAFETY: the column is where it was (the caller's contract); the caller
                    // holds a read of `T`, so nothing writes the floor.
                    floor: unsafe { column.column().changed_floor(ticks.this_run) },
                    run: ticks,
                    sparse: SparseLookup::TABLE,
                    _marker: PhantomData,
                }
            }
        }

        // SAFETY: hands out shared items of the column it reported reading; its ticks are
        // read, never written.
        unsafe impl<'a, T: Component> QueryData for $ty {
            type ReadOnly = Self;
            type Item<'w> = $item;
            type Chunk<'w> = &'w [T];

            #[inline]
            unsafe fn fetch<'w>($fetch: &mut Self::Fetch<'w>, $row: usize) -> Self::Item<'w> {
                // SAFETY: `row` is live and holds a `T`; values and ticks are only read while
                // the query holds a read.
                unsafe { $make }
            }

            #[inline]
            unsafe fn fetch_chunk<'w>(fetch: &mut Self::Fetch<'w>, len: usize) -> Self::Chunk<'w> {
                // SAFETY: rows `0..len` hold `T`s; only shared access to `T` exists.
                unsafe { std::slice::from_raw_parts(fetch.values, len) }
            }

            #[inline]
            unsafe fn row_fetch<'w>(
                fetch: &Self::Fetch<'w>,
                row: usize,
                entity: Entity,
            ) -> Option<Self::Fetch<'w>> {
                // SAFETY: the lookup is of a set in place (the caller's contract); the row it
                // gives is live in the table the fetch points into.
                unsafe {
                    let row = fetch.sparse.row(entity, row)?;
                    Some(ReadFetch {
                        values: fetch.values.add(row),
                        ticks: fetch.ticks.add(row),
                        ..*fetch
                    })
                }
            }
        }

        // SAFETY: no writes.
        unsafe impl<'a, T: Component> ReadOnlyQueryData for $ty {}
    };
}

read_term!(&'a T, &'w T, |fetch, row| &*fetch.values.add(row));
read_term!(Ref<'a, T>, Ref<'w, T>, |fetch, row| Ref::new(
    &*fetch.values.add(row),
    ComponentTicks::added_at(fetch.ticks, row),
    (*fetch.ticks.add(row))
        .changed
        .newest(fetch.floor, fetch.run.this_run),
    fetch.run,
));

// ---------------------------------------------------------------------------------------
// &mut T and Mut<T>

macro_rules! write_term {
    ($ty:ty, $read_only:ty) => {
        // SAFETY: writes column `cache` of `T` and its `changed` ticks, reported as a write.
        unsafe impl<'a, T: Component> WorldQuery for $ty {
            component_state!(write);
            type Fetch<'w> = WriteFetch<'w, T>;

            fn update_access(id: &ComponentId, access: &mut Access) -> Result<(), ComponentId> {
                access.add_with(*id);
                access.add_write(*id)
            }

            #[inline]
            unsafe fn fetch_prepared<'w>(prepared: PreparedColumn, ticks: RunTicks) -> Self::Fetch<'w> {
                // SAFETY: the column is where it was (the caller's contract).
                let column = unsafe { prepared.column() };
                WriteFetch {
                    values: prepared.values.cast::<T>(),
                    ticks: prepared.ticks,
                    // SAFETY: the caller holds the write of `T`; no one else touches the floor.
                    floor: unsafe { column.changed_floor(ticks.this_run) },
                    column,
                    scratch: ticks.this_run,
                    run: ticks,
                    sparse: SparseLookup::TABLE,
                    _marker: PhantomData,
                }
            }
        }

        // SAFETY: hands out one `Mut<T>` per row; rows are distinct (the caller's contract)
        // and the column is written by this query alone (its reported access). The read-only
        // form reads the same column, with the same state, cache and prepared form.
        unsafe impl<'a, T: Component> QueryData for $ty {
            type ReadOnly = $read_only;
            type Item<'w> = Mut<'w, T>;
            type Chunk<'w> = &'w mut [T];

            #[inline]
            unsafe fn fetch<'w>(fetch: &mut Self::Fetch<'w>, row: usize) -> Self::Item<'w> {
                // SAFETY: `row` is live and no other reference to its value or `changed` tick
                // exists (the caller's contract).
                unsafe {
                    Mut::new(
                        &mut *fetch.values.add(row),
                        ComponentTicks::added_at(fetch.ticks, row),
                        &mut *ComponentTicks::changed_at(fetch.ticks, row),
                        fetch.floor,
                        fetch.run,
                    )
                }
            }

            #[inline]
            unsafe fn fetch_chunk<'w>(fetch: &mut Self::Fetch<'w>, len: usize) -> Self::Chunk<'w> {
                // SAFETY: rows `0..len` are every row of the archetype and exclusively ours
                // (the caller's contract), so the floor may record that all of them change.
                unsafe {
                    fetch.column.set_changed_floor(fetch.run.this_run);
                    std::slice::from_raw_parts_mut(fetch.values, len)
                }
            }

            const DEFERS_MARKS: bool = true;

            #[inline]
            unsafe fn fetch_deferred<'w>(fetch: &mut Self::Fetch<'w>, row: usize) -> Self::Item<'w> {
                // SAFETY: as for `fetch`, except that the item marks `fetch.scratch`: the
                // caller keeps `fetch` in place and unused until the item is gone, so the
                // `'w` reference to the scratch never dangles or aliases.
                unsafe {
                    fetch.scratch = *ComponentTicks::changed_at(fetch.ticks, row);
                    let scratch: *mut Tick = &mut fetch.scratch;
                    Mut::new(
                        &mut *fetch.values.add(row),
                        ComponentTicks::added_at(fetch.ticks, row),
                        &mut *scratch,
                        fetch.floor,
                        fetch.run,
                    )
                }
            }

            #[inline]
            fn row_marked(fetch: &Self::Fetch<'_>) -> bool {
                fetch.scratch == fetch.run.this_run
            }

            #[inline]
            unsafe fn mark_rows(fetch: &mut Self::Fetch<'_>, rows: Range<usize>, whole: bool) {
                // SAFETY: the rows are live and ours to write (the caller's contract); `whole`
                // means no other thread works on this column, so its floor is ours too.
                unsafe {
                    if whole {
                        fetch.column.set_changed_floor(fetch.run.this_run);
                    } else {
                        for row in rows {
                            *ComponentTicks::changed_at(fetch.ticks, row) = fetch.run.this_run;
                        }
                    }
                }
            }

            #[inline]
            unsafe fn store_mark(fetch: &mut Self::Fetch<'_>, row: usize) {
                if Self::row_marked(fetch) {
                    // SAFETY: the row is live and ours to write (the caller's contract).
                    unsafe { *ComponentTicks::changed_at(fetch.ticks, row) = fetch.run.this_run };
                }
            }

            #[inline]
            unsafe fn row_fetch<'w>(
                fetch: &Self::Fetch<'w>,
                row: usize,
                entity: Entity,
            ) -> Option<Self::Fetch<'w>> {
                // SAFETY: the lookup is of a set in place (the caller's contract); the row it
                // gives is live in the table the fetch points into, and belongs to `entity`
                // alone, whose item the caller makes once. The item (`fetch`, not deferred)
                // marks the row itself, so a dense row is marked on write like an archetype row.
                unsafe {
                    let row = fetch.sparse.row(entity, row)?;
                    Some(WriteFetch {
                        values: fetch.values.add(row),
                        ticks: fetch.ticks.add(row),
                        ..*fetch
                    })
                }
            }
        }
    };
}

write_term!(&'a mut T, &'a T);
write_term!(Mut<'a, T>, Ref<'a, T>);

// ---------------------------------------------------------------------------------------
// Option<Q>

// SAFETY: delegates to `Q` where it matches; reports `Q`'s reads and writes (but not its
// `with` set, since entities without `Q` match too).
unsafe impl<Q: WorldQuery> WorldQuery for Option<Q> {
    type State = Q::State;
    type Cache = Option<Q::Cache>;
    type Fetch<'w> = Option<Q::Fetch<'w>>;
    type Prepared = Option<Q::Prepared>;

    fn init_state(world: &mut World) -> Q::State {
        Q::init_state(world)
    }

    fn update_access(state: &Q::State, access: &mut Access) -> Result<(), ComponentId> {
        let mut inner = Access::default();
        Q::update_access(state, &mut inner)?;
        access.merge_named(&inner);
        access.merge_data(&inner)
    }

    fn match_archetype(state: &Q::State, archetype: &Archetype) -> Option<Option<Q::Cache>> {
        Some(Q::match_archetype(state, archetype))
    }

    const SPARSE_AWARE: bool = Q::SPARSE_AWARE;

    fn match_sparse(state: &Q::State, archetype: &Archetype, world: &World) -> Option<Option<Q::Cache>> {
        Some(Q::match_sparse(state, archetype, world))
    }

    #[inline]
    unsafe fn fetch_sparse<'w>(
        state: &Q::State,
        cache: Option<Q::Cache>,
        archetype: &'w Archetype,
        world: &'w World,
        ticks: RunTicks,
    ) -> Self::Fetch<'w> {
        // SAFETY: forwarded contract; `cache` is `Some` only where `Q` matched.
        cache.map(|cache| unsafe { Q::fetch_sparse(state, cache, archetype, world, ticks) })
    }

    #[inline]
    unsafe fn prepare(cache: Option<Q::Cache>, archetype: &Archetype) -> Option<Q::Prepared> {
        // SAFETY: forwarded contract; `cache` is `Some` only where `Q` matched.
        cache.map(|cache| unsafe { Q::prepare(cache, archetype) })
    }

    #[inline]
    unsafe fn fetch_prepared<'w>(prepared: Option<Q::Prepared>, ticks: RunTicks) -> Self::Fetch<'w> {
        // SAFETY: forwarded contract.
        prepared.map(|prepared| unsafe { Q::fetch_prepared(prepared, ticks) })
    }
}

// SAFETY: delegates to `Q` (whose read-only form reads through `Q`'s caches).
unsafe impl<Q: QueryData> QueryData for Option<Q> {
    type ReadOnly = Option<Q::ReadOnly>;
    type Item<'w> = Option<Q::Item<'w>>;
    type Chunk<'w> = Option<Q::Chunk<'w>>;

    #[inline]
    unsafe fn fetch<'w>(fetch: &mut Self::Fetch<'w>, row: usize) -> Self::Item<'w> {
        // SAFETY: forwarded contract.
        fetch.as_mut().map(|fetch| unsafe { Q::fetch(fetch, row) })
    }

    #[inline]
    unsafe fn fetch_chunk<'w>(fetch: &mut Self::Fetch<'w>, len: usize) -> Self::Chunk<'w> {
        // SAFETY: forwarded contract.
        fetch.as_mut().map(|fetch| unsafe { Q::fetch_chunk(fetch, len) })
    }

    const DEFERS_MARKS: bool = Q::DEFERS_MARKS;

    #[inline]
    unsafe fn fetch_deferred<'w>(fetch: &mut Self::Fetch<'w>, row: usize) -> Self::Item<'w> {
        // SAFETY: forwarded contract.
        fetch
            .as_mut()
            .map(|fetch| unsafe { Q::fetch_deferred(fetch, row) })
    }

    #[inline]
    fn row_marked(fetch: &Self::Fetch<'_>) -> bool {
        fetch.as_ref().is_none_or(Q::row_marked)
    }

    #[inline]
    unsafe fn mark_rows(fetch: &mut Self::Fetch<'_>, rows: Range<usize>, whole: bool) {
        if let Some(fetch) = fetch {
            // SAFETY: forwarded contract.
            unsafe { Q::mark_rows(fetch, rows, whole) }
        }
    }

    #[inline]
    unsafe fn store_mark(fetch: &mut Self::Fetch<'_>, row: usize) {
        if let Some(fetch) = fetch {
            // SAFETY: forwarded contract.
            unsafe { Q::store_mark(fetch, row) }
        }
    }

    #[inline]
    unsafe fn row_fetch<'w>(fetch: &Self::Fetch<'w>, row: usize, entity: Entity) -> Option<Self::Fetch<'w>> {
        // SAFETY: forwarded contract; a missing sparse component makes the item `None`.
        Some(
            fetch
                .as_ref()
                .and_then(|fetch| unsafe { Q::row_fetch(fetch, row, entity) }),
        )
    }
}

// SAFETY: `Q` records no writes.
unsafe impl<Q: ReadOnlyQueryData> ReadOnlyQueryData for Option<Q> {}

// ---------------------------------------------------------------------------------------
// Has<T>

/// Yields whether the entity has a `T`, without reading it (so it conflicts with nothing).
///
/// ```
/// use tabula::{Has, World};
/// struct Frozen;
/// let mut world = World::new();
/// world.spawn((1u32, Frozen));
/// world.spawn((2u32,));
/// let mut q = world.query::<(&u32, Has<Frozen>)>();
/// let mut seen: Vec<_> = q.iter(&world).map(|(n, frozen)| (*n, frozen)).collect();
/// seen.sort();
/// assert_eq!(seen, [(1, true), (2, false)]);
/// ```
pub struct Has<T>(PhantomData<fn() -> T>);

// SAFETY: reads no component data.
unsafe impl<T: Component> WorldQuery for Has<T> {
    type State = ComponentId;
    type Cache = bool;
    type Fetch<'w> = (bool, SparseLookup);
    type Prepared = bool;

    const SPARSE_AWARE: bool = true;

    #[inline]
    fn match_sparse(id: &ComponentId, archetype: &Archetype, _: &World) -> Option<bool> {
        Self::match_archetype(id, archetype)
    }

    #[inline]
    unsafe fn fetch_sparse<'w>(
        id: &ComponentId,
        has: bool,
        _: &'w Archetype,
        world: &'w World,
        _: RunTicks,
    ) -> Self::Fetch<'w> {
        (
            has,
            world
                .sparse
                .get(*id)
                .map_or(SparseLookup::TABLE, SparseLookup::of),
        )
    }

    fn init_state(world: &mut World) -> ComponentId {
        world.component_id_or_register::<T>()
    }

    fn update_access(id: &ComponentId, access: &mut Access) -> Result<(), ComponentId> {
        // Named, not read: `Has<Disabled>` sees disabled entities, and conflicts with nothing.
        access.add_named(*id);
        Ok(())
    }

    fn match_archetype(id: &ComponentId, archetype: &Archetype) -> Option<bool> {
        Some(archetype.column_of(*id).is_some())
    }

    #[inline]
    unsafe fn prepare(has: bool, _: &Archetype) -> bool {
        has
    }

    #[inline]
    unsafe fn fetch_prepared<'w>(has: bool, _: RunTicks) -> Self::Fetch<'w> {
        (has, SparseLookup::TABLE)
    }
}

// SAFETY: yields plain booleans.
unsafe impl<T: Component> QueryData for Has<T> {
    type ReadOnly = Self;
    type Item<'w> = bool;
    type Chunk<'w> = bool;

    #[inline]
    unsafe fn fetch<'w>(has: &mut Self::Fetch<'w>, _: usize) -> Self::Item<'w> {
        has.0
    }

    #[inline]
    unsafe fn fetch_chunk<'w>(has: &mut Self::Fetch<'w>, _: usize) -> Self::Chunk<'w> {
        has.0
    }

    #[inline]
    unsafe fn row_fetch<'w>(has: &Self::Fetch<'w>, row: usize, entity: Entity) -> Option<Self::Fetch<'w>> {
        let (in_table, lookup) = *has;
        // SAFETY: the lookup is of a set in place (the caller's contract). A table lookup
        // answers `Some`, so the archetype's answer stands.
        let has = in_table || (!lookup.is_table() && unsafe { lookup.row(entity, row) }.is_some());
        Some((has, SparseLookup::TABLE))
    }
}

// SAFETY: no writes.
unsafe impl<T: Component> ReadOnlyQueryData for Has<T> {}

// ---------------------------------------------------------------------------------------
// Tuples

macro_rules! tuple_data {
    ($($name:ident $index:tt),*) => {
        // SAFETY: the union of the members' accesses, each checked against the others.
        #[allow(unused_variables, clippy::unused_unit)]
        unsafe impl<$($name: WorldQuery),*> WorldQuery for ($($name,)*) {
            type State = ($($name::State,)*);
            type Cache = ($($name::Cache,)*);
            type Fetch<'w> = ($($name::Fetch<'w>,)*);
            type Prepared = ($($name::Prepared,)*);

            fn init_state(world: &mut World) -> Self::State {
                ($($name::init_state(world),)*)
            }

            fn update_access(state: &Self::State, access: &mut Access) -> Result<(), ComponentId> {
                $($name::update_access(&state.$index, access)?;)*
                Ok(())
            }

            #[inline]
            fn match_archetype(state: &Self::State, archetype: &Archetype) -> Option<Self::Cache> {
                Some(($($name::match_archetype(&state.$index, archetype)?,)*))
            }

            const SPARSE_AWARE: bool = true $(&& $name::SPARSE_AWARE)*;

            #[inline]
            fn match_sparse(state: &Self::State, archetype: &Archetype, world: &World) -> Option<Self::Cache> {
                Some(($($name::match_sparse(&state.$index, archetype, world)?,)*))
            }

            #[inline]
            unsafe fn fetch_sparse<'w>(
                state: &Self::State,
                cache: Self::Cache,
                archetype: &'w Archetype,
                world: &'w World,
                ticks: RunTicks,
            ) -> Self::Fetch<'w> {
                // SAFETY: forwarded contract, member by member.
                #[allow(unused_unsafe)]
                unsafe { ($($name::fetch_sparse(&state.$index, cache.$index, archetype, world, ticks),)*) }
            }

            #[inline]
            unsafe fn prepare(cache: Self::Cache, archetype: &Archetype) -> Self::Prepared {
                // SAFETY: forwarded contract, member by member.
                #[allow(unused_unsafe)]
                unsafe { ($($name::prepare(cache.$index, archetype),)*) }
            }

            #[inline]
            unsafe fn fetch_prepared<'w>(prepared: Self::Prepared, ticks: RunTicks) -> Self::Fetch<'w> {
                // SAFETY: forwarded contract, member by member.
                #[allow(unused_unsafe)]
                unsafe { ($($name::fetch_prepared(prepared.$index, ticks),)*) }
            }
        }

        // SAFETY: members' items, each within its own access.
        #[allow(unused_variables, clippy::unused_unit)]
        unsafe impl<$($name: QueryData),*> QueryData for ($($name,)*) {
            type ReadOnly = ($($name::ReadOnly,)*);
            type Item<'w> = ($($name::Item<'w>,)*);
            type Chunk<'w> = ($($name::Chunk<'w>,)*);

            #[inline]
            unsafe fn fetch<'w>(fetch: &mut Self::Fetch<'w>, row: usize) -> Self::Item<'w> {
                // SAFETY: forwarded contract, member by member.
                #[allow(unused_unsafe)]
                unsafe { ($($name::fetch(&mut fetch.$index, row),)*) }
            }

            #[inline]
            unsafe fn fetch_chunk<'w>(fetch: &mut Self::Fetch<'w>, len: usize) -> Self::Chunk<'w> {
                // SAFETY: forwarded contract, member by member.
                #[allow(unused_unsafe)]
                unsafe { ($($name::fetch_chunk(&mut fetch.$index, len),)*) }
            }

            const DEFERS_MARKS: bool = false $(|| $name::DEFERS_MARKS)*;

            #[inline]
            unsafe fn fetch_deferred<'w>(fetch: &mut Self::Fetch<'w>, row: usize) -> Self::Item<'w> {
                // SAFETY: forwarded contract, member by member (each points into its own part).
                #[allow(unused_unsafe)]
                unsafe { ($($name::fetch_deferred(&mut fetch.$index, row),)*) }
            }

            #[inline]
            fn row_marked(fetch: &Self::Fetch<'_>) -> bool {
                true $(&& $name::row_marked(&fetch.$index))*
            }

            #[inline]
            unsafe fn mark_rows(fetch: &mut Self::Fetch<'_>, rows: Range<usize>, whole: bool) {
                // SAFETY: forwarded contract, member by member.
                $(unsafe { $name::mark_rows(&mut fetch.$index, rows.clone(), whole) };)*
            }

            #[inline]
            unsafe fn store_mark(fetch: &mut Self::Fetch<'_>, row: usize) {
                // SAFETY: forwarded contract, member by member.
                $(unsafe { $name::store_mark(&mut fetch.$index, row) };)*
            }

            #[inline]
            unsafe fn row_fetch<'w>(fetch: &Self::Fetch<'w>, row: usize, entity: Entity) -> Option<Self::Fetch<'w>> {
                // SAFETY: forwarded contract, member by member (no item is made here).
                #[allow(unused_unsafe)]
                unsafe { Some(($($name::row_fetch(&fetch.$index, row, entity)?,)*)) }
            }
        }

        // SAFETY: no member writes.
        unsafe impl<$($name: ReadOnlyQueryData),*> ReadOnlyQueryData for ($($name,)*) {}
    };
}

tuple_data!();
tuple_data!(A 0);
tuple_data!(A 0, B 1);
tuple_data!(A 0, B 1, C 2);
tuple_data!(A 0, B 1, C 2, D 3);
tuple_data!(A 0, B 1, C 2, D 3, E 4);
tuple_data!(A 0, B 1, C 2, D 3, E 4, F 5);
tuple_data!(A 0, B 1, C 2, D 3, E 4, F 5, G 6);
tuple_data!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7);
tuple_data!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8);
tuple_data!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9);
tuple_data!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10);
tuple_data!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11);
tuple_data!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11, M 12);
tuple_data!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11, M 12, N 13);
tuple_data!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11, M 12, N 13, O 14);
tuple_data!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11, M 12, N 13, O 14, P 15);
