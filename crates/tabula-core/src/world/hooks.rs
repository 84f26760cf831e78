//! Component hooks: the one mechanism through which data spanning several entities stays
//! consistent as entities lose components. The hierarchy (`Parent` / `Children`) is its one
//! user; a public hooks API is meant to build on it.
//!
//! **Remove hooks.** A component type may have one remove hook
//! ([`World::set_remove_hook`]). When an entity is about to lose that component — through
//! `remove` of any bundle holding it, `remove_batch`, or `despawn` — the world calls the hook
//! with itself, read-only (the entity still has the component), and a queue. The hook reads
//! what it needs and records the changes it wants as commands; the world applies them right
//! after the removal, before the operation returns. A hook therefore never sees a half-moved
//! row, and every hook of a batch sees the world as it was before the batch, so one entity's
//! hook cannot take a component another entity of the batch was checked to have.
//!
//! What it costs where no hook is involved: nothing new. The registry marks hooked component
//! types, each archetype holding one ([`Archetype::hooked`](crate::Archetype)) and each remove
//! edge whose bundle holds one (`RemoveEdge::hooked`, folded into the `unusual` flag the
//! removal already tests), so despawns test a flag in place of the hierarchy's two type
//! lookups, and other removals test nothing more than before.
//!
//! The `*_raw` structural methods (`insert_raw`, `remove_raw`, `get_mut_raw`) skip hooks and
//! guards: a hook's owner changes its own components with them, without re-entering itself.
//!
//! **Managed components.** Some component types change only through their owner's API, which
//! keeps them in step with other entities ([`managed`]): generic writes — `spawn`, `insert`,
//! `get_mut`, `view_mut`, `&mut T` query terms — are refused with an error or a panic naming
//! the owner's methods. The list is known at compile time, so the test folds to nothing for
//! every other type; today it holds the hierarchy's two types.

use std::any::TypeId;

use super::World;
use crate::bundle::Bundle;
use crate::command::CommandQueue;
use crate::component::{Component, ComponentId};
use crate::entity::Entity;
use crate::hierarchy::{Children, Parent};
use crate::location::EntityLocation;

/// What an entity is about to lose, for [`World::call_remove_hooks`].
#[derive(Clone, Copy)]
pub(crate) enum Losing {
    /// The bundle that remove edge `edge` takes away.
    Bundle {
        /// An index into the world's remove edges.
        edge: usize,
    },
    /// Every component: the entity, at `location`, is despawned.
    Everything {
        /// The entity's live location.
        location: EntityLocation,
    },
}

/// A remove hook: called with the world (the entity still holding the component) and a
/// queue for the changes the hook wants made once the component is gone.
pub(crate) type RemoveHook = fn(&World, Entity, &mut CommandQueue);

/// The world's hooks, by component, and the commands they recorded.
#[derive(Default)]
pub(crate) struct Hooks {
    /// `on_remove[c]` is component `c`'s remove hook, if it has one.
    on_remove: Vec<Option<RemoveHook>>,
    /// Commands recorded by the hooks of the operation under way; empty between operations.
    deferred: CommandQueue,
}

impl World {
    /// Gives component `T` a remove hook (see the [module docs](self)); it replaces an
    /// earlier one. Archetypes and remove edges that hold `T` are marked, so every removal
    /// path calls it from now on.
    pub(crate) fn set_remove_hook<T: Component>(&mut self, hook: RemoveHook) {
        let id = self.components.register::<T>();
        let slots = &mut self.hooks.on_remove;
        if slots.len() <= id.index() {
            slots.resize(id.index() + 1, None);
        }
        slots[id.index()] = Some(hook);
        self.components.set_has_remove_hook(id);
        self.archetypes
            .component_flags_changed(&self.components, &self.bundles, id);
    }

    /// Calls the remove hooks of the components `entity` is about to lose, which it still
    /// holds: those of `losing`. Their commands wait for
    /// [`apply_hook_commands`](Self::apply_hook_commands).
    #[cold]
    #[inline(never)]
    pub(crate) fn call_remove_hooks(&mut self, entity: Entity, losing: Losing) {
        let mut deferred = std::mem::take(&mut self.hooks.deferred);
        // Hooks read the world only, so the component list can stay borrowed from it.
        let world = &*self;
        let call = |component: ComponentId, deferred: &mut CommandQueue| {
            if let Some(&Some(hook)) = world.hooks.on_remove.get(component.index()) {
                hook(world, entity, deferred);
            }
        };
        match losing {
            Losing::Bundle { edge } => {
                for &component in world.archetypes.remove_edges[edge].hooked.iter() {
                    call(component, &mut deferred);
                }
            }
            Losing::Everything { location } => {
                for &component in world.archetype_at(location).component_ids() {
                    call(component, &mut deferred);
                }
            }
        }
        self.hooks.deferred = deferred;
    }

    /// Applies the commands the hooks recorded, in order, until none is left (an applied
    /// command may call hooks in turn).
    #[cold]
    #[inline(never)]
    pub(crate) fn apply_hook_commands(&mut self) {
        while !self.hooks.deferred.is_empty() {
            let mut deferred = std::mem::take(&mut self.hooks.deferred);
            // Hook commands are closures, which cannot fail.
            let errors = deferred.apply(self);
            debug_assert!(errors.is_empty(), "a hook command failed: {errors:?}");
            if self.hooks.deferred.is_empty() {
                // Keep the buffer for the next operation.
                self.hooks.deferred = deferred;
            }
        }
    }
}

/// The name of `T` when it is a managed component (see the [module docs](self)). A constant
/// once inlined.
#[inline(always)]
pub(crate) fn managed<T: 'static>() -> Option<&'static str> {
    if TypeId::of::<T>() == TypeId::of::<Parent>() {
        Some("Parent")
    } else if TypeId::of::<T>() == TypeId::of::<Children>() {
        Some("Children")
    } else {
        None
    }
}

