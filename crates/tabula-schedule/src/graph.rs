//! Building the dependency graph of a schedule.
//!
//! 1. **Explicit edges** come from `before` / `after` / `chain` / set ordering. A cycle among
//!    them is a [`ScheduleBuildError`] naming the systems on it.
//! 2. **Order**: a topological order of the explicit edges that otherwise keeps the order the
//!    systems were added (Kahn's algorithm always taking the earliest-added ready node).
//! 3. **Conflict edges**: every two systems whose accesses conflict are ordered along that one
//!    order. Only pairs that could conflict are compared (they share a component or resource
//!    one of them writes, or one side is exclusive or reads the whole world), found through
//!    an index by id, so that a schedule of many systems touching different data builds in
//!    about linear time rather than comparing every pair. Orienting every edge along a single topological order can never close a cycle,
//!    and it means two conflicting systems always run in the same order — the outcome of a
//!    run never depends on thread timing.
//! 4. **Transitive reduction** drops edges implied by others, so the executor decrements as
//!    few counters as possible and the DOT output stays readable.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fmt;

use fixedbitset::FixedBitSet;

use crate::access::SystemAccess;
use crate::executor::protocol::Dependencies;

/// Why a schedule could not be built.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ScheduleBuildError {
    /// The explicit ordering has a cycle; the systems on it, in order.
    Cycle(Vec<String>),
    /// An ordering constraint puts `system` before itself: `system` is (or is in) both
    /// `before`, which must run first, and `after` (each a system or a set).
    OrderedBeforeItself {
        /// The system that would have to run before itself.
        system: String,
        /// The side of the constraint that runs first.
        before: String,
        /// The side of the constraint that runs after it.
        after: String,
    },
    /// A run condition would change the world. Conditions only read: what a condition
    /// recorded would never be applied, and its writes would race with the systems.
    ConditionWrites {
        /// The condition's name.
        condition: String,
        /// The system (or sync point) it guards.
        system: String,
        /// What it would write.
        write: ConditionWrite,
    },
}

/// What a refused run condition would write (see [`ScheduleBuildError::ConditionWrites`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConditionWrite {
    /// It takes `Commands` or `ParallelCommands`.
    Commands,
    /// It writes components or resources (`&mut T`, `ResMut`, `EventWriter`, `&mut World`).
    World,
}

impl fmt::Display for ScheduleBuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Cycle(names) => write!(
                f,
                "the schedule's ordering has a cycle: {} -> {} (each must run before the next); remove one \
                 of these `before`/`after`/`chain` constraints",
                names.join(" -> "),
                names[0]
            ),
            Self::OrderedBeforeItself {
                system,
                before,
                after,
            } => write!(
                f,
                "`{system}` would have to run before itself: `{before}` is ordered before `{after}`, \
                 and `{system}` is in both; remove that constraint or take `{system}` out of one of them"
            ),
            Self::ConditionWrites {
                condition,
                system,
                write: ConditionWrite::Commands,
            } => write!(
                f,
                "run condition `{condition}` of `{system}` records commands (it takes `Commands` or \
                 `ParallelCommands`), which a condition's run never applies; conditions may only read. \
                 Record the commands in `{system}` itself, or in a system ordered before it"
            ),
            Self::ConditionWrites {
                condition,
                system,
                write: ConditionWrite::World,
            } => write!(
                f,
                "run condition `{condition}` of `{system}` writes to the world; conditions may only read \
                 (take `Res`, not `ResMut`; no `&mut` query terms, `EventWriter` or `&mut World`). Make the \
                 change in `{system}` itself, or in a system ordered before it"
            ),
        }
    }
}

impl std::error::Error for ScheduleBuildError {}

/// Why an edge exists.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EdgeKind {
    /// Asked for with `before` / `after` / `chain` / sets.
    Explicit,
    /// Added because the two conflict, in the order they were added.
    Conflict,
}

