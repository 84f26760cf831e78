//! The parallel executor: the [`protocol`](super::protocol) driven by the calling thread, with
//! rayon tasks as helpers.
//!
//! The calling thread runs the schedule. It first hands off the roots the [`Plan`] gives to
//! helpers (highest rank first, so a helper is spawned before the caller starts anything),
//! then runs its own roots — the highest-ranked one among them — and whatever each finished
//! node releases. A released node that runs inline (small rank: its chain of work is cheap;
//! exclusive; or a sync point) runs right there, on the thread that released it. Of the
//! nodes worth a thread of their own, that thread keeps the highest-ranked when it has
//! nothing else to do, and hands the others off through the protocol's ready queue, spawning
//! a rayon helper to take them (at most one fewer helpers than rayon has threads, so that
//! caller plus helpers do not outnumber the pool). The calling thread takes from the queue
//! too whenever it runs out of work, so a helper that is slow to start never holds the run
//! up: its work is done by the caller instead. When nothing is left for it, the caller waits
//! for the handed-off chains: it spins briefly, then yields, then parks until a helper wakes
//! it.
//!
//! So a run of cheap systems never leaves the calling thread, takes no lock and makes no
//! system call, and a run of heavy ones spreads over the pool. The one `Mutex` holds a panic
//! payload or command errors, both rare.

use parking_lot::Mutex;
use std::any::Any;
use std::cell::Cell;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::thread::{self, Thread};

use tabula_core::{UnsafeWorldCell, World};

use super::plan::Plan;
use super::protocol::{Dependencies, RunState};
use super::ticks::TickLayout;
use super::{Node, RunContext, SystemSlot, apply_pending, conditions_allow, run_system, traced_apply};
use crate::graph::Built;
use crate::skipped::SkippedCommand;
use crate::sync::{Arc, Backoff};
use crate::trace::TraceKind;

/// Busy-wait steps (see [`Backoff::snooze`]: spins, growing, then yields) the caller takes
/// before it parks while helpers finish. More than `Backoff::is_completed` would allow: a
/// yield is much cheaper than parking and being woken.
const WAIT_STEPS_BEFORE_PARK: u32 = 256;

/// Which side of a run a thread is on.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Role {
    /// The thread that called `run`.
    Caller,
    /// A rayon task taking handed-off nodes.
    Helper,
}

/// What every thread of one run shares.
struct Shared<'a> {
    slots: *mut SystemSlot,
    slot_count: usize,
    nodes: &'a [Node],
    /// The slots in the order their command buffers are applied.
    apply_order: &'a [usize],
    deps: &'a Dependencies,
    plan: &'a Plan,
    ticks: &'a TickLayout,
    /// The first tick of the segment being run (see [`ticks`](super::ticks)): set before the
    /// run and by each exclusive node when it ends, while nothing else runs; read by the
    /// segment's systems, which the dependency counters order after that write.
    segment: AtomicU64,
    state: &'a RunState,
    world: UnsafeWorldCell<'a>,
    ctx: RunContext<'a>,
    /// The gate epoch of this run (see [`protocol::Gate`](super::protocol::Gate)).
    epoch: u64,
    /// The calling thread, which helpers wake when they queue work or finish the last chain.
    caller: Thread,
    /// Helpers spawned for this run and not yet gone (some may not have started).
    helpers: AtomicUsize,
    panic: Mutex<Option<Box<dyn Any + Send>>>,
    errors: Mutex<Vec<SkippedCommand>>,
}

// SAFETY: `slots` is only dereferenced for a node by the one thread the protocol gives it
// to (the thread that runs it), and for all slots only by an exclusive node, when no other
// node runs; where a node runs is decided from the `Plan`, never from its slot. Systems are
// `Send + Sync`; the world cell is shared under the schedule's access rules.
unsafe impl Sync for Shared<'_> {}
// SAFETY: as above.
unsafe impl Send for Shared<'_> {}

/// A run's [`Shared`], as a helper task carries it (type- and lifetime-erased, because the
/// task may outlive the run): dereferenced only inside the run's gate.
struct RunPtr(*const ());

