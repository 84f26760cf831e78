//! Piping: one system made of two, the first's output fed to the second's [`In`] input
//! ([`IntoSystem::pipe`]).
//!
//! A pipe is one system to the schedule, made of a [`SystemPair`]: its access is the union
//! of both parts' (so it conflicts with whatever either part conflicts with, and the two
//! parts may touch the same data, since they never run at the same time), and it runs both
//! parts one after the other on one thread. When the first part is exclusive, the second
//! catches up with the archetypes the first made before it is fetched.
//!
//! [`In`]: crate::In

use std::any::TypeId;

use tabula_core::{CommandError, EventKey, UnsafeWorldCell, World};

use crate::access::SystemAccess;
use crate::pair::SystemPair;
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
            parts: SystemPair::new(first, Some(next)),
            name,
        }
    }
}

/// The system made by [`IntoSystem::pipe`]: runs `A`, then `B` on `A`'s output.
pub struct PipeSystem<A, B> {
    /// The two parts; the second is always there.
    parts: SystemPair<A, B>,
    name: String,
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
        self.parts.initialize(world);
    }

    fn access(&self) -> &SystemAccess {
        self.parts.access()
    }

    fn update_archetypes(&mut self, world: &World) {
        self.parts.update_archetypes(world);
    }

    fn ticks_per_run(&self) -> u64 {
        self.parts.ticks_per_run()
    }

    unsafe fn run_unsafe_with(&mut self, input: A::In, world: UnsafeWorldCell<'_>) -> B::Out {
        // SAFETY: forwarded contract: the caller holds this system's access, the pair's,
        // which was initialised and updated with the pipe; the first part's run has ended
        // before the second starts.
        let out = unsafe { self.parts.run_first(input, world) };
        // SAFETY: as above.
        let out = unsafe { self.parts.run_second(out, world) };
        out.expect("a pipe always has its second part")
    }

    fn has_deferred(&self) -> bool {
        self.parts.has_deferred()
    }

    fn deferred_len(&self) -> usize {
        self.parts.deferred_len()
    }

    fn apply_deferred(&mut self, world: &mut World, errors: &mut Vec<CommandError>) {
        self.parts.apply_deferred(world, errors);
    }

    fn discard_deferred(&mut self, world: &mut World) {
        self.parts.discard_deferred(world);
    }

    fn set_condition_of(&mut self, system: &str) {
        self.parts.set_condition_of(system);
    }

    fn set_observer(&mut self) {
        self.parts.set_observer();
    }

    fn event_key(&self) -> Option<EventKey> {
        self.parts.event_key()
    }
}
