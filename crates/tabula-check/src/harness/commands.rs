//! Commands: what the schedules' command system records (spawns, inserts, removes,
//! despawns, triggers of `Poke` and pairs of `Rel`, some aimed at dead, reserved,
//! never-issued or another world's ids), and how the
//! model applies them when the world does, telling which ones the world must report skipped
//! and why.

use std::sync::Arc;

use tabula::EntityError;
use tabula::prelude::*;

use super::Harness;
use super::schedules::Script;
use super::side::{Side, never_issued};
use crate::components::{ModelBundle, SHAPES, Shared, Value, shape_kinds, with_shape};
use crate::links::{Poke, Rel};
use crate::model::EMPTY_ROW;
use crate::ops::{CmdOp, CmdTarget};

/// An entity a recorded command aims at, resolved as far as the harness can before the run.
#[derive(Clone, Copy, Debug)]
pub(super) enum Aim {
    Entity(Entity),
    Spawned(u8),
}

/// One command for the command system, values drawn.
#[derive(Clone, Debug)]
pub(super) enum Cmd {
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
    Trigger {
        aim: Aim,
        value: u8,
    },
    Relate {
        source: Aim,
        target: Aim,
    },
}

/// The ids the command system's spawns reserved, in order.
#[derive(Default)]
pub(super) struct CmdLog(pub(super) Vec<Entity>);

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

/// The command system: records the run's script, logging the ids its spawns return.
pub(super) fn cmd_system(script: Res<Script>, mut log: ResMut<CmdLog>, mut commands: Commands) {
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
            Cmd::Trigger { aim, value } => {
                commands.trigger_targets(Poke(*value), [resolve(*aim, &log.0, script.tag)]);
            }
            Cmd::Relate { source, target } => commands.relate::<Rel>(
                resolve(*source, &log.0, script.tag),
                resolve(*target, &log.0, script.tag),
            ),
        }
    }
}

impl Harness {
    /// The commands `ops` describe, aimed at `self.side`'s world, values drawn.
    pub(super) fn commands(&mut self, ops: &[CmdOp]) -> Vec<Cmd> {
        let aim = |h: &mut Self, target: CmdTarget| match target {
            CmdTarget::Existing(t) => Aim::Entity(h.pick(t)),
            CmdTarget::Spawned(i) => Aim::Spawned(i),
        };
        let salt = self.stats.ops;
        ops.iter()
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
                CmdOp::Trigger { target, value } => Cmd::Trigger {
                    aim: aim(self, target),
                    value,
                },
                CmdOp::Relate { source, target } => Cmd::Relate {
                    source: aim(self, source),
                    target: aim(self, target),
                },
            })
            .collect()
    }
}

/// The commands a run recorded were discarded unapplied: the ids their spawns reserved are
/// freed (flushed, then despawned), so they are dead and their slots free.
pub(super) fn discard(side: &mut Side, spawned: &[Entity]) {
    for &entity in spawned {
        side.model.spawn(entity, EMPTY_ROW);
        side.model.kill(entity);
    }
}

/// Applies the command system's commands to the model, in recording order; returns the
/// commands the world must report as skipped: the entity each was aimed at, and the error.
pub(super) fn apply(side: &mut Side, cmds: &[Cmd], spawned: &[Entity]) -> Vec<(Entity, EntityError)> {
    // Applying flushes first: every spawn's reservation becomes an entity.
    for &entity in spawned {
        side.model.spawn(entity, EMPTY_ROW);
    }
    let mut skipped = Vec::new();
    let mut spawns = 0;
    let tag = side.tag();
    for cmd in cmds {
        match cmd {
            Cmd::Spawn { shape, values } => {
                let entity = spawned[spawns];
                spawns += 1;
                let row = (side.model.row(entity)).expect("a spawn's own reservation is live");
                assert!(row.iter().all(Option::is_none));
                for (&kind, value) in shape_kinds(*shape).iter().zip(values) {
                    side.model.write(entity, kind, value.clone());
                }
            }
            Cmd::Insert { aim, shape, values } => {
                let entity = resolve(*aim, &spawned[..spawns], tag);
                let absent = side.absent(entity);
                if side.model.is_live(entity) {
                    for (&kind, value) in shape_kinds(*shape).iter().zip(values) {
                        side.model.write(entity, kind, value.clone());
                    }
                } else {
                    skipped.push((entity, absent));
                }
            }
            Cmd::Remove { aim, shape } => {
                let entity = resolve(*aim, &spawned[..spawns], tag);
                let kinds = shape_kinds(*shape);
                match side.model.row(entity) {
                    None => skipped.push((entity, side.absent(entity))),
                    // Nothing is removed when any field is missing; the error names the first
                    // missing one.
                    Some(row) => match kinds.iter().find(|&&k| row[k].is_none()) {
                        Some(&missing) => skipped.push((entity, Side::missing(entity, missing))),
                        None => {
                            for kind in kinds {
                                side.model.take(entity, kind);
                            }
                        }
                    },
                }
            }
            Cmd::Despawn { aim } => {
                let entity = resolve(*aim, &spawned[..spawns], tag);
                if side.model.is_live(entity) {
                    side.model.kill(entity);
                } else {
                    skipped.push((entity, side.absent(entity)));
                }
            }
            Cmd::Trigger { aim, value } => {
                let entity = resolve(*aim, &spawned[..spawns], tag);
                side.model.poke(&[entity], *value);
            }
            Cmd::Relate { source, target } => {
                let source = resolve(*source, &spawned[..spawns], tag);
                let target = resolve(*target, &spawned[..spawns], tag);
                // A dead entity fails the command, reported for the source.
                match [source, target].into_iter().find(|&e| !side.model.is_live(e)) {
                    Some(dead) => skipped.push((source, side.absent(dead))),
                    None => {
                        side.model.relate(source, target);
                    }
                }
            }
        }
    }
    skipped
}
