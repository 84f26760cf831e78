//! The parallel executor's plan: which nodes are worth a thread of their own, which one a
//! thread keeps when it releases several, and how a run starts.
//!
//! Each node gets a *rank*: its own sampled cost plus the highest rank among its dependents,
//! i.e. the length of the longest chain of work that hangs off it (the "upward rank" of list
//! schedulers). Ranking by chain rather than by node matters when a chain of cheap systems
//! adds up: in the three-swap `schedule` bench, `swap_cd` and `swap_ce` take ~1.4 us each but
//! are ordered one after the other, so the chain that starts at `swap_cd` is as much work as
//! half of `swap_ab` and worth a helper, while `swap_ab` (the highest rank) stays on the
//! calling thread.
//!
//! * A node whose rank is below [`INLINE_BELOW_NS`] runs inline on the thread that releases
//!   it (a hand-off would cost about as much); so do exclusive systems and sync points, which
//!   run alone anyway.
//! * Of the others, a thread that releases several keeps the one of highest rank and hands off
//!   the rest.
//! * The start of a run is decided here once, not on every run: the roots to hand off (highest
//!   rank first, so a helper takes the most urgent work first), and the roots the calling
//!   thread runs itself, in order.
//!
//! * When every node runs inline, nothing would leave the calling thread: the schedule then
//!   walks the order with the single-threaded executor instead, which skips the dependency
//!   counters (see [`Plan::runs_all_inline`]).
//!
//! Ranks only change when costs are sampled, so the schedule marks the plan stale after a
//! sampled run and the next parallel run refreshes it; other runs only read it.

use super::{INLINE_BELOW_NS, Node, SystemSlot};
use crate::graph::Built;

/// Where the nodes of a built schedule run; see the [module docs](self).
#[derive(Debug, Default)]
pub(crate) struct Plan {
    /// Each node's own cost plus the highest rank of its dependents (ns, saturating).
    rank: Vec<u64>,
    /// True for nodes that run on the thread that released them.
    inline: Vec<bool>,
    /// Roots queued for helpers before the calling thread starts, highest rank first.
    hand_off_roots: Vec<usize>,
    /// Roots the calling thread runs itself, in this order.
    own_roots: Vec<usize>,
    /// Every node runs inline.
    all_inline: bool,
    /// Costs were sampled since the plan was made.
    stale: bool,
}

impl Plan {
    /// A plan that will be made on the first run.
    pub(crate) fn new() -> Self {
        Self {
            stale: true,
            ..Self::default()
        }
    }

    /// Asks for the plan to be remade before the next parallel run (costs were sampled).
    #[inline]
    pub(crate) fn mark_stale(&mut self) {
        self.stale = true;
    }

    /// The node's rank (see the [module docs](self)).
    #[inline]
    pub(crate) fn rank(&self, node: usize) -> u64 {
        self.rank[node]
    }

    /// True when the node runs on the thread that released it.
    #[inline]
    pub(crate) fn runs_inline(&self, node: usize) -> bool {
        self.inline[node]
    }

    /// True when every node runs on the thread that released it, so that a run never leaves
    /// the calling thread: the schedule then runs the single-threaded walk of the order,
    /// which does the same work without the dependency counters. In `sched_scale`
    /// (`benches/benches/schedule.rs`: 1 to 6,000 trivial systems, independent or half
    /// chained; games have many small systems), the counters made a parallel run cost 7–47%
    /// more than a single-threaded one.
    #[inline]
    pub(crate) fn runs_all_inline(&self) -> bool {
        self.all_inline
    }

    /// Roots to hand off before the calling thread starts, highest rank first.
    #[inline]
    pub(crate) fn hand_off_roots(&self) -> &[usize] {
        &self.hand_off_roots
    }

    /// Roots the calling thread runs, in order.
    #[inline]
    pub(crate) fn own_roots(&self) -> &[usize] {
        &self.own_roots
    }

    /// Remakes the plan from the slots' sampled costs if they changed since it was made.
    pub(crate) fn refresh(&mut self, slots: &[SystemSlot], nodes: &[Node], built: &Built) {
        if !self.stale {
            return;
        }
        self.stale = false;
        self.make(built, |node| node_cost(slots, nodes, node));
    }

    /// Makes the plan for `built`, given each node's cost and whether it is exclusive.
    fn make(&mut self, built: &Built, cost_of: impl Fn(usize) -> (u64, bool)) {
        let n = built.order.len();
        self.rank.clear();
        self.rank.resize(n, 0);
        self.inline.clear();
        self.inline.resize(n, true);
        // Dependents come later in the topological order: rank them first.
        for &node in built.order.iter().rev() {
            let (cost, exclusive) = cost_of(node);
            let tail = built.deps.dependents[node]
                .iter()
                .map(|&d| self.rank[d])
                .max()
                .unwrap_or(0);
            let rank = cost.saturating_add(tail);
            self.rank[node] = rank;
            self.inline[node] = exclusive || rank < INLINE_BELOW_NS;
        }

        self.all_inline = self.inline.iter().all(|&inline| inline);

        // The start of a run.
        self.hand_off_roots.clear();
        self.own_roots.clear();
        let mut inline_ns = 0_u64;
        for root in built.deps.roots() {
            if self.inline[root] {
                self.own_roots.push(root);
                inline_ns = inline_ns.saturating_add(self.rank[root]);
            } else {
                self.hand_off_roots.push(root);
            }
        }
        // Highest rank first; ties in index order (the sort is stable).
        let rank = &self.rank;
        self.hand_off_roots
            .sort_by_key(|&root| std::cmp::Reverse(rank[root]));
        // The calling thread keeps the highest-ranked root, after its inline roots, unless
        // those take long enough that a helper should start it instead (the caller takes it
        // back from the queue if no helper has by the time the caller is free).
        if !self.hand_off_roots.is_empty() && inline_ns < INLINE_BELOW_NS {
            self.own_roots.push(self.hand_off_roots.remove(0));
        }
    }
}

