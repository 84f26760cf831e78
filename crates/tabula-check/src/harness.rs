//! A world, its model and its schedules, driven one [`Op`] at a time.
//!
//! Three schedules run on the world, each with one command system that records what the
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
//!   schedule drops them, and the ids their spawns reserved become entities with no
//!   components at the world's next flush (as `Commands::spawn` documents).
//!
//! A run that panics stops before the event systems, and skips the end-of-run event update.
//! Every provoked panic carries an [`ExpectedPanic`] payload; the harness checks that each
//! operation panics exactly when the model says it must, and re-raises any other panic.

use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::{Arc, Once};

use tabula::prelude::*;
use tabula::{EntityError, QueryState};

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

/// The tag of the harness's world: fixed, so that a run's ids do not depend on how many
/// worlds the process made before it, and so that [`never_issued`] is this world's.
const WORLD_TAG: u8 = 0;

/// An id of the harness's world never handed out: its index lies far past any slot a run
/// can reach.
fn never_issued() -> Entity {
    let word = (u64::from(WORLD_TAG) << 24) | 5;
    Entity::from_bits((word << 32) | 0x00ff_fff0).expect("a nonzero generation")
}

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

/// The command system's instructions for one run, and whether `panicker` panics.
#[derive(Default)]
struct Script {
    cmds: Vec<Cmd>,
    panic: bool,
    events: Vec<u32>,
    shared: Arc<Shared>,
}

/// The ids the command system's spawns reserved, in order.
#[derive(Default)]
struct CmdLog(Vec<Entity>);

/// `(reader, value)` of every event the readers saw in a run.
#[derive(Default)]
struct ReadLog(Vec<(usize, u32)>);

/// Resolves an aim the way the command system does: `Spawned(i)` is the `i`-th (modulo)
/// entity spawned so far in the run.
fn resolve(aim: Aim, spawned: &[Entity]) -> Entity {
    match aim {
        Aim::Entity(entity) => entity,
        Aim::Spawned(_) if spawned.is_empty() => never_issued(),
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
                let entity = resolve(*aim, &log.0);
                with_shape!(*shape, cmd_insert(&mut commands, entity, values, shared));
            }
            Cmd::Remove { aim, shape } => {
                let entity = resolve(*aim, &log.0);
                with_shape!(*shape, cmd_remove(&mut commands, entity));
            }
            Cmd::Despawn { aim } => commands.despawn(resolve(*aim, &log.0)),
        }
    }
}

fn hp_system(mut query: Query<&mut Hp, Without<Tag>>) {
    query.for_each(|mut hp| hp.0 = hp.0.wrapping_add(1));
}

fn wide_system(mut query: Query<&mut Wide>) {
    query.par_for_each(|mut wide| wide.0[2] = wide.0[2].wrapping_add(1));
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
    /// Provoked panics that reached the harness (bombs and panicking systems).
    pub panics: u64,
    /// Commands the schedules reported as skipped.
    pub skipped_commands: u64,
}

