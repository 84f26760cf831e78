//! A whole frame: labelled schedules in their order, Startup once, the fixed step from an
//! accumulator with its cap, the virtual clock, events across schedules, and schedules
//! changed at run time.

use std::time::Duration;

use tabula_core::{Commands, World};
use tabula_schedule::prelude::*;
use tabula_schedule::{ScheduleError, Schedules, StateTransition, Time};

#[derive(Default)]
struct Log(Vec<String>);

fn log(world: &World) -> Vec<String> {
    world.resource::<Log>().unwrap().0.clone()
}

fn push(name: &'static str) -> impl FnMut(ResMut<Log>) + Clone + Send + Sync + 'static {
    move |mut log: ResMut<Log>| log.0.push(name.to_string())
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// A world whose clock has a 10 ms fixed step.
fn world() -> World {
    let mut world = World::new();
    world.init_resource::<Log>();
    let mut time = Time::default();
    time.set_fixed_step(ms(10));
    world.insert_resource(time);
    world
}

#[test]
fn a_frame_runs_startup_once_then_every_phase_in_order() {
    let mut world = world();
    // Added out of order on purpose: the labels decide.
    world
        .add_systems(Last, push("last"))
        .add_systems(Update, push("update"))
        .add_systems(FixedUpdate, push("fixed"))
        .add_systems(PostUpdate, push("post"))
        .add_systems(PreUpdate, push("pre"))
        .add_systems(First, push("first"))
        .add_systems(StateTransition, push("transition"))
        .add_systems(Startup, push("startup"));
    world.run_frame(ms(10));
    world.run_frame(ms(25));
    world.run_frame(ms(0));
    assert_eq!(
        log(&world),
        [
            "startup",
            "first",
            "pre",
            "transition",
            "fixed",
            "update",
            "post",
            "last", // one step
            "first",
            "pre",
            "transition",
            "fixed",
            "fixed",
            "update",
            "post",
            "last", // two, 5 ms left
            "first",
            "pre",
            "transition",
            "update",
            "post",
            "last", // nothing due
        ]
    );
}

#[derive(Default)]
struct Seen(Vec<(bool, Duration, Duration)>);

fn look(time: Res<Time>, mut seen: ResMut<Seen>) {
    seen.0.push((time.is_fixed_step(), time.delta(), time.elapsed()));
}

#[test]
fn time_shows_the_frame_outside_fixed_steps_and_the_fixed_step_inside() {
    let mut world = world();
    world.init_resource::<Seen>();
    world.add_systems(FixedUpdate, look).add_systems(Update, look);
    world.run_frame(ms(25));
    world.run_frame(ms(7));
    let seen = &world.resource::<Seen>().unwrap().0;
    assert_eq!(
        seen,
        &[
            (true, ms(10), ms(10)),
            (true, ms(10), ms(20)),
            (false, ms(25), ms(25)),
            (true, ms(10), ms(30)), // 5 + 7 = 12 ms accumulated: one step
            (false, ms(7), ms(32)),
        ]
    );
    let time = world.resource::<Time>().unwrap();
    assert_eq!(time.frame_count(), 2);
    assert_eq!(time.fixed_steps(), 3);
    assert_eq!(time.overstep(), ms(2));
    assert!((time.overstep_fraction() - 0.2).abs() < 1e-9);
}

#[test]
fn the_step_cap_drops_what_a_slow_frame_cannot_catch_up_on() {
    let mut world = world();
    world.resource_mut::<Time>().unwrap().set_max_fixed_steps(3);
    world.add_systems(FixedUpdate, push("fixed"));
    world.run_frame(ms(1005)); // 100 steps due
    assert_eq!(log(&world).len(), 3);
    let time = world.resource::<Time>().unwrap();
    assert_eq!(time.fixed_steps(), 3);
    assert_eq!(time.overstep(), ms(5), "the part of a step stays");
    assert_eq!(time.dropped(), ms(970));
    // The next frame does not inherit the backlog.
    world.run_frame(ms(10));
    assert_eq!(log(&world).len(), 4);
}

#[test]
fn a_paused_or_slowed_clock_scales_the_frame_and_its_steps() {
    let mut world = world();
    world.add_systems(FixedUpdate, push("fixed"));
    world.resource_mut::<Time>().unwrap().pause();
    world.run_frame(ms(100));
    assert!(log(&world).is_empty());
    assert_eq!(world.resource::<Time>().unwrap().delta(), Duration::ZERO);
    let time = &mut world.resource_mut::<Time>().unwrap();
    time.unpause();
    time.set_relative_speed(0.5);
    world.run_frame(ms(40)); // 20 ms of game time
    assert_eq!(log(&world).len(), 2);
    let time = world.resource::<Time>().unwrap();
    assert_eq!((time.delta(), time.elapsed()), (ms(20), ms(20)));
}

struct Ping;
#[derive(Default)]
struct Pings(Vec<usize>);

fn ping(mut pings: EventWriter<Ping>) {
    pings.send(Ping);
}
fn count_pings(mut reader: EventReader<Ping>, mut pings: ResMut<Pings>) {
    pings.0.push(reader.read().count());
}

#[test]
fn events_age_once_a_frame_so_every_fixed_step_s_events_reach_update() {
    let mut world = world();
    world.add_event::<Ping>();
    world.init_resource::<Pings>();
    world
        .add_systems(FixedUpdate, ping)
        .add_systems(Update, count_pings);
    for _ in 0..3 {
        world.run_frame(ms(30)); // three steps a frame
    }
    world.run_frame(ms(0));
    world.run_frame(ms(0));
    assert_eq!(world.resource::<Pings>().unwrap().0, [3, 3, 3, 0, 0]);
}

#[test]
fn running_a_missing_schedule_is_an_error_naming_it() {
    #[derive(Debug, Clone, PartialEq, Eq, Hash)]
    struct Render;
    impl ScheduleLabel for Render {}

    let mut world = world();
    assert_eq!(
        world.try_run_schedule(Render),
        Err(ScheduleError::NoSchedule("Render".to_string()))
    );
    let panic =
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| world.run_schedule(Render))).unwrap_err();
    let message = panic.downcast_ref::<String>().unwrap();
    assert!(message.contains("no schedule is labelled `Render`"), "{message}");
    world.add_systems(Render, push("render"));
    world.run_schedule(Render);
    assert_eq!(log(&world), ["render"]);
    // A frame skips labels without schedules: nothing else was added.
    world.run_frame(ms(16));
    assert_eq!(log(&world), ["render"]);
}

