//! The flagship example's promise: the same seed gives the same game, whatever the threads.

use tabula::schedule::ExecutorKind;
use tabula_examples::asteroids::{CLASSIC_ASTEROIDS, Game, components::GameState};

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
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap();
    pool.install(|| {
        let mut game = Game::with_asteroids(seed, executor, asteroids);
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
    // `--asteroids N`: a crowded field, as the example's default run plays it.
    let (asteroids, frames) = if cfg!(debug_assertions) {
        (3_000, 240)
    } else {
        (20_000, 600)
    };
    let one = play_with(3, frames, 1, ExecutorKind::Parallel, asteroids);
    let many = play_with(3, frames, 4, ExecutorKind::Parallel, asteroids);
    let serial = play_with(3, frames, 1, ExecutorKind::SingleThreaded, asteroids);
    assert!(one.1.len() >= asteroids as usize, "{} entities", one.1.len());
    assert_eq!(one, many, "1 thread vs 4 threads");
    assert_eq!(one, serial, "parallel vs single-threaded executor");
}

#[test]
fn the_asteroid_count_sets_the_first_level() {
    let (_, entities) = play_with(1, 2, 2, ExecutorKind::Parallel, 40);
    // The first frame spawns the ship and the level's asteroids.
    assert_eq!(entities.len(), 41);
}
