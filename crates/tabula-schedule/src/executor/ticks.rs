//! Change ticks laid out ahead: which tick each system of a run starts at.
//!
//! Every system run starts at a tick of its own, later than the ticks of the systems it is
//! ordered after, so that it sees their writes and they see its writes on their next run.
//! Advancing the world's clock as each system starts would do that, but it makes the
//! clock's cache line travel between the threads of a parallel run at every system start:
//! on trivial systems on two threads, that made the parallel executor slower than the
//! single-threaded one (`sched_scale` in `benches/benches/schedule.rs`; on one thread the
//! add costs about what laying the ticks out does).
//!
//! So a run reserves the ticks of a *segment* at once — the systems between two exclusive
//! nodes (exclusive systems, `apply_deferred`, sync points), which the graph orders against
//! every other node — and each system takes the tick of its place in the schedule's order
//! within the segment. An exclusive node runs alone and takes its ticks from the clock as a
//! `&mut World` caller does; the next segment is reserved after it, so every tick it used
//! is below the next segment's. Both executors lay out the same ticks, so a run gives the
//! same ticks whatever the thread count.

use std::collections::HashMap;
use std::sync::Arc;

use super::set_condition::{SetCondition, VerdictWord};
use super::{Node, SystemSlot};

/// Where the ticks of a built schedule's systems sit; see the [module docs](self).
#[derive(Debug, Default)]
pub(crate) struct TickLayout {
    /// Per node: the offset of its system's first tick from its segment's first; its run
    /// conditions take the ticks just before (0 for exclusive nodes, which take no reserved
    /// tick).
    offset: Vec<u64>,
    /// Per node: the ticks of the segment that starts after it, for exclusive nodes (0 for
    /// the others).
    next_segment: Vec<u64>,
    /// The ticks of the segment that starts the run.
    first_segment: u64,
}

impl TickLayout {
    /// Lays out the ticks of `order` (every node, in the schedule's order).
    pub(crate) fn new(slots: &[SystemSlot], nodes: &[Node], order: &[usize]) -> Self {
        let mut layout = Self {
            offset: vec![0; nodes.len()],
            next_segment: vec![0; nodes.len()],
            first_segment: 0,
        };
        // The node that ends the segment being laid out; `None` for the first.
        let mut opened_by: Option<usize> = None;
        let mut length = 0_u64;
        for &node in order {
            match ticks_of(slots, nodes[node]) {
                None => {
                    layout.close(opened_by, length);
                    opened_by = Some(node);
                    length = 0;
                }
                Some((conditions, system)) => {
                    layout.offset[node] = length + conditions;
                    length += conditions + system;
                }
            }
        }
        layout.close(opened_by, length);
        layout
    }

    /// Records `length` as the ticks of the segment opened by `opened_by`.
    fn close(&mut self, opened_by: Option<usize>, length: u64) {
        match opened_by {
            None => self.first_segment = length,
            Some(node) => self.next_segment[node] = length,
        }
    }

    /// The ticks of the segment that starts the run.
    #[inline]
    pub(crate) fn first_segment(&self) -> u64 {
        self.first_segment
    }

    /// The ticks of the segment that starts after exclusive node `node`.
    #[inline]
    pub(crate) fn segment_after(&self, node: usize) -> u64 {
        self.next_segment[node]
    }

    /// The offset of the first tick of `node`'s system from its segment's first (its
    /// run conditions take the ticks just before).
    #[inline]
    pub(crate) fn offset(&self, node: usize) -> u64 {
        self.offset[node]
    }
}

/// Places each system's use of a set's run condition at the tick the set's first system in
/// `order` has for it, so that whichever member evaluates the condition runs it at that one
/// tick (see `set_condition.rs`). A member in a later segment than the first keeps 0: the
/// first's segment ran, and evaluated it, before its own started. Sets each slot's `gate`
/// for the run too.
pub(crate) fn place_set_conditions(
    slots: &mut [SystemSlot],
    nodes: &[Node],
    order: &[usize],
    layout: &TickLayout,
) {
    // Per condition: the segment and the tick offset of its first use.
    let mut first: HashMap<*const SetCondition, (usize, i64)> = HashMap::new();
    let mut segment = 0_usize;
    let always = VerdictWord::always();
    for &node in order {
        let Node::System(index) = nodes[node] else {
            segment += 1;
            continue;
        };
        let slot = &mut slots[index];
        let exclusive = slot.is_exclusive();
        // Where this slot's set conditions start: after its own, before its system (for an
        // exclusive slot the offset is 0 and no member's shift comes from here).
        let start = layout.offset(node) as i64 - slot.sum_set_condition_ticks() as i64;
        let mut at = start;
        for used in &mut slot.set_conditions {
            let (first_segment, first_at) =
                *first.entry(Arc::as_ptr(&used.condition)).or_insert((segment, at));
            used.shift = if first_segment == segment && !exclusive {
                first_at - start
            } else {
                0
            };
            at += used.condition.ticks_per_run() as i64;
        }
        slot.choose_gate(&always);
        if exclusive {
            segment += 1;
        }
    }
}

/// The ticks a node takes from its segment: its run conditions', then its system's; `None`
/// for exclusive nodes, which end a segment.
fn ticks_of(slots: &[SystemSlot], node: Node) -> Option<(u64, u64)> {
    if node.is_exclusive(slots) {
        return None;
    }
    let Node::System(index) = node else {
        unreachable!("sync points are exclusive")
    };
    let slot = &slots[index];
    Some((slot.condition_ticks(), slot.system.ticks_per_run()))
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::access::SystemAccess;
    use crate::system::{IntoSystem, apply_deferred};

    fn tiny() {}

    #[test]
    fn systems_take_consecutive_ticks_and_exclusive_nodes_start_a_new_segment() {
        let slot = || SystemSlot::new(Box::new(tiny.into_system()), Vec::new(), SystemAccess::default());
        let apply = SystemSlot::new(
            Box::new(apply_deferred.into_system()),
            Vec::new(),
            SystemAccess::default(),
        );
        let slots = [slot(), slot(), apply, slot()];
        // Order: 1, 0, sync (node 4), 2 (apply_deferred), 3.
        let nodes = [
            Node::System(0),
            Node::System(1),
            Node::System(2),
            Node::System(3),
            Node::Sync,
        ];
        let layout = TickLayout::new(&slots, &nodes, &[1, 0, 4, 2, 3]);
        assert_eq!(layout.first_segment(), 2);
        assert_eq!((layout.offset(1), layout.offset(0)), (0, 1));
        // The sync point opens an empty segment (the next node is exclusive too).
        assert_eq!(layout.segment_after(4), 0);
        assert_eq!(layout.segment_after(2), 1);
        assert_eq!(layout.offset(3), 0);
    }
}