/// A built graph: the order, the reduced edges and the executor's dependency counts.
#[derive(Clone, Debug, Default)]
pub struct Built {
    /// The deterministic topological order (node indices).
    pub order: Vec<usize>,
    /// Reduced edges `(from, to, kind)`.
    pub edges: Vec<(usize, usize, EdgeKind)>,
    /// Dependency counts and dependents, from the reduced edges.
    pub deps: Dependencies,
    /// The slots of the systems that declared deferred work (commands), in the order of
    /// `order`: the order their buffers are applied in, so that commands apply in the order
    /// they were recorded. Filled in by the schedule, which knows which node is which slot.
    pub apply_order: Vec<usize>,
    /// Longest-path depth of each node: nodes of one depth have no path between them.
    pub level: Vec<usize>,
}

/// Builds the graph of `n` nodes, given in the order they were added.
pub fn build(
    names: &[String],
    access: &[&SystemAccess],
    explicit: &[(usize, usize)],
) -> Result<Built, ScheduleBuildError> {
    let n = names.len();
    let mut successors: Vec<Vec<usize>> = vec![Vec::new(); n];
    for &(from, to) in explicit {
        if from == to {
            return Err(ScheduleBuildError::Cycle(vec![names[from].clone()]));
        }
        successors[from].push(to);
    }
    for list in &mut successors {
        list.sort_unstable();
        list.dedup();
    }
    let order = topological_order(&successors).map_err(|stuck| cycle(names, &successors, &stuck))?;
    let mut position = vec![0; n];
    for (pos, &node) in order.iter().enumerate() {
        position[node] = pos;
    }

    // Conflict edges, oriented along `order`.
    let mut kinds: Vec<Vec<(usize, EdgeKind)>> = successors
        .iter()
        .map(|s| s.iter().map(|&to| (to, EdgeKind::Explicit)).collect())
        .collect();
    let mut candidates = ConflictCandidates::new(&order, access);
    let mut later = Vec::new();
    for (i, &a) in order.iter().enumerate() {
        candidates.after(i, &mut later);
        for &pos in &later {
            let b = order[pos];
            if access[a].conflicts_with(access[b]) && !kinds[a].iter().any(|&(to, _)| to == b) {
                kinds[a].push((b, EdgeKind::Conflict));
            }
        }
    }

    // Transitive reduction, in reverse topological order.
    // A node without dependents reaches nothing and keeps an empty set: no n-bit set is
    // allocated for it, so independent systems cost no quadratic memory here.
    let mut reach: Vec<FixedBitSet> = vec![FixedBitSet::new(); n];
    let mut edges = Vec::new();
    for &node in order.iter().rev() {
        let mut out = std::mem::take(&mut kinds[node]);
        if out.is_empty() {
            continue;
        }
        out.sort_unstable_by_key(|&(to, _)| position[to]);
        let mut reached = FixedBitSet::with_capacity(n);
        for (to, kind) in out {
            if reached.contains(to) {
                continue;
            }
            reached.insert(to);
            reached.union_with(&reach[to]);
            edges.push((node, to, kind));
        }
        reach[node] = reached;
    }
    edges.sort_unstable_by_key(|&(from, to, _)| (position[from], position[to]));

    let mut deps = Dependencies {
        dependency_counts: vec![0; n],
        dependents: vec![Vec::new(); n],
    };
    let mut level = vec![0; n];
    for &(from, to, _) in &edges {
        deps.dependents[from].push(to);
        deps.dependency_counts[to] += 1;
    }
    for &node in &order {
        for &to in &deps.dependents[node] {
            level[to] = level[to].max(level[node] + 1);
        }
    }
    Ok(Built {
        order,
        edges,
        deps,
        level,
        apply_order: Vec::new(),
    })
}

