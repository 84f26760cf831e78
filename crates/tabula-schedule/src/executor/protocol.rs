//! The parallel executor's coordination protocol, kept apart from rayon so loom can check it.
//!
//! Every node of the built graph has a counter of unfinished dependencies, reset at the start
//! of a run. A node is *ready* when its counter reaches zero; exactly one thread observes
//! that (the one whose `fetch_sub` took it from 1 to 0), and that thread alone starts it. No
//! lock is taken: a finished node decrements its dependents' counters with release ordering,
//! and the thread that sees zero acquires, so everything a dependency wrote happens-before
//! the dependent runs.
//!
//! A panic sets `aborted`; from then on no node starts (its dependents are never released),
//! and the run ends when the nodes already running have finished.

use crate::sync::{AtomicBool, AtomicUsize, Ordering};

/// The dependency structure of a built schedule, fixed between rebuilds.
#[derive(Clone, Debug, Default)]
pub struct Dependencies {
    /// For each node, how many nodes must finish before it starts.
    pub dependency_counts: Vec<usize>,
    /// For each node, the nodes that wait for it.
    pub dependents: Vec<Vec<usize>>,
}

impl Dependencies {
    /// The nodes with no dependencies, in index order.
    pub fn roots(&self) -> impl Iterator<Item = usize> + '_ {
        self.dependency_counts
            .iter()
            .enumerate()
            .filter(|&(_, &n)| n == 0)
            .map(|(i, _)| i)
    }
}

/// The per-run state of the protocol.
#[derive(Debug)]
pub struct RunState {
    remaining: Box<[AtomicUsize]>,
    aborted: AtomicBool,
}

impl RunState {
    /// Fresh counters for one run of `deps`.
    pub fn new(deps: &Dependencies) -> Self {
        Self {
            remaining: deps
                .dependency_counts
                .iter()
                .map(|&n| AtomicUsize::new(n))
                .collect(),
            aborted: AtomicBool::new(false),
        }
    }

    /// Resets the counters for another run.
    pub fn reset(&mut self, deps: &Dependencies) {
        for (counter, &n) in self.remaining.iter_mut().zip(&deps.dependency_counts) {
            counter.store(n, Ordering::Relaxed);
        }
        self.aborted.store(false, Ordering::Relaxed);
    }

    /// Records that `node` finished and calls `ready` for every dependent it released, in
    /// index order. Release/acquire on the counters orders the finished node's effects before
    /// whatever runs the dependent.
    #[inline]
    pub fn complete(&self, deps: &Dependencies, node: usize, mut ready: impl FnMut(usize)) {
        for &dependent in &deps.dependents[node] {
            if self.remaining[dependent].fetch_sub(1, Ordering::AcqRel) == 1 {
                ready(dependent);
            }
        }
    }

    /// Stops the run from starting more nodes (after a panic).
    pub fn abort(&self) {
        self.aborted.store(true, Ordering::Release);
    }