// SAFETY: it points to a `Shared`, which is `Sync`, and is dereferenced only while the gate
// guarantees the run is alive.
unsafe impl Send for RunPtr {}

impl RunPtr {
    /// The pointer (a method, so that closures capture the whole `Send` wrapper).
    fn get(&self) -> *const () {
        self.0
    }
}

thread_local! {
    /// The calling thread's stack of released nodes, kept between runs to save allocating.
    static CALLER_STACK: Cell<Vec<usize>> = const { Cell::new(Vec::new()) };
}

impl<'a> Shared<'a> {
    /// Runs one node (unwinding if it panics).
    fn run_node(&self, node: usize) {
        match self.nodes[node] {
            Node::System(index) => {
                // SAFETY: the protocol granted this node to this thread alone.
                let slot = unsafe { &mut *self.slots.add(index) };
                if !slot.is_exclusive() {
                    let tick = self.segment.load(Ordering::Relaxed) + self.ticks.offset(node);
                    // SAFETY: the graph gives this node its declared access for now; the
                    // schedule initialised the slot.
                    unsafe { run_system(slot, index, self.world.with_run_tick(tick), self.ctx) };
                    return;
                }
                if slot.is_apply_deferred {
                    traced_apply(self.ctx, TraceKind::ApplyDeferred, Some(index), || {
                        // SAFETY: `apply_deferred` is exclusive: nothing else runs now, so the
                        // slot's conditions may read the world, and then every slot is ours.
                        unsafe {
                            if conditions_allow(slot, self.world) {
                                self.apply_all()
                            } else {
                                0
                            }
                        }
                    });
                } else {
                    // SAFETY: an exclusive system: the graph gives it the whole world for
                    // now; the schedule initialised the slot.
                    unsafe { run_system(slot, index, self.world, self.ctx) };
                }
            }
            Node::Sync => traced_apply(self.ctx, TraceKind::Sync, None, || {
                // SAFETY: sync points are exclusive: nothing else runs now.
                unsafe { self.apply_all() }
            }),
        }
        // An exclusive node (the systems above returned early) ends a segment: the next
        // one's ticks come after every tick it took.
        let next = self.world.reserve_change_ticks(self.ticks.segment_after(node));
        self.segment.store(next, Ordering::Relaxed);
    }

    /// Applies every pending command buffer; returns how many it applied.
    ///
    /// # Safety
    /// Called from an exclusive node: no other node is running, so every slot and the world
    /// are ours.
    unsafe fn apply_all(&self) -> usize {
        // SAFETY: see the function's contract.
        let (slots, world) = unsafe {
            (
                std::slice::from_raw_parts_mut(self.slots, self.slot_count),
                self.world.world_mut(),
            )
        };
        let mut errors = self.errors.lock();
        apply_pending(
            slots,
            self.apply_order,
            world,
            &mut errors,
            self.ctx.command_errors,
        )
    }

    /// Sorts a node this thread has just released: onto `stack` when it runs inline;
    /// otherwise the higher-ranked of it and `kept` stays in `kept` and the other is handed
    /// off.
    fn place(&self, ready: usize, kept: &mut Option<usize>, stack: &mut Vec<usize>, role: Role) {
        if self.plan.runs_inline(ready) {
            stack.push(ready);
            return;
        }
        match *kept {
            None => *kept = Some(ready),
            Some(other) if self.plan.rank(ready) > self.plan.rank(other) => {
                *kept = Some(ready);
                self.hand_off(other, role);
            }
            Some(_) => self.hand_off(ready, role),
        }
    }

    /// Runs `first` and whatever it releases that stays on this thread (see
    /// [`run_from`](Self::run_from)). A panicking node aborts the run: its payload is kept for
    /// the caller and the chain ends.
    fn run_chain(&self, first: usize, stack: &mut Vec<usize>, role: Role) {
        self.run_chains(&[first], stack, role);
    }

