//! A set's run condition, evaluated once per schedule run and shared by the set's systems.
//!
//! A condition given to a set (`configure_sets(Playing.run_if(in_state(Game::Playing)))`)
//! guards every system in it. Running one instance per member made a set of 64 trivial
//! systems cost about twice as much as the systems alone (a condition run costs about what
//! an empty system does: `frame_overhead` in `benches/benches/schedule.rs`). So the set
//! has one instance, made once and kept across rebuilds, and the first of its systems to
//! start in a run evaluates it; the others take its verdict.
//!
//! The verdict is the same whichever system gets there first, at any thread count:
//! * the condition runs at one tick, the tick the schedule's order gives it in the set's
//!   first system (see [`SetConditionUse::tick_back`]), not at the tick of whichever system
//!   evaluated it;
//! * every member's access includes the condition's, so every system that writes what the
//!   condition reads is ordered against every member. Two members that are not ordered
//!   against each other therefore have the same such writers before them, and whichever
//!   runs first sees the same world.
//!
//! Members can start at the same time on two threads; a lock makes the second wait for the
//! first's evaluation. It is re-entrant, so a thread that picks up another member while
//! the condition waits on a `par_for_each` inside it panics with a message instead of
//! deadlocking.

use std::cell::RefCell;
use std::sync::Arc;

use parking_lot::ReentrantMutex;
use tabula_core::{UnsafeWorldCell, World};

use crate::access::SystemAccess;
use crate::config::BoxedCondition;

/// One set's run condition and its verdict for the current run.
pub(crate) struct SetCondition {
    /// Ticks one evaluation takes (fixed for the condition's type: a combinator takes one
    /// per part).
    ticks_per_run: u64,
    /// The condition's access, which every member's access absorbs.
    access: SystemAccess,
    state: ReentrantMutex<RefCell<Evaluation>>,
}

struct Evaluation {
    condition: BoxedCondition,
    /// The verdict of this run, once a member evaluated it.
    verdict: Option<bool>,
}

impl SetCondition {
    /// Wraps an initialised condition.
    pub(crate) fn new(condition: BoxedCondition) -> Self {
        Self {
            ticks_per_run: condition.ticks_per_run(),
            access: condition.access().clone(),
            state: ReentrantMutex::new(RefCell::new(Evaluation {
                condition,
                verdict: None,
            })),
        }
    }

    /// The condition's declared access.
    pub(crate) fn access(&self) -> &SystemAccess {
        &self.access
    }

    /// Ticks one evaluation takes.
    pub(crate) fn ticks_per_run(&self) -> u64 {
        self.ticks_per_run
    }

    /// Forgets the last run's verdict; called as a schedule run starts.
    pub(crate) fn start_run(&self) {
        self.state.lock().borrow_mut().verdict = None;
    }

    /// This run's verdict, evaluating the condition at `world`'s run tick if no member has
    /// yet.
    ///
    /// # Safety
    /// The caller holds the condition's access (a member's access includes it), and the
    /// condition was initialised with this world.
    pub(crate) unsafe fn verdict(&self, structure: &World, world: UnsafeWorldCell<'_>) -> bool {
        let guard = self.state.lock();
        let Ok(mut evaluation) = guard.try_borrow_mut() else {
            panic!(
                "a set's run condition was asked for its verdict while it was being evaluated \
                 on the same thread (it ran a `par_for_each`, and the thread picked up another \
                 system of the set while it waited): give that condition to each system with \
                 `run_if` instead of to the set, or make it run without `par_for_each`"
            );
        };
        if let Some(verdict) = evaluation.verdict {
            return verdict;
        }
        evaluation.condition.update_archetypes(structure);
        // SAFETY: forwarded contract.
        let verdict = unsafe { evaluation.condition.run_unsafe(world) };
        evaluation.verdict = Some(verdict);
        verdict
    }
}

/// A system's use of a set's condition.
pub(crate) struct SetConditionUse {
    pub(crate) condition: Arc<SetCondition>,
    /// How many ticks before this system's tick for the condition the set's first system
    /// (in the schedule's order) has its tick for it, when both are in one segment (see
    /// `ticks.rs`); 0 otherwise, when the first system's segment ran before this one's and
    /// the verdict is already there.
    pub(crate) tick_back: u64,
}

impl SetConditionUse {
    pub(crate) fn new(condition: Arc<SetCondition>) -> Self {
        Self {
            condition,
            tick_back: 0,
        }
    }
}
