//! Change ticks are laid out ahead, in the schedule's order: every system run gets the same
//! tick with 1 thread and with 4, later than the ticks of the systems it is ordered after,
//! and change detection through pipes, run conditions and sync points sees each change once.

use std::hint::black_box;
use std::sync::Mutex;

use tabula_core::query::Added;
use tabula_core::{Commands, World};
use tabula_schedule::prelude::*;
use tabula_schedule::{SystemChangeTick, condition};

/// (system, frame, this_run) of every run, as the systems record them.
static RUNS: Mutex<Vec<(usize, u32, u32)>> = Mutex::new(Vec::new());

#[derive(Default)]
struct Frame(u32);
struct A(u64);
struct B(u64);

/// Heavy enough to be handed to a helper thread.
fn busy() {
    for i in 0..20_000_u64 {
        black_box(i);
    }
}

fn record(system: usize, frame: &Frame, ticks: SystemChangeTick) {
    RUNS.lock()
        .unwrap()
        .push((system, frame.0, ticks.this_run().get()));
}

fn writes_a<const K: usize>(frame: Res<Frame>, ticks: SystemChangeTick, mut q: Query<&mut A>) {
    busy();
    q.for_each(|mut a| a.0 += K as u64);
    record(K, &frame, ticks);
}
fn writes_b<const K: usize>(frame: Res<Frame>, ticks: SystemChangeTick, mut q: Query<&mut B>) {
    busy();
    q.for_each(|mut b| b.0 += K as u64);
    record(K, &frame, ticks);
}
fn reads<const K: usize>(frame: Res<Frame>, ticks: SystemChangeTick) {
    busy();
    record(K, &frame, ticks);
}
fn spawns<const K: usize>(frame: Res<Frame>, ticks: SystemChangeTick, mut commands: Commands) {
    commands.spawn((A(0), B(0)));
    record(K, &frame, ticks);
}
fn next_frame(mut frame: ResMut<Frame>) {
    frame.0 += 1;
}

fn schedule() -> Schedule {
    let mut schedule = Schedule::new();
    schedule.add_systems((
        writes_a::<1>,
        writes_b::<2>,
        reads::<3>,
        reads::<4>,
        (writes_a::<5>, reads::<6>, writes_b::<7>).chain(),
        spawns::<8>,
        reads::<9>.after(spawns::<8>),
        writes_a::<10>.run_if(condition::resource_exists::<Frame>),
    ));
    schedule.add_systems(next_frame.after(writes_a::<10>).after(reads::<9>));
    schedule
}

fn runs_with(threads: usize) -> Vec<(usize, u32, u32)> {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap();
    pool.install(|| {
        let mut world = World::new();
        world.insert_resource(Frame::default());
        world.spawn((A(0), B(0)));
        let mut schedule = schedule();
        RUNS.lock().unwrap().clear();
        for _ in 0..20 {
            schedule.run(&mut world);
        }
        let mut runs = std::mem::take(&mut *RUNS.lock().unwrap());
        runs.sort_unstable();
        runs
    })
}

#[test]
#[cfg_attr(
    miri,
    ignore = "starts rayon pools, whose crossbeam-epoch fails Stacked Borrows"
)]
fn every_system_gets_the_same_tick_with_1_and_4_threads() {
    let one = runs_with(1);
    let four = runs_with(4);
    assert_eq!(one.len(), 20 * 10);
    assert_eq!(one, four);
    // Within a frame, a system ordered after another starts at a later tick.
    let tick = |system: usize, frame: u32| {
        one.iter()
            .find(|&&(s, f, _)| (s, f) == (system, frame))
            .map(|&(_, _, tick)| tick)
            .unwrap()
    };
    for frame in 0..20 {
        assert!(tick(5, frame) < tick(6, frame) && tick(6, frame) < tick(7, frame));
        assert!(tick(8, frame) < tick(9, frame));
        if frame > 0 {
            assert!(tick(9, frame - 1) < tick(1, frame));
        }
    }
}

#[derive(Default)]
struct Count(u32);
#[derive(Default)]
struct Seen(Vec<bool>);

fn watch(count: Res<Count>, mut seen: ResMut<Seen>) {
    seen.0.push(count.is_changed());
}
fn write(In(()): In<()>, mut count: ResMut<Count>) {
    count.0 += 1;
}

#[test]
fn a_pipes_first_part_sees_what_its_second_part_wrote_on_the_run_before() {
    let mut world = World::new();
    world.insert_resource(Count::default());
    world.insert_resource(Seen::default());
    let mut schedule = Schedule::new();
    schedule.add_systems(watch.pipe(write));
    for _ in 0..3 {
        schedule.run(&mut world);
    }
    // The first run sees the insert; each later one the second part's write of the run
    // before, which is newer than the first part's run only if the second part started at a
    // later tick.
    assert_eq!(world.resource::<Seen>().unwrap().0, [true, true, true]);
    assert_eq!(world.resource::<Count>().unwrap().0, 3);
}

fn counts(mut count: ResMut<Count>) {
    count.0 += 1;
}

#[test]
fn a_condition_runs_at_a_tick_before_its_system_so_it_sees_the_systems_writes() {
    let mut world = World::new();
    world.insert_resource(Count::default());
    let mut schedule = Schedule::new();
    schedule.add_systems(counts.run_if(condition::resource_changed::<Count>));
    for _ in 0..4 {
        schedule.run(&mut world);
    }
    // The system's write of each frame is newer than the condition's run of that frame.
    assert_eq!(world.resource::<Count>().unwrap().0, 4);
}

#[test]
fn a_sync_point_starts_a_new_segment_whose_systems_see_its_commands() {
    #[derive(Default)]
    struct Spawned(Vec<usize>);
    fn spawn(mut commands: Commands) {
        commands.spawn((A(1),));
    }
    fn added(q: Query<&A, Added<A>>, mut seen: ResMut<Spawned>) {
        seen.0.push(q.iter().count());
    }
    let mut world = World::new();
    world.insert_resource(Spawned::default());
    let mut schedule = Schedule::new();
    schedule.add_systems((spawn, added).chain());
    for _ in 0..3 {
        schedule.run(&mut world);
    }
    // Each frame's spawn, applied at the sync point, is new to `added` once.
    assert_eq!(world.resource::<Spawned>().unwrap().0, [1, 1, 1]);
}
