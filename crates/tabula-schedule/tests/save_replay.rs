//! A save in the middle of a run, loaded into a fresh world, replays the rest exactly: the
//! ids spawned by command-recording systems after the load, the component values and the
//! query order are those of a run that never saved, with 1 thread and with 4.

use serde::{Deserialize, Serialize};
use tabula::prelude::*;
use tabula::{Entity, Has, World};

/// Frames an entity lives for.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
struct Life(u32);

/// Which spawner made an entity, and its count then.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
struct Born(u32, u32);

/// A spawner's running count, kept in the world (a `Local` is the schedule's, not saved).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
struct Tally {
    spawner: u32,
    count: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
struct Position(f32);

#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
struct Velocity(f32);

/// Marks every third entity: more archetypes, created as the run goes.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
struct Slow;

fn register(world: &mut World) {
    world.register_serde::<Life>("Life");
    world.register_serde::<Born>("Born");
    world.register_serde::<Tally>("Tally");
    world.register_serde::<Position>("Position");
    world.register_serde::<Velocity>("Velocity");
    world.register_serde::<Slow>("Slow");
}

/// Spawns `N` entities a frame with varied lives and shapes.
fn spawner<const S: u32, const N: u32>(mut commands: Commands, mut tallies: Query<&mut Tally>) {
    let mut tally = tallies.iter_mut().find(|t| t.spawner == S).expect("set up");
    for _ in 0..N {
        tally.count += 1;
        let count = tally.count;
        let born = (Life(2 + count % 7), Born(S, count), Position(count as f32));
        match count % 3 {
            0 => commands.spawn((born.0, born.1, born.2, Slow)),
            1 => commands.spawn((born.0, born.1, born.2, Velocity(1.0 + S as f32))),
            _ => commands.spawn(born),
        };
    }
}

/// Ages every entity and despawns the ones whose life ran out.
fn reaper(mut commands: Commands, mut lives: Query<(Entity, &mut Life)>) {
    lives.for_each(|(entity, mut life)| {
        life.0 -= 1;
        if life.0 == 0 {
            commands.despawn(entity);
        }
    });
}

/// Gives a slow entity a velocity once its life is even (a structural change by command).
fn quicken(mut commands: Commands, slow: Query<(Entity, &Life, Has<Velocity>), With<Slow>>) {
    for (entity, life, moving) in slow.iter() {
        if life.0 % 2 == 0 && !moving {
            commands.entity(entity).insert((Velocity(0.5),));
        }
    }
}

fn movement(mut q: Query<(&mut Position, &Velocity)>) {
    q.for_each(|(mut p, v)| p.0 += v.0);
}

fn schedule() -> Schedule {
    let mut schedule = Schedule::new();
    schedule.add_systems((
        spawner::<0, 5>,
        spawner::<1, 3>,
        reaper,
        quicken,
        movement.after(quicken),
    ));
    schedule
}

fn new_world() -> World {
    let mut world = World::with_tag(11);
    register(&mut world);
    world.spawn((Tally { spawner: 0, count: 0 },));
    world.spawn((Tally { spawner: 1, count: 0 },));
    world
}

/// Every row in query order, with everything it holds.
fn rows(world: &mut World) -> Vec<String> {
    let mut q = world.query::<(
        Entity,
        Option<&Life>,
        Option<&Born>,
        Option<&Tally>,
        Option<&Position>,
        Option<&Velocity>,
        Option<&Slow>,
    )>();
    q.iter(world).map(|row| format!("{row:?}")).collect()
}

fn replay(threads: usize, frames: usize) {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap();
    pool.install(|| {
        // A run that never saves.
        let mut straight = new_world();
        let mut whole = schedule();
        for _ in 0..frames {
            whole.run(&mut straight);
        }

        // The same run, saved halfway and loaded into a fresh world.
        let mut first = new_world();
        let mut first_half = schedule();
        for _ in 0..frames / 2 {
            first_half.run(&mut first);
        }
        let bytes = postcard::to_stdvec(&first.snapshot().unwrap()).unwrap();
        let mut loaded = World::new();
        register(&mut loaded);
        loaded
            .load(&mut postcard::Deserializer::from_bytes(&bytes))
            .unwrap();
        assert_eq!(rows(&mut loaded), rows(&mut first), "the load restores the rows");
        drop(first_half);
        drop(first);
        let mut second_half = schedule();
        for _ in frames / 2..frames {
            second_half.run(&mut loaded);
        }

        assert!(
            straight.len() > 20,
            "the run spawned and despawned ({} live)",
            straight.len()
        );
        assert_eq!(
            rows(&mut loaded),
            rows(&mut straight),
            "{threads} threads: same ids, values, order"
        );
        assert_eq!(loaded.entity_slots(), straight.entity_slots());
        assert_eq!(loaded.entity_lane_count(), straight.entity_lane_count());
        assert_eq!(loaded.spawn((Slow,)), straight.spawn((Slow,)), "the next id");
    });
}

#[test]
#[cfg_attr(miri, ignore = "starts rayon")]
fn a_run_saved_halfway_and_loaded_replays_the_rest_with_1_and_4_threads() {
    replay(1, 500);
    replay(4, 500);
}
