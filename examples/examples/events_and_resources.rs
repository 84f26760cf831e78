//! A turn-based battle, hero against monsters: events (attacks, deaths), resources (turn,
//! combat log, random generator), `Local` counters, run conditions and ordered sets.
//!
//! ```text
//! cargo run --release -p tabula-examples --example events_and_resources -- [--seed N]
//! ```
//!
//! Prints the battle as it happens, one schedule run per move, then the winner and how many
//! events were sent and handled. The same seed always gives the same battle.

use tabula_examples::cli::Args;
use tabula_examples::combat::{Battle, Outcome, Side};

fn main() {
    let seed: u64 = Args::parse("usage: events_and_resources [--seed N]").get_or("--seed", 7);
    let mut battle = Battle::new(seed);
    let lineup: Vec<String> = battle
        .survivors()
        .iter()
        .map(|(name, health)| format!("{name} ({} HP)", health.max))
        .collect();
    println!("seed {seed}: {}", lineup.join(", "));
    let mut printed = 0;
    while battle.outcome() == Outcome::Ongoing {
        battle.step();
        for line in &battle.log()[printed..] {
            if line.starts_with("--") {
                println!("{line}");
            } else {
                println!("  {line}");
            }
        }
        printed = battle.log().len();
    }
    let winner = match battle.outcome() {
        Outcome::Won(Side::Hero) => "the hero",
        Outcome::Won(Side::Monsters) => "the monsters",
        Outcome::Draw | Outcome::Ongoing => "nobody",
    };
    let tally = battle.tally();
    println!("---");
    println!("winner: {winner}");
    let standing: Vec<String> = battle
        .survivors()
        .iter()
        .map(|(name, health)| format!("{name} {}/{}", health.current, health.max))
        .collect();
    println!("still standing: {}", standing.join(", "));
    println!(
        "events: {} attacks sent, {} resolved; {} deaths sent, {} buried, {} announced",
        tally.attacks_sent, tally.attacks_resolved, tally.deaths_sent, tally.buried, tally.announced
    );
}
