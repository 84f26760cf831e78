//! Asteroids, headless: the flagship example.
//!
//! ```text
//! cargo run --release -p tabula-examples --example asteroids -- [--seed N] [--frames N] [--threads N] [--asteroids N] [--dot FILE] [--trace FILE]
//! ```
//!
//! `--asteroids N` is how many asteroids the first level starts with (each later level
//! starts with one more); 3 is the classic game. The default, 50,000, gives the systems
//! enough rows each to be worth running side by side (the default 3600 frames take about
//! 1.5 s in release on a 2-core machine); the field is then so crowded that the ship is soon
//! destroyed and the game is mostly asteroids drifting.
//!
//! Prints one line per simulated second, then frame-time statistics, entity totals, what
//! the traces say (how many threads worked at once on average, and how much of each frame
//! the trace explains: [`Trace::attributed`](tabula::schedule::Trace::attributed)). Every
//! frame is traced; `--trace FILE` writes the last frame's trace as Chrome trace-event JSON,
//! to open in Perfetto (ui.perfetto.dev, "Open trace file") or `chrome://tracing`. The same
//! seed gives the same game whatever the thread count.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::time::Instant;

use tabula::schedule::ExecutorKind;
use tabula_examples::asteroids::Game;

/// Asteroids the first level starts with unless `--asteroids` says otherwise.
const DEFAULT_ASTEROIDS: u32 = 50_000;
use tabula_examples::cli::{self, Args};

const USAGE: &str =
    "usage: asteroids [--seed N] [--frames N] [--threads N] [--asteroids N] [--dot FILE] [--trace FILE]";

struct Options {
    seed: u64,
    frames: u32,
    asteroids: u32,
    dot: Option<String>,
    trace: Option<String>,
}

fn main() {
    let args = Args::parse(USAGE);
    let options = Options {
        seed: args.get_or("--seed", 1),
        frames: args.get_or("--frames", 3600),
        asteroids: args.get_or("--asteroids", DEFAULT_ASTEROIDS),
        dot: args.get("--dot"),
        trace: args.get("--trace"),
    };
    cli::with_threads(args.get("--threads"), |threads| play(&options, threads));
}

fn play(options: &Options, threads: usize) {
    let mut game = Game::with_asteroids(options.seed, ExecutorKind::Parallel, options.asteroids);
    if let Some(path) = &options.dot {
        let dot = game
            .schedule
            .graph_dot(&mut game.world)
            .expect("the schedule builds");
        std::fs::write(path, dot).unwrap_or_else(|e| panic!("cannot write {path}: {e}"));
        println!("schedule graph written to {path}");
    }
    game.schedule.set_tracing(true);
    println!(
        "asteroids: seed {}, {} frames, {} threads, {} asteroids at the start",
        options.seed, options.frames, threads, options.asteroids
    );
    let mut frame_times = Vec::with_capacity(options.frames as usize);
    let mut concurrency = 0.0;
    let mut attributed = Vec::with_capacity(options.frames as usize);
    let mut overlapping_frames = 0_u32;
    let mut peak_entities = 0;
    for frame in 1..=options.frames {
        let start = Instant::now();
        game.step();
        frame_times.push(start.elapsed().as_secs_f64() * 1e6);
        let trace = game.schedule.last_trace().expect("every frame is traced");
        concurrency += trace.concurrency();
        overlapping_frames += u32::from(trace.overlap().overlapping_systems > 0);
        attributed.push(trace.attributed());
        peak_entities = peak_entities.max(game.world.len());
        if frame % 60 == 0 {
            let state = game.state();
            let (ships, asteroids, bullets) = game.census();
            println!(
                "t={:>4}s  level {:>2}  lives {}  hits {:>4}  entities {:>3} (ships {ships}, asteroids {asteroids:>2}, bullets {bullets:>2}){}",
                frame / 60,
                state.level,
                state.lives,
                state.hits,
                game.world.len(),
                if state.playing { "" } else { "  GAME OVER" },
            );
        }
    }
    if let Some(path) = &options.trace {
        let trace = game.schedule.last_trace().expect("every frame is traced");
        std::fs::write(path, trace.to_chrome_json()).unwrap_or_else(|e| panic!("cannot write {path}: {e}"));
        println!("last frame's trace written to {path} (open it in ui.perfetto.dev)");
    }
    frame_times.sort_by(f64::total_cmp);
    let mean = frame_times.iter().sum::<f64>() / frame_times.len().max(1) as f64;
    let percentile =
        |q: f64| frame_times[((frame_times.len() as f64 * q) as usize).min(frame_times.len() - 1)];
    let (median, p99, max) = (
        percentile(0.5),
        percentile(0.99),
        frame_times[frame_times.len() - 1],
    );
    let state = game.state();
    let mut digest = DefaultHasher::new();
    game.snapshot().hash(&mut digest);
    println!("---");
    println!(
        "final: level {}, lives {}, hits {}, state digest {:016x} (the same with any --threads: compare with --threads 1)",
        state.level,
        state.lives,
        state.hits,
        digest.finish()
    );
    println!(
        "frame time: mean {mean:.1} us, median {median:.1} us, p99 {p99:.1} us, max {max:.1} us (the first frame builds the schedule)"
    );
    println!(
        "entities: {} live at the end, {} at the peak",
        game.world.len(),
        peak_entities
    );
    println!(
        "threads at work at once (systems and par_for_each batches), on average while any worked: {:.2} ({} systems)",
        concurrency / f64::from(options.frames.max(1)),
        game.schedule.len()
    );
    println!(
        "frames in which two systems ran at the same time: {overlapping_frames} of {}",
        options.frames
    );
    // The first frame builds the schedule and samples costs: left out.
    let steady = &mut attributed[1.min(frame_times.len() - 1)..];
    let mean_attributed = steady.iter().sum::<f64>() / steady.len() as f64;
    steady.sort_by(f64::total_cmp);
    println!(
        "frame time the trace explains (systems, syncs, command application, batches): mean {:.1}%, median {:.1}%, worst {:.1}%",
        100.0 * mean_attributed,
        100.0 * steady[steady.len() / 2],
        100.0 * steady[0]
    );
}
