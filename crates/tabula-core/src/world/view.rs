//! Borrowed views of one component type, for many random lookups: [`View`] reads,
//! [`ViewMut`] also writes.
//!
//! [`World::get`] finds the component's column afresh on every call: the entity's archetype,
//! then the column of `T` in it (a `TypeId` comparison), then the column's base pointer. A
//! [`View`] does the last two steps once for every archetype when it is made, so a lookup is
//! the entity's slot, the column for its archetype, and the value. The world stays borrowed
//! while the view lives, so no table can grow or move underneath it.

use std::any::{TypeId, type_name};
use std::marker::PhantomData;

use crate::change::RunTicks;
use crate::change::{ComponentTicks, Mut, Tick};
use crate::component::Component;
use crate::entity::{Entity, Locations};
use crate::error::EntityError;
use crate::location::ArchetypeId;
use crate::storage::SparseSet;

use super::{World, missing, tick_now};

/// Shared access to every entity's `T`, resolved once per archetype: the fast way to look up
/// one component of many entities in no particular order (following relationship links, targets
/// stored in other components, an entity list kept elsewhere).
///
/// Made by [`World::view`]. Each lookup costs about what indexing a `Vec` through an index
/// list costs, where [`World::get`] also searches the archetype for `T`'s column.
///
/// ```
/// use tabula::{EntityError, World};
///
/// struct Position(f32);
/// struct Target(tabula::Entity);
///
/// let mut world = World::new();
/// let a = world.spawn((Position(1.0),));
/// let b = world.spawn((Position(5.0), Target(a)));
/// let c = world.spawn((Target(b),));
///
/// let positions = world.view::<Position>();
/// let target = world.get::<Target>(b)?.0;
/// assert_eq!(positions.get(target)?.0 - positions.get(b)?.0, -4.0);
/// assert!(matches!(positions.get(c), Err(EntityError::MissingComponent { .. })));
/// # Ok::<(), EntityError>(())
/// ```
///
/// The view borrows the world, so nothing can change it while the view is in use:
///
/// ```compile_fail
/// let mut world = tabula::World::new();
/// let e = world.spawn((1u32,));
/// let view = world.view::<u32>();
/// world.despawn(e).unwrap(); // error: `world` is borrowed by `view`
/// assert!(view.get(e).is_ok());
/// ```
pub struct View<'w, T: Component> {
    locations: Locations<'w>,
    /// The world's [tag](World::tag), for the error of a lookup that misses.
    tag: u8,
    /// `columns[a]` holds archetype `a`'s rows of `T`, or is `None` when it has no `T`.
    columns: Box<[Option<&'w [T]>]>,
    /// The archetype with the most rows of `T` (`ArchetypeId::ABSENT` when none has any) and
    /// its rows: a lookup there compares the archetype together with the generation instead
    /// of loading its column from `columns`, which keeps one load off the chain of dependent
    /// loads each lookup is.
    hot: (ArchetypeId, &'w [T]),
    /// For a component stored in a [sparse set](crate::ComponentRegistration::sparse_set)
    /// (which no archetype has a column of): the set and its dense values.
    sparse: Option<(&'w SparseSet, &'w [T])>,
}

impl World {
    /// A [`View`] of every entity's `T`, for many lookups while the world is borrowed.
    ///
    /// Making it visits every archetype once; a lookup then skips the search for `T`'s column
    /// that [`get`](Self::get) does each time. For a component stored in a
    /// [sparse set](crate::ComponentRegistration::sparse_set), a lookup finds the entity's
    /// value in the set.
    pub fn view<T: Component>(&self) -> View<'_, T> {
        let type_id = TypeId::of::<T>();
        let columns: Box<[Option<&[T]>]> = self
            .archetypes
            .archetypes
            .all()
            .iter()
            .map(|archetype| {
                let column = archetype.column_of_type(type_id)?;
                let table = &archetype.table;
                // SAFETY: the column was found by `T`'s `TypeId`, so it stores `T`, with rows
                // `0..len` initialised (table invariant). `&self` keeps every table as it is
                // and rules out any `&mut` to its values for `'_`.
                Some(unsafe {
                    let data = table.column(column).data_ptr().cast::<T>();
                    std::slice::from_raw_parts(data, table.len())
                })
            })
            .collect();
        let hot = (columns.iter().enumerate())
            .filter_map(|(archetype, column)| Some((archetype, (*column)?)))
            .max_by_key(|(_, column)| column.len())
            .map_or((ArchetypeId::ABSENT, &[][..]), |(archetype, column)| {
                (self.archetypes.archetypes.all()[archetype].id(), column)
            });
        let sparse = self.sparse_set_of::<T>().map(|set| {
            let column = set.table().column(0);
            // SAFETY: the set is `T`'s (found by its component id), its one column stores `T`
            // with rows `0..len` initialised, and `&self` keeps it as it is for `'_`.
            let values =
                unsafe { std::slice::from_raw_parts(column.data_ptr().cast::<T>(), set.table().len()) };
            (set, values)
        });
        View {
            locations: self.entities.locations(),
            tag: self.entities.tag(),
            columns,
            hot,
            sparse,
        }
    }
}

