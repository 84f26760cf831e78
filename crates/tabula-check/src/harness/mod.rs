//! Two worlds, their models and three schedules, driven one [`Op`] at a time.
//!
//! [`Harness::apply`] applies an op to a world and to its model, checking every result on
//! the way; [`Harness::check`] then compares everything observable (see
//! [`Checker`](crate::Checker)).
//! Direct ops (spawns, `spawn_at`, inserts, removes, batches, despawns, `get_mut` writes,
//! reservations, flushes, `clear`, removal tracking, events) call the first world's own
//! methods; [`Op::Query`] runs a pass of one of the queries each world keeps across steps
//! (see [`QUERIES`](crate::QUERIES)); [`Op::Run`] runs a schedule. The code is split by
//! concern, one private module each: `side` (one world and what it must match, its checks
//! and the slot bound), `direct` (the direct ops), `queries` (the kept queries' passes),
//! `schedules` (the three schedules, their systems and gates, and a run), `commands` (what
//! the command system records, and the model's side of applying it), `reactions`
//! (observers and their log, `trigger`, the hierarchy and relation ops, and their check; see
//! [`crate::links`]), and `panics` (provoked panics and the panic hook). This module holds the harness itself: picking targets,
//! dispatching ops, and the entry points [`run_bytes`] and [`run_seed`].
//!
//! Three schedules run on the worlds, each with one command system that records what the
//! run's [`Op::Run`] lists:
//!
//! * 0, *solo*: the command system alone (parallel executor). Its commands are applied at the
//!   end of the run.
//! * 1, *frame (parallel)*: `hp_system` (`for_each`: every `Hp` without `Tag` goes up by one)
//!   and `wide_system` (`par_for_each`: every `Wide`'s third word goes up by one), the command
//!   system, then `panicker` after all three (it panics when the run says so), then an event
//!   writer and an event reader after it. The edge from the command system to `panicker`
//!   gets an automatic sync point, so the commands are applied before `panicker` runs, also
//!   in a run that panics.
//! * 2, *frame (single-threaded)*: the same systems on the single-threaded executor, with
//!   automatic sync points off. In a run that panics, the commands are never applied: the
//!   schedule discards them and frees the ids their spawns reserved (flushed, then despawned
//!   with their generations bumped), so no empty entity is left behind.
//!
//! A run that panics stops before the event systems, and skips the end-of-run event update.
//! Every provoked panic carries an [`ExpectedPanic`](crate::ExpectedPanic) payload; the
//! harness checks that each operation panics exactly when the model says it must, and
//! re-raises any other panic.
//!
//! # Two worlds
//!
//! The harness keeps two worlds, each with its own model, checker, counting types and
//! `Events<Ping>`: the first (tag 0), which every direct op acts on, and a second (tag 1),
//! reached only through schedule runs (`Op::Run` with `away`). The same three `Schedule`
//! values alternate between the two, as a server with one world per match or an editor with
//! a preview world would use them. A schedule whose last run was on the other world
//! initialises its systems anew for this one: fresh queries, a fresh event cursor (so its
//! reader first sees every event the world still holds, which the model mirrors with
//! [`EventModel::forget`](crate::EventModel::forget)), and an entity reservation lane for its
//! command system in this world. Ops now and then aim at a live entity of the *other* world
//! (or, while it has none, at one of this world's with the other's tag): a direct call must
//! refuse it with [`EntityError::WrongWorld`], a command
//! must be skipped.
//!
//! Each world must match its own model, ids included: every id a world hands out must be
//! new (above every generation issued before at its slot index), despawned and reserved ids
//! must stay dead, and every
//! command a run skips must name the entity the model expects, in order. The ids a run's
//! spawns reserve are read from the run itself (the command system logs them, and
//! `Aim::Spawned` resolves against that log), so no check depends on an id value the harness
//! cannot predict.
//!
//! ## The slot bound
//!
//! After every op, each world must have at most [`LANES`] = 4 entity reservation lanes
//! (`World::entity_lane_count`: the shared lane, and one per schedule for its command
//! system) and at most `peak + 2 * LANES * burst` entity slots (`World::entity_slots`),
//! where `peak` is the most entities the world held live or reserved at once and `burst`
//! the most ids reserved between two of its flushes; every index that was live must be
//! below its slot count. Why the slot bound holds: a flush places a lane's `i`-th
//! reservation inside that lane's block, or past every block at
//! `round + (i - block) * lanes + lane`; each block is sized from what its lane reserved (at
//! most `burst`), so every position is below `2 * lanes * burst`, and only a position past
//! the free list becomes a fresh slot, above the live ones. Both hold only because a
//! world's lanes are reused while schedules come and go: the lane a schedule's command
//! system held in a world is released when the schedule leaves and reused when it (or
//! another) comes back. Were a lane added on every move instead, lanes and slots would grow
//! with the number of moves, whatever the population.
//!
//! # Gates
//!
//! Systems of the schedules run under run conditions (`run_if`) that read the world's
//! `Gates` resource, which each run's op sets (a set bit closes a gate; 0 opens all):
//!
//! * bit 0 ([`GATE_COMMANDS`]): the command system, in all three schedules;
//! * bit 1 ([`GATE_MOVERS`]): the `Movers` set (`hp_system` and `wide_system`), a condition
//!   on the set that reaches its members;
//! * bit 2 ([`GATE_HP`]): `hp_system`'s own condition, on top of its set's;
//! * bit 3 ([`GATE_PANICKER`]): `panicker`, so a run told to panic does not;
//! * bit 4 ([`GATE_WRITER`]): the event writer;
//! * bit 5 ([`GATE_READER`]): the event reader, whose cursor then stays where it was.
//!
//! A closed gate skips its system and the model skips the same: no commands recorded, no
//! increments, no panic, no events sent or read. The conditions only read the world; one
//! that would record commands is refused when the schedule is built, which the harness does
//! not exercise.

