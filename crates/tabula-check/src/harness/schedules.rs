//! The three schedules (see [the harness](super)): their systems and run conditions (the
//! [gates](super#gates)), and one run on a world, with what the model says the run did — the
//! movers' writes, the commands applied or discarded, the panic, the events sent and read.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

use tabula::prelude::*;
use tabula::schedule::SystemSet;
use tabula::{CommandError, EntityError};

use super::commands::{self, Cmd, CmdLog, cmd_system};
use super::panics::expect_provoked;
use super::{Harness, Ping};
use crate::components::{ExpectedPanic, Hp, ModelComponent, Shared, Tag, Value, Wide};
use crate::ops::CmdOp;

/// Gate of the command system (all schedules); see [gates](super#gates).
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
pub(super) struct Gates(u8);

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

/// The command system's instructions for one run, whether `panicker` panics, and the events
/// the writer sends; one per world, with that world's counting types and tag.
#[derive(Default)]
pub(super) struct Script {
    pub(super) cmds: Vec<Cmd>,
    pub(super) panic: bool,
    pub(super) events: Vec<u32>,
    pub(super) shared: Arc<Shared>,
    pub(super) tag: u8,
}

/// `(reader, value)` of every event the readers saw in a run.
#[derive(Default)]
pub(super) struct ReadLog(Vec<(usize, u32)>);

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

/// The three schedules: solo, frame (parallel), frame (single-threaded).
pub(super) fn build() -> [Schedule; 3] {
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
    [solo, frame, single]
}

impl Harness {
    /// Runs schedule `which` on `self.side`'s world (the first, or the second when the
    /// caller swapped them) with the gates `gates` closed.
    pub(super) fn run(&mut self, which: usize, ops: &[CmdOp], panic: bool, events: &[u32], gates: u8) {
        let cmds = self.commands(ops);
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

        // Built at the first run, so that a harness that runs none never makes them.
        let schedule = &mut self.schedules.get_or_insert_with(build)[which];
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
        let skipped: Vec<(Option<Entity>, Option<EntityError>)> = (schedule.command_errors().iter())
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
        // The single-threaded schedule has no sync point before `panicker`: a run that
        // panics never applies its commands.
        let applied = !(panicked && which == 2);
        let expected_skips = if applied {
            commands::apply(&mut self.side, &cmds, &spawned)
        } else {
            commands::discard(&mut self.side, &spawned);
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
        // A completed run ends with `World::update_events`, which ages the removal logs too.
        if !panicked {
            self.side.model.update_events();
        }
    }
}
