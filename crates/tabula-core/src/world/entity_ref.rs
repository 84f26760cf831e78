//! Views of one entity: `EntityRef` to read, `EntityMut` to read, write and reshape.

use crate::archetype::Archetype;
use crate::bundle::Bundle;
use crate::change::Mut;
use crate::component::{Component, ComponentId};
use crate::dynamic::{MutUntyped, Ptr};
use crate::entity::Entity;
use crate::error::EntityError;
use crate::location::EntityLocation;

use super::World;

/// A read-only view of one live entity, from [`World::entity`].
///
/// ```
/// let mut world = tabula::World::new();
/// let e = world.spawn((3u8, "name"));
/// let view = world.entity(e)?;
/// assert_eq!(view.get::<u8>(), Some(&3));
/// assert!(!view.has::<f32>());
/// assert_eq!(view.component_names().count(), 2);
/// # Ok::<(), tabula::EntityError>(())
/// ```
#[derive(Clone, Copy)]
pub struct EntityRef<'w> {
    world: &'w World,
    entity: Entity,
    location: EntityLocation,
}

impl<'w> EntityRef<'w> {
    pub(super) fn new(world: &'w World, entity: Entity, location: EntityLocation) -> Self {
        Self {
            world,
            entity,
            location,
        }
    }

    /// The entity's id.
    pub fn id(&self) -> Entity {
        self.entity
    }

    /// The entity's `T`, if it has one.
    pub fn get<T: Component>(&self) -> Option<&'w T> {
        self.world.get_at(self.entity, self.location).ok()
    }

    /// True when the entity has a `T`.
    pub fn has<T: Component>(&self) -> bool {
        self.archetype().has::<T>() || (self.world.sparse.any() && self.world.has::<T>(self.entity))
    }

    /// The entity's component `id` (typed or [dynamic](crate::dynamic)), if it has one.
    ///
    /// ```
    /// let mut world = tabula::World::new();
    /// let id = world.register_component::<u8>().id();
    /// let e = world.spawn((3u8,));
    /// let ptr = world.entity(e)?.get_by_id(id).unwrap();
    /// // SAFETY: component `id` is `u8`.
    /// assert_eq!(unsafe { *ptr.deref::<u8>() }, 3);
    /// # Ok::<(), tabula::EntityError>(())
    /// ```
    pub fn get_by_id(&self, id: ComponentId) -> Option<Ptr<'w>> {
        self.world.get_by_id_at(self.entity, self.location, id).ok()
    }

    /// The archetype the entity lives in.
    pub fn archetype(&self) -> &'w Archetype {
        &self.world.archetypes.archetypes.all()[self.location.archetype.index()]
    }

    /// The type names of the entity's components: its archetype's, then those it holds in
    /// [sparse sets](crate::ComponentRegistration::sparse_set).
    pub fn component_names(&self) -> impl ExactSizeIterator<Item = &'static str> + 'w {
        let world = self.world;
        let sparse = if world.sparse.any() {
            world.sparse.held_by(self.entity)
        } else {
            Default::default()
        };
        let sparse_names = sparse.into_iter().map(|id| world.components.info(id).name());
        let names: Vec<&'static str> = self.archetype().component_names().chain(sparse_names).collect();
        names.into_iter()
    }
}

impl std::fmt::Debug for EntityRef<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EntityRef")
            .field("id", &self.entity)
            .field("components", &self.component_names().collect::<Vec<_>>())
            .finish()
    }
}

/// A mutable view of one live entity, from [`World::entity_mut`].
///
/// ```
/// let mut world = tabula::World::new();
/// let e = world.spawn((1u32,));
/// let mut view = world.entity_mut(e)?;
/// *view.get_mut::<u32>().unwrap() += 1;
/// view.insert((0.5f32,));
/// assert_eq!(view.remove::<(u32,)>()?, (2,));
/// view.despawn();
/// assert!(!world.contains(e));
/// # Ok::<(), tabula::EntityError>(())
/// ```
pub struct EntityMut<'w> {
    world: &'w mut World,
    entity: Entity,
}

impl<'w> EntityMut<'w> {
    pub(super) fn new(world: &'w mut World, entity: Entity) -> Self {
        Self { world, entity }
    }

    /// The entity's location; `None` once a component hook's command despawned it.
    fn location(&self) -> Option<EntityLocation> {
        self.world.location(self.entity).ok()
    }

    /// The entity's id.
    pub fn id(&self) -> Entity {
        self.entity
    }

    /// The entity's `T`, if it has one.
    pub fn get<T: Component>(&self) -> Option<&T> {
        self.world.get_at(self.entity, self.location()?).ok()
    }

    /// Mutable access to the entity's `T`, if it has one; `None` for an
    /// [immutable](crate::ComponentRegistration::immutable) component (see
    /// [`World::get_mut`]).
    pub fn get_mut<T: Component>(&mut self) -> Option<Mut<'_, T>> {
        self.world.get_mut(self.entity).ok()
    }

    /// True when the entity has a `T`.
    pub fn has<T: Component>(&self) -> bool {
        self.world.has::<T>(self.entity)
    }

    /// The entity's component `id`, if it has one (see [`World::get_by_id`]).
    pub fn get_by_id(&self, id: ComponentId) -> Option<Ptr<'_>> {
        self.world.get_by_id(self.entity, id).ok()
    }

    /// Mutable access to the entity's component `id`, if it has one and it is not
    /// immutable (see [`World::get_mut_by_id`]).
    pub fn get_mut_by_id(&mut self, id: ComponentId) -> Option<MutUntyped<'_>> {
        self.world.get_mut_by_id(self.entity, id).ok()
    }

    /// Removes and drops the entity's component `id`; returns whether it had one (see
    /// [`World::remove_by_id`]).
    pub fn remove_by_id(&mut self, id: ComponentId) -> Result<bool, EntityError> {
        self.world.remove_by_id(self.entity, id)
    }

    /// Adds (or replaces) the components of `bundle`.
    ///
    /// # Panics
    /// When the entity is gone: a component hook's command despawned it. (Nothing else
    /// despawns it while the view borrows the world.)
    #[track_caller]
    pub fn insert<B: Bundle>(&mut self, bundle: B) -> &mut Self {
        if let Err(error) = self.world.insert(self.entity, bundle) {
            panic!("EntityMut::insert: {error} (a component hook's command despawned it)");
        }
        self
    }

    /// Removes the components of `B` and returns them; an error names the first one missing.
    pub fn remove<B: Bundle>(&mut self) -> Result<B, EntityError> {
        self.world.remove(self.entity)
    }

    /// Despawns the entity (if a component hook's command has not already).
    pub fn despawn(self) {
        let _ = self.world.despawn(self.entity);
    }

    /// The world, read-only, for lookups the view does not offer (other entities,
    /// resources).
    pub fn world(&self) -> &World {
        self.world
    }
}