use tabula::prelude::*;

use crate::check::{Shape, shape};
use crate::components::{Hp, KINDS, SHAPES, Tracked, Value, with_kind, with_shape};
use crate::model::{EMPTY_ROW, Model, Row};
use crate::ops::{Op, Target};
use crate::source::{Bytes, Rng, Source};

mod commands;
mod direct;
mod panics;
mod queries;
mod reactions;
mod schedules;
mod side;

pub use panics::install_panic_hook;
pub use schedules::{GATE_COMMANDS, GATE_HP, GATE_MOVERS, GATE_PANICKER, GATE_READER, GATE_WRITER};

use direct::{
    insert, insert_batch, insert_one, overwrite, removal_shape, remove, remove_batch, remove_one, spawn,
    spawn_at, spawn_batch,
};
use side::{Side, alien, never_issued};

/// An event type sent by the frame schedules and between runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ping(pub u32);

/// Reservation lanes a world of the harness needs at once: the shared one (`reserve_entities`)
/// and one for each schedule's command system. See [the slot bound](self#the-slot-bound).
pub const LANES: usize = 4;

/// Counts of what a harness has done.
#[derive(Clone, Copy, Debug, Default)]
pub struct Stats {
    /// Operations applied.
    pub ops: u64,
    /// Structural calls made on the world, directly or as applied commands (spawns, inserts,
    /// removes, despawns; a batch counts once per entity; refused calls count too).
    pub structural: u64,
    /// Schedule runs.
    pub runs: u64,
    /// Schedule runs on the other world than the schedule's previous run (each initialises
    /// the schedule anew).
    pub moves: u64,
    /// Schedule runs with at least one gate closed.
    pub gated_runs: u64,
    /// Provoked panics that reached the harness (bombs and panicking systems).
    pub panics: u64,
    /// Commands the schedules reported as skipped.
    pub skipped_commands: u64,
    /// Observers added.
    pub observers_added: u64,
    /// Observer runs the models predicted (and the checks found in the worlds' logs).
    pub observer_runs: u64,
    /// Pairs of `Rel` made by `relate`.
    pub pairs_made: u64,
    /// Parents set by `set_parent` (refused calls not counted).
    pub parents_set: u64,
    /// Entities despawned by `despawn_recursive`, roots included.
    pub despawned_recursively: u64,
}

/// Two worlds and the models they must match, the three schedules that alternate between
/// them, and counts of what was done.
pub struct Harness {
    /// The first world, which direct ops act on; during a run on the second world the two
    /// sides are swapped, so that the run's code reads `side` alone.
    side: Side,
    /// The second world (or, during a run on it, the first).
    other: Side,
    /// Built at the first run (a harness driven by direct ops alone never makes them, nor
    /// starts rayon's threads).
    schedules: Option<[Schedule; 3]>,
    /// Which world (side index) each schedule last ran on.
    ran_on: [Option<u8>; 3],
    stats: Stats,
    /// Spreads target picks over the whole population, whatever its size.
    salt: usize,
}

