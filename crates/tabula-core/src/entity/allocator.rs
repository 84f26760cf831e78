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
//! Lanes are owned: [`add_lane`](Entities::add_lane) hands out a [`LaneTicket`], and dropping
//! it (a schedule leaving the world, a system removed) releases the lane. Released lanes are
//! taken back at the next `&mut` call that can move positions (a flush, or adding a lane) and
//! reused, lowest index first, so a world's lane count is the most lanes ever owned at once,
//! not the number ever handed out, and the same sequence of adds and releases gives the same
//! lanes.
//!
//! Slot indices stop at a limit (`u32::MAX - 1` slots, lower for tests). A reservation past it
//! gets a placeholder id that is never live (its index is `u32::MAX`), and the flush makes no
//! entity for it; `alloc` refuses past it. So running out of index space is an error the
//! caller sees, never a corrupted allocator: freeing entities makes room again.
//!
//! A slot's generation is bumped when it is freed. A slot whose generation would overflow is
//! retired instead of reused, so a stale handle can never match a later occupant.

use std::num::NonZeroU32;

use super::lanes::LaneLayout;
use super::{Entity, GENERATION_BITS, GENERATION_MASK, first_generation};
use crate::location::ArchetypeId;
use crate::location::EntityLocation;
use crate::sync::{Arc, AtomicBool, AtomicU64, Mutex, Ordering};
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
/// it (`alloc` and the reservations refuse `u32::MAX`), so it is also the index of the
/// placeholder a reservation past the limit gets.
const UNPLACED: u32 = u32::MAX;

/// The most slots an allocator has: every index below `u32::MAX`.
pub(crate) const MAX_SLOTS: u32 = u32::MAX;

/// The bit of a lane's counter that says its owner began a run since the last flush (see
/// [`Entities::begin_lane_run`]); the bits below it count reservations.
const RAN: u64 = 1 << 63;

/// The indices of lanes whose [`LaneTicket`] was dropped, waiting to be taken back.
type Released = Arc<Mutex<Vec<u32>>>;

/// Ownership of one reservation lane of an [`Entities`]: dropping it releases the lane,
/// which the allocator takes back and reuses.
#[derive(Debug)]
pub(crate) struct LaneTicket {
    index: u32,
    released: Released,
}

impl LaneTicket {
    /// The lane's index.
    pub(crate) fn index(&self) -> u32 {
        self.index
    }
}

