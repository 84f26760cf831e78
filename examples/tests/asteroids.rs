//! The flagship example's promise: the same seed gives the same game, whatever the threads.

use tabula::schedule::ExecutorKind;
use tabula_examples::asteroids::components::{GAME_OVER_SECONDS, GameState, Screen, Settings, TITLE_SECONDS};
use tabula_examples::asteroids::view::{Canvas, GifRecorder, Ink};
use tabula_examples::asteroids::{CLASSIC_ASTEROIDS, Game};

fn play(
    seed: u64,
    frames: u32,
    threads: usize,
    executor: ExecutorKind,
) -> (GameState, Vec<tabula_examples::asteroids::EntityState>) {
    play_with(seed, frames, threads, executor, CLASSIC_ASTEROIDS)
}

fn play_with(
    seed: u64,
    frames: u32,
    threads: usize,
    executor: ExecutorKind,
    asteroids: u32,
) -> (GameState, Vec<tabula_examples::asteroids::EntityState>) {
    play_settings(seed, frames, threads, executor, Settings { asteroids, swarm: 0 })
}

fn play_settings(
    seed: u64,
    frames: u32,
    threads: usize,
    executor: ExecutorKind,
    settings: Settings,
) -> (GameState, Vec<tabula_examples::asteroids::EntityState>) {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap();
    pool.install(|| {
        let mut game = Game::with_settings(seed, executor, settings);
        for _ in 0..frames {
            game.step();
        }
        (game.state(), game.snapshot())
    })
}

#[test]
fn same_seed_same_final_state_with_one_thread_and_all_threads() {
    let frames = if cfg!(debug_assertions) { 900 } else { 3600 };
    for seed in [1, 7] {
        let one = play(seed, frames, 1, ExecutorKind::Parallel);
        let many = play(seed, frames, 4, ExecutorKind::Parallel);
        let serial = play(seed, frames, 1, ExecutorKind::SingleThreaded);
        assert!(
            one.0.hits > 0,
            "the pilot hits something in {frames} frames: {:?}",
            one.0
        );
        assert!(!one.1.is_empty());
        assert_eq!(one, many, "seed {seed}: 1 thread vs 4 threads");
        assert_eq!(one, serial, "seed {seed}: parallel vs single-threaded executor");
    }
}

#[test]
fn different_seeds_give_different_games() {
    let a = play(1, 600, 2, ExecutorKind::Parallel);
    let b = play(2, 600, 2, ExecutorKind::Parallel);
    assert_ne!(a.1, b.1);
}

#[test]
fn a_big_game_ends_the_same_with_one_thread_and_all_threads() {
    // `--swarm N`: the classic game in a field of dust, as the example's default run plays
    // it; and `--asteroids N`, a crowded field.
    let (swarm, asteroids, frames) = if cfg!(debug_assertions) {
        (3_000, 300, 240)
    } else {
        (20_000, 3_000, 600)
    };
    for settings in [
        Settings {
            asteroids: CLASSIC_ASTEROIDS,
            swarm,
        },
        Settings { asteroids, swarm: 0 },
    ] {
        let one = play_settings(3, frames, 1, ExecutorKind::Parallel, settings);
        let many = play_settings(3, frames, 4, ExecutorKind::Parallel, settings);
        let serial = play_settings(3, frames, 1, ExecutorKind::SingleThreaded, settings);
        let at_least = (settings.asteroids + settings.swarm) as usize;
        assert!(one.1.len() >= at_least, "{} entities", one.1.len());
        assert_eq!(one, many, "{settings:?}: 1 thread vs 4 threads");
        assert_eq!(one, serial, "{settings:?}: parallel vs single-threaded executor");
    }
}

/// Plays `frames` frames and returns the longest run of frames in which a life was waiting
/// (no ship, lives left, game on), and the state at the end.
fn longest_wait_for_a_ship(seed: u64, settings: Settings, frames: u32) -> (u32, GameState) {
    let mut game = Game::with_settings(seed, ExecutorKind::SingleThreaded, settings);
    let (mut longest, mut current) = (0, 0);
    for _ in 0..frames {
        game.step();
        let (ships, _, _) = game.census();
        if ships == 0 && game.screen() == Screen::Playing {
            current += 1;
            longest = longest.max(current);
        } else {
            current = 0;
        }
    }
    (longest, game.state())
}

