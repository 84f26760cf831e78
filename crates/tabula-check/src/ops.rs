//! Operations, decoded from bytes (a fuzz input, or a seeded random stream) and encoded back
//! (to write corpus files).

use crate::source::Source;

/// Which entity an operation aims at, resolved against the model when it is applied: mostly
/// a live entity, sometimes a despawned one, a reservation, or an id never handed out.
pub type Target = u16;

/// One call (or a few) on the world, checked against the model when applied.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Op {
    /// `World::spawn` of bundle shape `shape` (values drawn from `seed`).
    Spawn {
        /// Bundle shape, modulo [`SHAPES`](crate::SHAPES).
        shape: u8,
        /// Seed of the component values.
        seed: u16,
    },
    /// `World::spawn_at`: gives an entity its components, which is refused unless it is a
    /// live entity with none (a flushed reservation).
    SpawnAt {
        /// The entity, unless `fresh`.
        target: Target,
        /// Reserve a new id with `World::reserve_entity` first and aim at it (the
        /// reserve-then-`spawn_at` pattern of deferred spawns).
        fresh: bool,
        /// Bundle shape.
        shape: u8,
        /// Seed of the component values.
        seed: u16,
    },
    /// `World::spawn_batch` of `count` bundles of one shape.
    SpawnBatch {
        /// Bundle shape.
        shape: u8,
        /// How many entities (taken modulo 8).
        count: u8,
        /// Seed of the component values.
        seed: u16,
    },
    /// `World::insert` of a bundle, or `EntityMut::insert` through `World::entity_mut`.
    Insert {
        /// The entity.
        target: Target,
        /// Bundle shape.
        shape: u8,
        /// Seed of the component values.
        seed: u16,
        /// Through `World::entity_mut` (opcode 4) instead of `World::insert` (opcode 3).
        entity_mut: bool,
    },
    /// `World::insert_one` of one component; with `armed`, a `Bomb` inserted this way makes
    /// the value it drops (the one it replaces, or itself when the entity is dead) panic.
    InsertOne {
        /// The entity.
        target: Target,
        /// Component kind.
        kind: u8,
        /// Seed of the value.
        seed: u16,
        /// Arm the bomb fuse first (only meaningful for the `Bomb` kind).
        armed: bool,
    },
    /// `World::remove` of a bundle.
    Remove {
        /// The entity.
        target: Target,
        /// Bundle shape; with bit 7 set, one of the shapes the entity holds whole (the
        /// `shape & 0x7f`-th, modulo how many), so that the removal succeeds.
        shape: u8,
    },
    /// `World::remove_one` of one component.
    RemoveOne {
        /// The entity.
        target: Target,
        /// Component kind.
        kind: u8,
    },
    /// `World::despawn`; with `armed`, a `Bomb` on the entity panics when dropped.
    Despawn {
        /// The entity.
        target: Target,
        /// Arm the bomb fuse first.
        armed: bool,
    },
    /// Writes through fields of the values `World::get_mut`, `World::view_mut` and
    /// `EntityMut::get_mut` hand out: `Hp`, `Name`, `Wide`, `Small` and `Tracked` change in
    /// place. For an entity that is not live, `get_mut` must refuse it.
    Edit {
        /// The entity.
        target: Target,
        /// How much the values change.
        delta: u8,
    },
    /// A whole-value write through `World::get_mut` (or `World::view_mut`).
    Overwrite {
        /// The entity.
        target: Target,
        /// Component kind.
        kind: u8,
        /// Seed of the new value.
        seed: u16,
    },
    /// `World::insert_batch` (`insert`) or `World::remove_batch` of one bundle shape, over
    /// a whole archetype's entities in row order (the whole-table path) or reversed, or over
    /// a few entities that may be dead, reserved or listed twice.
    Batch {
        /// Insert, or remove.
        insert: bool,
        /// Bundle shape.
        shape: u8,
        /// Which entities: bits 0-1 choose the kind of list, the rest which archetype.
        pick: u8,
        /// Seed of the component values (and of the entities of a list of a few).
        seed: u16,
    },
    /// `World::reserve_entities` (or, with bit 2 of `count` set, `World::reserve_entity`
    /// once per id): ids that become empty entities at the next flush.
    Reserve {
        /// How many (bits 0-1), and one at a time (bit 2).
        count: u8,
    },
    /// `World::track_removals` of one component kind: from then on the world logs which
    /// entities lose it, which the check compares with the model's log.
    TrackRemovals {
        /// Component kind, modulo [`KINDS`](crate::KINDS).
        kind: u8,
    },
    /// `World::flush`.
    Flush,
    /// `World::clear`; with `armed`, the first `Bomb` dropped panics.
    Clear {
        /// Arm the bomb fuse first.
        armed: bool,
    },
    /// A pass of a query kept across steps (see [`QUERIES`] for which is which).
    Query {
        /// Which query pass, modulo [`QUERIES`].
        which: u8,
    },
    /// Runs a schedule whose command system records `cmds`, on the harness's first world or
    /// (`away`) on its second; see [`crate::harness`] for the three schedules, the two
    /// worlds and the gates.
    Run {
        /// Which schedule (modulo 3).
        schedule: u8,
        /// Run it on the second world (opcode 17) instead of the first (opcode 16). The same
        /// schedules run on both, so a schedule whose last run was on the other world is
        /// initialised anew for this one.
        away: bool,
        /// What the command system records.
        cmds: Vec<CmdOp>,
        /// Whether the panicking system panics this run.
        panic: bool,
        /// Values of the events the event system sends this run.
        events: Vec<u8>,
        /// The run conditions that say no this run, one bit per gate (see
        /// [`crate::harness`]); bits past the gates are ignored. 0: every system runs.
        gates: u8,
    },
    /// `World::send_event` between runs.
    SendEvent {
        /// The event's value.
        value: u8,
    },
    /// `World::update_events` between runs.
    UpdateEvents,
    /// `World::add_observer` of an observer that logs its runs (see [`crate::links`]): of
    /// `OnAdd`, `OnInsert`, `OnReplace`, `OnRemove` or `OnDespawn` of one model kind (`Bomb`
    /// excepted), or of the user event [`Poke`](crate::Poke); watching every entity, or the one `target` aims at. With
    /// [`MAX_OBSERVERS`] live already, the oldest is despawned instead.
    Observe {
        /// Which event, modulo 6: `OnAdd`, `OnInsert`, `OnRemove`, `Poke`, `OnReplace`,
        /// `OnDespawn`.
        event: u8,
        /// The component kind, modulo `KINDS - 1` (no `Bomb`).
        kind: u8,
        /// The entity watched; `None`: every entity.
        target: Option<Target>,
    },
    /// `World::despawn` of a live observer (the `which`-th, modulo how many); nothing when
    /// there is none.
    DespawnObserver {
        /// Which observer.
        which: u8,
    },
    /// `World::trigger_targets(Poke(value), targets)`, or `World::trigger` with no target:
    /// it propagates up the hierarchy from each target.
    Poke {
        /// The targets (at most 3 decode).
        targets: Vec<Target>,
        /// The event's value.
        value: u8,
    },
    /// `World::set_parent`.
    SetParent {
        /// The child.
        child: Target,
        /// The parent.
        parent: Target,
    },
    /// `World::remove_parent`.
    RemoveParent {
        /// The child.
        child: Target,
    },
    /// `World::despawn_recursive`.
    DespawnRecursive {
        /// The root of the subtree.
        target: Target,
    },
    /// `World::relate::<Rel>` or (`unrelate`) `World::unrelate::<Rel>`.
    Relate {
        /// The source.
        source: Target,
        /// The target.
        target: Target,
        /// Remove the pair instead.
        unrelate: bool,
    },
    /// `World::unrelate_all::<Rel>`.
    UnrelateAll {
        /// The entity.
        target: Target,
    },
}

