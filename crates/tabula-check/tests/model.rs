//! Seeded random sequences through the fuzzer's decoder, harness and invariant checker: the
//! world must match the model after every operation. A failure names its seed; rerun that
//! sequence alone with `TABULA_CHECK_SEED=<seed> cargo test -p tabula-check --test model`.

use tabula_check::run_seed;

/// Prints the seed when a sequence fails.
struct Trace(u64);

impl Drop for Trace {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("sequence failed: rerun with TABULA_CHECK_SEED={}", self.0);
        }
    }
}

fn run(seed: u64, steps: usize) {
    let trace = Trace(seed);
    run_seed(seed, steps);
    drop(trace);
}

#[test]
fn seeded_sequences_match_the_model() {
    if let Ok(seed) = std::env::var("TABULA_CHECK_SEED") {
        run(seed.parse().expect("TABULA_CHECK_SEED is a u64"), 400);
        return;
    }
    for seed in 0..48 {
        run(0xc4ec_0000 ^ seed, 400);
    }
}

/// Long sequences: the population grows and shrinks many times, slots are reused, and the
/// schedules run hundreds of times on one world.
#[test]
fn long_sequences_match_the_model() {
    for seed in [1, 2, 3] {
        run(seed, 4_000);
    }
}