impl std::fmt::Debug for Harness {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Harness")
            .field("live", &self.side.model.len())
            .field("live (second world)", &self.other.model.len())
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

impl Default for Harness {
    fn default() -> Self {
        Self::new()
    }
}

impl Harness {
    /// Two empty worlds (the schedules are built at the first run).
    pub fn new() -> Self {
        Self::with_storage(false)
    }

    /// Two empty worlds storing `Tag` and `Small` in sparse sets when `sparse_markers` says
    /// so, in tables otherwise: every op then reaches sparse components through the same
    /// API (the queries' sparse path, views, commands, hooks, saves of the model's kinds).
    pub fn with_storage(sparse_markers: bool) -> Self {
        install_panic_hook();
        Self {
            side: Side::new(0, sparse_markers),
            other: Side::new(1, sparse_markers),
            schedules: None,
            ran_on: [None; 3],
            stats: Stats::default(),
            salt: 0,
        }
    }

    /// The first world (the one direct ops act on).
    pub fn world(&self) -> &World {
        &self.side.world
    }

    /// The first world's model.
    pub fn model(&self) -> &Model {
        &self.side.model
    }

    /// The second world (reached by schedule runs only).
    pub fn second_world(&self) -> &World {
        &self.other.world
    }

    /// The second world's model.
    pub fn second_model(&self) -> &Model {
        &self.other.model
    }

    /// The runs the first world's observers (or, with `second`, the second world's) logged
    /// since the last check, in the order they ran.
    pub fn observer_log(&self, second: bool) -> &[crate::Seen] {
        let side = if second { &self.other } else { &self.side };
        &(side.world.resource::<reactions::ObserverLog>())
            .expect("inserted in Side::new")
            .0
    }

    /// What the harness has done so far.
    pub fn stats(&self) -> Stats {
        Stats {
            observer_runs: self.side.model.observer_runs() + self.other.model.observer_runs(),
            ..self.stats
        }
    }

    /// The first world's structural figures.
    pub fn shape(&self) -> Shape {
        shape(&self.side.world)
    }

    /// Events the first world's `Events<Ping>` holds.
    pub fn buffered_events(&self) -> usize {
        self.side
            .world
            .resource::<Events<Ping>>()
            .expect("added in new")
            .len()
    }

    /// Entries in the first world's removal logs of `Hp` and `Tracked` (tracked from the
    /// start).
    pub fn removal_log_entries(&self) -> usize {
        let hp = self.side.world.removal_log::<Hp>().map_or(0, Events::len);
        let tracked = self.side.world.removal_log::<Tracked>().map_or(0, Events::len);
        hp + tracked
    }

    /// The full check (see [`Checker::check`](crate::Checker::check)) of the first world,
    /// and of the second when an op ran on it since its last check; for each, the buffered
    /// events and [the slot bound](self#the-slot-bound).
    pub fn check(&mut self) {
        self.side.check();
        if self.other.touched {
            self.other.check();
        }
    }

    /// A cheap check of `sample` entities of each world (see
    /// [`Checker::check_sample`](crate::Checker::check_sample)), their buffered events and
    /// the slot bound.
    pub fn check_sample(&mut self, sample: usize) {
        self.salt = self.salt.wrapping_add(1);
        self.side.check_sample(sample, self.salt);
        self.other.check_sample(sample, self.salt);
    }

    /// The final check of both worlds, then drops them: every `Tracked` and `Bomb` must be
    /// dropped exactly once by then.
    pub fn finish(mut self) {
        self.side.check();
        self.other.check();
        let shared = [self.side.shared.clone(), self.other.shared.clone()];
        drop(self);
        for (index, shared) in shared.iter().enumerate() {
            assert_eq!(
                shared.tracked_alive(),
                0,
                "world {index}: Tracked values left after the world was dropped"
            );
            assert_eq!(
                shared.bombs_alive(),
                0,
                "world {index}: Bomb values left after the world was dropped"
            );
        }
    }

    /// The values of a bundle of `kinds`, drawn from `seed` and `salt`.
    fn values(kinds: &[usize], seed: u16, salt: u64) -> Vec<Value> {
        let mut rng = Rng(u64::from(seed) << 16 ^ salt);
        kinds.iter().map(|&k| Value::generate(k, &mut rng)).collect()
    }

