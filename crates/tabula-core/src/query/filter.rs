//! Query filters: `With<T>`, `Without<T>`, `Added<T>`, `Changed<T>`, `Or<(..)>`, `Allow<T>`,
//! and tuples, which mean AND.
//!
//! `With` / `Without` are decided once per archetype ("archetypal"); `Added` / `Changed` read
//! one tick per row. A filter made only of archetypal parts never costs anything per entity.

use std::marker::PhantomData;

use super::access::Access;
use super::fetch::{PreparedColumn, SparseLookup, WorldQuery, component_state};
use crate::archetype::Archetype;
use crate::change::ComponentTicks;
use crate::change::RunTicks;
use crate::component::{Component, ComponentId};
use crate::entity::Entity;
use crate::world::World;

/// A query term that decides which entities match.
///
/// # Safety
/// As for [`WorldQuery`]; `filter_row` only reads what `update_access` reported.
pub unsafe trait QueryFilter: WorldQuery {
    /// True when every row of a matched archetype passes, so `filter_row` need not run.
    const ARCHETYPAL: bool;

    /// Whether `row` passes.
    ///
    /// # Safety
    /// `row` is below the archetype's length.
    unsafe fn filter_row(fetch: &mut Self::Fetch<'_>, row: usize) -> bool;

    /// The sparse path's [`filter_row`](Self::filter_row): whether the entity at archetype
    /// row `row` passes, looking sparse components up by `entity` (archetypal filters over
    /// sparse components are decided here, per row).
    ///
    /// # Safety
    /// As for `filter_row`, with a fetch from [`fetch_sparse`](WorldQuery::fetch_sparse).
    #[doc(hidden)]
    #[inline]
    unsafe fn filter_entity(fetch: &mut Self::Fetch<'_>, row: usize, _entity: Entity) -> bool {
        // SAFETY: the caller's contract.
        Self::ARCHETYPAL || unsafe { Self::filter_row(fetch, row) }
    }
}

/// A filter decided per archetype alone (`With`, `Without`, tuples and `Or`s of them), which
/// chunked iteration requires.
pub trait ArchetypeFilter: QueryFilter {}

/// Matches entities that have a `T`, without reading it.
pub struct With<T>(PhantomData<fn() -> T>);

/// Matches entities that do not have a `T`.
pub struct Without<T>(PhantomData<fn() -> T>);

/// Matches entities whose `T` was added since the query last ran.
pub struct Added<T>(PhantomData<fn() -> T>);

/// Matches entities whose `T` was added or mutably accessed since the query last ran.
pub struct Changed<T>(PhantomData<fn() -> T>);

/// Matches entities that pass any of the filters in the tuple `T`.
pub struct Or<T>(PhantomData<fn() -> T>);

/// Lets the query see entities that have `T` where `T` is a
/// [disabling component](crate::Disabled), which queries skip unless they name it. It
/// filters nothing out: entities with and without `T` both match.
///
/// ```
/// use tabula::prelude::*;
///
/// struct Health(u32);
///
/// let mut world = World::new();
/// world.spawn((Health(1),));
/// world.spawn((Health(2), Disabled));
/// assert_eq!(world.query::<&Health>().iter(&world).count(), 1, "disabled skipped");
/// let mut all = world.query_filtered::<&Health, Allow<Disabled>>();
/// assert_eq!(all.iter(&world).count(), 2, "both, when allowed");
/// ```
pub struct Allow<T>(PhantomData<fn() -> T>);

macro_rules! archetypal_filter {
    ($name:ident, $matches:expr, $record:ident) => {
        // SAFETY: reads nothing; records the archetype-level constraint only (for a sparse
        // component, whether the set holds the entity: structure, not component data).
        unsafe impl<T: Component> WorldQuery for $name<T> {
            type State = ComponentId;
            type Cache = ();
            type Fetch<'w> = SparseLookup;
            type Prepared = ();

            const SPARSE_AWARE: bool = true;

            #[inline]
            fn match_sparse(id: &ComponentId, archetype: &Archetype, world: &World) -> Option<()> {
                match world.sparse.get(*id) {
                    // Decided per row, by `filter_entity`.
                    Some(_) => Some(()),
                    None => Self::match_archetype(id, archetype),
                }
            }

            #[inline]
            unsafe fn fetch_sparse<'w>(
                id: &ComponentId,
                _: (),
                _: &'w Archetype,
                world: &'w World,
                _: RunTicks,
            ) -> SparseLookup {
                world
                    .sparse
                    .get(*id)
                    .map_or(SparseLookup::TABLE, SparseLookup::of)
            }

            fn init_state(world: &mut World) -> ComponentId {
                world.component_id_or_register::<T>()
            }

            fn update_access(id: &ComponentId, access: &mut Access) -> Result<(), ComponentId> {
                access.$record(*id);
                Ok(())
            }

            #[inline]
            #[allow(clippy::redundant_closure_call)]
            fn match_archetype(id: &ComponentId, archetype: &Archetype) -> Option<()> {
                let has = archetype.column_of(*id).is_some();
                ($matches)(has).then_some(())
            }

            #[inline]
            unsafe fn prepare(_: (), _: &Archetype) {}

            #[inline]
            unsafe fn fetch_prepared<'w>(_: (), _: RunTicks) -> Self::Fetch<'w> {
                SparseLookup::TABLE
            }
        }

        // SAFETY: reads nothing.
        unsafe impl<T: Component> QueryFilter for $name<T> {
            const ARCHETYPAL: bool = true;

            #[inline]
            unsafe fn filter_row(_: &mut SparseLookup, _: usize) -> bool {
                true
            }

            #[inline]
            #[allow(clippy::redundant_closure_call)]
            unsafe fn filter_entity(lookup: &mut SparseLookup, row: usize, entity: Entity) -> bool {
                // A table component was decided when the archetype matched.
                // SAFETY: a sparse lookup is of a set in place (the caller's contract).
                lookup.is_table() || ($matches)(unsafe { lookup.row(entity, row) }.is_some())
            }
        }

        impl<T: Component> ArchetypeFilter for $name<T> {}
    };
}

