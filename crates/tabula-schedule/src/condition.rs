//! Ready-made run conditions, and [`not`], [`and`] and [`or`] to combine conditions.
//!
//! A run condition is any read-only system returning `bool` (see
//! [`run_if`](crate::IntoSystemConfigs::run_if)); these are the ones games keep writing:
//!
//! ```
//! use tabula::prelude::*;
//! use tabula::schedule::condition::{and, not, on_event, resource_exists, run_once};
//!
//! struct Paused;
//! struct Explosion;
//! #[derive(Default)]
//! struct Log(Vec<&'static str>);
//!
//! fn setup(mut log: ResMut<Log>) {
//!     log.0.push("setup");
//! }
//! fn shake(mut log: ResMut<Log>) {
//!     log.0.push("shake");
//! }
//!
//! let mut world = World::new();
//! world.init_resource::<Log>();
//! world.add_event::<Explosion>();
//! let mut schedule = Schedule::new();
//! schedule.add_systems((
//!     setup.run_if(run_once),
//!     shake.run_if(and(on_event::<Explosion>, not(resource_exists::<Paused>))),
//! ).chain());
//! schedule.run(&mut world);
//! world.send_event(Explosion);
//! schedule.run(&mut world);
//! world.insert_resource(Paused);
//! world.send_event(Explosion);
//! schedule.run(&mut world);
//! assert_eq!(world.resource::<Log>().unwrap().0, ["setup", "shake"]);
//! ```
//!
//! The combinators keep the union of their parts' accesses, so the scheduler orders a
//! combined condition as it would each part. [`and`] and [`or`] short-circuit: the second
//! condition does not run when the first decides (as `&&` and `||`), so a condition with
//! state of its own (`run_once`, `on_event`) only counts the runs it was asked.

use std::any::TypeId;

use tabula_core::{Component, Entity, UnsafeWorldCell, With, World};

use crate::access::SystemAccess;
use crate::pair::SystemPair;
use crate::param::{EventReader, Local, Query, Res};
use crate::system::{IntoSystem, System};

/// True while a resource of type `R` exists.
pub fn resource_exists<R: Component>(resource: Option<Res<R>>) -> bool {
    resource.is_some()
}

/// True when the resource `R` was added or changed since this condition last ran (false
/// when there is none).
pub fn resource_changed<R: Component>(resource: Option<Res<R>>) -> bool {
    resource.is_some_and(|resource| resource.is_changed())
}

/// True when the resource `R` was added since this condition last ran.
pub fn resource_added<R: Component>(resource: Option<Res<R>>) -> bool {
    resource.is_some_and(|resource| resource.is_added())
}

/// A condition that is true while the resource `R` exists and equals `value`.
///
/// ```
/// use tabula::prelude::*;
/// use tabula::schedule::condition::resource_equals;
///
/// #[derive(PartialEq, Clone, Copy)]
/// enum Phase { Menu, Playing }
/// #[derive(Default)]
/// struct Frames(u32);
///
/// fn play(mut frames: ResMut<Frames>) {
///     frames.0 += 1;
/// }
///
/// let mut world = World::new();
/// world.init_resource::<Frames>();
/// world.insert_resource(Phase::Menu);
/// let mut schedule = Schedule::new();
/// schedule.add_systems(play.run_if(resource_equals(Phase::Playing)));
/// schedule.run(&mut world);
/// world.insert_resource(Phase::Playing);
/// schedule.run(&mut world);
/// assert_eq!(world.resource::<Frames>().unwrap().0, 1);
/// ```
pub fn resource_equals<R: Component + PartialEq + Clone>(
    value: R,
) -> impl FnMut(Option<Res<R>>) -> bool + Clone + Send + Sync + 'static {
    move |resource: Option<Res<R>>| resource.is_some_and(|resource| *resource == value)
}

/// True when events of type `E` were sent that this condition has not seen yet; it reads
/// them (each condition keeps its own cursor, as an `EventReader` does).
pub fn on_event<E: Send + Sync + 'static>(mut events: EventReader<E>) -> bool {
    let any = !events.is_empty();
    events.clear();
    any
}

/// True while at least one entity has a component `T`.
pub fn any_with_component<T: Component>(entities: Query<Entity, With<T>>) -> bool {
    entities.iter().next().is_some()
}

/// True the first time it runs, false after.
pub fn run_once(mut ran: Local<bool>) -> bool {
    !std::mem::replace(&mut *ran, true)
}

