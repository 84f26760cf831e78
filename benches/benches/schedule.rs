//! Scheduler benchmarks: one `Schedule::run` with the parallel and the single-threaded
//! executor, each beside a baseline that does the same work without an ECS.
//!
//! - `schedule` (ecs_bench_suite): 10k entities each of (A, B), (A, B, C), (A, B, C, D) and
//!   (A, B, C, E); three systems swap A<->B, C<->D and C<->E. `raw` is the same three swaps
//!   as plain sequential loops over plain `Vec` columns.
//! - `empty_systems`: 1 / 10 / 100 / 1000 distinct parameterless systems. `raw` calls the same
//!   functions through a `Vec<fn()>`. The throughput is the number of systems, so criterion
//!   reports systems per second; the summary gives ns per system.
//! - `busy_systems`: 15 systems over 50k entities with mixed access (read-only, disjoint
//!   writers, and conflicting pairs that the graph orders), each doing a few flops per entity;
//!   single-threaded against parallel executor.
//! - `game_frame`: one frame of a small war game (`tabula_benches::game_frame`): 20,000 units
//!   (Position, Velocity, Health, Team, Cooldown) and 20,000 rocks (Position, Velocity), eight
//!   systems (integrate, steer through `par_for_each`, regen, fire, age, expire, hit, census)
//!   making ~660 spawns, ~660 despawns and ~625 damage commands a frame. `tabula_<n>t` runs
//!   the schedule inside a rayon pool of n threads (1, 2, 4, 8), each on its own world;
//!   `raw` is the same frame written by hand over plain `Vec`s, serially; `raw_par_<n>t`
//!   runs it with its steer loop through rayon's `par_iter_mut` in a pool of n threads (the
//!   hand-written counterpart of the frame's one `par_for_each`). The setup checks
//!   that every thread count leaves the same world (digest of entity ids and all state).
//!
//! - `frame_overhead`: 64 parameterless systems run four ways: `schedule_run` calls
//!   `Schedule::run` directly; `run_schedule` runs the same systems as the `Update` schedule
//!   of the world's `Schedules` (`world.run_schedule(Update)`); `run_frame` runs a whole
//!   frame (`world.run_frame(dt)`) whose only schedule is that `Update` (the clock, the fixed
//!   step with nothing due, the empty phases skipped, events aged); `run_frame_in_state` adds
//!   a registered state and puts the 64 systems in a set gated by `in_state` (one condition
//!   per system, true). What labelled schedules, the frame and states add per system. Each
//!   way runs with the parallel executor and, as `<way>_single`, the single-threaded one,
//!   whose instruction counts under callgrind have no hand-offs to other threads in them.
//!
//! - `sched_scale`: 1 / 64 / 1,000 / 6,000 trivial systems, each reading a `Tick` resource
//!   into a `Local` counter (distinct systems: a slot, state and access of their own), all
//!   independent, and `chained` with the first half of them in one `chain()`. `run_parallel`
//!   / `run_single` time one `Schedule::run` with each executor; `plain_loop` calls the same
//!   work as boxed closures over a plain `Vec`; `build` times the first `initialize` (systems
//!   initialised, graph built). Throughput is the number of systems: ns per system.
//!
//! Run with `cargo bench -p tabula-benches --bench schedule`; results are summarised in
//! `docs/benchmarks.md` (section "Scheduler").
//!
//! ## Interleaved mode, for busy machines
//!
//! `TABULA_BENCH_ROUNDS=300 cargo bench -p tabula-benches --bench schedule -- game_frame`
//! runs `game_frame` in interleaved rounds instead of under criterion (the other groups here
//! run under criterion only); see `harness/mod.rs`.

use std::hint::black_box;
use std::time::Duration;