archetypal_filter!(With, |has| has, add_with);
archetypal_filter!(Without, |has: bool| !has, add_without);
archetypal_filter!(Allow, |_| true, add_named);

/// The fetch of a tick filter: one tick column and the run's ticks; `all` when the column's
/// changed floor already passes every row.
// Hidden: an implementation detail of the built-in terms' `WorldQuery` impls, public only
// because it names their associated types.
#[doc(hidden)]
pub struct TickFetch {
    ticks: *const ComponentTicks,
    run: RunTicks,
    all: bool,
    sparse: SparseLookup,
}

macro_rules! tick_filter {
    ($name:ident, $base:ident, $floor:expr) => {
        // SAFETY: reads the tick column of `T`, reported as a read of `T` (or covered by the
        // query's own write of `T`, whose items never overlap a row the filter is reading).
        unsafe impl<T: Component> WorldQuery for $name<T> {
            component_state!();
            type Fetch<'w> = TickFetch;

            fn update_access(id: &ComponentId, access: &mut Access) -> Result<(), ComponentId> {
                access.add_with(*id);
                access.add_filter_read(*id);
                Ok(())
            }

            #[inline]
            unsafe fn fetch_prepared<'w>(prepared: PreparedColumn, run: RunTicks) -> Self::Fetch<'w> {
                // SAFETY: the column is where it was (the caller's contract).
                let column = unsafe { prepared.column() };
                // SAFETY: the caller holds a read of `T`, or the query's own write of `T`; a
                // query writes the floor only from a whole-archetype `for_each` pass or
                // `for_each_chunk`, and neither runs with this filter (it is not archetypal,
                // so those loops take the per-row path or do not accept it). The floor is
                // copied here, by value.
                let floor = unsafe { column.changed_floor(run.this_run) };
                TickFetch {
                    ticks: prepared.ticks,
                    run,
                    all: $floor && floor.is_newer_than(run.last_run, run.this_run),
                    sparse: SparseLookup::TABLE,
                }
            }
        }

        // SAFETY: reads one tick of a live row.
        unsafe impl<T: Component> QueryFilter for $name<T> {
            const ARCHETYPAL: bool = false;

            #[inline]
            unsafe fn filter_row(fetch: &mut TickFetch, row: usize) -> bool {
                if fetch.all {
                    return true;
                }
                // SAFETY: `row` is live (the caller's contract). Other systems' writes to `T`
                // conflict with this read; the query's own `&mut T` items write ticks of rows
                // already filtered (every loop filters a row before fetching it, and
                // `get_many_mut` checks its distinct rows first), never of this one, and the
                // read goes through a raw pointer.
                let tick = unsafe { (*fetch.ticks.add(row)).$base };
                tick.is_newer_than(fetch.run.last_run, fetch.run.this_run)
            }

            #[inline]
            unsafe fn filter_entity(fetch: &mut TickFetch, row: usize, entity: Entity) -> bool {
                // SAFETY: the lookup is of a set in place (the caller's contract); the row it
                // gives is live in the table the fetch reads.
                unsafe {
                    match fetch.sparse.row(entity, row) {
                        Some(row) => Self::filter_row(fetch, row),
                        None => false,
                    }
                }
            }
        }
    };
}

tick_filter!(Added, added, false);
tick_filter!(Changed, changed, true);

