//! The naive reference: a map from entity to row, plus the events and removal logs the world
//! should hold.

use std::collections::{HashMap, VecDeque};

use tabula::Entity;

use crate::components::{KINDS, Value};
use crate::links::{Links, ObserverModel, Seen, Watch, stops};

/// One entity's components as the model sees them: one slot per kind.
pub type Row = [Option<Value>; KINDS];

/// A row with no components.
pub const EMPTY_ROW: Row = [const { None }; KINDS];

/// How many dead ids the model remembers, to check that they stay dead.
const DEAD_WINDOW: usize = 64;

/// The set of kinds a row holds, as a bit mask.
pub fn row_mask(row: &Row) -> u16 {
    (0..KINDS)
        .filter(|&k| row[k].is_some())
        .fold(0, |mask, k| mask | 1 << k)
}

/// What the world should hold: live entities with their rows, reservations not yet
/// flushed, recently despawned ids, events, and the removal logs of the tracked kinds.
///
/// Every id the world hands out (a spawn's, a reservation's) goes through
/// [`spawn`](Self::spawn) or [`reserve`](Self::reserve), which assert that it is new: its
/// generation is above that of every id issued before at its slot index, so no id is ever
/// handed out twice (kept per slot, so the memory stays bounded by the slot count).
#[derive(Debug, Default)]
pub struct Model {
    rows: HashMap<Entity, Row>,
    /// The live entities, in no particular order, for picking one at random in O(1).
    ids: Vec<Entity>,
    /// Where each live entity sits in `ids`.
    index: HashMap<Entity, usize>,
    pending: Vec<Entity>,
    dead: VecDeque<Entity>,
    /// Per slot index, the generation of the last id issued there (0: none yet).
    issued: Vec<u32>,
    /// The highest slot index of any entity that was live (a reservation's counts once it
    /// is flushed: before, its slot need not exist yet).
    highest_index: Option<u32>,
    /// The most entities live and reserved at once.
    peak: usize,
    /// The most ids reserved between two flushes (by `reserve_entities`, or by one run's
    /// command spawns).
    burst: usize,
    /// The `Ping` events the world's `Events<Ping>` should hold, and its readers.
    pub events: EventModel,
    /// Per kind, the removal log the world should hold, when the kind is tracked.
    removals: [Option<EventModel<Entity>>; KINDS],
    /// Observers, their expected log, relation pairs and the hierarchy (see
    /// [`crate::links`]).
    links: Links,
    /// Per entity in a pair of `Rel`, how many pairs it is in.
    related: HashMap<Entity, usize>,
}

/// [`Model::extras`] bit: the entity is an observer (holds `ObserverState`).
pub const EXTRA_OBSERVER: u16 = 1;
/// [`Model::extras`] bit: the entity is in a pair of `Rel` (holds `Related<Rel>`).
pub const EXTRA_RELATED: u16 = 2;
/// [`Model::extras`] bit: the entity has a parent (holds `Parent`).
pub const EXTRA_PARENT: u16 = 4;
/// [`Model::extras`] bit: the entity has children (holds `Children`).
pub const EXTRA_CHILDREN: u16 = 8;

impl Model {
    /// Live entities.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// True when no entity is live.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// The live entities, in no particular order.
    pub fn ids(&self) -> &[Entity] {
        &self.ids
    }

