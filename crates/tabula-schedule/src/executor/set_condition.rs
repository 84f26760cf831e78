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
//!   first system (see [`SetConditionUse::shift`]), not at the tick of whichever system
//!   evaluated it;
//! * every member's access includes the condition's, so every system that writes what the
//!   condition reads is ordered against every member. Two members that are not ordered
//!   against each other therefore have the same such writers before them, and whichever
//!   runs first sees the same world.
//!
//! Members can start at the same time on two threads: [`OncePerRun`] lets one evaluate
//! while the others wait, and makes the verdict, once there, one atomic load, which a
//! member of one gated set reads before anything else (`conditions_allow` in
//! `executor/mod.rs`), where taking a lock at every member's start cost about 33
//! instructions (callgrind, `frame_overhead`'s `run_frame_in_state`).
//!
//! Waiting must never wait on the waiter. A condition's `par_for_each` split over rayon
//! would let a thread that steals a piece of it, and then waits inside that piece, pick up
//! another member and wait for the verdict, while the evaluation waits for its piece. So
//! the evaluation runs its passes serially on the evaluating thread
//! (`tabula_core::query::with_serial_passes`), and never waits on another thread. A
//! condition that starts rayon work of its own (`rayon::join` in its body) is outside this
//! and could still deadlock; a thread that would wait for its own evaluation panics with a
//! message instead.

use std::sync::Arc;

use tabula_core::{UnsafeWorldCell, World};

use crate::access::SystemAccess;
use crate::config::BoxedCondition;
use crate::sync::{AtomicUsize, Backoff, Ordering, UnsafeCell, thread_key};

/// One set's run condition and its verdict for the current run.
pub(crate) struct SetCondition {
    /// Ticks one evaluation takes (fixed for the condition's type: a combinator takes one
    /// per part).
    ticks_per_run: u64,
    /// The condition's access, which every member's access absorbs.
    access: SystemAccess,
    condition: OncePerRun<BoxedCondition>,
}

impl SetCondition {
    /// Wraps an initialised condition.
    pub(crate) fn new(condition: BoxedCondition) -> Self {
        Self {
            ticks_per_run: condition.ticks_per_run(),
            access: condition.access().clone(),
            condition: OncePerRun::new(condition),
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

    /// The word that holds this run's verdict, for a member's gate.
    pub(crate) fn verdict_word(&self) -> VerdictWord {
        VerdictWord(self.condition.state.clone())
    }

    /// Forgets the last run's verdict; called as a schedule run starts.
    pub(crate) fn start_run(&self) {
        self.condition.start_run();
    }

    /// This run's verdict, evaluating the condition at the run tick of `at(world)` if no
    /// member has yet (the cell is made only then, as the verdict is usually there).
    ///
    /// # Safety
    /// The caller holds the condition's access (a member's access includes it), and the
    /// condition was initialised with this world.
    #[inline]
    pub(crate) unsafe fn verdict<'w>(
        &self,
        structure: &World,
        at: impl FnOnce() -> UnsafeWorldCell<'w>,
    ) -> bool {
        self.condition.get(|condition| {
            condition.update_archetypes(structure);
            // Serial passes: see the module docs.
            tabula_core::query::with_serial_passes(|| {
                // SAFETY: forwarded contract.
                unsafe { condition.run_unsafe(at()) }
            })
        })
    }
}

/// A system's use of a set's condition.
pub(crate) struct SetConditionUse {
    pub(crate) condition: Arc<SetCondition>,
    /// The tick the set's first system (in the schedule's order) has for the condition,
    /// less the tick this system's set conditions start at, when both systems are in one
    /// segment (see `ticks.rs`); 0 otherwise, when the first system's segment ran before
    /// this one's and the verdict is already there.
    pub(crate) shift: i64,
}

impl SetConditionUse {
    pub(crate) fn new(condition: Arc<SetCondition>) -> Self {
        Self { condition, shift: 0 }
    }

    /// This run's verdict for a member whose set conditions start at `world`'s run tick,
    /// evaluating the condition if no member has yet.
    ///
    /// # Safety
    /// As for [`SetCondition::verdict`].
    pub(crate) unsafe fn verdict(&self, structure: &World, world: UnsafeWorldCell<'_>) -> bool {
        // SAFETY: forwarded contract.
        unsafe { self.condition.verdict(structure, || self.cell_for(world)) }
    }

