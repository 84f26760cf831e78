//! The run plan through the scheduler: the `Query` parameter calls `update_plan` before each
//! run and `Query::for_each` reads the plan through `&self`, while exclusive systems and
//! command buffers change the world's structure between (and within) schedule runs.

use std::collections::BTreeMap;

use tabula_core::{Commands, Entity, With, Without, World};
use tabula_schedule::prelude::*;

#[derive(Debug, Clone, Copy, PartialEq)]
struct Pos(u32);
#[derive(Debug, Clone, Copy, PartialEq)]
struct Vel(u32);
#[derive(Debug, Clone, Copy, PartialEq)]
struct Frozen;

/// What the writing systems saw in this schedule run: entity -> value before the write.
#[derive(Default)]
struct Seen {
    moved: BTreeMap<Entity, u32>,
    chunked: BTreeMap<Entity, u32>,
    runs: u32,
}

fn mover(mut q: Query<(Entity, &mut Pos, Option<&Vel>), Without<Frozen>>, mut seen: ResMut<Seen>) {
    let seen = &mut *seen;
    seen.moved.clear();
    q.for_each(|(e, mut p, v)| {
        assert!(seen.moved.insert(e, p.0).is_none(), "{e:?} twice");
        p.0 += 1 + v.map_or(0, |v| v.0);
    });
}

fn chunker(mut q: Query<(Entity, &mut Pos), With<Frozen>>, mut seen: ResMut<Seen>) {
    let seen = &mut *seen;
    seen.chunked.clear();
    q.for_each_chunk(|(es, ps)| {
        assert_eq!(es.len(), ps.len());
        for (e, p) in es.iter().zip(ps) {
            assert!(seen.chunked.insert(*e, p.0).is_none(), "{e:?} twice");
            p.0 += 100;
        }
    });
}

/// Walks (no plan) and checks what the planned passes saw and wrote.
fn checker(
    free: Query<(Entity, &Pos, Option<&Vel>), Without<Frozen>>,
    frozen: Query<(Entity, &Pos), With<Frozen>>,
    seen: Res<Seen>,
) {
    let now: BTreeMap<Entity, u32> = free
        .iter()
        .map(|(e, p, v)| (e, p.0 - 1 - v.map_or(0, |v| v.0)))
        .collect();
    assert_eq!(now, seen.moved, "for_each in run {}", seen.runs);
    let now: BTreeMap<Entity, u32> = frozen.iter().map(|(e, p)| (e, p.0 - 100)).collect();
    assert_eq!(now, seen.chunked, "for_each_chunk in run {}", seen.runs);
}

/// Structural changes that depend on the run number, some runs none (so plans get made).
fn reshape(world: &mut World) {
    let run = {
        let seen = world.resource_mut::<Seen>().unwrap();
        seen.runs += 1;
        seen.runs
    };
    let first: Vec<Entity> = world.query::<Entity>().iter(world).take(3).collect();
    match run % 5 {
        0 => {
            world.spawn((Pos(run), Vel(1)));
        }
        1 => {
            world.insert(first[0], (Frozen,)).unwrap();
        }
        2 => {}
        3 => {
            world.despawn(first[1]).unwrap();
        }
        _ => {}
    }
}

fn churn(mut commands: Commands, q: Query<Entity, With<Frozen>>, seen: Res<Seen>) {
    if seen.runs.is_multiple_of(4) {
        commands.spawn((Pos(7), Frozen));
        if let Some(e) = q.iter().next() {
            commands.entity(e).remove::<(Frozen,)>();
        }
    }
}

#[test]
fn scheduled_for_each_follows_every_structural_change() {
    let runs = if cfg!(miri) { 12 } else { 60 };
    for executor in [ExecutorKind::SingleThreaded, ExecutorKind::Parallel] {
        let mut world = World::new();
        world.insert_resource(Seen::default());
        for i in 0..12u32 {
            world.spawn((Pos(i), Vel(i % 3)));
            world.spawn((Pos(i), Frozen));
        }
        let mut schedule = Schedule::new();
        schedule.set_executor(executor);
        schedule.add_systems((
            reshape,
            mover.after(reshape),
            chunker.after(reshape),
            checker.after(mover).after(chunker),
            churn.after(checker),
        ));
        for _ in 0..runs {
            schedule.run(&mut world);
        }
        assert_eq!(world.resource::<Seen>().unwrap().runs, runs);
    }
}
