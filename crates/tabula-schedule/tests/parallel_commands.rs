//! Command-recording systems run side by side, and the world they leave — component values,
//! entity ids and generations, and the order queries visit rows in — is the same with one
//! thread or many.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use tabula_core::{Commands, Entity, World};
use tabula_schedule::prelude::*;

/// A component family: `C<0>` .. `C<3>` are four distinct types.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct C<const I: usize>(u32);

/// An entity another one points at, as game code stores targets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Target(Entity);

/// Spawns from some rows of `C<I>`, despawns others, and inserts `C<J>` on a third kind; the
/// spawned entities point at the row they came from, and a second command targets the new id
/// at once.
fn churn<const I: usize, const J: usize>(mut commands: Commands, q: Query<(Entity, &C<I>)>) {
    for (entity, c) in q.iter() {
        match c.0 % 9 {
            0 => {
                let child = commands.spawn((C::<J>(c.0 / 2 + 1), Target(entity))).id();
                commands.entity(child).insert((C::<I>(c.0 + 3),));
            }
            4 => commands.entity(entity).despawn(),
            7 => {
                commands.entity(entity).insert((C::<J>(c.0 + 1),));
            }
            _ => {}
        }
    }
}

/// Rewrites every `C<I>` (no commands).
fn stir<const I: usize>(mut q: Query<&mut C<I>>) {
    q.for_each(|mut c| c.0 = (c.0.wrapping_mul(7) + 5) % 1000);
}

/// Copies `C<J>` into `C<I>` where an entity has both.
fn copy<const I: usize, const J: usize>(mut q: Query<(&mut C<I>, &C<J>)>) {
    q.for_each(|(mut a, b)| a.0 = (a.0 + b.0) % 1000);
}

/// Despawns every entity whose `C<I>` is a multiple of 10: two of these racing on one entity
/// make one despawn fail, which must be reported, not lost.
fn cull<const I: usize>(mut commands: Commands, q: Query<(Entity, &C<I>)>) {
    for (entity, c) in q.iter() {
        if c.0 % 10 == 0 {
            commands.entity(entity).despawn();
        }
    }
}

type Palette = fn(&mut Schedule, bool);

/// The systems a random schedule is drawn from; the flag asks for `without_auto_sync`.
const PALETTE: [Palette; 14] = [
    |s, o| add(s, par_churn::<0, 2>, o),
    |s, o| add(s, par_churn::<2, 1>, o),
    |s, o| add(s, churn::<0, 1>, o),
    |s, o| add(s, churn::<1, 2>, o),
    |s, o| add(s, churn::<2, 3>, o),
    |s, o| add(s, churn::<3, 0>, o),
    |s, _| add(s, stir::<0>, false),
    |s, _| add(s, stir::<2>, false),
    |s, _| add(s, copy::<1, 0>, false),
    |s, _| add(s, copy::<3, 2>, false),
    |s, o| add(s, cull::<1>, o),
    |s, o| add(s, cull::<1>, o),
    |s, o| add(s, cull::<3>, o),
    |s, _| add(s, apply_deferred, false),
];

fn add<M>(schedule: &mut Schedule, system: impl IntoSystemConfigs<M>, no_auto_sync: bool) {
    if no_auto_sync {
        schedule.add_systems(system.without_auto_sync());
    } else {
        schedule.add_systems(system);
    }
}

/// A small deterministic generator (SplitMix64).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Everything observable about a world, in the order a query visits its rows.
type Snapshot = Vec<(
    u64,
    Option<u32>,
    Option<u32>,
    Option<u32>,
    Option<u32>,
    Option<u64>,
)>;

/// An entity's index and generation: what two worlds built alike share (their tags differ).
fn id(e: Entity) -> u64 {
    u64::from(e.index()) | (u64::from(e.generation()) << 32)
}

fn snapshot(world: &mut World) -> Snapshot {
    let mut q = world.query::<(
        Entity,
        Option<&C<0>>,
        Option<&C<1>>,
        Option<&C<2>>,
        Option<&C<3>>,
        Option<&Target>,
    )>();
    q.iter(world)
        .map(|(e, a, b, c, d, t)| {
            (
                id(e),
                a.map(|c| c.0),
                b.map(|c| c.0),
                c.map(|c| c.0),
                d.map(|c| c.0),
                t.map(|t| id(t.0)),
            )
        })
        .collect()
}

/// Builds schedule number `seed` and runs it `frames` times on a fresh world inside a rayon
/// pool of `threads` threads; returns the world's snapshot and every skipped command.
fn run(seed: u64, threads: usize, frames: usize) -> (Snapshot, Vec<String>) {
    let mut rng = Rng(seed);
    let mut schedule = Schedule::new();
    schedule.set_auto_sync(rng.below(4) != 0);
    schedule.set_command_error_policy(tabula_schedule::CommandErrorPolicy::Ignore);
    let count = 3 + rng.below(8);
    for _ in 0..count {
        let pick = rng.below(PALETTE.len());
        PALETTE[pick](&mut schedule, rng.below(3) == 0);
    }
    // One tag for every run, so that the skipped commands' messages (which name entities
    // with their world's tag) compare equal.
    let mut world = World::with_tag(1);
    for i in 0..800u32 {
        match i % 4 {
            0 => world.spawn((C::<0>(i),)),
            1 => world.spawn((C::<1>(i), C::<0>(i + 1))),
            2 => world.spawn((C::<2>(i),)),
            _ => world.spawn((C::<3>(i), C::<2>(i * 3))),
        };
    }
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap();
    let mut errors = Vec::new();
    pool.install(|| {
        for _ in 0..frames {
            schedule.run(&mut world);
            errors.extend(schedule.command_errors().iter().map(ToString::to_string));
        }
    });
    (snapshot(&mut world), errors)
}