    /// Every live entity with its row.
    pub fn rows(&self) -> impl Iterator<Item = (Entity, &Row)> + '_ {
        self.rows.iter().map(|(&e, row)| (e, row))
    }

    /// The row of a live entity.
    pub fn row(&self, entity: Entity) -> Option<&Row> {
        self.rows.get(&entity)
    }

    /// The row of a live entity, to change. Setting a slot to `None` through it is not a
    /// removal the log sees: use [`take`](Self::take) for that.
    pub fn row_mut(&mut self, entity: Entity) -> Option<&mut Row> {
        self.rows.get_mut(&entity)
    }

    /// Every live row, to change (values only; see [`row_mut`](Self::row_mut)).
    pub fn rows_mut(&mut self) -> impl Iterator<Item = (Entity, &mut Row)> + '_ {
        self.rows.iter_mut().map(|(&e, row)| (e, row))
    }

    /// True when `entity` is live.
    pub fn is_live(&self, entity: Entity) -> bool {
        self.rows.contains_key(&entity)
    }

    /// Reservations not yet flushed.
    pub fn pending(&self) -> &[Entity] {
        &self.pending
    }

    /// The most recently despawned ids (a bounded window), oldest first.
    pub fn recent_dead(&self) -> impl DoubleEndedIterator<Item = Entity> + ExactSizeIterator + '_ {
        self.dead.iter().copied()
    }

    /// Records that the world handed `entity` out: it must be new (see [`Model`]).
    fn issue(&mut self, entity: Entity) {
        let index = entity.index() as usize;
        if self.issued.len() <= index {
            self.issued.resize(index + 1, 0);
        }
        let last = self.issued[index];
        assert!(
            entity.generation() > last,
            "{entity:?} was handed out, but generation {last} of slot {index} was issued before it"
        );
        self.issued[index] = entity.generation();
    }

    /// Records a reservation (a new id); it becomes a live entity with no components at the
    /// next flush.
    pub fn reserve(&mut self, entity: Entity) {
        self.issue(entity);
        self.pending.push(entity);
        self.burst = self.burst.max(self.pending.len());
        self.peak = self.peak.max(self.ids.len() + self.pending.len());
    }

    /// Records that `count` ids were reserved between two flushes (a run's command spawns).
    pub fn note_burst(&mut self, count: usize) {
        self.burst = self.burst.max(count);
    }

    /// The highest slot index of any entity live so far.
    pub fn highest_index(&self) -> Option<u32> {
        self.highest_index
    }

    /// The most entities live and reserved at once so far.
    pub fn peak(&self) -> usize {
        self.peak
    }

    /// The most ids reserved between two flushes so far.
    pub fn burst(&self) -> usize {
        self.burst
    }

    /// What every structural world operation does first: reservations become entities.
    pub fn flush(&mut self) {
        for entity in std::mem::take(&mut self.pending) {
            self.place(entity, EMPTY_ROW);
        }
    }

    /// Records a new live entity with a new id (see [`Model`]).
    /// Its components' `OnAdd` and `OnInsert` observers run.
    pub fn spawn(&mut self, entity: Entity, row: Row) {
        self.issue(entity);
        for (kind, value) in row.iter().enumerate() {
            if value.is_some() {
                self.links.fire(Watch::Add(kind), kind as u8, entity);
                self.links.fire(Watch::Insert(kind), kind as u8, entity);
            }
        }
        self.place(entity, row);
    }

    /// A spawn or insert writes `value` as live `entity`'s component kind `kind`: the
    /// `OnAdd` observers of the kind run when the entity lacked it, the `OnReplace` ones
    /// when it had one, the `OnInsert` ones always. Returns false (changing nothing) when `entity` is not live.
    pub fn write(&mut self, entity: Entity, kind: usize, value: Value) -> bool {
        let Some(row) = self.rows.get_mut(&entity) else {
            return false;
        };
        let added = row[kind].is_none();
        row[kind] = Some(value);
        if added {
            self.links.fire(Watch::Add(kind), kind as u8, entity);
        } else {
            self.links.fire(Watch::Replace(kind), kind as u8, entity);
        }
        self.links.fire(Watch::Insert(kind), kind as u8, entity);
        true
    }

    fn place(&mut self, entity: Entity, row: Row) {
        let old = self.rows.insert(entity, row);
        assert!(old.is_none(), "{entity:?} was spawned twice");
        self.index.insert(entity, self.ids.len());
        self.ids.push(entity);
        self.highest_index = self.highest_index.max(Some(entity.index()));
        self.peak = self.peak.max(self.ids.len() + self.pending.len());
    }

    /// Records a despawn (logged as a removal of every tracked kind the entity held, its
    /// `OnDespawn`, `OnReplace` and `OnRemove` observers run, and it leaves its observer list, pairs and hierarchy links);
    /// returns the row.
    pub fn kill(&mut self, entity: Entity) -> Row {
        self.fire_removals(entity);
        self.bury(entity)
    }

    /// `World::clear`: every live entity's `OnDespawn`, `OnReplace` and `OnRemove`
    /// observers run first (every observer
    /// is still there for all of them), then every entity goes.
    pub fn clear(&mut self) {
        let ids = self.ids.clone();
        for &entity in &ids {
            self.fire_removals(entity);
        }
        for entity in ids {
            self.bury(entity);
        }
    }

    /// The `OnDespawn`, `OnReplace` and `OnRemove` observers of each kind live `entity`
    /// holds run.
    fn fire_removals(&mut self, entity: Entity) {
        let row = self.rows.get(&entity).expect("a despawned entity was live");
        for kind in (0..KINDS).filter(|&k| row[k].is_some()) {
            self.links.fire(Watch::Despawn(kind), kind as u8, entity);
            self.links.fire(Watch::Replace(kind), kind as u8, entity);
            self.links.fire(Watch::Remove(kind), kind as u8, entity);
        }
    }

    /// Despawns `entity` without running observers.
    fn bury(&mut self, entity: Entity) -> Row {
        // Only an entity in a pair makes the scan of every pair.
        if self.related.contains_key(&entity) {
            self.unrelate_all(entity);
        }
        self.links.forget(entity);
        let row = self.rows.remove(&entity).expect("killed entity was live");
        let at = self.index.remove(&entity).expect("live entities are indexed");
        self.ids.swap_remove(at);
        if let Some(&moved) = self.ids.get(at) {
            self.index.insert(moved, at);
        }
        if self.dead.len() == DEAD_WINDOW {
            self.dead.pop_front();
        }
        self.dead.push_back(entity);
        for (kind, value) in row.iter().enumerate() {
            if value.is_some()
                && let Some(log) = &mut self.removals[kind]
            {
                log.send(entity);
            }
        }
        row
    }

    /// Removes component kind `kind` from live `entity` (logged when the kind is tracked);
    /// returns its value, `None` when the entity lacks it (or is not live).
    pub fn take(&mut self, entity: Entity, kind: usize) -> Option<Value> {
        let value = self.rows.get_mut(&entity)?[kind].take()?;
        if let Some(log) = &mut self.removals[kind] {
            log.send(entity);
        }
        self.links.fire(Watch::Replace(kind), kind as u8, entity);
        self.links.fire(Watch::Remove(kind), kind as u8, entity);
        Some(value)
    }

    /// How many live entities hold component kind `kind`.
    pub fn count_of(&self, kind: usize) -> usize {
        self.rows.values().filter(|row| row[kind].is_some()).count()
    }

    /// `World::track_removals` of kind `kind`: from now on its removals are logged. Calling it
    /// again changes nothing.
    pub fn track_removals(&mut self, kind: usize) {
        self.removals[kind].get_or_insert_with(EventModel::default);
    }

    /// The removal log the world should hold for kind `kind`; `None` when it is not tracked.
    pub fn removal_log(&self, kind: usize) -> Option<&EventModel<Entity>> {
        self.removals[kind].as_ref()
    }

    /// `World::update_events` (which a completed schedule run calls too): ages the events
    /// and every removal log.
    pub fn update_events(&mut self) {
        self.events.update();
        for log in self.removals.iter_mut().flatten() {
            log.update();
        }
    }
}