impl Drop for LaneTicket {
    fn drop(&mut self) {
        // A poisoned lock only means another release panicked mid-push; the list is a plain
        // `Vec` of indices and stays valid.
        let mut released = self
            .released
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        released.push(self.index);
    }
}

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
    /// Per lane, how many ids it reserved since the last flush, with the [`RAN`] bit.
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
    /// Lanes whose tickets were dropped since they were last taken back.
    released: Released,
    /// Lanes taken back and not handed out again.
    free_lanes: Vec<u32>,
    /// No slot index reaches this; [`MAX_SLOTS`] but in tests.
    slot_limit: u32,
    /// Positions every flush so far went through (claimed or holes): what flushing costs.
    flushed_positions: u64,
    /// Lanes a loaded save had owners for, held until new owners take them (the highest
    /// index first in the list, so `pop` hands out the lowest).
    restored: Vec<LaneTicket>,
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
            released: Released::default(),
            free_lanes: Vec::new(),
            slot_limit: MAX_SLOTS,
            flushed_positions: 0,
            restored: Vec::new(),
        }
    }

    /// The world tag every handle of this allocator carries.
    pub(crate) fn tag(&self) -> u8 {
        (self.first_generation.get() >> GENERATION_BITS) as u8
    }

    /// Adds a reservation lane: ids reserved through it depend only on the allocator's
    /// state at the last flush and on the lane's own earlier reservations. A released lane
    /// is reused when there is one (the lowest index first), so lanes do not accumulate as
    /// owners come and go. Reservations must have been flushed first (the layout changes).
    pub(crate) fn add_lane(&mut self) -> LaneTicket {
        assert!(!self.needs_flush(), "add_lane with unflushed reservations");
        self.take_back_lanes();
        // A lane whose owner a loaded save recorded goes to the first new owner, lowest
        // first: a schedule built as the saving one was asks for lanes in the same order.
        if let Some(ticket) = self.restored.pop() {
            return ticket;
        }
        let index = match self.free_lanes.iter().enumerate().min_by_key(|&(_, &lane)| lane) {
            Some((at, _)) => self.free_lanes.swap_remove(at),
            None => {
                self.reserved.push(AtomicU64::new(0));
                self.layout.add_lane()
            }
        };
        LaneTicket {
            index,
            released: Arc::clone(&self.released),
        }
    }

    /// Takes back the lanes whose tickets were dropped: they wait in `free_lanes` to be
    /// handed out again, their blocks halving at every flush meanwhile, so a schedule that
    /// comes back soon (one schedule alternating between worlds) finds blocks that still fit
    /// its systems, while an abandoned lane's block soon costs nothing. Only with no
    /// reservation outstanding.
    fn take_back_lanes(&mut self) {
        let released = std::mem::take(
            &mut *self
                .released
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        );
        for lane in released {
            let counter = &self.reserved[lane as usize];
            debug_assert_eq!(
                counter.load(Ordering::Relaxed) & !RAN,
                0,
                "released lane {lane} was not flushed"
            );
            counter.store(0, Ordering::Relaxed);
            self.free_lanes.push(lane);
        }
    }

    /// How many lanes exist, the shared one included (owned, or released and waiting).
    pub(crate) fn lane_count(&self) -> usize {
        self.reserved.len()
    }

    /// Records that the owner of lane `lane` began a run (a system's run, for a schedule):
    /// at the next flush the lane's block is sized to what it used since, even if that is
    /// nothing, so the block of an owner that stopped reserving shrinks run by run.
    #[inline]
    pub(crate) fn begin_lane_run(&self, lane: u32) {
        self.reserved[lane as usize].fetch_or(RAN, Ordering::Relaxed);
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
        // The count cannot reach the `RAN` bit: that takes 2^63 reservations between flushes,
        // centuries of them.
        let first = counter.fetch_add(count, Ordering::Relaxed) & !RAN;
        if first == 0 && count > 0 {
            self.dirty.store(true, Ordering::Relaxed);
        }
        ReserveEntities {
            entities: self,
            lane,
            numbers: first..first + count,
        }
    }

    /// The id at position `position` of the current sequence (see the module docs), or the
    /// placeholder (index `u32::MAX`, never live) when the position's slot would be past the
    /// slot limit: the flush makes no entity for it.
    fn entity_at(&self, position: u64) -> Entity {
        let index = slot_at(&self.pending, self.meta.len() as u64, position);
        let Some(index) = u32::try_from(index).ok().filter(|&i| i < self.slot_limit) else {
            exhausted(self.slot_limit);
            return Entity::new(UNPLACED, self.first_generation);
        };
        // A fresh slot (past the table) starts at generation 1.
        let generation = self
            .meta
            .get(index as usize)
            .map_or(self.first_generation, |meta| meta.generation);
        Entity::new(index, generation)
    }

    /// True when `entity` is the placeholder a reservation past the slot limit got.
    pub(crate) fn is_exhausted_placeholder(&self, entity: Entity) -> bool {
        entity.index() == UNPLACED && entity.world_tag() == self.tag()
    }

    /// True when [`alloc`](Self::alloc) would succeed: a freed slot waits, or the table is
    /// below the slot limit.
    #[inline]
    pub(crate) fn has_room(&self) -> bool {
        !self.pending.is_empty() || self.meta.len() < self.slot_limit as usize
    }

    /// How many positions every flush so far went through, claimed ones and holes: a
    /// flush's cost, which stays near the number of ids reserved while each lane's
    /// reservations fit its block (and grows with the number of lanes when they spill past).
    pub(crate) fn flushed_positions(&self) -> u64 {
        self.flushed_positions
    }

    /// The slot limit (see the module docs).
    pub(crate) fn slot_limit(&self) -> u32 {
        self.slot_limit
    }

    /// Lowers (or restores) the slot limit, for tests that drive a world to it ([`MAX_SLOTS`]
    /// is the most a `u32` holds). Slots past a lowered limit that already exist stay usable.
    pub(crate) fn set_slot_limit(&mut self, limit: u32) {
        assert!(!self.needs_flush(), "set_slot_limit with unflushed reservations");
        self.slot_limit = limit;
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
        let words: Vec<u64> = self.reserved.iter().map(|c| c.load(Ordering::Relaxed)).collect();
        let counts: Vec<u64> = words.iter().map(|&word| word & !RAN).collect();
        let mut claimed = self.layout.claimed(&counts);
        let free = self.pending.len();
        let old_slots = self.meta.len();
        // Positions whose slot would pass the limit got the placeholder: no entity, no slot.
        let room = (self.slot_limit as usize).saturating_sub(old_slots);
        claimed.truncate(free + room);
        self.flushed_positions += claimed.len() as u64;
        let fresh = claimed.len().saturating_sub(free);
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
        // A lane was active if it reserved or its owner began a run; the shared lane has no
        // owner, and is active when it reserved. A lane with no owner decays at every flush.
        let free_lanes = &self.free_lanes;
        self.layout
            .resize(&counts, |k| words[k] != 0 || free_lanes.contains(&(k as u32)));
        self.dirty.store(false, Ordering::Relaxed);
        self.take_back_lanes();
    }

    /// Makes room for `additional` more allocations without growing the slot table in
    /// between; freed slots waiting for reuse count towards it.
    pub(crate) fn reserve(&mut self, additional: usize) {
        self.meta.reserve(additional.saturating_sub(self.pending.len()));
    }

    /// Allocates one id on the `&mut` path. Reservations must have been flushed first.
    ///
    /// # Panics
    /// When no slot is left (see [`has_room`](Self::has_room)), before anything changes.
    #[inline]
    pub(crate) fn alloc(&mut self, location: EntityLocation) -> Entity {
        // Checked in release builds too: a fresh slot handed out now would be a position
        // some reservation already holds.
        assert!(!self.needs_flush(), "alloc with unflushed reservations");
        // No reservation is outstanding, so changing `pending` moves no reserved position.
        let entity = if let Some(index) = self.pending.pop() {
            let meta = &mut self.meta[index as usize];
            meta.place(index, location);
            Entity::new(index, meta.generation)
        } else {
            // Checked before anything changes, so a caught panic leaves the count exact.
            if self.meta.len() >= self.slot_limit as usize {
                exhausted_panic(self.slot_limit);
            }
            let index = self.meta.len() as u32;
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
        // Checked in release builds too: pushing to the free list would move reserved
        // positions.
        assert!(!self.needs_flush(), "free with unflushed reservations");
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
        assert!(!self.needs_flush(), "clear with unflushed reservations");
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

/// What a save records of one reservation lane (see `crate::save`).
#[cfg(feature = "serde")]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct LaneState {
    /// The lane's block: how many positions its reservations take before the overflow.
    pub(crate) block: u64,
    /// Its owner began a run since the last flush (the lane counts as active at the next).
    pub(crate) ran: bool,
    /// Who holds the lane.
    pub(crate) holder: LaneHolder,
}

/// Who holds a reservation lane.
#[cfg(feature = "serde")]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LaneHolder {
    /// Lane 0, `World::reserve_entity`'s.
    Shared,
    /// A live [`LaneTicket`] (a schedule's system).
    Owned,
    /// Its ticket was dropped; the allocator takes it back at its next flush or lane add.
    Released,
    /// Taken back, waiting to be handed out again.
    Free,
}