/// A world, the model it must match, the checker, the queries kept across steps, and the
/// three schedules.
pub struct Harness {
    world: World,
    model: Model,
    shared: Arc<Shared>,
    checker: Checker,
    pos: QueryState<(Entity, &'static Pos, Option<&'static Small>)>,
    hp: QueryState<(Entity, &'static mut Hp), Without<Tag>>,
    wide: QueryState<&'static mut Wide, With<Name>>,
    schedules: [Schedule; 3],
    stats: Stats,
    /// Spreads target picks over the whole population, whatever its size.
    salt: usize,
}

impl std::fmt::Debug for Harness {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Harness")
            .field("live", &self.model.len())
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
    /// An empty world with its schedules.
    pub fn new() -> Self {
        install_panic_hook();
        let shared = Arc::new(Shared::default());
        let mut world = World::with_tag(WORLD_TAG);
        world.insert_resource(Script {
            shared: shared.clone(),
            ..Script::default()
        });
        world.insert_resource(CmdLog::default());
        world.insert_resource(ReadLog::default());
        world.add_event::<Ping>();
        // Removal logs that fill with every removal and despawn of these, and are aged by
        // every completed run: the soak watches that they stay bounded.
        world.track_removals::<Hp>();
        world.track_removals::<Tracked>();
        let checker = Checker::new(&mut world);

        let mut solo = Schedule::new();
        solo.set_executor(ExecutorKind::Parallel);
        solo.add_systems(cmd_system);

        let mut frame = Schedule::new();
        frame.set_executor(ExecutorKind::Parallel);
        frame.add_systems((
            hp_system,
            wide_system,
            cmd_system,
            panicker.after(hp_system).after(wide_system).after(cmd_system),
            event_writer.after(panicker),
            event_reader::<0>.after(event_writer),
        ));

        let mut single = Schedule::new();
        single.set_executor(ExecutorKind::SingleThreaded);
        single.set_auto_sync(false);
        single.add_systems((
            hp_system,
            wide_system,
            cmd_system,
            panicker.after(hp_system).after(wide_system).after(cmd_system),
            event_writer.after(panicker),
            event_reader::<1>.after(event_writer),
        ));

        Self {
            pos: world.query(),
            hp: world.query_filtered(),
            wide: world.query_filtered(),
            world,
            model: Model::default(),
            shared,
            checker,
            schedules: [solo, frame, single],
            stats: Stats::default(),
            salt: 0,
        }
    }

    /// The world.
    pub fn world(&self) -> &World {
        &self.world
    }

    /// The model.
    pub fn model(&self) -> &Model {
        &self.model
    }

    /// What the harness has done so far.
    pub fn stats(&self) -> Stats {
        self.stats
    }

    /// The world's structural figures.
    pub fn shape(&self) -> Shape {
        shape(&self.world)
    }

    /// Events the world's `Events<Ping>` holds.
    pub fn buffered_events(&self) -> usize {
        self.world.resource::<Events<Ping>>().expect("added in new").len()
    }

    /// Entries in the removal logs of the tracked types (`Hp` and `Tracked`).
    pub fn removal_log_entries(&self) -> usize {
        let hp = self.world.removal_log::<Hp>().map_or(0, Events::len);
        let tracked = self.world.removal_log::<Tracked>().map_or(0, Events::len);
        hp + tracked
    }

    /// The full check (see [`Checker::check`]), plus the buffered events.
    pub fn check(&mut self) {
        self.checker.check(&self.world, &self.model, &self.shared);
        assert_eq!(self.buffered_events(), self.model.events.len(), "buffered events");
    }

    /// A cheap check of `sample` entities (see [`Checker::check_sample`]).
    pub fn check_sample(&mut self, sample: usize) {
        self.salt = self.salt.wrapping_add(1);
        (self.checker).check_sample(&self.world, &self.model, &self.shared, sample, self.salt);
        assert_eq!(self.buffered_events(), self.model.events.len(), "buffered events");
    }

