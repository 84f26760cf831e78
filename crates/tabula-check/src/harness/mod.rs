//! Two worlds, their models and three schedules, driven one [`Op`] at a time.
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
//! Every provoked panic carries an [`ExpectedPanic`] payload; the harness checks that each
//! operation panics exactly when the model says it must, and re-raises any other panic.
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
//! command system in this world. Ops now and then aim at a live entity of the *other* world:
//! a direct call must refuse it with [`EntityError::WrongWorld`], a command must be skipped.
//!
//! Each world must match its own model, ids included: every id a world hands out must be
//! new to its model (never a live one), despawned and reserved ids must stay dead, and every
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

use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::{Arc, Once};

use tabula::prelude::*;
use tabula::schedule::SystemSet;
use tabula::{CommandError, EntityError, QueryState};

use crate::check::{Checker, Shape, shape};
use crate::components::{
    BOMB, ExpectedPanic, Hp, KINDS, ModelBundle, ModelComponent, Name, Pos, SHAPES, Shared, Small, Tag,
    Tracked, Value, Wide, kind_name, shape_kinds, with_kind, with_shape,
};
use crate::model::{EMPTY_ROW, Model, Row};
use crate::ops::{CmdOp, CmdTarget, Op, Target};
use crate::source::{Bytes, Rng, Source};

/// An event type sent by the frame schedules and between runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ping(pub u32);

/// The tags of the harness's two worlds: fixed, so that a run's ids do not depend on how
/// many worlds the process made before it, and distinct, so that each world refuses the
/// other's ids.
const WORLD_TAGS: [u8; 2] = [0, 1];

/// An id of the world tagged `tag` never handed out: its index lies far past any slot a run
/// can reach.
fn never_issued(tag: u8) -> Entity {
    let word = (u64::from(tag) << 24) | 5;
    Entity::from_bits((word << 32) | 0x00ff_fff0).expect("a nonzero generation")
}

/// Reservation lanes a world of the harness needs at once: the shared one (`reserve_entities`)
/// and one for each schedule's command system. See [the slot bound](self#the-slot-bound).
pub const LANES: usize = 4;

/// Gate of the command system (all schedules); see [gates](self#gates).
pub const GATE_COMMANDS: u8 = 0;
/// Gate of the `Movers` set (`hp_system` and `wide_system`), a condition on the set.
pub const GATE_MOVERS: u8 = 1;
/// Gate of `hp_system` alone, on top of its set's.
pub const GATE_HP: u8 = 2;
/// Gate of `panicker`.
pub const GATE_PANICKER: u8 = 3;
/// Gate of the event writer.
pub const GATE_WRITER: u8 = 4;
/// Gate of the event reader.
pub const GATE_READER: u8 = 5;

/// The bits of the gates above.
const GATES_USED: u8 = (1 << (GATE_READER + 1)) - 1;

/// The gates closed for the current run: bit `g` closes gate `g`.
#[derive(Default)]
struct Gates(u8);

impl Gates {
    fn closed(&self, gate: u8) -> bool {
        self.0 & (1 << gate) != 0
    }
}

/// The run condition of gate `GATE`.
fn open<const GATE: u8>(gates: Res<Gates>) -> bool {
    !gates.closed(GATE)
}

/// `hp_system` and `wide_system`, under one condition.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Movers;

impl SystemSet for Movers {}

/// An entity a recorded command aims at, resolved as far as the harness can before the run.
#[derive(Clone, Copy, Debug)]
enum Aim {
    Entity(Entity),
    Spawned(u8),
}

/// One command for the command system, values drawn.
#[derive(Clone, Debug)]
enum Cmd {
    Spawn {
        shape: usize,
        values: Vec<Value>,
    },
    Insert {
        aim: Aim,
        shape: usize,
        values: Vec<Value>,
    },
    Remove {
        aim: Aim,
        shape: usize,
    },
    Despawn {
        aim: Aim,
    },
}

/// The command system's instructions for one run, and whether `panicker` panics; one per
/// world, with that world's counting types and tag.
#[derive(Default)]
struct Script {
    cmds: Vec<Cmd>,
    panic: bool,
    events: Vec<u32>,
    shared: Arc<Shared>,
    tag: u8,
}

/// The ids the command system's spawns reserved, in order.
#[derive(Default)]
struct CmdLog(Vec<Entity>);

/// `(reader, value)` of every event the readers saw in a run.
#[derive(Default)]
struct ReadLog(Vec<(usize, u32)>);

/// Resolves an aim the way the command system does: `Spawned(i)` is the `i`-th (modulo)
/// entity spawned so far in the run; with none, an id never issued by the world tagged `tag`.
fn resolve(aim: Aim, spawned: &[Entity], tag: u8) -> Entity {
    match aim {
        Aim::Entity(entity) => entity,
        Aim::Spawned(_) if spawned.is_empty() => never_issued(tag),
        Aim::Spawned(i) => spawned[usize::from(i) % spawned.len()],
    }
}

