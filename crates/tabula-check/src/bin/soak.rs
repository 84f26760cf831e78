//! The soak: the harness's two worlds under random churn for a long time, checked against
//! their models as it goes, with memory and structure watched for growth.
//!
//! ```text
//! cargo run --release -p tabula-check --bin soak -- [--ops N] [--runs N] [--entities N]
//!     [--cmds N] [--seed N] [--full-every N] [--storage table|sparse]
//!     (--help prints this and the defaults)
//! ```
//!
//! `--storage sparse` keeps the marker kinds `Tag` and `Small` in sparse sets in both worlds
//! (`Harness::with_storage`), so every op, query, view, command and check reaches them
//! through the sparse path; `--storage table` keeps everything in tables. Without the flag
//! the seed decides, as for the seeded model tests: odd seeds sparse, even seeds tables. So
//! `--seed 1` and `--seed 2` soak both storages:
//!
//! ```text
//! cargo run --release -p tabula-check --bin soak -- --seed 1   # markers sparse
//! cargo run --release -p tabula-check --bin soak -- --seed 2   # all in tables
//! ```
//!
//! Each frame runs one of the harness's three schedules (see `tabula_check::harness`) with
//! `--cmds` recorded commands (spawns, inserts, removes, despawns, some aimed at dead ids),
//! a panicking system in one frame of 20, events sent and read, and one of the run
//! conditions closed in one frame of 10. One frame in four runs it on the second world
//! (whose population is steered towards a quarter of `--entities`), so the schedules keep
//! moving between the two worlds. Then come a few dozen direct structural calls on the
//! first world (spawn, batch spawn, insert, remove, despawn, with components whose `Drop`
//! panics now and then), a query, and a sampled check of both worlds; the full check (every
//! live entity, every archetype, every query, drop accounting) runs every `--full-every`
//! frames and at the end. The first world's population is steered towards `--entities`.
//! Three direct calls in a hundred, and two commands in a hundred, are observer, relation
//! or hierarchy ops (`tabula_check::reaction_op`; commands that trigger `Poke` and relate
//! entities): pairs made and dropped with the entities, parents set, subtrees despawned,
//! observers (at most `tabula_check::MAX_OBSERVERS` at once) added and despawned, their
//! runs compared with the model's at every check.
//! It stops once both `--ops` structural calls and `--runs` schedule runs are done.
//!
//! Growth checks, after a warm-up of the first tenth of the run: the resident set (VmRSS),
//! sampled 100 times, must not grow by more than 10% + 8 MiB over its warm-up peak; the
//! first world's archetype count stays within its bound (one per subset of the component
//! kinds) and its registered types stop growing; its buffered events and removal logs (of
//! `Hp` and `Tracked`) stay within a few frames' worth. Every check, sampled or full, also
//! asserts that each world's entity indices stay within the slot bound (see
//! `tabula_check::harness`), however often the schedules moved between the worlds. The
//! binary exits non-zero if any of these fails, or a check panics.

use std::time::Instant;

use tabula_check::{CmdOp, CmdTarget, Harness, MAX_ARCHETYPES, Op, QUERIES, Rng, SHAPES, reaction_op};

struct Args {
    ops: u64,
    runs: u64,
    entities: usize,
    cmds: usize,
    seed: u64,
    full_every: u64,
    /// `Tag` and `Small` in sparse sets; `None`: by the seed's parity.
    sparse: Option<bool>,
}

