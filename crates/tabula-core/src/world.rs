//! The [`World`]: every entity, component and archetype of one simulation.
//!
//! Life cycle of an entity, as the world sees it:
//!
//! 1. `spawn(bundle)` allocates an id, finds the bundle's archetype through the cached edge
//!    from the empty archetype, and writes each field straight into its column.
//! 2. `insert` / `remove` move the entity's row along a cached edge to the archetype for its
//!    new component set (swap-remove at the source, append at the target).
//! 3. `despawn` frees the id (bumping its generation) and swap-removes the row.
//!
//! Every structural change records the new locations *before* any component's `Drop` runs, so
//! a panicking destructor unwinds through a consistent world.

mod batch;
mod by_id;
mod entity_ref;
pub(crate) mod hooks;
mod registration;
mod sparse;
mod spawn_batch;
mod staged;
mod structural;
mod tags;
mod unsafe_cell;
mod view;

use std::any::{TypeId, type_name};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::archetype::{Archetype, Archetypes};
use crate::bundle::{Bundle, Bundles};
use crate::change::RunTicks;
use crate::change::{CHECK_TICK_THRESHOLD, ComponentTicks, LastRun, Mut, Tick};
use crate::component::{Component, ComponentId, Components};
use crate::entity::{Entities, Entity, LaneTicket, ReserveEntities};
use crate::error::EntityError;
use crate::location::ArchetypeId;
use crate::location::EntityLocation;
use crate::removal::RemovalLogs;
use crate::resource::Resources;
use crate::storage::drop_each;

pub use entity_ref::{EntityMut, EntityRef};
pub use hooks::{HookContext, HookKind, HookWorld};
pub use registration::{ComponentRegistration, RequiredComponentError};
pub use spawn_batch::SpawnBatch;
pub(crate) use staged::StagedRow;
pub use unsafe_cell::UnsafeWorldCell;
pub use view::{
    MultiView, MultiViewMut, ReadOnlyViewData, View, ViewColumn, ViewData, ViewMut, ViewSparse, ViewTerm,
};

/// The change tick through exclusive access: no atomic operation needed.
#[inline]
fn tick_now(change_tick: &mut AtomicU64) -> Tick {
    // A tick is the low half of the clock.
    Tick::new(*change_tick.get_mut() as u32)
}

/// Owns all entities and their components, stored by archetype.
///
/// ```
/// use tabula::World;
///
/// #[derive(Debug, PartialEq)]
/// struct Health(u32);
///
/// let mut world = World::new();
/// let e = world.spawn((Health(10), "player"));
/// world.get_mut::<Health>(e)?.0 -= 3;
/// assert_eq!(world.get::<Health>(e)?, &Health(7));
/// world.despawn(e)?;
/// assert!(world.get::<Health>(e).is_err());
/// # Ok::<(), tabula::EntityError>(())
/// ```
pub struct World {
    entities: Entities,
    components: Components,
    archetypes: Archetypes,
    bundles: Bundles,
    resources: Resources,
    /// Which entities lost a tracked component ([`crate::removal`]).
    removals: RemovalLogs,
    /// The values of sparse-set components, outside the archetypes (`storage/sparse.rs`).
    pub(crate) sparse: crate::storage::SparseSets,
    id: WorldId,
    /// The world's hold on its tag (`entities` carries the tag itself), given back on drop.
    tag: tags::TagLease,
    /// The change clock: its low half is the tick writes are stamped with now. 64 bits, so it
    /// never wraps (see [`LastRun`]); atomic so that a read-only query can start a run
    /// (advance the clock) through `&World`.
    change_tick: AtomicU64,
    last_change_tick: Tick,
    /// The clock at which old ticks are next clamped (see [`crate::change`]):
    /// [`CHECK_TICK_THRESHOLD`] past the last clamp. Stored as the deadline rather than the
    /// last clamp, so that the check every structural operation makes is one comparison
    /// (callgrind: two instructions fewer per insert or remove).
    next_check_tick: u64,
    /// Component hooks and the commands they recorded (see [`hooks`]).
    pub(crate) hooks: hooks::Hooks,
    /// Observers by event, and the triggers under way (see [`crate::observer`]).
    pub(crate) observers: crate::observer::Observers,
    /// The components saved and loaded, by stable name (see [`crate::save`]).
    #[cfg(feature = "serde")]
    pub(crate) serde: crate::save::SerdeRegistry,
}

/// Identifies one [`World`], so state built for one world is never used with another.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct WorldId(u64);

impl WorldId {
    fn next() -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        Self(NEXT.fetch_add(1, Ordering::Relaxed))
    }
}

/// A reservation lane of one [`World`]: ids reserved through it (with
/// [`Commands::new_in_lane`](crate::Commands::new_in_lane)) depend only on the world's state
/// at its last flush and on the lane's own earlier reservations, never on what other threads
/// reserve at the same time. From [`World::add_entity_lane`].
///
/// The lane is owned: dropping this value releases it, and the world reuses released lanes
/// (lowest index first) instead of adding new ones, so lanes do not pile up as systems and
/// schedules come and go. A schedule holds one per command-recording system and world.
///
/// ```
/// let mut world = tabula::World::new();
/// let lane = world.add_entity_lane();
/// let index = lane.index();
/// drop(lane);
/// assert_eq!(world.add_entity_lane().index(), index, "a released lane is reused");
/// ```
#[derive(Debug)]
pub struct EntityLane {
    world: WorldId,
    ticket: LaneTicket,
}

impl EntityLane {
    /// The lane's index in its world's allocator (the shared lane is 0).
    pub fn index(&self) -> u32 {
        self.ticket.index()
    }

