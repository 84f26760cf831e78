//! Skirmish: two squads in a wrapping arena, with an observer-maintained spatial index, a
//! many-to-many "targets" relation and required components (see `tabula_examples::skirmish`).
//!
//! ```text
//! cargo run --release -p tabula-examples --example skirmish -- [--frames N] [--units N] [--seed N] [--threads N]
//! ```
//!
//! Prints a line every 50 frames (units alive per squad, target pairs, grid cells in use,
//! deaths), checks the index and the relation against the world at each line, and ends with
//! the totals.

use tabula::schedule::ExecutorKind;
use tabula_examples::cli::{self, Args};
use tabula_examples::skirmish::{Grid, Skirmish};

const USAGE: &str = "usage: skirmish [--frames N] [--units N] [--seed N] [--threads N]";

fn main() {
    let args = Args::parse(USAGE);
    let frames: u64 = args.get_or("--frames", 600);
    let units: usize = args.get_or("--units", 60);
    let seed: u64 = args.get_or("--seed", 7);
    cli::with_threads(args.get("--threads"), |threads| {
        let mut skirmish = Skirmish::new(units, seed, ExecutorKind::Parallel);
        println!("skirmish: 2 squads of {units}, {frames} frames, {threads} threads");
        for frame in 1..=frames {
            skirmish.step();
            if frame % 50 == 0 || frame == frames {
                skirmish.check();
                let [a, b] = skirmish.alive();
                let cells = skirmish.world.resource::<Grid>().map_or(0, |g| g.0.len());
                let stats = skirmish.stats().clone();
                println!(
                    "frame {frame:4}: alive {a:3} / {b:3}, {:3} target pairs, {cells:3} cells in use, deaths {} / {}",
                    skirmish.pairs(),
                    stats.deaths[0],
                    stats.deaths[1],
                );
            }
        }
        let stats = skirmish.stats();
        println!(
            "done: {} shots, reinforcements {} / {}; the grid and the relation matched the world at every check",
            stats.shots, stats.reinforcements[0], stats.reinforcements[1]
        );
    });
}
