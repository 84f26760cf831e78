//! Sync points are barriers: the schedule never places two where one does, and an explicit
//! `apply_deferred` takes the place of the automatic one that would stand right before it.

use tabula_core::{Commands, World};
use tabula_schedule::prelude::*;

struct Seed;

fn plant(mut commands: Commands) {
    commands.spawn((Seed,));
}
fn plant_more(mut commands: Commands) {
    commands.spawn((Seed,));
}
fn count(seeds: Query<&Seed>, mut seen: ResMut<Vec<usize>>) {
    seen.push(seeds.iter().count());
}
fn count_again(seeds: Query<&Seed>, mut seen: ResMut<Vec<u32>>) {
    seen.push(seeds.iter().count() as u32);
}

fn syncs(order: &[String]) -> Vec<&String> {
    order.iter().filter(|n| n.starts_with("sync after")).collect()
}

#[test]
fn an_explicit_apply_deferred_replaces_the_automatic_sync_before_it() {
    let mut world = World::new();
    world.insert_resource(Vec::<usize>::new());
    let mut schedule = Schedule::new();
    schedule.add_systems((plant, apply_deferred, count).chain());
    let order = schedule.order(&mut world).unwrap();
    assert!(
        syncs(&order).is_empty(),
        "one barrier, the explicit one: {order:?}"
    );
    assert_eq!(order.len(), 3, "{order:?}");
    schedule.run(&mut world);
    assert_eq!(
        world.resource::<Vec<usize>>().unwrap(),
        &vec![1],
        "count saw the seed"
    );
    let dot = schedule.graph_dot(&mut world).unwrap();
    assert!(!dot.contains("shape=diamond"), "{dot}");
}

#[test]
fn an_apply_deferred_with_a_run_condition_keeps_the_automatic_sync() {
    fn never() -> bool {
        false
    }
    let mut world = World::new();
    world.insert_resource(Vec::<usize>::new());
    let mut schedule = Schedule::new();
    schedule.add_systems((plant, apply_deferred.run_if(never), count).chain());
    let order = schedule.order(&mut world).unwrap();
    assert_eq!(syncs(&order).len(), 1, "{order:?}");
    schedule.run(&mut world);
    assert_eq!(world.resource::<Vec<usize>>().unwrap(), &vec![1]);
}

#[test]
fn sync_points_before_the_same_system_are_merged() {
    let mut world = World::new();
    world.insert_resource(Vec::<usize>::new());
    let mut schedule = Schedule::new();
    world.insert_resource(Vec::<u32>::new());
    // `plant` must be applied before `count` and `count_again` (which do not conflict),
    // `plant_more` before `count` only: two successor sets, each placed before `count`. One
    // barrier does for both.
    schedule.add_systems((
        plant.before(count).before(count_again),
        plant_more.before(count),
        count,
        count_again,
    ));
    let order = schedule.order(&mut world).unwrap();
    assert_eq!(syncs(&order).len(), 1, "{order:?}");
    assert!(syncs(&order)[0].contains("plant") && syncs(&order)[0].contains("plant_more"));
    schedule.run(&mut world);
    assert_eq!(world.resource::<Vec<usize>>().unwrap(), &vec![2]);
    assert_eq!(world.resource::<Vec<u32>>().unwrap(), &vec![2]);
}