    /// The lane's index in `world`'s allocator.
    ///
    /// # Panics
    /// When the lane was made by another world.
    pub(crate) fn index_in(&self, world: &World) -> u32 {
        assert!(
            self.world == world.id,
            "entity lane {} of world {:?} used with world {:?}; lanes are per world: add one with \
             `World::add_entity_lane` on the world the commands are for",
            self.index(),
            self.world,
            world.id
        );
        self.index()
    }
}

impl Default for World {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for World {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("World")
            .field("entities", &self.len())
            .field("archetypes", &self.archetypes.len())
            .field("components", &self.components.len())
            .finish()
    }
}

/// The error for `entity` lacking a `T`. Built in place rather than by a (cold) call: a call
/// on the miss path clobbers the caller-saved registers, and a caller's lookup loop then keeps
/// its values on the stack and reloads them on every lookup (`View::get` in a loop: 1.63x →
/// 1.36x a plain `Vec` index).
#[inline(always)]
pub(crate) fn missing<T>(entity: Entity) -> EntityError {
    EntityError::MissingComponent {
        entity,
        component: type_name::<T>(),
    }
}

impl World {
    /// An empty world, with a tag no other live world has while 256 or fewer are alive
    /// (see [`tag`](Self::tag)).
    pub fn new() -> Self {
        Self::with_lease(tags::TagLease::any())
    }

    /// A world whose entity handles carry `tag` (see [`tag`](Self::tag)): to load saved
    /// entity ids into a world with the tag they were saved with, or to make a replay's worlds
    /// bit-identical to the recorded run whatever other worlds the process made first.
    ///
    /// ```
    /// use tabula::{EntityError, World};
    ///
    /// let mut a = World::with_tag(1);
    /// let mut b = World::with_tag(2);
    /// let e = a.spawn((1u8,));
    /// b.spawn((2u8,)); // the same slot and generation as `e`, in another world
    /// assert_eq!(b.get::<u8>(e), Err(EntityError::WrongWorld { entity: e, world: 2 }));
    /// assert_eq!(World::with_tag(1).spawn(()), e, "the same tag makes the same ids");
    /// ```
    pub fn with_tag(tag: u8) -> Self {
        Self::with_lease(tags::TagLease::pinned(tag))
    }

    fn with_lease(tag: tags::TagLease) -> Self {
        let components = Components::default();
        let id = WorldId::next();
        let mut world = Self {
            entities: Entities::with_tag(tag.tag()),
            tag,
            archetypes: Archetypes::new(&components),
            components,
            bundles: Bundles::default(),
            resources: Resources::default(),
            removals: RemovalLogs::default(),
            sparse: crate::storage::SparseSets::default(),
            id,
            change_tick: AtomicU64::new(1),
            last_change_tick: Tick::new(0),
            next_check_tick: 1 + u64::from(CHECK_TICK_THRESHOLD),
            hooks: hooks::Hooks::default(),
            observers: crate::observer::Observers::default(),
            #[cfg(feature = "serde")]
            serde: crate::save::SerdeRegistry::default(),
        };
        // Built-in registrations: the hierarchy's relationship hooks, and the observer
        // component's.
        crate::hierarchy::register(&mut world);
        crate::observer::register(&mut world);
        world
    }

    /// Creates an entity with the components of `bundle` and returns its id.
    ///
    /// ```
    /// let mut world = tabula::World::new();
    /// let e = world.spawn((1u8, 2.0f32));
    /// assert!(world.has::<u8>(e) && world.has::<f32>(e));
    /// ```
    ///
    /// The components' `on_add` and `on_insert` [hooks](crate::HookKind) run once the
    /// entity holds them all.
    ///
    /// # Panics
    /// When `B` lists a component type twice: a mistake in the calling code. Also when every
    /// entity slot is in use, leaving the world unchanged: [`try_spawn`](Self::try_spawn)
    /// returns that as an error.
    #[track_caller]
    pub fn spawn<B: Bundle>(&mut self, bundle: B) -> Entity {
        self.flush();
        let Some(edge) = self.spawn_edge::<B>() else {
            // `black_box` gives the sparse path a copy of the bundle of its own. Handed the
            // caller's, the optimiser built every bundle in memory before this branch, also
            // for the table path, instead of storing its fields straight into the columns:
            // a spawn of (Transform, Position, Rotation, Velocity) took 27 instructions more
            // than before sparse sets, 3 more with the copy (`simple_insert/tabula_spawn_loop`).
            return self.spawn_with_sparse(std::hint::black_box(bundle));
        };
        let (entity, hooked) = self.spawn_along(edge, bundle);
        if hooked {
            self.after_hooked_spawn(entity, edge);
        }
        entity
    }

    /// Runs the hooks of a spawn along `edge`, whose bundle has some, and applies their
    /// commands.
    #[cold]
    #[inline(never)]
    fn after_hooked_spawn(&mut self, entity: Entity, edge: usize) {
        self.run_inserted_hooks(entity, edge);
        self.apply_hook_commands();
    }

    /// As [`spawn`](Self::spawn), but returns [`EntityError::IndexSpaceExhausted`] instead of
    /// panicking when every entity slot (`u32::MAX - 1` of them) is live or retired. The
    /// world is then unchanged and stays usable: despawning frees slots again.
    ///
    /// ```
    /// let mut world = tabula::World::new();
    /// let e = world.try_spawn((1u8,))?;
    /// assert_eq!(world.get::<u8>(e), Ok(&1));
    /// # Ok::<(), tabula::EntityError>(())
    /// ```
    ///
    /// # Panics
    /// As [`spawn`](Self::spawn), for mistakes in the calling code.
    #[track_caller]
    pub fn try_spawn<B: Bundle>(&mut self, bundle: B) -> Result<Entity, EntityError> {
        self.flush();
        if !self.entities.has_room() {
            return Err(self.exhausted());
        }
        let Some(edge) = self.spawn_edge::<B>() else {
            // A copy of its own, as in `spawn`.
            return Ok(self.spawn_with_sparse(std::hint::black_box(bundle)));
        };
        let (entity, hooked) = self.spawn_along(edge, bundle);
        if hooked {
            self.after_hooked_spawn(entity, edge);
        }
        Ok(entity)
    }

