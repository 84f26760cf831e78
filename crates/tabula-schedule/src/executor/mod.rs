//! Executors: run a built schedule's nodes in dependency order.
//!
//! * `single` walks the deterministic order on the calling thread.
//! * `parallel` runs on rayon: per-node atomic dependency counters
//!   ([`protocol`]), cheap nodes inline on the thread that released them, expensive ones
//!   handed to rayon helpers, as the plan (`plan.rs`, made from sampled costs) says.
//!
//! Both give the same results, because the graph orders every two conflicting systems.

pub(crate) mod parallel;
pub(crate) mod plan;
pub(crate) mod protocol;
pub(crate) mod set_condition;
pub(crate) mod single;
pub(crate) mod ticks;

use std::time::Instant;

use tabula_core::{UnsafeWorldCell, World};

use crate::access::SystemAccess;
use crate::config::BoxedCondition;
use crate::skipped::{CommandErrorPolicy, SkippedCommand};
use crate::system::BoxedSystem;
use crate::trace::{TraceKind, TraceLog, batch_sink};
use set_condition::{SetConditionUse, VerdictWord};

/// Which executor a schedule uses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ExecutorKind {
    /// Everything on the calling thread, in the schedule's order.
    SingleThreaded,
    /// Non-conflicting systems at the same time, on rayon's pool.
    #[default]
    Parallel,
}

/// Nodes whose chain of work (see [`plan`]) is measured below this run inline, on the thread
/// that released them; costlier ones may go to another thread. A rayon worker that was busy
/// a few microseconds ago starts a handed-off task ~1 us later (and the caller takes back work
/// no helper has started), so a chain of a few microseconds is already worth moving.
const INLINE_BELOW_NS: u64 = 2_000;
/// Costs are measured on the first this many runs after a build, then every `SAMPLE_EVERY`
/// runs, so that timing does not dominate tiny systems.
const WARM_SAMPLES: u32 = 4;
const SAMPLE_EVERY: u32 = 32;

/// A sample above this many times the current estimate is set aside unless the next one is
/// too: the thread was most likely preempted, and one such sample should not move the plan
/// (with the estimate's weight of a quarter per sample, it would take hundreds of runs to
/// forget it).
const OUTLIER_FACTOR: u64 = 4;

/// True when run number `run` (counted from the build) should time its systems.
#[inline]
pub(crate) fn is_sampled_run(run: u32) -> bool {
    is_warm_up_run(run) || run.is_multiple_of(SAMPLE_EVERY)
}

/// True for the first runs after a build, which pay for cold caches and first-touch page
/// faults: their samples keep the fastest, not the average.
#[inline]
pub(crate) fn is_warm_up_run(run: u32) -> bool {
    run < WARM_SAMPLES
}

/// One added system with everything the executors need.
pub(crate) struct SystemSlot {
    pub(crate) system: BoxedSystem,
    /// Its own run conditions (given to the system), which run before those of its sets.
    pub(crate) conditions: Vec<BoxedCondition>,
    /// The run conditions of the sets it is in, shared with the sets' other systems.
    pub(crate) set_conditions: Vec<SetConditionUse>,
    /// The verdict the slot reads before its system runs: while it allows, the system runs
    /// without evaluating anything (see [`conditions_allow`]); set when the schedule is
    /// built (see `ticks.rs`).
    pub(crate) gate: VerdictWord,
    /// The system's access plus its conditions'.
    pub(crate) access: SystemAccess,
    pub(crate) is_apply_deferred: bool,
    /// Smoothed measured cost of one run; `u64::MAX` before the first sample.
    cost_ns: u64,
    /// The last sample was set aside as an outlier (see [`OUTLIER_FACTOR`]).
    outlier: bool,
}

impl SystemSlot {
    pub(crate) fn new(system: BoxedSystem, conditions: Vec<BoxedCondition>, access: SystemAccess) -> Self {
        let is_apply_deferred = system.function_type() == crate::system::apply_deferred_type();
        Self {
            system,
            conditions,
            set_conditions: Vec::new(),
            gate: VerdictWord::never(),
            access,
            is_apply_deferred,
            cost_ns: u64::MAX,
            outlier: false,
        }
    }