impl<'w, T: Component> View<'w, T> {
    /// `entity`'s `T`: [`World::get`], with the column already found.
    ///
    /// # Errors
    /// [`EntityError::NoSuchEntity`] when `entity` is not alive, and
    /// [`EntityError::MissingComponent`] when it has no `T`.
    #[inline]
    pub fn get(&self, entity: Entity) -> Result<&'w T, EntityError> {
        if let Some(row) = self.locations.row_in(entity, self.hot.0) {
            // SAFETY: locations are exact, so the row is one of the hot archetype's rows.
            return Ok(unsafe { self.hot.1.get_unchecked(row as usize) });
        }
        self.get_elsewhere(entity)
    }

    /// [`get`](Self::get) for an entity outside the hot archetype (or not alive).
    ///
    /// Inlined, and without a call in it (see [`missing`]): a call, however rare, clobbers the
    /// caller-saved registers, and the caller's lookup loop then keeps its values on the
    /// stack and reloads them on every lookup.
    #[inline(always)]
    fn get_elsewhere(&self, entity: Entity) -> Result<&'w T, EntityError> {
        let location = self
            .locations
            .get(entity)
            .ok_or(EntityError::not_found(entity, self.tag))?;
        // SAFETY: a live entity's location names an archetype of the world, and the view has
        // one entry per archetype: none can be added while the world is borrowed.
        match unsafe { self.columns.get_unchecked(location.archetype.index()) } {
            // SAFETY: locations are exact, so the row is one of the table's `len` rows.
            Some(column) => Ok(unsafe { column.get_unchecked(location.row as usize) }),
            None => match self.sparse {
                // A dense row of the set is one of its values.
                Some((set, values)) => {
                    (set.row_of(entity).and_then(|row| values.get(row))).ok_or_else(|| missing::<T>(entity))
                }
                None => Err(missing::<T>(entity)),
            },
        }
    }

    /// True when `entity` is alive and has a `T`.
    #[inline]
    pub fn contains(&self, entity: Entity) -> bool {
        self.get(entity).is_ok()
    }
}

/// Mutable access to every entity's `T`, resolved once per archetype: [`View`] for writing,
/// as [`World::get_mut`] is for [`World::get`]. Writing through the [`Mut`] it hands out
/// marks the component changed, exactly as `get_mut` does.
///
/// Made by [`World::view_mut`]. One item at a time: [`get_mut`](Self::get_mut) borrows the
/// view, so two items never alias.
///
/// ```
/// use tabula::{EntityError, World};
///
/// struct Health(u32);
/// struct Target(tabula::Entity);
///
/// let mut world = World::new();
/// let enemy = world.spawn((Health(10),));
/// let turret = world.spawn((Health(5), Target(enemy)));
///
/// let target = world.get::<Target>(turret)?.0;
/// let mut health = world.view_mut::<Health>();
/// health.get_mut(target)?.0 -= 3;
/// assert_eq!(health.get(enemy)?.0, 7);
/// # Ok::<(), EntityError>(())
/// ```
///
/// ```compile_fail
/// let mut world = tabula::World::new();
/// let a = world.spawn((1u32,));
/// let mut view = world.view_mut::<u32>();
/// let first = view.get_mut(a).unwrap();
/// let second = view.get_mut(a).unwrap(); // error: `view` is already borrowed by `first`
/// drop((first, second));
/// ```
pub struct ViewMut<'w, T: Component> {
    locations: Locations<'w>,
    /// The world's [tag](World::tag), for the error of a lookup that misses.
    tag: u8,
    /// `columns[a]` points at archetype `a`'s column of `T`, or is `None` when it has none.
    columns: Box<[Option<ColumnPtrs<T>>]>,
    ticks: RunTicks,
    /// For a component stored in a [sparse set](crate::ComponentRegistration::sparse_set):
    /// the set, and its dense column as raw pointers.
    sparse: Option<(*const SparseSet, ColumnPtrs<T>)>,
    /// The world is borrowed exclusively for `'w`.
    _world: PhantomData<&'w mut World>,
}

/// One archetype's column of `T` as raw pointers, with its changed floor at view time.
struct ColumnPtrs<T> {
    values: *mut T,
    ticks: *mut ComponentTicks,
    floor: Tick,
}