/// What a save records of an [`Entities`] with no reservation outstanding: everything the
/// ids it hands out next depend on.
#[cfg(feature = "serde")]
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct AllocatorState {
    /// Per slot, its generation word (world tag included): a live or free slot's current
    /// one, a retired slot's last.
    pub(crate) generations: Vec<u32>,
    /// The free list, the next slot to reuse last.
    pub(crate) free: Vec<u32>,
    /// Every lane, the shared one first.
    pub(crate) lanes: Vec<LaneState>,
    pub(crate) slot_limit: u32,
    pub(crate) flushed_positions: u64,
}

#[cfg(feature = "serde")]
impl Entities {
    /// The allocator's state for a save; `None` while reservations are outstanding (they
    /// are made into entities by the next flush, which a save cannot record).
    pub(crate) fn saved_state(&self) -> Option<AllocatorState> {
        if self.dirty.load(Ordering::Relaxed) {
            return None;
        }
        let released = self
            .released
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        let lanes = (self.reserved.iter().enumerate())
            .map(|(k, counter)| LaneState {
                block: self.layout.block(k),
                ran: counter.load(Ordering::Relaxed) & RAN != 0,
                holder: if k == SHARED_LANE as usize {
                    LaneHolder::Shared
                } else if released.contains(&(k as u32)) {
                    LaneHolder::Released
                } else if self.free_lanes.contains(&(k as u32)) {
                    LaneHolder::Free
                } else {
                    LaneHolder::Owned
                },
            })
            .collect();
        Some(AllocatorState {
            generations: self.meta.iter().map(|meta| meta.generation.get()).collect(),
            free: self.pending.clone(),
            lanes,
            slot_limit: self.slot_limit,
            flushed_positions: self.flushed_positions,
        })
    }
}