fn parse_args() -> Args {
    let mut args = Args {
        ops: 100_000_000,
        runs: 1_000_000,
        entities: 10_000,
        cmds: 40,
        seed: 1,
        full_every: 50_000,
        sparse: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        if flag == "--help" || flag == "-h" {
            println!(
                "usage: soak [--ops N] [--runs N] [--entities N] [--cmds N] [--seed N] [--full-every N] \
                 [--storage table|sparse]\n\
                 defaults: --ops {} --runs {} --entities {} --cmds {} --seed {} --full-every {}, \
                 the markers sparse for odd seeds\n\
                 (numbers may be written 1e8 or 100_000_000; see the top of src/bin/soak.rs)",
                args.ops, args.runs, args.entities, args.cmds, args.seed, args.full_every
            );
            std::process::exit(0);
        }
        let value = it.next().unwrap_or_else(|| panic!("{flag} needs a value"));
        if flag == "--storage" {
            args.sparse = match value.as_str() {
                "table" => Some(false),
                "sparse" => Some(true),
                other => panic!("--storage: `{other}` is neither `table` nor `sparse`"),
            };
            continue;
        }
        let number = || -> u64 {
            let cleaned = value.replace('_', "");
            // Accepts 1e8 as well as 100000000.
            cleaned
                .parse::<u64>()
                .ok()
                .or_else(|| cleaned.parse::<f64>().ok().map(|f| f as u64))
                .unwrap_or_else(|| panic!("{flag}: `{value}` is not a number"))
        };
        match flag.as_str() {
            "--ops" => args.ops = number(),
            "--runs" => args.runs = number(),
            "--entities" => args.entities = number() as usize,
            "--cmds" => args.cmds = number() as usize,
            "--seed" => args.seed = number(),
            "--full-every" => args.full_every = number().max(1),
            other => panic!("unknown flag {other}; see the top of src/bin/soak.rs"),
        }
    }
    args
}