impl World {
    /// A [`ViewMut`] of every entity's `T`, for many lookups and writes while the world is
    /// borrowed.
    ///
    /// For a component stored in a
    /// [sparse set](crate::ComponentRegistration::sparse_set), a lookup finds the entity's
    /// value in the set, and writing marks its dense row changed.
    ///
    /// # Panics
    /// For an [immutable](crate::ComponentRegistration::immutable) component.
    #[track_caller]
    pub fn view_mut<T: Component>(&mut self) -> ViewMut<'_, T> {
        if let Some(id) = self.components.id::<T>()
            && self.components.info(id).is_immutable()
        {
            super::hooks::write_refused(&crate::short_type_name(type_name::<T>()), "World::view_mut");
        }
        let ticks = RunTicks {
            last_run: self.last_change_tick,
            this_run: tick_now(&mut self.change_tick),
        };
        let type_id = TypeId::of::<T>();
        let columns = self
            .archetypes
            .archetypes
            .all()
            .iter()
            .map(|archetype| {
                let column = archetype.table.column(archetype.column_of_type(type_id)?);
                Some(ColumnPtrs {
                    values: column.data_ptr().cast::<T>(),
                    ticks: column.ticks_base(),
                    // SAFETY: `&mut self`: nothing else reads or writes the column.
                    floor: unsafe { column.changed_floor(ticks.this_run) },
                })
            })
            .collect();
        let sparse = self.sparse_set_of::<T>().map(|set| {
            let column = set.table().column(0);
            let ptrs = ColumnPtrs {
                values: column.data_ptr().cast::<T>(),
                ticks: column.ticks_base(),
                // SAFETY: `&mut self`: nothing else reads or writes the set's column.
                floor: unsafe { column.changed_floor(ticks.this_run) },
            };
            (set as *const SparseSet, ptrs)
        });
        ViewMut {
            locations: self.entities.locations(),
            tag: self.entities.tag(),
            columns,
            ticks,
            sparse,
            _world: PhantomData,
        }
    }
}

impl<T: Component> ViewMut<'_, T> {
    /// The column and row of `entity`'s `T`.
    #[inline]
    fn find(&self, entity: Entity) -> Result<(&ColumnPtrs<T>, usize), EntityError> {
        let location = self
            .locations
            .get(entity)
            .ok_or(EntityError::not_found(entity, self.tag))?;
        // SAFETY: a live entity's location names an archetype of the world, and the view has
        // one entry per archetype: none can be added while the world is borrowed.
        match unsafe { self.columns.get_unchecked(location.archetype.index()) } {
            Some(column) => Ok((column, location.row as usize)),
            None => match &self.sparse {
                // SAFETY: the set lives, unchanged, while the world is borrowed by the view
                // (sets are only made, grown or given rows through `&mut World`).
                Some((set, column)) => (unsafe { &**set }.row_of(entity))
                    .map(|row| (column, row))
                    .ok_or_else(|| missing::<T>(entity)),
                None => Err(missing::<T>(entity)),
            },
        }
    }

    /// `entity`'s `T`, read through the view.
    ///
    /// # Errors
    /// As for [`World::get`].
    #[inline]
    pub fn get(&self, entity: Entity) -> Result<&T, EntityError> {
        let (column, row) = self.find(entity)?;
        // SAFETY: the column stores `T` (found by its `TypeId`), `row` is live (locations are
        // exact, and the world cannot change while borrowed), and `&self` rules out any
        // `Mut` from this view meanwhile.
        Ok(unsafe { &*column.values.add(row) })
    }

    /// `entity`'s `T` for writing; writing through it marks the component changed.
    ///
    /// # Errors
    /// As for [`World::get_mut`].
    #[inline]
    pub fn get_mut(&mut self, entity: Entity) -> Result<Mut<'_, T>, EntityError> {
        let ticks = self.ticks;
        let (column, row) = self.find(entity)?;
        // SAFETY: as in `get`; `&mut self` makes this the only item of the view, the world is
        // borrowed exclusively by the view, and the value and the `changed` tick are disjoint
        // memory (value buffer, one field of the row's tick pair, read and pointed at
        // without a reference to the pair).
        unsafe {
            Ok(Mut::new(
                &mut *column.values.add(row),
                ComponentTicks::added_at(column.ticks, row),
                &mut *ComponentTicks::changed_at(column.ticks, row),
                column.floor,
                ticks,
            ))
        }
    }

    /// True when `entity` is alive and has a `T`.
    #[inline]
    pub fn contains(&self, entity: Entity) -> bool {
        self.find(entity).is_ok()
    }
}

// ---------------------------------------------------------------------------------------
// Views over several components

/// Shared access to several components of every entity at once, resolved once per
/// archetype: [`View`] for a tuple of `&T` terms, whose [`get`](Self::get) hands out one
/// entity's components together (hecs' `view`).
///
/// Made by [`World::multi_view`]. A term the entity lacks is an
/// [`EntityError::MissingComponent`] naming it. A term whose component is stored in a
/// [sparse set](crate::ComponentRegistration::sparse_set) finds the entity's value in the set.
///
/// ```
/// use tabula::{EntityError, World};
///
/// struct Local(f32);
/// struct Parent(tabula::Entity);
///
/// let mut world = World::new();
/// let root = world.spawn((Local(1.0),));
/// let child = world.spawn((Local(2.0), Parent(root)));
///
/// let view = world.multi_view::<(&Local, &Parent)>();
/// let (local, parent) = view.get(child)?;
/// assert_eq!((local.0, parent.0), (2.0, root));
/// assert!(matches!(view.get(root), Err(EntityError::MissingComponent { .. })));
/// # Ok::<(), EntityError>(())
/// ```
pub struct MultiView<'w, D: ViewData> {
    locations: Locations<'w>,
    tag: u8,
    /// `columns[a]` holds archetype `a`'s column of each term, where it has one.
    columns: Box<[D::Columns]>,
    /// Each term's sparse set and its dense column, for a component stored in one.
    sparse: D::Sparse,
    _world: PhantomData<&'w World>,
}