/// Observers, relations and the hierarchy (see [`crate::links`]).
impl Model {
    /// The components live `entity` holds besides its row's, as `EXTRA_*` bits.
    pub fn extras(&self, entity: Entity) -> u16 {
        let mut extras = 0;
        if self.links.observers.iter().any(|o| o.entity == entity) {
            extras |= EXTRA_OBSERVER;
        }
        if self.related.contains_key(&entity) {
            extras |= EXTRA_RELATED;
        }
        if self.links.parent.contains_key(&entity) {
            extras |= EXTRA_PARENT;
        }
        if self.links.children.contains_key(&entity) {
            extras |= EXTRA_CHILDREN;
        }
        extras
    }

    /// The live observers, in registration order.
    pub fn observers(&self) -> &[ObserverModel] {
        &self.links.observers
    }

    /// The serial the next observer registered gets.
    pub fn next_serial(&self) -> u32 {
        self.links.serials
    }

    /// Records a new observer of `watch` (watching `watched`, or every entity), entity
    /// `entity` (spawned with no model component), with serial [`next_serial`](Self::next_serial).
    pub fn add_observer(&mut self, entity: Entity, watch: Watch, watched: Option<Entity>) {
        self.spawn(entity, EMPTY_ROW);
        let serial = self.links.serials;
        self.links.serials += 1;
        self.links.observers.push(ObserverModel {
            entity,
            serial,
            watch,
            watched,
        });
    }