fn cmd_spawn<B: ModelBundle>(commands: &mut Commands, values: &[Value], shared: &Arc<Shared>) -> Entity {
    commands.spawn(B::make(values, shared)).id()
}

fn cmd_insert<B: ModelBundle>(
    commands: &mut Commands,
    entity: Entity,
    values: &[Value],
    shared: &Arc<Shared>,
) {
    commands.insert(entity, B::make(values, shared));
}

fn cmd_remove<B: ModelBundle>(commands: &mut Commands, entity: Entity) {
    commands.remove::<B>(entity);
}

fn cmd_system(script: Res<Script>, mut log: ResMut<CmdLog>, mut commands: Commands) {
    let shared = &script.shared;
    for cmd in &script.cmds {
        match cmd {
            Cmd::Spawn { shape, values } => {
                let entity = with_shape!(*shape, cmd_spawn(&mut commands, values, shared));
                log.0.push(entity);
            }
            Cmd::Insert { aim, shape, values } => {
                let entity = resolve(*aim, &log.0, script.tag);
                with_shape!(*shape, cmd_insert(&mut commands, entity, values, shared));
            }
            Cmd::Remove { aim, shape } => {
                let entity = resolve(*aim, &log.0, script.tag);
                with_shape!(*shape, cmd_remove(&mut commands, entity));
            }
            Cmd::Despawn { aim } => commands.despawn(resolve(*aim, &log.0, script.tag)),
        }
    }
}

fn hp_system(mut query: Query<&mut Hp, Without<Tag>>) {
    query.for_each(|mut hp| hp.0 = hp.0.wrapping_add(1));
}

fn wide_system(mut query: Query<&mut Wide>) {
    query.par_for_each_mut(|mut wide| wide.0[2] = wide.0[2].wrapping_add(1));
}

fn panicker(script: Res<Script>) {
    if script.panic {
        std::panic::panic_any(ExpectedPanic("a system told to panic"));
    }
}

fn event_writer(script: Res<Script>, mut events: EventWriter<Ping>) {
    for &value in &script.events {
        events.send(Ping(value));
    }
}

fn event_reader<const READER: usize>(mut events: EventReader<Ping>, mut log: ResMut<ReadLog>) {
    for ping in events.read() {
        log.0.push((READER, ping.0));
    }
}

/// Installs (once per process) a panic hook that stays silent for the harness's provoked
/// panics ([`ExpectedPanic`] payloads) and hands every other panic to the hook that was
/// installed before (the default one, or libFuzzer's, which aborts).
pub fn install_panic_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if info.payload().downcast_ref::<ExpectedPanic>().is_none() {
                previous(info);
            }
        }));
    });
}

/// Re-raises `payload` unless it is a provoked panic.
fn expect_provoked(payload: Box<dyn Any + Send>) {
    if payload.downcast_ref::<ExpectedPanic>().is_none() {
        resume_unwind(payload);
    }
}

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
}

/// One world and what the harness keeps for it: the model it must match, its counting
/// types' accounting, the checker, and the queries the `Query` op keeps across steps.
struct Side {
    /// 0 for the first world, 1 for the second.
    index: u8,
    world: World,
    model: Model,
    shared: Arc<Shared>,
    checker: Checker,
    pos: QueryState<(Entity, &'static Pos, Option<&'static Small>)>,
    hp: QueryState<(Entity, &'static mut Hp), Without<Tag>>,
    wide: QueryState<&'static mut Wide, With<Name>>,
    /// Changed since its last full check: the first world is checked after every op, the
    /// second after the ops that ran on it.
    touched: bool,
}

impl Side {
    /// An empty world tagged `WORLD_TAGS[index]`, with its resources, events and checker.
    fn new(index: u8) -> Self {
        let tag = WORLD_TAGS[usize::from(index)];
        let shared = Arc::new(Shared::default());
        let mut world = World::with_tag(tag);
        world.insert_resource(Script {
            shared: shared.clone(),
            tag,
            ..Script::default()
        });
        world.insert_resource(CmdLog::default());
        world.insert_resource(ReadLog::default());
        world.insert_resource(Gates::default());
        world.add_event::<Ping>();
        // Removal logs that fill with every removal and despawn of these, and are aged by
        // every completed run: the soak watches that they stay bounded.
        world.track_removals::<Hp>();
        world.track_removals::<Tracked>();
        let checker = Checker::new(&mut world);
        Self {
            index,
            pos: world.query(),
            hp: world.query_filtered(),
            wide: world.query_filtered(),
            world,
            model: Model::default(),
            shared,
            checker,
            touched: false,
        }
    }

    /// The full check of this world (see [`Checker::check`]), its buffered events, and the
    /// slot bound.
    fn check(&mut self) {
        self.checker.check(&self.world, &self.model, &self.shared);
        self.check_events();
        self.check_slots();
        self.touched = false;
    }