/// Mutable access to several components of every entity at once: [`MultiView`] with `&mut T`
/// terms, which hand out [`Mut<T>`] (writing through it marks the component changed, as
/// [`World::get_mut`] does). One item at a time: [`get_mut`](Self::get_mut) borrows the view.
///
/// Made by [`World::multi_view_mut`], which borrows the world exclusively.
///
/// ```
/// use tabula::{EntityError, World};
///
/// struct Local(f32);
/// struct Global(f32);
/// struct Parent(tabula::Entity);
///
/// let mut world = World::new();
/// let root = world.spawn((Local(1.0), Global(1.0)));
/// let child = world.spawn((Local(2.0), Global(0.0), Parent(root)));
///
/// let parent = world.get::<Parent>(child)?.0;
/// let mut view = world.multi_view_mut::<(&Local, &mut Global)>();
/// let base = view.get(parent)?.1.0;
/// let (local, mut global) = view.get_mut(child)?;
/// global.0 = base + local.0;
/// assert_eq!(view.get(child)?.1.0, 3.0);
/// # Ok::<(), EntityError>(())
/// ```
///
/// Two items of the view never live at once:
///
/// ```compile_fail
/// let mut world = tabula::World::new();
/// let a = world.spawn((1u32, 'x'));
/// let mut view = world.multi_view_mut::<(&mut u32, &char)>();
/// let first = view.get_mut(a).unwrap();
/// let second = view.get_mut(a).unwrap(); // error: `view` is already borrowed by `first`
/// drop((first, second));
/// ```
pub struct MultiViewMut<'w, D: ViewData> {
    locations: Locations<'w>,
    tag: u8,
    columns: Box<[D::Columns]>,
    sparse: D::Sparse,
    ticks: RunTicks,
    _world: PhantomData<&'w mut World>,
}

/// One archetype's column of `T` for a multi-component view, as raw pointers, with its
/// changed floor at view time (for `&mut T` terms).
// Hidden: names the associated types of the view terms' impls.
#[doc(hidden)]
pub struct ViewColumn<T> {
    values: *mut T,
    ticks: *mut ComponentTicks,
    floor: Tick,
}

/// A component stored in a [sparse set](crate::ComponentRegistration::sparse_set), for a
/// multi-component view: the set, to find an entity's dense row, and its dense column.
// Hidden: names the associated types of the view terms' impls.
#[doc(hidden)]
pub struct ViewSparse<T> {
    set: *const SparseSet,
    column: ViewColumn<T>,
}

/// The column and row that hold `entity`'s `T`: the archetype's `column` at `row` when it has
/// one, else the entity's dense row in the set of a sparse `T`; the error naming `T` when
/// neither has it.
///
/// # Safety
/// `sparse` came from [`view_sparse`] on the world the view borrows, which has not changed
/// since.
#[inline(always)]
unsafe fn locate<'c, T: Component>(
    column: &'c Option<ViewColumn<T>>,
    sparse: &'c Option<ViewSparse<T>>,
    entity: Entity,
    row: usize,
) -> Result<(&'c ViewColumn<T>, usize), EntityError> {
    match (column, sparse) {
        (Some(column), _) => Ok((column, row)),
        // SAFETY: the set lives, unchanged, while the world is borrowed by the view (sets are
        // only made, grown or given rows through `&mut World`; the caller's contract).
        (None, Some(sparse)) => (unsafe { &*sparse.set }.row_of(entity))
            .map(|row| (&sparse.column, row))
            .ok_or_else(|| missing::<T>(entity)),
        (None, None) => Err(missing::<T>(entity)),
    }
}

/// A term of a multi-component view: `&T` reads `T`, `&mut T` writes it.
///
/// # Safety
/// `item` hands out only what `WRITES` says (a shared reference unless it writes).
pub unsafe trait ViewTerm {
    /// The component the term reaches.
    type Component: Component;
    /// True for `&mut T`.
    const WRITES: bool;
    /// What the view's `get_mut` hands out: `&T` or `Mut<T>`.
    type Item<'a>;

    /// The term's item at `row` of `column`.
    ///
    /// # Safety
    /// `row` is a live row of the column, read under the view's borrow of the world; for a
    /// writing term, the view is borrowed mutably and no other item of this column lives.
    unsafe fn item<'a>(column: &ViewColumn<Self::Component>, row: usize, ticks: RunTicks) -> Self::Item<'a>;
}

