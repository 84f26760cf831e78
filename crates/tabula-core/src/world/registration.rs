//! [`ComponentRegistration`]: what a world knows about a component type beyond its layout —
//! its [hooks](crate::HookKind), whether it is immutable, and the components it requires.
//!
//! **Required components.** `register_component::<A>().requires::<B>()` makes every entity
//! that gains an `A` gain a `B` too, when it has none: an `on_add` hook of `A` records the
//! insert of `B` (made by `B::default()` or the given constructor, called then), so it
//! happens on every path a hook runs from (spawns, inserts, batches, commands) and before
//! the `World` call returns. Requirements chain: `B`'s own requirements follow when `B` is
//! added. What this costs and does not give: `B` arrives by a second archetype move, after
//! the call's hooks ran, so an `on_add` hook of `A` does not see `B` yet. A cycle
//! (`A` requires `B` requires `A`) and a repeated requirement are refused with a
//! [`RequiredComponentError`] naming the chain.

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

    /// Makes every entity that gains a `T` gain a `B` too, made by `B::default()`, when it
    /// has none: an `on_add` hook of `T` records the insert of `B` (made then), so it happens
    /// on every path a hook runs from (spawns, inserts, batches, commands) and before the
    /// `World` call returns. Requirements chain: `B`'s own requirements follow when `B` is
    /// added. `B` arrives by a second archetype move, after the call's hooks ran, so an
    /// `on_add` hook of `T` does not see `B` yet.
    ///
    /// ```
    /// use tabula::World;
    ///
    /// #[derive(Default, Debug, PartialEq)]
    /// struct Health(u32);
    /// #[derive(Default, Debug, PartialEq)]
    /// struct Armor(u32);
    /// struct Enemy;
    ///
    /// let mut world = World::new();
    /// world.register_component::<Enemy>().requires::<Health>();
    /// world.register_component::<Health>().requires::<Armor>(); // chains
    /// let e = world.spawn((Enemy,));
    /// assert_eq!(world.get::<Health>(e), Ok(&Health(0)));
    /// assert_eq!(world.get::<Armor>(e), Ok(&Armor(0)));
    /// let boss = world.spawn((Enemy, Health(500))); // a given value is kept
    /// assert_eq!(world.get::<Health>(boss), Ok(&Health(500)));
    /// ```
    ///
    /// # Panics
    /// When the requirement closes a cycle or repeats one (see
    /// [`try_requires_with`](Self::try_requires_with) for the error as a value).
    #[track_caller]
    pub fn requires<B: Component + Default>(self) -> Self {
        self.requires_with(B::default)
    }

    /// As [`requires`](Self::requires), with `B` made by `make`.
    ///
    /// # Panics
    /// As for [`requires`](Self::requires).
    #[track_caller]
    pub fn requires_with<B: Component>(self, make: impl Fn() -> B + Send + Sync + 'static) -> Self {
        match self.try_requires_with(make) {
            Ok(this) => this,
            Err(error) => panic!("{error}"),
        }
    }

    /// As [`requires_with`](Self::requires_with), returning a refused requirement as an
    /// error; the world is then unchanged.
    ///
    /// ```
    /// use tabula::{RequiredComponentError, World};
    ///
    /// #[derive(Default)]
    /// struct A;
    /// #[derive(Default)]
    /// struct B;
    ///
    /// let mut world = World::new();
    /// world.register_component::<A>().requires::<B>();
    /// let error = world.register_component::<B>().try_requires_with(|| A).err().unwrap();
    /// assert!(matches!(error, RequiredComponentError::Cycle { .. }));
    /// assert!(error.to_string().contains("B -> A -> B"), "{error}");
    /// ```
    pub fn try_requires_with<B: Component>(
        self,
        make: impl Fn() -> B + Send + Sync + 'static,
    ) -> Result<Self, RequiredComponentError> {
        let required = self.world.component_id_or_register::<B>();
        self.world.add_requirement(self.id, required)?;
        let make = Arc::new(make);
        Ok(self.on_add(move |world: &mut HookWorld<'_>, ctx: HookContext| {
            if world.has::<B>(ctx.entity) {
                return;
            }
            let (make, entity) = (Arc::clone(&make), ctx.entity);
            world.queue().push(move |world: &mut World| {
                // Checked again: another hook of the call may have added one meanwhile.
                if world.contains(entity) && !world.has::<B>(entity) {
                    let _ = world.insert(entity, (make(),));
                }
            });
        }))
    }

    /// Stores `T` in a sparse set instead of the archetype tables: adding or removing a `T`
    /// never moves the entity's row to another archetype, which makes toggling it several
    /// times cheaper; reading it costs a lookup by entity instead of a walk along a column.
    /// Pick it for markers and states that come and go often (`Stunned`, `Selected`,
    /// `OnFire`) and for components few entities have; keep the default (tables) for data
    /// that systems iterate every frame. See the guide's "Choosing a storage".
    ///
    /// Everything else works as for a table component: `get`/`get_mut`/`has`, inserts and
    /// removals (alone or in bundles with table components), spawns, despawns, hooks and
    /// observers, required components, removal logs ([`World::removed`](crate::World::removed)), and
    /// change ticks.
    ///
    /// ```
    /// use tabula::World;
    ///
    /// struct Position(f32);
    /// struct Stunned;
    ///
    /// let mut world = World::new();
    /// world.register_component::<Stunned>().sparse_set();
    /// let e = world.spawn((Position(0.0),));
    /// let before = world.archetypes().len();
    /// world.insert(e, (Stunned,))?;
    /// assert!(world.has::<Stunned>(e));
    /// world.remove_one::<Stunned>(e)?;
    /// assert_eq!(world.archetypes().len(), before, "no archetype was made for `Stunned`");
    /// # Ok::<(), tabula::EntityError>(())
    /// ```
    ///
    /// # Panics
    /// When `T` is already stored in an archetype table, or a bundle the world has seen
    /// lists it: choose the storage right after creating the world, before the component is
    /// first stored.
    #[track_caller]
    pub fn sparse_set(self) -> Self {
        self.world.make_sparse(self.id);
        self
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
    /// exists; for a [sparse](Self::sparse_set) `T`, when its set holds a value): values
    /// changed in place before would have escaped the rule. Register first.
    #[track_caller]
    pub fn immutable(self) -> Self {
        let in_table = (self.world.archetypes()).any(|a| a.component_ids().contains(&self.id));
        // A sparse `T` is in no archetype: its set says whether an entity holds one.
        let in_set = (self.world.sparse.get(self.id)).is_some_and(|set| !set.entities().is_empty());
        let held = in_table || in_set;
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

/// Why [`ComponentRegistration::try_requires_with`] refused a requirement. The world is
/// unchanged.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RequiredComponentError {
    /// The requirement would close a cycle: `chain` runs from the component that was to
    /// require, through the requirements already registered, back to it.
    Cycle {
        /// Type names, the first repeated at the end.
        chain: Vec<&'static str>,
    },
    /// The component already requires that one.
    AlreadyRequired {
        /// The requiring component's type name.
        component: &'static str,
        /// The required component's type name.
        required: &'static str,
    },
}

impl std::fmt::Display for RequiredComponentError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Cycle { chain } => {
                let chain: Vec<String> = chain.iter().map(|n| crate::short_type_name(n)).collect();
                write!(
                    f,
                    "required components would form a cycle: {} (each requires the next); drop one \
                     of these requirements",
                    chain.join(" -> ")
                )
            }
            Self::AlreadyRequired { component, required } => write!(
                f,
                "`{}` already requires `{}`; register each requirement once",
                crate::short_type_name(component),
                crate::short_type_name(required)
            ),
        }
    }
}

