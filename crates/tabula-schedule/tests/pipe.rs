//! Piping and `In<T>` inputs: a pipe is one system whose access is the union of its parts',
//! its first part's output is its second part's input, and one-shot systems take inputs.

use tabula_core::{Commands, World};
use tabula_schedule::prelude::*;
use tabula_schedule::{IntoSystem, RunSystemError, System};

struct A(u32);
struct B(u32);
#[derive(Default)]
struct Log(Vec<String>);

fn read_a(q: Query<&A>) -> u32 {
    q.iter().map(|a| a.0).sum()
}

fn write_b(In(sum): In<u32>, mut q: Query<&mut B>) {
    for mut b in q.iter_mut() {
        b.0 = sum;
    }
}

fn bump_a(mut q: Query<&mut A>) {
    for mut a in q.iter_mut() {
        a.0 += 1;
    }
}

fn read_b(q: Query<&B>, mut log: ResMut<Log>) {
    log.0.extend(q.iter().map(|b| format!("b={}", b.0)));
}

fn untouched(_: Query<&u8>) {}

#[test]
fn a_piped_pair_feeds_its_output_and_conflicts_as_the_union_of_both() {
    let mut world = World::new();
    world.init_resource::<Log>();
    world.spawn((A(2), B(0)));
    world.spawn((A(3),));
    let mut schedule = Schedule::new();
    schedule.add_systems((bump_a, read_a.pipe(write_b), read_b, untouched));
    schedule.run(&mut world);
    // bump_a was added first and conflicts with the pipe's first part (on `A`); read_b
    // conflicts with its second part (on `B`): both orders hold.
    assert_eq!(world.resource::<Log>().unwrap().0, ["b=7"]);

    let deps = schedule.dependencies(&mut world).unwrap();
    let pipe = deps
        .iter()
        .map(|d| (d.before.as_str(), d.after.as_str(), d.reason.as_str()))
        .collect::<Vec<_>>();
    let named = |before: &str, after: &str| {
        pipe.iter()
            .find(|(b, a, _)| b.ends_with(before) && a.contains(after))
            .map(|(_, _, reason)| reason.to_string())
    };
    let before = named("bump_a", "read_a | ").expect("bump_a orders the pipe");
    assert!(before.contains("`A`"), "{before}");
    let after = deps
        .iter()
        .find(|d| d.before.contains(" | ") && d.after.ends_with("read_b"))
        .expect("the pipe orders read_b");
    assert!(after.reason.contains("`B`"), "{}", after.reason);
    assert!(
        deps.iter()
            .all(|d| !d.before.ends_with("untouched") && !d.after.ends_with("untouched")),
        "a system touching neither part's data is not ordered: {deps:?}"
    );
}

#[test]
fn the_parts_of_a_pipe_may_touch_the_same_data() {
    // The first part writes what the second reads: they never run at the same time, so
    // this is no conflict (a system with both parameters would panic).
    fn total(mut q: Query<&mut A>) -> u32 {
        q.iter_mut()
            .map(|mut a| {
                a.0 *= 10;
                a.0
            })
            .sum()
    }
    fn check(In(sum): In<u32>, q: Query<&A>, mut log: ResMut<Log>) {
        log.0
            .push(format!("{sum} {}", q.iter().map(|a| a.0).sum::<u32>()));
    }
    let mut world = World::new();
    world.init_resource::<Log>();
    world.spawn((A(1),));
    world.spawn((A(2),));
    let mut schedule = Schedule::new();
    schedule.add_systems(total.pipe(check));
    schedule.run(&mut world);
    assert_eq!(world.resource::<Log>().unwrap().0, ["30 30"]);
}

#[test]
fn a_result_is_piped_into_an_error_handler() {
    #[derive(Debug)]
    struct NoTarget(&'static str);
    fn aim(q: Query<&A>) -> Result<u32, NoTarget> {
        q.iter().next().map(|a| a.0).ok_or(NoTarget("nothing has an A"))
    }
    fn handle(In(result): In<Result<u32, NoTarget>>, mut log: ResMut<Log>) {
        match result {
            Ok(target) => log.0.push(format!("aim at {target}")),
            Err(error) => log.0.push(format!("error: {}", error.0)),
        }
    }
    let mut world = World::new();
    world.init_resource::<Log>();
    let mut schedule = Schedule::new();
    schedule.add_systems(aim.pipe(handle));
    schedule.run(&mut world);
    world.spawn((A(9),));
    schedule.run(&mut world);
    assert_eq!(
        world.resource::<Log>().unwrap().0,
        ["error: nothing has an A", "aim at 9"]
    );
}

#[test]
fn pipes_chain_and_keep_each_parts_commands() {
    fn spawn_one(mut commands: Commands) -> u32 {
        commands.spawn((B(1),));
        1
    }
    fn add(In(n): In<u32>, mut commands: Commands) -> u32 {
        commands.spawn((B(2),));
        n + 10
    }
    fn store(In(n): In<u32>, mut log: ResMut<Log>) {
        log.0.push(n.to_string());
    }
    let mut world = World::new();
    world.init_resource::<Log>();
    let mut schedule = Schedule::new();
    schedule.add_systems(spawn_one.pipe(add).pipe(store));
    schedule.run(&mut world);
    assert_eq!(world.resource::<Log>().unwrap().0, ["11"]);
    let mut bs: Vec<u32> = world.query::<&B>().iter(&world).map(|b| b.0).collect();
    bs.sort_unstable();
    assert_eq!(bs, [1, 2], "both parts' commands were applied");
}

#[test]
fn one_shot_systems_take_inputs() {
    fn scale(In(k): In<u32>, mut q: Query<&mut A>) -> u32 {
        q.iter_mut()
            .map(|mut a| {
                a.0 *= k;
                a.0
            })
            .sum()
    }
    fn spawn_n(In(n): In<usize>, mut commands: Commands) {
        for _ in 0..n {
            commands.spawn((A(1),));
        }
    }
    struct Spawner(tabula_schedule::SystemId<(), usize>);
    fn request(mut commands: Commands, spawner: Res<Spawner>) {
        commands.run_system_with(spawner.0, 3);
    }

    let mut world = World::new();
    world.spawn((A(2),));
    let scale_id = world.register_system(scale);
    assert_eq!(world.run_system_with(scale_id, 3), Ok(6));
    assert_eq!(world.run_system_with(scale_id, 2), Ok(12));

    let spawner = world.register_system(spawn_n);
    world.insert_resource(Spawner(spawner));
    let mut schedule = Schedule::new();
    schedule.add_systems(request);
    schedule.run(&mut world);
    assert_eq!(world.query::<&A>().iter(&world).count(), 4);

    // A pipe with an input registers like any system.
    let piped = world.register_system(scale.pipe(|In(total): In<u32>| total + 1));
    assert_eq!(world.run_system_with(piped, 1), Ok(12 + 3 + 1));

    world.unregister_system(scale_id).unwrap();
    assert!(matches!(
        world.run_system_with(scale_id, 1),
        Err(RunSystemError::NotRegistered(_))
    ));
}

#[test]
fn a_pipe_runs_outside_a_schedule_with_its_input() {
    let mut world = World::new();
    world.spawn((A(4), B(0)));
    let mut system = IntoSystem::into_system(
        (|In(k): In<u32>, q: Query<&A>| q.iter().map(|a| a.0 * k).sum::<u32>()).pipe(write_b),
    );
    system.initialize(&mut world);
    system.run_with(5, &mut world);
    assert_eq!(world.query::<&B>().iter(&world).next().unwrap().0, 20);
    assert!(system.name().contains(" | "), "{}", system.name());
}