#[test]
fn random_command_schedules_give_the_same_world_with_one_thread_and_four() {
    // Under the sanitizers (`.ci/run` sets `--cfg tabula_sanitizer`), a quarter of the
    // schedules: they look for memory and thread errors, which every kind of command meets
    // in a few.
    let seeds: u64 = if cfg!(tabula_sanitizer) { 10 } else { 40 };
    let mut churned = 0;
    for seed in 0..seeds {
        let (one, one_errors) = run(seed, 1, 6);
        let (four, four_errors) = run(seed, 4, 6);
        assert!(one == four, "schedule {seed}: one thread and four threads differ");
        assert_eq!(
            one_errors, four_errors,
            "schedule {seed}: the skipped commands differ"
        );
        let (again, _) = run(seed, 4, 6);
        assert!(four == again, "schedule {seed}: two four-thread runs differ");
        churned += u64::from(one.len() != 800);
    }
    assert!(
        churned > seeds / 2,
        "most schedules spawn or despawn: {churned} of {seeds}"
    );
}

/// The same as [`churn`], timed: sleeps so that two such systems, if run at once, overlap.
fn busy_spawner<const I: usize>(mut commands: Commands, spans: Res<Spans>) {
    let start = Instant::now();
    commands.spawn((C::<I>(1),));
    std::thread::sleep(Duration::from_millis(4));
    spans.0.lock().unwrap().push((I, start, Instant::now()));
}

#[derive(Default)]
struct Spans(Mutex<Vec<(usize, Instant, Instant)>>);

#[test]
fn two_command_systems_with_disjoint_data_overlap_in_time() {
    let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    let mut world = World::new();
    world.init_resource::<Spans>();
    let mut schedule = Schedule::new();
    schedule.add_systems((busy_spawner::<0>, busy_spawner::<1>));
    let runs = 20;
    let mut overlapped = 0;
    pool.install(|| {
        for _ in 0..runs {
            schedule.run(&mut world);
            let spans = std::mem::take(&mut *world.resource::<Spans>().unwrap().0.lock().unwrap());
            assert_eq!(spans.len(), 2);
            let (a, b) = (&spans[0], &spans[1]);
            overlapped += usize::from(a.1 < b.2 && b.1 < a.2);
        }
    });
    assert!(overlapped * 2 > runs, "overlapped in {overlapped} of {runs} runs");
    // Both systems spawned every run, and the ids are those of a one-thread run.
    assert_eq!(world.query::<&C<0>>().iter(&world).count(), runs);
    assert_eq!(world.query::<&C<1>>().iter(&world).count(), runs);
}

#[test]
fn a_double_despawn_from_two_parallel_systems_is_reported_once() {
    let mut world = World::new();
    let victim = world.spawn((C::<1>(10),));
    let bystander = world.spawn((C::<1>(11),));
    let mut schedule = Schedule::new();
    schedule.add_systems((cull::<1>, cull::<1>));
    schedule.run(&mut world);
    assert!(!world.contains(victim));
    assert!(world.contains(bystander));
    let errors = schedule.command_errors();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(errors[0].error().command(), "despawn");
    assert_eq!(errors[0].error().entity(), Some(victim));
}

#[test]
fn spawn_then_despawn_in_one_system_leaves_nothing_and_reports_nothing() {
    fn flash(mut commands: Commands) {
        let e = commands.spawn((C::<0>(1),)).id();
        commands.entity(e).despawn();
    }
    let mut world = World::new();
    let mut schedule = Schedule::new();
    schedule.add_systems(flash);
    schedule.run(&mut world);
    assert_eq!(world.len(), 0);
    assert!(schedule.command_errors().is_empty());
}

#[test]
fn commands_to_a_dead_entity_are_skipped_and_named() {
    fn poke(mut commands: Commands, target: Res<Dead>) {
        commands.entity(target.0).insert((C::<2>(1),));
    }
    struct Dead(Entity);
    let mut world = World::new();
    let dead = world.spawn((C::<0>(1),));
    world.despawn(dead).unwrap();
    world.insert_resource(Dead(dead));
    let mut schedule = Schedule::new();
    schedule.add_systems(poke);
    schedule.run(&mut world);
    let errors = schedule.command_errors();
    assert_eq!(errors.len(), 1);
    let message = errors[0].to_string();
    assert!(
        message.contains("poke") && message.contains(&format!("{dead:?}")),
        "{message}"
    );
    assert_eq!(world.len(), 0, "nothing was created for the dead entity");
}