// SAFETY: hands out shared references.
unsafe impl<T: Component> ViewTerm for &T {
    type Component = T;
    const WRITES: bool = false;
    type Item<'a> = &'a T;

    #[inline]
    unsafe fn item<'a>(column: &ViewColumn<T>, row: usize, _: RunTicks) -> &'a T {
        // SAFETY: a live row (the caller's contract), and nothing writes it meanwhile.
        unsafe { &*column.values.add(row) }
    }
}

// SAFETY: writes, and says so.
unsafe impl<T: Component> ViewTerm for &mut T {
    type Component = T;
    const WRITES: bool = true;
    type Item<'a> = Mut<'a, T>;

    #[inline]
    unsafe fn item<'a>(column: &ViewColumn<T>, row: usize, ticks: RunTicks) -> Mut<'a, T> {
        // SAFETY: a live row that no other item reaches (the caller's contract); the value and
        // the `changed` tick are disjoint memory (value buffer, one field of the row's tick
        // pair, pointed at without a reference to the pair).
        unsafe {
            Mut::new(
                &mut *column.values.add(row),
                ComponentTicks::added_at(column.ticks, row),
                &mut *ComponentTicks::changed_at(column.ticks, row),
                column.floor,
                ticks,
            )
        }
    }
}

/// The terms of a multi-component view: a tuple of `&T` and `&mut T` (one to eight), e.g.
/// `(&Local, &mut Global)`.
///
/// # Safety
/// `columns` returns, per term, the archetype's column of exactly that term's component;
/// `get` and `get_read` hand out only the terms' items (`get_read`: shared references only).
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a set of view terms",
    label = "use a tuple of `&T` and `&mut T`, e.g. `(&Local, &mut Global)`"
)]
pub unsafe trait ViewData {
    /// Per archetype: each term's column, where the archetype has it.
    type Columns;
    /// Per view: each term's sparse set and its dense column, for a component stored in one.
    type Sparse;
    /// One entity's items: `&T` for `&T` terms, `Mut<T>` for `&mut T` terms.
    type Item<'a>;
    /// One entity's items read through shared access: `&T` for every term.
    type ReadItem<'a>;

    /// Each term's component, name, whether it writes, and whether the component is
    /// registered immutable in `world`.
    fn terms(world: &World) -> Vec<(TypeId, &'static str, bool, bool)>;

    /// The archetype's columns; `ticks` (for a view that writes) gives the columns' floors.
    ///
    /// # Safety
    /// With `Some(ticks)`, the caller has exclusive access to the archetype's columns (a view
    /// made from `&mut World`): each column's changed floor is read, and nothing may write it
    /// meanwhile.
    unsafe fn columns(archetype: &crate::archetype::Archetype, ticks: Option<RunTicks>) -> Self::Columns;

    /// The sparse sets of the terms whose components are stored in one.
    ///
    /// # Safety
    /// As for [`columns`](Self::columns), for the sets' dense columns.
    unsafe fn sparse(world: &World, ticks: Option<RunTicks>) -> Self::Sparse;

    /// The items at `row`.
    ///
    /// # Safety
    /// As for [`ViewTerm::item`], for every term; `row` is `entity`'s row in the archetype
    /// the columns are of; `sparse` came from [`sparse`](Self::sparse) on the world the
    /// view borrows.
    unsafe fn get<'a>(
        columns: &Self::Columns,
        sparse: &Self::Sparse,
        entity: Entity,
        row: usize,
        ticks: RunTicks,
    ) -> Result<Self::Item<'a>, EntityError>;

    /// The items at `row`, all shared.
    ///
    /// # Safety
    /// As for [`get`](Self::get), except that any number of shared reads may live.
    unsafe fn get_read<'a>(
        columns: &Self::Columns,
        sparse: &Self::Sparse,
        entity: Entity,
        row: usize,
    ) -> Result<Self::ReadItem<'a>, EntityError>;
}

/// A [`ViewData`] of `&T` terms only, which [`World::multi_view`] takes through `&World`.
///
/// # Safety
/// No term writes.
#[diagnostic::on_unimplemented(
    message = "`{Self}` has a `&mut` term, so the view needs `&mut World`",
    label = "writes a component",
    note = "use `World::multi_view_mut`"
)]
pub unsafe trait ReadOnlyViewData: ViewData {}

/// The column of `T` in `archetype`, as raw pointers.
///
/// # Safety
/// As for [`ViewData::columns`].
unsafe fn view_column<T: Component>(
    archetype: &crate::archetype::Archetype,
    ticks: Option<RunTicks>,
) -> Option<ViewColumn<T>> {
    let column = archetype
        .table
        .column(archetype.column_of_type(TypeId::of::<T>())?);
    Some(ViewColumn {
        values: column.data_ptr().cast::<T>(),
        ticks: column.ticks_base(),
        floor: match ticks {
            // SAFETY: with `Some(ticks)` the caller has exclusive access to the column (the
            // contract): nothing writes its floor meanwhile.
            Some(ticks) => unsafe { column.changed_floor(ticks.this_run) },
            None => Tick::default(),
        },
    })
}