use criterion::{BatchSize, BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use rayon::{ThreadPool, ThreadPoolBuilder};
use tabula::prelude::*;
use tabula::schedule::{Schedules, SystemConfigs};
use tabula_benches::game_frame::{self, RawGame, Setup, Tally};

// `evict_caches` is for groups that stream more than the caches hold; none here does.
#[allow(dead_code)]
#[macro_use]
mod harness;

use harness::*;

const EXECUTORS: [(&str, ExecutorKind); 2] = [
    ("parallel", ExecutorKind::Parallel),
    ("single_threaded", ExecutorKind::SingleThreaded),
];

// ---------------------------------------------------------------------------------------
// schedule

struct A(f32);
struct B(f32);
struct C(f32);
struct D(f32);
struct E(f32);

fn swap_ab(mut q: Query<(&mut A, &mut B)>) {
    q.for_each(|(mut a, mut b)| std::mem::swap(&mut a.0, &mut b.0));
}

fn swap_cd(mut q: Query<(&mut C, &mut D)>) {
    q.for_each(|(mut c, mut d)| std::mem::swap(&mut c.0, &mut d.0));
}

fn swap_ce(mut q: Query<(&mut C, &mut E)>) {
    q.for_each(|(mut c, mut e)| std::mem::swap(&mut c.0, &mut e.0));
}

/// The raw baseline's storage: one `Vec` per column per archetype.
#[derive(Default)]
struct RawColumns {
    a: Vec<A>,
    b: Vec<B>,
    c: Vec<C>,
    d: Vec<D>,
    e: Vec<E>,
}

fn schedule(c: &mut Criterion) {
    const N: usize = 10_000;
    let mut group = c.benchmark_group("schedule");

    let mut raw: [RawColumns; 4] = Default::default();
    for (kind, table) in raw.iter_mut().enumerate() {
        for i in 0..N {
            let v = i as f32;
            table.a.push(A(v));
            table.b.push(B(v + 1.0));
            if kind >= 1 {
                table.c.push(C(v + 2.0));
            }
            if kind == 2 {
                table.d.push(D(v + 3.0));
            }
            if kind == 3 {
                table.e.push(E(v + 4.0));
            }
        }
    }
    group.bench_function("raw", |b| {
        b.iter(|| {
            let raw = black_box(&mut raw);
            for table in raw.iter_mut() {
                for (a, b) in table.a.iter_mut().zip(&mut table.b) {
                    std::mem::swap(&mut a.0, &mut b.0);
                }
            }
            let t = &mut raw[2];
            for (c, d) in t.c.iter_mut().zip(&mut t.d) {
                std::mem::swap(&mut c.0, &mut d.0);
            }
            let t = &mut raw[3];
            for (c, e) in t.c.iter_mut().zip(&mut t.e) {
                std::mem::swap(&mut c.0, &mut e.0);
            }
        })
    });

    for (name, executor) in EXECUTORS {
        let mut world = World::new();
        for i in 0..N {
            let v = i as f32;
            world.spawn((A(v), B(v + 1.0)));
            world.spawn((A(v), B(v + 1.0), C(v + 2.0)));
            world.spawn((A(v), B(v + 1.0), C(v + 2.0), D(v + 3.0)));
            world.spawn((A(v), B(v + 1.0), C(v + 2.0), E(v + 4.0)));
        }
        let mut schedule = Schedule::new();
        schedule.add_systems((swap_ab, swap_cd, swap_ce));
        schedule.set_executor(executor);
        group.bench_function(name, |b| b.iter(|| schedule.run(black_box(&mut world))));
    }
    group.finish();
}

// ---------------------------------------------------------------------------------------
// empty_systems

/// One distinct empty function per `I`.
fn empty<const I: usize>() {}

/// Receives `empty::<I>` for `I` in `0..1000`, in order.
trait Visit {
    fn visit<const I: usize>(&mut self);
}

macro_rules! visit_units {
    ($v:ident, $h:literal, $t:literal) => {
        $v.visit::<{ $h * 100 + $t * 10 }>();
        $v.visit::<{ $h * 100 + $t * 10 + 1 }>();
        $v.visit::<{ $h * 100 + $t * 10 + 2 }>();
        $v.visit::<{ $h * 100 + $t * 10 + 3 }>();
        $v.visit::<{ $h * 100 + $t * 10 + 4 }>();
        $v.visit::<{ $h * 100 + $t * 10 + 5 }>();
        $v.visit::<{ $h * 100 + $t * 10 + 6 }>();
        $v.visit::<{ $h * 100 + $t * 10 + 7 }>();
        $v.visit::<{ $h * 100 + $t * 10 + 8 }>();
        $v.visit::<{ $h * 100 + $t * 10 + 9 }>();
    };
}

macro_rules! visit_tens {
    ($v:ident, $h:literal) => {
        visit_units!($v, $h, 0);
        visit_units!($v, $h, 1);
        visit_units!($v, $h, 2);
        visit_units!($v, $h, 3);
        visit_units!($v, $h, 4);
        visit_units!($v, $h, 5);
        visit_units!($v, $h, 6);
        visit_units!($v, $h, 7);
        visit_units!($v, $h, 8);
        visit_units!($v, $h, 9);
    };
}

/// Visits the first thousand `empty::<I>`.
fn visit_thousand(v: &mut impl Visit) {
    visit_tens!(v, 0);
    visit_tens!(v, 1);
    visit_tens!(v, 2);
    visit_tens!(v, 3);
    visit_tens!(v, 4);
    visit_tens!(v, 5);
    visit_tens!(v, 6);
    visit_tens!(v, 7);
    visit_tens!(v, 8);
    visit_tens!(v, 9);
}

/// Adds the first `n` empty systems to a schedule.
struct AddSystems<'a> {
    schedule: &'a mut Schedule,
    n: usize,
}