/// From a parallel pass: despawns some rows, spawns from others (pointing at their row),
/// and inserts on a third kind, through `ParallelCommands`.
fn par_churn<const I: usize, const J: usize>(mut q: Query<(Entity, &mut C<I>)>, commands: ParallelCommands) {
    q.par_for_each_mut(|(entity, mut c)| {
        c.0 = (c.0 * 5 + 3) % 1000;
        match c.0 % 6 {
            0 => commands.command_scope(|commands| commands.despawn(entity)),
            1 => commands.command_scope(|commands| {
                commands.spawn((C::<I>(c.0 / 3), Target(entity)));
                commands.spawn((C::<J>(c.0),));
            }),
            2 => commands.command_scope(|commands| commands.insert(entity, (C::<J>(c.0 + 1),))),
            _ => {}
        }
    });
}

#[test]
fn parallel_commands_apply_in_row_order_with_any_thread_count() {
    let run = |threads: usize| {
        let mut world = World::new();
        world
            .spawn_batch((0..3000u32).map(|i| (C::<0>(i),)))
            .for_each(drop);
        let mut schedule = Schedule::new();
        schedule.add_systems((par_churn::<0, 1>, churn::<1, 3>));
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        pool.install(|| {
            for _ in 0..8 {
                schedule.run(&mut world);
            }
        });
        snapshot(&mut world)
    };
    let one = run(1);
    assert!(one.len() > 3000, "the pass spawned: {}", one.len());
    for threads in [2, 4, 8] {
        assert!(run(threads) == one, "{threads} threads differ from one");
    }
}

#[test]
fn dependencies_name_the_conflict_the_constraint_and_the_sync_point() {
    fn spawner(mut commands: Commands, q: Query<&C<0>>) {
        for c in q.iter() {
            commands.spawn((C::<1>(c.0),));
        }
    }
    fn writer(mut q: Query<&mut C<0>>) {
        q.for_each(|mut c| c.0 += 1);
    }
    fn reader(q: Query<&C<1>>) {
        let _ = q.iter().count();
    }
    let mut world = World::new();
    let mut schedule = Schedule::new();
    // spawner reads C<0>, writer writes it: a data conflict orders spawner first, and a sync
    // point applies spawner's commands before writer runs. reader is ordered explicitly.
    schedule.add_systems((spawner, writer, reader.after(writer)));
    let edges = schedule.dependencies(&mut world).unwrap();
    let short = |name: &str| name.rsplit("::").next().unwrap().to_string();
    let described: Vec<(String, String, String)> = edges
        .iter()
        .map(|d| (short(&d.before), short(&d.after), d.reason.clone()))
        .collect();
    let sync = schedule
        .order(&mut world)
        .unwrap()
        .into_iter()
        .find(|name| name.starts_with("sync"))
        .expect("a sync point after spawner");
    assert!(
        described
            .iter()
            .any(|(b, a, why)| b == "spawner" && *a == sync && why.contains("commands of `spawner`")),
        "{described:?}"
    );
    assert!(
        described
            .iter()
            .any(|(b, a, why)| *b == sync && a == "writer" && why.contains("spawner")),
        "{described:?}"
    );
    assert!(
        described
            .iter()
            .any(|(b, a, why)| b == "writer" && a == "reader" && why.contains("before")),
        "{described:?}"
    );
    // The sync point is also named in the DOT graph, with the reasons as labels.
    let dot = schedule.graph_dot(&mut world).unwrap();
    assert!(
        dot.contains("shape=diamond") && dot.contains("are applied here"),
        "{dot}"
    );
}

#[test]
fn lanes_follow_the_schedule_to_a_new_world_and_through_clear() {
    let run = |world: &mut World, schedule: &mut Schedule| {
        for _ in 0..3 {
            schedule.run(world);
        }
        snapshot(world)
    };
    let mut schedule = Schedule::new();
    schedule.add_systems((churn::<0, 1>, churn::<1, 2>, cull::<1>));
    let fresh = || {
        let mut world = World::new();
        world
            .spawn_batch((0..300u32).map(|i| (C::<0>(i), C::<1>(i * 7 % 300))))
            .for_each(drop);
        world
    };
    let mut first = fresh();
    let a = run(&mut first, &mut schedule);
    // The same schedule on another world registers lanes there and gives the same result.
    let mut second = fresh();
    let b = run(&mut second, &mut schedule);
    assert!(a == b, "a schedule moved to a new world gives the same world");
    // Cleared and refilled, the world keeps its lanes; ids come from the freed slots.
    second.clear();
    second
        .spawn_batch((0..300u32).map(|i| (C::<0>(i), C::<1>(i * 7 % 300))))
        .for_each(drop);
    let c = run(&mut second, &mut schedule);
    assert_eq!(
        c.len(),
        a.len(),
        "the same number of entities after the same frames"
    );
    let mut seen = std::collections::HashSet::new();
    assert!(
        c.iter().all(|row| seen.insert(row.0)),
        "ids are distinct after a clear"
    );
}