/// A condition that is true when `condition` is false.
pub fn not<M, C: IntoSystem<bool, M>>(condition: C) -> NotCondition<C> {
    NotCondition(condition)
}

/// A condition that is true when both are; `second` runs only when `first` is true.
pub fn and<MA, MB, A: IntoSystem<bool, MA>, B: IntoSystem<bool, MB>>(
    first: A,
    second: B,
) -> AndCondition<A, B> {
    AndCondition(first, second)
}

/// A condition that is true when either is; `second` runs only when `first` is false.
pub fn or<MA, MB, A: IntoSystem<bool, MA>, B: IntoSystem<bool, MB>>(
    first: A,
    second: B,
) -> OrCondition<A, B> {
    OrCondition(first, second)
}

/// The condition [`not`] makes.
#[derive(Clone)]
pub struct NotCondition<C>(C);

/// The condition [`and`] makes.
#[derive(Clone)]
pub struct AndCondition<A, B>(A, B);

/// The condition [`or`] makes.
#[derive(Clone)]
pub struct OrCondition<A, B>(A, B);

/// Marks the `IntoSystem` implementations of the combinators.
pub struct IsCombinator;

/// How a [`Combined`] condition joins its parts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Join {
    Not,
    And,
    Or,
}

/// A condition built from one or two others (see [`not`], [`and`], [`or`]).
pub struct Combined<A, B> {
    join: Join,
    /// The parts; no second one for `not`.
    parts: SystemPair<A, B>,
    name: String,
}

impl<M: 'static, C: IntoSystem<bool, M>> IntoSystem<bool, (IsCombinator, M)> for NotCondition<C> {
    type System = Combined<C::System, C::System>;

    fn into_system(self) -> Self::System {
        let first = self.0.into_system();
        Combined::new(Join::Not, first, None)
    }
}

impl<MA: 'static, MB: 'static, A: IntoSystem<bool, MA>, B: IntoSystem<bool, MB>>
    IntoSystem<bool, (IsCombinator, MA, MB)> for AndCondition<A, B>
{
    type System = Combined<A::System, B::System>;

    fn into_system(self) -> Self::System {
        Combined::new(Join::And, self.0.into_system(), Some(self.1.into_system()))
    }
}

impl<MA: 'static, MB: 'static, A: IntoSystem<bool, MA>, B: IntoSystem<bool, MB>>
    IntoSystem<bool, (IsCombinator, MA, MB, ())> for OrCondition<A, B>
{
    type System = Combined<A::System, B::System>;

    fn into_system(self) -> Self::System {
        Combined::new(Join::Or, self.0.into_system(), Some(self.1.into_system()))
    }
}

impl<A: System<Out = bool>, B: System<Out = bool>> Combined<A, B> {
    fn new(join: Join, first: A, second: Option<B>) -> Self {
        let name = match (&join, &second) {
            (Join::Not, _) | (_, None) => format!("not({})", first.name()),
            (Join::And, Some(second)) => format!("and({}, {})", first.name(), second.name()),
            (Join::Or, Some(second)) => format!("or({}, {})", first.name(), second.name()),
        };
        Self {
            join,
            parts: SystemPair::new(first, second),
            name,
        }
    }
}

impl<A: System<In = (), Out = bool>, B: System<In = (), Out = bool>> System for Combined<A, B> {
    type In = ();
    type Out = bool;

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

    unsafe fn run_unsafe_with(&mut self, (): (), world: UnsafeWorldCell<'_>) -> bool {
        // SAFETY: forwarded contract; the caller holds this system's access, the pair's,
        // and the parts run one after the other.
        let first = unsafe { self.parts.run_first((), world) };
        match self.join {
            Join::Not => !first,
            Join::And if !first => false,
            Join::Or if first => true,
            // An exclusive first part (possible in a one-shot system; schedules and
            // observers refuse exclusive conditions) is caught up with by the pair.
            // SAFETY: as above; the first part's run has ended.
            Join::And | Join::Or => unsafe { self.parts.run_second((), world) }.unwrap_or(first),
        }
    }

    fn has_deferred(&self) -> bool {
        self.parts.has_deferred()
    }

    fn apply_deferred(&mut self, world: &mut World, errors: &mut Vec<tabula_core::CommandError>) {
        self.parts.apply_deferred(world, errors);
    }

    fn discard_deferred(&mut self, world: &mut World) {
        self.parts.discard_deferred(world);
    }

    fn set_condition_of(&mut self, system: &str) {
        self.parts.set_condition_of(system);
    }
}