    fn check_events(&self) {
        let buffered = self.world.resource::<Events<Ping>>().expect("added in new").len();
        assert_eq!(
            buffered,
            self.model.events.len(),
            "world {}: buffered events",
            self.index
        );
    }

    /// [The slot bound](self#the-slot-bound): this world has at most [`LANES`] reservation
    /// lanes and at most `peak + 2 * LANES * burst` entity slots, however often schedules
    /// moved between the worlds; and every live entity's index is below its slot count.
    fn check_slots(&self) {
        let lanes = self.world.entity_lane_count();
        assert!(
            lanes <= LANES,
            "world {}: {lanes} entity reservation lanes, more than the {LANES} it ever needs at once \
             (the shared lane and one per schedule's command system): the lanes of schedules that \
             left this world are not being reused",
            self.index
        );
        let slots = self.world.entity_slots();
        let (peak, burst) = (self.model.peak(), self.model.burst());
        let bound = peak + 2 * LANES * burst;
        assert!(
            slots <= bound,
            "world {}: {slots} entity slots, past the bound {bound} = peak {peak} live-or-reserved \
             + 2 * {LANES} lanes * burst {burst} reservations between two flushes",
            self.index
        );
        if let Some(highest) = self.model.highest_index() {
            assert!(
                (highest as usize) < slots,
                "world {}: entity index {highest} was live, but the world has only {slots} slots",
                self.index
            );
        }
    }

    /// The tag of this side's world.
    fn tag(&self) -> u8 {
        WORLD_TAGS[usize::from(self.index)]
    }

