//! One-to-many relationships: a [`Relationship`] component on each source names its target,
//! and a [`RelationshipTarget`] component on the target lists its sources. Registered with
//! [`World::register_relationship`], component hooks keep the two sides in step on every
//! path: insert (or spawn with) the relationship to link, remove it to unlink, despawn either
//! side and the other follows. [`Parent`](crate::Parent) / [`Children`](crate::Children) are
//! one instance (the world registers it when it is made).
//!
//! Both components are [immutable](crate::ComponentRegistration::immutable): they change by
//! insert and remove, whose hooks update the other side. The hooks:
//!
//! * the relationship's `on_insert` lists the source in its target's collection (in place,
//!   or by a command inserting the collection when the target has none); a dead target, the
//!   source itself, or — for an [acyclic](Relationship::ACYCLIC) relationship — a link that
//!   would close a loop takes the relationship off again, with a `tracing` warning;
//! * the relationship's `on_replace` (replaced, removed or despawned) takes the source off
//!   its target's collection; an emptied collection is removed, so `With<Target>` means "has
//!   a source";
//! * the collection's `on_despawn`, for a [linked](RelationshipTarget::LINKED_SPAWN)
//!   relationship, despawns the sources (and so, through their own hooks, whatever they are
//!   linked to);
//! * the collection's `on_replace` (replaced, removed or despawned) takes the relationship off
//!   each source still naming the holder;
//! * the collection's `on_insert` (a list copied from another entity) links each listed entity
//!   to the holder, dropping those that cannot be linked.
//!
//! ```
//! use tabula::{Entity, Relationship, RelationshipTarget, World};
//!
//! /// A fighter docked in a carrier: despawning the carrier despawns its fighters.
//! #[derive(Clone, Copy)]
//! struct DockedIn(Entity);
//! #[derive(Default)]
//! struct Hangar(Vec<Entity>);
//!
//! impl Relationship for DockedIn {
//!     type Target = Hangar;
//!     fn target(&self) -> Entity {
//!         self.0
//!     }
//!     fn from_target(target: Entity) -> Self {
//!         DockedIn(target)
//!     }
//! }
//! impl RelationshipTarget for Hangar {
//!     type Relationship = DockedIn;
//!     const LINKED_SPAWN: bool = true;
//!     fn sources(&self) -> &[Entity] {
//!         &self.0
//!     }
//!     fn sources_mut(&mut self) -> &mut Vec<Entity> {
//!         &mut self.0
//!     }
//!     fn from_sources(sources: Vec<Entity>) -> Self {
//!         Hangar(sources)
//!     }
//! }
//!
//! let mut world = World::new();
//! world.register_relationship::<DockedIn>();
//! let carrier = world.spawn(());
//! let fighters: Vec<_> = (0..3).map(|_| world.spawn((DockedIn(carrier),))).collect();
//! assert_eq!(world.get::<Hangar>(carrier).unwrap().sources(), &fighters[..]);
//! world.despawn(carrier)?;
//! assert!(fighters.iter().all(|&f| !world.contains(f)));
//! # Ok::<(), tabula::EntityError>(())
//! ```

use std::any::TypeId;

use crate::component::Component;
use crate::entity::Entity;
use crate::world::{HookContext, HookWorld, World};

/// The component on a relationship's source, naming its target (see the
/// [module docs](self)). Register the relationship with
/// [`World::register_relationship`] before the first entity holds one.
pub trait Relationship: Component + Sized {
    /// The collection on the target.
    type Target: RelationshipTarget<Relationship = Self>;

    /// Whether a link that would make an entity its own ancestor along this relationship is
    /// refused (taken off again). The hierarchy's `Parent` is acyclic.
    const ACYCLIC: bool = false;

    /// The target.
    fn target(&self) -> Entity;

    /// The relationship naming `target`.
    fn from_target(target: Entity) -> Self;
}

/// The component on a relationship's target, listing its sources in the order they linked
/// (see the [module docs](self)).
pub trait RelationshipTarget: Component + Sized {
    /// The relationship whose sources this lists.
    type Relationship: Relationship<Target = Self>;

    /// What despawning the target does to its sources: `true` despawns them too (their own
    /// relationships then follow), `false` unlinks them.
    const LINKED_SPAWN: bool;

