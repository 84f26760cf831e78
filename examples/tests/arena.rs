//! The arena server: one schedule over many match worlds keeps each world's slots near its
//! live entities, live matches never share a tag, and the reports are the same at any
//! thread count.

use std::collections::HashSet;

use tabula_examples::arena::{MATCH_TICKS, MatchReport, Server};

/// A report without its world's tag: two servers in one process get different tags (tags
/// are leased process-wide), but the same entities `(index, generation)`.
fn untagged(report: &MatchReport) -> impl PartialEq + std::fmt::Debug {
    let ace = report.ace.map(|(ship, n)| (ship.index(), ship.generation(), n));
    (
        report.number,
        report.sunk,
        ace,
        report.live,
        report.peak,
        report.slots,
        report.lanes,
    )
}

fn play(ticks: u32, threads: usize) -> Server {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap();
    pool.install(|| {
        let mut server = Server::new(11);
        for _ in 0..ticks {
            server.tick();
            let tags: HashSet<u8> = server.live().iter().map(|&(_, tag)| tag).collect();
            assert_eq!(tags.len(), server.live().len(), "live matches share no tag");
        }
        server
    })
}

#[test]
fn one_schedule_over_many_matches_stays_bounded_and_deterministic() {
    let one = play(MATCH_TICKS * 4, 1);
    assert!(one.reports.len() >= 8, "{} matches ended", one.reports.len());
    for report in &one.reports {
        assert!(report.sunk.iter().sum::<u32>() > 0, "ships were sunk: {report:?}");
        assert!(
            report.lanes <= 4,
            "the shared lane and one per command system: {report:?}"
        );
        assert!(
            report.slots <= 3 * report.peak as usize,
            "slots stay near the live entities: {report:?}"
        );
    }
    let four = play(MATCH_TICKS * 4, 4);
    let one: Vec<_> = one.reports.iter().map(untagged).collect();
    let four: Vec<_> = four.reports.iter().map(untagged).collect();
    assert_eq!(one, four, "the same matches, ids included, with 1 and 4 threads");
}
