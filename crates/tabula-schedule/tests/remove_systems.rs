//! Removing systems from a schedule at run time: what they held is released, they stop
//! running, and orderings that named them follow them out.

use tabula_core::{Commands, World};
use tabula_schedule::prelude::*;
use tabula_schedule::{ScheduleError, SystemOrder};

#[derive(Default)]
struct Log(Vec<&'static str>);

struct Spark;

fn spawner(mut commands: Commands, mut count: Local<u32>) {
    *count += 1;
    commands.spawn((Spark,));
}

fn a(mut log: ResMut<Log>) {
    log.0.push("a");
}
fn b(mut log: ResMut<Log>) {
    log.0.push("b");
}
fn c(mut log: ResMut<Log>) {
    log.0.push("c");
}

fn world_with_log() -> World {
    let mut world = World::new();
    world.init_resource::<Log>();
    world
}

#[test]
fn adding_and_removing_a_command_system_a_thousand_times_keeps_lanes_and_size_flat() {
    let mut world = World::new();
    let mut schedule = Schedule::new();
    schedule.add_systems(a);
    world.init_resource::<Log>();
    schedule.run(&mut world);
    let lanes_before = world.entity_lane_count();
    let mut lanes_seen = Vec::new();
    for round in 0..1000 {
        schedule.add_systems(spawner);
        assert_eq!(schedule.len(), 2);
        schedule.run(&mut world);
        assert_eq!(world.query::<&Spark>().iter(&world).count(), round + 1);
        assert_eq!(schedule.remove_systems(spawner), Ok(1));
        assert_eq!(schedule.len(), 1);
        lanes_seen.push(world.entity_lane_count());
    }
    // The spawner's lane is released with it and reused by the next one.
    assert_eq!(lanes_seen.iter().min(), lanes_seen.iter().max());
    assert!(
        lanes_seen[0] <= lanes_before + 1,
        "one lane for the spawner, {} before, {} after",
        lanes_before,
        lanes_seen[0]
    );
    // With no command system left, new lanes start from the same place.
    let again = world.add_entity_lane();
    assert!((again.index() as usize) < lanes_seen[0]);
}

#[test]
fn a_removed_system_no_longer_runs_and_the_others_keep_their_order() {
    let mut world = world_with_log();
    let mut schedule = Schedule::new();
    schedule.add_systems((a, b, c).chain());
    schedule.run(&mut world);
    assert_eq!(schedule.remove_systems(b), Ok(1));
    schedule.run(&mut world);
    assert_eq!(world.resource::<Log>().unwrap().0, ["a", "b", "c", "a", "c"]);
    assert_eq!(schedule.len(), 2);
}

#[test]
fn a_chain_through_a_removed_system_stays_a_chain() {
    let mut world = world_with_log();
    let mut schedule = Schedule::new();
    // Added in reverse: they all write `Log`, which orders them as added (c, b, a) unless
    // constraints say otherwise. The constraints naming `b` are held by `a` and `c`, so they
    // outlive `b`, and its emptied function set passes `a before b before c` on.
    schedule.add_systems((c.after(b), b, a.before(b)));
    schedule.remove_systems(b).unwrap();
    schedule.run(&mut world);
    assert_eq!(world.resource::<Log>().unwrap().0, ["a", "c"]);

    // Constraints held by the removed system go with it: `c -> b -> a` orders `c` before
    // `a` only while `b` is there.
    let mut world = world_with_log();
    let mut schedule = Schedule::new();
    schedule.add_systems((a, c, b.after(c).before(a)));
    schedule.run(&mut world);
    schedule.remove_systems(b).unwrap();
    schedule.run(&mut world);
    assert_eq!(world.resource::<Log>().unwrap().0, ["c", "b", "a", "a", "c"]);

    let mut world = world_with_log();
    let mut schedule = Schedule::new();
    schedule.add_systems((a, b, c).chain());
    schedule.remove_systems(b).unwrap();
    let SystemOrder::Before(path) = schedule.explain(&mut world, a, c).unwrap() else {
        panic!("a still runs before c");
    };
    assert_eq!(path.len(), 1);
    assert_eq!(path[0].reason, "chain");
}

#[test]
fn constraints_naming_a_removed_system_pass_their_order_on_or_order_nothing() {
    fn writes_nothing_a() {}
    fn writes_nothing_c() {}
    let mut world = World::new();
    let mut schedule = Schedule::new();
    schedule.add_systems((writes_nothing_c.after(b), b, writes_nothing_a.before(b)));
    world.init_resource::<Log>();
    schedule.remove_systems(b).unwrap();
    // `b`'s function set is empty now, which passes `a before b before c` on as `a before c`.
    let order = schedule
        .explain(&mut world, writes_nothing_a, writes_nothing_c)
        .unwrap();
    let SystemOrder::Before(path) = order else {
        panic!("still ordered through the empty set, got {order:?}");
    };
    assert!(path[0].reason.contains("through empty"), "{}", path[0].reason);

    // A constraint with only one side left orders nothing and is no error.
    let mut schedule = Schedule::new();
    schedule.add_systems((writes_nothing_c.after(b), b));
    schedule.remove_systems(b).unwrap();
    schedule.run(&mut world);
    assert_eq!(schedule.order(&mut world).unwrap().len(), 1);
}

#[test]
fn removing_a_set_removes_its_members_and_a_missing_system_is_an_error() {
    #[derive(Debug, Clone, PartialEq, Eq, Hash)]
    struct Tutorial;
    impl SystemSet for Tutorial {}

    let mut world = world_with_log();
    let mut schedule = Schedule::new();
    schedule.add_systems(((a, b).in_set(Tutorial), c));
    assert_eq!(schedule.remove_systems(Tutorial), Ok(2));
    schedule.run(&mut world);
    assert_eq!(world.resource::<Log>().unwrap().0, ["c"]);
    let error = schedule.remove_systems(a).unwrap_err();
    assert!(matches!(error, ScheduleError::NoSystem { .. }));
    assert!(error.to_string().contains("::a`"), "{error}");
    assert_eq!(schedule.len(), 1, "a failed removal changes nothing");
}

#[test]
fn systems_made_from_one_function_are_removed_together() {
    let mut world = world_with_log();
    let mut schedule = Schedule::new();
    schedule.add_systems((a, b, a));
    assert_eq!(schedule.remove_systems(a), Ok(2));
    schedule.run(&mut world);
    assert_eq!(world.resource::<Log>().unwrap().0, ["b"]);
}