    /// The final check, then drops the world: every `Tracked` and `Bomb` must be dropped
    /// exactly once by then.
    pub fn finish(mut self) {
        self.check();
        let shared = self.shared.clone();
        drop(self);
        assert_eq!(
            shared.tracked_alive(),
            0,
            "Tracked values left after the world was dropped"
        );
        assert_eq!(
            shared.bombs_alive(),
            0,
            "Bomb values left after the world was dropped"
        );
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

    /// The entity `target` aims at: mostly a live one, sometimes a despawned one, a
    /// reservation or an id never handed out.
    fn pick(&mut self, target: Target) -> Entity {
        let index = usize::from(target >> 3);
        match target & 7 {
            0 => {
                let dead: Vec<Entity> = self.model.recent_dead().collect();
                if dead.is_empty() {
                    never_issued()
                } else {
                    dead[index % dead.len()]
                }
            }
            1 if !self.model.pending().is_empty() => self.model.pending()[index % self.model.pending().len()],
            2 => never_issued(),
            _ => {
                let ids = self.model.ids();
                if ids.is_empty() {
                    never_issued()
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
        let tables: Vec<&[Entity]> = (self.world.archetypes())
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
                for entity in self.world.reserve_entities(u32::from(count % 4)) {
                    assert!(
                        !self.world.contains(entity),
                        "a reservation is not live before a flush"
                    );
                    self.model.reserve(entity);
                }
            }
            Op::Flush => {
                self.world.flush();
                self.model.flush();
            }
            Op::Clear { armed } => self.clear(armed),
            Op::Query { which } => self.query(which % 3),
            Op::Run {
                schedule,
                ref cmds,
                panic,
                ref events,
            } => {
                let events: Vec<u32> = events.iter().map(|&v| u32::from(v)).collect();
                self.run(usize::from(schedule % 3), cmds, panic, &events);
            }
            Op::SendEvent { value } => {
                self.world
                    .send_event(Ping(u32::from(value)))
                    .expect("Ping events were added");
                self.model.events.send(u32::from(value));
            }
            Op::UpdateEvents => {
                self.world.update_events();
                self.model.events.update();
            }
        }
        assert!(!self.shared.disarm(), "the fuse was left armed");
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
            self.shared.arm();
        }
        let result = catch_unwind(AssertUnwindSafe(|| f(&mut self.world)));
        let fuse_left = self.shared.disarm();
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
        self.model.flush();
        let live = self.model.is_live(entity);
        let bomb = live && self.model.row(entity).is_some_and(|row| row[BOMB].is_some());
        let result = self.guarded(armed, armed && bomb, "despawn", |world| world.despawn(entity));
        if let Some(result) = result {
            let expected = if live {
                Ok(())
            } else {
                Err(EntityError::NoSuchEntity(entity))
            };
            assert_eq!(result, expected, "despawn {entity:?}");
        }
        if live {
            self.model.kill(entity);
        }
    }

    fn clear(&mut self, armed: bool) {
        self.model.flush();
        self.stats.structural += self.model.len() as u64;
        let bomb = self.model.count_of(BOMB) > 0;
        self.guarded(armed, armed && bomb, "clear", World::clear);
        for entity in self.model.ids().to_vec() {
            self.model.kill(entity);
        }
    }

    fn query(&mut self, which: u8) {
        match which {
            0 => {
                let mut seen: Vec<(Entity, Value, Option<Value>)> = (self.pos.iter(&self.world))
                    .map(|(e, pos, small)| (e, pos.value(), small.map(Small::value)))
                    .collect();
                seen.sort_by_key(|&(e, _, _)| e);
                let mut want: Vec<(Entity, Value, Option<Value>)> = (self.model.rows())
                    .filter_map(|(e, row)| Some((e, row[Pos::KIND].clone()?, row[Small::KIND].clone())))
                    .collect();
                want.sort_by_key(|&(e, _, _)| e);
                assert_eq!(seen, want, "iter over (Entity, &Pos, Option<&Small>)");
            }
            1 => {
                let mut seen = Vec::new();
                self.hp.for_each(&mut self.world, |(e, mut hp)| {
                    hp.0 = hp.0.wrapping_add(3);
                    seen.push((e, hp.0));
                });
                seen.sort_unstable();
                let mut want = Vec::new();
                for (e, row) in self.model.rows_mut().filter(|(_, row)| row[Tag::KIND].is_none()) {
                    if let Some(Value::Hp(hp)) = &mut row[Hp::KIND] {
                        *hp = hp.wrapping_add(3);
                        want.push((e, *hp));
                    }
                }
                want.sort_unstable();
                assert_eq!(seen, want, "for_each over (Entity, &mut Hp), Without<Tag>");
            }
            _ => {
                self.wide
                    .par_for_each(&mut self.world, |mut wide| wide.0[0] = wide.0[0].wrapping_add(1));
                for (_, row) in self.model.rows_mut().filter(|(_, row)| row[Name::KIND].is_some()) {
                    if let Some(Value::Wide(wide)) = &mut row[Wide::KIND] {
                        wide[0] = wide[0].wrapping_add(1);
                    }
                }
            }
        }
    }

    fn run(&mut self, which: usize, ops: &[CmdOp], panic: bool, events: &[u32]) {
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
        self.stats.structural += cmds.len() as u64;
        self.stats.runs += 1;
        {
            let script = self.world.resource_mut::<Script>().expect("inserted in new");
            script.cmds = cmds.clone();
            script.panic = panic;
            script.events = events.to_vec();
        }
        self.world
            .resource_mut::<CmdLog>()
            .expect("inserted in new")
            .0
            .clear();
        self.world
            .resource_mut::<ReadLog>()
            .expect("inserted in new")
            .0
            .clear();
        // `Schedule::run` flushes the world before any system runs.
        self.model.flush();

        let schedule = &mut self.schedules[which];
        let result = catch_unwind(AssertUnwindSafe(|| schedule.run(&mut self.world)));
        let panicked = match result {
            Ok(()) => false,
            Err(payload) => {
                expect_provoked(payload);
                self.stats.panics += 1;
                true
            }
        };
        let frame = which != 0;
        assert_eq!(panicked, panic && frame, "schedule {which}: panicked");
        let skipped = self.schedules[which].command_errors().len();
        self.stats.skipped_commands += skipped as u64;

        // What the systems did, in the model's terms.
        if frame {
            for (_, row) in self.model.rows_mut() {
                if row[Tag::KIND].is_none()
                    && let Some(Value::Hp(hp)) = &mut row[Hp::KIND]
                {
                    *hp = hp.wrapping_add(1);
                }
                if let Some(Value::Wide(wide)) = &mut row[Wide::KIND] {
                    wide[2] = wide[2].wrapping_add(1);
                }
            }
        }
        let spawned = self
            .world
            .resource::<CmdLog>()
            .expect("inserted in new")
            .0
            .clone();
        let spawns = cmds.iter().filter(|c| matches!(c, Cmd::Spawn { .. })).count();
        assert_eq!(spawned.len(), spawns, "the command system ran once");
        let applied = !(panicked && which == 2);
        let expected_skips = if applied {
            self.apply_commands(&cmds, &spawned)
        } else {
            // Dropped unapplied: the spawns' reservations become empty entities at the next
            // flush.
            for &entity in &spawned {
                self.model.reserve(entity);
            }
            0
        };
        assert_eq!(skipped, expected_skips, "schedule {which}: skipped commands");

        let reader = which.saturating_sub(1);
        let mut read = self
            .world
            .resource::<ReadLog>()
            .expect("inserted in new")
            .0
            .clone();
        if frame && !panicked {
            for &value in events {
                self.model.events.send(value);
            }
            let want: Vec<(usize, u32)> = (self.model.events.read(reader).into_iter())
                .map(|v| (reader, v))
                .collect();
            assert_eq!(read, want, "schedule {which}: events read");
        } else {
            read.clear();
            assert!(read.is_empty());
        }
        if !panicked {
            self.model.events.update();
        }
    }

    /// Applies the command system's commands to the model, in recording order; returns how
    /// many the world must report as skipped.
    fn apply_commands(&mut self, cmds: &[Cmd], spawned: &[Entity]) -> usize {
        // Applying flushes first: every spawn's reservation becomes an entity.
        for &entity in spawned {
            self.model.spawn(entity, EMPTY_ROW);
        }
        let mut skipped = 0;
        let mut spawns = 0;
        for cmd in cmds {
            match cmd {
                Cmd::Spawn { shape, values } => {
                    let entity = spawned[spawns];
                    spawns += 1;
                    let row = self
                        .model
                        .row_mut(entity)
                        .expect("a spawn's own reservation is live");
                    assert!(row.iter().all(Option::is_none));
                    *row = Self::row_of(&shape_kinds(*shape), values);
                }
                Cmd::Insert { aim, shape, values } => {
                    let entity = resolve(*aim, &spawned[..spawns]);
                    match self.model.row_mut(entity) {
                        Some(row) => {
                            for (&kind, value) in shape_kinds(*shape).iter().zip(values) {
                                row[kind] = Some(value.clone());
                            }
                        }
                        None => skipped += 1,
                    }
                }
                Cmd::Remove { aim, shape } => {
                    let entity = resolve(*aim, &spawned[..spawns]);
                    let kinds = shape_kinds(*shape);
                    match self.model.row_mut(entity) {
                        Some(row) if kinds.iter().all(|&k| row[k].is_some()) => {
                            for kind in kinds {
                                row[kind] = None;
                            }
                        }
                        _ => skipped += 1,
                    }
                }
                Cmd::Despawn { aim } => {
                    let entity = resolve(*aim, &spawned[..spawns]);
                    if self.model.is_live(entity) {
                        self.model.kill(entity);
                    } else {
                        skipped += 1;
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
    let bundle = B::make(&values, &h.shared);
    h.stats.structural += 1;
    h.model.flush();
    let entity = h.world.spawn(bundle);
    h.model.spawn(entity, Harness::row_of(&kinds, &values));
}

fn spawn_batch<B: ModelBundle>(h: &mut Harness, count: usize, seed: u16) {
    let kinds = B::kinds();
    let values: Vec<Vec<Value>> = (0..count)
        .map(|i| Harness::values(&kinds, seed, h.stats.ops ^ (i as u64) << 40))
        .collect();
    let bundles: Vec<B> = values.iter().map(|v| B::make(v, &h.shared)).collect();
    h.stats.structural += count as u64;
    h.model.flush();
    let ids: Vec<Entity> = if seed & 1 == 0 {
        h.world.spawn_batch(bundles).collect()
    } else {
        // Not exact-size: the lower size hint is 0.
        let mut items = bundles.into_iter().map(Some);
        h.world
            .spawn_batch(std::iter::from_fn(move || items.next().flatten()))
            .collect()
    };
    assert_eq!(ids.len(), count, "spawn_batch yields one id per item");
    for (entity, values) in ids.into_iter().zip(values) {
        h.model.spawn(entity, Harness::row_of(&kinds, &values));
    }
}

fn insert<B: ModelBundle>(h: &mut Harness, entity: Entity, seed: u16) {
    let kinds = B::kinds();
    let values = Harness::values(&kinds, seed, h.stats.ops);
    let bundle = B::make(&values, &h.shared);
    h.stats.structural += 1;
    h.model.flush();
    let result = h.world.insert(entity, bundle);
    match h.model.row_mut(entity) {
        Some(row) => {
            assert_eq!(result, Ok(()), "insert into {entity:?}");
            for (&kind, value) in kinds.iter().zip(values) {
                row[kind] = Some(value);
            }
        }
        None => assert_eq!(
            result,
            Err(EntityError::NoSuchEntity(entity)),
            "insert into {entity:?}"
        ),
    }
}

fn insert_batch<B: ModelBundle>(h: &mut Harness, targets: &[Entity], seed: u16) {
    let kinds = B::kinds();
    let values: Vec<Vec<Value>> = (0..targets.len())
        .map(|i| Harness::values(&kinds, seed, h.stats.ops ^ (i as u64) << 40))
        .collect();
    let bundles: Vec<B> = values.iter().map(|v| B::make(v, &h.shared)).collect();
    h.stats.structural += targets.len() as u64;
    h.model.flush();
    // Every entity is checked first: the first dead one is named and nothing changes.
    let expected = match targets.iter().find(|&&e| !h.model.is_live(e)) {
        Some(&dead) => Err(EntityError::NoSuchEntity(dead)),
        None => Ok(()),
    };
    let result = h.world.insert_batch(targets.iter().copied().zip(bundles));
    assert_eq!(result, expected, "insert_batch into {targets:?}");
    if result.is_ok() {
        // In order, so an entity listed twice keeps its last bundle.
        for (entity, values) in targets.iter().zip(values) {
            let row = h.model.row_mut(*entity).expect("checked live");
            for (&kind, value) in kinds.iter().zip(values) {
                row[kind] = Some(value);
            }
        }
    }
}

fn remove_batch<B: ModelBundle>(h: &mut Harness, targets: &[Entity]) {
    h.stats.structural += targets.len() as u64;
    h.model.flush();
    let kinds = B::kinds();
    // The first bad entity in order decides the error: dead, listed again (its second
    // removal would find nothing), or lacking a field (the first one it lacks).
    let mut seen = std::collections::HashSet::new();
    let mut expected_error = None;
    for &entity in targets {
        let Some(row) = h.model.row(entity) else {
            expected_error = Some(EntityError::NoSuchEntity(entity));
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
    let result = h.world.remove_batch::<B>(targets);
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
        let row = h.model.row_mut(*entity).expect("checked live");
        let expected: Vec<Value> = kinds
            .iter()
            .map(|&k| row[k].take().expect("checked present"))
            .collect();
        assert_eq!(bundle.values(), expected, "remove_batch: values of {entity:?}");
    }
}

fn insert_one<T: ModelComponent>(h: &mut Harness, entity: Entity, seed: u16, armed: bool) {
    let value = Harness::values(&[T::KIND], seed, h.stats.ops).remove(0);
    let component = T::make(&value, &h.shared);
    h.stats.structural += 1;
    h.model.flush();
    let armed = armed && T::KIND == BOMB;
    // An armed insert drops one Bomb: the one it replaces, or itself when the entity is dead.
    let live = h.model.is_live(entity);
    let replaces = h.model.row(entity).is_some_and(|row| row[T::KIND].is_some());
    let expect_panic = armed && (!live || replaces);
    let result = h.guarded(armed, expect_panic, "insert_one", |world| {
        world.insert_one(entity, component)
    });
    if let Some(result) = result {
        let expected = if live {
            Ok(())
        } else {
            Err(EntityError::NoSuchEntity(entity))
        };
        assert_eq!(
            result,
            expected,
            "insert_one {} into {entity:?}",
            kind_name(T::KIND)
        );
    }
    if let Some(row) = h.model.row_mut(entity) {
        row[T::KIND] = Some(value);
    }
}

fn remove<B: ModelBundle>(h: &mut Harness, entity: Entity) {
    h.stats.structural += 1;
    h.model.flush();
    let result = h.world.remove::<B>(entity);
    let Some(row) = h.model.row_mut(entity) else {
        assert!(
            matches!(result, Err(EntityError::NoSuchEntity(e)) if e == entity),
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
    h.model.flush();
    let result = h.world.remove_one::<T>(entity).map(|value| value.value());
    let expected = match h.model.row_mut(entity) {
        None => Err(EntityError::NoSuchEntity(entity)),
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
    let component = T::make(&value, &h.shared);
    // Half the time through a `ViewMut`, which must behave exactly like `get_mut`.
    let mut view;
    let slot = if seed & 1 == 0 {
        h.world.get_mut::<T>(entity)
    } else {
        view = h.world.view_mut::<T>();
        view.get_mut(entity)
    };
    match (slot, h.model.row_mut(entity)) {
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
        (Err(err), None) => assert_eq!(err, EntityError::NoSuchEntity(entity)),
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
