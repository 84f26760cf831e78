//! The entity allocator: a free list plus one atomic cursor.
//!
//! `&mut self` methods (`alloc`, `free`, `flush`) are the normal path. `reserve_entity(&self)`
//! lets many threads hand out ids at once — commands use it to return an `Entity` before the
//! entity exists. The protocol (the scheme hecs uses):
//!
//! * `pending` is the free list and the cursor counts how much of it is still unclaimed. It is
//!   stored relative to `pending.len()` (`reserved`, 0 after a flush), which only `&mut`
//!   methods change.
//! * A reservation does `reserved.fetch_sub(n)`. Each cursor value `v` it passes over names
//!   one id: `v > 0` claims `pending[v - 1]`; `v <= 0` claims the fresh index
//!   `meta.len() - v`, past every slot that exists.
//! * Reservations never write shared state other than the cursor, so they need no lock; only
//!   `flush(&mut self)` turns them into real entities and resets the cursor.
//!
//! A slot's generation is bumped when it is freed. A slot whose generation would overflow is
//! retired instead of reused, so a stale handle can never match a later occupant.

use std::num::NonZeroU32;

use super::{Entity, EntityLocation};
use crate::archetype::ArchetypeId;
use crate::sync::{AtomicI64, Ordering};

/// One slot. `repr(C)`: `index` and `generation` in that order are laid out as an
/// [`Entity`], so a lookup compares them with the handle as one 64-bit value, and `generation`
/// and `location.archetype` are adjacent for [`Locations::row_in`].
#[derive(Clone, Copy, Debug)]
#[repr(C)]
struct EntityMeta {
    /// The slot's own index while its entity has a location, [`UNPLACED`] otherwise (free,
    /// or reserved and not yet flushed), which no handle's index is: so one comparison with
    /// the handle checks both that it is current and that the entity is placed (callgrind:
    /// 1.5 instructions fewer per insert or remove than comparing the generation alone).
    index: u32,
    /// For a live or reserved slot, the generation of its entity; for a free slot, the
    /// generation its next entity will get.
    generation: NonZeroU32,
    /// [`EntityLocation::NOWHERE`] exactly when `index` is [`UNPLACED`].
    location: EntityLocation,
}

/// [`EntityMeta::index`] of a slot whose entity has no location. Entity indices stay below
/// it (`alloc` and the reservations refuse `u32::MAX`).
const UNPLACED: u32 = u32::MAX;

impl EntityMeta {
    const FRESH: Self = Self {
        index: UNPLACED,
        generation: NonZeroU32::MIN,
        location: EntityLocation::NOWHERE,
    };

    /// Records that the slot's entity, at `index`, now lives at `location`.
    #[inline]
    fn place(&mut self, index: u32, location: EntityLocation) {
        self.index = index;
        self.location = location;
    }

    /// True while the slot's entity has a location.
    fn is_placed(&self) -> bool {
        self.index != UNPLACED
    }
}

/// A borrowed [`Entities`]' record of where each entity is stored.
#[derive(Clone, Copy)]
pub(crate) struct Locations<'a>(&'a [EntityMeta]);

impl Locations<'_> {
    /// As [`Entities::get`].
    #[inline]
    pub(crate) fn get(self, entity: Entity) -> Option<EntityLocation> {
        let meta = self.0.get(entity.index() as usize)?;
        // A free or reserved slot has index `UNPLACED`, which no handle's index is.
        let key = u64::from(meta.index) | (u64::from(meta.generation.get()) << 32);
        if key == entity.to_bits() {
            Some(meta.location)
        } else {
            None
        }
    }

    /// `entity`'s row when it is alive and stored in `archetype`, which is a real archetype
    /// or [`ArchetypeId::ABSENT`]: the slot's (index, generation) is compared with the handle
    /// as one 64-bit value, as in [`get`](Self::get) (a slot without a location never
    /// matches), and its archetype with `archetype`, under one branch. (Comparing generation
    /// and archetype as one value instead needs the generation shifted out of the handle and
    /// the key kept in a register; in `View::get`'s loop that key was spilled, and lookups
    /// measured ~8% slower.)
    #[inline]
    pub(crate) fn row_in(self, entity: Entity, archetype: ArchetypeId) -> Option<u32> {
        debug_assert!(archetype != ArchetypeId::NONE);
        let meta = self.0.get(entity.index() as usize)?;
        let placed = u64::from(meta.index) | (u64::from(meta.generation.get()) << 32);
        // `&`, not `&&`: one branch for both tests.
        ((placed == entity.to_bits()) & (meta.location.archetype == archetype)).then_some(meta.location.row)
    }
}