    /// The sources, in the order they linked.
    fn sources(&self) -> &[Entity];

    /// The sources, for the relationship's hooks; writing it elsewhere breaks the link
    /// between the two sides (the component is immutable, so only code with
    /// [`HookWorld`]'s owner access reaches it).
    fn sources_mut(&mut self) -> &mut Vec<Entity>;

    /// A collection listing `sources`.
    fn from_sources(sources: Vec<Entity>) -> Self;
}

impl World {
    /// Registers relationship `R` and its target collection: both immutable, with the hooks
    /// that keep them in step (see the [module docs](self)). Registering again does nothing.
    ///
    /// # Panics
    /// When an entity already holds either component (register first), as
    /// [`immutable`](crate::ComponentRegistration::immutable) does.
    #[track_caller]
    pub fn register_relationship<R: Relationship>(&mut self) {
        if !self.hooks.note_relationship(TypeId::of::<R>()) {
            return;
        }
        self.register_component::<R>()
            .immutable()
            .on_insert(relationship_inserted::<R>)
            .on_replace(relationship_replaced::<R>);
        let target = self
            .register_component::<R::Target>()
            .immutable()
            .on_insert(target_inserted::<R>)
            .on_replace(target_replaced::<R>);
        if R::Target::LINKED_SPAWN {
            target.on_despawn(target_despawned::<R>);
        }
    }

    /// The sources linked to `target` by relationship `R`, in the order they linked; empty
    /// when there are none (or `target` is dead).
    pub fn related_sources<R: Relationship>(&self, target: Entity) -> &[Entity] {
        self.get::<R::Target>(target)
            .map_or(&[], RelationshipTarget::sources)
    }

    /// True when `ancestor` is `entity` or reached from it along `R`.
    pub(crate) fn reaches_along<R: Relationship>(&self, entity: Entity, ancestor: Entity) -> bool {
        let mut current = entity;
        // An acyclic relationship ends at a root; the bound guards a bug, reported as a loop.
        for _ in 0..=self.len() {
            if current == ancestor {
                return true;
            }
            match self.get::<R>(current) {
                Ok(link) => current = link.target(),
                Err(_) => return false,
            }
        }
        true
    }

    /// Lists `source` in `target`'s collection (inserting one when there is none), if
    /// `source` still names `target` and is not listed yet.
    fn add_source<R: Relationship>(&mut self, target: Entity, source: Entity) {
        if !self.get::<R>(source).is_ok_and(|link| link.target() == target) {
            return;
        }
        match self.get_mut_raw::<R::Target>(target) {
            Ok(mut collection) => {
                if !collection.sources().contains(&source) {
                    collection.sources_mut().push(source);
                }
            }
            Err(_) => {
                // `target` is alive: `source` names it, and a despawned target unlinks (or
                // despawns) its sources. Its collection's hook finds `source` pointing at it.
                let _ = self.insert(target, (R::Target::from_sources(vec![source]),));
            }
        }
    }

    /// Takes `R` off each of `sources` that names `holder`.
    fn unlink_sources<R: Relationship>(&mut self, holder: Entity, sources: &[Entity]) {
        for &source in sources {
            if self.get::<R>(source).is_ok_and(|link| link.target() == holder) {
                let _ = self.remove::<(R,)>(source);
            }
        }
    }

    /// Links `source`, listed in `holder`'s collection, to `holder`; when it cannot be (dead,
    /// the holder itself, or a loop for an acyclic relationship), takes it off the list.
    fn adopt_source<R: Relationship>(&mut self, holder: Entity, source: Entity) {
        if !self
            .get::<R::Target>(holder)
            .is_ok_and(|c| c.sources().contains(&source))
        {
            return;
        }
        if self.get::<R>(source).is_ok_and(|link| link.target() == holder) {
            return;
        }
        let linkable = self.contains(source)
            && source != holder
            && !(R::ACYCLIC && self.reaches_along::<R>(holder, source));
        if linkable {
            let _ = self.insert(source, (R::from_target(holder),));
        } else {
            self.remove_source::<R>(holder, source);
        }
    }