    /// True once a node has panicked: nothing more may start.
    #[inline]
    pub fn is_aborted(&self) -> bool {
        self.aborted.load(Ordering::Acquire)
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    //! Model checks of the protocol on small graphs. Each ready node beyond the first is run
    //! on a new loom thread (rayon would spawn a task); the first runs inline (rayon's
    //! continuation), which covers both ways the executor starts a node.

    use super::*;
    use loom::sync::Arc;
    use loom::sync::atomic::AtomicUsize as LoomCounter;

    struct Harness {
        deps: Dependencies,
        state: RunState,
        runs: Vec<LoomCounter>,
        finished: Vec<AtomicBool>,
        panics_at: Option<usize>,
    }

    fn graph(n: usize, edges: &[(usize, usize)]) -> Dependencies {
        let mut deps = Dependencies {
            dependency_counts: vec![0; n],
            dependents: vec![Vec::new(); n],
        };
        for &(from, to) in edges {
            deps.dependents[from].push(to);
            deps.dependency_counts[to] += 1;
        }
        deps
    }

    fn run_node(h: &Arc<Harness>, node: usize) {
        if h.state.is_aborted() {
            return;
        }
        // Every dependency must have finished, and its effects be visible, before we start.
        for (from, dependents) in h.deps.dependents.iter().enumerate() {
            if dependents.contains(&node) {
                assert!(
                    h.finished[from].load(Ordering::Relaxed),
                    "node {node} started before {from}"
                );
            }
        }
        h.runs[node].fetch_add(1, Ordering::Relaxed);
        if h.panics_at == Some(node) {
            h.state.abort();
            return;
        }
        h.finished[node].store(true, Ordering::Relaxed);
        let mut ready = Vec::new();
        h.state.complete(&h.deps, node, |d| ready.push(d));
        let mut threads = Vec::new();
        let mut ready = ready.into_iter();
        let inline = ready.next();
        for d in ready {
            let h = h.clone();
            threads.push(loom::thread::spawn(move || run_node(&h, d)));
        }
        if let Some(d) = inline {
            run_node(h, d);
        }
        for t in threads {
            t.join().unwrap();
        }
    }

    fn check(
        n: usize,
        edges: &'static [(usize, usize)],
        panics_at: Option<usize>,
        expect_runs: &'static [usize],
    ) {
        loom::model(move || {
            let deps = graph(n, edges);
            let h = Arc::new(Harness {
                state: RunState::new(&deps),
                deps,
                runs: (0..n).map(|_| LoomCounter::new(0)).collect(),
                finished: (0..n).map(|_| AtomicBool::new(false)).collect(),
                panics_at,
            });
            let roots: Vec<usize> = h.deps.roots().collect();
            let threads: Vec<_> = roots
                .into_iter()
                .map(|r| {
                    let h = h.clone();
                    loom::thread::spawn(move || run_node(&h, r))
                })
                .collect();
            for t in threads {
                t.join().unwrap();
            }
            let runs: Vec<usize> = h.runs.iter().map(|r| r.load(Ordering::Relaxed)).collect();
            assert_eq!(runs, expect_runs);
        });
    }

    #[test]
    fn loom_diamond_runs_each_node_once_in_order() {
        // 0 -> {1, 2} -> 3
        check(4, &[(0, 1), (0, 2), (1, 3), (2, 3)], None, &[1, 1, 1, 1]);
    }

    #[test]
    fn loom_fan_out() {
        // 0 -> {1, 2, 3}
        check(4, &[(0, 1), (0, 2), (0, 3)], None, &[1, 1, 1, 1]);
    }

    #[test]
    fn loom_two_roots_join() {
        // {0, 1} -> 2: whichever root finishes last releases 2, exactly once.
        check(3, &[(0, 2), (1, 2)], None, &[1, 1, 1]);
    }

    #[test]
    fn loom_panic_in_one_branch_stops_its_dependents_without_deadlock() {
        // 0 -> {1, 2}; 1 -> 3; 2 -> 3. Node 1 panics: 3 never runs; 2 may or may not start
        // (it races with the abort), so it is checked separately below.
        loom::model(|| {
            let deps = graph(4, &[(0, 1), (0, 2), (1, 3), (2, 3)]);
            let h = Arc::new(Harness {
                state: RunState::new(&deps),
                deps,
                runs: (0..4).map(|_| LoomCounter::new(0)).collect(),
                finished: (0..4).map(|_| AtomicBool::new(false)).collect(),
                panics_at: Some(1),
            });
            run_node(&h, 0);
            let runs: Vec<usize> = h.runs.iter().map(|r| r.load(Ordering::Relaxed)).collect();
            assert_eq!((runs[0], runs[1], runs[3]), (1, 1, 0));
            assert!(runs[2] <= 1);
            assert!(h.state.is_aborted());
        });
    }
}