/// `VmRSS` and `VmHWM` of this process, in KiB (0 where /proc is not available).
fn memory_kib() -> (u64, u64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find(|line| line.starts_with(name))
            .and_then(|line| line.split_whitespace().nth(1))
            .and_then(|kib| kib.parse().ok())
            .unwrap_or(0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// A target for an op: mostly a live entity (low bits 3..=7), now and then a dead one (0),
/// a reservation (1) or an id never handed out (2).
fn target(rng: &mut Rng) -> u16 {
    let index = (rng.next_u64() as u16) << 3;
    match rng.below(100) {
        0..=5 => index,
        6..=7 => index | 1,
        8 => index | 2,
        _ => index | 3,
    }
}

fn seed(rng: &mut Rng) -> u16 {
    rng.next_u64() as u16
}

fn shape(rng: &mut Rng) -> u8 {
    rng.below(SHAPES) as u8
}

fn cmd_target(rng: &mut Rng) -> CmdTarget {
    if rng.chance(30) {
        CmdTarget::Spawned(rng.next_u64() as u8)
    } else {
        CmdTarget::Existing(target(rng))
    }
}

/// One frame's schedule run on the first world or (`away`) the second: `cmds` commands,
/// steered towards `wanted` entities in that world.
fn run_op(rng: &mut Rng, cmds: usize, live: usize, wanted: usize, away: bool) -> Op {
    // Below the wanted population, spawns outnumber despawns; above it, the reverse.
    let (grow, shrink) = if live < wanted { (45, 10) } else { (10, 45) };
    let cmds = (0..cmds)
        .map(|_| match rng.below(100) {
            r if r < grow => CmdOp::Spawn {
                shape: shape(rng),
                seed: seed(rng),
            },
            r if r < grow + shrink => CmdOp::Despawn {
                target: cmd_target(rng),
            },
            r if r < grow + shrink + 2 => CmdOp::Trigger {
                target: cmd_target(rng),
                value: rng.next_u64() as u8,
            },
            r if r < grow + shrink + 4 => CmdOp::Relate {
                source: cmd_target(rng),
                target: cmd_target(rng),
            },
            r if r < grow + shrink + 30 => CmdOp::Insert {
                target: cmd_target(rng),
                shape: shape(rng),
                seed: seed(rng),
            },
            _ => CmdOp::Remove {
                target: cmd_target(rng),
                shape: shape(rng),
            },
        })
        .collect();
    let events = (0..rng.below(4)).map(|_| rng.next_u64() as u8).collect();
    Op::Run {
        schedule: rng.below(3) as u8,
        away,
        cmds,
        panic: rng.chance(5),
        events,
        gates: if rng.chance(10) { 1 << rng.below(6) } else { 0 },
    }
}

/// One direct structural (or other) call, steered towards `wanted` entities.
fn direct_op(rng: &mut Rng, live: usize, wanted: usize) -> Op {
    // Spawns (batches average 3.5 entities) against despawns, by the side of `wanted`.
    let (grow, shrink) = if live < wanted { (30, 8) } else { (5, 30) };
    match rng.below(100) {
        r if r < grow => Op::Spawn {
            shape: shape(rng),
            seed: seed(rng),
        },
        r if r < grow + 2 => Op::SpawnBatch {
            shape: shape(rng),
            count: rng.below(8) as u8,
            seed: seed(rng),
        },
        r if r < grow + 2 + shrink => Op::Despawn {
            target: target(rng),
            armed: rng.chance(2),
        },
        r if r < grow + shrink + 22 => Op::Insert {
            target: target(rng),
            shape: shape(rng),
            seed: seed(rng),
            entity_mut: rng.chance(25),
        },
        r if r < grow + shrink + 28 => Op::InsertOne {
            target: target(rng),
            kind: rng.below(8) as u8,
            seed: seed(rng),
            armed: rng.chance(2),
        },
        r if r < grow + shrink + 40 => Op::Remove {
            target: target(rng),
            // Half of them a bundle the target holds whole.
            shape: shape(rng) | if rng.chance(50) { 0x80 } else { 0 },
        },
        r if r < grow + shrink + 46 => Op::RemoveOne {
            target: target(rng),
            kind: rng.below(8) as u8,
        },
        r if r < grow + shrink + 50 => Op::Overwrite {
            target: target(rng),
            kind: rng.below(8) as u8,
            seed: seed(rng),
        },
        r if r < grow + shrink + 51 => Op::Reserve {
            count: rng.below(4) as u8,
        },
        r if r < grow + shrink + 52 => Op::SendEvent {
            value: rng.next_u64() as u8,
        },
        r if r < grow + shrink + 55 => reaction_op(rng),
        _ => Op::Flush,
    }
}

fn main() {
    let args = parse_args();
    let mut rng = Rng(args.seed);
    let sparse = args.sparse.unwrap_or(args.seed & 1 == 1);
    let mut harness = Harness::with_storage(sparse);
    let start = Instant::now();
    // Direct calls per frame, so that the two targets finish together.
    let direct_per_frame = (args.ops / args.runs.max(1))
        .saturating_sub(args.cmds as u64)
        .max(8);
    println!(
        "soak: --ops {} --runs {} --entities {} --cmds {} (+{direct_per_frame} direct calls per frame) --seed {} --full-every {} --storage {}",
        args.ops,
        args.runs,
        args.entities,
        args.cmds,
        args.seed,
        args.full_every,
        if sparse { "sparse" } else { "table" }
    );

    let mut frames: u64 = 0;
    let mut next_report = 0.0;
    let mut warm: Option<WarmUp> = None;
    let mut rss_samples: Vec<(f64, u64)> = Vec::new();
    let mut max_events = 0;
    let mut max_removals = 0;
    let mut failures: Vec<String> = Vec::new();
    loop {
        let stats = harness.stats();
        let progress = (stats.structural as f64 / args.ops as f64).min(stats.runs as f64 / args.runs as f64);
        if progress >= 1.0 {
            break;
        }
        let away = rng.chance(25);
        let (live, wanted) = if away {
            (harness.second_model().len(), args.entities / 4)
        } else {
            (harness.model().len(), args.entities)
        };
        harness.apply(&run_op(&mut rng, args.cmds, live, wanted, away));
        for _ in 0..direct_per_frame {
            let live = harness.model().len();
            harness.apply(&direct_op(&mut rng, live, args.entities));
        }
        harness.apply(&Op::Query {
            which: rng.below(usize::from(QUERIES)) as u8,
        });
        frames += 1;
        if frames.is_multiple_of(args.full_every) {
            harness.check();
        } else if frames.is_multiple_of(16) {
            harness.check_sample(8);
        }
        max_events = max_events.max(harness.buffered_events());
        max_removals = max_removals.max(harness.removal_log_entries());

        if progress >= next_report {
            next_report += 0.01;
            let (rss, hwm) = memory_kib();
            let shape = harness.shape();
            let second = tabula_check::shape(harness.second_world());
            rss_samples.push((progress, rss));
            println!(
                "{:5.1}% {:7.1}s structural {:>11} runs {:>8} moves {:>7} panics {:>7} live {:>6} slots {:>6} second world live {:>6} slots {:>6} archetypes {:>3} types {:>2} events {:>2} rss {:>7} KiB hwm {:>7} KiB",
                progress * 100.0,
                start.elapsed().as_secs_f64(),
                stats.structural,
                stats.runs,
                stats.moves,
                stats.panics,
                shape.entities,
                shape.slots,
                second.entities,
                second.slots,
                shape.archetypes,
                shape.components,
                harness.buffered_events(),
                rss,
                hwm
            );
            if progress >= 0.1 && warm.is_none() {
                warm = Some(WarmUp {
                    rss: rss_samples.iter().map(|&(_, r)| r).max().unwrap_or(rss),
                    components: shape.components,
                });
            }
            if let Some(warm) = &warm {
                if rss > warm.rss + warm.rss / 10 + 8 * 1024 {
                    failures.push(format!(
                        "at {:.1}%: VmRSS {rss} KiB, warm-up peak {} KiB",
                        progress * 100.0,
                        warm.rss
                    ));
                }
                if shape.components != warm.components {
                    failures.push(format!(
                        "at {:.1}%: {} registered types, {} after warm-up",
                        progress * 100.0,
                        shape.components,
                        warm.components
                    ));
                }
            }
            if shape.archetypes > MAX_ARCHETYPES + 1 {
                failures.push(format!(
                    "{} archetypes, bound {}",
                    shape.archetypes,
                    MAX_ARCHETYPES + 1
                ));
            }
        }
    }
    // A completed run ages the buffers, so they hold about two frames' worth; runs that
    // panic skip the update, and a few may come in a row: 16 frames' worth is the bound. A
    // frame sends at most 3 events from its system plus one per direct call, and removes at
    // most one entity's components per command or direct call.
    let per_frame = args.cmds + direct_per_frame as usize + 3;
    if max_events > 16 * per_frame {
        failures.push(format!("{max_events} events buffered at once"));
    }
    if max_removals > 16 * per_frame {
        failures.push(format!("{max_removals} removal log entries at once"));
    }
    let stats = harness.stats();
    let elapsed = start.elapsed().as_secs_f64();
    let shape = harness.shape();
    let (rss, hwm) = memory_kib();
    harness.check();
    harness.finish();
    println!(
        "done in {elapsed:.1}s: {} structural calls ({:.0}/s), {} schedule runs ({:.0}/s), {} ops, {} moves between worlds, {} provoked panics, {} skipped commands, {} observers added, {} observer runs, {} pairs made, {} parents set, {} despawned recursively; final live {}, slots {}, lanes {}, archetypes {}, max events buffered {max_events}, max removal log entries {max_removals}; VmRSS {rss} KiB, VmHWM {hwm} KiB; final full check passed",
        stats.structural,
        stats.structural as f64 / elapsed,
        stats.runs,
        stats.runs as f64 / elapsed,
        stats.ops,
        stats.moves,
        stats.panics,
        stats.skipped_commands,
        stats.observers_added,
        stats.observer_runs,
        stats.pairs_made,
        stats.parents_set,
        stats.despawned_recursively,
        shape.entities,
        shape.slots,
        shape.lanes,
        shape.archetypes,
    );
    if !failures.is_empty() {
        for failure in &failures {
            eprintln!("growth: {failure}");
        }
        std::process::exit(1);
    }
}

struct WarmUp {
    rss: u64,
    components: usize,
}