impl Visit for AddSystems<'_> {
    fn visit<const I: usize>(&mut self) {
        if I < self.n {
            self.schedule.add_systems(empty::<I>);
        }
    }
}

/// Collects the first `n` empty functions as pointers.
struct CollectFns {
    fns: Vec<fn()>,
    n: usize,
}

impl Visit for CollectFns {
    fn visit<const I: usize>(&mut self) {
        if I < self.n {
            self.fns.push(empty::<I>);
        }
    }
}

fn empty_systems(c: &mut Criterion) {
    let mut group = c.benchmark_group("empty_systems");
    for n in [1, 10, 100, 1000] {
        group.throughput(Throughput::Elements(n as u64));

        let mut collect = CollectFns {
            fns: Vec::with_capacity(n),
            n,
        };
        visit_thousand(&mut collect);
        let fns = collect.fns;
        group.bench_with_input(BenchmarkId::new("raw", n), &fns, |b, fns| {
            b.iter(|| {
                for f in black_box(fns) {
                    f();
                }
            })
        });

        for (name, executor) in EXECUTORS {
            let mut world = World::new();
            let mut schedule = Schedule::new();
            visit_thousand(&mut AddSystems {
                schedule: &mut schedule,
                n,
            });
            assert_eq!(schedule.len(), n);
            schedule.set_executor(executor);
            group.bench_function(BenchmarkId::new(name, n), |b| {
                b.iter(|| schedule.run(black_box(&mut world)))
            });
        }
    }
    group.finish();
}

// ---------------------------------------------------------------------------------------
// frame_overhead

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Mode {
    On,
}
impl States for Mode {}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Gated;
impl SystemSet for Gated {}

/// Adds the first `n` empty systems to the world's `Update` schedule, in `Gated` or not.
struct AddToUpdate<'a> {
    world: &'a mut World,
    n: usize,
    gated: bool,
}

impl Visit for AddToUpdate<'_> {
    fn visit<const I: usize>(&mut self) {
        if I < self.n {
            if self.gated {
                self.world.add_systems(Update, empty::<I>.in_set(Gated));
            } else {
                self.world.add_systems(Update, empty::<I>);
            }
        }
    }
}

fn frame_overhead(c: &mut Criterion) {
    const N: usize = 64;
    let dt = Duration::from_micros(100); // far below the fixed step: no fixed schedule runs
    let mut group = c.benchmark_group("frame_overhead");
    group.throughput(Throughput::Elements(N as u64));

    // Each way with both executors: the parallel one (the default, timed), and the
    // single-threaded one, whose instruction counts under callgrind are exact (no hand-offs
    // to other threads to subtract).
    for (suffix, executor) in [
        ("", ExecutorKind::Parallel),
        ("_single", ExecutorKind::SingleThreaded),
    ] {
        let mut world = World::new();
        let mut schedule = Schedule::new();
        schedule.set_executor(executor);
        visit_thousand(&mut AddSystems {
            schedule: &mut schedule,
            n: N,
        });
        assert_eq!(schedule.len(), N);
        group.bench_function(format!("schedule_run{suffix}"), |b| {
            b.iter(|| schedule.run(black_box(&mut world)))
        });

        let labelled = |gated: bool| {
            let mut world = World::new();
            if gated {
                world.insert_state(Mode::On);
                world.configure_sets(Update, Gated.run_if(in_state(Mode::On)));
            }
            visit_thousand(&mut AddToUpdate {
                world: &mut world,
                n: N,
                gated,
            });
            let schedules = world.resource_mut::<Schedules>().expect("made by add_systems");
            schedules
                .entry(Update)
                .expect("not running")
                .set_executor(executor);
            world
        };
        let mut world = labelled(false);
        group.bench_function(format!("run_schedule{suffix}"), |b| {
            b.iter(|| black_box(&mut world).run_schedule(Update))
        });
        let mut world = labelled(false);
        group.bench_function(format!("run_frame{suffix}"), |b| {
            b.iter(|| black_box(&mut world).run_frame(dt))
        });
        let mut world = labelled(true);
        group.bench_function(format!("run_frame_in_state{suffix}"), |b| {
            b.iter(|| black_box(&mut world).run_frame(dt))
        });
    }
    group.finish();
}