/// A node's cost for ranking (ns) and whether it runs exclusively. Sync points and
/// `apply_deferred` nodes only apply commands, on the calling thread between other nodes, and
/// are never sampled: they count as free, so what runs before them is ranked by its own
/// cost (an unsampled cost would rank everything upstream as heavy for good).
fn node_cost(slots: &[SystemSlot], nodes: &[Node], node: usize) -> (u64, bool) {
    let exclusive = nodes[node].is_exclusive(slots);
    match nodes[node] {
        Node::System(index) if !slots[index].is_apply_deferred => (slots[index].cost_ns(), exclusive),
        _ => (0, exclusive),
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::executor::protocol::Dependencies;

    /// A plan for `costs` (ns; `None` for an exclusive node of cost 0) and `edges`, whose
    /// nodes are in topological order already.
    fn plan_for(costs: &[Option<u64>], edges: &[(usize, usize)]) -> Plan {
        let n = costs.len();
        let deps = Dependencies::from_edges(n, edges);
        let built = Built {
            order: (0..n).collect(),
            deps,
            ..Built::default()
        };
        let mut plan = Plan::new();
        plan.make(&built, |node| costs[node].map_or((0, true), |cost| (cost, false)));
        plan
    }

    #[test]
    fn a_chain_of_cheap_systems_is_worth_a_helper_and_the_longest_root_stays() {
        // The `schedule` bench: swap_ab alone; swap_cd -> swap_ce.
        let plan = plan_for(&[Some(5_600), Some(1_400), Some(1_400)], &[(1, 2)]);
        assert_eq!(plan.rank, [5_600, 2_800, 1_400]);
        assert_eq!(plan.own_roots(), [0]);
        assert_eq!(plan.hand_off_roots(), [1]);
        assert!(!plan.runs_inline(1));
        assert!(plan.runs_inline(2));
    }

    #[test]
    fn cheap_roots_run_inline_before_the_kept_one_unless_they_add_up() {
        // Two cheap roots (300 ns together) and two heavy ones: the caller runs the cheap
        // ones, then keeps the highest-ranked; the other goes to a helper.
        let plan = plan_for(&[Some(100), Some(9_000), Some(200), Some(20_000)], &[]);
        assert_eq!(plan.own_roots(), [0, 2, 3]);
        assert_eq!(plan.hand_off_roots(), [1]);
        // Cheap roots that add up to more than a hand-off: every heavy root goes to helpers,
        // highest rank first (the caller takes them back if no helper has).
        let plan = plan_for(&[Some(1_500), Some(9_000), Some(1_500), Some(20_000)], &[]);
        assert_eq!(plan.own_roots(), [0, 2]);
        assert_eq!(plan.hand_off_roots(), [3, 1]);
    }

    #[test]
    fn exclusive_nodes_run_inline_and_unsampled_systems_count_as_heavy() {
        // 0 -> sync (exclusive) -> 2; system 1 was never sampled.
        let plan = plan_for(
            &[Some(10), None, Some(u64::MAX), Some(u64::MAX)],
            &[(0, 1), (1, 2)],
        );
        assert!(plan.runs_inline(1));
        assert_eq!(plan.rank(0), u64::MAX);
        assert!(!plan.runs_inline(0));
        assert_eq!(plan.own_roots(), [0]);
        assert_eq!(plan.hand_off_roots(), [3]);
    }

    #[test]
    fn apply_deferred_counts_as_free_so_cheap_systems_before_it_stay_inline() {
        use crate::access::SystemAccess;
        use crate::system::{IntoSystem, apply_deferred};
        fn tiny() {}
        // tiny -> apply_deferred; tiny has been sampled at 100 ns, apply_deferred never is.
        let mut tiny_slot =
            SystemSlot::new(Box::new(tiny.into_system()), Vec::new(), SystemAccess::default());
        tiny_slot.cost_ns = 100;
        let apply = SystemSlot::new(
            Box::new(apply_deferred.into_system()),
            Vec::new(),
            SystemAccess::default(),
        );
        let slots = [tiny_slot, apply];
        let nodes = [Node::System(0), Node::System(1)];
        assert_eq!(node_cost(&slots, &nodes, 1), (0, true));
        assert_eq!(node_cost(&slots, &nodes, 0), (100, false));
        let built = Built {
            order: vec![0, 1],
            deps: Dependencies::from_edges(2, &[(0, 1)]),
            ..Built::default()
        };
        let mut plan = Plan::new();
        plan.refresh(&slots, &nodes, &built);
        assert_eq!(plan.rank(0), 100);
        assert!(plan.runs_inline(0));
        assert_eq!(plan.own_roots(), [0]);
    }

    #[test]
    fn all_cheap_roots_stay_on_the_caller() {
        let plan = plan_for(&[Some(50); 5], &[(0, 1)]);
        assert_eq!(plan.own_roots(), [0, 2, 3, 4]);
        assert!(plan.hand_off_roots().is_empty());
        assert!(plan.runs_all_inline());
    }

    #[test]
    fn one_node_worth_a_thread_keeps_the_parallel_run() {
        let plan = plan_for(&[Some(50), Some(50), Some(5_000)], &[(0, 1)]);
        assert!(!plan.runs_all_inline());
        // Before any sample, every system counts as heavy.
        let plan = plan_for(&[Some(50), Some(u64::MAX)], &[]);
        assert!(!plan.runs_all_inline());
    }
}
