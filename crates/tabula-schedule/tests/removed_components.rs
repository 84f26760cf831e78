//! `RemovedComponents<T>` through schedules: removals by commands, exclusive systems and
//! direct world calls reach every reader once, in the run they happen and the next.

use tabula_core::{Commands, Entity, With, World};
use tabula_schedule::prelude::*;

#[derive(Debug, Clone, Copy, PartialEq)]
struct Shield(u32);
#[derive(Debug, Clone, Copy, PartialEq)]
struct Doomed;

/// What each reader saw, one `Vec` per run of that reader.
#[derive(Default, Debug)]
struct Seen(Vec<Vec<Entity>>);
#[derive(Default, Debug)]
struct SeenLate(Vec<Vec<Entity>>);

fn strip_doomed(mut commands: Commands, doomed: Query<Entity, With<Doomed>>) {
    for e in &doomed {
        commands.entity(e).remove::<(Shield, Doomed)>();
    }
}

fn notice(mut removed: RemovedComponents<Shield>, mut seen: ResMut<Seen>) {
    seen.0.push(removed.read().collect());
}

fn notice_late(mut removed: RemovedComponents<Shield>, mut seen: ResMut<SeenLate>) {
    seen.0.push(removed.read().collect());
}

fn world_with_shields(n: u32) -> (World, Vec<Entity>) {
    let mut world = World::new();
    world.init_resource::<Seen>();
    world.init_resource::<SeenLate>();
    let entities = (0..n).map(|i| world.spawn((Shield(i),))).collect();
    (world, entities)
}

#[test]
fn a_reader_after_the_remover_sees_command_removals_in_the_same_run() {
    for executor in [ExecutorKind::SingleThreaded, ExecutorKind::Parallel] {
        let (mut world, entities) = world_with_shields(3);
        let mut schedule = Schedule::new();
        schedule.set_executor(executor);
        // `notice` before the remover sees each removal one run later; `notice_late`, after
        // it (a sync point between), in the same run.
        schedule.add_systems((
            notice,
            strip_doomed.after(notice),
            notice_late.after(strip_doomed),
        ));
        schedule.run(&mut world);
        world.insert_one(entities[1], Doomed).unwrap();
        schedule.run(&mut world);
        schedule.run(&mut world);
        schedule.run(&mut world);
        assert_eq!(
            world.get::<Shield>(entities[1]),
            Err(tabula_core::EntityError::MissingComponent {
                entity: entities[1],
                component: std::any::type_name::<Shield>(),
            })
        );
        let empty: Vec<Entity> = Vec::new();
        assert_eq!(
            world.resource::<SeenLate>().unwrap().0,
            [empty.clone(), vec![entities[1]], empty.clone(), empty.clone()],
            "{executor:?}"
        );
        assert_eq!(
            world.resource::<Seen>().unwrap().0,
            [empty.clone(), empty.clone(), vec![entities[1]], empty],
            "{executor:?}"
        );
    }
}

#[test]
fn removals_between_runs_and_despawns_are_seen_once_by_every_reader() {
    for executor in [ExecutorKind::SingleThreaded, ExecutorKind::Parallel] {
        let (mut world, entities) = world_with_shields(4);
        let mut schedule = Schedule::new();
        schedule.set_executor(executor);
        // Unordered readers: they may run in parallel.
        schedule.add_systems((notice, notice_late));
        schedule.run(&mut world);
        world.remove_one::<Shield>(entities[2]).unwrap();
        world.despawn(entities[0]).unwrap();
        schedule.run(&mut world);
        schedule.run(&mut world);
        let expected = [vec![], vec![entities[2], entities[0]], vec![]];
        assert_eq!(world.resource::<Seen>().unwrap().0, expected, "{executor:?}");
        assert_eq!(world.resource::<SeenLate>().unwrap().0, expected, "{executor:?}");
    }
}

#[test]
fn an_exclusive_system_removal_is_seen_after_it() {
    fn despawn_all(world: &mut World) {
        let all: Vec<Entity> = world.query::<Entity>().iter(world).collect();
        for e in all {
            world.despawn(e).unwrap();
        }
    }
    let (mut world, entities) = world_with_shields(2);
    let mut schedule = Schedule::new();
    schedule.add_systems((despawn_all, notice.after(despawn_all)));
    schedule.run(&mut world);
    // The reader is initialised (and the log started) before the first run's systems run.
    assert_eq!(world.resource::<Seen>().unwrap().0, [entities]);
}

#[test]
fn a_reader_that_skips_two_runs_misses_what_aged_out() {
    #[derive(Default)]
    struct Enabled(bool);
    let (mut world, entities) = world_with_shields(3);
    world.init_resource::<Enabled>();
    let mut schedule = Schedule::new();
    schedule.add_systems(notice.run_if(|enabled: Res<Enabled>| enabled.0));
    world.resource_mut::<Enabled>().unwrap().0 = true;
    schedule.run(&mut world);
    world.resource_mut::<Enabled>().unwrap().0 = false;
    world.remove_one::<Shield>(entities[0]).unwrap();
    schedule.run(&mut world);
    world.remove_one::<Shield>(entities[1]).unwrap();
    schedule.run(&mut world);
    world.resource_mut::<Enabled>().unwrap().0 = true;
    schedule.run(&mut world);
    assert_eq!(
        world.resource::<Seen>().unwrap().0,
        [vec![], vec![entities[1]]],
        "entities[0] was removed two updates before the reader looked again"
    );
}

#[test]
fn len_and_clear_mark_removals_read() {
    #[derive(Default)]
    struct Counts(Vec<usize>);
    fn count_then_clear(mut removed: RemovedComponents<Shield>, mut counts: ResMut<Counts>) {
        counts.0.push(removed.len());
        removed.clear();
        assert!(removed.is_empty());
        assert_eq!(removed.read().count(), 0);
    }
    let (mut world, entities) = world_with_shields(3);
    world.init_resource::<Counts>();
    let mut schedule = Schedule::new();
    schedule.add_systems(count_then_clear);
    schedule.run(&mut world);
    for &e in &entities {
        world.remove_one::<Shield>(e).unwrap();
    }
    schedule.run(&mut world);
    schedule.run(&mut world);
    assert_eq!(world.resource::<Counts>().unwrap().0, [0, 3, 0]);
}