/// Hands out [`Entity`] ids and records where each live entity is stored.
#[derive(Debug)]
pub struct Entities {
    meta: Vec<EntityMeta>,
    /// Free slot indices; the unclaimed prefix is `pending[..cursor]`, where the cursor is
    /// `pending.len() + reserved`.
    pending: Vec<u32>,
    /// Minus the number of ids reserved since the last flush: 0 when there is nothing to
    /// flush, so the check every structural operation makes is one comparison with zero
    /// (callgrind: one instruction fewer per insert or remove than comparing an absolute
    /// cursor with `pending.len()`).
    reserved: AtomicI64,
    /// Entities with a location (reserved-but-unflushed ones are not counted).
    live: u32,
}

impl Default for Entities {
    fn default() -> Self {
        Self::new()
    }
}

impl Entities {
    /// An allocator with no entities.
    pub fn new() -> Self {
        Self {
            meta: Vec::new(),
            pending: Vec::new(),
            reserved: AtomicI64::new(0),
            live: 0,
        }
    }

    /// Reserves one id without `&mut` access; safe to call from many threads at once.
    /// The entity exists (with no components) after the next [`flush`](Self::flush).
    pub fn reserve_entity(&self) -> Entity {
        let n = self.reserved.fetch_sub(1, Ordering::Relaxed);
        self.entity_for_cursor(self.pending.len() as i64 + n)
    }

