//! Entity lanes over a long life: a schedule shared by several worlds, schedules dropped and
//! made again, run conditions that would record commands, and the end of the index space.

use tabula_core::{CommandError, Commands, Entity, EntityError, With, World};
use tabula_schedule::prelude::*;
use tabula_schedule::{ConditionWrite, ScheduleBuildError};

/// Frames an entity lives for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Life(u32);

/// Where an entity came from: which spawner, and its running count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Born(u32, u32);

/// Spawns `N` entities that live four frames.
fn spawner<const S: u32, const N: u32>(mut commands: Commands, mut count: Local<u32>) {
    for _ in 0..N {
        *count += 1;
        commands.spawn((Life(4), Born(S, *count)));
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

/// Every live entity with what it carries, in query order.
fn snapshot(world: &mut World) -> Vec<(Entity, u32, u32, u32)> {
    world
        .query::<(Entity, &Life, &Born)>()
        .iter(world)
        .map(|(e, life, born)| (e, life.0, born.0, born.1))
        .collect()
}

fn three_systems() -> Schedule {
    let mut schedule = Schedule::new();
    schedule.add_systems((spawner::<0, 50>, spawner::<1, 50>, reaper));
    schedule
}

/// Runs one schedule `runs` times, alternating between two worlds; returns both worlds, the
/// most entities alive at once in either, and every world's snapshot along the way.
fn alternate(runs: usize) -> ([World; 2], usize, Vec<Vec<(Entity, u32, u32, u32)>>) {
    let mut worlds = [World::with_tag(1), World::with_tag(2)];
    let mut schedule = three_systems();
    let mut peak = 0;
    let mut seen = Vec::new();
    for run in 0..runs {
        let world = &mut worlds[run % 2];
        schedule.run(world);
        peak = peak.max(world.len() as usize);
        if run % 97 == 0 {
            seen.push(snapshot(world));
        }
    }
    (worlds, peak, seen)
}

#[test]
fn one_schedule_alternating_between_worlds_keeps_slots_and_lanes_bounded() {
    let (worlds, peak, _) = alternate(4000);
    for world in &worlds {
        // Each world holds the 4 frames of 100 spawns a run reaps; lanes are reused on every
        // return, so slots follow the live entities, not the number of switches (before lanes
        // were owned, the highest slot index passed 20,000 after 400 runs, growing each switch).
        assert!(peak <= 500, "{peak} entities alive at once");
        assert!(
            world.entity_slots() <= 2 * peak,
            "{} slots for at most {peak} live entities",
            world.entity_slots()
        );
        assert!(
            world.entity_lane_count() <= 4,
            "{} lanes: the shared one and one per Commands parameter",
            world.entity_lane_count()
        );
    }
}

#[test]
fn a_schedule_shared_by_two_worlds_gives_the_same_ids_at_any_thread_count() {
    let on = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .expect("a thread pool");
        pool.install(|| {
            let (mut worlds, _, seen) = alternate(600);
            (seen, snapshot(&mut worlds[0]), snapshot(&mut worlds[1]))
        })
    };
    let one = on(1);
    assert!(!one.1.is_empty() && !one.2.is_empty());
    assert_eq!(one, on(4), "the same worlds, ids included, with 1 and 4 threads");
}

#[test]
fn dropping_a_schedule_releases_its_lanes() {
    let mut world = World::new();
    for _ in 0..200 {
        let mut schedule = three_systems();
        schedule.run(&mut world);
    }
    assert_eq!(
        world.entity_lane_count(),
        4,
        "each new schedule reused the lanes of the last"
    );
    // Two schedules alive at once own lanes of their own.
    let (mut a, mut b) = (three_systems(), three_systems());
    a.run(&mut world);
    b.run(&mut world);
    assert_eq!(world.entity_lane_count(), 7);
    drop((a, b));
    three_systems().run(&mut world);
    assert_eq!(
        world.entity_lane_count(),
        7,
        "released lanes are reused, none added"
    );
    assert!(world.entity_slots() <= 2 * world.len() as usize + 200);
}

#[test]
fn steady_state_reservations_stay_within_their_blocks() {
    // 32 command-recording systems, one spawning 100 entities a frame and 31 spawning one,
    // beside a `ParallelCommands` system that spawns 1,000 a frame at the same sync point.
    // The parallel spawns take their ids when applied and re-lay no lane's block, so each
    // lane's reservations stay in a block sized to what it spawns. (When every parallel
    // spawn reserved and flushed, the blocks collapsed within the frame and the next frame's
    // 100 spawns landed 33 positions apart, past every block, leaving thousands of holes.)
    #[derive(Clone, Copy)]
    struct Spark;
    fn sparks(seeds: Query<&Born>, commands: ParallelCommands) {
        seeds.iter().for_each(|_| {
            commands.command_scope(|commands| commands.spawn((Spark,)));
        });
    }
    fn clear_sparks(mut commands: Commands, sparks: Query<Entity, With<Spark>>) {
        for spark in sparks.iter() {
            commands.despawn(spark);
        }
    }
    let mut world = World::new();
    world
        .spawn_batch((0..1000).map(|i| (Born(99, i),)))
        .for_each(drop);
    let mut schedule = Schedule::new();
    schedule.add_systems((clear_sparks, sparks, reaper, spawner::<0, 100>).chain());
    macro_rules! add_spawners {
        ($($s:literal)*) => {$(
            schedule.add_systems(spawner::<$s, 1>.after(spawner::<0, 100>));
        )*};
    }
    add_spawners!(1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31);
    for _ in 0..20 {
        schedule.run(&mut world);
    }
    // Settled: each frame's flushes go through about as many positions as ids were reserved
    // (131), not the 3,000-odd a 100-spawn lane spilling past 33 lanes' blocks makes.
    let (positions, slots) = (world.entity_flushed_positions(), world.entity_slots());
    for _ in 0..100 {
        schedule.run(&mut world);
    }
    assert!(
        schedule.command_errors().is_empty(),
        "{:?}",
        schedule.command_errors()
    );
    let per_frame = (world.entity_flushed_positions() - positions) / 100;
    assert!(
        per_frame <= 2 * 131,
        "{per_frame} positions a frame for 131 reservations"
    );
    assert_eq!(world.entity_slots(), slots, "no slot is made once settled");
}

#[test]
fn run_conditions_that_record_commands_are_refused_at_build() {
    fn spawns_in_condition(mut commands: Commands) -> bool {
        commands.spawn((Life(1),));
        true
    }
    fn records_in_parallel(commands: ParallelCommands) -> bool {
        commands.command_scope(|commands| commands.spawn((Life(1),)));
        true
    }
    fn writes(mut life: ResMut<Life>) -> bool {
        life.0 += 1;
        true
    }
    fn guarded() {}

    let mut world = World::new();
    world.insert_resource(Life(0));
    for (condition, write) in [
        (
            Box::new(|s: &mut Schedule| {
                s.add_systems(guarded.run_if(spawns_in_condition));
            }) as Box<dyn Fn(&mut Schedule)>,
            ConditionWrite::Commands,
        ),
        (
            Box::new(|s: &mut Schedule| {
                s.add_systems(guarded.run_if(records_in_parallel));
            }),
            ConditionWrite::Commands,
        ),
        (
            Box::new(|s: &mut Schedule| {
                s.add_systems(guarded.run_if(writes));
            }),
            ConditionWrite::World,
        ),
    ] {
        let mut schedule = Schedule::new();
        condition(&mut schedule);
        let error = schedule
            .initialize(&mut world)
            .expect_err("the condition is refused");
        assert!(
            matches!(&error, ScheduleBuildError::ConditionWrites { write: w, system, .. }
                if *w == write && system.ends_with("guarded")),
            "{error:?}"
        );
        let message = error.to_string();
        assert!(message.contains("guarded"), "{message}");
        if write == ConditionWrite::Commands {
            assert!(
                message.contains("records commands") && message.contains("ordered before it"),
                "{message}"
            );
        }
        let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| schedule.run(&mut world)));
        assert!(run.is_err(), "run refuses the schedule too");
    }
    assert_eq!(world.len(), 0, "no condition's spawn became an entity");
}