    /// The observer runs the world's log should hold since the last call, which empties it.
    pub fn take_log(&mut self) -> Vec<Seen> {
        std::mem::take(&mut self.links.log)
    }

    /// How many observer runs were predicted so far.
    pub fn observer_runs(&self) -> u64 {
        self.links.runs
    }

    /// `World::trigger_targets(Poke(value), targets)`, or with no targets `World::trigger`:
    /// for each target in turn, its observers run, then its parent's and so on up while no
    /// observer that ran stopped the event ([`stops`]).
    pub fn poke(&mut self, targets: &[Entity], value: u8) {
        if !self.links.observers.iter().any(|o| o.watch == Watch::Poke) {
            return; // with no observer of the event, triggering it does nothing
        }
        if targets.is_empty() {
            for observer in &self.links.observers {
                if observer.watch == Watch::Poke && observer.watched.is_none() {
                    self.links.runs += 1;
                    self.links.log.push(Seen {
                        observer: observer.serial,
                        event: Watch::Poke.code(),
                        detail: value,
                        target: None,
                    });
                }
            }
            return;
        }
        for &original in targets {
            let mut target = original;
            loop {
                let mut propagate = true;
                for observer in &self.links.observers {
                    if observer.watch == Watch::Poke && observer.watched.is_none_or(|w| w == target) {
                        self.links.runs += 1;
                        self.links.log.push(Seen {
                            observer: observer.serial,
                            event: Watch::Poke.code(),
                            detail: value,
                            target: Some(target),
                        });
                        propagate &= !stops(observer.serial, value);
                    }
                }
                match self.links.parent.get(&target) {
                    Some(&parent) if propagate => target = parent,
                    _ => break,
                }
            }
        }
    }

    /// The pairs `(source, target)` of `Rel`, in the order they were made (so each
    /// entity's targets, and its sources, in that order too).
    pub fn pairs(&self) -> &[(Entity, Entity)] {
        &self.links.pairs
    }

    /// How many pairs of `Rel` there are.
    pub fn pair_count(&self) -> usize {
        self.links.pairs.len()
    }

    /// Relates live `source` to live `target`; false when the pair was there.
    pub fn relate(&mut self, source: Entity, target: Entity) -> bool {
        if self.links.pairs.contains(&(source, target)) {
            return false;
        }
        self.links.pairs.push((source, target));
        *self.related.entry(source).or_default() += 1;
        if target != source {
            *self.related.entry(target).or_default() += 1;
        }
        true
    }

    /// Removes the pair `(source, target)`; false when it was not there.
    pub fn unrelate(&mut self, source: Entity, target: Entity) -> bool {
        let Some(at) = self.links.pairs.iter().position(|&p| p == (source, target)) else {
            return false;
        };
        self.links.pairs.remove(at);
        for e in if source == target {
            vec![source]
        } else {
            vec![source, target]
        } {
            let count = self.related.get_mut(&e).expect("counted");
            *count -= 1;
            if *count == 0 {
                self.related.remove(&e);
            }
        }
        true
    }