#[test]
fn a_lost_ship_comes_back_and_the_pilot_plays_on() {
    // A wreck drifts for 5 s (its death throes); then the next ship appears at a safe spot
    // or, after 3 s more, at the safest one: never more than about 8 s without a ship.
    let limit = 60 * 8 + 2;
    let mut lost = 0;
    for seed in 1..=4 {
        let classic = Settings {
            asteroids: CLASSIC_ASTEROIDS,
            swarm: 0,
        };
        let (wait, state) = longest_wait_for_a_ship(seed, classic, 7200);
        assert!(
            state.level >= 2,
            "seed {seed}: the pilot clears levels: {state:?}"
        );
        assert!(
            wait <= limit,
            "seed {seed}: {wait} frames without a ship: {state:?}"
        );
        lost += 3 - state.lives;
    }
    assert!(lost > 0, "some ship is lost in four 2-minute games");
    // A crowded field (the classic game stopped here: the centre was never clear again).
    let (wait, state) = longest_wait_for_a_ship(
        1,
        Settings {
            asteroids: 40,
            swarm: 0,
        },
        3600,
    );
    assert!(state.lives < 3, "40 asteroids cost the pilot a ship: {state:?}");
    assert!(
        wait <= limit,
        "{wait} frames without a ship among 40 asteroids: {state:?}"
    );
}

#[test]
fn a_frame_can_be_looked_at_as_text_and_as_a_gif() {
    let mut game = Game::with_settings(
        2,
        ExecutorKind::SingleThreaded,
        Settings {
            asteroids: CLASSIC_ASTEROIDS,
            swarm: 200,
        },
    );
    while game.screen() != Screen::Playing {
        game.step();
    }
    game.step();
    let mut canvas = Canvas::new(100, 37);
    canvas.paint(&mut game.world);
    let text = canvas.to_text();
    assert!(text.contains('A'), "the ship:\n{text}");
    assert!(text.contains('#'), "asteroids:\n{text}");
    assert!(text.contains('.'), "dust:\n{text}");
    // The ship starts at the centre of the field.
    assert_eq!(canvas.get(50, 18), Ink::Ship, "\n{text}");

    let mut gif = GifRecorder::new(Vec::new(), 60, 45, 5).unwrap();
    let mut small = Canvas::new(60, 45);
    for _ in 0..4 {
        small.paint(&mut game.world);
        gif.record(&small).unwrap();
        game.step();
    }
    let bytes = gif.finish().unwrap();
    assert_eq!(&bytes[..6], b"GIF89a");
    let mut decoder = gif::DecodeOptions::new().read_info(&bytes[..]).unwrap();
    let mut frames = 0;
    while let Some(frame) = decoder.read_next_frame().unwrap() {
        assert_eq!((frame.width, frame.height), (60, 45));
        frames += 1;
    }
    assert_eq!(frames, 4);
}

#[test]
fn the_asteroid_count_sets_the_first_level() {
    let mut game = Game::with_asteroids(1, ExecutorKind::Parallel, 40);
    let title_frames = (TITLE_SECONDS * 60.0).round() as u32;
    for _ in 0..title_frames {
        game.step();
        assert_eq!(game.screen(), Screen::Title);
    }
    assert_eq!(game.census(), (0, 0, 0), "nothing but dust before a game");
    game.step(); // the title's clock runs out: the pilot presses start
    game.step(); // the game starts: the ship and the level's asteroids appear
    assert_eq!(game.screen(), Screen::Playing);
    assert_eq!(game.census(), (1, 40, 0));
}