    /// Reserves `count` ids at once with a single atomic operation.
    pub fn reserve_entities(&self, count: u32) -> ReserveEntities<'_> {
        let count = i64::from(count);
        let end = self.pending.len() as i64 + self.reserved.fetch_sub(count, Ordering::Relaxed);
        ReserveEntities {
            entities: self,
            cursors: (end - count + 1)..(end + 1),
        }
    }

    fn entity_for_cursor(&self, cursor: i64) -> Entity {
        if cursor > 0 {
            let index = self.pending[(cursor - 1) as usize];
            Entity::new(index, self.meta[index as usize].generation)
        } else {
            let index = u32::try_from(self.meta.len() as i64 - cursor)
                .ok()
                .filter(|&i| i < u32::MAX)
                .expect("entity index space exhausted: more than u32::MAX - 1 entity slots");
            Entity::new(index, NonZeroU32::MIN)
        }
    }

    /// True when reservations were made since the last flush.
    #[inline]
    pub fn needs_flush(&mut self) -> bool {
        self.reserved_exclusive() != 0
    }

    /// `reserved` on the `&mut` path, read as a plain integer: unlike an atomic load, the
    /// compiler can fold it into the comparison (one instruction fewer per structural
    /// operation).
    #[cfg(not(loom))]
    #[inline]
    fn reserved_exclusive(&mut self) -> i64 {
        *self.reserved.get_mut()
    }

    /// Loom's atomics have no `get_mut`; exclusive access makes a relaxed load exact.
    #[cfg(loom)]
    #[inline]
    fn reserved_exclusive(&mut self) -> i64 {
        self.reserved.load(Ordering::Relaxed)
    }

    /// The cursor on the `&mut` path: exclusive access means no reservation can race, so a
    /// relaxed load is exact.
    #[inline]
    fn cursor(&mut self) -> i64 {
        self.pending.len() as i64 + self.reserved.load(Ordering::Relaxed)
    }

    /// Records that no reservation is outstanding, once `pending` holds exactly the
    /// unclaimed free slots.
    #[inline]
    fn clear_reserved(&mut self) {
        self.reserved.store(0, Ordering::Relaxed);
    }

    /// Turns every reservation into a live entity, calling `place` to get each one's location
    /// (the world puts them in the empty archetype).
    pub fn flush(&mut self, mut place: impl FnMut(Entity) -> EntityLocation) {
        let cursor = self.cursor();
        let first_claimed = if cursor >= 0 {
            cursor as usize
        } else {
            let old_len = self.meta.len();
            let new_len = old_len + (-cursor) as usize;
            // A reservation past the index space panicked when it was made, but its cursor
            // step stays: refuse here, before any slot is created with a truncated index.
            assert!(
                new_len <= u32::MAX as usize,
                "entity index space exhausted: more than u32::MAX - 1 entity slots reserved"
            );
            self.meta.resize(new_len, EntityMeta::FRESH);
            for index in old_len..new_len {
                let entity = Entity::new(index as u32, NonZeroU32::MIN);
                self.meta[index].place(index as u32, place(entity));
                self.live += 1;
            }
            0
        };
        for i in first_claimed..self.pending.len() {
            let index = self.pending[i] as usize;
            let entity = Entity::new(index as u32, self.meta[index].generation);
            self.meta[index].place(index as u32, place(entity));
            self.live += 1;
        }
        self.pending.truncate(first_claimed);
        self.clear_reserved();
    }

    /// Makes room for `additional` more allocations without growing the slot table in
    /// between; freed slots waiting for reuse count towards it.
    pub(crate) fn reserve(&mut self, additional: usize) {
        self.meta.reserve(additional.saturating_sub(self.pending.len()));
    }

    /// Allocates one id on the `&mut` path. Reservations must have been flushed first.
    #[inline]
    pub(crate) fn alloc(&mut self, location: EntityLocation) -> Entity {
        debug_assert!(!self.needs_flush(), "alloc with unflushed reservations");
        // No reservation is outstanding, so `reserved` stays 0 as `pending` changes.
        let entity = if let Some(index) = self.pending.pop() {
            let meta = &mut self.meta[index as usize];
            meta.place(index, location);
            Entity::new(index, meta.generation)
        } else {
            // Checked before anything changes, so a caught panic leaves the count exact.
            let index = u32::try_from(self.meta.len())
                .ok()
                .filter(|&i| i < u32::MAX)
                .expect("entity index space exhausted: more than u32::MAX - 1 entity slots");
            self.meta.push(EntityMeta {
                index,
                generation: NonZeroU32::MIN,
                location,
            });
            Entity::new(index, NonZeroU32::MIN)
        };
        self.live += 1;
        entity
    }

    /// Frees a live entity's slot and returns where it was stored; `None` for a dead or
    /// never-created handle. Reservations must have been flushed first.
    pub(crate) fn free(&mut self, entity: Entity) -> Option<EntityLocation> {
        debug_assert!(!self.needs_flush(), "free with unflushed reservations");
        let location = self.get(entity)?;
        let meta = &mut self.meta[entity.index() as usize];
        meta.index = UNPLACED;
        meta.location = EntityLocation::NOWHERE;
        self.live -= 1;
        // Retire the slot rather than wrap its generation: a stale handle must never match.
        if let Some(next) = meta.generation.checked_add(1) {
            meta.generation = next;
            // No reservation is outstanding, so `reserved` stays 0.
            self.pending.push(entity.index());
        }
        Some(location)
    }

    /// Frees every entity, keeping generations so that old handles stay dead.
    pub(crate) fn clear(&mut self) {
        debug_assert!(!self.needs_flush(), "clear with unflushed reservations");
        for index in 0..self.meta.len() {
            let meta = self.meta[index];
            if meta.is_placed() {
                self.free(Entity::new(index as u32, meta.generation));
            }
        }
    }

    /// Where a live entity is stored; `None` for a dead, never-created or unflushed handle.
    #[inline]
    pub fn get(&self, entity: Entity) -> Option<EntityLocation> {
        self.locations().get(entity)
    }

    /// The slots alone, for a caller that looks up many entities while the world is
    /// borrowed: it keeps the slice in registers instead of reading it from `self` each time.
    #[inline]
    pub(crate) fn locations(&self) -> Locations<'_> {
        Locations(&self.meta)
    }

    /// Records a live entity's new location after its row moved.
    #[inline]
    pub(crate) fn set_location(&mut self, entity: Entity, location: EntityLocation) {
        debug_assert!(self.get(entity).is_some(), "set_location on dead {entity:?}");
        self.meta[entity.index() as usize].location = location;
    }

    /// [`set_location`](Self::set_location) without the bounds check, for entities just
    /// looked up or read from a table.
    ///
    /// # Safety
    /// `entity` is live.
    #[inline]
    pub(crate) unsafe fn set_location_unchecked(&mut self, entity: Entity, location: EntityLocation) {
        debug_assert!(self.get(entity).is_some(), "set_location on dead {entity:?}");
        // SAFETY: a live entity's index is a slot of `meta` (the caller's contract).
        unsafe { self.meta.get_unchecked_mut(entity.index() as usize).location = location };
    }

    /// Records both locations a one-row move changes: `filler`, which took `entity`'s old row
    /// `old`, then `entity` at `new`. When `filler` is `entity` (it was the last row), the
    /// second write stands. One read of the slot array serves both writes (two calls of
    /// [`set_location_unchecked`](Self::set_location_unchecked) read it twice: the first
    /// write might, for all the compiler knows, have changed it).
    ///
    /// # Safety
    /// Both entities are live.
    #[inline]
    pub(crate) unsafe fn record_move(
        &mut self,
        filler: Entity,
        old: EntityLocation,
        entity: Entity,
        new: EntityLocation,
    ) {
        debug_assert!(self.get(filler).is_some(), "record_move of dead {filler:?}");
        debug_assert!(self.get(entity).is_some(), "record_move of dead {entity:?}");
        let meta = self.meta.as_mut_ptr();
        // SAFETY: a live entity's index is a slot of `meta` (the caller's contract).
        unsafe {
            (*meta.add(filler.index() as usize)).location = old;
            (*meta.add(entity.index() as usize)).location = new;
        }
    }

    /// Records `entities[i]` at row `first_row + i` of `archetype`, for a table's rows that
    /// just moved in.
    ///
    /// # Safety
    /// Every entity is live, and `first_row + entities.len()` fits in a `u32` (rows do).
    #[inline]
    pub(crate) unsafe fn place_rows(
        &mut self,
        archetype: ArchetypeId,
        entities: &[Entity],
        first_row: usize,
    ) {
        for (row, &entity) in (first_row as u32..).zip(entities) {
            // SAFETY: `entity` is live (the caller's contract).
            unsafe { self.set_location_unchecked(entity, EntityLocation { archetype, row }) };
        }
    }

    /// How many slots exist: every entity index is below this.
    pub(crate) fn slots(&self) -> usize {
        self.meta.len()
    }

    /// How many entities are live (flushed reservations included).
    pub fn len(&self) -> u32 {
        self.live
    }

    /// True when no entity is live.
    pub fn is_empty(&self) -> bool {
        self.live == 0
    }
}