    /// A row holding `values` of `kinds`.
    fn row_of(kinds: &[usize], values: &[Value]) -> Row {
        let mut row = EMPTY_ROW;
        for (&kind, value) in kinds.iter().zip(values) {
            row[kind] = Some(value.clone());
        }
        row
    }

    /// The entity `target` aims at in `self.side`'s world, by its low 3 bits: mostly a live
    /// one (3 to 7), sometimes a recently despawned one (0), a reservation (1), or (2) an id
    /// never handed out or, when the rest of the target is odd, another world's id: a live
    /// entity of the harness's other world, or (while that one has none) a live entity of
    /// this world with another world's tag.
    fn pick(&mut self, target: Target) -> Entity {
        let index = usize::from(target >> 3);
        let nowhere = never_issued(self.side.tag());
        match target & 7 {
            0 => {
                let dead: Vec<Entity> = self.side.model.recent_dead().collect();
                if dead.is_empty() {
                    nowhere
                } else {
                    dead[index % dead.len()]
                }
            }
            1 if !self.side.model.pending().is_empty() => {
                self.side.model.pending()[index % self.side.model.pending().len()]
            }
            2 if index & 1 == 1 && !self.other.model.is_empty() => {
                let ids = self.other.model.ids();
                ids[(index >> 1) % ids.len()]
            }
            2 if index & 1 == 1 && !self.side.model.is_empty() => {
                let ids = self.side.model.ids();
                alien(ids[(index >> 1) % ids.len()])
            }
            2 => nowhere,
            _ => {
                let ids = self.side.model.ids();
                if ids.is_empty() {
                    nowhere
                } else {
                    self.salt = self.salt.wrapping_add(0x9e37_79b9);
                    ids[index.wrapping_mul(0x9e37).wrapping_add(self.salt) % ids.len()]
                }
            }
        }
    }

    /// Entities for a batch: one archetype's entity list in row order (the whole-table path)
    /// or reversed, or a few targets, which may repeat or be dead or reserved.
    fn batch_targets(&mut self, pick: u8, seed: u16) -> Vec<Entity> {
        let tables: Vec<&[Entity]> = (self.side.world.archetypes())
            .filter(|a| !a.is_empty())
            .map(|a| a.entities())
            .collect();
        let table = usize::from(pick >> 2);
        match pick & 3 {
            0 | 1 if !tables.is_empty() => tables[table % tables.len()].to_vec(),
            2 if !tables.is_empty() => tables[table % tables.len()].iter().rev().copied().collect(),
            _ => {
                let mut rng = Rng(u64::from(seed) ^ u64::from(pick) << 20);
                (0..table % 6).map(|_| self.pick(rng.next_u64() as u16)).collect()
            }
        }
    }