/// `T`'s sparse set and its dense column, when `T` is stored in one.
///
/// # Safety
/// As for [`ViewData::sparse`].
unsafe fn view_sparse<T: Component>(world: &World, ticks: Option<RunTicks>) -> Option<ViewSparse<T>> {
    let set = world.sparse_set_of::<T>()?;
    let column = set.table().column(0);
    Some(ViewSparse {
        set,
        column: ViewColumn {
            values: column.data_ptr().cast::<T>(),
            ticks: column.ticks_base(),
            floor: match ticks {
                // SAFETY: with `Some(ticks)` the caller has exclusive access to the set (the
                // contract): nothing writes its column's floor meanwhile.
                Some(ticks) => unsafe { column.changed_floor(ticks.this_run) },
                None => Tick::default(),
            },
        },
    })
}

macro_rules! view_data {
    ($($term:ident $index:tt),*) => {
        // SAFETY: each term's column is found by its component's `TypeId`; items are the
        // terms' (shared references in `get_read`).
        unsafe impl<$($term: ViewTerm),*> ViewData for ($($term,)*) {
            type Columns = ($(Option<ViewColumn<$term::Component>>,)*);
            type Sparse = ($(Option<ViewSparse<$term::Component>>,)*);
            type Item<'a> = ($($term::Item<'a>,)*);
            type ReadItem<'a> = ($(&'a $term::Component,)*);

            fn terms(world: &World) -> Vec<(TypeId, &'static str, bool, bool)> {
                vec![$((
                    TypeId::of::<$term::Component>(),
                    type_name::<$term::Component>(),
                    $term::WRITES,
                    (world.components.id::<$term::Component>())
                        .is_some_and(|id| world.components.info(id).is_immutable()),
                )),*]
            }

            unsafe fn columns(archetype: &crate::archetype::Archetype, ticks: Option<RunTicks>) -> Self::Columns {
                // SAFETY: the caller's contract, column by column.
                ($(unsafe { view_column::<$term::Component>(archetype, ticks) },)*)
            }

            unsafe fn sparse(world: &World, ticks: Option<RunTicks>) -> Self::Sparse {
                // SAFETY: the caller's contract, set by set.
                ($(unsafe { view_sparse::<$term::Component>(world, ticks) },)*)
            }

            #[inline]
            unsafe fn get<'a>(
                columns: &Self::Columns,
                sparse: &Self::Sparse,
                entity: Entity,
                row: usize,
                ticks: RunTicks,
            ) -> Result<Self::Item<'a>, EntityError> {
                // SAFETY: the caller's contract, term by term (distinct components, checked
                // when the view was made, so no two items alias: a sparse term's dense row is
                // in its own component's set).
                Ok(($(unsafe {
                    let (column, row) = locate(&columns.$index, &sparse.$index, entity, row)?;
                    $term::item(column, row, ticks)
                },)*))
            }

            #[inline]
            unsafe fn get_read<'a>(
                columns: &Self::Columns,
                sparse: &Self::Sparse,
                entity: Entity,
                row: usize,
            ) -> Result<Self::ReadItem<'a>, EntityError> {
                // SAFETY: a live row (the caller's contract; a sparse term's dense row is
                // live in its set), read through shared references.
                Ok(($(unsafe {
                    let (column, row) = locate(&columns.$index, &sparse.$index, entity, row)?;
                    &*column.values.add(row)
                },)*))
            }
        }

        // SAFETY: every term is a `&T`.
        unsafe impl<$($term: Component),*> ReadOnlyViewData for ($(&$term,)*) {}
    };
}

view_data!(A 0);
view_data!(A 0, B 1);
view_data!(A 0, B 1, C 2);
view_data!(A 0, B 1, C 2, D 3);
view_data!(A 0, B 1, C 2, D 3, E 4);
view_data!(A 0, B 1, C 2, D 3, E 4, F 5);
view_data!(A 0, B 1, C 2, D 3, E 4, F 5, G 6);
view_data!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7);

/// Refuses terms that alias (a component named twice, once written) and writes of immutable
/// components.
#[track_caller]
fn check_terms<D: ViewData>(world: &World, what: &str) {
    let terms = D::terms(world);
    for (i, (id, name, writes, immutable)) in terms.iter().enumerate() {
        if terms[..i]
            .iter()
            .any(|(other, _, other_writes, _)| other == id && (*writes || *other_writes))
        {
            panic!(
                "{what}::<{}> names `{}` twice, once for writing: the two would alias. Name each \
                 component once (`&mut T` also reads)",
                crate::short_type_name(type_name::<D>()),
                crate::short_type_name(name),
            );
        }
        if *writes && *immutable {
            super::hooks::write_refused(&crate::short_type_name(name), what);
        }
    }
}

