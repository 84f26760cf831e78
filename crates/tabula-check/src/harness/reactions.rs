//! Observers, relations and the hierarchy (see [`crate::links`]): the observers' systems and
//! the log they write, the ops that add and despawn observers, trigger [`Poke`], set and
//! remove parents, despawn recursively, and relate entities with [`Rel`]; and the check of
//! all three against the model.

use std::collections::HashMap;

use tabula::prelude::*;
use tabula::schedule::Observer;
use tabula::{HierarchyError, OnAdd, OnDespawn, OnInsert, OnRemove, OnReplace, Relations};

use super::Harness;
use super::side::Side;
use crate::components::{KINDS, ModelComponent, with_kind};
use crate::links::{Poke, Rel, Seen, Watch, stops};
use crate::ops::{MAX_OBSERVERS, Target};

/// What the observers ran for, in the order they ran, since the last check took it.
#[derive(Default)]
pub(super) struct ObserverLog(pub(super) Vec<Seen>);

/// An observer of lifecycle event `E` of model kind `kind` logging its runs as observer
/// `serial`, event `code`.
fn logger<E: tabula::Event>(serial: u32, code: u8, kind: u8) -> Observer {
    Observer::new(move |trigger: Trigger<E>, mut log: ResMut<ObserverLog>| {
        log.0.push(seen(serial, code, kind, trigger.try_target()));
    })
}

/// The observer with serial `serial` of `T`'s `Watch::Add`, `Insert`, `Remove` (`event` 0,
/// 1, 2), `Replace` (4) or `Despawn` (5), or of [`Poke`] (3).
fn observer<T: ModelComponent>(event: u8, serial: u32) -> Observer {
    let kind = T::KIND as u8;
    match event {
        0 => logger::<OnAdd<T>>(serial, event, kind),
        1 => logger::<OnInsert<T>>(serial, event, kind),
        2 => logger::<OnRemove<T>>(serial, event, kind),
        4 => logger::<OnReplace<T>>(serial, event, kind),
        5 => logger::<OnDespawn<T>>(serial, event, kind),
        _ => Observer::new(move |trigger: Trigger<Poke>, mut log: ResMut<ObserverLog>| {
            let value = trigger.event().0;
            log.0.push(seen(serial, 3, value, trigger.try_target()));
            if stops(serial, value) {
                trigger.propagate(false);
            }
        }),
    }
}

fn seen(observer: u32, event: u8, detail: u8, target: Option<Entity>) -> Seen {
    Seen {
        observer,
        event,
        detail,
        target,
    }
}

impl Harness {
    /// [`Op::Observe`](crate::Op::Observe).
    pub(super) fn observe(&mut self, event: u8, kind: u8, target: Option<Target>) {
        if self.side.model.observers().len() >= MAX_OBSERVERS {
            return self.despawn_observer(0);
        }
        let event = event % 6;
        let kind = usize::from(kind) % (KINDS - 1);
        let watched = target.map(|t| self.pick(t));
        let serial = self.side.model.next_serial();
        let mut added = with_kind!(kind, observer(event, serial));
        if let Some(entity) = watched {
            added = added.watch(entity);
        }
        self.side.model.flush();
        let entity = self.side.world.add_observer(added);
        self.stats.observers_added += 1;
        let watch = match event {
            0 => Watch::Add(kind),
            1 => Watch::Insert(kind),
            2 => Watch::Remove(kind),
            3 => Watch::Poke,
            4 => Watch::Replace(kind),
            _ => Watch::Despawn(kind),
        };
        self.side.model.add_observer(entity, watch, watched);
    }

    /// [`Op::DespawnObserver`](crate::Op::DespawnObserver).
    pub(super) fn despawn_observer(&mut self, which: u8) {
        let observers = self.side.model.observers();
        if observers.is_empty() {
            return;
        }
        let entity = observers[usize::from(which) % observers.len()].entity;
        self.despawn(entity, false);
    }

    /// [`Op::Poke`](crate::Op::Poke).
    pub(super) fn poke(&mut self, targets: &[Target], value: u8) {
        let targets: Vec<Entity> = targets.iter().map(|&t| self.pick(t)).collect();
        if targets.is_empty() {
            self.side.world.trigger(Poke(value));
        } else {
            self.side
                .world
                .trigger_targets(Poke(value), targets.iter().copied());
        }
        self.side.model.poke(&targets, value);
    }

    /// [`Op::SetParent`](crate::Op::SetParent).
    pub(super) fn set_parent(&mut self, child: Target, parent: Target) {
        let (child, parent) = (self.pick(child), self.pick(parent));
        self.stats.structural += 1;
        self.side.model.flush();
        let model = &self.side.model;
        let expected = if !model.is_live(child) {
            Err(HierarchyError::Entity(self.side.absent(child)))
        } else if !model.is_live(parent) {
            Err(HierarchyError::Entity(self.side.absent(parent)))
        } else if model.is_ancestor_or_self(child, parent) {
            Err(HierarchyError::Cycle { child, parent })
        } else {
            Ok(())
        };
        let result = self.side.world.set_parent(child, parent);
        assert_eq!(result, expected, "set_parent({child:?}, {parent:?})");
        if result.is_ok() {
            self.stats.parents_set += 1;
            self.side.model.set_parent(child, parent);
        }
    }

