//! A set's run condition runs once per schedule run, however many systems the set has, at
//! one tick (its first system's), with the same verdict and tick at any thread count; it
//! keeps its state across rebuilds and sees what systems ordered before the set wrote.

use std::hint::black_box;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tabula_core::World;
use tabula_schedule::prelude::*;
use tabula_schedule::{ExecutorKind, SystemChangeTick, condition};

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Gated;
impl SystemSet for Gated {}

#[derive(Clone, PartialEq)]
struct Go(bool);

fn both_executors() -> [ExecutorKind; 2] {
    [ExecutorKind::SingleThreaded, ExecutorKind::Parallel]
}

/// A condition that counts its runs and answers `Go`.
fn counted(evaluations: &Arc<AtomicUsize>) -> impl FnMut(Res<Go>) -> bool + Clone + Send + Sync + 'static {
    let evaluations = evaluations.clone();
    move |go: Res<Go>| {
        evaluations.fetch_add(1, Ordering::Relaxed);
        go.0
    }
}

/// A system that counts its runs.
fn member(runs: &Arc<AtomicUsize>) -> impl FnMut() + Send + Sync + 'static {
    let runs = runs.clone();
    move || {
        runs.fetch_add(1, Ordering::Relaxed);
    }
}

#[test]
fn a_sets_condition_runs_once_per_run_however_many_systems_it_guards() {
    for executor in both_executors() {
        for go in [true, false] {
            let evaluations = Arc::new(AtomicUsize::new(0));
            let runs = Arc::new(AtomicUsize::new(0));
            let mut world = World::new();
            world.insert_resource(Go(go));
            let mut schedule = Schedule::new();
            schedule.set_executor(executor);
            schedule.configure_sets(Gated.run_if(counted(&evaluations)));
            for _ in 0..10 {
                schedule.add_systems(member(&runs).in_set(Gated));
            }
            for _ in 0..3 {
                schedule.run(&mut world);
            }
            assert_eq!(evaluations.load(Ordering::Relaxed), 3, "{executor:?}, go {go}");
            let expected = if go { 30 } else { 0 };
            assert_eq!(runs.load(Ordering::Relaxed), expected, "{executor:?}, go {go}");
        }
    }
}

#[test]
fn a_systems_own_condition_and_its_sets_must_both_allow_it() {
    for executor in both_executors() {
        let evaluations = Arc::new(AtomicUsize::new(0));
        let (allowed, refused) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let mut world = World::new();
        world.insert_resource(Go(true));
        let mut schedule = Schedule::new();
        schedule.set_executor(executor);
        schedule.configure_sets(Gated.run_if(counted(&evaluations)));
        schedule.add_systems((
            member(&allowed).in_set(Gated).run_if(|| true),
            member(&refused).in_set(Gated).run_if(|| false),
        ));
        schedule.run(&mut world);
        assert_eq!(evaluations.load(Ordering::Relaxed), 1, "{executor:?}");
        assert_eq!(allowed.load(Ordering::Relaxed), 1, "{executor:?}");
        assert_eq!(refused.load(Ordering::Relaxed), 0, "{executor:?}");
    }
}

#[test]
fn a_stateful_set_condition_keeps_its_state_when_the_set_gains_a_system() {
    for executor in both_executors() {
        let (first, second) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let mut world = World::new();
        let mut schedule = Schedule::new();
        schedule.set_executor(executor);
        schedule.configure_sets(Gated.run_if(condition::run_once));
        schedule.add_systems((member(&first).in_set(Gated), member(&first).in_set(Gated)));
        schedule.run(&mut world);
        schedule.run(&mut world);
        assert_eq!(
            first.load(Ordering::Relaxed),
            2,
            "{executor:?}: both ran on the first run only"
        );
        // The rebuild keeps the set's one `run_once`, which has run: the newcomer never runs.
        schedule.add_systems(member(&second).in_set(Gated));
        schedule.run(&mut world);
        assert_eq!(first.load(Ordering::Relaxed), 2, "{executor:?}");
        assert_eq!(second.load(Ordering::Relaxed), 0, "{executor:?}");
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Opens;
impl SystemSet for Opens {}

fn open(mut go: ResMut<Go>) {
    go.0 = true;
}

#[test]
fn a_sets_condition_sees_what_a_system_ordered_before_the_set_wrote_this_run() {
    for executor in both_executors() {
        let runs = Arc::new(AtomicUsize::new(0));
        let mut world = World::new();
        world.insert_resource(Go(false));
        let mut schedule = Schedule::new();
        schedule.set_executor(executor);
        schedule.configure_sets((
            Opens.before(Gated),
            Gated.run_if(condition::resource_equals(Go(true))),
        ));
        schedule.add_systems((
            open.in_set(Opens),
            member(&runs).in_set(Gated),
            member(&runs).in_set(Gated),
        ));
        schedule.run(&mut world);
        assert_eq!(runs.load(Ordering::Relaxed), 2, "{executor:?}");
    }
}

/// (who, this_run) of every run in the determinism test: 0 is the condition.
type Ticks = Arc<Mutex<Vec<(usize, u32)>>>;

fn ticked_condition(ticks: &Ticks) -> impl FnMut(SystemChangeTick) -> bool + Clone + Send + Sync + 'static {
    let ticks = ticks.clone();
    move |tick: SystemChangeTick| {
        ticks.lock().unwrap().push((0, tick.this_run().get()));
        true
    }
}

fn ticked_member(ticks: &Ticks, who: usize) -> impl FnMut(SystemChangeTick) + Send + Sync + 'static {
    let ticks = ticks.clone();
    move |tick: SystemChangeTick| {
        // Heavy enough for the parallel executor to hand some members to other threads.
        for i in 0..20_000_u64 {
            black_box(i);
        }
        ticks.lock().unwrap().push((who, tick.this_run().get()));
    }
}