    /// Removes every pair `entity` is in; returns how many.
    pub fn unrelate_all(&mut self, entity: Entity) -> usize {
        let pairs: Vec<(Entity, Entity)> = (self.links.pairs.iter().copied())
            .filter(|&(s, t)| s == entity || t == entity)
            .collect();
        for &(s, t) in &pairs {
            self.unrelate(s, t);
        }
        pairs.len()
    }

    /// The parent of `entity`, if it has one.
    pub fn parent(&self, entity: Entity) -> Option<Entity> {
        self.links.parent.get(&entity).copied()
    }

    /// The children of `entity`, in the order they were attached.
    pub fn children(&self, entity: Entity) -> &[Entity] {
        self.links.children.get(&entity).map_or(&[], Vec::as_slice)
    }

    /// True when `ancestor` is `entity` or one of its ancestors.
    pub fn is_ancestor_or_self(&self, ancestor: Entity, entity: Entity) -> bool {
        self.links.is_ancestor_or_self(ancestor, entity)
    }

    /// Makes live `child` a child of live `parent` (no cycle), leaving its old parent.
    pub fn set_parent(&mut self, child: Entity, parent: Entity) {
        if self.parent(child) == Some(parent) {
            return;
        }
        self.links.detach(child);
        self.links.parent.insert(child, parent);
        self.links.children.entry(parent).or_default().push(child);
    }

    /// Makes `child` a root.
    pub fn remove_parent(&mut self, child: Entity) {
        self.links.detach(child);
    }
}

/// What one `Events<T>` should hold (the world's `Events<Ping>`, as `u32` values, or a
/// removal log), and what each of its readers has seen.
///
/// An event sent before the `n`-th update is readable until the `n + 1`-th: updates drop the
/// older of the two buffers. A reader sees each event at most once, in order.
#[derive(Debug)]
pub struct EventModel<T = u32> {
    next_id: u64,
    epoch: u64,
    /// `(id, value, epoch when sent)`, oldest first.
    buffered: VecDeque<(u64, T, u64)>,
    /// Per reader, the id of the first event it has not seen.
    cursors: Vec<u64>,
}

impl<T> Default for EventModel<T> {
    fn default() -> Self {
        Self {
            next_id: 0,
            epoch: 0,
            buffered: VecDeque::new(),
            cursors: Vec::new(),
        }
    }
}

impl<T: Clone> EventModel<T> {
    /// An event is sent.
    pub fn send(&mut self, value: T) {
        self.buffered.push_back((self.next_id, value, self.epoch));
        self.next_id += 1;
    }

    /// `Events::update`: events sent before the previous update are dropped.
    pub fn update(&mut self) {
        self.epoch += 1;
        while self
            .buffered
            .front()
            .is_some_and(|&(_, _, sent)| self.epoch - sent > 1)
        {
            self.buffered.pop_front();
        }
    }

    /// How many events the resource holds.
    pub fn len(&self) -> usize {
        self.buffered.len()
    }

    /// True when the resource holds no event.
    pub fn is_empty(&self) -> bool {
        self.buffered.is_empty()
    }

    /// The events held, oldest first.
    pub fn iter(&self) -> impl Iterator<Item = &T> + '_ {
        self.buffered.iter().map(|(_, value, _)| value)
    }

    /// Reader `reader` starts again with a fresh cursor (its system was initialised anew, for
    /// a schedule that comes to this world from another): its next read sees every event
    /// still held.
    pub fn forget(&mut self, reader: usize) {
        if let Some(cursor) = self.cursors.get_mut(reader) {
            *cursor = 0;
        }
    }

    /// Reader `reader` reads: the values it has not seen yet, oldest first.
    pub fn read(&mut self, reader: usize) -> Vec<T> {
        if self.cursors.len() <= reader {
            self.cursors.resize(reader + 1, 0);
        }
        let cursor = self.cursors[reader];
        let seen = (self.buffered.iter())
            .filter(|&&(id, _, _)| id >= cursor)
            .map(|(_, value, _)| value.clone())
            .collect();
        self.cursors[reader] = self.next_id;
        seen
    }
}
