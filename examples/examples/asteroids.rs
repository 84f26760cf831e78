//! Asteroids, headless: the flagship example.
//!
//! ```text
//! cargo run --release -p tabula-examples --example asteroids -- [--seed N] [--frames N] [--threads N] [--asteroids N] [--swarm N] [--watch N] [--gif FILE] [--dot FILE] [--trace FILE] [--inspect ENTITY_INDEX]
//! ```
//!
//! `--asteroids N` is how many asteroids the first level starts with (each later level
//! starts with one more); the default, 3, is the classic game, which the scripted pilot
//! plays through level after level, its ship coming back after each crash. `--swarm N`
//! (default 50,000) adds dust motes that drift and swirl through the field and touch
//! nothing: they give the parallel systems enough rows to be worth running side by side
//! without crowding the game. `--swarm 0` is the classic game alone.
//!
//! To look at it: `--watch N` draws every Nth frame in the terminal, live at the game's
//! pace (60 frames a second); `--gif FILE` writes every third frame to an animated GIF
//! (300 × 225 pixels, half the playfield's size), for example
//! `--frames 1800 --swarm 2000 --gif asteroids.gif`.
//!
//! Prints one line per simulated second, then frame-time statistics, entity totals, what
//! the traces say (how many threads worked at once on average, and how much of each frame
//! the trace explains: [`Trace::attributed`](tabula::schedule::Trace::attributed)). Every
//! frame is traced; `--trace FILE` writes the last frame's trace as Chrome trace-event JSON,
//! to open in Perfetto (ui.perfetto.dev, "Open trace file") or `chrome://tracing`. The same
//! seed gives the same game whatever the thread count. `--inspect N` prints every component
//! of the entity at slot N at the end of the run, with its value (`World::inspect`): for
//! example `--frames 600 --swarm 0 --inspect 0`.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::io::Write;
use std::time::{Duration, Instant};

use tabula::prelude::FrameTimer;
use tabula::schedule::ExecutorKind;
use tabula_examples::asteroids::components::{Screen, Settings};
use tabula_examples::asteroids::view::{Canvas, GifRecorder};
use tabula_examples::asteroids::{CLASSIC_ASTEROIDS, DT, Game};
use tabula_examples::cli::{self, Args};

/// Dust motes in the field unless `--swarm` says otherwise.
const DEFAULT_SWARM: u32 = 50_000;

/// Every how many frames `--gif` records one.
const GIF_EVERY: u32 = 3;

const USAGE: &str = "usage: asteroids [--seed N] [--frames N] [--threads N] [--asteroids N] [--swarm N] [--watch N] [--gif FILE] [--dot FILE] [--trace FILE] [--inspect ENTITY_INDEX]";

struct Options {
    seed: u64,
    frames: u32,
    settings: Settings,
    watch: Option<u32>,
    gif: Option<String>,
    dot: Option<String>,
    trace: Option<String>,
    inspect: Option<u32>,
}

fn main() {
    let args = Args::parse(USAGE);
    let options = Options {
        seed: args.get_or("--seed", 1),
        frames: args.get_or("--frames", 3600),
        settings: Settings {
            asteroids: args.get_or("--asteroids", CLASSIC_ASTEROIDS),
            swarm: args.get_or("--swarm", DEFAULT_SWARM),
        },
        watch: args.get::<u32>("--watch").map(|n| n.max(1)),
        gif: args.get("--gif"),
        dot: args.get("--dot"),
        trace: args.get("--trace"),
        inspect: args.get("--inspect"),
    };
    cli::with_threads(args.get("--threads"), |threads| play(&options, threads));
}