// ---------------------------------------------------------------------------------------
// sched_scale

/// What every `sched_scale` system reads.
struct Tick(u64);

/// `n` distinct trivial systems (each reads `Tick` into a counter of its own) as one config:
/// the first `chained` of them in a chain, the rest independent.
fn trivial_systems(n: usize, chained: usize) -> SystemConfigs {
    let system = |i: u64| {
        move |tick: Res<Tick>, mut count: Local<u64>| {
            *count = count.wrapping_add(tick.0 ^ i);
        }
    };
    let chain = (0..chained as u64).map(|i| system(i).into_configs()).collect();
    let mut items = vec![SystemConfigs::Group {
        items: chain,
        chained: true,
    }];
    items.extend((chained as u64..n as u64).map(|i| system(i).into_configs()));
    SystemConfigs::Group {
        items,
        chained: false,
    }
}

/// A schedule of [`trivial_systems`] and a world for it, not built yet.
fn trivial_schedule(n: usize, chained: usize, executor: ExecutorKind) -> (Schedule, World) {
    let mut world = World::new();
    world.insert_resource(Tick(1));
    let mut schedule = Schedule::new();
    schedule.add_systems(trivial_systems(n, chained));
    schedule.set_executor(executor);
    assert_eq!(schedule.len(), n);
    (schedule, world)
}

fn sched_scale(c: &mut Criterion) {
    let mut group = c.benchmark_group("sched_scale");
    for n in [1, 64, 1_000, 6_000] {
        group.throughput(Throughput::Elements(n as u64));

        // The same work as direct calls: one boxed closure per system, each with its counter.
        let tick = Tick(1);
        let mut calls: Vec<Box<dyn FnMut(&Tick)>> = (0..n as u64)
            .map(|i| {
                let mut count = 0_u64;
                Box::new(move |tick: &Tick| {
                    count = count.wrapping_add(tick.0 ^ i);
                    black_box(count);
                }) as Box<dyn FnMut(&Tick)>
            })
            .collect();
        group.bench_function(BenchmarkId::new("plain_loop", n), |b| {
            b.iter(|| {
                for call in black_box(&mut calls).iter_mut() {
                    call(black_box(&tick));
                }
            })
        });

        let shapes: &[(&str, usize)] = if n > 1 {
            &[("", 0), ("_chained", n / 2)]
        } else {
            &[("", 0)]
        };
        for &(shape, chained) in shapes {
            for (name, executor) in [
                ("run_parallel", ExecutorKind::Parallel),
                ("run_single", ExecutorKind::SingleThreaded),
            ] {
                let (mut schedule, mut world) = trivial_schedule(n, chained, executor);
                schedule.run(&mut world);
                group.bench_function(BenchmarkId::new(format!("{name}{shape}"), n), |b| {
                    b.iter(|| schedule.run(black_box(&mut world)))
                });
            }
            // A build of 6,000 systems takes milliseconds: ten samples.
            group.sample_size(10);
            group.bench_function(BenchmarkId::new(format!("build{shape}"), n), |b| {
                b.iter_batched(
                    || trivial_schedule(n, chained, ExecutorKind::Parallel),
                    |(mut schedule, mut world)| {
                        schedule.initialize(&mut world).expect("the schedule builds");
                        (schedule, world)
                    },
                    BatchSize::PerIteration,
                )
            });
            group.sample_size(100);
        }
    }
    group.finish();
}

// ---------------------------------------------------------------------------------------
// busy_systems

struct Pos(f32);
struct Vel(f32);
struct Acc(f32);
struct Mass(f32);
struct Health(f32);
struct Energy(f32);
struct Temp(f32);
struct Color(f32);
struct Score(f32);
struct Age(f32);

const DT: f32 = 1.0 / 60.0;

