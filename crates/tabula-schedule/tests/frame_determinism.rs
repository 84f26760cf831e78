//! A frame loop with states, fixed steps of varying count, and command-recording systems in
//! several schedules gives the same world — entity ids included — with 1 thread and with 4.

use std::time::Duration;

use tabula_core::{Commands, Entity, World};
use tabula_schedule::Time;
use tabula_schedule::prelude::*;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
enum Game {
    #[default]
    Menu,
    Playing,
    Over,
}
impl States for Game {}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Pos(i64);
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Vel(i64);
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Life(u32);
/// Which system spawned the entity, and its running count there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Born(u32, u32);
struct Spark;

fn setup(mut commands: Commands) {
    for i in 0..20 {
        commands.spawn((Pos(i), Vel(1), Life(1000), Born(0, i as u32)));
    }
}

fn wave(mut commands: Commands, mut count: Local<u32>) {
    for i in 0..50 {
        *count += 1;
        commands.spawn((Pos(i), Vel(i % 5 - 2), Life(5 + (i as u32) % 7), Born(1, *count)));
    }
}

fn spawner<const S: u32, const N: i64>(mut commands: Commands, mut count: Local<u32>) {
    for i in 0..N {
        *count += 1;
        commands.spawn((Pos(i * 3), Vel(1 - i), Life(3 + *count % 4), Born(S, *count)));
    }
}

fn movement(mut q: Query<(&mut Pos, &Vel)>) {
    q.for_each(|(mut p, v)| p.0 += v.0);
}

fn reaper(mut commands: Commands, mut q: Query<(Entity, &mut Life)>) {
    q.for_each(|(entity, mut life)| {
        life.0 -= 1;
        if life.0 == 0 {
            commands.despawn(entity);
        }
    });
}

fn sparks(q: Query<(Entity, &Pos)>, commands: ParallelCommands) {
    q.par_for_each(|(entity, pos)| {
        if pos.0 % 11 == 0 {
            commands.command_scope(|commands| {
                commands.spawn((Spark, Born(9, entity.index())));
            });
        }
    });
}

fn clear_sparks(mut commands: Commands, q: Query<Entity, tabula_core::With<Spark>>) {
    q.iter().for_each(|entity| commands.despawn(entity));
}

fn clear_field(mut commands: Commands, q: Query<Entity, tabula_core::With<Life>>) {
    q.iter().for_each(|entity| commands.despawn(entity));
}

/// Moves through the states on a timetable of game time.
fn director(time: Res<Time>, state: Res<State<Game>>, mut next: ResMut<NextState<Game>>) {
    let t = time.elapsed().as_millis() % 3000;
    let wanted = match t {
        0..500 => Game::Menu,
        500..2500 => Game::Playing,
        _ => Game::Over,
    };
    if **state != wanted {
        next.set(wanted);
    }
}

type Snapshot = (Vec<(Entity, Pos, Life, Born)>, Vec<(Entity, Born)>, Game, u64);

fn snapshot(world: &mut World) -> Snapshot {
    let mut q = world.query::<(Entity, &Pos, &Life, &Born)>();
    let field = q.iter(world).map(|(e, p, l, b)| (e, *p, *l, *b)).collect();
    let mut q = world.query::<(Entity, &Born, &Spark)>();
    let sparks = q.iter(world).map(|(e, b, _)| (e, *b)).collect();
    let state = **world.resource::<State<Game>>().unwrap();
    (
        field,
        sparks,
        state,
        world.resource::<Time>().unwrap().fixed_steps(),
    )
}

fn run(threads: usize) -> (Vec<Snapshot>, usize) {
    // One tag for both runs, so that their entities compare equal.
    let mut world = World::with_tag(7);
    let mut time = Time::default();
    time.set_fixed_step(Duration::from_millis(20));
    world.insert_resource(time);
    world
        .init_state::<Game>()
        .add_systems(Startup, setup)
        .add_systems(OnEnter(Game::Playing), wave)
        .add_systems(OnExit(Game::Playing), clear_field)
        .add_systems(
            FixedUpdate,
            (movement, spawner::<2, 4>, spawner::<3, 3>, reaper).run_if(in_state(Game::Playing)),
        )
        .add_systems(PreUpdate, director)
        .add_systems(Update, (sparks, spawner::<4, 2>.run_if(in_state(Game::Over))))
        .add_systems(First, clear_sparks);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap();
    let mut seen = Vec::new();
    let mut seed = 0x2545_f491_u64;
    pool.install(|| {
        for frame in 0..400 {
            seed = seed
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            let dt = Duration::from_millis(5 + (seed >> 33) % 60); // 0 to 3 fixed steps
            world.run_frame(dt);
            if frame % 10 == 0 {
                seen.push(snapshot(&mut world));
            }
        }
    });
    seen.push(snapshot(&mut world));
    (seen, world.entity_lane_count())
}

#[test]
fn a_frame_loop_with_states_fixed_steps_and_commands_is_the_same_with_1_and_4_threads() {
    let (one, lanes_one) = run(1);
    let (four, lanes_four) = run(4);
    // The run went through every state, spawned, and killed.
    let states: std::collections::HashSet<Game> = one.iter().map(|s| s.2).collect();
    assert_eq!(states.len(), 3, "every state visited");
    assert!(one.iter().any(|s| s.0.len() > 50), "the field filled");
    assert!(one.iter().any(|s| !s.1.is_empty()), "sparks were made");
    assert!(one.last().unwrap().3 > 300, "fixed steps ran");
    for (frame, (a, b)) in one.iter().zip(&four).enumerate() {
        assert_eq!(a, b, "snapshot {frame} differs between 1 and 4 threads");
    }
    assert_eq!(lanes_one, lanes_four);
}