fn grow(world: &mut World) {
    // Into the running schedule: added when its run ends, so it runs from the next frame.
    world.add_systems(Update, push("grown"));
    // Into another: at once.
    world.add_systems(PostUpdate, push("post"));
    // Removing from the running schedule is refused.
    let error = world.remove_systems(Update, grow).unwrap_err();
    assert_eq!(error, ScheduleError::Running("Update".to_string()));
    // And a schedule nobody made is named.
    let error = world.remove_systems(Last, grow).unwrap_err();
    assert_eq!(error, ScheduleError::NoSchedule("Last".to_string()));
}

#[test]
fn systems_added_from_a_running_schedule_join_after_its_run() {
    let mut world = world();
    world.add_systems(Update, grow.run_if(run_once_per_world));
    world.run_frame(ms(1));
    assert_eq!(log(&world), ["post"]);
    world.run_frame(ms(1));
    assert_eq!(log(&world), ["post", "grown", "post"]);
    assert_eq!(
        world.resource::<Schedules>().unwrap().get(Update).unwrap().len(),
        2
    );
}

fn run_once_per_world(mut ran: Local<bool>) -> bool {
    !std::mem::replace(&mut *ran, true)
}

struct Spark;

fn spawner(mut commands: Commands) {
    commands.spawn((Spark,));
}

#[test]
fn adding_and_removing_through_the_world_keeps_lanes_flat() {
    let mut world = world();
    world.add_systems(Update, push("update"));
    world.run_frame(ms(1));
    let mut lanes = Vec::new();
    for _ in 0..1000 {
        world.add_systems(Update, spawner);
        world.run_frame(ms(1));
        assert_eq!(world.remove_systems(Update, spawner), Ok(1));
        lanes.push(world.entity_lane_count());
    }
    assert_eq!(lanes.first(), lanes.last());
    assert_eq!(world.query::<&Spark>().iter(&world).count(), 1000);
    assert_eq!(
        world.resource::<Schedules>().unwrap().get(Update).unwrap().len(),
        1
    );
}