    /// The error a call on this world must return for `entity`, which is not live here:
    /// another world's id is refused as such, before any lookup.
    fn absent(&self, entity: Entity) -> EntityError {
        if entity.world_tag() == self.tag() {
            EntityError::NoSuchEntity(entity)
        } else {
            EntityError::WrongWorld {
                entity,
                world: self.tag(),
            }
        }
    }
}

/// Two worlds and the models they must match, the three schedules that alternate between
/// them, and counts of what was done.
pub struct Harness {
    /// The first world, which direct ops act on; during a run on the second world the two
    /// sides are swapped, so that the run's code reads `side` alone.
    side: Side,
    /// The second world (or, during a run on it, the first).
    other: Side,
    schedules: [Schedule; 3],
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
    /// Two empty worlds and the schedules.
    pub fn new() -> Self {
        install_panic_hook();
        let mut solo = Schedule::new();
        solo.set_executor(ExecutorKind::Parallel);
        solo.add_systems(cmd_system.run_if(open::<GATE_COMMANDS>));

        let mut frame = Schedule::new();
        frame.set_executor(ExecutorKind::Parallel);
        frame.configure_sets(Movers.run_if(open::<GATE_MOVERS>));
        frame.add_systems((
            hp_system.in_set(Movers).run_if(open::<GATE_HP>),
            wide_system.in_set(Movers),
            cmd_system.run_if(open::<GATE_COMMANDS>),
            (panicker.after(hp_system).after(wide_system).after(cmd_system)).run_if(open::<GATE_PANICKER>),
            event_writer.after(panicker).run_if(open::<GATE_WRITER>),
            event_reader::<0>.after(event_writer).run_if(open::<GATE_READER>),
        ));

        let mut single = Schedule::new();
        single.set_executor(ExecutorKind::SingleThreaded);
        single.set_auto_sync(false);
        single.configure_sets(Movers.run_if(open::<GATE_MOVERS>));
        single.add_systems((
            hp_system.in_set(Movers).run_if(open::<GATE_HP>),
            wide_system.in_set(Movers),
            cmd_system.run_if(open::<GATE_COMMANDS>),
            (panicker.after(hp_system).after(wide_system).after(cmd_system)).run_if(open::<GATE_PANICKER>),
            event_writer.after(panicker).run_if(open::<GATE_WRITER>),
            event_reader::<1>.after(event_writer).run_if(open::<GATE_READER>),
        ));

        Self {
            side: Side::new(0),
            other: Side::new(1),
            schedules: [solo, frame, single],
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

    /// What the harness has done so far.
    pub fn stats(&self) -> Stats {
        self.stats
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

    /// Entries in the first world's removal logs of the tracked types (`Hp` and `Tracked`).
    pub fn removal_log_entries(&self) -> usize {
        let hp = self.side.world.removal_log::<Hp>().map_or(0, Events::len);
        let tracked = self.side.world.removal_log::<Tracked>().map_or(0, Events::len);
        hp + tracked
    }

    /// The full check (see [`Checker::check`]) of the first world, and of the second when an
    /// op ran on it since its last check; for each, the buffered events and [the slot
    /// bound](self#the-slot-bound).
    pub fn check(&mut self) {
        self.side.check();
        if self.other.touched {
            self.other.check();
        }
    }

    /// A cheap check of `sample` entities of each world (see [`Checker::check_sample`]),
    /// their buffered events and the slot bound.
    pub fn check_sample(&mut self, sample: usize) {
        self.salt = self.salt.wrapping_add(1);
        for side in [&mut self.side, &mut self.other] {
            (side.checker).check_sample(&side.world, &side.model, &side.shared, sample, self.salt);
            side.check_events();
            side.check_slots();
        }
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

    fn values(kinds: &[usize], seed: u16, salt: u64) -> Vec<Value> {
        let mut rng = Rng(u64::from(seed) << 16 ^ salt);
        kinds.iter().map(|&k| Value::generate(k, &mut rng)).collect()
    }

    fn row_of(kinds: &[usize], values: &[Value]) -> Row {
        let mut row = EMPTY_ROW;
        for (&kind, value) in kinds.iter().zip(values) {
            row[kind] = Some(value.clone());
        }
        row
    }

    /// The entity `target` aims at in `self.side`'s world, by its low 3 bits: mostly a live
    /// one (3 to 7), sometimes a recently despawned one (0), a reservation (1), or (2) an id
    /// never handed out or, when the rest of the target is odd, a live entity of the other
    /// world.
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
            Op::SpawnBatch { shape, count, seed } => {
                with_shape!(
                    usize::from(shape) % SHAPES,
                    spawn_batch(self, usize::from(count % 8), seed)
                );
            }
            Op::Insert { target, shape, seed } => {
                let entity = self.pick(target);
                with_shape!(usize::from(shape) % SHAPES, insert(self, entity, seed));
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
                with_shape!(usize::from(shape) % SHAPES, remove(self, entity));
            }
            Op::RemoveOne { target, kind } => {
                let entity = self.pick(target);
                with_kind!(usize::from(kind) % KINDS, remove_one(self, entity));
            }
            Op::Despawn { target, armed } => {
                let entity = self.pick(target);
                self.despawn(entity, armed);
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
            Op::Reserve { count } => {
                for entity in self.side.world.reserve_entities(u32::from(count % 4)) {
                    assert!(
                        !self.side.world.contains(entity),
                        "a reservation is not live before a flush"
                    );
                    self.side.model.reserve(entity);
                }
            }
            Op::Flush => {
                self.side.world.flush();
                self.side.model.flush();
            }
            Op::Clear { armed } => self.clear(armed),
            Op::Query { which } => self.query(which % 3),
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
                self.side.model.events.update();
            }
        }
        assert!(!self.side.shared.disarm(), "the fuse was left armed");
    }

    /// Runs `f` with the bomb fuse armed when `armed`; checks that it panicked exactly when
    /// `expect_panic` (with a provoked panic) and returns its result when it did not.
    fn guarded<R>(
        &mut self,
        armed: bool,
        expect_panic: bool,
        what: &str,
        f: impl FnOnce(&mut World) -> R,
    ) -> Option<R> {
        if armed {
            self.side.shared.arm();
        }
        let result = catch_unwind(AssertUnwindSafe(|| f(&mut self.side.world)));
        let fuse_left = self.side.shared.disarm();
        match result {
            Ok(value) => {
                assert!(!expect_panic, "{what}: a Bomb should have gone off");
                assert!(
                    !armed || fuse_left,
                    "{what}: a Bomb went off without a panic reaching the caller"
                );
                Some(value)
            }
            Err(payload) => {
                expect_provoked(payload);
                assert!(expect_panic, "{what}: panicked, but the model drops no Bomb");
                self.stats.panics += 1;
                None
            }
        }
    }

    fn despawn(&mut self, entity: Entity, armed: bool) {
        self.stats.structural += 1;
        self.side.model.flush();
        let live = self.side.model.is_live(entity);
        let bomb = live && self.side.model.row(entity).is_some_and(|row| row[BOMB].is_some());
        let result = self.guarded(armed, armed && bomb, "despawn", |world| world.despawn(entity));
        if let Some(result) = result {
            let expected = if live {
                Ok(())
            } else {
                Err(self.side.absent(entity))
            };
            assert_eq!(result, expected, "despawn {entity:?}");
        }
        if live {
            self.side.model.kill(entity);
        }
    }

    fn clear(&mut self, armed: bool) {
        self.side.model.flush();
        self.stats.structural += self.side.model.len() as u64;
        let bomb = self.side.model.count_of(BOMB) > 0;
        self.guarded(armed, armed && bomb, "clear", World::clear);
        for entity in self.side.model.ids().to_vec() {
            self.side.model.kill(entity);
        }
    }

    fn query(&mut self, which: u8) {
        match which {
            0 => {
                let mut seen: Vec<(Entity, Value, Option<Value>)> = (self.side.pos.iter(&self.side.world))
                    .map(|(e, pos, small)| (e, pos.value(), small.map(Small::value)))
                    .collect();
                seen.sort_by_key(|&(e, _, _)| e);
                let mut want: Vec<(Entity, Value, Option<Value>)> = (self.side.model.rows())
                    .filter_map(|(e, row)| Some((e, row[Pos::KIND].clone()?, row[Small::KIND].clone())))
                    .collect();
                want.sort_by_key(|&(e, _, _)| e);
                assert_eq!(seen, want, "iter over (Entity, &Pos, Option<&Small>)");
            }
            1 => {
                let mut seen = Vec::new();
                self.side.hp.for_each(&mut self.side.world, |(e, mut hp)| {
                    hp.0 = hp.0.wrapping_add(3);
                    seen.push((e, hp.0));
                });
                seen.sort_unstable();
                let mut want = Vec::new();
                for (e, row) in self
                    .side
                    .model
                    .rows_mut()
                    .filter(|(_, row)| row[Tag::KIND].is_none())
                {
                    if let Some(Value::Hp(hp)) = &mut row[Hp::KIND] {
                        *hp = hp.wrapping_add(3);
                        want.push((e, *hp));
                    }
                }
                want.sort_unstable();
                assert_eq!(seen, want, "for_each over (Entity, &mut Hp), Without<Tag>");
            }
            _ => {
                self.side.wide.par_for_each(&mut self.side.world, |mut wide| {
                    wide.0[0] = wide.0[0].wrapping_add(1)
                });
                for (_, row) in self
                    .side
                    .model
                    .rows_mut()
                    .filter(|(_, row)| row[Name::KIND].is_some())
                {
                    if let Some(Value::Wide(wide)) = &mut row[Wide::KIND] {
                        wide[0] = wide[0].wrapping_add(1);
                    }
                }
            }
        }
    }

    /// Runs schedule `which` on `self.side`'s world (the first, or the second when the
    /// caller swapped them) with the gates `gates` closed.
    fn run(&mut self, which: usize, ops: &[CmdOp], panic: bool, events: &[u32], gates: u8) {
        let aim = |h: &mut Self, target: CmdTarget| match target {
            CmdTarget::Existing(t) => Aim::Entity(h.pick(t)),
            CmdTarget::Spawned(i) => Aim::Spawned(i),
        };
        let salt = self.stats.ops;
        let cmds: Vec<Cmd> = ops
            .iter()
            .map(|op| match *op {
                CmdOp::Spawn { shape, seed } => {
                    let shape = usize::from(shape) % SHAPES;
                    let values = Self::values(&shape_kinds(shape), seed, salt);
                    Cmd::Spawn { shape, values }
                }
                CmdOp::Insert { target, shape, seed } => {
                    let shape = usize::from(shape) % SHAPES;
                    let values = Self::values(&shape_kinds(shape), seed, salt);
                    Cmd::Insert {
                        aim: aim(self, target),
                        shape,
                        values,
                    }
                }
                CmdOp::Remove { target, shape } => Cmd::Remove {
                    aim: aim(self, target),
                    shape: usize::from(shape) % SHAPES,
                },
                CmdOp::Despawn { target } => Cmd::Despawn {
                    aim: aim(self, target),
                },
            })
            .collect();
        let gates = Gates(gates);
        let here = self.side.index;
        self.side.touched = true;
        self.stats.structural += cmds.len() as u64;
        self.stats.runs += 1;
        {
            let world = &mut self.side.world;
            let script = world.resource_mut::<Script>().expect("inserted in new");
            script.cmds = cmds.clone();
            script.panic = panic;
            script.events = events.to_vec();
            world.resource_mut::<CmdLog>().expect("inserted in new").0.clear();
            world
                .resource_mut::<ReadLog>()
                .expect("inserted in new")
                .0
                .clear();
            world.resource_mut::<Gates>().expect("inserted in new").0 = gates.0;
        }
        // `Schedule::run` flushes the world before any system runs.
        self.side.model.flush();
        let frame = which != 0;
        let reader = which.saturating_sub(1);
        if self.ran_on[which] != Some(here) {
            // The schedule initialises its systems anew for this world: its event reader
            // starts with a fresh cursor.
            if frame {
                self.side.model.events.forget(reader);
            }
            if self.ran_on[which].is_some() {
                self.stats.moves += 1;
            }
            self.ran_on[which] = Some(here);
        }
        if gates.0 & GATES_USED != 0 {
            self.stats.gated_runs += 1;
        }

        let schedule = &mut self.schedules[which];
        let result = catch_unwind(AssertUnwindSafe(|| schedule.run(&mut self.side.world)));
        let panicked = match result {
            Ok(()) => false,
            Err(payload) => {
                expect_provoked(payload);
                self.stats.panics += 1;
                true
            }
        };
        let at = format!("world {here}, schedule {which}, gates {:#04x}", gates.0);
        let panics = panic && frame && !gates.closed(GATE_PANICKER);
        assert_eq!(panicked, panics, "{at}: panicked");
        let skipped: Vec<(Option<Entity>, Option<EntityError>)> =
            (self.schedules[which].command_errors().iter())
                .map(|skip| match skip.error() {
                    CommandError::Entity { entity, error, .. } => (Some(*entity), Some(*error)),
                    other => (other.entity(), None),
                })
                .collect();
        self.stats.skipped_commands += skipped.len() as u64;

        // What the systems did, in the model's terms.
        let movers = frame && !gates.closed(GATE_MOVERS);
        let hp_runs = movers && !gates.closed(GATE_HP);
        if movers {
            for (_, row) in self.side.model.rows_mut() {
                if hp_runs
                    && row[Tag::KIND].is_none()
                    && let Some(Value::Hp(hp)) = &mut row[Hp::KIND]
                {
                    *hp = hp.wrapping_add(1);
                }
                if let Some(Value::Wide(wide)) = &mut row[Wide::KIND] {
                    wide[2] = wide[2].wrapping_add(1);
                }
            }
        }
        let world = &self.side.world;
        let spawned = world.resource::<CmdLog>().expect("inserted in new").0.clone();
        // A closed gate skips the command system: nothing recorded, nothing to apply.
        let cmds = if gates.closed(GATE_COMMANDS) {
            Vec::new()
        } else {
            cmds
        };
        let spawns = cmds.iter().filter(|c| matches!(c, Cmd::Spawn { .. })).count();
        assert_eq!(
            spawned.len(),
            spawns,
            "{at}: the command system ran once, or not at all"
        );
        self.side.model.note_burst(spawned.len());
        let applied = !(panicked && which == 2);
        let expected_skips = if applied {
            self.apply_commands(&cmds, &spawned)
        } else {
            // Discarded unapplied: the ids the spawns reserved are freed (flushed, then
            // despawned), so they are dead and their slots free.
            for &entity in &spawned {
                self.side.model.spawn(entity, EMPTY_ROW);
                self.side.model.kill(entity);
            }
            Vec::new()
        };
        let expected_skips: Vec<(Option<Entity>, Option<EntityError>)> = (expected_skips.into_iter())
            .map(|(entity, error)| (Some(entity), Some(error)))
            .collect();
        assert_eq!(
            skipped, expected_skips,
            "{at}: skipped commands (the entity each was aimed at, and why)"
        );

        let read = self
            .side
            .world
            .resource::<ReadLog>()
            .expect("inserted in new")
            .0
            .clone();
        let mut want = Vec::new();
        if frame && !panicked {
            if !gates.closed(GATE_WRITER) {
                for &value in events {
                    self.side.model.events.send(value);
                }
            }
            if !gates.closed(GATE_READER) {
                want = (self.side.model.events.read(reader).into_iter())
                    .map(|v| (reader, v))
                    .collect();
            }
        }
        assert_eq!(read, want, "{at}: events read");
        if !panicked {
            self.side.model.events.update();
        }
    }

    /// Applies the command system's commands to the model, in recording order; returns the
    /// commands the world must report as skipped: the entity each was aimed at, and the
    /// error.
    fn apply_commands(&mut self, cmds: &[Cmd], spawned: &[Entity]) -> Vec<(Entity, EntityError)> {
        // Applying flushes first: every spawn's reservation becomes an entity.
        for &entity in spawned {
            self.side.model.spawn(entity, EMPTY_ROW);
        }
        let mut skipped = Vec::new();
        let mut spawns = 0;
        let tag = self.side.tag();
        for cmd in cmds {
            match cmd {
                Cmd::Spawn { shape, values } => {
                    let entity = spawned[spawns];
                    spawns += 1;
                    let row = (self.side.model.row_mut(entity)).expect("a spawn's own reservation is live");
                    assert!(row.iter().all(Option::is_none));
                    *row = Self::row_of(&shape_kinds(*shape), values);
                }
                Cmd::Insert { aim, shape, values } => {
                    let entity = resolve(*aim, &spawned[..spawns], tag);
                    let absent = self.side.absent(entity);
                    match self.side.model.row_mut(entity) {
                        Some(row) => {
                            for (&kind, value) in shape_kinds(*shape).iter().zip(values) {
                                row[kind] = Some(value.clone());
                            }
                        }
                        None => skipped.push((entity, absent)),
                    }
                }
                Cmd::Remove { aim, shape } => {
                    let entity = resolve(*aim, &spawned[..spawns], tag);
                    let absent = self.side.absent(entity);
                    let kinds = shape_kinds(*shape);
                    match self.side.model.row_mut(entity) {
                        None => skipped.push((entity, absent)),
                        // Nothing is removed when any field is missing; the error names the
                        // first missing one.
                        Some(row) => match kinds.iter().find(|&&k| row[k].is_none()) {
                            Some(&missing) => skipped.push((
                                entity,
                                EntityError::MissingComponent {
                                    entity,
                                    component: kind_name(missing),
                                },
                            )),
                            None => {
                                for kind in kinds {
                                    row[kind] = None;
                                }
                            }
                        },
                    }
                }
                Cmd::Despawn { aim } => {
                    let entity = resolve(*aim, &spawned[..spawns], tag);
                    if self.side.model.is_live(entity) {
                        self.side.model.kill(entity);
                    } else {
                        skipped.push((entity, self.side.absent(entity)));
                    }
                }
            }
        }
        skipped
    }
}

fn spawn<B: ModelBundle>(h: &mut Harness, seed: u16) {
    let kinds = B::kinds();
    let values = Harness::values(&kinds, seed, h.stats.ops);
    let bundle = B::make(&values, &h.side.shared);
    h.stats.structural += 1;
    h.side.model.flush();
    let entity = h.side.world.spawn(bundle);
    h.side.model.spawn(entity, Harness::row_of(&kinds, &values));
}

fn spawn_batch<B: ModelBundle>(h: &mut Harness, count: usize, seed: u16) {
    let kinds = B::kinds();
    let values: Vec<Vec<Value>> = (0..count)
        .map(|i| Harness::values(&kinds, seed, h.stats.ops ^ (i as u64) << 40))
        .collect();
    let bundles: Vec<B> = values.iter().map(|v| B::make(v, &h.side.shared)).collect();
    h.stats.structural += count as u64;
    h.side.model.flush();
    let ids: Vec<Entity> = if seed & 1 == 0 {
        h.side.world.spawn_batch(bundles).collect()
    } else {
        // Not exact-size: the lower size hint is 0.
        let mut items = bundles.into_iter().map(Some);
        h.side
            .world
            .spawn_batch(std::iter::from_fn(move || items.next().flatten()))
            .collect()
    };
    assert_eq!(ids.len(), count, "spawn_batch yields one id per item");
    for (entity, values) in ids.into_iter().zip(values) {
        h.side.model.spawn(entity, Harness::row_of(&kinds, &values));
    }
}

fn insert<B: ModelBundle>(h: &mut Harness, entity: Entity, seed: u16) {
    let kinds = B::kinds();
    let values = Harness::values(&kinds, seed, h.stats.ops);
    let bundle = B::make(&values, &h.side.shared);
    h.stats.structural += 1;
    h.side.model.flush();
    let result = h.side.world.insert(entity, bundle);
    match h.side.model.row_mut(entity) {
        Some(row) => {
            assert_eq!(result, Ok(()), "insert into {entity:?}");
            for (&kind, value) in kinds.iter().zip(values) {
                row[kind] = Some(value);
            }
        }
        None => assert_eq!(result, Err(h.side.absent(entity)), "insert into {entity:?}"),
    }
}

fn insert_batch<B: ModelBundle>(h: &mut Harness, targets: &[Entity], seed: u16) {
    let kinds = B::kinds();
    let values: Vec<Vec<Value>> = (0..targets.len())
        .map(|i| Harness::values(&kinds, seed, h.stats.ops ^ (i as u64) << 40))
        .collect();
    let bundles: Vec<B> = values.iter().map(|v| B::make(v, &h.side.shared)).collect();
    h.stats.structural += targets.len() as u64;
    h.side.model.flush();
    // Every entity is checked first: the first dead one is named and nothing changes.
    let expected = match targets.iter().find(|&&e| !h.side.model.is_live(e)) {
        Some(&dead) => Err(h.side.absent(dead)),
        None => Ok(()),
    };
    let result = h.side.world.insert_batch(targets.iter().copied().zip(bundles));
    assert_eq!(result, expected, "insert_batch into {targets:?}");
    if result.is_ok() {
        // In order, so an entity listed twice keeps its last bundle.
        for (entity, values) in targets.iter().zip(values) {
            let row = h.side.model.row_mut(*entity).expect("checked live");
            for (&kind, value) in kinds.iter().zip(values) {
                row[kind] = Some(value);
            }
        }
    }
}

fn remove_batch<B: ModelBundle>(h: &mut Harness, targets: &[Entity]) {
    h.stats.structural += targets.len() as u64;
    h.side.model.flush();
    let kinds = B::kinds();
    // The first bad entity in order decides the error: dead, listed again (its second
    // removal would find nothing), or lacking a field (the first one it lacks).
    let mut seen = std::collections::HashSet::new();
    let mut expected_error = None;
    for &entity in targets {
        let Some(row) = h.side.model.row(entity) else {
            expected_error = Some(h.side.absent(entity));
            break;
        };
        let missing = |kind| EntityError::MissingComponent {
            entity,
            component: kind_name(kind),
        };
        if !kinds.is_empty() && !seen.insert(entity) {
            expected_error = Some(missing(kinds[0]));
            break;
        }
        if let Some(&absent) = kinds.iter().find(|&&k| row[k].is_none()) {
            expected_error = Some(missing(absent));
            break;
        }
    }
    let result = h.side.world.remove_batch::<B>(targets);
    if let Some(error) = expected_error {
        assert_eq!(result.err(), Some(error), "remove_batch from {targets:?}");
        return;
    }
    let removed = result.unwrap_or_else(|err| panic!("remove_batch from {targets:?}: {err}"));
    assert_eq!(
        removed.len(),
        targets.len(),
        "remove_batch returns one bundle per entity"
    );
    for (entity, bundle) in targets.iter().zip(removed) {
        let row = h.side.model.row_mut(*entity).expect("checked live");
        let expected: Vec<Value> = kinds
            .iter()
            .map(|&k| row[k].take().expect("checked present"))
            .collect();
        assert_eq!(bundle.values(), expected, "remove_batch: values of {entity:?}");
    }
}

fn insert_one<T: ModelComponent>(h: &mut Harness, entity: Entity, seed: u16, armed: bool) {
    let value = Harness::values(&[T::KIND], seed, h.stats.ops).remove(0);
    let component = T::make(&value, &h.side.shared);
    h.stats.structural += 1;
    h.side.model.flush();
    let armed = armed && T::KIND == BOMB;
    // An armed insert drops one Bomb: the one it replaces, or itself when the entity is dead.
    let live = h.side.model.is_live(entity);
    let replaces = h.side.model.row(entity).is_some_and(|row| row[T::KIND].is_some());
    let expect_panic = armed && (!live || replaces);
    let result = h.guarded(armed, expect_panic, "insert_one", |world| {
        world.insert_one(entity, component)
    });
    if let Some(result) = result {
        let expected = if live { Ok(()) } else { Err(h.side.absent(entity)) };
        assert_eq!(
            result,
            expected,
            "insert_one {} into {entity:?}",
            kind_name(T::KIND)
        );
    }
    if let Some(row) = h.side.model.row_mut(entity) {
        row[T::KIND] = Some(value);
    }
}

fn remove<B: ModelBundle>(h: &mut Harness, entity: Entity) {
    h.stats.structural += 1;
    h.side.model.flush();
    let result = h.side.world.remove::<B>(entity);
    let absent = h.side.absent(entity);
    let Some(row) = h.side.model.row_mut(entity) else {
        assert!(
            matches!(result, Err(e) if e == absent),
            "remove from dead {entity:?}"
        );
        return;
    };
    let kinds = B::kinds();
    // Nothing is removed when any field is missing; the error names the first missing one.
    if let Some(&absent) = kinds.iter().find(|&&k| row[k].is_none()) {
        let expected = EntityError::MissingComponent {
            entity,
            component: kind_name(absent),
        };
        assert_eq!(result.err(), Some(expected), "remove from {entity:?}");
        return;
    }
    let removed = result.unwrap_or_else(|err| panic!("remove from {entity:?}: {err}"));
    let expected: Vec<Value> = kinds
        .iter()
        .map(|&k| row[k].take().expect("checked present"))
        .collect();
    assert_eq!(removed.values(), expected, "removed values");
}

fn remove_one<T: ModelComponent>(h: &mut Harness, entity: Entity) {
    h.stats.structural += 1;
    h.side.model.flush();
    let result = h.side.world.remove_one::<T>(entity).map(|value| value.value());
    let expected = match h.side.model.row_mut(entity) {
        None => Err(h.side.absent(entity)),
        Some(row) => row[T::KIND].take().ok_or(EntityError::MissingComponent {
            entity,
            component: kind_name(T::KIND),
        }),
    };
    assert_eq!(
        result,
        expected,
        "remove_one {} from {entity:?}",
        kind_name(T::KIND)
    );
}

fn overwrite<T: ModelComponent>(h: &mut Harness, entity: Entity, seed: u16) {
    let value = Harness::values(&[T::KIND], seed, h.stats.ops).remove(0);
    let component = T::make(&value, &h.side.shared);
    let absent = h.side.absent(entity);
    // Half the time through a `ViewMut`, which must behave exactly like `get_mut`.
    let mut view;
    let slot = if seed & 1 == 0 {
        h.side.world.get_mut::<T>(entity)
    } else {
        view = h.side.world.view_mut::<T>();
        view.get_mut(entity)
    };
    match (slot, h.side.model.row_mut(entity)) {
        (Ok(mut slot), Some(row)) if row[T::KIND].is_some() => {
            *slot = component;
            row[T::KIND] = Some(value);
        }
        (Err(err), Some(row)) if row[T::KIND].is_none() => assert_eq!(
            err,
            EntityError::MissingComponent {
                entity,
                component: kind_name(T::KIND)
            }
        ),
        (Err(err), None) => assert_eq!(err, absent),
        (result, row) => panic!(
            "get_mut {} of {entity:?}: world {result:?}, model {row:?}",
            kind_name(T::KIND)
        ),
    }
}

/// Ops decoded from one input are capped, so that one input stays fast to run.
pub const MAX_OPS_PER_INPUT: usize = 512;

/// The fuzz target's body: decodes `data` into operations, applies each to a fresh world and
/// model, runs the full check after every one, and finishes with the drop accounting.
/// Panics on the first disagreement.
pub fn run_bytes(data: &[u8]) {
    let mut harness = Harness::new();
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
    let mut harness = Harness::new();
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