fn play(options: &Options, threads: usize) {
    let mut game = Game::with_settings(options.seed, ExecutorKind::Parallel, options.settings);
    if let Some(path) = &options.dot {
        let dot = game.fixed_update_graph_dot();
        std::fs::write(path, dot).unwrap_or_else(|e| panic!("cannot write {path}: {e}"));
        println!("schedule graph written to {path}");
    }
    game.fixed_update().set_tracing(true);
    println!(
        "asteroids: seed {}, {} frames, {} threads, {} asteroids at the start, {} dust motes",
        options.seed, options.frames, threads, options.settings.asteroids, options.settings.swarm
    );
    let mut terminal = options.watch.map(|every| (every, Canvas::new(100, 37)));
    let mut timer = terminal.as_ref().map(|_| FrameTimer::new());
    if terminal.is_some() {
        // Clear the screen once; each picture then homes the cursor and draws over the last.
        print!("\x1b[2J");
    }
    let mut gif = options.gif.as_ref().map(|path| {
        let file = std::fs::File::create(path).unwrap_or_else(|e| panic!("cannot create {path}: {e}"));
        let canvas = Canvas::new(300, 225);
        let recorder = GifRecorder::new(std::io::BufWriter::new(file), 300, 225, 5)
            .unwrap_or_else(|e| panic!("cannot write {path}: {e}"));
        (recorder, canvas)
    });
    let mut frame_times = Vec::with_capacity(options.frames as usize);
    let mut concurrency = 0.0;
    let mut attributed = Vec::with_capacity(options.frames as usize);
    let mut overlapping_frames = 0_u32;
    let mut peak_entities = 0;
    for frame in 1..=options.frames {
        let start = Instant::now();
        match &mut timer {
            // Watching: a live loop, each frame standing for the time the last one took.
            Some(timer) => game.step_by(timer.tick()),
            None => game.step(),
        }
        frame_times.push(start.elapsed().as_secs_f64() * 1e6);
        // The last fixed step's trace (from an earlier frame when none was due in this one).
        if let Some(trace) = game.fixed_update().last_trace() {
            concurrency += trace.concurrency();
            overlapping_frames += u32::from(trace.overlap().overlapping_systems > 0);
            attributed.push(trace.attributed());
        }
        peak_entities = peak_entities.max(game.world.len());
        if let Some((recorder, canvas)) = &mut gif
            && frame % GIF_EVERY == 1
        {
            canvas.paint(&mut game.world);
            recorder
                .record(canvas)
                .unwrap_or_else(|e| panic!("cannot write the GIF: {e}"));
        }
        if let Some((every, canvas)) = &mut terminal
            && frame % *every == 0
        {
            canvas.paint(&mut game.world);
            let state = game.state();
            let banner = match game.screen() {
                Screen::Title => "  ASTEROIDS — starting",
                Screen::Playing => "",
                Screen::GameOver => "  GAME OVER",
            };
            println!(
                "\x1b[H{}frame {frame:>6}  game {}  level {:>2}  lives {}  hits {:>4}{banner}",
                canvas.to_text(),
                state.games,
                state.level,
                state.lives,
                state.hits,
            );
            std::io::stdout().flush().ok();
            let due = Duration::from_secs_f32(DT * *every as f32);
            std::thread::sleep(due.saturating_sub(start.elapsed()));
        }
        if terminal.is_none() && frame % 60 == 0 {
            let state = game.state();
            let (ships, asteroids, bullets) = game.census();
            println!(
                "t={:>4}s  game {}  level {:>2}  lives {}  hits {:>4}  entities {:>3} (ships {ships}, asteroids {asteroids:>2}, bullets {bullets:>2}){}",
                frame / 60,
                state.games,
                state.level,
                state.lives,
                state.hits,
                game.world.len(),
                match game.screen() {
                    Screen::Title => "  (title)",
                    Screen::Playing => "",
                    Screen::GameOver => "  GAME OVER",
                },
            );
        }
    }
    if let (Some(path), Some((recorder, _))) = (&options.gif, gif) {
        recorder
            .finish()
            .and_then(|mut out| out.flush().map_err(Into::into))
            .unwrap_or_else(|e| panic!("cannot write {path}: {e}"));
        println!("{} frames written to {path}", options.frames.div_ceil(GIF_EVERY));
    }
    if let Some(path) = &options.trace {
        let trace = game.fixed_update().last_trace().expect("fixed steps are traced");
        std::fs::write(path, trace.to_chrome_json()).unwrap_or_else(|e| panic!("cannot write {path}: {e}"));
        println!("last frame's trace written to {path} (open it in ui.perfetto.dev)");
    }
    if let Some(index) = options.inspect {
        inspect(&game.world, index);
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
        "final: game {}, level {}, lives {}, hits {}, state digest {:016x} (the same with any --threads: compare with --threads 1)",
        state.games,
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
        game.fixed_update().len()
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

/// Prints every component of the live entity at slot `index` (`--inspect`), or says that
/// none lives there.
fn inspect(world: &tabula::World, index: u32) {
    let entity = world
        .archetypes()
        .flat_map(|archetype| archetype.entities())
        .find(|entity| entity.index() == index)
        .copied();
    match entity.map(|entity| world.inspect(entity)) {
        Some(Ok(dump)) => print!("{dump}"),
        Some(Err(error)) => println!("cannot inspect entity {index}: {error}"),
        None => println!("no live entity at index {index} at the end of the run"),
    }
}
