//! A borrowed view of one component type, for many random lookups.
//!
//! [`World::get`] finds the component's column afresh on every call: the entity's archetype,
//! then the column of `T` in it (a `TypeId` comparison), then the column's base pointer. A
//! [`View`] does the last two steps once for every archetype when it is made, so a lookup is
//! the entity's slot, the column for its archetype, and the value. The world stays borrowed
//! while the view lives, so no table can grow or move underneath it.

use std::any::TypeId;

use crate::component::Component;
use crate::entity::{Entity, Locations};
use crate::error::EntityError;

use super::{World, missing};

/// Shared access to every entity's `T`, resolved once per archetype: the fast way to look up
/// one component of many entities in no particular order (following `Parent` links, targets
/// stored in other components, an entity list kept elsewhere).
///
/// Made by [`World::view`]. Each lookup costs about what indexing a `Vec` through an index
/// list costs, where [`World::get`] also searches the archetype for `T`'s column.
///
/// ```
/// use tabula_core::{EntityError, World};
///
/// struct Position(f32);
/// struct Target(tabula_core::Entity);
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
/// let mut world = tabula_core::World::new();
/// let e = world.spawn((1u32,));
/// let view = world.view::<u32>();
/// world.despawn(e).unwrap(); // error: `world` is borrowed by `view`
/// assert!(view.get(e).is_ok());
/// ```
pub struct View<'w, T: Component> {
    locations: Locations<'w>,
    /// `columns[a]` holds archetype `a`'s rows of `T`, or is `None` when it has no `T`.
    columns: Box<[Option<&'w [T]>]>,
    /// The archetype with the most rows of `T` (`usize::MAX` when none has any) and its rows:
    /// a lookup there compares the archetype instead of loading its column from `columns`,
    /// which keeps one load off the chain of dependent loads each lookup is.
    hot: (usize, &'w [T]),
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
            .unwrap_or((usize::MAX, &[]));
        View {
            locations: self.entities.locations(),
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
        let location = self
            .locations
            .get(entity)
            .ok_or(EntityError::NoSuchEntity(entity))?;
        let archetype = location.archetype.index();
        let column = if archetype == self.hot.0 {
            self.hot.1
        } else {
            // SAFETY: a live entity's location names an archetype of the world, and the view
            // has one entry per archetype: none can be added while the world is borrowed.
            match unsafe { self.columns.get_unchecked(archetype) } {
                Some(column) => column,
                None => return Err(missing::<T>(entity)),
            }
        };
        // SAFETY: locations are exact, so the row is one of the table's `len` rows.
        Ok(unsafe { column.get_unchecked(location.row as usize) })
    }

    /// True when `entity` is alive and has a `T`.
    #[inline]
    pub fn contains(&self, entity: Entity) -> bool {
        self.get(entity).is_ok()
    }
}