impl World {
    /// A [`MultiView`] of several components of every entity (a tuple of `&T` terms), for
    /// many lookups while the world is borrowed. A term whose component is stored in a
    /// [sparse set](crate::ComponentRegistration::sparse_set) finds the entity's value in
    /// the set.
    ///
    /// Never panics (a component named twice is read twice).
    #[track_caller]
    pub fn multi_view<D: ReadOnlyViewData>(&self) -> MultiView<'_, D> {
        check_terms::<D>(self, "World::multi_view");
        let columns = (self.archetypes.archetypes.all().iter())
            // SAFETY: no ticks, so no floor is read.
            .map(|archetype| unsafe { D::columns(archetype, None) })
            .collect();
        MultiView {
            locations: self.entities.locations(),
            tag: self.entities.tag(),
            columns,
            // SAFETY: no ticks, so no floor is read.
            sparse: unsafe { D::sparse(self, None) },
            _world: PhantomData,
        }
    }

    /// A [`MultiViewMut`] of several components of every entity (a tuple of `&T` and `&mut T`
    /// terms), for many lookups and writes while the world is borrowed. A term whose
    /// component is stored in a [sparse set](crate::ComponentRegistration::sparse_set) finds
    /// the entity's value in the set, and writing marks its dense row changed.
    ///
    /// # Panics
    /// When a component is named twice and written (`(&mut A, &A)`), or a `&mut T` term names
    /// an [immutable](crate::ComponentRegistration::immutable) component.
    #[track_caller]
    pub fn multi_view_mut<D: ViewData>(&mut self) -> MultiViewMut<'_, D> {
        check_terms::<D>(self, "World::multi_view_mut");
        let ticks = RunTicks {
            last_run: self.last_change_tick,
            this_run: tick_now(&mut self.change_tick),
        };
        let columns = (self.archetypes.archetypes.all().iter())
            // SAFETY: `&mut self`: nothing else reads or writes the columns.
            .map(|archetype| unsafe { D::columns(archetype, Some(ticks)) })
            .collect();
        MultiViewMut {
            locations: self.entities.locations(),
            tag: self.entities.tag(),
            columns,
            // SAFETY: `&mut self`: nothing else reads or writes the sets' columns.
            sparse: unsafe { D::sparse(self, Some(ticks)) },
            ticks,
            _world: PhantomData,
        }
    }
}

impl<'w, D: ViewData> MultiView<'w, D> {
    /// `entity`'s components.
    ///
    /// # Errors
    /// [`EntityError::NoSuchEntity`] when `entity` is not alive, and
    /// [`EntityError::MissingComponent`] naming the first term it lacks.
    #[inline]
    pub fn get(&self, entity: Entity) -> Result<D::ReadItem<'w>, EntityError> {
        let location = self
            .locations
            .get(entity)
            .ok_or(EntityError::not_found(entity, self.tag))?;
        // SAFETY: a live entity's location names an archetype of the world, and the view has
        // one entry per archetype (none can be added while the world is borrowed); its row is
        // live, and `&'w World` rules out writers.
        unsafe {
            let columns = self.columns.get_unchecked(location.archetype.index());
            D::get_read(columns, &self.sparse, entity, location.row as usize)
        }
    }

    /// True when `entity` is alive and has every term's component.
    #[inline]
    pub fn contains(&self, entity: Entity) -> bool {
        self.get(entity).is_ok()
    }
}

impl<D: ViewData> MultiViewMut<'_, D> {
    /// The columns of `entity`'s archetype and its row.
    #[inline]
    fn find(&self, entity: Entity) -> Result<(&D::Columns, usize), EntityError> {
        let location = self
            .locations
            .get(entity)
            .ok_or(EntityError::not_found(entity, self.tag))?;
        // SAFETY: a live entity's location names an archetype of the world, and the view has
        // one entry per archetype: none can be added while the world is borrowed.
        let columns = unsafe { self.columns.get_unchecked(location.archetype.index()) };
        Ok((columns, location.row as usize))
    }

    /// `entity`'s components, read through the view (`&T` for every term).
    ///
    /// # Errors
    /// As for [`MultiView::get`].
    #[inline]
    pub fn get(&self, entity: Entity) -> Result<D::ReadItem<'_>, EntityError> {
        let (columns, row) = self.find(entity)?;
        // SAFETY: the row is live (locations are exact, and the world cannot change while
        // borrowed), and `&self` rules out any `Mut` from this view meanwhile.
        unsafe { D::get_read(columns, &self.sparse, entity, row) }
    }

    /// `entity`'s components for writing: `Mut<T>` for `&mut T` terms, whose writes mark the
    /// component changed.
    ///
    /// # Errors
    /// As for [`MultiView::get`].
    #[inline]
    pub fn get_mut(&mut self, entity: Entity) -> Result<D::Item<'_>, EntityError> {
        let ticks = self.ticks;
        let (columns, row) = self.find(entity)?;
        // SAFETY: as in `get`; `&mut self` makes this the only item of the view, the world is
        // borrowed exclusively by the view, and the terms name distinct components (checked
        // when the view was made).
        unsafe { D::get(columns, &self.sparse, entity, row, ticks) }
    }

    /// True when `entity` is alive and has every term's component.
    #[inline]
    pub fn contains(&self, entity: Entity) -> bool {
        self.get(entity).is_ok()
    }
}