    /// `world` (whose run tick is where this system's set conditions start) at the tick the
    /// condition runs at.
    #[inline]
    pub(crate) fn cell_for<'w>(&self, world: UnsafeWorldCell<'w>) -> UnsafeWorldCell<'w> {
        if self.shift < 0 {
            world.with_earlier_run_tick(self.shift.unsigned_abs())
        } else {
            world.with_later_run_tick(self.shift.unsigned_abs())
        }
    }
}

/// A verdict as a slot's gate reads it, first thing (`conditions_allow` in
/// `executor/mod.rs`): a set's word, while a member of it has taken this run's verdict; for
/// a slot without conditions, a word that always allows; for any other slot, one that never
/// does, so that it evaluates its conditions.
#[derive(Clone)]
pub(crate) struct VerdictWord(Arc<AtomicUsize>);

impl VerdictWord {
    /// A word that always allows.
    pub(crate) fn always() -> Self {
        Self(Arc::new(AtomicUsize::new(TRUE)))
    }

    /// A word that never allows by itself.
    pub(crate) fn never() -> Self {
        Self(Arc::new(AtomicUsize::new(UNKNOWN)))
    }

    /// True when the word allows the run: a verdict taken and true (an acquire load, as
    /// [`OncePerRun::known`]).
    #[inline]
    pub(crate) fn allows(&self) -> bool {
        self.0.load(Ordering::Acquire) == TRUE
    }
}

/// No verdict yet this run.
const UNKNOWN: usize = 0;
/// A thread is evaluating; the others wait.
const EVALUATING: usize = 1;
const FALSE: usize = 2;
const TRUE: usize = 3;

/// A `T` that computes a `bool` at most once per run, for whichever thread asks first,
/// while the others wait for it.
///
/// `state` goes `UNKNOWN -> EVALUATING -> FALSE | TRUE` within a run, and back to
/// `UNKNOWN` at the next [`start_run`](Self::start_run) (or when the evaluation unwinds).
/// Only the thread whose compare-exchange moved it to `EVALUATING` touches `value`, until
/// it publishes the verdict with a release store; a thread that reads the verdict with an
/// acquire load sees everything the evaluation did.
pub(crate) struct OncePerRun<T> {
    /// Shared with the members' gates ([`VerdictWord`]), which read it and never write it.
    state: Arc<AtomicUsize>,
    /// The [`thread_key`] of the evaluating thread (0 when none), to tell a thread that would
    /// wait for itself.
    evaluator: AtomicUsize,
    value: UnsafeCell<T>,
}

// SAFETY: `value` is only reached by the one thread that holds `EVALUATING` (the state
// machine above), so sharing the cell across threads sends the `T` at most; it needs `Send`.
unsafe impl<T: Send> Sync for OncePerRun<T> {}

impl<T> OncePerRun<T> {
    pub(crate) fn new(value: T) -> Self {
        Self {
            state: Arc::new(AtomicUsize::new(UNKNOWN)),
            evaluator: AtomicUsize::new(0),
            value: UnsafeCell::new(value),
        }
    }

