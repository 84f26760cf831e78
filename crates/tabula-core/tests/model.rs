//! Model-based test: random operation sequences applied both to a [`World`] and to a naive
//! reference model, with everything observable compared after every step.
//!
//! The model, the component types, the operations, the RNG and the checks are
//! `tabula-check`'s, shared with the fuzzer and the soak (see its crate docs and
//! docs/safety.md); this file only drives them, with a mix of direct calls sized for Miri
//! (`tabula_check::direct_op`: no schedule runs, nothing on rayon's threads), and outside
//! Miri 8% of steps are observer, relation and hierarchy ops
//! (`tabula_check::reaction_op`: observers of lifecycle events and of a user event logging
//! their runs, `relate` / `unrelate`, `set_parent`, `despawn_recursive`). After every
//! step the harness's full check runs (every live entity, the recent dead and reserved ids,
//! `World::view`, archetypes, queries, removal logs, drop counts), then every query kept
//! since the start makes its passes (`iter`, `count` and `get`; `for_each`,
//! `for_each_chunk` and `get_mut` that write, which the model follows; `Or` and `Has`), so
//! that the queries' run plans live across every structural change. Some component kinds'
//! removals are tracked from the start, some from a third of the way in (so that their
//! cached edges and archetypes predate tracking), some never; the logs are aged every five
//! steps. Every sequence clears its populated world once, at its midpoint.
//!
//! A failure names its seed and step; rerun that sequence alone with
//! `TABULA_MODEL_SEED=<seed> cargo test -p tabula-core --test model`.

mod common;

use tabula_check::{Harness, KINDS, Op, PAR_QUERY, QUERIES, Rng, direct_op, reaction_op};
use tabula_core::World;

/// Kinds (`tabula_check::KINDS` numbering) whose removals are tracked from the first step,
/// besides `Hp` and `Tracked`, which every harness world tracks from its creation.
const EARLY_TRACKED: [u8; 2] = [0, 2]; // Pos, Tag
/// Kinds tracked from a third of the way in; `Small` (5) and `Bomb` (7) never are.
const LATE_TRACKED: [u8; 2] = [3, 4]; // Name, Wide

/// Prints where a sequence failed when a check panics inside it.
struct Trace {
    seed: u64,
    step: usize,
    /// The op being applied and checked; `None` during the final check.
    op: Option<Op>,
}

impl Drop for Trace {
    fn drop(&mut self) {
        if std::thread::panicking() {
            let during = match &self.op {
                Some(op) => format!("{op:?}"),
                None => "the final check".to_owned(),
            };
            eprintln!(
                "model test failed: seed {} at step {} during {during}; rerun with TABULA_MODEL_SEED={}",
                self.seed, self.step, self.seed
            );
        }
    }
}

/// Applies `op`, recording it in `trace` first.
fn apply(harness: &mut Harness, trace: &mut Trace, op: Op) {
    harness.apply(trace.op.insert(op));
}

fn run_sequence(seed: u64, steps: usize) {
    // Under Miri every check is costly: keep the population (and so each check) small.
    let cap = if cfg!(miri) { 8 } else { 48 };
    let mut trace = Trace {
        seed,
        step: 0,
        op: None,
    };
    let mut rng = Rng(seed);
    // Odd seeds keep the markers `Tag` and `Small` in sparse sets.
    let mut harness = Harness::with_storage(seed & 1 == 1);
    for kind in EARLY_TRACKED {
        apply(&mut harness, &mut trace, Op::TrackRemovals { kind });
    }
    for step in 0..steps {
        trace.step = step;
        if step == steps / 3 {
            for kind in LATE_TRACKED {
                apply(&mut harness, &mut trace, Op::TrackRemovals { kind });
            }
        }
        let op = if step == steps / 2 {
            Op::Clear { armed: false }
        } else if !cfg!(miri) && rng.chance(8) {
            // Observers run systems, which Miri-sized runs leave out (their sequences are
            // the same as before these ops existed).
            reaction_op(&mut rng)
        } else {
            direct_op(&mut rng, harness.model().len(), cap)
        };
        apply(&mut harness, &mut trace, op);
        harness.check();
        if step % 5 == 4 {
            // Ages the removal logs (checked at the next step).
            apply(&mut harness, &mut trace, Op::UpdateEvents);
        }
        // Each pass compares what it sees with the model; the next step's check sees the
        // values the writing passes left.
        for which in (0..QUERIES).filter(|&which| which != PAR_QUERY) {
            apply(&mut harness, &mut trace, Op::Query { which });
        }
    }
    trace.op = None;
    harness.finish();
}

/// `(seeds, steps per seed)`: several thousand steps normally, a small sample under Miri,
/// a quarter of the seeds under the sanitizers (`.ci/run` sets `--cfg tabula_sanitizer`),
/// which look for memory and thread errors that every kind of step meets in any seed.
fn size() -> (u64, usize) {
    common::by_checker((2, 40), (10, 150), (40, 150))
}

#[test]
fn world_matches_reference_model() {
    assert_eq!(KINDS, 8, "EARLY_TRACKED and LATE_TRACKED name kinds by number");
    if let Ok(seed) = std::env::var("TABULA_MODEL_SEED") {
        let seed = seed.parse().expect("TABULA_MODEL_SEED is a u64");
        run_sequence(seed, size().1);
        return;
    }
    let (seeds, steps) = size();
    for seed in 0..seeds {
        run_sequence(0x7ab0_1a00_0000 ^ seed, steps);
    }
}

/// A few long sequences: the population grows and shrinks many times, so slots are freed
/// and reused (with new generations) over and over.
/// Under Miri the short sequences above cover the same operations; this one is only long.
#[test]
#[cfg_attr(
    miri,
    ignore = "long by design; world_matches_reference_model runs under Miri"
)]
fn long_sequences_reuse_slots_safely() {
    for seed in [1, 2] {
        run_sequence(seed, 2_000);
    }
}

/// The harness's first world is a `World` of this crate: the dev-dependency cycle through
/// `tabula-check` links one `tabula-core`, not two, so this test checks this crate's code.
#[test]
fn the_harness_drives_this_crates_world() {
    let harness = Harness::new();
    let world: &World = harness.world();
    assert!(world.is_empty());
    harness.finish();
}