    /// [`run_chain`](Self::run_chain) from each of `firsts` in turn (all this thread's and
    /// inline), under one panic guard.
    fn run_chains(&self, firsts: &[usize], stack: &mut Vec<usize>, role: Role) {
        let chains = catch_unwind(AssertUnwindSafe(|| {
            for (i, &first) in firsts.iter().enumerate() {
                self.run_from(first, stack, role, i + 1 < firsts.len());
            }
        }));
        if let Err(payload) = chains {
            self.state.abort();
            stack.clear();
            let mut slot = self.panic.lock();
            slot.get_or_insert(payload);
        }
    }

    /// Runs `node` and then the nodes on `stack` and whatever they release that stays on this
    /// thread, until there is nothing left here. A node worth another thread is kept only when
    /// this thread would otherwise be done (`more_here` is false: no other work waits for it
    /// after this), and handed off otherwise.
    fn run_from(&self, first: usize, stack: &mut Vec<usize>, role: Role, more_here: bool) {
        let mut node = first;
        loop {
            if self.state.is_aborted() {
                stack.clear();
                return;
            }
            self.run_node(node);
            if !self.deps.dependents[node].is_empty() {
                let mut kept = None;
                self.state
                    .complete(self.deps, node, |ready| self.place(ready, &mut kept, stack, role));
                if let Some(heavy) = kept {
                    if stack.is_empty() && !more_here {
                        node = heavy;
                        continue;
                    }
                    self.hand_off(heavy, role);
                }
            }
            match stack.pop() {
                Some(next) => node = next,
                None => return,
            }
        }
    }

    /// Queues `node` for another thread: spawns a helper if fewer than the limit are alive,
    /// and, from a helper, wakes the caller (which takes queued work whenever it is idle).
    fn hand_off(&self, node: usize, role: Role) {
        self.state.hand_off(node);
        if self.reserve_helper() {
            self.spawn_helper();
        }
        if role == Role::Helper {
            self.caller.unpark();
        }
    }

    /// Counts one more helper unless the limit (rayon's threads less one) is reached.
    fn reserve_helper(&self) -> bool {
        let limit = rayon::current_num_threads().saturating_sub(1);
        self.helpers
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |h| {
                (h < limit).then_some(h + 1)
            })
            .is_ok()
    }

    /// Spawns a rayon task that takes handed-off nodes until the queue is empty.
    fn spawn_helper(&self) {
        let gate = Arc::clone(self.state.gate());
        let epoch = self.epoch;
        let run = RunPtr(std::ptr::from_ref(self).cast());
        rayon::spawn(move || {
            if !gate.enter(epoch) {
                return; // The run ended before this task started.
            }
            // SAFETY: the gate admitted this task to run `epoch`, whose `Shared` is alive: it is
            // borrowed by a `CloseGate`, whose `Drop` (on every path, unwinding included)
            // closes the gate, waiting for this task to leave, before the `Shared` is dropped.
            let shared = unsafe { &*run.get().cast::<Shared<'_>>() };
            shared.help();
            gate.leave();
        });
    }

    /// A helper's work: take handed-off nodes and run their chains until none is left.
    fn help(&self) {
        let mut stack = Vec::new();
        loop {
            while let Some(node) = self.state.take() {
                self.run_chain(node, &mut stack, Role::Helper);
                if self.state.finish_chain() {
                    self.caller.unpark();
                }
            }
            self.helpers.fetch_sub(1, Ordering::SeqCst);
            // A node queued while this helper was leaving may have found no free helper;
            // take it on if the slot is still free (the caller would take it otherwise).
            if !self.state.may_have_queued() || !self.reserve_helper() {
                return;
            }
        }
    }

    /// The calling thread's work: hand off the plan's roots for helpers, run its own roots
    /// and their chains, then queued work until every handed-off chain has finished.
    fn run_caller(&self, stack: &mut Vec<usize>) {
        for &root in self.plan.hand_off_roots() {
            self.hand_off(root, Role::Caller);
        }
        self.run_chains(self.plan.own_roots(), stack, Role::Caller);
        let backoff = Backoff::new();
        let mut step = 0;
        loop {
            if let Some(node) = self.state.take() {
                self.run_chain(node, stack, Role::Caller);
                self.state.finish_chain();
                backoff.reset();
                step = 0;
            } else if self.state.is_settled() {
                return;
            } else if step < WAIT_STEPS_BEFORE_PARK {
                // A test's stand-in for a panic on the caller's own path (outside any node's
                // panic guard) while handed-off chains still run.
                #[cfg(all(test, not(loom)))]
                tests::caller_fault();
                backoff.snooze();
                step += 1;
            } else {
                // Woken by a helper that queues work or finishes the last chain; a stale
                // wake-up just goes round the loop again.
                thread::park();
            }
        }
    }
}