/// Which pairs of nodes could conflict, by position in the order: an index from each
/// component or resource id to the positions that touch it and those that write it, plus the
/// positions with a blunt access (exclusive, `&World`, or writing anything at all).
///
/// Comparing every pair made the build quadratic: 6,000 trivial systems took 54 times as long
/// to build as 1,000, 2.9 s against 54 ms (`sched_scale/build` in
/// `benches/benches/schedule.rs`). A candidate is
/// still checked with [`SystemAccess::conflicts_with`], so the edges are exactly those of the
/// pairwise comparison.
struct ConflictCandidates<'a> {
    access: Vec<&'a SystemAccess>,
    /// For each id: the positions that read or write it, ascending.
    touching: Vec<Vec<usize>>,
    /// For each id: the positions that write it, ascending.
    writing: Vec<Vec<usize>>,
    /// Positions of exclusive nodes, ascending.
    exclusive: Vec<usize>,
    /// Positions of `&World` readers, ascending.
    reads_all: Vec<usize>,
    /// Positions of nodes that write anything, ascending.
    writes_anything: Vec<usize>,
    /// Per position: the ids it touches and the ids it writes.
    ids: Vec<(Vec<usize>, Vec<usize>)>,
    /// Per position, the last position whose candidates included it (deduplication).
    seen: Vec<usize>,
}

