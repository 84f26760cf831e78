//! Resource change ticks (`Slot::changed`, an `UnsafeCell` beside the value) read
//! by `Res` / `Option<Res>` parameters and run conditions while `ResMut` writers run in
//! other systems. The scheduler must order every reader of `R` (conditions included) against
//! every writer of `R`; under Miri (`-Zmiri-tree-borrows -Zmiri-ignore-leaks`, rayon runs)
//! an unordered pair would show as a data race on the tick or the value. The outcome must be
//! the same with both executors, since conflicting systems run in the order they were added.

use tabula_core::World;
use tabula_schedule::prelude::*;

#[derive(Default)]
struct Score(u32);
#[derive(Default)]
struct Other(u32);
#[derive(Default, Debug, PartialEq, Clone)]
struct Out(Vec<(u32, bool, bool)>);
#[derive(Default, Debug, PartialEq, Clone)]
struct OutOpt(Vec<Option<(u32, bool)>>);
#[derive(Default, Debug, PartialEq, Clone)]
struct OutCond(Vec<u32>);
#[derive(Default, Debug, PartialEq, Clone)]
struct OutCondOpt(Vec<u32>);

fn writer(mut score: ResMut<Score>, mut step: Local<u32>) {
    *step += 1;
    if step.is_multiple_of(2) {
        score.0 += 1;
    } else {
        score.bypass_change_detection();
    }
}
fn other_writer(mut other: ResMut<Other>) {
    other.0 += 1;
}
fn reader(score: Res<Score>, mut out: ResMut<Out>) {
    out.0.push((score.0, score.is_added(), score.is_changed()));
}
fn reader_opt(score: Option<Res<Score>>, mut out: ResMut<OutOpt>) {
    out.0.push(score.map(|s| (s.0, s.is_changed())));
}
fn changed(score: Res<Score>) -> bool {
    score.is_changed()
}
fn changed_opt(score: Option<Res<Score>>) -> bool {
    score.is_some_and(|s| s.is_changed())
}
fn guarded(mut out: ResMut<OutCond>, mut n: Local<u32>) {
    *n += 1;
    out.0.push(*n);
}
fn guarded_opt(mut out: ResMut<OutCondOpt>, mut n: Local<u32>) {
    *n += 1;
    out.0.push(*n);
}

fn run(executor: ExecutorKind) -> (Out, OutOpt, OutCond, OutCondOpt) {
    let mut world = World::new();
    world.init_resource::<Score>();
    world.init_resource::<Other>();
    world.init_resource::<Out>();
    world.init_resource::<OutOpt>();
    world.init_resource::<OutCond>();
    world.init_resource::<OutCondOpt>();
    let mut schedule = Schedule::new();
    schedule.set_executor(executor);
    // No explicit order: only the conflicts on `Score` order these.
    schedule.add_systems((
        reader,
        guarded.run_if(changed),
        writer,
        other_writer,
        reader_opt,
        guarded_opt.run_if(changed_opt),
    ));
    let runs = if cfg!(miri) { 6 } else { 40 };
    for _ in 0..runs {
        schedule.run(&mut world);
    }
    (
        world.resource::<Out>().unwrap().clone(),
        world.resource::<OutOpt>().unwrap().clone(),
        world.resource::<OutCond>().unwrap().clone(),
        world.resource::<OutCondOpt>().unwrap().clone(),
    )
}

#[test]
fn resource_ticks_readers_conditions_and_writers_are_ordered() {
    let single = run(ExecutorKind::SingleThreaded);
    let parallel = run(ExecutorKind::Parallel);
    assert_eq!(single, parallel);
    let (out, opt, _, _) = &single;
    // `reader` comes before `writer`: it sees the value before this run's write, changed when
    // the previous run wrote (every second run), and added on the first.
    assert_eq!(out.0[0], (0, true, true));
    assert_eq!(out.0[1], (0, false, false));
    assert_eq!(out.0[2], (1, false, true));
    assert_eq!(out.0[3], (1, false, false));
    // `reader_opt` comes after `writer`: it sees this run's write.
    assert_eq!(opt.0[0], Some((0, true)));
    assert_eq!(opt.0[1], Some((1, true)));
    assert_eq!(opt.0[2], Some((1, false)));
}