// Writers. The access pattern (W = writes, R = reads) and what the graph makes of it:
//   accel     W Acc      R Mass
//   age       W Age
//   velocity  W Vel      R Acc            after accel (Acc)
//   heat      W Temp     R Mass
//   position  W Pos      R Vel            after velocity (Vel)
//   health    W Health   R Energy
//   energy    W Energy   R Vel            after velocity (Vel), health (Energy)
//   color     W Color    R Temp           after heat (Temp)
//   score     W Score    R Health, Age    after health, age
// Readers (sum into a `Local`):
//   sum_pos R Pos; sum_vel R Vel; sum_health R Health, Energy; sum_color R Temp, Color;
//   sum_score R Score, Age; sum_acc R Mass, Acc — each after the writers of what it reads.

fn accel(mut q: Query<(&mut Acc, &Mass)>) {
    q.for_each(|(mut a, m)| a.0 = (a.0 * 0.5 + 9.81 / m.0).sin());
}

fn age(mut q: Query<&mut Age>) {
    q.for_each(|mut a| a.0 = (a.0 + DT).min(1000.0).sqrt() * a.0.sqrt().max(1.0));
}

fn velocity(mut q: Query<(&mut Vel, &Acc)>) {
    q.for_each(|(mut v, a)| v.0 = (v.0 * 0.99 + a.0 * DT).clamp(-100.0, 100.0).sin());
}

fn heat(mut q: Query<(&mut Temp, &Mass)>) {
    q.for_each(|(mut t, m)| t.0 = (t.0 * 0.999 + m.0.sqrt() * 0.01).cos() + 1.0);
}

fn position(mut q: Query<(&mut Pos, &Vel)>) {
    q.for_each(|(mut p, v)| p.0 = (p.0 + v.0 * DT).rem_euclid(1000.0).sqrt() * 31.6);
}

fn health(mut q: Query<(&mut Health, &Energy)>) {
    q.for_each(|(mut h, e)| h.0 = (h.0 + e.0.abs().sqrt() * DT).min(100.0).ln_1p() * 20.0);
}

fn energy(mut q: Query<(&mut Energy, &Vel)>) {
    q.for_each(|(mut e, v)| e.0 = (e.0 - v.0 * v.0 * DT).max(0.0).sqrt() * 10.0);
}

fn color(mut q: Query<(&mut Color, &Temp)>) {
    q.for_each(|(mut c, t)| c.0 = (t.0 * 0.5).tanh() * 0.5 + c.0 * 0.5);
}

fn score(mut q: Query<(&mut Score, &Health, &Age)>) {
    q.for_each(|(mut s, h, a)| s.0 = (s.0 * 0.9 + h.0 * a.0.sqrt()).ln_1p());
}

fn sum_pos(q: Query<&Pos>, mut sum: Local<f32>) {
    *sum += q.iter().map(|p| p.0.sqrt()).sum::<f32>();
}

fn sum_vel(q: Query<&Vel>, mut sum: Local<f32>) {
    *sum += q.iter().map(|v| v.0.abs().sqrt()).sum::<f32>();
}

fn sum_health(q: Query<(&Health, &Energy)>, mut sum: Local<f32>) {
    *sum += q.iter().map(|(h, e)| (h.0 * e.0).abs().sqrt()).sum::<f32>();
}

fn sum_color(q: Query<(&Temp, &Color)>, mut sum: Local<f32>) {
    *sum += q.iter().map(|(t, c)| (t.0 - c.0).abs().sqrt()).sum::<f32>();
}

fn sum_score(q: Query<(&Score, &Age)>, mut sum: Local<f32>) {
    *sum += q.iter().map(|(s, a)| (s.0 + a.0).abs().sqrt()).sum::<f32>();
}

fn sum_acc(q: Query<(&Mass, &Acc)>, mut sum: Local<f32>) {
    *sum += q.iter().map(|(m, a)| (m.0 * a.0).abs().sqrt()).sum::<f32>();
}

fn busy_systems(c: &mut Criterion) {
    const N: usize = 50_000;
    let mut group = c.benchmark_group("busy_systems");
    for (name, executor) in EXECUTORS {
        let mut world = World::new();
        for i in 0..N {
            let v = (i % 1000) as f32 + 1.0;
            world.spawn((
                Pos(v),
                Vel(v * 0.1),
                Acc(0.0),
                Mass(v),
                Health(50.0),
                Energy(v),
                Temp(20.0),
                Color(0.5),
                Score(0.0),
                Age(v),
            ));
        }
        let mut schedule = Schedule::new();
        schedule.add_systems((accel, age, velocity, heat, position, health, energy, color, score));
        schedule.add_systems((sum_pos, sum_vel, sum_health, sum_color, sum_score, sum_acc));
        assert_eq!(schedule.len(), 15);
        schedule.set_executor(executor);
        group.bench_function(name, |b| b.iter(|| schedule.run(black_box(&mut world))));
    }
    group.finish();
}

