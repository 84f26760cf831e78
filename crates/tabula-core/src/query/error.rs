//! Errors of the query layer, naming the entity, the query and the component involved.

use std::fmt;

use crate::entity::Entity;
use crate::type_name::short_type_name;

/// Why a query could not produce what was asked of it.
///
/// The `query` fields hold the full [`type_name`](std::any::type_name) of the query's data
/// and filter; the message shows it with each path cut to its last segment (see
/// [`short_type_name`](crate::short_type_name)), so `query` `(&mut my_game::Position,
/// tabula_core::query::filter::With<my_game::Player>)` reads `(&mut Position, With<Player>)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueryError {
    /// The entity does not exist.
    NoSuchEntity(Entity),
    /// The entity was made by another world (see [`EntityError::WrongWorld`](crate::EntityError::WrongWorld)).
    WrongWorld {
        /// The entity.
        entity: Entity,
        /// The tag of the world the query ran on.
        world: u8,
    },
    /// The entity exists but the query does not match it (missing component or filtered out).
    NoMatch {
        /// The entity.
        entity: Entity,
        /// The full type name of the query's data and filter, e.g.
        /// `(&mut my_game::Position, tabula_core::query::filter::With<my_game::Player>)`.
        query: &'static str,
    },
    /// `get_many_mut` was given the same entity twice.
    AliasedMutability(Entity),
    /// `single` found no entity.
    NoEntities {
        /// The full type name of the query's data and filter.
        query: &'static str,
    },
    /// `single` found more than one entity.
    MultipleEntities {
        /// The full type name of the query's data and filter.
        query: &'static str,
    },
}

impl fmt::Display for QueryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NoSuchEntity(e) => {
                write!(f, "entity {e:?} does not exist (despawned or never spawned)")
            }
            Self::WrongWorld { entity, world } => fmt::Display::fmt(
                &crate::EntityError::WrongWorld {
                    entity: *entity,
                    world: *world,
                },
                f,
            ),
            Self::NoMatch { entity, query } => {
                let query = short_type_name(query);
                write!(f, "query `{query}` does not match entity {entity:?}")
            }
            Self::AliasedMutability(e) => {
                write!(
                    f,
                    "entity {e:?} was requested twice from `get_many_mut`; mutable items must be \
                     distinct, so list each entity once"
                )
            }
            Self::NoEntities { query } => {
                let query = short_type_name(query);
                write!(f, "query `{query}` matched no entity; `single` needs exactly one")
            }
            Self::MultipleEntities { query } => {
                let query = short_type_name(query);
                write!(
                    f,
                    "query `{query}` matched more than one entity; `single` needs exactly one"
                )
            }
        }
    }
}

impl std::error::Error for QueryError {}

/// A query that would alias its own data, e.g. `(&mut A, &A)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AccessConflict {
    /// The query's type.
    pub query: &'static str,
    /// The component accessed twice.
    pub component: &'static str,
}

impl fmt::Display for AccessConflict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let component = short_type_name(self.component);
        write!(
            f,
            "query `{}` accesses component `{component}` mutably together with another access \
             to it; fetch it once (as `&mut {component}` if it must be written)",
            short_type_name(self.query)
        )
    }
}

impl std::error::Error for AccessConflict {}
