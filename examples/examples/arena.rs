//! A game server hosting arena matches, one `World` each, all driven by one `Schedule` that
//! moves from match to match every tick; finished matches' worlds are dropped and their tags
//! reused.
//!
//! ```text
//! cargo run --release -p tabula-examples --example arena -- [--ticks N] [--seed N] [--threads N]
//! ```
//!
//! Prints each match as it ends — its world's tag, the ships each team sank, the best ship
//! (its id carries the tag), and its world's entity slots and lanes next to its live
//! entities — then a digest of all reports, which is the same at any thread count.

use tabula_examples::arena::Server;
use tabula_examples::cli::{Args, with_threads};

fn main() {
    let args = Args::parse("usage: arena [--ticks N] [--seed N] [--threads N]");
    let ticks: u32 = args.get_or("--ticks", 1_000);
    let seed: u64 = args.get_or("--seed", 3);
    let threads: Option<usize> = args.get("--threads");
    let reports = with_threads(threads, |threads| {
        println!("{ticks} ticks, a match every 40, on {threads} thread(s)");
        let mut server = Server::new(seed);
        for _ in 0..ticks {
            server.tick();
        }
        for report in &server.reports {
            let ace = report
                .ace
                .map_or("none".to_string(), |(ship, n)| format!("{ship:?} ({n})"));
            println!(
                "match {:>3} (tag {:>3}): sunk {:>2}–{:<2} ace {ace:<14} {:>3} live, peak {:>3}, {:>3} slots, {} lanes",
                report.number,
                report.tag,
                report.sunk[0],
                report.sunk[1],
                report.live,
                report.peak,
                report.slots,
                report.lanes
            );
        }
        println!("still playing: {:?}", server.live());
        server.reports
    });
    let digest = reports.iter().fold(0xcbf2_9ce4_8422_2325u64, |hash, report| {
        format!("{report:?}")
            .bytes()
            .fold(hash, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3))
    });
    println!("{} matches, digest {digest:016x}", reports.len());
}
