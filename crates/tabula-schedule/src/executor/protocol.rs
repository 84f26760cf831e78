//! The parallel executor's coordination protocol, kept apart from rayon so loom can check it.
//!
//! Every node of the built graph has a counter of unfinished dependencies, reset at the start
//! of a run. A node is *ready* when its counter reaches zero; exactly one thread observes
//! that (the one whose `fetch_sub` took it from 1 to 0), and that thread alone decides where
//! it runs: on itself, or handed off through the [`ReadyQueue`], from which each entry is
//! taken exactly once. No lock is taken: a finished node decrements its dependents' counters
//! with release ordering, and the thread that sees zero acquires, so everything a dependency
//! wrote happens-before the dependent runs; a queue entry is published with release and
//! taken with acquire, which carries that on to whichever thread takes it.
//!
//! **Termination.** A thread that takes a node from the queue runs a *chain*: that node and
//! whatever it releases and keeps. `outstanding` counts handed-off chains: incremented before
//! a node is queued, decremented when the chain that took it runs dry. The calling thread's
//! own work is never counted, so when its own work is done and `outstanding` reads zero,
//! every node has finished, and the acquire load makes every node's effects visible to it.
//!
//! **Helpers.** Threads that take chains from the queue are rayon tasks that may start after
//! the run they were spawned for has ended. They pass the [`Gate`] first: entering succeeds
//! only during the run (epoch) they were spawned for, and the caller closes the gate, waiting
//! for helpers inside to leave, before the run's shared state goes away.
//!
//! A panic sets `aborted`; from then on no node starts (its dependents are never released;
//! queued nodes are taken and dropped), and the run ends when the nodes already running have
//! finished.

use crate::sync::{Arc, AtomicBool, AtomicU64, AtomicUsize, Backoff, Ordering};

/// The dependency structure of a built schedule, fixed between rebuilds.
#[derive(Clone, Debug, Default)]
pub struct Dependencies {
    /// For each node, how many nodes must finish before it starts.
    pub dependency_counts: Vec<usize>,
    /// For each node, the nodes that wait for it.
    pub dependents: Vec<Vec<usize>>,
}

impl Dependencies {
    /// The structure of `n` nodes joined by `edges` (`(from, to)`: `to` waits for `from`).
    #[cfg(test)]
    pub(crate) fn from_edges(n: usize, edges: &[(usize, usize)]) -> Self {
        let mut deps = Self {
            dependency_counts: vec![0; n],
            dependents: vec![Vec::new(); n],
        };
        for &(from, to) in edges {
            deps.dependents[from].push(to);
            deps.dependency_counts[to] += 1;
        }
        deps
    }

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
    /// Handed-off chains not yet finished (queued nodes plus chains being run from them).
    outstanding: AtomicUsize,
    queue: ReadyQueue,
    gate: Arc<Gate>,
}

impl RunState {
    /// Fresh counters for one run of `deps`.
    pub fn new(deps: &Dependencies) -> Self {
        let n = deps.dependency_counts.len();
        Self {
            remaining: deps
                .dependency_counts
                .iter()
                .map(|&n| AtomicUsize::new(n))
                .collect(),
            aborted: AtomicBool::new(false),
            outstanding: AtomicUsize::new(0),
            queue: ReadyQueue::new(n),
            gate: Arc::new(Gate::new()),
        }
    }

    /// Resets the counters for another run. Call only once the previous run has ended
    /// (its gate closed).
    pub fn reset(&mut self, deps: &Dependencies) {
        for (counter, &n) in self.remaining.iter_mut().zip(&deps.dependency_counts) {
            counter.store(n, Ordering::Relaxed);
        }
        self.aborted.store(false, Ordering::Relaxed);
        self.outstanding.store(0, Ordering::Relaxed);
        self.queue.reset();
    }

