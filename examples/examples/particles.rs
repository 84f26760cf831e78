//! Particles: 200,000 short-lived entities, spawned and despawned through `Commands` every
//! frame, with two provably disjoint systems (`gravity`, `drag`) running side by side and
//! `par_for_each` doing the integration.
//!
//! ```text
//! cargo run --release -p tabula-examples --example particles -- [--frames N] [--particles N] [--threads N] [--dot FILE] [--seed N]
//! ```
//!
//! Prints one line per simulated second (population, churn, frames per second), then the
//! overall frame rate and how many systems ran at once on average. `--dot FILE` writes the
//! schedule's graph in Graphviz DOT (`dot -Tsvg FILE > graph.svg`).

use std::time::Instant;

use tabula::schedule::ExecutorKind;
use tabula_examples::cli::{self, Args};
use tabula_examples::particles::{Config, Particles};

struct Options {
    config: Config,
    frames: u32,
    dot: Option<String>,
}

const USAGE: &str = "usage: particles [--frames N] [--particles N] [--threads N] [--dot FILE] [--seed N]";

fn main() {
    let args = Args::parse(USAGE);
    let defaults = Config::default();
    let options = Options {
        config: Config {
            particles: args.get_or("--particles", defaults.particles),
            seed: args.get_or("--seed", defaults.seed),
            ..defaults
        },
        frames: args.get_or("--frames", 300),
        dot: args.get("--dot"),
    };
    cli::with_threads(args.get("--threads"), |threads| simulate(&options, threads));
}

fn simulate(options: &Options, threads: usize) {
    let setup = Instant::now();
    let mut sim = Particles::new(options.config, ExecutorKind::Parallel);
    println!(
        "particles: {} particles, {} emitters, {} frames, {} threads (set up in {:.0} ms)",
        sim.alive(),
        options.config.emitters,
        options.frames,
        threads,
        setup.elapsed().as_secs_f64() * 1e3
    );
    if let Some(path) = &options.dot {
        let dot = sim
            .schedule
            .graph_dot(&mut sim.world)
            .expect("the schedule builds");
        std::fs::write(path, dot).unwrap_or_else(|e| panic!("cannot write {path}: {e}"));
        println!("schedule graph written to {path}");
    }
    sim.schedule.set_tracing(true);

    let mut parallelism = 0.0;
    let mut total = 0.0;
    let mut window = 0.0;
    let (mut last_emitted, mut last_expired) = (0, 0);
    let (mut low, mut high) = (usize::MAX, 0);
    for frame in 1..=options.frames {
        let start = Instant::now();
        sim.step();
        let elapsed = start.elapsed().as_secs_f64();
        total += elapsed;
        window += elapsed;
        parallelism += sim.schedule.last_trace().map_or(0.0, |t| t.concurrency());
        let alive = sim.alive();
        low = low.min(alive);
        high = high.max(alive);
        if frame % 60 == 0 || frame == options.frames {
            let census = sim.census();
            let (emitted, expired) = (sim.emitted(), sim.expired());
            let frames_in_window = if frame % 60 == 0 { 60 } else { frame % 60 };
            println!(
                "frame {frame:>5}  alive {alive:>7} (heavy {:>6})  +{:<6} -{:<6} {:>7.1} fps",
                census.heavy,
                emitted - last_emitted,
                expired - last_expired,
                f64::from(frames_in_window) / window,
            );
            (last_emitted, last_expired, window) = (emitted, expired, 0.0);
        }
    }
    let frames = f64::from(options.frames.max(1));
    println!("---");
    println!(
        "{:.1} frames per second ({:.2} ms per frame, the first frame builds the schedule)",
        frames / total,
        total / frames * 1e3
    );
    println!(
        "population between {low} and {high}; {} emitted, {} expired in all",
        sim.emitted(),
        sim.expired()
    );
    println!(
        "systems running at once, on average while any ran: {:.2} (of {} systems; par_for_each inside integrate is not counted)",
        parallelism / frames,
        sim.schedule.len()
    );
}