macro_rules! tuple_filter {
    ($($name:ident $index:tt),*) => {
        // SAFETY: AND of the members; `WorldQuery` for the tuple comes from `fetch.rs`.
        #[allow(unused_variables, unused_mut)]
        unsafe impl<$($name: QueryFilter),*> QueryFilter for ($($name,)*) {
            const ARCHETYPAL: bool = true $(&& $name::ARCHETYPAL)*;

            #[inline]
            unsafe fn filter_row(fetch: &mut Self::Fetch<'_>, row: usize) -> bool {
                // SAFETY: forwarded contract.
                true $(&& unsafe { $name::filter_row(&mut fetch.$index, row) })*
            }

            #[inline]
            unsafe fn filter_entity(fetch: &mut Self::Fetch<'_>, row: usize, entity: Entity) -> bool {
                // SAFETY: forwarded contract.
                true $(&& unsafe { $name::filter_entity(&mut fetch.$index, row, entity) })*
            }
        }

        impl<$($name: ArchetypeFilter),*> ArchetypeFilter for ($($name,)*) {}

        // SAFETY: matches where any member matches, fetches only those members, and reports
        // the members' reads, and their `with`/`without` only as alternatives (`add_one_of`):
        // an OR promises one branch, not each.
        #[allow(unused_variables, unused_mut, clippy::unused_unit)]
        unsafe impl<$($name: QueryFilter),*> WorldQuery for Or<($($name,)*)> {
            type State = ($($name::State,)*);
            type Cache = ($(Option<$name::Cache>,)*);
            type Fetch<'w> = ($(Option<$name::Fetch<'w>>,)*);
            type Prepared = ($(Option<$name::Prepared>,)*);

            fn init_state(world: &mut World) -> Self::State {
                ($($name::init_state(world),)*)
            }

            fn update_access(state: &Self::State, access: &mut Access) -> Result<(), ComponentId> {
                let mut members = Vec::new();
                $({
                    let mut member = Access::default();
                    $name::update_access(&state.$index, &mut member)?;
                    access.merge_filter_reads(&member);
                    members.push(member);
                })*
                access.add_one_of(&members);
                Ok(())
            }

            fn match_archetype(state: &Self::State, archetype: &Archetype) -> Option<Self::Cache> {
                let cache = ($($name::match_archetype(&state.$index, archetype),)*);
                (false $(|| cache.$index.is_some())*).then_some(cache)
            }

            const SPARSE_AWARE: bool = true $(&& $name::SPARSE_AWARE)*;

            fn match_sparse(state: &Self::State, archetype: &Archetype, world: &World) -> Option<Self::Cache> {
                let cache = ($($name::match_sparse(&state.$index, archetype, world),)*);
                (false $(|| cache.$index.is_some())*).then_some(cache)
            }

            #[inline]
            unsafe fn fetch_sparse<'w>(
                state: &Self::State,
                cache: Self::Cache,
                archetype: &'w Archetype,
                world: &'w World,
                ticks: RunTicks,
            ) -> Self::Fetch<'w> {
                // SAFETY: forwarded contract, for the members that matched.
                ($(cache.$index.map(|c| unsafe { $name::fetch_sparse(&state.$index, c, archetype, world, ticks) }),)*)
            }

            #[inline]
            unsafe fn prepare(cache: Self::Cache, archetype: &Archetype) -> Self::Prepared {
                // SAFETY: forwarded contract, for the members that matched.
                ($(cache.$index.map(|c| unsafe { $name::prepare(c, archetype) }),)*)
            }

            #[inline]
            unsafe fn fetch_prepared<'w>(prepared: Self::Prepared, ticks: RunTicks) -> Self::Fetch<'w> {
                // SAFETY: forwarded contract, for the members that matched.
                ($(prepared.$index.map(|p| unsafe { $name::fetch_prepared(p, ticks) }),)*)
            }
        }

        // SAFETY: reads only through matched members.
        #[allow(unused_variables)]
        unsafe impl<$($name: QueryFilter),*> QueryFilter for Or<($($name,)*)> {
            const ARCHETYPAL: bool = true $(&& $name::ARCHETYPAL)*;

            #[inline]
            unsafe fn filter_row(fetch: &mut Self::Fetch<'_>, row: usize) -> bool {
                // SAFETY: forwarded contract.
                false $(|| fetch.$index.as_mut().is_some_and(|f| unsafe { $name::filter_row(f, row) }))*
            }

            #[inline]
            unsafe fn filter_entity(fetch: &mut Self::Fetch<'_>, row: usize, entity: Entity) -> bool {
                // SAFETY: forwarded contract.
                false $(|| fetch.$index.as_mut().is_some_and(|f| unsafe { $name::filter_entity(f, row, entity) }))*
            }
        }

        impl<$($name: ArchetypeFilter),*> ArchetypeFilter for Or<($($name,)*)> {}
    };
}

tuple_filter!();
tuple_filter!(A 0);
tuple_filter!(A 0, B 1);
tuple_filter!(A 0, B 1, C 2);
tuple_filter!(A 0, B 1, C 2, D 3);
tuple_filter!(A 0, B 1, C 2, D 3, E 4);
tuple_filter!(A 0, B 1, C 2, D 3, E 4, F 5);
tuple_filter!(A 0, B 1, C 2, D 3, E 4, F 5, G 6);
tuple_filter!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7);
