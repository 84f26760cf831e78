//! The entity allocator: a free list plus reservation *lanes*.
//!
//! `&mut self` methods (`alloc`, `free`, `flush`) are the normal path. `reserve_entity(&self)`
//! lets many threads hand out ids at once — commands use it to return an `Entity` before the
//! entity exists. Reservations go through lanes (`lanes.rs`), so that the ids a lane hands out
//! depend only on the allocator's state at the last flush and on how many ids *that lane*
//! reserved before, never on what other lanes do meanwhile:
//!
//! * Between two flushes the free list (`pending`) and the slot table (`meta`) do not change.
//!   Together they define a sequence of *positions*: position `j < pending.len()` is the
//!   free slot `pending[len - 1 - j]` (the top of the free list first, with the generation
//!   `free` already bumped), position `j >= pending.len()` the fresh index
//!   `meta.len() + j - pending.len()`, past every slot that exists.
//! * The lane layout maps a lane's `i`-th reservation to a position (see `lanes.rs`); two
//!   lanes never share a position. A reservation is one `fetch_add` on the lane's own
//!   counter, so reservations in different lanes touch no common atomic but the `dirty`
//!   flag, which is written once per lane and flush.
//! * `flush(&mut self)` makes every claimed position a live entity, in position order, puts
//!   the positions no lane claimed (holes) back on the free list, resets the counters and
//!   sizes the next layout from what each lane used.
//!
//! Lane 0 is the *shared* lane, used by `World::reserve_entity` from any number of threads;
//! with it alone, positions are handed out in order exactly as the single cursor of hecs'
//! scheme does. A schedule gives each command-recording system a lane of its own, so that
//! systems recording commands in parallel get the same ids with one thread or many.
//!
//! A slot's generation is bumped when it is freed. A slot whose generation would overflow is
//! retired instead of reused, so a stale handle can never match a later occupant.

use std::num::NonZeroU32;

use super::lanes::LaneLayout;
use super::{Entity, GENERATION_BITS, GENERATION_MASK, first_generation};
use crate::location::ArchetypeId;
use crate::location::EntityLocation;
use crate::sync::{AtomicBool, AtomicU64, Ordering};
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

/// The lane `World::reserve_entity` and `Commands::new` reserve in, shared by every thread.
pub(crate) const SHARED_LANE: u32 = 0;

/// [`EntityMeta::index`] of a slot whose entity has no location. Entity indices stay below
/// it (`alloc` and the reservations refuse `u32::MAX`).
const UNPLACED: u32 = u32::MAX;

impl EntityMeta {
    /// A slot that never held an entity, in a world whose slots start at `generation`.
    const fn fresh(generation: NonZeroU32) -> Self {
        Self {
            index: UNPLACED,
            generation,
            location: EntityLocation::NOWHERE,
        }
    }

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
    /// Free slot indices, the next one to reuse last.
    pending: Vec<u32>,
    /// Per lane, how many ids it reserved since the last flush.
    reserved: Vec<AtomicU64>,
    /// Set by the first reservation of each lane after a flush: the one check every
    /// structural operation makes.
    dirty: AtomicBool,
    /// Which positions each lane's reservations take until the next flush.
    layout: LaneLayout,
    /// Entities with a location (reserved-but-unflushed ones are not counted).
    live: u32,
    /// The generation word of a fresh slot's first entity: the world tag and a count of 1.
    first_generation: NonZeroU32,
}

impl Default for Entities {
    fn default() -> Self {
        Self::new()
    }
}

impl Entities {
    /// An allocator with no entities and only the shared lane, for world tag 0.
    pub fn new() -> Self {
        Self::with_tag(0)
    }

    /// An allocator with no entities and only the shared lane, whose handles carry `tag`.
    pub(crate) fn with_tag(tag: u8) -> Self {
        Self {
            meta: Vec::new(),
            pending: Vec::new(),
            reserved: vec![AtomicU64::new(0)],
            dirty: AtomicBool::new(false),
            layout: LaneLayout::new(),
            live: 0,
            first_generation: first_generation(tag),
        }
    }

    /// The world tag every handle of this allocator carries.
    pub(crate) fn tag(&self) -> u8 {
        (self.first_generation.get() >> GENERATION_BITS) as u8
    }

    /// Adds a reservation lane: ids reserved through it depend only on the allocator's
    /// state at the last flush and on the lane's own earlier reservations. Reservations must
    /// have been flushed first (the layout changes).
    pub(crate) fn add_lane(&mut self) -> u32 {
        assert!(!self.needs_flush(), "add_lane with unflushed reservations");
        self.reserved.push(AtomicU64::new(0));
        self.layout.add_lane()
    }