    /// Forgets the last verdict. An evaluation under way (none is, between runs) keeps its
    /// state: only a verdict goes back to `UNKNOWN`.
    pub(crate) fn start_run(&self) {
        let _ = self
            .state
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |state| {
                (state >= FALSE).then_some(UNKNOWN)
            });
    }

    /// This run's verdict: `evaluate`'s, run on the value by the first caller.
    ///
    /// # Panics
    /// When `evaluate` panics (the verdict stays unknown, for the next caller to try), or
    /// when the thread evaluating calls this again from inside `evaluate` (see the module
    /// docs).
    #[inline]
    pub(crate) fn get(&self, evaluate: impl FnOnce(&mut T) -> bool) -> bool {
        match self.known() {
            Some(verdict) => verdict,
            None => self.evaluate_or_wait(evaluate),
        }
    }

    /// This run's verdict if it is there (an acquire load: the caller sees everything the
    /// evaluation did), `None` while unknown or being evaluated.
    #[inline]
    pub(crate) fn known(&self) -> Option<bool> {
        match self.state.load(Ordering::Acquire) {
            TRUE => Some(true),
            FALSE => Some(false),
            _ => None,
        }
    }

    #[cold]
    #[inline(never)]
    fn evaluate_or_wait(&self, evaluate: impl FnOnce(&mut T) -> bool) -> bool {
        let backoff = Backoff::new();
        loop {
            match self
                .state
                .compare_exchange(UNKNOWN, EVALUATING, Ordering::Acquire, Ordering::Acquire)
            {
                Ok(_) => {
                    self.evaluator.store(thread_key(), Ordering::Relaxed);
                    let unwinding = Unwinding(self);
                    // SAFETY: this thread moved the state to `EVALUATING`, so it alone may
                    // reach the value until it stores a verdict or `Unwinding` resets it.
                    let verdict = self.value.with_mut(|value| evaluate(unsafe { &mut *value }));
                    std::mem::forget(unwinding);
                    self.evaluator.store(0, Ordering::Relaxed);
                    self.state
                        .store(if verdict { TRUE } else { FALSE }, Ordering::Release);
                    return verdict;
                }
                Err(TRUE) => return true,
                Err(FALSE) => return false,
                Err(_) => {
                    assert!(
                        self.evaluator.load(Ordering::Relaxed) != thread_key(),
                        "a set's run condition was asked for its verdict while this thread was \
                         evaluating it (it ran a `par_for_each`, and the thread picked up another \
                         system of the set while it waited): give that condition to each system \
                         with `run_if` instead of to the set, or run it without `par_for_each`"
                    );
                    backoff.snooze();
                }
            }
        }
    }
}

/// Resets an evaluation that unwinds, so that the verdict stays unknown and nobody waits for
/// it forever.
struct Unwinding<'a, T>(&'a OncePerRun<T>);

impl<T> Drop for Unwinding<'_, T> {
    fn drop(&mut self) {
        self.0.evaluator.store(0, Ordering::Relaxed);
        self.0.state.store(UNKNOWN, Ordering::Release);
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    //! Two threads ask for one verdict at once (one of them through a member's gate): the
    //! value is evaluated once, every thread gets its verdict and sees the evaluation's
    //! writes, and a run after `start_run` evaluates again.

    use super::*;
    use loom::sync::Arc;

    #[test]
    fn loom_one_evaluation_per_run_whoever_asks() {
        loom::model(|| {
            let once = Arc::new(OncePerRun::new(0_u32));
            let ask = |once: &OncePerRun<u32>| {
                once.get(|evaluations| {
                    *evaluations += 1;
                    *evaluations % 2 == 1
                })
            };
            // The other thread asks as a member does: its gate's word first.
            let other = {
                let once = once.clone();
                let gate = VerdictWord(once.state.clone());
                loom::thread::spawn(move || gate.allows() || ask(&once))
            };
            let here = ask(&once);
            assert!(here && other.join().unwrap());
            once.start_run();
            assert!(!ask(&once), "the second run evaluates again");
            // SAFETY: every thread that could reach the value has been joined.
            once.value
                .with_mut(|evaluations| assert_eq!(unsafe { *evaluations }, 2));
        });
    }

    #[test]
    fn loom_an_evaluation_that_panics_leaves_the_verdict_to_the_next_caller() {
        loom::model(|| {
            let once = Arc::new(OncePerRun::new(0_u32));
            let failing = {
                let once = once.clone();
                loom::thread::spawn(move || {
                    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        once.get(|_| panic!("the condition panicked"))
                    }))
                    .is_err()
                })
            };
            // Either this thread evaluates first (and the other then finds a verdict), or
            // the other's panic resets the state and this thread evaluates.
            let here = once.get(|evaluations| {
                *evaluations += 1;
                true
            });
            failing.join().unwrap();
            assert!(here);
            // SAFETY: every thread that could reach the value has been joined.
            let evaluations = once.value.with_mut(|evaluations| unsafe { *evaluations });
            assert_eq!(evaluations, 1);
        });
    }
}