/// At most this many observers live in a harness world at once (an [`Op::Observe`] past it
/// despawns the oldest instead), so that the cost of every op stays bounded.
pub const MAX_OBSERVERS: usize = 8;

/// An entity a command aims at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CmdTarget {
    /// Resolved against the model before the run, like [`Target`].
    Existing(Target),
    /// The entity spawned by an earlier command of the same run (index modulo how many).
    Spawned(u8),
}

/// One command recorded by the command system.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CmdOp {
    /// `Commands::spawn`.
    Spawn {
        /// Bundle shape.
        shape: u8,
        /// Seed of the component values.
        seed: u16,
    },
    /// `Commands::insert`.
    Insert {
        /// The entity.
        target: CmdTarget,
        /// Bundle shape.
        shape: u8,
        /// Seed of the component values.
        seed: u16,
    },
    /// `Commands::remove`.
    Remove {
        /// The entity.
        target: CmdTarget,
        /// Bundle shape.
        shape: u8,
    },
    /// `Commands::despawn`.
    Despawn {
        /// The entity.
        target: CmdTarget,
    },
    /// `Commands::trigger_targets` of [`Poke`](crate::Poke)`(value)` on one entity: its
    /// observers run when the command is applied (at the schedule's sync point).
    Trigger {
        /// The entity.
        target: CmdTarget,
        /// The event's value.
        value: u8,
    },
    /// `Commands::relate::<Rel>`: skipped (reported for `source`) when either is dead.
    Relate {
        /// The source.
        source: CmdTarget,
        /// The target.
        target: CmdTarget,
    },
}