    /// The error for a spawn refused because the index space is used up, reported through
    /// `tracing` too.
    #[cold]
    fn exhausted(&self) -> EntityError {
        let slots = self.entities.slot_limit();
        crate::entity::exhausted(slots);
        EntityError::IndexSpaceExhausted { slots }
    }

    /// Spawns an entity with no components (the same as `spawn(())`); add some later with
    /// [`insert`](Self::insert).
    ///
    /// ```
    /// let mut world = tabula::World::new();
    /// let e = world.spawn_empty();
    /// world.insert(e, (1u8,))?;
    /// assert_eq!(world.get::<u8>(e), Ok(&1));
    /// # Ok::<(), tabula::EntityError>(())
    /// ```
    pub fn spawn_empty(&mut self) -> Entity {
        self.spawn(())
    }

    /// Spawns one entity per item; returns the new ids lazily, and spawns whatever is left
    /// when dropped. Room is reserved once for the iterator's size hint.
    ///
    /// ```
    /// let mut world = tabula::World::new();
    /// let ids: Vec<_> = world.spawn_batch((0..100u32).map(|i| (i,))).collect();
    /// assert_eq!(world.len(), 100);
    /// assert_eq!(world.get::<u32>(ids[42]), Ok(&42));
    /// ```
    ///
    /// # Panics
    /// As [`spawn`](Self::spawn), for the item type; also when the iterator's size hint
    /// promises more items than a world has entity slots (`u32::MAX - 1`), as an endless
    /// `std::iter::repeat` does: give it a finite source (`.take(n)`).
    #[track_caller]
    pub fn spawn_batch<I>(&mut self, iter: I) -> SpawnBatch<'_, I::IntoIter>
    where
        I: IntoIterator,
        I::Item: Bundle,
    {
        SpawnBatch::new(self, iter.into_iter())
    }

    /// The edge from the empty archetype that a spawn of `B` follows, or `None` when `B` has
    /// a sparse field (such a bundle has no edges; see `Archetypes::spawn_edge`).
    #[track_caller]
    fn spawn_edge<B: Bundle>(&mut self) -> Option<usize> {
        let bundle = self.bundles.id_of::<B>(&mut self.components);
        self.archetypes
            .spawn_edge(&self.components, &self.bundles, bundle)
    }

    /// Spawns `bundle` along a spawn edge of its own bundle type, without hooks; returns the
    /// entity and whether the edge's bundle has hooks to run now. Reservations are flushed.
    ///
    /// Always inlined: inside `spawn_batch`'s loop this lets the bundle's fields go straight
    /// from the source iterator into the columns instead of through a copy on the stack. The
    /// hook flag is read here, with the edge at hand (callgrind: 2 instructions per spawn
    /// fewer than reading it again after the spawn).
    #[inline(always)]
    fn spawn_along<B: Bundle>(&mut self, edge: usize, bundle: B) -> (Entity, bool) {
        let edge = &self.archetypes.insert_edges[edge];
        let hooked = edge.hooked;
        let archetype = &mut self.archetypes.archetypes.all_mut()[edge.target.index()];
        // Reserve first: the only step that can fail happens before anything is recorded.
        archetype.table.reserve(1);
        let row = archetype.table.len();
        let entity = self.entities.alloc(EntityLocation {
            archetype: edge.target,
            row: row as u32,
        });
        // SAFETY: `push_uninit` returns `row` (room was reserved); `edge.bundle_columns` are
        // the target's columns for `B`'s fields, distinct, and the row is filled right away
        // by `write_new`, which only moves values and cannot panic.
        unsafe {
            archetype.table.push_uninit(entity);
            bundle.write_new(
                &mut archetype.table,
                &edge.bundle_columns,
                row,
                tick_now(&mut self.change_tick),
            );
        }
        (entity, hooked)
    }

    /// Despawns an entity, dropping its components.
    ///
    /// Returns [`EntityError::NoSuchEntity`] for a dead or unknown id, so a double despawn is
    /// an error rather than a double free.
    ///
    /// The components' `on_despawn`, `on_replace` and `on_remove` [hooks](crate::HookKind)
    /// run first, with the entity whole.
    pub fn despawn(&mut self, entity: Entity) -> Result<(), EntityError> {
        self.flush();
        let location = self.location(entity)?;
        if self.sparse.any() {
            return self.despawn_with_sparse(entity);
        }
        if self.archetype_at(location).hooked {
            // The hooks see the entity whole, and their commands run before any of its
            // values is dropped, so a panicking `Drop` cannot leave them undone. They may
            // move rows (the entity's too) or despawn it, so the slot is looked up again below.
            self.run_despawn_hooks(entity);
            self.apply_hook_commands();
            // The hooks' commands may have made the world's first sparse set and put a
            // value of it on the entity.
            if self.sparse.any() {
                return self.free_with_sparse(entity);
            }
        }
        self.free_entity_and_row(entity)
    }

