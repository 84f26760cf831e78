//! Two systems run as one, one after the other on one thread: what a [pipe](crate::pipe)
//! and the [`and`](crate::condition::and) / [`or`](crate::condition::or) /
//! [`not`](crate::condition::not) conditions are made of.
//!
//! The pair's access is the union of both parts' (so it conflicts with whatever either
//! part conflicts with, and the two may touch the same data, since they never run at the
//! same time). Both parts are initialised and updated with the pair; when the first part
//! is exclusive, the second catches up with the archetypes the first made before it is
//! fetched. The second part is optional (`not` has none).

use tabula_core::{CommandError, EventKey, UnsafeWorldCell, World};

use crate::access::SystemAccess;
use crate::system::System;

/// Two systems sharing one access, run one after the other (see the module docs).
pub(crate) struct SystemPair<A, B> {
    pub(crate) first: A,
    pub(crate) second: Option<B>,
    access: SystemAccess,
}

impl<A: System, B: System> SystemPair<A, B> {
    /// The pair of `first` and `second`; its access is set by [`initialize`](Self::initialize).
    pub(crate) fn new(first: A, second: Option<B>) -> Self {
        Self {
            first,
            second,
            access: SystemAccess::default(),
        }
    }

    /// Initialises both parts and takes the union of their accesses.
    pub(crate) fn initialize(&mut self, world: &mut World) {
        self.first.initialize(world);
        let mut access = self.first.access().clone();
        if let Some(second) = &mut self.second {
            second.initialize(world);
            access.absorb(second.access());
        }
        self.access = access;
    }

    /// The union of both parts' accesses (valid after `initialize`).
    pub(crate) fn access(&self) -> &SystemAccess {
        &self.access
    }

    /// Updates both parts' archetypes.
    pub(crate) fn update_archetypes(&mut self, world: &World) {
        self.first.update_archetypes(world);
        if let Some(second) = &mut self.second {
            second.update_archetypes(world);
        }
    }

    /// Both parts' ticks per run, added (see [`System::ticks_per_run`]).
    pub(crate) fn ticks_per_run(&self) -> u64 {
        self.first.ticks_per_run() + self.second.as_ref().map_or(0, System::ticks_per_run)
    }

    /// Runs the first part.
    ///
    /// # Safety
    /// As [`System::run_unsafe_with`], for the pair's access: the caller holds it, and the
    /// pair was initialised and updated.
    pub(crate) unsafe fn run_first(&mut self, input: A::In, world: UnsafeWorldCell<'_>) -> A::Out {
        // SAFETY: the caller holds the pair's access, a superset of the first part's, and
        // the part was initialised and updated with the pair.
        unsafe { self.first.run_unsafe_with(input, world) }
    }

    /// Runs the second part, if there is one, after the first has run.
    ///
    /// # Safety
    /// As for [`run_first`](Self::run_first), and the first part's run has ended (nothing
    /// it fetched is still in use).
    pub(crate) unsafe fn run_second(&mut self, input: B::In, world: UnsafeWorldCell<'_>) -> Option<B::Out> {
        let second = self.second.as_mut()?;
        if self.first.access().is_exclusive() {
            // An exclusive first part may have made archetypes since the pair was updated;
            // the second part's query states must know them before it is fetched (a state
            // behind the world indexes its per-archetype table past its end when it looks up
            // an entity in a new archetype).
            // SAFETY: structure only; the first part's `&mut World` ended with its run, and
            // the pair is exclusive, so nothing else touches the world.
            second.update_archetypes(unsafe { world.world() });
        }
        // The second part starts at the tick after the first part's (when the cell carries
        // a run tick), so that each part sees the other's writes on its next run.
        let later = world.with_later_run_tick(self.first.ticks_per_run());
        // SAFETY: as for `run_first`; the second part's archetypes are up to date (updated
        // with the pair, and again just now if the first part could change the structure).
        Some(unsafe { second.run_unsafe_with(input, later) })
    }

    /// Whether either part has deferred work.
    pub(crate) fn has_deferred(&self) -> bool {
        self.first.has_deferred() || self.second.as_ref().is_some_and(System::has_deferred)
    }

    /// Both parts' deferred lengths, added.
    pub(crate) fn deferred_len(&self) -> usize {
        self.first.deferred_len() + self.second.as_ref().map_or(0, System::deferred_len)
    }

    /// Applies the first part's deferred work, then the second's.
    pub(crate) fn apply_deferred(&mut self, world: &mut World, errors: &mut Vec<CommandError>) {
        self.first.apply_deferred(world, errors);
        if let Some(second) = &mut self.second {
            second.apply_deferred(world, errors);
        }
    }

    /// Discards both parts' deferred work.
    pub(crate) fn discard_deferred(&mut self, world: &mut World) {
        self.first.discard_deferred(world);
        if let Some(second) = &mut self.second {
            second.discard_deferred(world);
        }
    }

    /// Tells both parts they are a condition of `system`.
    pub(crate) fn set_condition_of(&mut self, system: &str) {
        self.first.set_condition_of(system);
        if let Some(second) = &mut self.second {
            second.set_condition_of(system);
        }
    }

    /// Marks both parts as an observer's.
    pub(crate) fn set_observer(&mut self) {
        self.first.set_observer();
        if let Some(second) = &mut self.second {
            second.set_observer();
        }
    }

    /// The event either part's `Trigger` watches, the first's if both have one.
    pub(crate) fn event_key(&self) -> Option<EventKey> {
        (self.first.event_key()).or_else(|| self.second.as_ref().and_then(System::event_key))
    }
}
