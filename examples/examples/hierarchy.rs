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
use tabula_examples::hierarchy::{Scenario, SolarSystem};

fn parse() -> Result<u64, String> {
    let mut frames = 600;
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        match flag.as_str() {
            "--frames" => {
                let value = args.next().ok_or("--frames needs a value")?;
                frames = value.parse().map_err(|e| format!("--frames: {e}"))?;
            }
            "--help" | "-h" => return Err("usage: hierarchy [--frames N]".into()),
            other => return Err(format!("unknown argument `{other}` (try --help)")),
        }
    }
    if frames < 3 {
        return Err("--frames: need at least 3 frames for the scenario".into());
    }
    Ok(frames)
}

fn main() {
    let frames = match parse() {
        Ok(frames) => frames,
        Err(message) => {
            eprintln!("{message}");
            std::process::exit(2);
        }
    };
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