/// How many [`Op::Query`] passes there are, each on a query kept across steps (so that it
/// matches new archetypes incrementally and reuses its run plan):
///
/// * 0: `(Entity, &Pos, Option<&Small>)` read with `iter`, `count`, and `get` of every live
///   entity, of the 8 most recent dead, of the reservations and of another world's id;
/// * 1: `(Entity, &mut Hp), Without<Tag>` written with `for_each`, three times (at a new
///   archetype, the first pass walks the archetypes, the second makes a run plan, the third
///   reads it);
/// * 2: `(Entity, &mut Wide), With<Name>` written with `par_for_each` (on rayon's threads);
/// * 3: the same query written with `for_each_chunk`, three times;
/// * 4: `(Entity, &Tracked, Has<Tag>), Or<(With<Small>, Without<Pos>)>` read with `for_each`,
///   three times;
/// * 5: the query of 1 written with `get_mut`, for every live entity.
///
/// Every pass but 2 runs on the calling thread.
pub const QUERIES: u8 = 6;

/// The [`Op::Query`] pass that starts rayon's threads (`par_for_each`); see [`QUERIES`].
pub const PAR_QUERY: u8 = 2;

/// At most this many commands per run, and events per run, decode from bytes.
pub const MAX_DECODED_CMDS: u8 = 8;

fn cmd_target(src: &mut impl Source) -> Option<CmdTarget> {
    let b = src.byte()?;
    Some(if b & 1 == 1 {
        CmdTarget::Spawned(b >> 1)
    } else {
        CmdTarget::Existing(u16::from(b >> 1) | u16::from(src.byte()?) << 7)
    })
}

fn put_cmd_target(target: CmdTarget, out: &mut Vec<u8>) {
    match target {
        CmdTarget::Spawned(i) => out.push((i << 1) | 1),
        CmdTarget::Existing(t) => {
            out.push(((t & 0x7f) as u8) << 1);
            out.push((t >> 7) as u8);
        }
    }
}