fn ticks_with(threads: usize, executor: ExecutorKind) -> Vec<(usize, u32)> {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap();
    pool.install(|| {
        let ticks = Ticks::default();
        let mut world = World::new();
        let mut schedule = Schedule::new();
        schedule.set_executor(executor);
        schedule.configure_sets(Gated.run_if(ticked_condition(&ticks)));
        for who in 1..=6 {
            schedule.add_systems(ticked_member(&ticks, who).in_set(Gated));
        }
        for _ in 0..20 {
            schedule.run(&mut world);
        }
        let mut ticks = std::mem::take(&mut *ticks.lock().unwrap());
        ticks.sort_unstable_by_key(|&(who, tick)| (tick, who));
        ticks
    })
}

#[test]
#[cfg_attr(
    miri,
    ignore = "starts rayon pools, whose crossbeam-epoch fails Stacked Borrows"
)]
fn a_sets_condition_runs_at_its_first_systems_tick_with_1_and_4_threads() {
    let one = ticks_with(1, ExecutorKind::SingleThreaded);
    assert_eq!(one.len(), 20 * 7);
    for threads in [1, 4] {
        assert_eq!(
            ticks_with(threads, ExecutorKind::Parallel),
            one,
            "{threads} threads"
        );
    }
    // Each run: the condition, at the tick just before the set's first system's.
    for run in one.chunks(7) {
        assert_eq!(run[0].0, 0, "{run:?}");
        assert_eq!(run[1].1, run[0].1 + 1, "{run:?}");
    }
}

#[test]
fn a_sets_condition_missing_its_resource_names_the_set() {
    let runs = Arc::new(AtomicUsize::new(0));
    let mut world = World::new();
    let mut schedule = Schedule::new();
    schedule.add_systems(member(&runs).in_set(Gated));
    schedule.configure_sets(Gated.run_if(|_: Res<Go>| true));
    let err = catch_unwind(AssertUnwindSafe(|| schedule.run(&mut world))).unwrap_err();
    let message = err.downcast_ref::<String>().expect("a formatted panic message");
    assert!(message.contains("of set `Gated`"), "{message}");
    assert!(message.contains("Go"), "{message}");
}

struct Weight(u64);

/// A condition that walks every `Weight` with `par_for_each`, which rayon would split.
fn heavy_enough(weights: Query<&Weight>) -> bool {
    let total = std::sync::atomic::AtomicU64::new(0);
    weights.par_for_each(|weight| {
        total.fetch_add(weight.0, Ordering::Relaxed);
    });
    total.load(Ordering::Relaxed) > 0
}

fn weighed_member(runs: &Arc<AtomicUsize>) -> impl FnMut(Query<&Weight>) + Send + Sync + 'static {
    let runs = runs.clone();
    move |weights: Query<&Weight>| {
        weights.par_for_each(|weight| {
            black_box(weight.0);
        });
        runs.fetch_add(1, Ordering::Relaxed);
    }
}

#[test]
#[cfg_attr(
    miri,
    ignore = "starts rayon pools, whose crossbeam-epoch fails Stacked Borrows"
)]
fn a_sets_condition_that_runs_par_for_each_finishes_while_its_members_wait_on_other_threads() {
    // Run on another thread, so that a deadlock fails the test instead of hanging it.
    let (done, finished) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(4).build().unwrap();
        let runs = Arc::new(AtomicUsize::new(0));
        pool.install(|| {
            let mut world = World::new();
            world.spawn_batch((0..50_000).map(|i| (Weight(i),)));
            let mut schedule = Schedule::new();
            schedule.configure_sets(Gated.run_if(heavy_enough));
            for _ in 0..8 {
                schedule.add_systems(weighed_member(&runs).in_set(Gated));
            }
            for _ in 0..50 {
                schedule.run(&mut world);
            }
        });
        done.send(runs.load(Ordering::Relaxed)).unwrap();
    });
    let runs = finished
        .recv_timeout(std::time::Duration::from_secs(120))
        .expect("the schedule finished (no thread waits on another that waits on it)");
    assert_eq!(runs, 8 * 50);
}