/// The ids handed out by [`Entities::reserve_entities`].
#[derive(Debug)]
pub struct ReserveEntities<'a> {
    entities: &'a Entities,
    cursors: std::ops::Range<i64>,
}

impl Iterator for ReserveEntities<'_> {
    type Item = Entity;

    fn next(&mut self) -> Option<Entity> {
        let cursor = self.cursors.next()?;
        Some(self.entities.entity_for_cursor(cursor))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.cursors.size_hint()
    }
}

impl ExactSizeIterator for ReserveEntities<'_> {}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::collections::HashSet;

    fn placed() -> EntityLocation {
        EntityLocation {
            archetype: crate::ArchetypeId::EMPTY,
            row: 0,
        }
    }

    #[test]
    fn freed_slot_is_reused_with_new_generation() {
        let mut entities = Entities::new();
        let a = entities.alloc(placed());
        assert!(entities.free(a).is_some());
        assert!(entities.free(a).is_none(), "double free is refused");
        let b = entities.alloc(placed());
        assert_eq!(b.index(), a.index());
        assert_eq!(b.generation(), a.generation() + 1);
        assert!(entities.get(a).is_none());
        assert!(entities.get(b).is_some());
    }

    #[test]
    fn reservations_cover_free_list_then_fresh_slots() {
        let mut entities = Entities::new();
        let live: Vec<_> = (0..4).map(|_| entities.alloc(placed())).collect();
        entities.free(live[1]);
        entities.free(live[3]);
        let reserved: Vec<_> = entities.reserve_entities(5).collect();
        let single = entities.reserve_entity();
        let mut all: HashSet<_> = reserved.iter().copied().collect();
        assert!(all.insert(single), "ids are distinct");
        assert_eq!(all.len(), 6);
        let indices: HashSet<_> = all.iter().map(|e| e.index()).collect();
        assert_eq!(indices, (1..=1).chain(3..=7).collect());
        assert!(all.iter().all(|&e| entities.get(e).is_none()));
        assert!(entities.needs_flush());
        let mut flushed = HashSet::new();
        entities.flush(|e| {
            flushed.insert(e);
            placed()
        });
        assert_eq!(flushed, all);
        assert!(!entities.needs_flush());
        assert_eq!(entities.len(), 8);
        assert!(all.iter().all(|&e| entities.get(e).is_some()));
        // The next allocation is fresh, not a reused reservation.
        assert_eq!(entities.alloc(placed()).index(), 8);
    }

    #[test]
    fn exhausted_generation_retires_the_slot() {
        let mut entities = Entities::new();
        let e = entities.alloc(placed());
        entities.meta[0].generation = NonZeroU32::MAX;
        let stale = Entity::new(0, NonZeroU32::MAX);
        entities.free(stale);
        let next = entities.alloc(placed());
        assert_ne!(next.index(), e.index(), "slot 0 is retired, never reused");
        assert!(entities.get(stale).is_none());
    }
}