/// The first managed component of bundle `B`, if any. A constant once inlined.
#[inline(always)]
pub(crate) fn managed_in<B: Bundle>() -> Option<&'static str> {
    if B::has_type(TypeId::of::<Parent>()) {
        Some("Parent")
    } else if B::has_type(TypeId::of::<Children>()) {
        Some("Children")
    } else {
        None
    }
}

/// Panics for `what` (e.g. "a query term") asking to write managed `component`.
#[cold]
#[track_caller]
pub(crate) fn write_refused(component: &str, what: &str) -> ! {
    panic!(
        "{what} asks to write `{component}`, which changes only through World::set_parent, \
         remove_parent and despawn_recursive (or the matching commands), so that Parent and \
         Children stay in step; read it with `&{component}` instead"
    )
}

/// Panics for a spawn of bundle `B`, which holds a managed component.
#[cold]
#[track_caller]
pub(crate) fn spawn_refused<B: Bundle>() -> ! {
    panic!(
        "cannot spawn bundle `{}`: it holds a Parent or Children, which change only through \
         World::set_parent and the other hierarchy methods; spawn the entity without it, then \
         call set_parent",
        std::any::type_name::<B>()
    )
}

#[cfg(test)]
mod tests {
    use std::panic::{AssertUnwindSafe, catch_unwind};

    use super::*;
    use crate::hierarchy::Children;

    /// A component whose remove hook records (entity, value) in a `Heard` resource, through a
    /// command, so the record shows when the commands ran as well as what the hook saw.
    #[derive(Debug, PartialEq)]
    struct Watched(u32);

    #[derive(Default)]
    struct Heard(Vec<(Entity, u32, bool)>);

    fn watched_removed(world: &World, entity: Entity, deferred: &mut CommandQueue) {
        let value = world.get::<Watched>(entity).expect("the entity still holds it").0;
        deferred.push(move |world: &mut World| {
            let gone = !world.has::<Watched>(entity);
            world
                .resource_mut::<Heard>()
                .unwrap()
                .0
                .push((entity, value, gone));
        });
    }

    fn world() -> World {
        let mut world = World::new();
        world.init_resource::<Heard>();
        world.set_remove_hook::<Watched>(watched_removed);
        world
    }

    fn heard(world: &mut World) -> Vec<(Entity, u32, bool)> {
        std::mem::take(&mut world.resource_mut::<Heard>().unwrap().0)
    }

    #[test]
    fn remove_and_despawn_call_the_hook_with_the_value_before_it_goes() {
        let mut world = world();
        let a = world.spawn((Watched(1), 5u8));
        let b = world.spawn((Watched(2),));
        assert_eq!(world.remove::<(Watched, u8)>(a), Ok((Watched(1), 5)));
        world.despawn(b).unwrap();
        // The commands ran after the removal (the component was gone), and for the despawn
        // before the entity was (it is a despawn of a live entity: `has` reads false).
        assert_eq!(heard(&mut world), [(a, 1, true), (b, 2, false)]);
        // Removing other components, or a failed removal, calls nothing.
        let c = world.spawn((Watched(3), 1u16));
        world.remove::<(u16,)>(c).unwrap();
        assert!(world.remove::<(Watched, u64)>(c).is_err());
        assert!(heard(&mut world).is_empty());
        // The raw path, for the hook's owner, skips it.
        world.remove_raw::<(Watched,)>(c).unwrap();
        assert!(heard(&mut world).is_empty());
    }

    #[test]
    fn a_batch_calls_every_hook_before_the_first_removal() {
        let mut world = world();
        let ids: Vec<Entity> = (0..4).map(|i| world.spawn((Watched(i),))).collect();
        let removed = world.remove_batch::<(Watched,)>(&ids).unwrap();
        assert_eq!(removed.len(), 4);
        let expected: Vec<_> = ids.iter().zip(0..).map(|(&e, i)| (e, i, true)).collect();
        assert_eq!(heard(&mut world), expected);
    }

    #[test]
    fn a_hook_set_late_reaches_existing_archetypes_and_edges() {
        let mut world = World::new();
        world.init_resource::<Heard>();
        let e = world.spawn((Watched(7), 1u8));
        // Cache the remove edge and the archetype before the hook exists.
        world.remove::<(u8,)>(e).unwrap();
        world.insert(e, (1u8,)).unwrap();
        world.set_remove_hook::<Watched>(watched_removed);
        world.remove::<(Watched,)>(e).unwrap();
        let f = world.spawn((Watched(8), 1u8));
        world.despawn(f).unwrap();
        assert_eq!(heard(&mut world), [(e, 7, true), (f, 8, false)]);
    }

    #[test]
    fn despawn_applies_hook_commands_before_a_panicking_drop() {
        struct Bomb;
        impl Drop for Bomb {
            fn drop(&mut self) {
                panic!("bomb");
            }
        }
        let mut world = world();
        let e = world.spawn((Watched(9), Bomb));
        let result = catch_unwind(AssertUnwindSafe(|| world.despawn(e)));
        assert!(result.is_err(), "the drop panicked");
        assert!(!world.contains(e));
        assert_eq!(heard(&mut world), [(e, 9, false)]);
    }

    #[test]
    fn managed_components_fold_to_their_names() {
        assert_eq!(managed::<Children>(), Some("Children"));
        assert_eq!(managed::<Watched>(), None);
        assert_eq!(managed_in::<(u8, Parent)>(), Some("Parent"));
        assert_eq!(managed_in::<(u8, u16)>(), None);
    }
}
