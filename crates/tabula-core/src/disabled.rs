//! Entity disabling: the [`Disabled`] marker, which queries skip unless they name it.
//!
//! ## How queries skip disabled entities
//!
//! The world keeps a short list of *disabling components*: [`Disabled`], and any registered
//! with [`World::register_disabling_component`] (at most 64). Each archetype carries a bit
//! mask of the disabling components it stores, computed when it is created. When a
//! [`QueryState`](crate::QueryState) is built, it records the disabling components its
//! [`Access`] does not [name](crate::Access::names) — a component is named by
//! any term that mentions it: `&T`, `&mut T`, `Option<&T>`, [`Has<T>`](crate::Has),
//! `With<T>`, `Without<T>`, `Added<T>`, `Changed<T>`, [`Allow<T>`](crate::Allow), also
//! inside `Or` (as in bevy, where any term that names the component lifts the default
//! filter). Matching an archetype then starts with one test of that mask against the
//! archetype's: an archetype that stores a disabling component the query does not name is
//! not matched. So the default filter costs nothing per row, nor per iteration — only one
//! `AND` per archetype per query when the archetype is first seen.
//!
//! Every query form goes through that match: `World::query` and
//! [`QueryState`](crate::QueryState) (`iter`, `for_each`, `for_each_chunk`, `par_for_each`,
//! `get`, `single`, `count`, `contains`), the system parameter `Query` and everything it
//! offers (`iter_many`, `iter_combinations`, the read-only conversions), `SystemState`, and
//! change filters. Disabling an entity (inserting `Disabled`) moves it to an archetype that
//! queries built earlier do not match, so they stop seeing it at once; removing `Disabled`
//! moves it back.
//!
//! What does not skip disabled entities is access by id and everything structural:
//! [`World::get`], [`World::entity`], [`World::view`] and [`World::multi_view`] (a view is
//! a lookup by id, like `get`: it is handed the entity, so it finds it), despawn and
//! recursive despawn, hooks, observers, relationships and hierarchy upkeep. The scheduler's
//! access checks are unaffected: `Disabled` is a plain component.
//!
//! A disabling component registered after a query was built is not skipped by that query
//! (it keeps its matches; build the query again); the list is meant to be set up with the
//! world, before systems are added.

use crate::component::{Component, ComponentId};
use crate::query::Access;
use crate::world::World;

/// Marks an entity disabled: queries skip it unless they name `Disabled` (with
/// [`Allow<Disabled>`](crate::Allow), `With<Disabled>`, `Has<Disabled>`,
/// `Option<&Disabled>`, ...). For object pools, editors and paused objects.
///
/// The entity is still there for everything but queries: [`World::get`] and
/// [`World::entity`] by id, views, despawn (recursive too), hooks, observers and
/// relationships all see it. See [the module docs](crate::disabled) for how the skip is
/// decided when a query matches an archetype, at no cost per row.
///
/// ```
/// use tabula::prelude::*;
///
/// struct Bullet(f32);
///
/// let mut world = World::new();
/// let live = world.spawn((Bullet(1.0),));
/// let pooled = world.spawn((Bullet(2.0), Disabled));
/// let mut bullets = world.query::<(Entity, &Bullet)>();
/// assert_eq!(bullets.iter(&world).map(|(e, _)| e).collect::<Vec<_>>(), [live]);
///
/// // Back from the pool: the same query sees it now.
/// world.remove::<(Disabled,)>(pooled)?;
/// assert_eq!(bullets.iter(&world).count(), 2);
///
/// // Access by id sees disabled entities.
/// world.insert(pooled, (Disabled,))?;
/// assert_eq!(world.get::<Bullet>(pooled)?.0, 2.0);
/// // So does a query that asks for them.
/// let mut pool = world.query_filtered::<Entity, With<Disabled>>();
/// assert_eq!(pool.iter(&world).collect::<Vec<_>>(), [pooled]);
/// # Ok::<(), EntityError>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Disabled;

impl World {
    /// Makes `T` a disabling component, like [`Disabled`]: queries built from now on skip
    /// entities that have a `T` unless they name `T`. Returns `T`'s id. Registering a
    /// component twice changes nothing.
    ///
    /// Queries built before keep seeing entities with `T`: register disabling components
    /// when setting the world up, before systems are added.
    ///
    /// ```
    /// use tabula::prelude::*;
    ///
    /// struct Prefab;
    ///
    /// let mut world = World::new();
    /// world.register_disabling_component::<Prefab>();
    /// world.spawn((1u32, Prefab));
    /// world.spawn((2u32,));
    /// assert_eq!(world.query::<&u32>().iter(&world).copied().collect::<Vec<_>>(), [2]);
    /// assert_eq!(world.query_filtered::<&u32, Allow<Prefab>>().iter(&world).count(), 2);
    /// ```
    ///
    /// # Panics
    /// When 64 components are disabling already, or when `T` is stored in a
    /// [sparse set](crate::ComponentRegistration::sparse_set).
    pub fn register_disabling_component<T: Component>(&mut self) -> ComponentId {
        self.ensure_disabled();
        let id = self.component_id_or_register::<T>();
        self.add_disabling(id);
        id
    }

    /// Registers [`Disabled`] as the first disabling component, if it is not yet.
    fn ensure_disabled(&mut self) {
        let id = self.component_id_or_register::<Disabled>();
        self.add_disabling(id);
    }

    /// Makes `id` disabling, unless it is stored in a sparse set: queries skip disabled
    /// entities by archetype, and a sparse component is in none.
    fn add_disabling(&mut self, id: ComponentId) {
        let info = self.components().info(id);
        assert!(
            !info.is_sparse(),
            "component `{}` is stored in a sparse set and cannot disable entities: queries skip \
             disabled entities by archetype, and a sparse component is in none. Keep a disabling \
             component in the archetype tables (the default storage)",
            info.name()
        );
        self.archetypes_mut().add_disabling(id);
    }

    /// The disabling components a query with `access` skips: the mask bits of those it does
    /// not name.
    pub(crate) fn default_query_skip(&mut self, access: &Access) -> u64 {
        self.ensure_disabled();
        (self.archetypes_mut().disabling.iter().enumerate())
            .filter(|&(_, &id)| !access.names(id))
            .fold(0, |mask, (bit, _)| mask | 1 << bit)
    }
}