impl CmdOp {
    /// Reads one command, or `None` when the input is used up.
    pub fn decode(src: &mut impl Source) -> Option<CmdOp> {
        let code = src.byte()?;
        // The top 16 byte values, above the canonical 0-3 of the first four commands.
        if code >= 0xf0 {
            return Some(if code < 0xf8 {
                CmdOp::Trigger {
                    target: cmd_target(src)?,
                    value: src.byte()?,
                }
            } else {
                CmdOp::Relate {
                    source: cmd_target(src)?,
                    target: cmd_target(src)?,
                }
            });
        }
        Some(match code % 4 {
            0 => CmdOp::Spawn {
                shape: src.byte()?,
                seed: src.u16()?,
            },
            1 => CmdOp::Insert {
                target: cmd_target(src)?,
                shape: src.byte()?,
                seed: src.u16()?,
            },
            2 => CmdOp::Remove {
                target: cmd_target(src)?,
                shape: src.byte()?,
            },
            _ => CmdOp::Despawn {
                target: cmd_target(src)?,
            },
        })
    }

    /// Appends the bytes [`decode`](Self::decode) reads back as `self`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        match *self {
            CmdOp::Spawn { shape, seed } => {
                out.extend([0, shape]);
                out.extend(seed.to_le_bytes());
            }
            CmdOp::Insert { target, shape, seed } => {
                out.push(1);
                put_cmd_target(target, out);
                out.push(shape);
                out.extend(seed.to_le_bytes());
            }
            CmdOp::Remove { target, shape } => {
                out.push(2);
                put_cmd_target(target, out);
                out.push(shape);
            }
            CmdOp::Despawn { target } => {
                out.push(3);
                put_cmd_target(target, out);
            }
            CmdOp::Trigger { target, value } => {
                out.push(0xf0);
                put_cmd_target(target, out);
                out.push(value);
            }
            CmdOp::Relate { source, target } => {
                out.push(0xf8);
                put_cmd_target(source, out);
                put_cmd_target(target, out);
            }
        }
    }
}

/// Opcodes: the first byte of an operation without its high bit, modulo [`OPCODES`]; the
/// high bit arms the bomb fuse where that means something (and makes a `SpawnAt` `fresh`
/// and a `Batch` an insert).
const OPCODES: u8 = 20;

/// The one opcode byte (without the high bit) that clears the world.
const CLEAR: u8 = 114;

/// Opcode bytes (without the high bit) from this one up, [`CLEAR`] excepted, decode to the
/// observer, relation and hierarchy ops, by their value modulo 10 (`Op::Observe` takes three
/// of the ten, so that observers are added about as often as they die, and making a pair
/// two); the bytes below
/// keep decoding modulo [`OPCODES`] as before, so corpus files written with the canonical
/// opcodes keep their meaning.
const EXTENDED: u8 = 100;

