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
}

impl World {
    /// A [`View`] of every entity's `T`, for many lookups while the world is borrowed.
    ///
    /// Making it visits every archetype once; a lookup then skips the search for `T`'s column
    /// that [`get`](Self::get) does each time.
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
        View {
            locations: self.entities.locations(),
            tag: self.entities.tag(),
            columns,
            hot,
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
            None => Err(missing::<T>(entity)),
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
        ViewMut {
            locations: self.entities.locations(),
            tag: self.entities.tag(),
            columns,
            ticks,
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
            None => Err(missing::<T>(entity)),
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