    /// Applies `op` to the world and to the model, checking its result (return values,
    /// errors, and whether it panicked) on the way.
    pub fn apply(&mut self, op: &Op) {
        self.stats.ops += 1;
        match *op {
            Op::Spawn { shape, seed } => {
                with_shape!(usize::from(shape) % SHAPES, spawn(self, seed));
            }
            Op::SpawnAt {
                target,
                fresh,
                shape,
                seed,
            } => {
                let entity = if fresh {
                    let entity = self.side.world.reserve_entity();
                    self.side.model.reserve(entity);
                    entity
                } else {
                    self.pick(target)
                };
                with_shape!(usize::from(shape) % SHAPES, spawn_at(self, entity, seed));
            }
            Op::SpawnBatch { shape, count, seed } => {
                with_shape!(
                    usize::from(shape) % SHAPES,
                    spawn_batch(self, usize::from(count % 8), seed)
                );
            }
            Op::Insert {
                target,
                shape,
                seed,
                entity_mut,
            } => {
                let entity = self.pick(target);
                with_shape!(
                    usize::from(shape) % SHAPES,
                    insert(self, entity, seed, entity_mut)
                );
            }
            Op::InsertOne {
                target,
                kind,
                seed,
                armed,
            } => {
                let entity = self.pick(target);
                with_kind!(usize::from(kind) % KINDS, insert_one(self, entity, seed, armed));
            }
            Op::Remove { target, shape } => {
                let entity = self.pick(target);
                let shape = removal_shape(self, entity, shape);
                with_shape!(shape, remove(self, entity));
            }
            Op::RemoveOne { target, kind } => {
                let entity = self.pick(target);
                with_kind!(usize::from(kind) % KINDS, remove_one(self, entity));
            }
            Op::Despawn { target, armed } => {
                let entity = self.pick(target);
                self.despawn(entity, armed);
            }
            Op::Edit { target, delta } => {
                let entity = self.pick(target);
                self.edit(entity, delta);
            }
            Op::Overwrite { target, kind, seed } => {
                let entity = self.pick(target);
                with_kind!(usize::from(kind) % KINDS, overwrite(self, entity, seed));
            }
            Op::Batch {
                insert,
                shape,
                pick,
                seed,
            } => {
                let targets = self.batch_targets(pick, seed);
                let shape = usize::from(shape) % SHAPES;
                if insert {
                    with_shape!(shape, insert_batch(self, &targets, seed));
                } else {
                    with_shape!(shape, remove_batch(self, &targets));
                }
            }
            Op::Reserve { count } => self.reserve(u32::from(count % 4), count & 4 != 0),
            Op::TrackRemovals { kind } => self.track_removals(usize::from(kind) % KINDS),
            Op::Flush => {
                self.side.world.flush();
                self.side.model.flush();
            }
            Op::Clear { armed } => self.clear(armed),
            Op::Query { which } => self.query(which),
            Op::Run {
                schedule,
                away,
                ref cmds,
                panic,
                ref events,
                gates,
            } => {
                let events: Vec<u32> = events.iter().map(|&v| u32::from(v)).collect();
                if away {
                    std::mem::swap(&mut self.side, &mut self.other);
                }
                self.run(usize::from(schedule % 3), cmds, panic, &events, gates);
                if away {
                    std::mem::swap(&mut self.side, &mut self.other);
                }
            }
            Op::SendEvent { value } => {
                self.side
                    .world
                    .send_event(Ping(u32::from(value)))
                    .expect("Ping events were added");
                self.side.model.events.send(u32::from(value));
            }
            Op::UpdateEvents => {
                self.side.world.update_events();
                self.side.model.update_events();
            }
            Op::Observe { event, kind, target } => self.observe(event, kind, target),
            Op::DespawnObserver { which } => self.despawn_observer(which),
            Op::Poke { ref targets, value } => self.poke(targets, value),
            Op::SetParent { child, parent } => self.set_parent(child, parent),
            Op::RemoveParent { child } => self.remove_parent(child),
            Op::DespawnRecursive { target } => self.despawn_recursive(target),
            Op::Relate {
                source,
                target,
                unrelate,
            } => self.relate(source, target, unrelate),
            Op::UnrelateAll { target } => self.unrelate_all(target),
        }
        assert!(!self.side.shared.disarm(), "the fuse was left armed");
    }
}

/// Ops decoded from one input are capped, so that one input stays fast to run.
pub const MAX_OPS_PER_INPUT: usize = 512;

/// The fuzz target's body: decodes `data` into operations, applies each to a fresh world and
/// model, runs the full check after every one, and finishes with the drop accounting.
/// Panics on the first disagreement.
pub fn run_bytes(data: &[u8]) {
    // The storage choice from the bytes, without consuming any: half the inputs run with
    // sparse markers.
    let sparse = data.iter().fold(0, |parity, byte| parity ^ byte) & 1 == 1;
    let mut harness = Harness::with_storage(sparse);
    let mut source = Bytes::new(data);
    let mut applied = 0;
    while let Some(op) = Op::decode(&mut source) {
        harness.apply(&op);
        harness.check();
        applied += 1;
        if applied == MAX_OPS_PER_INPUT {
            break;
        }
    }
    harness.finish();
}

/// [`run_bytes`] over `steps` operations decoded from a seeded random stream.
pub fn run_seed(seed: u64, steps: usize) {
    // Odd seeds store the markers in sparse sets.
    let mut harness = Harness::with_storage(seed & 1 == 1);
    let mut source = Rng(seed);
    for _ in 0..steps {
        let op = Op::decode(&mut source).expect("a random stream never ends");
        harness.apply(&op);
        harness.check();
    }
    harness.finish();
}

/// Reads bytes from `source` until it ends (for tools that decode a file).
pub fn decode_all(source: &mut impl Source) -> Vec<Op> {
    std::iter::from_fn(|| Op::decode(source)).collect()
}