#[cfg(feature = "serde")]
impl Entities {
    /// An allocator in the state `state` records, for world tag `tag`, whose live entities
    /// are `placed` (each at its location). Owned lanes are held until new owners ask for
    /// lanes ([`add_lane`](Self::add_lane) hands them out lowest first), released ones are
    /// taken back at the next flush, as in the saved allocator.
    ///
    /// The caller checked the state (`save/load.rs`): every generation word carries `tag`
    /// and a non-zero count; the free list and the placed entities name distinct slots
    /// below `generations.len()` (at most `MAX_SLOTS` of them), each placed entity with its
    /// slot's generation; the slots in neither are retired (their count is at its last);
    /// lane 0 is the shared one and no other is; blocks are bounded.
    pub(crate) fn restore(tag: u8, state: &AllocatorState, placed: &[(Entity, EntityLocation)]) -> Self {
        let mut entities = Self::with_tag(tag);
        entities.meta = (state.generations.iter())
            .map(|&word| EntityMeta::fresh(NonZeroU32::new(word).expect("checked: non-zero")))
            .collect();
        for &(entity, location) in placed {
            debug_assert_eq!(
                entities.meta[entity.index() as usize].generation,
                entity.generation
            );
            entities.meta[entity.index() as usize].place(entity.index(), location);
        }
        entities.live = u32::try_from(placed.len()).expect("checked: fewer entities than slots");
        entities.pending = state.free.clone();
        entities.slot_limit = state.slot_limit;
        entities.flushed_positions = state.flushed_positions;
        entities.layout = LaneLayout::from_blocks(state.lanes.iter().map(|lane| lane.block).collect());
        entities.reserved = (state.lanes.iter())
            .map(|lane| AtomicU64::new(if lane.ran { RAN } else { 0 }))
            .collect();
        let mut released = Vec::new();
        for (k, lane) in state.lanes.iter().enumerate().rev() {
            let index = k as u32;
            match lane.holder {
                LaneHolder::Shared => debug_assert_eq!(k, 0),
                LaneHolder::Owned => entities.restored.push(LaneTicket {
                    index,
                    released: Arc::clone(&entities.released),
                }),
                LaneHolder::Released => released.push(index),
                LaneHolder::Free => entities.free_lanes.push(index),
            }
        }
        *entities
            .released
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = released;
        entities
    }