#[test]
fn the_screens_go_title_playing_game_over_and_round_again() {
    // A crowded field costs the pilot all three ships quickly.
    let mut game = Game::with_asteroids(5, ExecutorKind::SingleThreaded, 60);
    let mut screens = vec![(game.screen(), 0)];
    for frame in 1..=60 * 120 {
        game.step();
        if screens.last().map(|s| s.0) != Some(game.screen()) {
            screens.push((game.screen(), frame));
        }
        if screens.len() == 5 {
            break;
        }
    }
    use Screen::*;
    let order: Vec<Screen> = screens.iter().map(|s| s.0).collect();
    assert_eq!(
        order,
        [Title, Playing, GameOver, Title, Playing],
        "{:?}",
        game.state()
    );
    let state = game.state();
    assert_eq!(
        (state.games, state.lives, state.level),
        (2, 3, 1),
        "a new game: {state:?}"
    );
    // The game-over screen shows for GAME_OVER_SECONDS, the title for TITLE_SECONDS (a
    // request made in one frame applies in the next: one frame more).
    let shown = |i: usize| screens[i + 1].1 - screens[i].1;
    assert_eq!(
        shown(2),
        (GAME_OVER_SECONDS * 60.0).round() as u32 + 1,
        "{screens:?}"
    );
    assert_eq!(shown(3), (TITLE_SECONDS * 60.0).round() as u32 + 1, "{screens:?}");
}

#[test]
fn the_ship_is_one_entity_that_goes_playing_destroyed_respawning_and_back() {
    use tabula::prelude::*;
    use tabula_examples::asteroids::components::{Gun, Spaceship};

    // A crowded field: ships are lost early.
    let mut game = Game::with_asteroids(1, ExecutorKind::SingleThreaded, 40);
    let mut ship: Option<Entity> = None;
    let mut states: Vec<String> = Vec::new();
    for _ in 0..60 * 60 {
        game.step();
        if game.state().games > 1 {
            break; // the next game has a ship of its own
        }
        if game.screen() != Screen::Playing {
            continue;
        }
        let mut q = game
            .world
            .query_filtered::<(Entity, &EntityStateMachine, Option<&Gun>), With<Spaceship>>();
        let ships: Vec<_> = q.iter(&game.world).collect();
        assert!(ships.len() <= 1, "one ship at most: {}", ships.len());
        let Some(&(entity, machine, gun)) = ships.first() else {
            continue;
        };
        assert_eq!(
            *ship.get_or_insert(entity),
            entity,
            "the same entity all game long"
        );
        let current = machine.current().expect("in a state").to_owned();
        assert_eq!(
            gun.is_some(),
            current == "playing",
            "{current}: a gun only while playing"
        );
        if states.last() != Some(&current) {
            states.push(current);
        }
    }
    assert!(
        states.len() >= 4,
        "a crash and a comeback in a minute among 40 asteroids: {states:?}"
    );
    for pair in states.windows(2) {
        let expected = match pair[0].as_str() {
            "playing" => "destroyed",
            "destroyed" => "respawning",
            _ => "playing",
        };
        assert_eq!(pair[1], expected, "{states:?}");
    }
    assert_eq!(states[0], "playing");
}

/// The ship's body comes from the data file (`src/asteroids/templates.json`): the marker and
/// its motion at rest, as the file gives them, under the ship template the game spawns.
#[test]
fn the_ship_is_built_from_the_template_file() {
    use tabula::World;
    use tabula_examples::asteroids::components::{Motion, Spaceship};
    use tabula_examples::asteroids::systems::{
        SHIP, SHIP_BODY, data_templates, register_template_components, ship_template,
    };

    let mut world = World::new();
    register_template_components(&mut world);
    let templates = data_templates(&world);
    let body = templates.iter().find(|t| t.name() == SHIP_BODY).unwrap();
    let mut names: Vec<_> = body.components().collect();
    names.sort_unstable();
    assert_eq!(names.len(), 2, "{names:?}");
    let ship = ship_template(body);
    assert_eq!(ship.name(), SHIP);
    assert_eq!(ship.bases().collect::<Vec<_>>(), [SHIP_BODY]);
    let e = world.spawn_template(&ship);
    assert!(world.has::<Spaceship>(e));
    let file: serde_json::Value =
        serde_json::from_str(tabula_examples::asteroids::systems::TEMPLATES).unwrap();
    let damping = file[SHIP_BODY]["components"]["Motion"]["damping"]
        .as_f64()
        .unwrap() as f32;
    assert_eq!(world.get::<Motion>(e).unwrap().damping, damping);
    assert_eq!(world.get::<Motion>(e).unwrap().velocity, (0.0, 0.0));
}