    /// The end of a despawn, once the hooks ran: frees `entity`'s id, logs its removals, and
    /// swap-removes its row, dropping the row's values.
    ///
    /// Always inlined, with the table's swap-remove: called out of line, `despawn` took 11
    /// instructions more per entity than before sparse sets (171 against 160, despawning
    /// 10,000 entities of two components in spawn order), 3 more inlined.
    #[inline(always)]
    fn free_entity_and_row(&mut self, entity: Entity) -> Result<(), EntityError> {
        let location = self.entities.free(entity).ok_or_else(|| self.not_found(entity))?;
        let archetype = &mut self.archetypes.archetypes.all_mut()[location.archetype.index()];
        if archetype.logs_removals {
            self.removals
                .record_archetype(&self.components, archetype, &[entity]);
        }
        let table = &mut archetype.table;
        let row = location.row as usize;
        if let Some(&moved) = table.entities().last().filter(|_| row + 1 < table.len()) {
            self.entities.set_location(moved, location);
        }
        // SAFETY: `row < len` because `location` was the entity's live location. The moved
        // entity's location was recorded above, before any `Drop` can run.
        unsafe { table.swap_remove_and_drop(row) };
        Ok(())
    }

    /// `despawn` in a world with sparse components: the despawn hooks of the entity's table
    /// and sparse components, then its sparse values, then its row.
    #[cold]
    #[inline(never)]
    fn despawn_with_sparse(&mut self, entity: Entity) -> Result<(), EntityError> {
        let location = self.location(entity)?;
        let held = self.sparse.held_by(entity);
        let hooked = (held.iter()).any(|&c| self.components.info(c).has_hooks(u8::MAX));
        if self.archetype_at(location).hooked || hooked {
            self.run_despawn_hooks(entity);
            self.apply_hook_commands();
        }
        self.free_with_sparse(entity)
    }

    /// The end of a despawn in a world with sparse sets, once the hooks ran: takes the
    /// entity's sparse values out, then frees its id and row.
    fn free_with_sparse(&mut self, entity: Entity) -> Result<(), EntityError> {
        if !self.contains(entity) {
            return Err(self.not_found(entity));
        }
        // The sparse values are taken out (not dropped) first and the id and row freed, so a
        // panicking `Drop` cannot leave the entity alive and missing values.
        // `taken` is dropped after the row, and also if a value of the row panics.
        let taken = self.take_sparse(entity);
        let freed = self.free_entity_and_row(entity);
        drop(taken);
        freed
    }

    /// Makes every reservation (see [`reserve_entity`](Self::reserve_entity)) a live, empty
    /// entity. Every structural method calls this first; call it yourself to make
    /// reservations visible to `&self` methods such as [`contains`](Self::contains).
    #[inline]
    pub fn flush(&mut self) {
        self.check_change_ticks();
        if self.entities.needs_flush() {
            self.flush_reserved();
        }
    }

    /// The slow half of [`flush`](Self::flush), kept out of line: every structural
    /// operation calls `flush`, and almost always there is nothing to do.
    #[cold]
    fn flush_reserved(&mut self) {
        let empty = &mut self.archetypes.archetypes.all_mut()[ArchetypeId::EMPTY.index()].table;
        self.entities.flush(|entity| {
            // SAFETY: the empty archetype's table has no columns, so a pushed row is
            // completely initialised by its entity id alone.
            let row = unsafe { empty.push_uninit(entity) };
            EntityLocation {
                archetype: ArchetypeId::EMPTY,
                row: row as u32,
            }
        });
    }

    /// Reserves an entity id through `&self`; safe from many threads at once. The entity
    /// becomes live (with no components) at the next structural operation or [`flush`](Self::flush);
    /// use [`spawn_at`](Self::spawn_at) to give it components.
    pub fn reserve_entity(&self) -> Entity {
        self.entities.reserve_entity()
    }

    /// Adds a reservation lane (see [`EntityLane`]), reusing a released one when there is
    /// one. Reservations are flushed first.
    ///
    /// Each lane costs a few bytes, and the allocator gives every lane a block of ids sized
    /// to what it reserved in its owner's recent runs, so the block of an owner that stopped
    /// spawning shrinks to nothing, and a released lane's block is emptied.
    pub fn add_entity_lane(&mut self) -> EntityLane {
        self.flush();
        EntityLane {
            world: self.id,
            ticket: self.entities.add_lane(),
        }
    }

    /// How many reservation lanes the world has, the shared one included: the most ever
    /// owned at once, plus one (released lanes are reused, not added again).
    ///
    /// ```
    /// let mut world = tabula::World::new();
    /// let lanes: Vec<_> = (0..3).map(|_| world.add_entity_lane()).collect();
    /// assert_eq!(world.entity_lane_count(), 4);
    /// drop(lanes);
    /// let again = world.add_entity_lane();
    /// assert_eq!(world.entity_lane_count(), 4, "released lanes are reused");
    /// ```
    pub fn entity_lane_count(&self) -> usize {
        self.entities.lane_count()
    }

    /// How many entity slots the world has made: every live entity's index is below this
    /// (an id reserved since the last flush may be past it until the flush makes its slot).
    /// Slots are reused after a despawn, so this follows the most entities alive and reserved
    /// at once, not the number ever spawned.
    pub fn entity_slots(&self) -> usize {
        self.entities.slots()
    }

    /// How many reservation positions every flush of this world went through, claimed
    /// ones and the holes between them: the flushes' cost, for tests and benches that check
    /// lanes' reservations stay within their blocks.
    #[doc(hidden)]
    pub fn entity_flushed_positions(&self) -> u64 {
        self.entities.flushed_positions()
    }

    /// Caps the number of entity slots at `limit` (at most `u32::MAX`, the default), so a
    /// test can drive a small world to the end of its index space. Spawns past it are
    /// refused as when the real index space runs out. Reservations are flushed first.
    #[doc(hidden)]
    pub fn set_entity_slot_limit(&mut self, limit: u32) {
        self.flush();
        self.entities.set_slot_limit(limit);
    }

