//! The model's side of observers, relations and the hierarchy: which entities are observers
//! and what each watches, the log their runs should have written, the pairs of the test
//! relation [`Rel`], and the `Parent` / `Children` links.
//!
//! # Observer entities
//!
//! Observers are entities: each holds an `ObserverState`, counts in `World::len`, sits in an
//! archetype, is matched by queries that ask for no component (`Without<Hp>`), and goes with
//! `clear`. Rather than hide them from the checks, the model knows them as what they are:
//! an observer is a live model entity like any other, with a row (empty unless ops insert
//! model components on it, which they may, since targets are drawn from every live entity),
//! plus an *extra* component, `ObserverState`, which [`Model::extras`](crate::Model::extras)
//! reports beside `Related<Rel>`, `Parent` and `Children`. Every check then holds unchanged
//! — entity counts, archetype contents (each archetype's components must be the row's kinds
//! plus the entity's extras), component counts, filtered queries — and despawning an
//! observer by any path (`Op::Despawn` aimed at it, `clear`, a command, `despawn_recursive`
//! of an ancestor) removes it from the model's list exactly when the world stops running it.
//! Nothing is re-registered after `clear`: the observers are gone from world and model
//! alike, and later ops add new ones.

use std::collections::HashMap;

use tabula::{Entity, Relation};

/// The many-to-many relation kind the harness relates entities with.
pub struct Rel;

impl Relation for Rel {}

/// The user event observers can watch: triggered by `Op::Poke` on targets (or on none), it
/// propagates to each target's ancestors along `Parent` until an observer stops it (see
/// [`stops`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Poke(pub u8);

impl tabula::Event for Poke {
    const AUTO_PROPAGATE: bool = true;
}

/// True when observer number `serial`, seeing a [`Poke`] of `value`, stops its propagation.
pub fn stops(serial: u32, value: u8) -> bool {
    (serial + u32::from(value)).is_multiple_of(4)
}

/// What an observer watches: a lifecycle event of one model kind, or [`Poke`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Watch {
    /// `OnAdd<T>` of kind `T`.
    Add(usize),
    /// `OnInsert<T>`.
    Insert(usize),
    /// `OnRemove<T>`.
    Remove(usize),
    /// The user event [`Poke`].
    Poke,
    /// `OnReplace<T>`.
    Replace(usize),
    /// `OnDespawn<T>`.
    Despawn(usize),
}

impl Watch {
    /// The event code [`Seen::event`] records.
    pub fn code(self) -> u8 {
        match self {
            Watch::Add(_) => 0,
            Watch::Insert(_) => 1,
            Watch::Remove(_) => 2,
            Watch::Poke => 3,
            Watch::Replace(_) => 4,
            Watch::Despawn(_) => 5,
        }
    }
}

/// One observer as the model knows it.
#[derive(Clone, Copy, Debug)]
pub struct ObserverModel {
    /// Its entity.
    pub entity: Entity,
    /// Its number in its world, in order of registration (the observer logs it).
    pub serial: u32,
    /// What it watches.
    pub watch: Watch,
    /// The one entity it watches, or `None` for every entity.
    pub watched: Option<Entity>,
}

/// One observer run, as the observer writes it into the world's log.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Seen {
    /// The observer's serial.
    pub observer: u32,
    /// [`Watch::code`] of the event.
    pub event: u8,
    /// The component kind of a lifecycle event, the value of a [`Poke`].
    pub detail: u8,
    /// The trigger's target (`None` for an untargeted `World::trigger`).
    pub target: Option<Entity>,
}

/// The observers, their expected log, the relation pairs and the hierarchy.
#[derive(Debug, Default)]
pub(crate) struct Links {
    /// Live observers, in registration order (the order they run in).
    pub(crate) observers: Vec<ObserverModel>,
    /// Observers registered so far (the next serial).
    pub(crate) serials: u32,
    /// The runs the world's log should hold since it was last taken.
    pub(crate) log: Vec<Seen>,
    /// Runs predicted so far.
    pub(crate) runs: u64,
    /// The pairs of [`Rel`], in the order they were made.
    pub(crate) pairs: Vec<(Entity, Entity)>,
    /// Each child's parent.
    pub(crate) parent: HashMap<Entity, Entity>,
    /// Each parent's children, in the order they were attached (never empty).
    pub(crate) children: HashMap<Entity, Vec<Entity>>,
}

impl Links {
    /// The observers of `watch` run for `target`: those watching every entity and those
    /// watching it, in registration order.
    pub(crate) fn fire(&mut self, watch: Watch, detail: u8, target: Entity) {
        for observer in &self.observers {
            if observer.watch == watch && observer.watched.is_none_or(|w| w == target) {
                self.runs += 1;
                self.log.push(Seen {
                    observer: observer.serial,
                    event: watch.code(),
                    detail,
                    target: Some(target),
                });
            }
        }
    }

    /// Detaches `child` from its parent, if it has one.
    pub(crate) fn detach(&mut self, child: Entity) {
        if let Some(parent) = self.parent.remove(&child) {
            let list = self
                .children
                .get_mut(&parent)
                .expect("a parent lists its children");
            list.retain(|&c| c != child);
            if list.is_empty() {
                self.children.remove(&parent);
            }
        }
    }

    /// `entity` (in no pair any more) is gone: it stops observing, leaves its parent's list,
    /// and its children become roots.
    pub(crate) fn forget(&mut self, entity: Entity) {
        self.observers.retain(|o| o.entity != entity);
        self.detach(entity);
        for child in self.children.remove(&entity).unwrap_or_default() {
            self.parent.remove(&child);
        }
    }

    /// True when `ancestor` is `entity` or one of its ancestors.
    pub(crate) fn is_ancestor_or_self(&self, ancestor: Entity, entity: Entity) -> bool {
        let mut at = Some(entity);
        while let Some(e) = at {
            if e == ancestor {
                return true;
            }
            at = self.parent.get(&e).copied();
        }
        false
    }
}
