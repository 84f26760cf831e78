//! Piping: one system made of two, the first's output fed to the second's [`In`] input
//! ([`IntoSystem::pipe`]).
//!
//! A pipe is one system to the schedule: its access is the union of both parts' (so it
//! conflicts with whatever either part conflicts with, and the two parts may touch the same
//! data, since they never run at the same time), and it runs both parts one after the other
//! on one thread. When the first part is exclusive, the second catches up with the
//! archetypes the first made before it is fetched.
//!
//! [`In`]: crate::In

use std::any::TypeId;

use tabula_core::{CommandError, EventKey, UnsafeWorldCell, World};

use crate::access::SystemAccess;
use crate::system::{IntoSystem, System};

/// Two systems to pipe, before they are made into one ([`IntoSystem::pipe`]).
pub struct Pipe<A, B> {
    pub(crate) first: A,
    pub(crate) next: B,
}

/// Marks the [`IntoSystem`] implementation for [`Pipe`].
pub struct IsPipe;

impl<A, B, AIn, AOut, BOut, MA, MB> IntoSystem<BOut, (IsPipe, AOut, MA, MB), AIn> for Pipe<A, B>
where
    A: IntoSystem<AOut, MA, AIn>,
    B: IntoSystem<BOut, MB, AOut>,
{
    type System = PipeSystem<A::System, B::System>;

    fn into_system(self) -> Self::System {
        let first = self.first.into_system();
        let next = self.next.into_system();
        let name = format!("{} | {}", first.name(), next.name());
        PipeSystem {
            first,
            next,
            name,
            access: SystemAccess::default(),
        }
    }
}

/// The system made by [`IntoSystem::pipe`]: runs `A`, then `B` on `A`'s output.
pub struct PipeSystem<A, B> {
    first: A,
    next: B,
    name: String,
    access: SystemAccess,
}

impl<A: System, B: System<In = A::Out>> System for PipeSystem<A, B> {
    type In = A::In;
    type Out = B::Out;

    fn name(&self) -> &str {
        &self.name
    }

    fn function_type(&self) -> TypeId {
        TypeId::of::<Self>()
    }

    fn initialize(&mut self, world: &mut World) {
        self.first.initialize(world);
        self.next.initialize(world);
        let mut access = self.first.access().clone();
        access.absorb(self.next.access());
        self.access = access;
    }

    fn access(&self) -> &SystemAccess {
        &self.access
    }

    fn update_archetypes(&mut self, world: &World) {
        self.first.update_archetypes(world);
        self.next.update_archetypes(world);
    }

    unsafe fn run_unsafe_with(&mut self, input: A::In, world: UnsafeWorldCell<'_>) -> B::Out {
        // SAFETY: forwarded contract: the caller holds this system's access, the union of
        // both parts', both were initialised and updated with the pipe, and the parts run
        // one after the other (nothing the first fetched outlives its run).
        let out = unsafe { self.first.run_unsafe_with(input, world) };
        if self.first.access().is_exclusive() {
            // An exclusive first part may have made archetypes since the pipe was updated;
            // the second part's query states must know them before it is fetched (a state
            // behind the world indexes its per-archetype table past its end when it looks up
            // an entity in a new archetype).
            // SAFETY: structure only; the first part's `&mut World` ended with its run, and
            // this pipe is exclusive, so nothing else touches the world.
            self.next.update_archetypes(unsafe { world.world() });
        }
        // SAFETY: as above; the second part's archetypes are up to date (updated with the
        // pipe, and again just now if the first part could change the structure).
        unsafe { self.next.run_unsafe_with(out, world) }
    }

    fn has_deferred(&self) -> bool {
        self.first.has_deferred() || self.next.has_deferred()
    }

    fn deferred_len(&self) -> usize {
        self.first.deferred_len() + self.next.deferred_len()
    }

    fn apply_deferred(&mut self, world: &mut World, errors: &mut Vec<CommandError>) {
        self.first.apply_deferred(world, errors);
        self.next.apply_deferred(world, errors);
    }

    fn discard_deferred(&mut self, world: &mut World) {
        self.first.discard_deferred(world);
        self.next.discard_deferred(world);
    }

    fn set_condition_of(&mut self, system: &str) {
        self.first.set_condition_of(system);
        self.next.set_condition_of(system);
    }

    fn set_observer(&mut self) {
        self.first.set_observer();
        self.next.set_observer();
    }

    fn event_key(&self) -> Option<EventKey> {
        self.first.event_key().or_else(|| self.next.event_key())
    }
}
