//! Traced runs explain the whole run: systems, sync points, `apply_deferred`, the end-of-run
//! application and the batches of `par_for_each`, on a game-like schedule.

use std::hint::black_box;

use tabula_core::{Commands, Entity, With, World};
use tabula_schedule::prelude::*;
use tabula_schedule::{Trace, TraceKind};

struct Position(f32, f32);
struct Velocity(f32, f32);
struct Life(u32);
struct Bullet;
struct Rock;
#[derive(Default)]
struct Frame(u64);
#[derive(Default)]
struct Stats {
    rocks: usize,
    bullets: usize,
    far: usize,
}

/// Rows of the `par_for_each` pass.
const ROCKS: usize = 4_000;

fn setup() -> World {
    let mut world = World::new();
    world.init_resource::<Frame>();
    world.init_resource::<Stats>();
    for i in 0..ROCKS {
        let f = i as f32;
        world.spawn((Position(f, -f), Velocity(f.sin(), f.cos()), Rock));
    }
    world
}

// PreUpdate: a command system (fires bullets) and a small one.
fn fire(mut commands: Commands, frame: Res<Frame>) {
    for i in 0..8 {
        let f = (frame.0 * 8 + i) as f32;
        commands.spawn((Position(0.0, 0.0), Velocity(f.cos(), f.sin()), Life(30), Bullet));
    }
}
fn steer(mut q: Query<&mut Velocity, With<Rock>>, frame: Res<Frame>) {
    let turn = (frame.0 % 7) as f32 * 1e-3;
    q.for_each(|mut v| v.0 += turn);
}

// Update: another command system, ordered before the movement pass (a sync point between),
// and the pass, over a few thousand rows.
fn age(mut commands: Commands, mut q: Query<(Entity, &mut Life)>) {
    q.for_each(|(entity, mut life)| {
        life.0 -= 1;
        if life.0 == 0 {
            commands.despawn(entity);
        }
    });
}
fn movement(mut q: Query<(&mut Position, &Velocity)>) {
    q.par_for_each_mut(|(mut p, v)| {
        let mut x = p.0 + v.0;
        let mut y = p.1 + v.1;
        for _ in 0..16 {
            x = black_box(x.mul_add(0.999, v.1 * 1e-3));
            y = black_box(y.mul_add(0.999, v.0 * 1e-3));
        }
        p.0 = x;
        p.1 = y;
    });
}

// PostUpdate: readers, a command system behind an explicit `apply_deferred`, and the clock.
fn count(
    rocks: Query<&Position, With<Rock>>,
    bullets: Query<&Position, With<Bullet>>,
    mut stats: ResMut<Stats>,
) {
    stats.rocks = rocks.iter().count();
    stats.bullets = bullets.iter().count();
}
fn cull(mut commands: Commands, q: Query<(Entity, &Position), With<Bullet>>, mut stats: ResMut<Stats>) {
    for (entity, p) in q.iter() {
        if p.0.abs() > 1e6 {
            stats.far += 1;
            commands.despawn(entity);
        }
    }
}
fn tick(mut frame: ResMut<Frame>) {
    frame.0 += 1;
}

fn game_schedule() -> Schedule {
    let mut schedule = Schedule::new();
    schedule.add_systems((fire, steer).in_set(CoreSet::PreUpdate));
    schedule.add_systems((age, movement.after(age)).in_set(CoreSet::Update));
    schedule.add_systems((count, (cull, apply_deferred).chain(), tick).in_set(CoreSet::PostUpdate));
    schedule.set_tracing(true);
    schedule
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

#[test]
fn a_traced_frame_is_almost_all_attributed() {
    let mut world = setup();
    let mut schedule = game_schedule();
    // Warm up: the first runs build the schedule and sample costs.
    for _ in 0..10 {
        schedule.run(&mut world);
    }
    let mut attributed = Vec::new();
    for _ in 0..40 {
        schedule.run(&mut world);
        attributed.push(schedule.last_trace().unwrap().attributed());
    }
    let mean = attributed.iter().sum::<f64>() / attributed.len() as f64;
    let median = median(attributed.clone());
    // The median frame, so that a frame preempted between two events on a loaded machine
    // does not decide the test.
    assert!(
        median >= 0.95,
        "median attributed {median:.3}, mean {mean:.3}: {attributed:.3?}"
    );
}

/// The events of one kind.
fn of_kind(trace: &Trace, kind: TraceKind) -> Vec<&tabula_schedule::TraceEvent> {
    trace.events.iter().filter(|e| e.kind == kind).collect()
}

#[test]
fn the_trace_shows_syncs_applications_and_batches() {
    for executor in [ExecutorKind::Parallel, ExecutorKind::SingleThreaded] {
        let mut world = setup();
        let mut schedule = game_schedule();
        schedule.set_executor(executor);
        for _ in 0..5 {
            schedule.run(&mut world);
        }
        let trace = schedule.last_trace().unwrap();

        // Every system once.
        assert_eq!(
            of_kind(trace, TraceKind::System).len(),
            7,
            "{executor:?}: {trace:#?}"
        );
        // Sync points apply what `fire` and `age` recorded: `fire`'s eight spawns at least.
        let syncs = of_kind(trace, TraceKind::Sync);
        assert!(!syncs.is_empty(), "{executor:?}: {trace:#?}");
        assert!(syncs.iter().all(|e| e.name == "sync"));
        assert!(
            syncs.iter().map(|e| e.count).sum::<usize>() >= 8,
            "{executor:?}: {trace:#?}"
        );
        // `cull` records nothing this early (no bullet is far yet): its apply_deferred applies
        // no command.
        let explicit = of_kind(trace, TraceKind::ApplyDeferred);
        assert_eq!(explicit.len(), 1, "{executor:?}: {trace:#?}");
        assert!(explicit[0].name.contains("apply_deferred"));
        assert_eq!(explicit[0].count, 0);
        // The end of the run comes last and closes the run.
        let end = trace.events.last().unwrap();
        assert_eq!(
            (end.kind, end.name.as_str()),
            (TraceKind::ApplyAtEnd, "apply_at_end")
        );
        assert!(end.end_us() <= trace.wall_us + 1e-6);
        // The pass's batches are named after `movement`, lie within it, and cover its rows.
        let pass = of_kind(trace, TraceKind::System)
            .into_iter()
            .find(|e| e.name.ends_with("movement"))
            .unwrap();
        let batches = of_kind(trace, TraceKind::Batch);
        assert!(!batches.is_empty(), "{executor:?}: {trace:#?}");
        assert!(batches.iter().all(|b| b.name == pass.name));
        assert!(
            batches
                .iter()
                .all(|b| b.start_us >= pass.start_us && b.end_us() <= pass.end_us())
        );
        let rows: usize = batches.iter().map(|b| b.count).sum();
        assert_eq!(rows, ROCKS + world.resource::<Stats>().unwrap().bullets);
        // And the JSON says what each event is.
        let json = trace.to_chrome_json();
        for cat in ["system", "sync", "apply_deferred", "apply_at_end", "batch"] {
            assert!(json.contains(&format!("\"cat\":\"{cat}\"")), "{cat}: {json}");
        }
        assert!(
            trace.concurrency() >= 1.0,
            "{executor:?}: {}",
            trace.concurrency()
        );
    }
}