    /// The gate helpers pass to take part in a run.
    #[inline]
    pub fn gate(&self) -> &Arc<Gate> {
        &self.gate
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

    /// Hands a ready node to whichever thread takes it next from the queue. The node counts
    /// as outstanding until the chain that takes it calls [`finish_chain`](Self::finish_chain).
    #[inline]
    pub fn hand_off(&self, node: usize) {
        // Relaxed suffices: the taker's decrement comes after its acquiring `take`, which
        // comes after this increment, so the increment precedes it in modification order.
        self.outstanding.fetch_add(1, Ordering::Relaxed);
        self.queue.push(node);
    }

    /// Takes a handed-off node; the caller then owns one outstanding chain.
    #[inline]
    pub fn take(&self) -> Option<usize> {
        self.queue.pop()
    }

    /// True when the queue may hold a node (a helper checks this before it leaves).
    #[inline]
    pub fn may_have_queued(&self) -> bool {
        self.queue.may_have_items()
    }

    /// Ends a chain started by [`take`](Self::take); true when it was the last outstanding
    /// one (the caller should then wake the thread waiting for the run to settle).
    #[inline]
    pub fn finish_chain(&self) -> bool {
        self.outstanding.fetch_sub(1, Ordering::AcqRel) == 1
    }

    /// True when no handed-off chain is queued or running. Acquire: the effects of every
    /// finished chain are visible to the caller.
    #[inline]
    pub fn is_settled(&self) -> bool {
        self.outstanding.load(Ordering::Acquire) == 0
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

/// The nodes handed off during one run: an append-only array, one slot per node (a node is
/// readied once per run), taken in order, each exactly once.
#[derive(Debug)]
pub struct ReadyQueue {
    /// `node + 1`; 0 while a pusher has reserved the slot but not yet written it.
    slots: Box<[AtomicUsize]>,
    /// Slots reserved by pushers.
    len: AtomicUsize,
    /// Slots taken by poppers.
    head: AtomicUsize,
}

impl ReadyQueue {
    /// A queue for a run of `capacity` nodes.
    pub fn new(capacity: usize) -> Self {
        Self {
            slots: (0..capacity).map(|_| AtomicUsize::new(0)).collect(),
            len: AtomicUsize::new(0),
            head: AtomicUsize::new(0),
        }
    }

    /// Appends `node`. At most `capacity` pushes per run.
    #[inline]
    pub fn push(&self, node: usize) {
        let index = self.len.fetch_add(1, Ordering::AcqRel);
        // Release: the popper that reads this slot sees everything the pusher did before.
        self.slots[index].store(node + 1, Ordering::Release);
    }

    /// Takes the oldest node not yet taken. `None` when there is none, or when the oldest
    /// slot is reserved but not yet written (its pusher then still has to notify a taker).
    #[inline]
    pub fn pop(&self) -> Option<usize> {
        let mut head = self.head.load(Ordering::Acquire);
        loop {
            if head >= self.len.load(Ordering::Acquire) {
                return None;
            }
            let value = self.slots[head].load(Ordering::Acquire);
            if value == 0 {
                return None;
            }
            match self
                .head
                .compare_exchange(head, head + 1, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return Some(value - 1),
                Err(current) => head = current,
            }
        }
    }

    /// True when a push has not been popped yet (possibly still being written).
    #[inline]
    pub fn may_have_items(&self) -> bool {
        self.head.load(Ordering::Acquire) < self.len.load(Ordering::Acquire)
    }

    /// Empties the queue for the next run (no pusher or popper may be active).
    pub fn reset(&mut self) {
        let len = self.len.load(Ordering::Relaxed).min(self.slots.len());
        for slot in &self.slots[..len] {
            slot.store(0, Ordering::Relaxed);
        }
        self.len.store(0, Ordering::Relaxed);
        self.head.store(0, Ordering::Relaxed);
    }
}

/// Admits helpers to one run at a time: the state is `epoch << INSIDE_BITS | inside`.
///
/// A helper spawned for run `epoch` [`enter`](Self::enter)s before touching the run's shared
/// state, and [`leave`](Self::leave)s when done with it. The calling thread
/// [`close`](Self::close)s the run's epoch once its work has settled: that waits for the
/// helpers inside to leave and moves to the next epoch, so helpers that start late fail to
/// enter and never see the (by then dropped) state.
#[derive(Debug)]
pub struct Gate {
    state: AtomicU64,
}

const INSIDE_BITS: u32 = 24;
const INSIDE_MASK: u64 = (1 << INSIDE_BITS) - 1;

impl Default for Gate {
    fn default() -> Self {
        Self::new()
    }
}

impl Gate {
    /// A gate open for epoch 0.
    pub fn new() -> Self {
        Self {
            state: AtomicU64::new(0),
        }
    }

    /// The epoch currently open (only the thread that closes epochs may rely on it).
    #[inline]
    pub fn epoch(&self) -> u64 {
        self.state.load(Ordering::Relaxed) >> INSIDE_BITS
    }

    /// Enters the run of `epoch`; false when that run has ended.
    pub fn enter(&self, epoch: u64) -> bool {
        let mut state = self.state.load(Ordering::Acquire);
        loop {
            if state >> INSIDE_BITS != epoch {
                return false;
            }
            debug_assert!(state & INSIDE_MASK < INSIDE_MASK, "too many helpers inside");
            match self
                .state
                .compare_exchange(state, state + 1, Ordering::Acquire, Ordering::Acquire)
            {
                Ok(_) => return true,
                Err(current) => state = current,
            }
        }
    }

    /// Leaves the run entered with [`enter`](Self::enter). Release: everything the helper
    /// did inside happens-before the close that waits for it.
    pub fn leave(&self) {
        self.state.fetch_sub(1, Ordering::Release);
    }

    /// Ends `epoch` (the one open): waits until no helper is inside, then opens the next.
    pub fn close(&self, epoch: u64) {
        let open = epoch << INSIDE_BITS;
        let next = (epoch + 1) << INSIDE_BITS;
        let backoff = Backoff::new();
        while self
            .state
            .compare_exchange(open, next, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            backoff.snooze();
        }
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
        Dependencies::from_edges(n, edges)
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

    // -----------------------------------------------------------------------------------
    // The ready queue, the outstanding count and the gate.

    #[test]
    fn loom_queue_gives_each_node_to_exactly_one_taker() {
        let mut model = loom::model::Builder::new();
        model.preemption_bound.get_or_insert(3);
        model.check(|| {
            let queue = Arc::new(ReadyQueue::new(3));
            let pusher = {
                let queue = queue.clone();
                loom::thread::spawn(move || {
                    queue.push(1);
                    queue.push(2);
                })
            };
            let taker = {
                let queue = queue.clone();
                loom::thread::spawn(move || (0..2).filter_map(|_| queue.pop()).collect::<Vec<_>>())
            };
            queue.push(0);
            let mut taken = queue.pop().into_iter().collect::<Vec<_>>();
            pusher.join().unwrap();
            taken.extend(taker.join().unwrap());
            while let Some(node) = queue.pop() {
                taken.push(node);
            }
            taken.sort_unstable();
            assert_eq!(taken, [0, 1, 2]);
            assert!(!queue.may_have_items());
        });
    }

    #[test]
    fn loom_gate_keeps_the_run_alive_for_helpers_inside_and_shuts_out_late_ones() {
        use loom::cell::UnsafeCell;
        loom::model(|| {
            // Stands for the run's shared state: the caller "drops" it (writes) after closing.
            let run = Arc::new(UnsafeCell::new(0_u32));
            let gate = Arc::new(Gate::new());
            let epoch = gate.epoch();
            let helper = {
                let (gate, run) = (gate.clone(), run.clone());
                loom::thread::spawn(move || {
                    if gate.enter(epoch) {
                        // SAFETY (model): inside the gate the run is alive and only read.
                        let value = run.with(|v| unsafe { *v });
                        gate.leave();
                        Some(value)
                    } else {
                        None
                    }
                })
            };
            gate.close(epoch);
            // The run's state goes away: a race with a helper still inside would be reported.
            // SAFETY (model): the gate is closed, so no helper is inside.
            run.with_mut(|v| unsafe { *v = 1 });
            assert!(!gate.enter(epoch), "a closed epoch admits nobody");
            assert_eq!(gate.epoch(), epoch + 1);
            assert!(matches!(helper.join().unwrap(), None | Some(0)));
        });
    }

    /// One run of `deps` by the calling thread and one helper thread, as the parallel
    /// executor does it: every node handed off or kept, taken from the queue by either side,
    /// the caller waiting for `outstanding` to settle. Each node writes its own cell and reads
    /// its dependencies' cells, so a missing happens-before is a reported data race.
    fn run_with_helper(n: usize, edges: &'static [(usize, usize)], hand_off_roots: &'static [usize]) {
        use loom::cell::UnsafeCell;

        struct Run {
            deps: Dependencies,
            state: RunState,
            cells: Vec<UnsafeCell<u32>>,
            runs: Vec<LoomCounter>,
        }

        impl Run {
            fn run_node(&self, node: usize) {
                for (from, dependents) in self.deps.dependents.iter().enumerate() {
                    if dependents.contains(&node) {
                        // SAFETY (model): dependencies finished before `node` was released.
                        let value = self.cells[from].with(|v| unsafe { *v });
                        assert_eq!(value, 1, "node {node} started before {from} finished");
                    }
                }
                // SAFETY (model): the protocol gives `node` to this thread alone.
                self.cells[node].with_mut(|v| unsafe { *v += 1 });
                self.runs[node].fetch_add(1, Ordering::Relaxed);
            }

            /// A chain: the node, then what it releases (the first kept, the rest handed off).
            fn chain(&self, first: usize) {
                let mut next = Some(first);
                while let Some(node) = next.take() {
                    self.run_node(node);
                    self.state.complete(&self.deps, node, |ready| {
                        if next.is_none() {
                            next = Some(ready);
                        } else {
                            self.state.hand_off(ready);
                        }
                    });
                }
            }
        }

        // Two threads with wait loops: bound the preemptions explored (loom's own advice for
        // models of this size) unless LOOM_MAX_PREEMPTIONS says otherwise.
        let mut model = loom::model::Builder::new();
        model.preemption_bound.get_or_insert(3);
        model.check(move || {
            let deps = graph(n, edges);
            let run = Arc::new(Run {
                state: RunState::new(&deps),
                deps,
                cells: (0..n).map(|_| UnsafeCell::new(0)).collect(),
                runs: (0..n).map(|_| LoomCounter::new(0)).collect(),
            });
            let epoch = run.state.gate().epoch();
            // The caller places the roots: some handed off, the others run by itself.
            let own: Vec<usize> = run
                .deps
                .roots()
                .filter(|root| !hand_off_roots.contains(root))
                .collect();
            for &root in hand_off_roots {
                run.state.hand_off(root);
            }
            let helper = {
                let run = run.clone();
                loom::thread::spawn(move || {
                    let gate = run.state.gate().clone();
                    if gate.enter(epoch) {
                        while let Some(node) = run.state.take() {
                            run.chain(node);
                            run.state.finish_chain();
                        }
                        gate.leave();
                    }
                })
            };
            for root in own {
                run.chain(root);
            }
            let backoff = Backoff::new();
            loop {
                if let Some(node) = run.state.take() {
                    run.chain(node);
                    run.state.finish_chain();
                } else if run.state.is_settled() {
                    break;
                } else {
                    backoff.snooze();
                }
            }
            run.state.gate().close(epoch);
            // Settled: every node ran exactly once and its effects are visible here.
            for node in 0..n {
                // SAFETY (model): the run has settled; nothing else touches the cells.
                assert_eq!(run.cells[node].with(|v| unsafe { *v }), 1, "node {node}");
                assert_eq!(run.runs[node].load(Ordering::Relaxed), 1);
            }
            helper.join().unwrap();
        });
    }

    #[test]
    fn loom_run_with_helper_diamond() {
        // 0 -> {1, 2} -> 3: 0 releases both; one is kept, the other handed off.
        run_with_helper(4, &[(0, 1), (0, 2), (1, 3), (2, 3)], &[]);
    }

    #[test]
    fn loom_run_with_helper_handed_off_roots_join() {
        // {0, 1} -> 2: root 1 handed off, root 0 run by the caller; whoever finishes last
        // runs 2.
        run_with_helper(3, &[(0, 2), (1, 2)], &[1]);
    }
}