    /// Takes `source` off `target`'s collection, removing the collection when it empties.
    pub(crate) fn remove_source<R: Relationship>(&mut self, target: Entity, source: Entity) {
        let Ok(mut collection) = self.get_mut_raw::<R::Target>(target) else {
            return;
        };
        // Searched through `sources`, so a list without `source` is not marked changed.
        let Some(index) = collection.sources().iter().position(|&s| s == source) else {
            return;
        };
        collection.sources_mut().remove(index);
        if collection.sources().is_empty() {
            let _ = self.remove::<(R::Target,)>(target);
        }
    }
}

/// The relationship's `on_insert`: the source joins its target's collection, unless the link
/// cannot be (see the module docs).
fn relationship_inserted<R: Relationship>(world: &mut HookWorld<'_>, ctx: HookContext) {
    let source = ctx.entity;
    let Ok(target) = world.get::<R>(source).map(R::target) else {
        return;
    };
    let refused = !world.contains(target)
        || target == source
        || (R::ACYCLIC && world.world().reaches_along::<R>(target, source));
    if refused {
        tracing::warn!(
            source = ?source,
            target = ?target,
            relationship = std::any::type_name::<R>(),
            "an inserted relationship names a dead entity, the entity itself, or would make a loop; \
             it is removed"
        );
        world.queue().push(move |world: &mut World| {
            if world.get::<R>(source).is_ok_and(|link| link.target() == target) {
                let _ = world.remove::<(R,)>(source);
            }
        });
        return;
    }
    if let Ok(mut collection) = world.get_mut_owned::<R::Target>(target) {
        if !collection.sources().contains(&source) {
            collection.sources_mut().push(source);
        }
        return;
    }
    // The target has no collection yet: one is inserted once the change is complete (the
    // command checks again, since other hooks of the same call may have made one).
    world
        .queue()
        .push(move |world: &mut World| world.add_source::<R>(target, source));
}

/// The relationship's `on_replace`: the source leaves its target's collection; an emptied
/// collection is removed.
fn relationship_replaced<R: Relationship>(world: &mut HookWorld<'_>, ctx: HookContext) {
    let source = ctx.entity;
    let Ok(target) = world.get::<R>(source).map(R::target) else {
        return;
    };
    let Ok(mut collection) = world.get_mut_owned::<R::Target>(target) else {
        return;
    };
    let Some(index) = collection.sources().iter().position(|&s| s == source) else {
        return;
    };
    collection.sources_mut().remove(index);
    if collection.sources().is_empty() {
        world.queue().push(move |world: &mut World| {
            if world
                .get::<R::Target>(target)
                .is_ok_and(|c| c.sources().is_empty())
            {
                let _ = world.remove::<(R::Target,)>(target);
            }
        });
    }
}

/// The collection's `on_insert`: every listed entity not yet linked to the holder is linked
/// (a list copied from elsewhere adopts them).
fn target_inserted<R: Relationship>(world: &mut HookWorld<'_>, ctx: HookContext) {
    let holder = ctx.entity;
    let Ok(collection) = world.get::<R::Target>(holder) else {
        return;
    };
    let strangers: Vec<Entity> = (collection.sources().iter().copied())
        .filter(|&s| world.get::<R>(s).map_or(true, |link| link.target() != holder))
        .collect();
    for source in strangers {
        world
            .queue()
            .push(move |world: &mut World| world.adopt_source::<R>(holder, source));
    }
}

/// The collection's `on_replace`: each listed source still naming the holder is unlinked.
fn target_replaced<R: Relationship>(world: &mut HookWorld<'_>, ctx: HookContext) {
    let holder = ctx.entity;
    let Ok(collection) = world.get::<R::Target>(holder) else {
        return;
    };
    if collection.sources().is_empty() {
        return;
    }
    let sources = collection.sources().to_vec();
    world
        .queue()
        .push(move |world: &mut World| world.unlink_sources::<R>(holder, &sources));
}

/// The collection's `on_despawn`, for a linked relationship: the sources are despawned too.
fn target_despawned<R: Relationship>(world: &mut HookWorld<'_>, ctx: HookContext) {
    let holder = ctx.entity;
    let Ok(collection) = world.get::<R::Target>(holder) else {
        return;
    };
    let sources = collection.sources().to_vec();
    world.queue().push(move |world: &mut World| {
        for source in sources {
            if world.get::<R>(source).is_ok_and(|link| link.target() == holder) {
                let _ = world.despawn(source);
            }
        }
    });
}