#[test]
fn spawns_past_the_index_space_are_refused_and_the_world_goes_on() {
    fn spawn_ten(mut commands: Commands) {
        for i in 0..10 {
            commands.spawn((Born(0, i),));
        }
    }
    fn spawn_ten_in_parallel(lives: Query<&Life>, commands: ParallelCommands) {
        lives.iter().take(10).for_each(|_| {
            commands.command_scope(|commands| commands.spawn((Born(1, 0),)));
        });
    }
    let mut world = World::new();
    world.spawn_batch((0..10).map(|_| (Life(1),))).for_each(drop);
    world.set_entity_slot_limit(25);
    let mut schedule = Schedule::new();
    schedule.add_systems((spawn_ten, spawn_ten_in_parallel.after(spawn_ten)));
    schedule.run(&mut world);
    // 10 were alive and 15 more fit; the other 5 spawns are refused, each reported (which
    // ones depends on where the reservations fell, not on the thread count).
    assert_eq!(world.len(), 25);
    let exhausted = |error: &CommandError| {
        matches!(
            error,
            CommandError::Spawn {
                error: EntityError::IndexSpaceExhausted { slots: 25 },
                ..
            } | CommandError::Entity {
                error: EntityError::IndexSpaceExhausted { slots: 25 },
                ..
            }
        )
    };
    assert_eq!(
        schedule.command_errors().len(),
        5,
        "{:?}",
        schedule.command_errors()
    );
    assert!(
        schedule
            .command_errors()
            .iter()
            .all(|skipped| exhausted(skipped.error()))
    );
    // The next run's `Commands` spawns are all refused, with the placeholder ids.
    schedule.run(&mut world);
    assert_eq!(world.len(), 25);
    assert_eq!(
        schedule.command_errors().len(),
        20,
        "{:?}",
        schedule.command_errors()
    );
    assert!(
        schedule
            .command_errors()
            .iter()
            .all(|skipped| exhausted(skipped.error()))
    );
    assert!(
        schedule.command_errors()[0]
            .to_string()
            .contains("entity slots is live or retired"),
        "{}",
        schedule.command_errors()[0]
    );
    // Freed slots make room again: the world was never bricked.
    let born: Vec<Entity> = world
        .query::<(Entity, &Born)>()
        .iter(&world)
        .map(|(e, _)| e)
        .collect();
    for &e in &born[..15] {
        world.despawn(e).unwrap();
    }
    schedule.run(&mut world);
    assert_eq!(world.len(), 25, "10 + 5 spawned again into the freed slots");
    assert!(world.entity_slots() <= 25);
}
