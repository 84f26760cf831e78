//! A solar system as an entity hierarchy: transform propagation down `Children`,
//! re-parenting a moon mid-run and `despawn_recursive` of a planet with its moons.
//!
//! ```text
//! cargo run --release -p tabula-examples --example hierarchy -- [--frames N]
//! ```
//!
//! Prints the tree (each body with its position in the world) after the first frame, right
//! after the Moon moves from Earth to Mars (a third of the way in), right after Jupiter is
//! destroyed (two thirds in) and at the end, with a line for each change.

use tabula::schedule::ExecutorKind;
use tabula_examples::cli::{self, Args};
use tabula_examples::hierarchy::{Scenario, SolarSystem};

fn main() {
    let frames: u64 = Args::parse("usage: hierarchy [--frames N]").get_or("--frames", 600);
    if frames < 3 {
        cli::exit("--frames: need at least 3 frames for the scenario");
    }
    let scenario = Scenario {
        reparent_at: Some(frames / 3),
        destroy_at: Some(frames * 2 / 3),
    };
    let mut system = SolarSystem::new(scenario, ExecutorKind::Parallel);
    println!(
        "solar system: {} bodies, {frames} frames; the Moon moves at frame {}, Jupiter goes at frame {}",
        system.world.len(),
        frames / 3,
        frames * 2 / 3
    );
    let mut reported = 0;
    for frame in 1..=frames {
        system.step();
        // The clock counted `frame` runs; the scenario acted during the run that started at
        // frame - 1, so its change shows in the tree printed now.
        let changed = system.chronicle().len() > reported;
        if frame == 1 || changed || frame == frames {
            println!();
            for line in &system.chronicle()[reported..] {
                println!("* {line}");
            }
            reported = system.chronicle().len();
            println!("after frame {frame} ({} bodies):", system.world.len());
            print!("{}", system.tree());
        }
    }
    let errors = system.schedule.command_errors();
    if !errors.is_empty() {
        println!("skipped commands: {errors:?}");
    }
}
