//! A random mix of direct ops for drivers that choose their ops themselves rather than
//! decode them from bytes (tabula-core's model test): every direct op, weighted so that most
//! calls succeed, with the population held near a cap. No op of the mix runs a schedule or
//! starts rayon's threads, so a driver of it runs under Miri's default aliasing model.
//! [`reaction_op`] draws the observer, relation and hierarchy ops, for drivers that add
//! them to the mix.

use crate::components::{KINDS, SHAPES};
use crate::ops::{Op, Target};
use crate::source::Rng;

/// A target (see [`Target`]): mostly a live entity, 8% a recently despawned one, 6% a
/// reservation (live when there is none), 3% another world's id or one never handed out.
fn target(rng: &mut Rng) -> Target {
    let index = (rng.next_u64() as u16) << 3;
    match rng.below(100) {
        0..=7 => index,
        8..=13 => index | 1,
        14..=16 => index | 2,
        _ => index | (3 + rng.below(5) as u16),
    }
}

fn seed(rng: &mut Rng) -> u16 {
    rng.next_u64() as u16
}

fn shape(rng: &mut Rng) -> u8 {
    rng.below(SHAPES) as u8
}

fn kind(rng: &mut Rng) -> u8 {
    rng.below(KINDS) as u8
}

/// One random direct op on a world with `live` entities: spawns (single, batch, `spawn_at`),
/// inserts (by `World::insert`, `EntityMut::insert`, `insert_one`, in batches), removes (half
/// of them of a bundle the target holds whole, so that they succeed; one by one, in batches),
/// despawns, writes through `get_mut` (whole values and fields), reservations, flushes, one
/// `clear` in 110. Spawns give way to despawns while `live` is past `cap`; with nobody live,
/// most ops that need a target spawn instead. One despawn, `Bomb` insert or `clear` in 50
/// arms the fuse.
pub fn direct_op(rng: &mut Rng, live: usize, cap: usize) -> Op {
    let crowded = live > cap;
    let roll = rng.below(110);
    let roll = if live == 0 && (18..=91).contains(&roll) {
        0
    } else {
        roll
    };
    match roll {
        0..=17 if !crowded => Op::Spawn {
            shape: shape(rng),
            seed: seed(rng),
        },
        30..=35 if !crowded => Op::SpawnBatch {
            shape: shape(rng),
            count: rng.below(6) as u8,
            seed: seed(rng),
        },
        0..=35 => Op::Despawn {
            target: target(rng),
            armed: rng.chance(2),
        },
        36..=47 => Op::Insert {
            target: target(rng),
            shape: shape(rng),
            seed: seed(rng),
            entity_mut: rng.chance(25),
        },
        48..=52 => Op::InsertOne {
            target: target(rng),
            kind: kind(rng),
            seed: seed(rng),
            armed: rng.chance(2),
        },
        53..=62 => Op::Remove {
            target: target(rng),
            shape: shape(rng) | if rng.chance(50) { 0x80 } else { 0 },
        },
        63..=67 => Op::RemoveOne {
            target: target(rng),
            kind: kind(rng),
        },
        68..=74 => Op::Overwrite {
            target: target(rng),
            kind: kind(rng),
            seed: seed(rng),
        },
        75..=79 => Op::Edit {
            target: target(rng),
            delta: rng.next_u64() as u8,
        },
        80..=84 => Op::Reserve {
            count: rng.below(8) as u8,
        },
        85..=91 => {
            // Mostly at a reservation, which is what `spawn_at` is for: a fresh one (the
            // reserve-then-`spawn_at` pattern of deferred spawns) or an older one.
            let older = (rng.next_u64() as u16) << 3 | 1;
            Op::SpawnAt {
                target: if rng.chance(70) { older } else { target(rng) },
                fresh: rng.chance(60),
                shape: shape(rng),
                seed: seed(rng),
            }
        }
        92..=95 => Op::Flush,
        96..=98 => {
            // Another world's id, or one never handed out: refused by every entry point.
            let target = (rng.next_u64() as u16) << 3 | 2;
            match rng.below(4) {
                0 => Op::Despawn { target, armed: false },
                1 => Op::Insert {
                    target,
                    shape: shape(rng),
                    seed: seed(rng),
                    entity_mut: rng.chance(50),
                },
                2 => Op::Remove {
                    target,
                    shape: shape(rng),
                },
                _ => Op::Overwrite {
                    target,
                    kind: kind(rng),
                    seed: seed(rng),
                },
            }
        }
        100..=109 => Op::Batch {
            insert: roll < 105,
            shape: shape(rng),
            pick: rng.next_u64() as u8,
            seed: seed(rng),
        },
        _ => Op::Clear { armed: rng.chance(2) },
    }
}

/// One random observer, relation or hierarchy op (see [`crate::links`]): relates (30%),
/// unrelates (one by one or all of an entity's pairs), sets and removes parents,
/// `despawn_recursive`, triggers of `Poke`, observers added and despawned. Targets are
/// mostly live entities, as for [`direct_op`].
pub fn reaction_op(rng: &mut Rng) -> Op {
    match rng.below(100) {
        0..=29 => Op::Relate {
            source: target(rng),
            target: target(rng),
            unrelate: false,
        },
        30..=39 => Op::Relate {
            source: target(rng),
            target: target(rng),
            unrelate: true,
        },
        40..=43 => Op::UnrelateAll { target: target(rng) },
        44..=61 => Op::SetParent {
            child: target(rng),
            parent: target(rng),
        },
        62..=67 => Op::RemoveParent { child: target(rng) },
        68..=71 => Op::DespawnRecursive { target: target(rng) },
        72..=83 => Op::Poke {
            targets: (0..rng.below(4)).map(|_| target(rng)).collect(),
            value: rng.next_u64() as u8,
        },
        84..=95 => Op::Observe {
            event: rng.below(6) as u8,
            kind: kind(rng),
            target: rng.chance(40).then(|| target(rng)),
        },
        _ => Op::DespawnObserver {
            which: rng.next_u64() as u8,
        },
    }
}
