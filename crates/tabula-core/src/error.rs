//! Errors returned for bad input: each names the entity and, where relevant, the component.

use std::fmt;

use crate::component::ComponentId;
use crate::entity::Entity;

/// Why an operation on an entity was refused. The world is unchanged when one is returned.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum EntityError {
    /// The entity was despawned, never created, or is a reservation not yet flushed.
    NoSuchEntity(Entity),
    /// The entity was made by another world: its [world tag](Entity::world_tag) is not this
    /// world's [tag](crate::World::tag). An `Entity` is only meaningful in the world that
    /// made it.
    WrongWorld {
        /// The entity.
        entity: Entity,
        /// The tag of the world it was given to.
        world: u8,
    },
    /// The entity is alive but lacks a component the operation needs.
    MissingComponent {
        /// The entity.
        entity: Entity,
        /// The Rust type name of the missing component.
        component: &'static str,
    },
    /// `spawn_at` was given an entity that already has components.
    AlreadySpawned(Entity),
    /// A `get_mut` (or another in-place write) asked for a component registered as
    /// [immutable](crate::ComponentRegistration::immutable): its values are replaced by
    /// insert, never changed in place.
    ImmutableComponent {
        /// The entity.
        entity: Entity,
        /// The Rust type name of the component.
        component: &'static str,
    },
    /// An access by component id ([`World::get_by_id`](crate::World::get_by_id) and the
    /// like) named an id that no component has in this world.
    UnknownComponent {
        /// The entity asked about.
        entity: Entity,
        /// The id.
        component: ComponentId,
    },
    /// A spawn was refused because every entity slot of the world is live or retired (a
    /// slot whose generation count ran out is never reused). Despawning frees slots.
    IndexSpaceExhausted {
        /// How many slots the world has.
        slots: u32,
    },
}

impl fmt::Display for EntityError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NoSuchEntity(entity) => {
                write!(f, "entity {entity:?} does not exist (despawned or never spawned)")
            }
            Self::WrongWorld { entity, world } => write!(
                f,
                "entity {entity:?} belongs to the world tagged {}, not to this one (tagged \
                 {world}); an Entity is only valid in the world that made it",
                entity.world_tag()
            ),
            Self::MissingComponent { entity, component } => {
                write!(f, "entity {entity:?} has no component `{component}`")
            }
            Self::AlreadySpawned(entity) => {
                write!(
                    f,
                    "entity {entity:?} already has components; spawn_at needs a reserved, empty entity"
                )
            }
            Self::ImmutableComponent { entity, component } => write!(
                f,
                "cannot change `{component}` of entity {entity:?} in place: the component is \
                 immutable (its values are replaced by insert, so that its hooks see every \
                 change); insert a new value instead"
            ),
            Self::UnknownComponent { entity, component } => write!(
                f,
                "no component has id {} in this world (asked about entity {entity:?}); component \
                 ids are per world: take them from this world's `components()` or registration",
                component.index()
            ),
            Self::IndexSpaceExhausted { slots } => write!(
                f,
                "the spawn was refused: every one of the world's {slots} entity slots is live or \
                 retired; despawn entities to free slots"
            ),
        }
    }
}

impl EntityError {
    /// The error for `entity` not being alive in the world tagged `world`: [`WrongWorld`] when
    /// another world made it, else [`NoSuchEntity`]. Inline and call-free, so that lookup
    /// loops keep their values in registers (see `world::missing`).
    ///
    /// [`WrongWorld`]: Self::WrongWorld
    /// [`NoSuchEntity`]: Self::NoSuchEntity
    #[inline(always)]
    pub(crate) fn not_found(entity: Entity, world: u8) -> Self {
        if entity.world_tag() == world {
            Self::NoSuchEntity(entity)
        } else {
            Self::WrongWorld { entity, world }
        }
    }
}

impl std::error::Error for EntityError {}
