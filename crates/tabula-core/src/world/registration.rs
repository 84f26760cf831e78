//! [`ComponentRegistration`]: what a world knows about a component type beyond its layout —
//! its [hooks](super::hooks) and whether it is immutable.

use std::marker::PhantomData;
use std::sync::Arc;

use super::World;
use super::hooks::{HookContext, HookKind, HookWorld};
use crate::component::{Component, ComponentId};

/// Registers component `T` in a world and adds to what the world knows about it; from
/// [`World::register_component`]. Every method returns the builder, so calls chain.
///
/// ```
/// use tabula::{HookContext, HookWorld, World};
///
/// struct Enemy;
/// #[derive(Default)]
/// struct Roster(Vec<tabula::Entity>);
///
/// let mut world = World::new();
/// world.init_resource::<Roster>();
/// world
///     .register_component::<Enemy>()
///     .on_add(|world: &mut HookWorld, ctx: HookContext| {
///         world.resource_mut::<Roster>().unwrap().0.push(ctx.entity);
///     })
///     .on_remove(|world: &mut HookWorld, ctx: HookContext| {
///         world.resource_mut::<Roster>().unwrap().0.retain(|&e| e != ctx.entity);
///     });
/// let a = world.spawn((Enemy,));
/// let b = world.spawn((Enemy,));
/// world.despawn(a)?;
/// assert_eq!(world.resource::<Roster>().unwrap().0, [b]);
/// # Ok::<(), tabula::EntityError>(())
/// ```
pub struct ComponentRegistration<'w, T: Component> {
    world: &'w mut World,
    id: ComponentId,
    _component: PhantomData<fn() -> T>,
}

impl World {
    /// Registers component `T` (if it is not yet) and returns a builder to give it hooks or
    /// make it immutable. Registering is never required to use a component; it only adds
    /// behaviour.
    pub fn register_component<T: Component>(&mut self) -> ComponentRegistration<'_, T> {
        let id = self.component_id_or_register::<T>();
        ComponentRegistration {
            world: self,
            id,
            _component: PhantomData,
        }
    }
}

impl<T: Component> ComponentRegistration<'_, T> {
    /// The component's id in this world.
    pub fn id(&self) -> ComponentId {
        self.id
    }

    /// Adds a hook of `kind`, after the component's others of that kind.
    pub fn hook(
        self,
        kind: HookKind,
        hook: impl Fn(&mut HookWorld<'_>, HookContext) + Send + Sync + 'static,
    ) -> Self {
        self.world.add_hook(self.id, kind, Arc::new(hook));
        self
    }

    /// Adds an `on_add` hook: the entity gained `T` (see [`HookKind::Add`]).
    pub fn on_add(self, hook: impl Fn(&mut HookWorld<'_>, HookContext) + Send + Sync + 'static) -> Self {
        self.hook(HookKind::Add, hook)
    }

    /// Adds an `on_insert` hook: a `T` was written, new or replacing (see [`HookKind::Insert`]).
    pub fn on_insert(self, hook: impl Fn(&mut HookWorld<'_>, HookContext) + Send + Sync + 'static) -> Self {
        self.hook(HookKind::Insert, hook)
    }

    /// Adds an `on_replace` hook: the entity's `T` is about to be replaced, removed or
    /// despawned (see [`HookKind::Replace`]).
    pub fn on_replace(self, hook: impl Fn(&mut HookWorld<'_>, HookContext) + Send + Sync + 'static) -> Self {
        self.hook(HookKind::Replace, hook)
    }

    /// Adds an `on_remove` hook: the entity is about to lose `T` (see [`HookKind::Remove`]).
    pub fn on_remove(self, hook: impl Fn(&mut HookWorld<'_>, HookContext) + Send + Sync + 'static) -> Self {
        self.hook(HookKind::Remove, hook)
    }

    /// Adds an `on_despawn` hook: the entity, holding `T`, is about to be despawned (see
    /// [`HookKind::Despawn`]).
    pub fn on_despawn(self, hook: impl Fn(&mut HookWorld<'_>, HookContext) + Send + Sync + 'static) -> Self {
        self.hook(HookKind::Despawn, hook)
    }

    /// Makes `T` immutable in this world: a value can be replaced by an insert (which runs
    /// the `on_replace` and `on_insert` hooks, so they see every change), never changed in
    /// place. `get_mut` returns [`EntityError::ImmutableComponent`](crate::EntityError),
    /// and a `&mut T` or `Mut<T>` query term or a `view_mut` of it panics when built.
    ///
    /// ```
    /// use tabula::{EntityError, World};
    ///
    /// #[derive(Debug, PartialEq)]
    /// struct Team(u8);
    ///
    /// let mut world = World::new();
    /// world.register_component::<Team>().immutable();
    /// let e = world.spawn((Team(1),));
    /// assert!(matches!(world.get_mut::<Team>(e), Err(EntityError::ImmutableComponent { .. })));
    /// world.insert(e, (Team(2),))?; // replacing is fine
    /// assert_eq!(world.get::<Team>(e), Ok(&Team(2)));
    /// # Ok::<(), EntityError>(())
    /// ```
    ///
    /// # Panics
    /// When an entity of the world already holds a `T` (or did: an archetype with `T`
    /// exists): values changed in place before would have escaped the rule. Register first.
    #[track_caller]
    pub fn immutable(self) -> Self {
        let held = self
            .world
            .archetypes()
            .any(|a| a.component_ids().contains(&self.id));
        if held {
            panic!(
                "component `{}` was made immutable after entities of this world held it; call \
                 `register_component::<{}>().immutable()` before the first spawn or insert of it",
                std::any::type_name::<T>(),
                crate::short_type_name(std::any::type_name::<T>())
            );
        }
        self.world.components.set_immutable(self.id);
        self
    }
}