impl Op {
    /// Reads one operation, or `None` when the input is used up.
    pub fn decode(src: &mut impl Source) -> Option<Op> {
        let code = src.byte()?;
        let armed = code & 0x80 != 0;
        if code & 0x7f >= EXTENDED && code & 0x7f != CLEAR {
            return Self::decode_extended((code & 0x7f) % 10, armed, src);
        }
        Some(match (code & 0x7f) % OPCODES {
            0 => Op::Spawn {
                shape: src.byte()?,
                seed: src.u16()?,
            },
            1 => Op::SpawnAt {
                target: src.u16()?,
                fresh: armed,
                shape: src.byte()?,
                seed: src.u16()?,
            },
            2 => Op::SpawnBatch {
                shape: src.byte()?,
                count: src.byte()?,
                seed: src.u16()?,
            },
            op @ (3 | 4) => Op::Insert {
                target: src.u16()?,
                shape: src.byte()?,
                seed: src.u16()?,
                entity_mut: op == 4,
            },
            5 => Op::InsertOne {
                target: src.u16()?,
                kind: src.byte()?,
                seed: src.u16()?,
                armed,
            },
            6 => Op::Remove {
                target: src.u16()?,
                shape: src.byte()?,
            },
            7 => Op::TrackRemovals { kind: src.byte()? },
            8 => Op::RemoveOne {
                target: src.u16()?,
                kind: src.byte()?,
            },
            9 => Op::Despawn {
                target: src.u16()?,
                armed,
            },
            10 => Op::Edit {
                target: src.u16()?,
                delta: src.byte()?,
            },
            11 => Op::Overwrite {
                target: src.u16()?,
                kind: src.byte()?,
                seed: src.u16()?,
            },
            12 => Op::Reserve { count: src.byte()? },
            13 => Op::Batch {
                insert: armed,
                shape: src.byte()?,
                pick: src.byte()?,
                seed: src.u16()?,
            },
            // Clearing is drastic: only 2 of the 12 bytes that land here clear.
            14 if code & 0x7f == CLEAR => Op::Clear { armed },
            14 => Op::Flush,
            15 => Op::Query { which: src.byte()? },
            // Bits of `counts`: 0-3 the commands (modulo 9), 4-5 the events, 6 a gates byte
            // follows, 7 panic.
            op @ (16 | 17) => {
                let away = op == 17;
                let schedule = src.byte()?;
                let counts = src.byte()?;
                let panic = counts & 0x80 != 0;
                let gates = if counts & 0x40 != 0 { src.byte()? } else { 0 };
                let cmds = (0..(counts & 0x0f) % (MAX_DECODED_CMDS + 1))
                    .map(|_| CmdOp::decode(src))
                    .collect::<Option<Vec<_>>>()?;
                let events = (0..(counts >> 4) & 0x03)
                    .map(|_| src.byte())
                    .collect::<Option<Vec<_>>>()?;
                Op::Run {
                    schedule,
                    away,
                    cmds,
                    panic,
                    events,
                    gates,
                }
            }
            18 => Op::SendEvent { value: src.byte()? },
            _ => Op::UpdateEvents,
        })
    }

    /// The observer, relation and hierarchy ops (see [`EXTENDED`]).
    fn decode_extended(op: u8, armed: bool, src: &mut impl Source) -> Option<Op> {
        Some(match op {
            0..=2 => Op::Observe {
                event: src.byte()?,
                kind: src.byte()?,
                target: if armed { Some(src.u16()?) } else { None },
            },
            3 => Op::DespawnObserver { which: src.byte()? },
            4 => {
                let count = src.byte()?;
                let targets = (0..count % 4).map(|_| src.u16()).collect::<Option<Vec<_>>>()?;
                Op::Poke {
                    targets,
                    value: src.byte()?,
                }
            }
            5 => Op::SetParent {
                child: src.u16()?,
                parent: src.u16()?,
            },
            6 if armed => Op::DespawnRecursive { target: src.u16()? },
            6 => Op::RemoveParent { child: src.u16()? },
            7 | 8 => Op::Relate {
                source: src.u16()?,
                target: src.u16()?,
                unrelate: false,
            },
            _ if armed => Op::UnrelateAll { target: src.u16()? },
            _ => Op::Relate {
                source: src.u16()?,
                target: src.u16()?,
                unrelate: true,
            },
        })
    }