fn explode(_: ResMut<Log>) {
    panic!("boom");
}

#[test]
fn a_schedule_whose_system_panicked_is_put_back() {
    let mut world = world();
    world.add_systems(Update, explode);
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| world.run_frame(ms(1))));
    assert!(result.is_err());
    assert!(world.resource::<Schedules>().unwrap().get(Update).is_some());
    assert_eq!(world.remove_systems(Update, explode), Ok(1));
    world.add_systems(Update, push("fine"));
    world.run_frame(ms(1));
    assert_eq!(log(&world), ["fine"]);
}

#[test]
fn a_frame_run_from_its_own_system_panics_with_a_message() {
    fn nested(world: &mut World) {
        world.run_frame(ms(1));
    }
    let mut world = world();
    world.add_systems(Update, nested);
    let panic =
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| world.run_frame(ms(1)))).unwrap_err();
    let message = panic.downcast_ref::<String>().unwrap();
    assert!(message.contains("`Update` is running"), "{message}");
    assert!(
        message.contains("a frame cannot be run from one of its own systems"),
        "{message}"
    );
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Phase {
    Intro,
}
impl States for Phase {}

fn restructure(world: &mut World) {
    // A later phase's schedule goes, a state arrives: this same frame sees both.
    world.resource_mut::<Schedules>().unwrap().remove(Last).unwrap();
    world.insert_state(Phase::Intro);
    world.add_systems(OnEnter(Phase::Intro), push("enter intro"));
}

#[test]
fn schedules_and_states_changed_by_an_earlier_phase_count_in_the_same_frame() {
    let mut world = world();
    world
        .add_systems(First, restructure.run_if(run_once_per_world))
        .add_systems(Update, push("update"))
        .add_systems(Last, push("last"));
    world.run_frame(ms(1));
    assert_eq!(log(&world), ["enter intro", "update"]);
    world.run_frame(ms(1));
    assert_eq!(log(&world), ["enter intro", "update", "update"]);
    // And a phase added back between frames runs in the next.
    world.add_systems(Last, push("last"));
    world.run_frame(ms(1));
    assert_eq!(log(&world), ["enter intro", "update", "update", "update", "last"]);
}

fn replace_schedules(world: &mut World) {
    let mut fresh = Schedules::default();
    fresh.entry(Update).unwrap().add_systems(push("new update"));
    fresh.entry(Last).unwrap().add_systems(push("new last"));
    world.insert_resource(fresh);
}

#[test]
fn schedules_replaced_by_an_earlier_phase_run_in_the_same_frame() {
    let mut world = world();
    world
        .add_systems(First, replace_schedules)
        .add_systems(PostUpdate, push("old post"));
    world.run_frame(ms(1));
    // The old PostUpdate went with the old resource; the new phases ran.
    assert_eq!(log(&world), ["new update", "new last"]);
}

fn startup_builds_the_game(world: &mut World) {
    world.insert_state(Phase::Intro);
    world.add_systems(OnEnter(Phase::Intro), push("enter intro"));
    world.add_systems(FixedUpdate, push("fixed"));
    world.add_systems(Update, push("update"));
}

#[test]
fn phases_and_states_made_by_startup_run_in_the_first_frame() {
    let mut world = world();
    world.add_systems(Startup, startup_builds_the_game);
    world.run_frame(ms(10));
    assert_eq!(log(&world), ["enter intro", "fixed", "update"]);
}

fn remove_last_then_panic(world: &mut World) {
    world.resource_mut::<Schedules>().unwrap().remove(Last).unwrap();
    panic!("a system of Update panicked");
}

#[test]
fn a_phase_removed_before_a_panic_stays_removed_in_the_next_frames() {
    let mut world = world();
    world
        .add_systems(Update, remove_last_then_panic.run_if(run_once_per_world))
        .add_systems(PostUpdate, push("post"))
        .add_systems(Last, push("last"));
    let frame = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| world.run_frame(ms(1))));
    assert!(frame.is_err());
    world.run_frame(ms(1));
    assert_eq!(log(&world), ["post"]);
    world.add_systems(Last, push("last"));
    world.run_frame(ms(1));
    assert_eq!(log(&world), ["post", "post", "last"]);
}
