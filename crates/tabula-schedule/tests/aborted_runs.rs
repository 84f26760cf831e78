//! A run a panic aborts leaves nothing behind: the ids its command-recording systems
//! reserved for spawns that never applied are freed, with `Commands` and `ParallelCommands`,
//! on both executors.

use std::panic::{AssertUnwindSafe, catch_unwind};

use tabula_core::{Commands, World};
use tabula_schedule::prelude::*;

#[derive(Default)]
struct Panic(bool);
struct Seed;
struct Sprout;

fn spawner(mut commands: Commands, seeds: Query<&Seed>) {
    for _ in seeds.iter() {
        commands.spawn((Sprout,));
        commands.spawn_empty();
    }
}

fn parallel_spawner(seeds: Query<&Seed>, commands: ParallelCommands) {
    seeds
        .iter()
        .for_each(|_| commands.command_scope(|commands| commands.spawn((Sprout,))));
}

fn panicker(flag: Res<Panic>) {
    assert!(!flag.0, "the run is aborted on purpose");
}

#[test]
fn a_panicking_run_leaves_no_empty_entity_behind() {
    for executor in [ExecutorKind::Parallel, ExecutorKind::SingleThreaded] {
        let mut world = World::new();
        world.insert_resource(Panic(true));
        world.spawn_batch((0..10).map(|_| (Seed,))).for_each(drop);
        let mut schedule = Schedule::new();
        schedule.set_executor(executor);
        // The panicker runs while both spawners' commands wait for the end of the run.
        schedule.add_systems((spawner, parallel_spawner, panicker));
        schedule.set_auto_sync(false);
        let aborted = catch_unwind(AssertUnwindSafe(|| schedule.run(&mut world)));
        assert!(aborted.is_err());
        world.flush();
        assert_eq!(
            world.len(),
            10,
            "{executor:?}: only the seeds; the 20 reservations were freed"
        );
        let slots = world.entity_slots();
        assert!(slots >= 30, "the ids had been reserved: {slots} slots");
        // The freed ids are dead for good, and the next run reuses their slots.
        world.insert_resource(Panic(false));
        schedule.run(&mut world);
        assert_eq!(world.len(), 10 + 10 + 10 + 10, "{executor:?}");
        assert_eq!(world.query::<&Sprout>().iter(&world).count(), 20);
        assert_eq!(
            world.entity_slots(),
            slots,
            "{executor:?}: freed slots reused, none added"
        );
    }
}