impl std::error::Error for RequiredComponentError {}

impl World {
    /// Records that `component` requires `required`, refusing a repeat or a cycle.
    fn add_requirement(
        &mut self,
        component: ComponentId,
        required: ComponentId,
    ) -> Result<(), RequiredComponentError> {
        let name = |world: &World, id: ComponentId| world.components.info(id).name();
        if self.hooks.requirements(component).contains(&required) {
            return Err(RequiredComponentError::AlreadyRequired {
                component: name(self, component),
                required: name(self, required),
            });
        }
        // A path from `required` back to `component` through registered requirements,
        // found depth first (requirements in registration order), closes a cycle.
        if let Some(path) = self.requirement_path(required, component) {
            let mut chain = vec![name(self, component)];
            chain.extend(path.into_iter().map(|id| name(self, id)));
            return Err(RequiredComponentError::Cycle { chain });
        }
        self.hooks.add_requirement(component, required);
        Ok(())
    }

    /// The components from `from` to `to` (both included) along registered requirements, if
    /// `to` can be reached.
    fn requirement_path(&self, from: ComponentId, to: ComponentId) -> Option<Vec<ComponentId>> {
        let mut stack = vec![(from, vec![from])];
        let mut seen = std::collections::HashSet::new();
        while let Some((at, path)) = stack.pop() {
            if at == to {
                return Some(path);
            }
            if !seen.insert(at) {
                continue;
            }
            for &next in self.hooks.requirements(at).iter().rev() {
                let mut path = path.clone();
                path.push(next);
                stack.push((next, path));
            }
        }
        None
    }
}