    /// Appends the bytes [`decode`](Self::decode) reads back as `self`. `Run` keeps at most
    /// [`MAX_DECODED_CMDS`] commands and 3 events; `Poke` at most 3 targets.
    pub fn encode(&self, out: &mut Vec<u8>) {
        let arm = |armed: bool| if armed { 0x80 } else { 0 };
        match self {
            Op::Spawn { shape, seed } => {
                out.extend([0, *shape]);
                out.extend(seed.to_le_bytes());
            }
            Op::SpawnAt {
                target,
                fresh,
                shape,
                seed,
            } => {
                out.push(1 | arm(*fresh));
                out.extend(target.to_le_bytes());
                out.push(*shape);
                out.extend(seed.to_le_bytes());
            }
            Op::SpawnBatch { shape, count, seed } => {
                out.extend([2, *shape, *count]);
                out.extend(seed.to_le_bytes());
            }
            Op::Insert {
                target,
                shape,
                seed,
                entity_mut,
            } => {
                out.push(if *entity_mut { 4 } else { 3 });
                out.extend(target.to_le_bytes());
                out.push(*shape);
                out.extend(seed.to_le_bytes());
            }
            Op::InsertOne {
                target,
                kind,
                seed,
                armed,
            } => {
                out.push(5 | arm(*armed));
                out.extend(target.to_le_bytes());
                out.push(*kind);
                out.extend(seed.to_le_bytes());
            }
            Op::Remove { target, shape } => {
                out.push(6);
                out.extend(target.to_le_bytes());
                out.push(*shape);
            }
            Op::TrackRemovals { kind } => out.extend([7, *kind]),
            Op::RemoveOne { target, kind } => {
                out.push(8);
                out.extend(target.to_le_bytes());
                out.push(*kind);
            }
            Op::Despawn { target, armed } => {
                out.push(9 | arm(*armed));
                out.extend(target.to_le_bytes());
            }
            Op::Edit { target, delta } => {
                out.push(10);
                out.extend(target.to_le_bytes());
                out.push(*delta);
            }
            Op::Overwrite { target, kind, seed } => {
                out.push(11);
                out.extend(target.to_le_bytes());
                out.push(*kind);
                out.extend(seed.to_le_bytes());
            }
            Op::Reserve { count } => out.extend([12, *count]),
            Op::Batch {
                insert,
                shape,
                pick,
                seed,
            } => {
                out.extend([13 | arm(*insert), *shape, *pick]);
                out.extend(seed.to_le_bytes());
            }
            Op::Flush => out.push(14),
            Op::Clear { armed } => out.push(CLEAR | arm(*armed)),
            Op::Query { which } => out.extend([15, *which]),
            Op::Run {
                schedule,
                away,
                cmds,
                panic,
                events,
                gates,
            } => {
                let cmds = &cmds[..cmds.len().min(usize::from(MAX_DECODED_CMDS))];
                let events = &events[..events.len().min(3)];
                let counts = cmds.len() as u8
                    | (events.len() as u8) << 4
                    | if *gates != 0 { 0x40 } else { 0 }
                    | if *panic { 0x80 } else { 0 };
                out.extend([if *away { 17 } else { 16 }, *schedule, counts]);
                if *gates != 0 {
                    out.push(*gates);
                }
                for cmd in cmds {
                    cmd.encode(out);
                }
                out.extend(events);
            }
            Op::SendEvent { value } => out.extend([18, *value]),
            Op::UpdateEvents => out.push(19),
            Op::Observe { event, kind, target } => {
                out.extend([120 | arm(target.is_some()), *event, *kind]);
                if let Some(target) = target {
                    out.extend(target.to_le_bytes());
                }
            }
            Op::DespawnObserver { which } => out.extend([123, *which]),
            Op::Poke { targets, value } => {
                let targets = &targets[..targets.len().min(3)];
                out.extend([124, targets.len() as u8]);
                for target in targets {
                    out.extend(target.to_le_bytes());
                }
                out.push(*value);
            }
            Op::SetParent { child, parent } => {
                out.push(125);
                out.extend(child.to_le_bytes());
                out.extend(parent.to_le_bytes());
            }
            Op::RemoveParent { child } => {
                out.push(126);
                out.extend(child.to_le_bytes());
            }
            Op::DespawnRecursive { target } => {
                out.push(126 | 0x80);
                out.extend(target.to_le_bytes());
            }
            Op::Relate {
                source,
                target,
                unrelate,
            } => {
                out.push(if *unrelate { 109 } else { 107 });
                out.extend(source.to_le_bytes());
                out.extend(target.to_le_bytes());
            }
            Op::UnrelateAll { target } => {
                out.push(109 | 0x80);
                out.extend(target.to_le_bytes());
            }
        }
    }
}

/// The bytes that decode to `ops`.
pub fn encode_all(ops: &[Op]) -> Vec<u8> {
    let mut out = Vec::new();
    for op in ops {
        op.encode(&mut out);
    }
    out
}
