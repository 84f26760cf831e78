//! The parallel executor: the [`protocol`](super::protocol) driven on rayon.
//!
//! The thread that releases a node (brings its dependency counter to zero) decides where it
//! runs: cheap nodes, exclusive systems and sync points run right there, inline; expensive
//! nodes become rayon tasks, except that a thread with nothing else to do keeps one for
//! itself. So a run of tiny systems never leaves the calling thread, and a run of heavy ones
//! spreads over the pool. No lock is taken on this path; the one `Mutex` holds a panic
//! payload or command errors, both rare.

use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Mutex;

use rayon::Scope;
use tabula_core::{CommandError, UnsafeWorldCell, World};

use super::protocol::{Dependencies, RunState};
use super::{Node, RunContext, SystemSlot, apply_pending, run_system};
use crate::graph::Built;

/// What every thread of one run shares.
struct Shared<'a> {
    slots: *mut SystemSlot,
    slot_count: usize,
    nodes: &'a [Node],
    deps: &'a Dependencies,
    state: &'a RunState,
    world: UnsafeWorldCell<'a>,
    ctx: RunContext,
    panic: Mutex<Option<Box<dyn Any + Send>>>,
    errors: Mutex<Vec<CommandError>>,
}

// SAFETY: `slots` is only dereferenced for a node by the one thread the protocol lets run
// it, and for all slots only by an exclusive node, when no other node runs. Systems are
// `Send + Sync`; the world cell is shared under the schedule's access rules.
unsafe impl Sync for Shared<'_> {}
// SAFETY: as above.
unsafe impl Send for Shared<'_> {}

impl<'a> Shared<'a> {
    /// True when the node should run inline on the thread that released it.
    fn runs_inline(&self, node: usize) -> bool {
        match self.nodes[node] {
            Node::Sync => true,
            Node::System(index) => {
                // SAFETY: the caller has just been granted this node (it released it), so no
                // other thread touches the slot; only plain fields are read.
                let slot = unsafe { &*self.slots.add(index) };
                slot.is_cheap() || slot.access.is_exclusive()
            }
        }
    }

    /// Runs one node; false when it panicked (the run is then aborted).
    fn run_node(&self, node: usize) -> bool {
        let result = catch_unwind(AssertUnwindSafe(|| match self.nodes[node] {
            Node::System(index) => {
                // SAFETY: the protocol granted this node to this thread alone.
                let slot = unsafe { &mut *self.slots.add(index) };
                if slot.is_apply_deferred {
                    // SAFETY: `apply_deferred` is exclusive: nothing else runs now.
                    unsafe { self.apply_all() };
                } else {
                    // SAFETY: the graph gives this node its declared access for now (exclusive
                    // systems: the whole world); the schedule initialised the slot.
                    unsafe { run_system(slot, self.world, self.ctx) };
                }
            }
            // SAFETY: sync points are exclusive: nothing else runs now.
            Node::Sync => unsafe { self.apply_all() },
        }));
        match result {
            Ok(()) => true,
            Err(payload) => {
                self.state.abort();
                let mut slot = self.panic.lock().unwrap_or_else(|e| e.into_inner());
                slot.get_or_insert(payload);
                false
            }
        }
    }

    /// Applies every pending command buffer.
    ///
    /// # Safety
    /// Called from an exclusive node: no other node is running, so every slot and the world
    /// are ours.
    unsafe fn apply_all(&self) {
        // SAFETY: see the function's contract.
        let (slots, world) = unsafe {
            (
                std::slice::from_raw_parts_mut(self.slots, self.slot_count),
                self.world.world_mut(),
            )
        };
        let mut errors = self.errors.lock().unwrap_or_else(|e| e.into_inner());
        apply_pending(slots, world, &mut errors);
    }

    /// Runs `first` and then, inline, whatever it releases that is cheap; spawns the rest.
    fn run_from<'s>(&'s self, scope: &Scope<'s>, first: usize) {
        let mut next = Some(first);
        let mut inline = Vec::new();
        let mut heavy = Vec::new();
        while let Some(node) = next.take().or_else(|| inline.pop()) {
            if self.state.is_aborted() || !self.run_node(node) {
                return;
            }
            self.state.complete(self.deps, node, |ready| {
                if self.runs_inline(ready) {
                    inline.push(ready);
                } else {
                    heavy.push(ready);
                }
            });
            self.dispatch(scope, &mut next, &inline, &mut heavy);
        }
    }

    /// Keeps one heavy node for this thread when it has nothing inline to do; spawns the
    /// other heavy nodes.
    fn dispatch<'s>(
        &'s self,
        scope: &Scope<'s>,
        next: &mut Option<usize>,
        inline: &[usize],
        heavy: &mut Vec<usize>,
    ) {
        if next.is_none() && inline.is_empty() {
            *next = heavy.pop();
        }
        for node in heavy.drain(..) {
            scope.spawn(move |scope| self.run_from(scope, node));
        }
    }
}

/// Runs a built schedule on rayon. Returns the panic payload of the first system that
/// panicked, after every running system has finished.
pub(crate) fn run(
    slots: &mut [SystemSlot],
    nodes: &[Node],
    built: &Built,
    state: &mut RunState,
    world: &mut World,
    ctx: RunContext,
    errors: &mut Vec<CommandError>,
) -> Result<(), Box<dyn Any + Send>> {
    state.reset(&built.deps);
    let shared = Shared {
        slot_count: slots.len(),
        slots: slots.as_mut_ptr(),
        nodes,
        deps: &built.deps,
        state,
        world: UnsafeWorldCell::new_mutable(world),
        ctx,
        panic: Mutex::new(None),
        errors: Mutex::new(Vec::new()),
    };
    rayon::in_place_scope(|scope| {
        let shared = &shared;
        let mut next = None;
        let (mut inline, mut heavy): (Vec<usize>, Vec<usize>) =
            built.deps.roots().partition(|&root| shared.runs_inline(root));
        // Run inline work in order: reverse so `pop` yields the earliest root first.
        inline.reverse();
        shared.dispatch(scope, &mut next, &inline, &mut heavy);
        if let Some(node) = next.take().or_else(|| inline.pop()) {
            shared.run_from(scope, node);
        }
        while let Some(node) = inline.pop() {
            shared.run_from(scope, node);
        }
    });
    errors.append(&mut shared.errors.into_inner().unwrap_or_else(|e| e.into_inner()));
    match shared.panic.into_inner().unwrap_or_else(|e| e.into_inner()) {
        Some(payload) => Err(payload),
        None => Ok(()),
    }
}