    /// True when the slot runs alone, with the whole world: an exclusive system, or an
    /// `apply_deferred` node. Such a node ends a tick segment (`ticks.rs`) and is never
    /// handed to another thread (`plan.rs`).
    #[inline]
    pub(crate) fn is_exclusive(&self) -> bool {
        self.is_apply_deferred || self.access.is_exclusive()
    }

    /// The ticks its own run conditions take, one after another.
    pub(crate) fn own_condition_ticks(&self) -> u64 {
        self.conditions.iter().map(|c| c.ticks_per_run()).sum()
    }

    /// The ticks its sets' run conditions take, one after another: every member reserves
    /// them, whichever member evaluates the condition (see `ticks.rs`).
    pub(crate) fn sum_set_condition_ticks(&self) -> u64 {
        self.set_conditions
            .iter()
            .map(|c| c.condition.ticks_per_run())
            .sum()
    }

    /// The ticks all its run conditions take (its own, then its sets'), which come just
    /// before the system's own tick.
    pub(crate) fn condition_ticks(&self) -> u64 {
        self.own_condition_ticks() + self.sum_set_condition_ticks()
    }

    /// Chooses [`gate`](Self::gate) from the slot's conditions, `always` for a slot without
    /// any (set when the schedule is built: see `ticks.rs`).
    pub(crate) fn choose_gate(&mut self, always: &VerdictWord) {
        self.gate = match (self.conditions.is_empty(), self.set_conditions.as_slice()) {
            (true, []) => always.clone(),
            (true, [only]) => only.condition.verdict_word(),
            _ => VerdictWord::never(),
        };
    }

    /// The sampled cost of one run (`u64::MAX` before the first sample).
    #[inline]
    pub(crate) fn cost_ns(&self) -> u64 {
        self.cost_ns
    }
}

/// What a node of the built graph is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Node {
    /// A system, by slot index.
    System(usize),
    /// A sync point: applies the pending commands of every system that ran before it.
    Sync,
}

impl Node {
    /// True when the node runs alone, with the whole world: a sync point or an exclusive
    /// slot ([`SystemSlot::is_exclusive`]).
    #[inline]
    pub(crate) fn is_exclusive(self, slots: &[SystemSlot]) -> bool {
        match self {
            Node::Sync => true,
            Node::System(index) => slots[index].is_exclusive(),
        }
    }
}

/// Per-run settings shared by the executors.
#[derive(Clone, Copy)]
pub(crate) struct RunContext<'t> {
    /// Where a traced run records its events; `None` when not tracing.
    pub(crate) trace: Option<&'t TraceLog>,
    /// Time every system (a sampled or traced run).
    pub(crate) timed: bool,
    /// One of the first runs after a build (see [`is_warm_up_run`]).
    pub(crate) warming: bool,
    /// How skipped commands are reported.
    pub(crate) command_errors: CommandErrorPolicy,
}

/// Runs one system node (its conditions, then the system), slot `index`.
///
/// Sampled and traced runs (`ctx.timed`, see [`is_sampled_run`]) are timed, out of line, so
/// that the common path carries no clock reads and no trace branch beyond this one.
///
/// # Safety
/// The caller holds the slot's declared access for the call (for an exclusive slot: the
/// whole world, through a mutable cell), and the slot was initialised with this world.
#[inline]
pub(crate) unsafe fn run_system(
    slot: &mut SystemSlot,
    index: usize,
    world: UnsafeWorldCell<'_>,
    ctx: RunContext<'_>,
) {
    if ctx.timed {
        // SAFETY: forwarded contract.
        unsafe { run_system_timed(slot, index, world, ctx) }
    } else {
        // SAFETY: forwarded contract.
        unsafe { run_system_body(slot, world) }
    }
}