    /// Reserves `count` entity ids at once; see [`reserve_entity`](Self::reserve_entity).
    pub fn reserve_entities(&self, count: u32) -> ReserveEntities<'_> {
        self.entities.reserve_entities(count)
    }

    /// Gives a reserved entity its components: the deferred half of a spawn.
    ///
    /// ```
    /// let mut world = tabula::World::new();
    /// let e = world.reserve_entity();
    /// assert!(!world.contains(e));
    /// world.spawn_at(e, ("ready",))?;
    /// assert_eq!(world.get::<&str>(e), Ok(&"ready"));
    /// # Ok::<(), tabula::EntityError>(())
    /// ```
    pub fn spawn_at<B: Bundle>(&mut self, entity: Entity, bundle: B) -> Result<(), EntityError> {
        self.flush();
        if self.entities.is_exhausted_placeholder(entity) {
            return Err(EntityError::IndexSpaceExhausted {
                slots: self.entities.slot_limit(),
            });
        }
        let location = self.location(entity)?;
        if location.archetype != ArchetypeId::EMPTY
            || (self.sparse.any() && !self.sparse.held_by(entity).is_empty())
        {
            return Err(EntityError::AlreadySpawned(entity));
        }
        self.insert(entity, bundle)
    }

    /// This world's tag, carried by every entity handle it makes
    /// ([`Entity::world_tag`]): a handle with another tag is refused with
    /// [`EntityError::WrongWorld`] by every method that takes an entity, instead of reaching
    /// whatever lives at its index here.
    ///
    /// While 256 or fewer worlds are alive, no two of them share a tag: a new world takes
    /// one that no live world holds (a dropped world's tag is taken again, the one dropped
    /// longest ago first), so a handle from any live world is refused by every other. The
    /// same sequence of world creations and drops gives the same tags (and ids) on every
    /// run, so replays reproduce. Past 256 live worlds, a new world shares the tag held by
    /// the fewest, and `tracing` warns; handles of two worlds with one tag (those, or two
    /// made with [`with_tag`](Self::with_tag)) are then caught only when the slot is dead or
    /// its generation differs, as without tags.
    ///
    /// ```
    /// let first = tabula::World::new();
    /// let second = tabula::World::new();
    /// assert_ne!(first.tag(), second.tag());
    /// let tag = second.tag();
    /// drop(second);
    /// let third = tabula::World::new();
    /// assert_ne!(third.tag(), first.tag(), "never a live world's tag");
    /// # let _ = tag;
    /// ```
    pub fn tag(&self) -> u8 {
        self.tag.tag()
    }

    /// The error for `entity` not being alive here: [`EntityError::WrongWorld`] when another
    /// world made it. Inline and call-free, as [`missing`]: a lookup loop keeps its values
    /// in registers.
    #[inline(always)]
    fn not_found(&self, entity: Entity) -> EntityError {
        EntityError::not_found(entity, self.tag())
    }

    /// Where a live entity's row is.
    #[inline]
    pub(crate) fn location(&self, entity: Entity) -> Result<EntityLocation, EntityError> {
        self.entities.get(entity).ok_or_else(|| self.not_found(entity))
    }

    /// True when `entity` is alive (reservations count after a flush).
    #[inline]
    pub fn contains(&self, entity: Entity) -> bool {
        self.entities.get(entity).is_some()
    }

    /// True when `entity` is alive and has component `T`.
    #[inline]
    pub fn has<T: Component>(&self, entity: Entity) -> bool {
        self.entities.get(entity).is_some_and(|location| {
            self.archetype_at(location).has::<T>() || (self.sparse.any() && self.sparse_has::<T>(entity))
        })
    }

    /// A shared reference to `entity`'s `T`.
    #[inline]
    pub fn get<T: Component>(&self, entity: Entity) -> Result<&T, EntityError> {
        let location = self.location(entity)?;
        self.get_at(entity, location)
    }

    /// The archetype that a live entity's `location` names, without a bounds check.
    #[inline]
    pub(crate) fn archetype_at(&self, location: EntityLocation) -> &Archetype {
        // SAFETY: `Entities` only hands out locations of live entities, and the world records
        // only locations in existing archetypes, which are never removed.
        unsafe {
            self.archetypes
                .archetypes
                .all()
                .get_unchecked(location.archetype.index())
        }
    }

    /// `entity`'s `T`, given the entity's current `location` (as [`location`](Self::location)
    /// returns it; the row is trusted).
    #[inline]
    pub(crate) fn get_at<T: Component>(
        &self,
        entity: Entity,
        location: EntityLocation,
    ) -> Result<&T, EntityError> {
        let archetype = self.archetype_at(location);
        // The sparse path yields an array and a `u32` row as the table path does, so that
        // both meet before the address is formed (meeting at a finished `&T` cost a lookup 2
        // instructions more, of 25; `random_get/tabula`, callgrind).
        let (values, row) = match archetype.values_of_type(TypeId::of::<T>()) {
            Some(values) => (values, location.row),
            None if self.sparse.any() => self
                .sparse_values_of::<T>(entity)
                .ok_or_else(|| missing::<T>(entity))?,
            None => return Err(missing::<T>(entity)),
        };
        // SAFETY: `values_of_type` returns the current value array of the column found by
        // `T`'s `TypeId` (the table refreshes its slot pointers whenever its block moves), so
        // it stores `T`, and `location.row` is a live row (locations are kept exact);
        // `sparse_values_of` returns the array of `T`'s set and a live row in it. So the
        // typed offset stays inside an array of `T`s; `&self` rules out any `&mut` to it.
        Ok(unsafe { &*values.cast::<T>().add(row as usize) })
    }

    /// Mutable access to `entity`'s `T`; writing through it marks the component changed.
    ///
    /// # Errors
    /// [`EntityError::NoSuchEntity`] and [`EntityError::MissingComponent`] as for
    /// [`get`](Self::get), and [`EntityError::ImmutableComponent`] for a component registered
    /// as [immutable](crate::ComponentRegistration::immutable).
    #[inline]
    pub fn get_mut<T: Component>(&mut self, entity: Entity) -> Result<Mut<'_, T>, EntityError> {
        self.get_mut_checked::<T, true>(entity)
    }

    /// [`get_mut`](Self::get_mut) without the immutability check, for the module that owns
    /// an immutable component.
    #[inline]
    pub(crate) fn get_mut_raw<T: Component>(&mut self, entity: Entity) -> Result<Mut<'_, T>, EntityError> {
        self.get_mut_checked::<T, false>(entity)
    }

    /// [`get_mut`](Self::get_mut), refusing immutable components when `CHECK` says so.
    #[inline(always)]
    fn get_mut_checked<T: Component, const CHECK: bool>(
        &mut self,
        entity: Entity,
    ) -> Result<Mut<'_, T>, EntityError> {
        let location = self.location(entity)?;
        let (last_run, this_run) = (self.last_change_tick, tick_now(&mut self.change_tick));
        // Shared access to the table is enough (the values are written through the column's
        // own pointers), and keeps the archetype shape, so query run plans stay valid.
        let archetype = self.archetype_at(location);
        let Some(column) = archetype.column_of_type(TypeId::of::<T>()) else {
            if self.sparse.any() {
                let run = RunTicks { last_run, this_run };
                return self
                    .sparse_get_mut::<T>(entity, run, CHECK)
                    .unwrap_or_else(|| Err(missing::<T>(entity)));
            }
            return Err(missing::<T>(entity));
        };
        // One test of an (almost always) empty list where no component is immutable.
        if CHECK && archetype.is_immutable(archetype.component_ids()[column]) {
            return Err(EntityError::ImmutableComponent {
                entity,
                component: type_name::<T>(),
            });
        }
        let column = archetype.table.column(column);
        let (row, ticks) = (location.row as usize, column.ticks_base());
        // SAFETY: the column stores `T` (found by its `TypeId`) and `row` is live; `&mut self`
        // makes these the only references into the column's values and ticks; the value and
        // the `changed` tick are disjoint (value buffer, one field of the row's tick pair,
        // read and pointed at without a reference to the pair).
        unsafe {
            Ok(Mut::new(
                &mut *column.ptr(row).cast::<T>(),
                ComponentTicks::added_at(ticks, row),
                &mut *ComponentTicks::changed_at(ticks, row),
                column.changed_floor(this_run),
                RunTicks { last_run, this_run },
            ))
        }
    }

    /// A read-only view of one entity.
    pub fn entity(&self, entity: Entity) -> Result<EntityRef<'_>, EntityError> {
        let location = self.location(entity)?;
        Ok(EntityRef::new(self, entity, location))
    }

    /// A mutable view of one entity.
    pub fn entity_mut(&mut self, entity: Entity) -> Result<EntityMut<'_>, EntityError> {
        self.flush();
        self.location(entity)?;
        Ok(EntityMut::new(self, entity))
    }

    /// How many entities are alive.
    pub fn len(&self) -> u32 {
        self.entities.len()
    }

    /// True when no entity is alive.
    pub fn is_empty(&self) -> bool {
        self.entities.is_empty()
    }

    /// Despawns every entity. Archetypes and their edges are kept; old ids stay dead.
    ///
    /// Every entity's despawn [hooks](crate::HookKind) run first (archetype by archetype,
    /// in row order), with the world whole; the commands they record run once everything is
    /// gone, so entities they spawn are left.
    pub fn clear(&mut self) {
        self.flush();
        let hooked: Vec<Entity> = (self.archetypes.archetypes.all().iter())
            .filter(|a| a.hooked)
            .flat_map(|a| a.entities().iter().copied())
            .collect();
        let mut hooked = hooked;
        for (id, set) in self.sparse.iter() {
            if self.components.info(id).has_hooks(u8::MAX) {
                hooked.extend(set.entities().iter().copied());
            }
        }
        if self.sparse.any() {
            // An entity in a hooked archetype that holds a hooked sparse component too runs
            // its hooks once.
            let mut seen = std::collections::HashSet::new();
            hooked.retain(|&e| seen.insert(e));
        }
        for &entity in &hooked {
            self.run_despawn_hooks(entity);
        }
        // Hooks make no structural change, but may reserve ids: those are kept.
        self.flush();
        self.clear_storage();
        if !hooked.is_empty() {
            self.apply_hook_commands();
        }
    }

    /// Despawns every entity, without hooks.
    fn clear_storage(&mut self) {
        for archetype in self.archetypes.archetypes.all() {
            if archetype.logs_removals {
                self.removals
                    .record_archetype(&self.components, archetype, archetype.entities());
            }
        }
        for (id, set) in self.sparse.iter() {
            if self.components.info(id).logs_removals() {
                self.removals.record(&[id], set.entities());
            }
        }
        self.entities.clear();
        // Detach every sparse set's and table's rows first so the world is empty and
        // consistent before any component's `Drop` runs; a panicking drop then cannot leave
        // rows or values that belong to freed ids, and `drop_each` still drops every other value.
        let sparse_detached: Vec<usize> = self.sparse.iter_mut().map(|set| set.detach_rows()).collect();
        let detached: Vec<usize> = self
            .archetypes
            .archetypes
            .all_mut()
            .iter_mut()
            .map(|a| a.table.detach_rows())
            .collect();
        let sets = self.sparse.iter_mut().zip(sparse_detached);
        let tables = self.archetypes.archetypes.all_mut().iter_mut().zip(detached);
        // One `drop_each` over both kinds of store (`Ok`: a sparse set, `Err`: a table), so a
        // panicking drop in one still lets every other be dropped.
        drop_each(sets.map(Ok).chain(tables.map(Err)), |store| match store {
            // SAFETY: `len` came from `detach_rows` on this set or table just above, and
            // each is visited once.
            Ok((set, len)) => unsafe { set.drop_detached(len) },
            // SAFETY: as above.
            Err((archetype, len)) => unsafe { archetype.table.drop_detached(len) },
        });
    }

    /// The change clock, the tick of the last `clear_trackers` and the clock of the next
    /// tick clamp, for a save.
    #[cfg(feature = "serde")]
    pub(crate) fn clock(&self) -> (u64, Tick, u64) {
        (
            self.change_tick.load(Ordering::Relaxed),
            self.last_change_tick,
            self.next_check_tick,
        )
    }

    /// Puts a loaded save's allocator, tag and change clock in place (`save/load.rs`, once
    /// everything is checked and the world is known empty).
    #[cfg(feature = "serde")]
    pub(crate) fn restore_for_load(&mut self, tag: u8, entities: Entities, clock: (u64, Tick, u64)) {
        self.tag = tags::TagLease::pinned(tag);
        self.entities = entities;
        *self.change_tick.get_mut() = clock.0;
        self.last_change_tick = clock.1;
        self.next_check_tick = clock.2;
    }

    /// The archetype of the sorted component set `components`, created when new.
    #[cfg(feature = "serde")]
    pub(crate) fn archetype_of_set(&mut self, components: &[ComponentId]) -> ArchetypeId {
        self.archetypes.get_or_create(&self.components, components)
    }

    /// The entity allocator, for `save/load.rs`.
    #[cfg(feature = "serde")]
    pub(crate) fn entities_for_load(&mut self) -> &mut Entities {
        &mut self.entities
    }

    /// The component registry, to record what a registration adds (a `Debug` or serde
    /// function); never to remove or reorder components.
    pub(crate) fn components_mut(&mut self) -> &mut Components {
        &mut self.components
    }

    /// Every archetype, including empty ones, for introspection.
    ///
    /// ```
    /// let mut world = tabula::World::new();
    /// world.spawn((1u8,));
    /// let shapes: Vec<(Vec<&str>, usize)> = world
    ///     .archetypes()
    ///     .filter(|a| !a.is_empty())
    ///     .map(|a| (a.component_names().collect(), a.len()))
    ///     .collect();
    /// assert_eq!(shapes, vec![(vec!["u8"], 1)]);
    /// ```
    pub fn archetypes(&self) -> impl ExactSizeIterator<Item = &Archetype> + '_ {
        self.archetypes.archetypes.all().iter()
    }

    /// One archetype by id.
    pub fn archetype(&self, id: ArchetypeId) -> Option<&Archetype> {
        self.archetypes.archetypes.all().get(id.index())
    }

    /// The entity allocator, e.g. to reserve ids for [`Commands`](crate::Commands).
    pub fn entities(&self) -> &Entities {
        &self.entities
    }

    /// The component registry.
    pub fn components(&self) -> &Components {
        &self.components
    }

    /// `T`'s component id, registering `T` on first use.
    #[inline]
    pub(crate) fn component_id_or_register<T: Component>(&mut self) -> ComponentId {
        self.components.register::<T>()
    }

    /// Every archetype in id order, for query matching and run plans (which read tables
    /// through it and never change them).
    #[inline]
    pub(crate) fn archetype_list(&self) -> &[Archetype] {
        self.archetypes.archetypes.all()
    }

    /// What cached queries compare to learn whether anything they match may have changed
    /// (see `ArchetypeList::match_epoch`).
    #[inline]
    pub(crate) fn match_epoch(&self) -> usize {
        self.archetypes.archetypes.match_epoch()
    }

    /// The archetypes, their index and edges, mutably (disabling components, `shrink`).
    #[inline]
    pub(crate) fn archetypes_mut(&mut self) -> &mut Archetypes {
        &mut self.archetypes
    }

    /// The archetype list's shape stamp (see [`ArchetypeList::shape`]): equal readings mean
    /// no table changed its length, block or columns in between.
    ///
    /// [`ArchetypeList::shape`]: crate::archetype::ArchetypeList::shape
    #[inline]
    pub(crate) fn archetype_shape(&self) -> u64 {
        self.archetypes.archetypes.shape()
    }

    /// The resource storage.
    #[inline]
    pub(crate) fn resources(&self) -> &Resources {
        &self.resources
    }

    /// The resource storage, mutably. Resources share nothing with the entity storage but
    /// their component ids, so no world invariant depends on what the caller does with it.
    #[inline]
    pub(crate) fn resources_mut(&mut self) -> &mut Resources {
        &mut self.resources
    }

    /// The removal logs of the tracked component types.
    #[inline]
    pub(crate) fn removal_logs(&self) -> &RemovalLogs {
        &self.removals
    }

    /// Starts logging removals of component `id`: the registry, every archetype holding it,
    /// every remove edge whose bundle holds it and the logs change together, so that no
    /// removal path can miss it. Calling it again is harmless.
    pub(crate) fn log_removals_of(&mut self, id: ComponentId) {
        if !self.components.info(id).logs_removals() {
            self.components.set_logs_removals(id);
            self.archetypes
                .component_flags_changed(&self.components, &self.bundles, id);
            self.removals.start(id);
        }
    }

    /// Ages the removal logs by one update (see [`update_events`](Self::update_events)).
    pub(crate) fn update_removal_logs(&mut self) {
        self.removals.update();
    }

    /// The current change tick: what writes are stamped with now.
    #[inline]
    pub fn change_tick(&self) -> Tick {
        Tick::new(self.change_tick.load(Ordering::Relaxed) as u32)
    }

    /// Advances the change tick and returns the tick of the run that starts now: writes made
    /// during that run are stamped with it, writes after it with later ticks.
    #[inline]
    pub fn increment_change_tick(&self) -> Tick {
        Tick::new(self.change_tick.fetch_add(1, Ordering::Relaxed) as u32)
    }

    /// Reserves `count` consecutive change ticks for runs that an executor starts later, and
    /// returns the first: the clock moves past them at once, and each run is then started
    /// at its own tick through [`UnsafeWorldCell::with_run_tick`] instead of advancing the
    /// shared clock itself. A schedule lays out the ticks of the systems between two
    /// exclusive nodes this way, in its order, so that parallel systems do not contend on
    /// the clock and every system gets the same tick whatever the thread count.
    ///
    /// ```
    /// use tabula::World;
    /// let world = World::new();
    /// let first = world.reserve_change_ticks(3);
    /// assert_eq!(u64::from(world.change_tick().get()), first + 3);
    /// ```
    #[inline]
    pub fn reserve_change_ticks(&self, count: u64) -> u64 {
        self.change_tick.fetch_add(count, Ordering::Relaxed)
    }

    /// Starts a run of a query or system whose previous run is `last_run`: advances the clock
    /// like [`increment_change_tick`](Self::increment_change_tick), records the new run in
    /// `last_run`, and returns the run's ticks. However long ago the previous run was, the
    /// changes it saw never read as new again, and those of the last
    /// [`MAX_CHANGE_AGE`](crate::MAX_CHANGE_AGE) ticks do (see [`LastRun`]).
    #[inline]
    pub fn start_run(&self, last_run: &mut LastRun) -> RunTicks {
        let now = self.change_tick.fetch_add(1, Ordering::Relaxed);
        Self::run_ticks(last_run, now)
    }

    /// [`start_run`](Self::start_run) through exclusive access: a plain add instead of an
    /// atomic one, and a chance to clamp old ticks ([`check_change_ticks`](Self::check_change_ticks)),
    /// which keeps code that runs queries only through `&mut World` safe from wrap-around.
    #[inline]
    pub(crate) fn start_run_mut(&mut self, last_run: &mut LastRun) -> RunTicks {
        self.check_change_ticks();
        let clock = self.change_tick.get_mut();
        let now = *clock;
        *clock = now + 1;
        Self::run_ticks(last_run, now)
    }

    /// The ticks of a run starting at clock reading `now`, recording it in `last_run`.
    #[inline]
    pub(crate) fn run_ticks(last_run: &mut LastRun, now: u64) -> RunTicks {
        let ticks = RunTicks {
            last_run: last_run.seen_from(now),
            this_run: Tick::new(now as u32),
        };
        *last_run = LastRun::new(now);
        ticks
    }

    /// The ticks of a lookup between runs (`QueryState::get`, `single`): changes since
    /// `last_run`, seen from the current tick, without advancing the clock.
    #[inline]
    pub(crate) fn peek_run(&self, mut last_run: LastRun) -> RunTicks {
        // The run is recorded in this copy of `last_run` only, which is then dropped.
        Self::run_ticks(&mut last_run, self.change_tick.load(Ordering::Relaxed))
    }

    /// Jumps the clock forward (tests of wrap-around only).
    #[cfg(test)]
    pub(crate) fn advance_change_tick_for_tests(&mut self, by: u32) {
        *self.change_tick.get_mut() += u64::from(by);
    }

    /// This world's identity.
    pub fn id(&self) -> WorldId {
        self.id
    }

    /// Clamps every stored change tick older than [`MAX_CHANGE_AGE`](crate::MAX_CHANGE_AGE)
    /// so that none can wrap around into looking new, once the clock has advanced
    /// [`CHECK_TICK_THRESHOLD`](crate::CHECK_TICK_THRESHOLD) ticks since the last clamp (a
    /// comparison otherwise). Structural operations, query runs through `&mut World` and
    /// `Schedule::run` call it; code that runs queries only through `&World` (which cannot
    /// clamp) must call it at least once per `CHECK_TICK_THRESHOLD` runs.
    // Inline: every structural operation calls this through `flush`, and without LTO a call
    // to a non-generic function of this crate stays a call in the user's code; the rare
    // clamp is out of line.
    #[inline]
    pub fn check_change_ticks(&mut self) {
        let now = *self.change_tick.get_mut();
        if now >= self.next_check_tick {
            self.clamp_change_ticks(now);
        }
    }

    /// The slow half of [`check_change_ticks`](Self::check_change_ticks).
    #[cold]
    #[inline(never)]
    fn clamp_change_ticks(&mut self, clock: u64) {
        let now = Tick::new(clock as u32);
        for archetype in self.archetypes.archetypes.all_mut() {
            archetype.table.check_change_ticks(now);
        }
        for set in self.sparse.iter_mut() {
            set.check_change_ticks(now);
        }
        self.resources.check_change_ticks(now);
        self.last_change_tick.clamp_age(now);
        // The clock counts runs from 1 and never nears `u64::MAX`; saturating all the same.
        self.next_check_tick = clock.saturating_add(u64::from(CHECK_TICK_THRESHOLD));
    }

    /// The tick that [`Mut::is_changed`] from [`get_mut`](Self::get_mut) compares against.
    pub fn last_change_tick(&self) -> Tick {
        self.last_change_tick
    }

    /// Starts a new change-detection period: changes made so far stop reading as new to
    /// world-level accessors.
    pub fn clear_trackers(&mut self) {
        self.last_change_tick = self.increment_change_tick();
    }
}

#[cfg(test)]
mod tests;