// ---------------------------------------------------------------------------------------
// game_frame

/// The thread counts `game_frame` runs at, each in its own rayon pool.
const FRAME_THREADS: [usize; 4] = [1, 2, 4, 8];

/// One world and schedule per thread count (in [`FRAME_THREADS`] order), the raw game, and
/// the raw game with a parallel steer for 1 and 2 threads.
struct FrameState {
    worlds: Vec<(World, Schedule)>,
    raw: RawGame,
    raw_par: [RawGame; 2],
}

impl Rounds for FrameState {}

fn game_frame(c: &mut Criterion) {
    const UNITS: usize = 20_000;
    const ROCKS: usize = 20_000;
    /// Frames run before timing: bullets fill up to their steady count in 20.
    const WARM_FRAMES: usize = 40;
    if interleaved_rounds().is_some() && !selected("game_frame") {
        return;
    }
    let pools: Vec<ThreadPool> = FRAME_THREADS
        .iter()
        .map(|&n| {
            ThreadPoolBuilder::new()
                .num_threads(n)
                .build()
                .expect("the pool starts")
        })
        .collect();
    let setup = Setup::new(UNITS, ROCKS, 0x2545_f491);
    let mut states = placements(|copy| {
        let (worlds, mut raw) = in_turn(
            copy,
            || {
                let mut worlds = Vec::new();
                for pool in &pools {
                    let mut world = setup.world();
                    let mut schedule = game_frame::schedule();
                    pool.install(|| {
                        for _ in 0..WARM_FRAMES {
                            schedule.run(&mut world);
                        }
                    });
                    worlds.push((world, schedule));
                }
                worlds
            },
            || setup.raw(),
        );
        for _ in 0..WARM_FRAMES {
            raw.frame();
        }
        let raw_par = [raw.clone(), raw.clone()];
        FrameState { worlds, raw, raw_par }
    });
    // Not timed: every thread count leaves the same world, ids included.
    for state in &mut states {
        let digests: Vec<u64> = state
            .worlds
            .iter_mut()
            .map(|(world, _)| game_frame::digest(world))
            .collect();
        assert!(
            digests.iter().all(|&d| d == digests[0]),
            "game_frame: the world differs between thread counts {FRAME_THREADS:?}: {digests:x?}"
        );
    }
    {
        let frames = WARM_FRAMES as f64;
        let counts = states[0].raw.counts;
        let world = &mut states[0].worlds[0].0;
        let tally = *world.resource::<Tally>().expect("the world has a Tally");
        println!(
            "game_frame: per frame over the first {WARM_FRAMES}: raw {:.0} spawns, {:.0} despawns, {:.0} damage; \
             tabula {:.0} hits, {:.1} deaths, {} bullets alive (raw {})",
            counts.spawns as f64 / frames,
            counts.despawns as f64 / frames,
            counts.damage as f64 / frames,
            tally.hits as f64 / frames,
            tally.deaths as f64 / frames,
            game_frame::bullets(world),
            states[0].raw.bullets(),
        );
    }
    let [p1, p2, p4, p8] = &pools[..] else {
        unreachable!("four thread counts")
    };
    bench_group!(c, "game_frame", &mut states, [
        "raw" => |s: &mut FrameState| s.raw.frame();
        "raw_par_1t" => |s: &mut FrameState| p1.install(|| s.raw_par[0].frame_par());
        "raw_par_2t" => |s: &mut FrameState| p2.install(|| s.raw_par[1].frame_par());
        "tabula_1t" => |s: &mut FrameState| {
            let (world, schedule) = &mut s.worlds[0];
            p1.install(|| schedule.run(world))
        };
        "tabula_2t" => |s: &mut FrameState| {
            let (world, schedule) = &mut s.worlds[1];
            p2.install(|| schedule.run(world))
        };
        "tabula_4t" => |s: &mut FrameState| {
            let (world, schedule) = &mut s.worlds[2];
            p4.install(|| schedule.run(world))
        };
        "tabula_8t" => |s: &mut FrameState| {
            let (world, schedule) = &mut s.worlds[3];
            p8.install(|| schedule.run(world))
        };
    ]);
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_secs(2))
        .measurement_time(Duration::from_secs(3));
    targets = schedule, empty_systems, frame_overhead, sched_scale, busy_systems, game_frame
}
criterion_main!(benches);