impl<'a> ConflictCandidates<'a> {
    fn new(order: &[usize], access: &[&'a SystemAccess]) -> Self {
        let mut index = Self {
            access: order.iter().map(|&node| access[node]).collect(),
            touching: Vec::new(),
            writing: Vec::new(),
            exclusive: Vec::new(),
            reads_all: Vec::new(),
            writes_anything: Vec::new(),
            ids: Vec::with_capacity(order.len()),
            seen: vec![usize::MAX; order.len()],
        };
        for pos in 0..order.len() {
            let system = index.access[pos];
            if system.is_exclusive() {
                index.exclusive.push(pos);
            }
            if system.reads_all() {
                index.reads_all.push(pos);
            }
            if system.writes_anything() {
                index.writes_anything.push(pos);
            }
            let mut touches = Vec::new();
            let mut writes = Vec::new();
            for data in system.data() {
                touches.extend(data.reads().ids().map(|id| id.index()));
                writes.extend(data.writes().ids().map(|id| id.index()));
            }
            touches.extend_from_slice(&writes);
            for ids in [&mut touches, &mut writes] {
                ids.sort_unstable();
                ids.dedup();
            }
            if let Some(&max) = touches.last()
                && max >= index.touching.len()
            {
                index.touching.resize_with(max + 1, Vec::new);
                index.writing.resize_with(max + 1, Vec::new);
            }
            for &id in &touches {
                index.touching[id].push(pos);
            }
            for &id in &writes {
                index.writing[id].push(pos);
            }
            index.ids.push((touches, writes));
        }
        index
    }

    /// The positions after `pos` that could conflict with it, ascending, into `out`.
    fn after(&mut self, pos: usize, out: &mut Vec<usize>) {
        out.clear();
        let n = self.access.len();
        let system = self.access[pos];
        if system.is_exclusive() {
            out.extend(pos + 1..n);
            return;
        }
        let seen = &mut self.seen;
        let mut add = |list: &[usize]| {
            let start = list.partition_point(|&p| p <= pos);
            for &p in &list[start..] {
                if seen[p] != pos {
                    seen[p] = pos;
                    out.push(p);
                }
            }
        };
        add(&self.exclusive);
        if system.reads_all() {
            add(&self.writes_anything);
        }
        if system.writes_anything() {
            add(&self.reads_all);
        }
        let (touches, writes) = &self.ids[pos];
        for &id in touches {
            add(&self.writing[id]);
        }
        for &id in writes {
            add(&self.touching[id]);
        }
        out.sort_unstable();
    }
}

/// Kahn's algorithm, always taking the earliest-added ready node; `Err` holds the nodes that
/// could never become ready (they sit on or behind a cycle).
fn topological_order(successors: &[Vec<usize>]) -> Result<Vec<usize>, Vec<usize>> {
    let n = successors.len();
    let mut incoming = vec![0usize; n];
    for list in successors {
        for &to in list {
            incoming[to] += 1;
        }
    }
    let mut ready: BinaryHeap<Reverse<usize>> = (0..n).filter(|&i| incoming[i] == 0).map(Reverse).collect();
    let mut order = Vec::with_capacity(n);
    while let Some(Reverse(node)) = ready.pop() {
        order.push(node);
        for &to in &successors[node] {
            incoming[to] -= 1;
            if incoming[to] == 0 {
                ready.push(Reverse(to));
            }
        }
    }
    if order.len() == n {
        Ok(order)
    } else {
        Err((0..n).filter(|&i| incoming[i] > 0).collect())
    }
}

/// Finds one cycle among the stuck nodes and names it, starting at its earliest-added node.
///
/// The walk goes backwards: a node downstream of a cycle is stuck too but may have no stuck
/// successor, while every stuck node has a stuck predecessor (the one that kept it waiting).
fn cycle(names: &[String], successors: &[Vec<usize>], stuck: &[usize]) -> ScheduleBuildError {
    let mut in_stuck = vec![false; names.len()];
    for &node in stuck {
        in_stuck[node] = true;
    }
    let mut predecessor = vec![usize::MAX; names.len()];
    for &from in stuck {
        for &to in &successors[from] {
            if in_stuck[to] && predecessor[to] == usize::MAX {
                predecessor[to] = from;
            }
        }
    }
    let mut path = vec![stuck[0]];
    loop {
        let last = *path.last().expect("path is never empty");
        let previous = predecessor[last];
        assert!(previous != usize::MAX, "every stuck node has a stuck predecessor");
        if let Some(start) = path.iter().position(|&p| p == previous) {
            // `path[start..]` runs against the edges; reversed, it runs along them.
            let mut nodes: Vec<usize> = path[start..].iter().rev().copied().collect();
            let first = (0..nodes.len())
                .min_by_key(|&i| nodes[i])
                .expect("a cycle has nodes");
            nodes.rotate_left(first);
            return ScheduleBuildError::Cycle(nodes.iter().map(|&i| names[i].clone()).collect());
        }
        path.push(previous);
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use tabula_core::{Access, ComponentId};

    fn writes(id: usize) -> SystemAccess {
        let mut access = Access::default();
        access.add_write(ComponentId::from_index(id)).unwrap();
        let mut system = SystemAccess::default();
        system.add_param("Query".into(), access).unwrap();
        system
    }

    fn names(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("s{i}")).collect()
    }

    #[test]
    fn conflicting_systems_are_ordered_as_added_and_reduced() {
        let a = [writes(1), writes(1), writes(1), writes(2)];
        let access: Vec<_> = a.iter().collect();
        let built = build(&names(4), &access, &[]).unwrap();
        assert_eq!(built.order, vec![0, 1, 2, 3]);
        // 0 -> 1 -> 2 (0 -> 2 is implied and reduced away); 3 is independent.
        let edges: Vec<_> = built.edges.iter().map(|&(f, t, _)| (f, t)).collect();
        assert_eq!(edges, vec![(0, 1), (1, 2)]);
        assert_eq!(built.level, vec![0, 1, 2, 0]);
    }

    /// Random accesses over a few ids: reads, writes, filters that make some pairs
    /// disjoint, ordering accesses, `&World` readers and exclusive systems.
    fn random_accesses(n: usize, seed: u64) -> Vec<SystemAccess> {
        let mut state = seed;
        let mut next = move |below: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % below
        };
        (0..n)
            .map(|_| {
                let mut system = match next(20) {
                    0 => return SystemAccess::exclusive(),
                    1 => {
                        let mut system = SystemAccess::default();
                        system.set_reads_all();
                        return system;
                    }
                    _ => SystemAccess::default(),
                };
                for param in 0..next(3) {
                    let mut access = Access::default();
                    let id = next(8) as usize;
                    if next(2) == 0 {
                        access.add_write(ComponentId::from_index(id)).unwrap();
                    } else {
                        access.add_read(ComponentId::from_index(id)).unwrap();
                    }
                    match next(4) {
                        0 => access.add_with(ComponentId::from_index(8)),
                        1 => access.add_without(ComponentId::from_index(8)),
                        _ => {}
                    }
                    if next(6) == 0 {
                        system.add_ordering(format!("o{param}"), access);
                    } else {
                        // A parameter that aliases an earlier one is left out.
                        let _ = system.add_param(format!("p{param}"), access);
                    }
                }
                system
            })
            .collect()
    }