    /// How many more entities can be allocated: free slots plus slots never used, up to the
    /// limit (a remapped load checks its entities fit before it allocates any).
    pub(crate) fn room(&self) -> usize {
        self.pending.len() + (self.slot_limit as usize).saturating_sub(self.meta.len())
    }

    /// Lets go of the lanes a loaded save held for owners that never came back: they are
    /// released, as if their owners had been dropped.
    pub(crate) fn release_restored_lanes(&mut self) {
        self.restored.clear();
    }
}

/// Reports a refused reservation or spawn through `tracing`: the index space is used up.
#[cold]
pub(crate) fn exhausted(limit: u32) {
    tracing::error!(
        slots = limit,
        "entity index space exhausted: every one of the world's {limit} entity slots is live or \
         retired; the spawn is refused. Despawn entities to free slots"
    );
}

/// [`exhausted`], as the panic of a spawn that has no way to return an error.
#[cold]
#[track_caller]
fn exhausted_panic(limit: u32) -> ! {
    exhausted(limit);
    panic!(
        "entity index space exhausted: every one of the world's {limit} entity slots is live or \
         retired, so the spawn is refused (the world is unchanged and stays usable). Despawn \
         entities to free slots, or use World::try_spawn to get an error instead of this panic"
    )
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
            // The tickets are kept: a dropped one releases its lane for the next add.
            let lanes: Vec<LaneTicket> = (0..3).map(|_| entities.add_lane()).collect();
            let live: Vec<_> = (0..10).map(|_| entities.alloc(placed())).collect();
            for &e in live.iter().step_by(2) {
                entities.free(e);
            }
            (entities, lanes)
        };
        let frames = [[1, 4, 0, 2], [0, 6, 3, 1], [2, 6, 3, 0], [0, 0, 0, 5]];
        let ((mut forward, _lanes_f), (mut backward, _lanes_b)) = (setup(), setup());
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
    fn released_lanes_are_reused_lowest_first_and_keep_a_decaying_block() {
        let mut entities = Entities::new();
        let lanes: Vec<LaneTicket> = (0..3).map(|_| entities.add_lane()).collect();
        assert_eq!(lanes.iter().map(LaneTicket::index).collect::<Vec<_>>(), [1, 2, 3]);
        // Lane 2 reserves 8 and is flushed: its block holds 8.
        for _ in 0..8 {
            entities.reserve_in_lane(2);
        }
        entities.flush(|_| placed());
        let mut lanes = lanes.into_iter();
        let (one, two, three) = (
            lanes.next().unwrap(),
            lanes.next().unwrap(),
            lanes.next().unwrap(),
        );
        drop(three);
        drop(two);
        // Taken back lowest first, without a new lane; the block decays while unowned.
        let again = entities.add_lane();
        assert_eq!(again.index(), 2);
        assert_eq!(entities.lane_count(), 4);
        let three_again = entities.add_lane();
        assert_eq!(three_again.index(), 3);
        assert_eq!(entities.lane_count(), 4);
        // No flush came between: lane 2's block still holds 8, ahead of the overflow (where
        // the shared lane's first id, with no block, lands).
        assert!(entities.layout.position(2, 7) < entities.layout.position(SHARED_LANE, 0));
        drop(one);
        // A flush takes lane 1 back too (no add needed), and its counter starts clean.
        entities.reserve_in_lane(2);
        entities.flush(|_| placed());
        assert_eq!(entities.free_lanes, [1]);
        assert_eq!(entities.reserved[1].load(Ordering::Relaxed), 0);
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