    /// [`Op::RemoveParent`](crate::Op::RemoveParent).
    pub(super) fn remove_parent(&mut self, child: Target) {
        let child = self.pick(child);
        self.stats.structural += 1;
        self.side.model.flush();
        let expected = if self.side.model.is_live(child) {
            Ok(())
        } else {
            Err(self.side.absent(child))
        };
        assert_eq!(
            self.side.world.remove_parent(child),
            expected,
            "remove_parent({child:?})"
        );
        if expected.is_ok() {
            self.side.model.remove_parent(child);
        }
    }

    /// [`Op::DespawnRecursive`](crate::Op::DespawnRecursive): the model despawns the subtree
    /// in the world's order (the root, then each child's subtree, last child first), which
    /// decides what the observers in it still see.
    pub(super) fn despawn_recursive(&mut self, target: Target) {
        let root = self.pick(target);
        self.side.model.flush();
        let expected = if self.side.model.is_live(root) {
            Ok(())
        } else {
            Err(self.side.absent(root))
        };
        assert_eq!(
            self.side.world.despawn_recursive(root),
            expected,
            "despawn_recursive({root:?})"
        );
        if expected.is_err() {
            return;
        }
        let mut stack = vec![root];
        while let Some(next) = stack.pop() {
            stack.extend_from_slice(self.side.model.children(next));
            self.stats.structural += 1;
            self.stats.despawned_recursively += 1;
            self.side.model.kill(next);
        }
    }

    /// [`Op::Relate`](crate::Op::Relate).
    pub(super) fn relate(&mut self, source: Target, target: Target, unrelate: bool) {
        let (source, target) = (self.pick(source), self.pick(target));
        self.stats.structural += 1;
        self.side.model.flush();
        let model = &self.side.model;
        let error = if !model.is_live(source) {
            Some(self.side.absent(source))
        } else if !model.is_live(target) {
            Some(self.side.absent(target))
        } else {
            None
        };
        let world = &mut self.side.world;
        let (result, call) = if unrelate {
            (world.unrelate::<Rel>(source, target), "unrelate")
        } else {
            (world.relate::<Rel>(source, target), "relate")
        };
        let expected = match error {
            Some(error) => Err(error),
            None if unrelate => Ok(self.side.model.unrelate(source, target)),
            None => Ok(self.side.model.relate(source, target)),
        };
        if expected == Ok(true) && !unrelate {
            self.stats.pairs_made += 1;
        }
        assert_eq!(result, expected, "{call}({source:?}, {target:?})");
    }

    /// [`Op::UnrelateAll`](crate::Op::UnrelateAll).
    pub(super) fn unrelate_all(&mut self, target: Target) {
        let entity = self.pick(target);
        self.stats.structural += 1;
        self.side.model.flush();
        let expected = if self.side.model.is_live(entity) {
            Ok(self.side.model.unrelate_all(entity))
        } else {
            Err(self.side.absent(entity))
        };
        assert_eq!(
            self.side.world.unrelate_all::<Rel>(entity),
            expected,
            "unrelate_all({entity:?})"
        );
    }
}

impl Side {
    /// The observers' log is the model's (the runs of `Poke` in the same order, the
    /// lifecycle runs as a multiset: their order across a bundle's kinds or a batch's
    /// entities is the storage's), and both are emptied; every live entity's `Rel` targets
    /// and sources, parent and children are the model's, in order.
    pub(super) fn check_links(&mut self, full: bool) {
        let world_log = std::mem::take(&mut self.world.resource_mut::<ObserverLog>().expect("inserted").0);
        let model_log = self.model.take_log();
        let split = |log: Vec<Seen>| -> (Vec<Seen>, Vec<Seen>) {
            let (pokes, mut lifecycle): (Vec<Seen>, Vec<Seen>) =
                log.into_iter().partition(|s| s.event == Watch::Poke.code());
            lifecycle.sort_unstable();
            (pokes, lifecycle)
        };
        let (world_pokes, world_lifecycle) = split(world_log);
        let (model_pokes, model_lifecycle) = split(model_log);
        assert_eq!(
            world_pokes, model_pokes,
            "world {}: the Poke observers' runs, in order",
            self.index
        );
        assert_eq!(
            world_lifecycle, model_lifecycle,
            "world {}: the lifecycle observers' runs",
            self.index
        );
        let pairs = self.world.resource::<Relations<Rel>>().map_or(0, Relations::len);
        assert_eq!(
            pairs,
            self.model.pair_count(),
            "world {}: pairs of Rel",
            self.index
        );
        if !full {
            return;
        }
        let mut targets: HashMap<Entity, Vec<Entity>> = HashMap::new();
        let mut sources: HashMap<Entity, Vec<Entity>> = HashMap::new();
        for &(source, target) in self.model.pairs() {
            targets.entry(source).or_default().push(target);
            sources.entry(target).or_default().push(source);
        }
        for &entity in self.model.ids() {
            let at = |what: &str| format!("world {}: {what} of {entity:?}", self.index);
            assert_eq!(
                self.world.targets::<Rel>(entity),
                targets.get(&entity).map_or(&[][..], Vec::as_slice),
                "{}",
                at("Rel targets")
            );
            assert_eq!(
                self.world.sources::<Rel>(entity),
                sources.get(&entity).map_or(&[][..], Vec::as_slice),
                "{}",
                at("Rel sources")
            );
            assert_eq!(
                self.world.parent(entity),
                Ok(self.model.parent(entity)),
                "{}",
                at("the parent")
            );
            assert_eq!(
                self.world.children(entity),
                Ok(self.model.children(entity)),
                "{}",
                at("the children")
            );
        }
    }
}