/// [`run_system`] with its cost measured, and traced when tracing: the system's interval,
/// and the batches of its `par_for_each` passes, reported by the sink installed around it.
///
/// # Safety
/// As [`run_system`].
#[cold]
#[inline(never)]
unsafe fn run_system_timed(
    slot: &mut SystemSlot,
    index: usize,
    world: UnsafeWorldCell<'_>,
    ctx: RunContext<'_>,
) {
    let start = Instant::now();
    match ctx.trace {
        // SAFETY: forwarded contract.
        None => unsafe { run_system_body(slot, world) },
        Some(log) => tabula_core::query::with_batch_sink(&batch_sink(log, index), || {
            // SAFETY: forwarded contract.
            unsafe { run_system_body(slot, world) }
        }),
    }
    let end = Instant::now();
    let ns = u64::try_from((end - start).as_nanos()).unwrap_or(u64::MAX);
    (slot.cost_ns, slot.outlier) = next_estimate(slot.cost_ns, ns, ctx.warming, slot.outlier);
    if let Some(log) = ctx.trace {
        log.record(TraceKind::System, Some(index), start, end, 0);
    }
}

/// Runs `apply`, a command application of `kind` (for an `apply_deferred` node, `slot` is
/// its system's) that returns how many buffers it applied, and records it when tracing. An
/// untraced run pays one branch.
#[inline]
pub(crate) fn traced_apply(
    ctx: RunContext<'_>,
    kind: TraceKind,
    slot: Option<usize>,
    apply: impl FnOnce() -> usize,
) {
    match ctx.trace {
        None => {
            apply();
        }
        Some(log) => log.record_apply(kind, slot, apply),
    }
}

/// The cost estimate after a sample of `ns`, and whether the sample was set aside as an
/// outlier: the first sample is taken as it is, warm-up runs keep the fastest, and then each
/// sample weighs a quarter, except a lone one far above the estimate (see
/// [`OUTLIER_FACTOR`]).
fn next_estimate(cost: u64, ns: u64, warming: bool, last_was_outlier: bool) -> (u64, bool) {
    if cost == u64::MAX {
        (ns, false)
    } else if warming {
        (cost.min(ns), false)
    } else if ns > cost.saturating_mul(OUTLIER_FACTOR) && !last_was_outlier {
        (cost, true)
    } else {
        ((cost / 4) * 3 + ns / 4, false)
    }
}

/// The conditions, then the system, in a fresh root command context: the system's
/// `ParallelCommands` scopes are keyed from a root of their own, not under whatever parallel
/// pass's run this thread was inside when it took the system up, and take no events from it
/// (`tabula-core`'s `command/parallel.rs`).
///
/// # Safety
/// As [`run_system`].
#[inline(always)]
unsafe fn run_system_body(slot: &mut SystemSlot, world: UnsafeWorldCell<'_>) {
    tabula_core::with_fresh_command_context(|| {
        // SAFETY: forwarded contract.
        if unsafe { conditions_allow(slot, world) } {
            // SAFETY: structure only, to catch up with new archetypes; the caller's access
            // covers it.
            slot.system.update_archetypes(unsafe { world.world() });
            // SAFETY: forwarded contract.
            unsafe { slot.system.run_unsafe(world) };
        }
    });
}

/// True when every run condition of `slot` allows it to run. `world` is the cell the system
/// runs with: its run tick (when it carries one) is the system's, and the conditions take
/// the ticks just before it (see [`ticks`]).
///
/// Most systems have no condition, and a member of one gated set usually finds the set's
/// verdict taken by the member that ran first, and true: the slot's gate (one load of a
/// verdict word, the same for both) answers for them, without touching the cell's tick or
/// walking the slot's conditions. A member cost 23 instructions more than an ungated system
/// when it did both, 6 more when it checked the slot's lists before reading the verdict,
/// and costs what an ungated system does with this (callgrind, 512 empty systems in an
/// `in_state` set, single-threaded; an empty system costs about 90). Everything else (own
/// conditions, several sets, a verdict not yet taken or false) is [`evaluate_conditions`],
/// out of line: a member of a set whose verdict is false does not run its system, so the
/// call is all it pays.
///
/// # Safety
/// As [`run_system`]: the caller holds the slot's access, which includes its conditions'.
#[inline(always)]
pub(crate) unsafe fn conditions_allow(slot: &mut SystemSlot, world: UnsafeWorldCell<'_>) -> bool {
    // SAFETY: forwarded contract.
    slot.gate.allows() || unsafe { evaluate_conditions(slot, world) }
}

