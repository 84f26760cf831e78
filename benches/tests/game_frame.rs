//! The `game_frame` bench's world ends in the same state whatever the thread count, and its
//! systems do what the raw baseline does.

use tabula::schedule::ExecutorKind;
use tabula_benches::game_frame::{self, Setup, Tally};

/// Runs `frames` frames of `setup` in a pool of `threads` threads; the world's digest and
/// tally, and its live entity and bullet counts.
fn play(setup: &Setup, frames: usize, threads: usize, executor: ExecutorKind) -> (u64, Tally, u32, usize) {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap();
    pool.install(|| {
        let mut world = setup.world();
        let mut schedule = game_frame::schedule();
        schedule.set_executor(executor);
        for _ in 0..frames {
            schedule.run(&mut world);
        }
        let tally = *world.resource::<Tally>().unwrap();
        let bullets = game_frame::bullets(&mut world);
        (game_frame::digest(&mut world), tally, world.len(), bullets)
    })
}

#[test]
fn same_final_state_at_every_thread_count() {
    const UNITS: usize = 2_000;
    const FRAMES: usize = 40;
    let setup = Setup::new(UNITS, UNITS, 7);
    let one = play(&setup, FRAMES, 1, ExecutorKind::Parallel);
    let (_, tally, entities, bullets) = one;
    assert!(tally.hits > 0 && tally.deaths > 0, "{tally:?}");
    assert_eq!(
        entities as usize,
        2 * UNITS + bullets,
        "units are replaced one for one"
    );
    for threads in [2, 4, 8] {
        assert_eq!(
            one,
            play(&setup, FRAMES, threads, ExecutorKind::Parallel),
            "1 thread vs {threads}"
        );
    }
    assert_eq!(
        one,
        play(&setup, FRAMES, 2, ExecutorKind::SingleThreaded),
        "parallel vs single-threaded executor"
    );

    // The raw baseline does the same work: as many bullets alive and as many hits and deaths
    // (give or take the frame in which the last commands land).
    let mut raw = setup.raw();
    for _ in 0..FRAMES {
        raw.frame();
    }
    assert_eq!(raw.units(), UNITS);
    let near = |a: u64, b: u64| a.abs_diff(b) * 10 <= a.max(b) + 10;
    assert!(
        near(raw.bullets() as u64, bullets as u64),
        "raw {} bullets, tabula {bullets}",
        raw.bullets()
    );
    assert!(
        near(raw.counts.damage, tally.hits),
        "raw {:?}, tabula {tally:?}",
        raw.counts
    );
    // The baseline with its steer on two threads plays the same game.
    let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    let mut par = setup.raw();
    pool.install(|| {
        for _ in 0..FRAMES {
            par.frame_par();
        }
    });
    assert_eq!(
        (par.counts, par.units(), par.bullets()),
        (raw.counts, raw.units(), raw.bullets())
    );
}

#[test]
fn different_seeds_give_different_worlds() {
    let a = play(&Setup::new(500, 500, 1), 15, 2, ExecutorKind::Parallel);
    let b = play(&Setup::new(500, 500, 2), 15, 2, ExecutorKind::Parallel);
    assert_ne!(a.0, b.0);
}