    #[test]
    fn conflict_candidates_find_every_conflicting_pair() {
        let mut conflicts = 0;
        for seed in 1..40 {
            let systems = random_accesses(60, seed * 0x9e37_79b9);
            let access: Vec<_> = systems.iter().collect();
            let order: Vec<usize> = (0..access.len()).rev().collect();
            let mut candidates = ConflictCandidates::new(&order, &access);
            let mut later = Vec::new();
            for i in 0..order.len() {
                candidates.after(i, &mut later);
                assert!(later.windows(2).all(|w| w[0] < w[1]), "ascending, no repeats");
                assert!(later.iter().all(|&p| p > i));
                for j in i + 1..order.len() {
                    if access[order[i]].conflicts_with(access[order[j]]) {
                        assert!(later.contains(&j), "seed {seed}: {i} and {j} conflict");
                        conflicts += 1;
                    }
                }
            }
        }
        assert!(
            conflicts > 1_000,
            "the accesses conflict often enough to test: {conflicts}"
        );
    }

    #[test]
    fn independent_systems_are_not_compared() {
        // Every system reads id 0 and writes an id of its own: nothing conflicts, and no
        // system is a candidate for another.
        let systems: Vec<SystemAccess> = (0..100)
            .map(|i| {
                let mut access = Access::default();
                access.add_read(ComponentId::from_index(0)).unwrap();
                access.add_write(ComponentId::from_index(i + 1)).unwrap();
                let mut system = SystemAccess::default();
                system.add_param("Query".into(), access).unwrap();
                system
            })
            .collect();
        let access: Vec<_> = systems.iter().collect();
        let order: Vec<usize> = (0..100).collect();
        let mut candidates = ConflictCandidates::new(&order, &access);
        let mut later = Vec::new();
        for i in 0..100 {
            candidates.after(i, &mut later);
            assert!(later.is_empty());
        }
        let built = build(&names(100), &access, &[]).unwrap();
        assert!(built.edges.is_empty());
    }

    #[test]
    fn explicit_edges_win_over_insertion_order() {
        let a = [writes(1), writes(1)];
        let access: Vec<_> = a.iter().collect();
        let built = build(&names(2), &access, &[(1, 0)]).unwrap();
        assert_eq!(built.order, vec![1, 0]);
        assert_eq!(built.edges, vec![(1, 0, EdgeKind::Explicit)]);
    }

    #[test]
    fn cycles_name_their_systems() {
        let a = [
            SystemAccess::default(),
            SystemAccess::default(),
            SystemAccess::default(),
        ];
        let access: Vec<_> = a.iter().collect();
        let err = build(&names(3), &access, &[(0, 1), (1, 2), (2, 1)]).unwrap_err();
        assert_eq!(err, ScheduleBuildError::Cycle(vec!["s1".into(), "s2".into()]));
        assert!(err.to_string().contains("s1 -> s2 -> s1"));
    }

    #[test]
    fn a_cycle_is_named_whatever_hangs_off_it() {
        let a = vec![SystemAccess::default(); 5];
        let access: Vec<_> = a.iter().collect();
        // s0 and s4 wait on the cycle s1 -> s2 -> s3 -> s1 but are not on it; s0 is the
        // first stuck node, and the cycle's nodes list their way out to s0 and s4 first.
        let edges = [(1, 0), (1, 2), (2, 4), (2, 3), (3, 1), (4, 0)];
        let err = build(&names(5), &access, &edges).unwrap_err();
        assert_eq!(
            err,
            ScheduleBuildError::Cycle(vec!["s1".into(), "s2".into(), "s3".into()])
        );
    }
}