#[cfg(test)]
mod multi_view_tests {
    use std::panic::{AssertUnwindSafe, catch_unwind};

    use crate::{Changed, Entity, EntityError, World};

    #[derive(Debug, PartialEq)]
    struct Local(f32);
    #[derive(Debug, PartialEq)]
    struct Global(f32);
    #[derive(Debug, PartialEq)]
    struct Tag;

    fn world() -> (World, [Entity; 4]) {
        let mut world = World::new();
        let a = world.spawn((Local(1.0), Global(10.0)));
        let b = world.spawn((Local(2.0), Global(20.0), Tag));
        let c = world.spawn((Local(3.0),));
        let d = world.spawn((Global(40.0), Tag));
        (world, [a, b, c, d])
    }

    fn panic_message(f: impl FnOnce()) -> String {
        let payload = catch_unwind(AssertUnwindSafe(f)).expect_err("should panic");
        payload
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default()
    }

    #[test]
    fn a_shared_view_reads_several_components_across_archetypes() {
        let (mut world, [a, b, c, d]) = world();
        let gone = world.spawn((Local(0.0), Global(0.0)));
        world.despawn(gone).unwrap();
        let view = world.multi_view::<(&Local, &Global)>();
        assert_eq!(view.get(a), Ok((&Local(1.0), &Global(10.0))));
        assert_eq!(view.get(b), Ok((&Local(2.0), &Global(20.0))));
        let missing = |e, component: &str| match view.get(e) {
            Err(EntityError::MissingComponent {
                entity,
                component: name,
            }) => entity == e && name.ends_with(component),
            _ => false,
        };
        assert!(missing(c, "Global"), "c lacks the second term");
        assert!(missing(d, "Local"), "d lacks the first term");
        assert!(matches!(view.get(gone), Err(EntityError::NoSuchEntity(_))));
        assert!(view.contains(a) && !view.contains(c));
        // Two views, and a component read twice, at once.
        let twice = world.multi_view::<(&Global, &Global, &Tag)>();
        assert_eq!(twice.get(b), Ok((&Global(20.0), &Global(20.0), &Tag)));
        assert_eq!(view.get(a).unwrap().1, &Global(10.0));
    }

    #[test]
    fn a_mutable_view_writes_and_marks_only_what_it_writes() {
        let (mut world, [a, b, c, _]) = world();
        let mut changed_global = world.query_filtered::<Entity, Changed<Global>>();
        let mut changed_local = world.query_filtered::<Entity, Changed<Local>>();
        changed_global.iter(&world).for_each(drop);
        changed_local.iter(&world).for_each(drop);
        {
            let mut view = world.multi_view_mut::<(&Local, &mut Global)>();
            // Propagate a's global into b's, as a transform pass would.
            let base = view.get(a).unwrap().1.0;
            let (local, mut global) = view.get_mut(b).unwrap();
            global.0 = base + local.0;
            assert_eq!(view.get(b).unwrap().1, &Global(12.0));
            assert!(view.get_mut(c).is_err());
            // Reading through `get_mut` without writing marks nothing.
            let (_, global) = view.get_mut(a).unwrap();
            assert_eq!(global.0, 10.0);
        }
        assert_eq!(world.get::<Global>(b), Ok(&Global(12.0)));
        let changed: Vec<Entity> = changed_global.iter(&world).collect();
        assert_eq!(changed, [b]);
        assert_eq!(changed_local.iter(&world).count(), 0);
    }

    #[test]
    fn aliasing_terms_and_immutable_components_are_refused() {
        let (mut world, _) = world();
        let message = panic_message(|| {
            world.multi_view_mut::<(&mut Global, &Global)>();
        });
        assert!(message.contains("`Global` twice"), "{message}");
        let message = panic_message(|| {
            world.multi_view_mut::<(&Local, &mut Global, &mut Global)>();
        });
        assert!(message.contains("`Global` twice"), "{message}");

        struct Frozen(u32);
        world.register_component::<Frozen>().immutable();
        let e = world.spawn((Frozen(1), Local(0.0)));
        let message = panic_message(|| {
            world.multi_view_mut::<(&Local, &mut Frozen)>();
        });
        assert!(message.contains("immutable"), "{message}");
        // Reading it is fine.
        let mut view = world.multi_view_mut::<(&mut Local, &Frozen)>();
        let (mut local, frozen) = view.get_mut(e).unwrap();
        local.0 = frozen.0 as f32;
        assert_eq!(world.get::<Local>(e), Ok(&Local(1.0)));
    }
}