/// Runs a built schedule on the calling thread and rayon helpers. Returns the panic payload
/// of the first system that panicked, after every running system has finished.
pub(crate) fn run(
    slots: &mut [SystemSlot],
    nodes: &[Node],
    built: &Built,
    plan: &Plan,
    ticks: &TickLayout,
    state: &mut RunState,
    world: &mut World,
    ctx: RunContext<'_>,
    errors: &mut Vec<SkippedCommand>,
) -> Result<(), Box<dyn Any + Send>> {
    state.reset(&built.deps);
    let state = &*state;
    let epoch = state.gate().epoch();
    let shared = Shared {
        slot_count: slots.len(),
        slots: slots.as_mut_ptr(),
        nodes,
        apply_order: &built.apply_order,
        deps: &built.deps,
        plan,
        ticks,
        segment: AtomicU64::new(world.reserve_change_ticks(ticks.first_segment())),
        state,
        world: UnsafeWorldCell::new_mutable(world),
        ctx,
        epoch,
        caller: thread::current(),
        helpers: AtomicUsize::new(0),
        panic: Mutex::new(None),
        errors: Mutex::new(Vec::new()),
    };
    // Declared after `shared`, so dropped before it on every path, unwinding included.
    let close = CloseGate(&shared);
    let mut stack = CALLER_STACK.take();
    shared.run_caller(&mut stack);
    stack.clear();
    CALLER_STACK.set(stack);
    // Every chain has finished; wait for helpers still inside to leave before `shared` goes.
    drop(close);
    errors.append(&mut shared.errors.into_inner());
    match shared.panic.into_inner() {
        Some(payload) => Err(payload),
        None => Ok(()),
    }
}

/// Closes a run's gate when dropped: at the run's end, or while the caller unwinds from a
/// panic. It first stops the run from starting more nodes if it has not settled, then closes
/// the gate, which waits for the helpers inside to leave and shuts out those not yet
/// started. It borrows the run's [`Shared`], so the borrow checker keeps the `Shared` (and
/// the slots, world and run state it borrows) alive until the gate is closed. A shared
/// borrow, not ownership: `Drop::drop` takes `&mut self`, and a `&mut Shared` would assert
/// exclusive access while helpers inside still use it.
struct CloseGate<'s, 'a>(&'s Shared<'a>);

