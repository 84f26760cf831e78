//! Entity remapping: [`MapEntities`] and [`EntityMapper`], for loading a save into a world
//! that already has entities ([`World::load_remapped`](crate::World::load_remapped)).

use crate::entity::Entity;
use crate::hierarchy::{Children, Parent};

/// Maps a saved entity id to the id it has in the world being loaded into.
pub trait EntityMapper {
    /// The id `entity` has now. During a remapped load, `entity` is always an entity of the
    /// save (a reference to one the save does not hold is refused before the mapper runs).
    fn map_entity(&mut self, entity: Entity) -> Entity;
}

/// A component or resource holding [`Entity`] values, which a remapped load rewrites.
///
/// Register such a type with
/// [`register_serde_mapped`](crate::World::register_serde_mapped) (or
/// [`register_serde_resource_mapped`](crate::World::register_serde_resource_mapped)):
/// [`World::load_remapped`](crate::World::load_remapped) then calls `map_entities` on every
/// loaded value, so the ids it holds are those the referenced entities got. A type that
/// holds an `Entity` and is registered with plain `register_serde` keeps its saved ids,
/// which after a remapped load name other entities, or none.
///
/// ```
/// use tabula::{Entity, EntityMapper, MapEntities};
///
/// struct Target {
///     entity: Entity,
///     backups: Vec<Entity>,
/// }
///
/// impl MapEntities for Target {
///     fn map_entities(&mut self, mapper: &mut dyn EntityMapper) {
///         self.entity.map_entities(mapper);
///         self.backups.map_entities(mapper);
///     }
/// }
/// ```
pub trait MapEntities {
    /// Replaces every [`Entity`] held by `self` with `mapper`'s image of it.
    fn map_entities(&mut self, mapper: &mut dyn EntityMapper);
}

impl MapEntities for Entity {
    fn map_entities(&mut self, mapper: &mut dyn EntityMapper) {
        *self = mapper.map_entity(*self);
    }
}

impl<T: MapEntities> MapEntities for Option<T> {
    fn map_entities(&mut self, mapper: &mut dyn EntityMapper) {
        if let Some(value) = self {
            value.map_entities(mapper);
        }
    }
}

impl<T: MapEntities> MapEntities for Vec<T> {
    fn map_entities(&mut self, mapper: &mut dyn EntityMapper) {
        for value in self {
            value.map_entities(mapper);
        }
    }
}

impl<T: MapEntities, const N: usize> MapEntities for [T; N] {
    fn map_entities(&mut self, mapper: &mut dyn EntityMapper) {
        for value in self {
            value.map_entities(mapper);
        }
    }
}

impl MapEntities for Parent {
    fn map_entities(&mut self, mapper: &mut dyn EntityMapper) {
        *self = Parent::new(mapper.map_entity(self.get()));
    }
}

impl MapEntities for Children {
    fn map_entities(&mut self, mapper: &mut dyn EntityMapper) {
        crate::relationship::RelationshipTarget::sources_mut(self).map_entities(mapper);
    }
}

/// A mapper through a table of saved ids, for the checks and the commit of a remapped load.
pub(super) struct TableMapper<'a> {
    pub(super) table: &'a hashbrown::HashMap<Entity, Entity>,
    /// The first id met that the table lacks (the check pass reports it).
    pub(super) missing: Option<Entity>,
}

impl EntityMapper for TableMapper<'_> {
    fn map_entity(&mut self, entity: Entity) -> Entity {
        match self.table.get(&entity) {
            Some(&mapped) => mapped,
            None => {
                self.missing.get_or_insert(entity);
                entity
            }
        }
    }
}