    /// Reserves one id in the shared lane without `&mut` access; safe to call from many
    /// threads at once. The entity exists (with no components) after the next
    /// [`flush`](Self::flush).
    pub fn reserve_entity(&self) -> Entity {
        self.reserve_in_lane(SHARED_LANE)
    }

    /// Reserves `count` ids at once in the shared lane, with a single atomic operation.
    pub fn reserve_entities(&self, count: u32) -> ReserveEntities<'_> {
        self.reserve_in(SHARED_LANE, count)
    }

    /// Reserves one id in lane `lane` (an index [`add_lane`](Self::add_lane) returned).
    #[inline]
    pub(crate) fn reserve_in_lane(&self, lane: u32) -> Entity {
        self.reserve_in(lane, 1).next().expect("one id was reserved")
    }

    /// Claims the lane's next `count` reservation numbers.
    fn reserve_in(&self, lane: u32, count: u32) -> ReserveEntities<'_> {
        let counter = &self.reserved[lane as usize];
        let count = u64::from(count);
        // A `u64` count cannot wrap: each number is a distinct position, and positions past
        // the `u32` index space panic in `entity_at` long before.
        let first = counter.fetch_add(count, Ordering::Relaxed);
        if first == 0 && count > 0 {
            self.dirty.store(true, Ordering::Relaxed);
        }
        ReserveEntities {
            entities: self,
            lane,
            numbers: first..first + count,
        }
    }

    /// The id at position `position` of the current sequence (see the module docs).
    fn entity_at(&self, position: u64) -> Entity {
        let index = u32::try_from(slot_at(&self.pending, self.meta.len() as u64, position))
            .ok()
            .filter(|&i| i < u32::MAX)
            .expect("entity index space exhausted: more than u32::MAX - 1 entity slots");
        // A fresh slot (past the table) starts at generation 1.
        let generation = self
            .meta
            .get(index as usize)
            .map_or(self.first_generation, |meta| meta.generation);
        Entity::new(index, generation)
    }

    /// True when reservations were made since the last flush.
    // `dirty` read as a plain value: unlike an atomic load, the compiler can fold it into the
    // comparison.
    #[cfg(not(loom))]
    #[inline]
    pub fn needs_flush(&mut self) -> bool {
        *self.dirty.get_mut()
    }

    /// True when reservations were made since the last flush.
    // Loom's atomics have no `get_mut`; exclusive access makes a relaxed load exact.
    #[cfg(loom)]
    #[inline]
    pub fn needs_flush(&mut self) -> bool {
        self.dirty.load(Ordering::Relaxed)
    }

    /// Turns every reservation into a live entity, calling `place` to get each one's location
    /// (the world puts them in the empty archetype), in position order: the same order for
    /// the same reservations, whichever threads made them.
    pub fn flush(&mut self, mut place: impl FnMut(Entity) -> EntityLocation) {
        if !self.needs_flush() {
            return;
        }
        // Exclusive access: every reservation has finished, so relaxed loads are exact.
        let counts: Vec<u64> = self.reserved.iter().map(|c| c.load(Ordering::Relaxed)).collect();
        let claimed = self.layout.claimed(&counts);
        let free = self.pending.len();
        let fresh = claimed.len().saturating_sub(free);
        let old_slots = self.meta.len();
        // A reservation past the index space panicked when it was made, but its count stays:
        // refuse here, before any slot is created with a truncated index.
        assert!(
            old_slots + fresh <= u32::MAX as usize,
            "entity index space exhausted: more than u32::MAX - 1 entity slots reserved"
        );
        self.meta
            .resize(old_slots + fresh, EntityMeta::fresh(self.first_generation));
        // Slots are named as `entity_at` named them, before the table grew.
        let slot =
            |pending: &[u32], position: usize| slot_at(pending, old_slots as u64, position as u64) as u32;
        for (position, _) in claimed.iter().enumerate().filter(|&(_, &is)| is) {
            let index = slot(&self.pending, position);
            let meta = &mut self.meta[index as usize];
            let entity = Entity::new(index, meta.generation);
            meta.place(index, place(entity));
            self.live += 1;
        }
        // The free list keeps its unclaimed slots in their order; fresh slots no lane
        // claimed (holes) become free slots beneath them, the lowest index reused first.
        let from_free = claimed.len().min(free);
        let unclaimed = |positions: std::ops::Range<usize>| positions.rev().filter(|&p| !claimed[p]);
        let top: Vec<u32> = unclaimed(0..from_free).map(|p| slot(&self.pending, p)).collect();
        let holes: Vec<u32> = unclaimed(free..claimed.len())
            .map(|p| slot(&self.pending, p))
            .collect();
        self.pending.truncate(free - from_free);
        self.pending.extend(holes);
        self.pending.extend(top);
        for counter in &mut self.reserved {
            counter.store(0, Ordering::Relaxed);
        }
        self.layout.resize(&counts);
        self.dirty.store(false, Ordering::Relaxed);
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
        // No reservation is outstanding, so changing `pending` moves no reserved position.
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
            let generation = self.first_generation;
            self.meta.push(EntityMeta {
                index,
                generation,
                location,
            });
            Entity::new(index, generation)
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
        // Retire the slot rather than wrap its generation count (into the world tag, or to
        // zero): a stale handle must never match.
        let next = meta.generation.get().wrapping_add(1);
        if next & GENERATION_MASK != 0
            && let Some(next) = NonZeroU32::new(next)
        {
            meta.generation = next;
            // No reservation is outstanding, so no reserved position moves.
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

/// The slot at `position` of the sequence that the free list `pending` and a table of
/// `slots` slots define (see the module docs): the free list from its top, then fresh
/// indices past the table.
fn slot_at(pending: &[u32], slots: u64, position: u64) -> u64 {
    let free = pending.len() as u64;
    if position < free {
        u64::from(pending[(free - 1 - position) as usize])
    } else {
        slots + (position - free)
    }
}

/// The ids handed out by [`Entities::reserve_entities`].
#[derive(Debug)]
pub struct ReserveEntities<'a> {
    entities: &'a Entities,
    lane: u32,
    numbers: std::ops::Range<u64>,
}

impl Iterator for ReserveEntities<'_> {
    type Item = Entity;

    fn next(&mut self) -> Option<Entity> {
        let number = self.numbers.next()?;
        let position = self.entities.layout.position(self.lane, number);
        Some(self.entities.entity_at(position))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.numbers.size_hint()
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

    /// Reserves `counts[k]` ids in lane `k`, lanes taken in `order`, and flushes; returns
    /// each lane's ids and the order the flush placed them in.
    fn reserve_lanes(
        entities: &mut Entities,
        counts: &[u32],
        order: &[usize],
    ) -> (Vec<Vec<Entity>>, Vec<Entity>) {
        let mut ids = vec![Vec::new(); counts.len()];
        for &k in order {
            ids[k] = (0..counts[k])
                .map(|_| entities.reserve_in_lane(k as u32))
                .collect();
        }
        let mut placed = Vec::new();
        entities.flush(|e| {
            placed.push(e);
            placed_at()
        });
        (ids, placed)
    }

    fn placed_at() -> EntityLocation {
        placed()
    }

    #[test]
    fn lanes_hand_out_the_same_ids_in_any_order() {
        let setup = || {
            let mut entities = Entities::new();
            for _ in 0..3 {
                entities.add_lane();
            }
            let live: Vec<_> = (0..10).map(|_| entities.alloc(placed())).collect();
            for &e in live.iter().step_by(2) {
                entities.free(e);
            }
            entities
        };
        let frames = [[1, 4, 0, 2], [0, 6, 3, 1], [2, 6, 3, 0], [0, 0, 0, 5]];
        let (mut forward, mut backward) = (setup(), setup());
        for counts in frames {
            let (ids_f, placed_f) = reserve_lanes(&mut forward, &counts, &[0, 1, 2, 3]);
            let (ids_b, placed_b) = reserve_lanes(&mut backward, &counts, &[3, 2, 1, 0]);
            assert_eq!(ids_f, ids_b, "each lane's ids depend on the lane alone");
            assert_eq!(placed_f, placed_b, "the flush places them in one order");
            let all: HashSet<_> = ids_f.iter().flatten().copied().collect();
            assert_eq!(all.len(), counts.iter().sum::<u32>() as usize, "ids are distinct");
            assert!(
                all.iter().all(|&e| forward.get(e).is_some()),
                "flushed ids are live"
            );
            assert_eq!(forward.pending, backward.pending);
            assert_eq!(forward.len(), backward.len());
        }
        // Holes went back on the free list: every slot is live or free, none lost.
        assert_eq!(forward.len() as usize + forward.pending.len(), forward.slots());
    }

    #[test]
    fn exhausted_generation_retires_the_slot() {
        // For the largest tag, the bump would wrap the whole word to zero; for a smaller one,
        // carry into the tag. Either way the slot retires.
        for tag in [0, 7, u8::MAX] {
            let mut entities = Entities::with_tag(tag);
            let e = entities.alloc(placed());
            let last = NonZeroU32::new((u32::from(tag) << GENERATION_BITS) | GENERATION_MASK).unwrap();
            entities.meta[0].generation = last;
            let stale = Entity::new(0, last);
            assert_eq!(stale.world_tag(), tag);
            assert_eq!(stale.generation(), GENERATION_MASK);
            entities.free(stale);
            let next = entities.alloc(placed());
            assert_ne!(next.index(), e.index(), "slot 0 is retired, never reused");
            assert_eq!(next.world_tag(), tag);
            assert!(entities.get(stale).is_none());
        }
    }
}
