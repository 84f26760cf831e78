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

/// The decoder reaches the new ops: seeded sequences move schedules between the two worlds
/// and close run-condition gates.
#[test]
fn seeded_sequences_move_schedules_and_close_gates() {
    use tabula_check::{Harness, Op, Rng};
    let mut harness = Harness::new();
    let mut source = Rng(0xc4ec_0000);
    for _ in 0..400 {
        let op = Op::decode(&mut source).expect("a random stream never ends");
        harness.apply(&op);
    }
    let stats = harness.stats();
    assert!(stats.moves >= 5, "{stats:?}");
    assert!(stats.gated_runs >= 5, "{stats:?}");
    harness.finish();
}

/// The point of owned, reused reservation lanes: the three schedules take turns on the two
/// worlds hundreds of times, each run spawning and despawning, and each world keeps at most
/// [`LANES`] lanes and a slot count bounded by its population, not by the number of moves
/// (the harness's check asserts the bound after every op; see `tabula_check::harness`).
#[test]
fn schedules_moving_between_worlds_keep_lanes_and_slots_bounded() {
    use tabula_check::harness::LANES;
    use tabula_check::{CmdOp, CmdTarget, Harness, Op, shape};
    let mut harness = Harness::new();
    for i in 0..900u16 {
        let live = CmdTarget::Existing((i << 3) | 3);
        harness.apply(&Op::Run {
            schedule: (i % 3) as u8,
            // Every schedule's successive runs alternate between the worlds.
            away: (i / 3) % 2 == 1,
            cmds: vec![
                CmdOp::Spawn {
                    shape: (i % 16) as u8,
                    seed: i,
                },
                CmdOp::Spawn { shape: 2, seed: !i },
                CmdOp::Despawn { target: live },
                CmdOp::Despawn {
                    target: CmdTarget::Spawned(1),
                },
            ],
            panic: false,
            events: Vec::new(),
            gates: 0,
        });
        if i % 50 == 0 {
            harness.apply(&Op::Reserve { count: 3 });
        }
        harness.check_sample(4);
    }
    let stats = harness.stats();
    assert!(stats.moves >= 890, "{stats:?}");
    for (world, model) in [
        (harness.world(), harness.model()),
        (harness.second_world(), harness.second_model()),
    ] {
        let shape = shape(world);
        assert!(shape.lanes <= LANES, "{shape:?}");
        // Two spawns and up to two despawns per run keep a handful alive; each spawn is one
        // of a run's two reservations.
        assert!(
            shape.slots <= model.peak() + 2 * LANES * 3,
            "{shape:?}, peak {}",
            model.peak()
        );
    }
    harness.finish();
}

/// The decoder reaches the observer, relation and hierarchy ops, and they do something:
/// observers run (and the checks compare their logs), pairs are made, parents set, subtrees
/// despawned.
#[test]
fn seeded_sequences_drive_observers_relations_and_the_hierarchy() {
    use tabula_check::{Harness, Op, Rng};
    let mut total = tabula_check::Stats::default();
    for seed in 0..8 {
        let mut harness = Harness::new();
        let mut source = Rng(0x0b5e_0000 ^ seed);
        for _ in 0..400 {
            let op = Op::decode(&mut source).expect("a random stream never ends");
            harness.apply(&op);
            harness.check();
        }
        let stats = harness.stats();
        total.observers_added += stats.observers_added;
        total.observer_runs += stats.observer_runs;
        total.pairs_made += stats.pairs_made;
        total.parents_set += stats.parents_set;
        total.despawned_recursively += stats.despawned_recursively;
        harness.finish();
    }
    assert!(total.observers_added >= 100, "{total:?}");
    assert!(total.observer_runs >= 150, "{total:?}");
    assert!(total.pairs_made >= 20, "{total:?}");
    assert!(total.parents_set >= 20, "{total:?}");
    assert!(total.despawned_recursively >= 20, "{total:?}");
}

/// A digest of seeded sequences: after every op, both worlds' observer logs in the order
/// the observers ran (lifecycle runs included, whose order the checks leave free), and the
/// first world's archetypes' entities in row order.
fn digest() -> u64 {
    use std::hash::{Hash, Hasher};
    use tabula_check::{Harness, Op, Rng};
    // SipHash with fixed keys: the same in every process.
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    for seed in 0..6 {
        let mut harness = Harness::new();
        let mut source = Rng(0xd16e_0000 ^ seed);
        for _ in 0..400 {
            let op = Op::decode(&mut source).expect("a random stream never ends");
            harness.apply(&op);
            harness.observer_log(false).hash(&mut hasher);
            harness.observer_log(true).hash(&mut hasher);
            for archetype in harness.world().archetypes() {
                archetype.entities().hash(&mut hasher);
            }
            harness.check();
        }
        harness.stats().observer_runs.hash(&mut hasher);
        harness.finish();
    }
    hasher.finish()
}

/// Observers run at the schedules' sync points (for the commands applied there) as well as
/// inside direct calls: the order they run in, and every id, must not depend on the thread
/// count. The test runs itself twice, with rayon's pool at 1 and at 4 threads (rayon reads
/// `RAYON_NUM_THREADS` once per process), and compares the digests.
#[test]
fn observer_runs_and_ids_are_the_same_with_1_and_4_threads() {
    const NAME: &str = "observer_runs_and_ids_are_the_same_with_1_and_4_threads";
    if std::env::var_os("TABULA_CHECK_DIGEST").is_some() {
        println!("digest {:016x}", digest());
        return;
    }
    let run = |threads: &str| -> String {
        let exe = std::env::current_exe().expect("the test binary");
        let output = std::process::Command::new(exe)
            .args([NAME, "--exact", "--nocapture", "--test-threads=1"])
            .env("RAYON_NUM_THREADS", threads)
            .env("TABULA_CHECK_DIGEST", "1")
            .output()
            .expect("the test binary runs");
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        assert!(output.status.success(), "with {threads} threads: {stdout}");
        // The harness prints its line after the test's name, on the same line.
        (stdout.split("digest ").nth(1))
            .and_then(|rest| rest.split_whitespace().next())
            .unwrap_or_else(|| panic!("no digest with {threads} threads: {stdout}"))
            .to_owned()
    };
    assert_eq!(run("1"), run("4"));
}

/// Odd seeds (and inputs of odd byte parity) store the markers in sparse sets: every op then
/// reaches sparse components too.
#[test]
fn the_sparse_storage_choice_reaches_both_worlds() {
    let harness = tabula_check::Harness::with_storage(true);
    for world in [harness.world(), harness.second_world()] {
        for name in [
            std::any::type_name::<tabula_check::Tag>(),
            std::any::type_name::<tabula_check::Small>(),
        ] {
            let id = world.components().id_by_name(name).unwrap();
            assert!(world.components().info(id).is_sparse(), "{name}");
        }
    }
    let harness = tabula_check::Harness::new();
    let id = harness
        .world()
        .components()
        .id_by_name(std::any::type_name::<tabula_check::Tag>());
    assert!(id.is_none_or(|id| !harness.world().components().info(id).is_sparse()));
}
