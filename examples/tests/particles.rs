//! The particles example, small: the population stays bounded, emitters spawn, expired
//! particles despawn, gravity and drag are provably disjoint, and threads change nothing.

use std::collections::{HashMap, HashSet};

use tabula::schedule::ExecutorKind;
use tabula_examples::particles::{Config, DT, Lifetime, ParticleState, Particles};

const SMALL: Config = Config {
    particles: 2_000,
    emitters: 4,
    seed: 3,
};

fn run(frames: u32, threads: usize, executor: ExecutorKind) -> (Vec<ParticleState>, u64, u64) {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap();
    pool.install(|| {
        let mut sim = Particles::new(SMALL, executor);
        for _ in 0..frames {
            sim.step();
        }
        let (emitted, expired) = (sim.emitted(), sim.expired());
        (sim.snapshot(), emitted, expired)
    })
}

#[test]
fn population_stays_bounded_while_emitters_spawn_and_expired_particles_despawn() {
    let mut sim = Particles::new(SMALL, ExecutorKind::Parallel);
    assert_eq!(sim.alive(), SMALL.particles);
    for frame in 1..=30 {
        sim.step();
        let alive = sim.alive();
        assert!(
            (SMALL.particles / 2..=SMALL.particles * 2).contains(&alive),
            "frame {frame}: {alive} particles alive"
        );
        // Every particle whose life ran out last frame was despawned this frame; only those
        // that ran out during this frame's integration are left, less than a frame overdue.
        let mut lifetimes = sim.world.query::<&Lifetime>();
        let overdue = lifetimes
            .iter(&sim.world)
            .map(|l| l.remaining)
            .fold(f32::INFINITY, f32::min);
        assert!(
            overdue > -DT * 1.01,
            "frame {frame}: a particle is {overdue} s overdue"
        );
    }
    let (emitted, expired) = (sim.emitted(), sim.expired());
    assert!(emitted > 0, "emitters spawned nothing");
    assert!(expired > 0, "nothing expired");
    assert_eq!(
        sim.alive() as u64,
        SMALL.particles as u64 + emitted - expired,
        "every emitted particle was spawned and every expired one despawned"
    );
    assert!(
        sim.schedule.command_errors().is_empty(),
        "{:?}",
        sim.schedule.command_errors()
    );
}

/// The DOT graph's edges, by node label.
fn dot_edges(dot: &str) -> (HashMap<String, String>, Vec<(String, String)>) {
    let mut labels = HashMap::new();
    let mut edges = Vec::new();
    for line in dot.lines().map(str::trim) {
        if let Some((node, rest)) = line.split_once(" [label=\"") {
            let label = rest.split('"').next().unwrap();
            labels.insert(node.to_string(), label.to_string());
        } else if let Some((from, rest)) = line.split_once(" -> ") {
            let to = rest.split([' ', ';']).next().unwrap();
            edges.push((from.to_string(), to.to_string()));
        }
    }
    (labels, edges)
}

#[test]
fn gravity_and_drag_have_no_edge_and_no_path_between_them() {
    let mut sim = Particles::new(SMALL, ExecutorKind::Parallel);
    let dot = sim.schedule.graph_dot(&mut sim.world).unwrap();
    let (labels, edges) = dot_edges(&dot);
    let named: Vec<(&str, &str)> = edges
        .iter()
        .map(|(from, to)| (labels[from].as_str(), labels[to].as_str()))
        .collect();
    // Nothing reaches drag from gravity or gravity from drag: they may run at once.
    let reachable = |start: &str| {
        let mut seen = HashSet::new();
        let mut stack = vec![start];
        while let Some(node) = stack.pop() {
            for &(from, to) in &named {
                if from == node && seen.insert(to) {
                    stack.push(to);
                }
            }
        }
        seen
    };
    assert!(reachable("gravity").contains("integrate"), "{dot}");
    assert!(reachable("drag").contains("integrate"), "{dot}");
    assert!(!reachable("gravity").contains("drag"), "{dot}");
    assert!(!reachable("drag").contains("gravity"), "{dot}");
    // The two command recorders share no data, so nothing orders them (each reserves ids in
    // its own lane), and nothing makes them wait for the forces.
    assert!(
        !reachable("emit").contains("expire") && !reachable("expire").contains("emit"),
        "{dot}"
    );
    assert!(!reachable("gravity").contains("emit") && !reachable("drag").contains("expire"));
}

#[test]
fn same_result_single_threaded_and_parallel() {
    let serial = run(30, 1, ExecutorKind::SingleThreaded);
    let parallel = run(30, 4, ExecutorKind::Parallel);
    let one_thread = run(30, 1, ExecutorKind::Parallel);
    assert!(serial.1 > 0 && serial.2 > 0);
    assert_eq!(serial.1, parallel.1);
    assert_eq!(serial.2, parallel.2);
    assert!(
        serial.0 == parallel.0,
        "parallel run differs from the single-threaded one"
    );
    assert!(serial.0 == one_thread.0, "one-thread parallel run differs");
}