impl Drop for CloseGate<'_, '_> {
    fn drop(&mut self) {
        let shared = self.0;
        if !shared.state.is_settled() {
            // Only on a caller that unwinds: helpers still running chains stop at their next
            // node, so the close below does not wait for the rest of the schedule.
            shared.state.abort();
        }
        shared.state.gate().close(shared.epoch);
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    //! The helper path under stress: systems heavy enough to be handed off, with conflicting
    //! and disjoint access, run many times; the result must equal the single-threaded one.

    use std::cell::Cell;
    use std::hint::black_box;
    use std::panic::{AssertUnwindSafe, catch_unwind};
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::time::Duration;

    use tabula_core::World;

    use crate::prelude::*;

    struct A(u64);
    struct B(u64);
    struct C(u64);
    struct D(u64);
    #[derive(Default)]
    struct Sum(u64);

    /// Enough work that a system's sampled cost is far above `INLINE_BELOW_NS`, so that it is
    /// handed off rather than run inline.
    fn busy() {
        // Under Miri everything is slow enough to be handed off.
        let spins = if cfg!(miri) { 10 } else { 20_000_u64 };
        for i in 0..spins {
            black_box(i);
        }
    }

    // Order-sensitive updates: running two conflicting systems the other way round, or
    // concurrently, changes the result.
    fn write_a<const K: u64>(mut q: Query<(&mut A, &B)>) {
        busy();
        q.for_each(|(mut a, b)| a.0 = a.0.wrapping_mul(31).wrapping_add(b.0 ^ K));
    }
    fn write_b<const K: u64>(mut q: Query<(&mut B, &C)>) {
        busy();
        q.for_each(|(mut b, c)| b.0 = b.0.wrapping_mul(37).wrapping_add(c.0 ^ K));
    }
    fn write_c<const K: u64>(mut q: Query<(&mut C, &A)>) {
        busy();
        q.for_each(|(mut c, a)| c.0 = c.0.wrapping_mul(41).wrapping_add(a.0 ^ K));
    }
    fn write_d<const K: u64>(mut q: Query<&mut D>) {
        busy();
        q.for_each(|mut d| d.0 = d.0.wrapping_mul(43).wrapping_add(K));
    }
    fn tiny_d<const K: u64>(mut q: Query<&mut D>) {
        q.for_each(|mut d| d.0 ^= K);
    }
    fn read_all(q: Query<(&A, &B, &C, &D)>, mut sum: ResMut<Sum>) {
        busy();
        sum.0 = q.iter().fold(sum.0, |acc, (a, b, c, d)| {
            acc.wrapping_mul(7) ^ a.0 ^ b.0.rotate_left(16) ^ c.0.rotate_left(32) ^ d.0.rotate_left(48)
        });
    }
    fn exclusive(world: &mut World) {
        world.resource_mut::<Sum>().unwrap().0 ^= 0x5555;
    }

    fn schedule(executor: ExecutorKind) -> Schedule {
        let mut schedule = Schedule::new();
        schedule.set_executor(executor);
        schedule.add_systems((
            write_a::<1>,
            write_d::<1>,
            write_b::<2>,
            tiny_d::<2>,
            write_c::<3>,
            write_a::<4>,
            read_all,
            write_d::<5>,
            tiny_d::<6>,
            write_b::<7>,
        ));
        schedule.add_systems((write_c::<8>, exclusive, write_a::<9>, write_d::<10>, read_all));
        schedule
    }

    fn world() -> World {
        let mut world = World::new();
        let n = if cfg!(miri) { 12 } else { 200_u64 };
        for i in 0..n {
            world.spawn((A(i), B(i * 3), C(i * 5), D(i * 7)));
            if i % 3 == 0 {
                world.spawn((A(i), B(i), C(i)));
            }
        }
        world.init_resource::<Sum>();
        world
    }

    fn state(world: &mut World) -> (Vec<(u64, u64, u64)>, u64) {
        let mut q = world.query::<(&A, &B, &C)>();
        let rows = q.iter(world).map(|(a, b, c)| (a.0, b.0, c.0)).collect();
        (rows, world.resource::<Sum>().unwrap().0)
    }

    #[test]
    fn handed_off_systems_give_the_single_threaded_result() {
        let runs = if cfg!(miri) { 3 } else { 60 };
        let mut results = Vec::new();
        for executor in [ExecutorKind::SingleThreaded, ExecutorKind::Parallel] {
            let mut world = world();
            let mut schedule = schedule(executor);
            for _ in 0..runs {
                schedule.run(&mut world);
            }
            results.push(state(&mut world));
        }
        assert_eq!(results[0], results[1]);
    }

    #[test]
    fn panics_in_handed_off_systems_reach_the_caller_run_after_run() {
        fn sometimes(mut q: Query<&mut D>, mut runs: Local<u32>) {
            busy();
            *runs += 1;
            if (*runs).is_multiple_of(3) {
                panic!("run {}", *runs);
            }
            q.for_each(|mut d| d.0 += 1);
        }
        let mut world = world();
        let mut schedule = schedule(ExecutorKind::Parallel);
        schedule.add_systems(sometimes);
        let runs = if cfg!(miri) { 6 } else { 30_u32 };
        for run in 1..=runs {
            let result = catch_unwind(AssertUnwindSafe(|| schedule.run(&mut world)));
            if run.is_multiple_of(3) {
                let payload = result.unwrap_err();
                assert_eq!(payload.downcast_ref::<String>(), Some(&format!("run {run}")));
            } else {
                result.unwrap();
            }
        }
    }

    thread_local! {
        /// Set on a calling thread to make its executor panic outside any node's panic
        /// guard, the first time it waits for handed-off chains while one runs a system.
        static CALLER_FAULT: Cell<bool> = const { Cell::new(false) };
    }

    /// Systems of the caller-fault test running right now, on any thread.
    static RUNNING: AtomicUsize = AtomicUsize::new(0);

    /// Panics (once) when the calling thread asked for it with `CALLER_FAULT` and a helper
    /// is running a system.
    pub(super) fn caller_fault() {
        if CALLER_FAULT.get() && RUNNING.load(Ordering::SeqCst) > 0 {
            CALLER_FAULT.set(false);
            // Unwinds without the panic hook, whose backtrace could take longer than the
            // helpers' work and hide a caller that does not wait for them.
            std::panic::resume_unwind(Box::new("caller fault"));
        }
    }

    #[test]
    fn a_panic_on_the_callers_path_waits_for_helpers_before_the_run_is_freed() {
        /// Set while a run is meant to fault: helpers then take long enough that the
        /// caller's unwinding (panic hook, backtrace) cannot outlast them by chance.
        static FAULT_RUN: AtomicBool = AtomicBool::new(false);
        fn slow_sleep() {
            let ms = if FAULT_RUN.load(Ordering::SeqCst) { 200 } else { 1 };
            std::thread::sleep(Duration::from_millis(ms));
        }
        fn slow<const K: u64>(mut q: Query<&mut D>) {
            RUNNING.fetch_add(1, Ordering::SeqCst);
            slow_sleep();
            q.for_each(|mut d| d.0 = d.0.wrapping_add(K));
            RUNNING.fetch_sub(1, Ordering::SeqCst);
        }
        fn slow_a(mut q: Query<&mut A>) {
            RUNNING.fetch_add(1, Ordering::SeqCst);
            slow_sleep();
            q.for_each(|mut a| a.0 += 1);
            RUNNING.fetch_sub(1, Ordering::SeqCst);
        }
        fn tiny_b(mut q: Query<&mut B>) {
            q.for_each(|mut b| b.0 += 1);
        }
        fn later(mut q: Query<(&mut C, &D)>) {
            q.for_each(|(mut c, d)| c.0 = c.0.wrapping_add(d.0));
        }

        // Enough threads for helpers whatever the machine's core count.
        let pool = rayon::ThreadPoolBuilder::new().num_threads(4).build().unwrap();
        pool.install(|| {
            let mut world = world();
            let mut schedule = Schedule::new();
            schedule.add_systems((slow::<1>, slow_a, tiny_b));
            schedule.add_systems(later.after(slow::<1>));
            let mut faulted = false;
            for _ in 0..20 {
                CALLER_FAULT.set(true);
                FAULT_RUN.store(true, Ordering::SeqCst);
                let result = catch_unwind(AssertUnwindSafe(|| schedule.run(&mut world)));
                FAULT_RUN.store(false, Ordering::SeqCst);
                CALLER_FAULT.set(false);
                if let Err(payload) = result {
                    assert_eq!(payload.downcast_ref::<&str>(), Some(&"caller fault"));
                    // The run's state is gone only once every helper that reached it left.
                    assert_eq!(RUNNING.load(Ordering::SeqCst), 0, "a helper outlived the run");
                    faulted = true;
                    break;
                }
            }
            assert!(faulted, "the caller never waited for a helper");
            // The schedule and the world stay usable.
            for _ in 0..3 {
                schedule.run(&mut world);
            }
            assert_eq!(RUNNING.load(Ordering::SeqCst), 0);
        });
    }
}