/// Runs every run condition of `slot` (each one, every time, each at the run tick after its
/// predecessor's when `world` carries one), then takes the verdicts of its sets'
/// conditions, evaluating those no other system of the set has this run (see
/// [`set_condition`]).
///
/// # Safety
/// As [`conditions_allow`].
#[inline(never)]
unsafe fn evaluate_conditions(slot: &mut SystemSlot, world: UnsafeWorldCell<'_>) -> bool {
    // SAFETY: structure only, to catch up with new archetypes; the caller's access covers it.
    let structure = unsafe { world.world() };
    let mut world = world.with_earlier_run_tick(slot.condition_ticks());
    let mut allowed = true;
    for condition in &mut slot.conditions {
        condition.update_archetypes(structure);
        // SAFETY: conditions are read-only and their access is part of the slot's.
        allowed &= unsafe { condition.run_unsafe(world) };
        world = world.with_later_run_tick(condition.ticks_per_run());
    }
    for used in &slot.set_conditions {
        // SAFETY: as above; the schedule initialised the set's condition with this world.
        allowed &= unsafe { used.verdict(structure, world) };
    }
    allowed
}

/// An `apply_deferred` node: applies every pending command buffer unless one of its run
/// conditions says no. Returns how many buffers it applied.
pub(crate) fn apply_deferred_node(
    slots: &mut [SystemSlot],
    index: usize,
    order: &[usize],
    world: &mut World,
    errors: &mut Vec<SkippedCommand>,
    policy: CommandErrorPolicy,
) -> usize {
    // SAFETY: `&mut World` grants every access, and the schedule initialised the slot's
    // conditions with this world.
    if unsafe { conditions_allow(&mut slots[index], UnsafeWorldCell::new_mutable(world)) } {
        apply_pending(slots, order, world, errors, policy)
    } else {
        0
    }
}

/// Applies every pending command buffer, in `order` (the systems' slots in the order they
/// run), then makes every reserved entity real: ids a system reserved without recording a
/// command (`Commands::spawn_empty`) exist from here on too. Skipped commands go to
/// `errors`, each with the system that recorded it, after `policy` has reported them.
/// Returns how many commands it applied (as the systems recorded them; commands that hooks
/// or applied commands record in turn are not counted).
pub(crate) fn apply_pending(
    slots: &mut [SystemSlot],
    order: &[usize],
    world: &mut World,
    errors: &mut Vec<SkippedCommand>,
    policy: CommandErrorPolicy,
) -> usize {
    let mut skipped = Vec::new();
    let mut applied = 0;
    for &index in order {
        let slot = &mut slots[index];
        if slot.system.has_deferred() {
            applied += slot.system.deferred_len();
            slot.system.apply_deferred(world, &mut skipped);
            let system = slot.system.name();
            for error in skipped.drain(..) {
                let skipped = SkippedCommand::new(system, error);
                policy.report(&skipped);
                errors.push(skipped);
            }
        }
    }
    world.flush();
    applied
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::next_estimate;

    #[test]
    fn cost_estimates_keep_the_fastest_warm_sample_and_set_aside_lone_outliers() {
        // First sample as it is (a cold run), then the fastest warm-up sample.
        let (cost, _) = next_estimate(u64::MAX, 40_000, true, false);
        assert_eq!(cost, 40_000);
        let (cost, _) = next_estimate(cost, 1_500, true, false);
        let (cost, _) = next_estimate(cost, 1_400, true, false);
        let (cost, _) = next_estimate(cost, 1_600, true, false);
        assert_eq!(cost, 1_400);
        // Then a quarter per sample.
        let (cost, outlier) = next_estimate(cost, 1_800, false, false);
        assert_eq!((cost, outlier), (1_500, false));
        // A preempted sample is set aside; the next normal one is averaged in as usual.
        let (cost, outlier) = next_estimate(cost, 900_000, false, false);
        assert_eq!((cost, outlier), (1_500, true));
        let (cost, outlier) = next_estimate(cost, 1_500, false, outlier);
        assert_eq!((cost, outlier), (1_500, false));
        // Two high samples in a row are a real change.
        let (cost, outlier) = next_estimate(cost, 100_000, false, false);
        assert!(outlier);
        let (cost, outlier) = next_estimate(cost, 100_000, false, outlier);
        assert_eq!((cost, outlier), (1_125 + 25_000, false));
    }
}
