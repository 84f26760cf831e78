//! The [`System`] trait and the two ways plain functions become systems: functions of
//! [`SystemParam`]s (optionally taking an [`In`] input first), and exclusive functions of
//! `&mut World`.

use std::any::{TypeId, type_name};
use std::borrow::Cow;

use tabula_core::{CommandError, UnsafeWorldCell, World};

use crate::access::SystemAccess;
use crate::param::{SystemMeta, SystemParam, SystemParamItem};
use crate::pipe::Pipe;

/// Something a schedule can run: a name, a declared access, and a body.
pub trait System: Send + Sync + 'static {
    /// What one run takes: `()` for most systems, `T` for a function whose first parameter
    /// is [`In<T>`] (see [`IntoSystem::pipe`] and
    /// [`WorldSystems::run_system_with`](crate::WorldSystems::run_system_with)).
    type In;
    /// What one run returns (`()` for systems, `bool` for run conditions).
    type Out;

    /// The name used in messages, graphs and traces.
    fn name(&self) -> &str;

    /// Identifies the function the system was made from, so `.after(function)` finds it.
    fn function_type(&self) -> TypeId;

    /// Builds parameter state and declares access. Called once per world before running.
    ///
    /// # Panics
    /// When two parameters of the system would alias.
    fn initialize(&mut self, world: &mut World);

    /// What the system reads and writes (valid after `initialize`).
    fn access(&self) -> &SystemAccess;

    /// Catches up with archetypes created since the last run.
    fn update_archetypes(&mut self, world: &World);

    /// How many change ticks one run takes: one per system run inside it (a pipe takes its
    /// parts' sum). A schedule reserves that many for the system, in its order (see
    /// [`World::reserve_change_ticks`]), and hands the first in the cell; a system that
    /// runs another after its first part gives it the cell
    /// [`with_later_run_tick`](UnsafeWorldCell::with_later_run_tick), so that each part
    /// starts at a tick of its own, later than its predecessor's.
    fn ticks_per_run(&self) -> u64 {
        1
    }

    /// Runs the system on `input`.
    ///
    /// # Safety
    /// The system was initialised with this world and its archetypes updated; for the whole
    /// call the caller holds the system's declared access (for an exclusive system: nothing
    /// else touches the world, and the cell allows mutation).
    unsafe fn run_unsafe_with(&mut self, input: Self::In, world: UnsafeWorldCell<'_>) -> Self::Out;

    /// Runs a system that takes no input.
    ///
    /// # Safety
    /// As for [`run_unsafe_with`](Self::run_unsafe_with).
    unsafe fn run_unsafe(&mut self, world: UnsafeWorldCell<'_>) -> Self::Out
    where
        Self::In: NoInput,
    {
        // SAFETY: the caller's contract is `run_unsafe_with`'s.
        unsafe { self.run_unsafe_with(NoInput::none(), world) }
    }

    /// Runs the system on `input` with exclusive access to the world.
    fn run_with(&mut self, input: Self::In, world: &mut World) -> Self::Out {
        self.update_archetypes(world);
        // SAFETY: `&mut World` grants every access; the system was initialised by the caller.
        unsafe { self.run_unsafe_with(input, UnsafeWorldCell::new_mutable(world)) }
    }

    /// Runs a system that takes no input with exclusive access to the world.
    fn run(&mut self, world: &mut World) -> Self::Out
    where
        Self::In: NoInput,
    {
        self.run_with(NoInput::none(), world)
    }

    /// True when the last run recorded deferred work (commands).
    fn has_deferred(&self) -> bool;

    /// How many commands the deferred work holds, for traces; by default 1 when there is
    /// any.
    fn deferred_len(&self) -> usize {
        usize::from(self.has_deferred())
    }

    /// Applies deferred work; error descriptions of skipped commands go to `errors`.
    fn apply_deferred(&mut self, world: &mut World, errors: &mut Vec<CommandError>);

    /// Drops deferred work without applying it (after a run was aborted by a panic); ids its
    /// commands reserved for spawns are freed in `world`.
    fn discard_deferred(&mut self, _world: &mut World) {}

    /// Tells a run condition what it guards, as messages name it (``system `name` `` or
    /// ``set `Name` ``), before `initialize`, so its messages (a missing resource, say) name
    /// that too. Systems that are never conditions can ignore it.
    fn set_condition_of(&mut self, _guard: &str) {}

    /// Tells the system it runs as an observer, before `initialize` (its `Commands` then use
    /// the world's shared entity lane). Systems that are never observers can ignore it.
    fn set_observer(&mut self) {}

    /// The event the system's `Trigger` parameter watches (valid after `initialize`).
    fn event_key(&self) -> Option<tabula_core::EventKey> {
        None
    }
}

/// The input of a system that takes none: implemented by `()` alone, so that
/// [`System::run`] and [`System::run_unsafe`] exist only for such systems.
pub trait NoInput {
    /// The input.
    fn none() -> Self;
}

impl NoInput for () {
    fn none() {}
}

/// A boxed system of the schedule (one that takes no input, unless `In` says otherwise).
pub type BoxedSystem<Out = (), In = ()> = Box<dyn System<In = In, Out = Out>>;

/// The input of a system: a function whose first parameter is `In<T>` is a system that
/// takes a `T` on each run — from the system piped into it ([`IntoSystem::pipe`]) or from
/// [`WorldSystems::run_system_with`](crate::WorldSystems::run_system_with).
///
/// A system with an input cannot be added to a [`Schedule`](crate::Schedule) alone (nothing
/// would give it one); pipe a system into it, and add the pipe.
///
/// ```
/// use tabula::prelude::*;
///
/// fn double(In(n): In<u32>) -> u32 {
///     n * 2
/// }
///
/// let mut world = World::new();
/// let id = world.register_system(double);
/// assert_eq!(world.run_system_with(id, 21).unwrap(), 42);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct In<T>(pub T);

impl<T> In<T> {
    /// The input value.
    pub fn into_inner(self) -> T {
        self.0
    }
}

impl<T> std::ops::Deref for In<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T> std::ops::DerefMut for In<T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.0
    }
}

/// Converts a function (or a combination of systems) into a [`System`] taking `In` (`()`
/// unless the function's first parameter is [`In<T>`]) and returning `Out`.
pub trait IntoSystem<Out, Marker, In = ()>: Sized {
    /// The system type.
    type System: System<In = In, Out = Out>;

    /// Makes the system.
    fn into_system(self) -> Self::System;

    /// One system that runs `self`, then `next` on what `self` returned (`next`'s first
    /// parameter is `In<Out>`): bevy's `pipe`.
    ///
    /// The pipe's access is the union of both systems' (the schedule orders it against
    /// others as one system), its input is `self`'s and its output `next`'s; a pipe
    /// returning `()` and taking no input is added to a [`Schedule`](crate::Schedule) like
    /// any system. Commands the two record are applied together, `self`'s first, after the
    /// pipe's run: `next` does not see `self`'s commands applied.
    ///
    /// ```
    /// use tabula::prelude::*;
    ///
    /// struct Fuel(f32);
    /// #[derive(Default)]
    /// struct Log(Vec<String>);
    ///
    /// fn burn(mut tanks: Query<&mut Fuel>) -> Result<(), String> {
    ///     for mut fuel in &mut tanks {
    ///         fuel.0 -= 30.0;
    ///         if fuel.0 < 0.0 {
    ///             return Err(format!("a tank ran dry ({})", fuel.0));
    ///         }
    ///     }
    ///     Ok(())
    /// }
    ///
    /// fn report(In(result): In<Result<(), String>>, mut log: ResMut<Log>) {
    ///     if let Err(error) = result {
    ///         log.0.push(error);
    ///     }
    /// }
    ///
    /// let mut world = World::new();
    /// world.init_resource::<Log>();
    /// world.spawn((Fuel(50.0),));
    /// let mut schedule = Schedule::new();
    /// schedule.add_systems(burn.pipe(report));
    /// schedule.run(&mut world); // 20 left
    /// schedule.run(&mut world); // dry
    /// assert_eq!(world.resource::<Log>().unwrap().0, ["a tank ran dry (-10)"]);
    /// ```
    fn pipe<B, BOut, BMarker>(self, next: B) -> Pipe<Self, B>
    where
        B: IntoSystem<BOut, BMarker, Out>,
    {
        Pipe { first: self, next }
    }
}

/// A function whose parameters are all [`SystemParam`]s, after an optional [`In`] input.
pub trait SystemParamFunction<Marker>: Send + Sync + 'static {
    /// The input (`T` for a first parameter `In<T>`, else `()`).
    type In;
    /// The parameters, as a tuple.
    type Param: SystemParam;
    /// The return type.
    type Out;

    /// Calls the function.
    fn call(&mut self, input: Self::In, param: SystemParamItem<'_, '_, Self::Param>) -> Self::Out;
}

/// A system made from a [`SystemParamFunction`].
pub struct FunctionSystem<Marker, F: SystemParamFunction<Marker>> {
    function: F,
    state: Option<<F::Param as SystemParam>::State>,
    meta: SystemMeta,
    _marker: std::marker::PhantomData<fn() -> Marker>,
}

/// Marks the `IntoSystem` implementation for parameter functions.
pub struct IsFunctionSystem;

impl<Marker: 'static, F: SystemParamFunction<Marker>> IntoSystem<F::Out, (IsFunctionSystem, Marker), F::In>
    for F
where
    F::Out: 'static,
{
    type System = FunctionSystem<Marker, F>;

    fn into_system(self) -> Self::System {
        FunctionSystem {
            function: self,
            state: None,
            meta: SystemMeta::new(Cow::Borrowed(type_name::<F>())),
            _marker: std::marker::PhantomData,
        }
    }
}

fn not_initialized(name: &str) -> ! {
    panic!("system `{name}` was run before `initialize`; add it to a Schedule, which initialises it")
}

impl<Marker: 'static, F: SystemParamFunction<Marker>> System for FunctionSystem<Marker, F>
where
    F::Out: 'static,
{
    type In = F::In;
    type Out = F::Out;

    fn name(&self) -> &str {
        self.meta.name()
    }

    fn function_type(&self) -> TypeId {
        TypeId::of::<F>()
    }

    fn initialize(&mut self, world: &mut World) {
        let mut meta = SystemMeta::new(Cow::Owned(self.meta.name().to_string()));
        meta.set_condition_of(self.meta.condition_of().map(str::to_string));
        meta.set_observer(self.meta.is_observer());
        self.state = Some(F::Param::init_state(world, &mut meta));
        self.meta = meta;
    }

    fn access(&self) -> &SystemAccess {
        self.meta.access()
    }

    fn update_archetypes(&mut self, world: &World) {
        let Some(state) = &mut self.state else {
            not_initialized(self.meta.name())
        };
        F::Param::update_archetypes(state, world);
    }

    unsafe fn run_unsafe_with(&mut self, input: F::In, world: UnsafeWorldCell<'_>) -> F::Out {
        let Some(state) = &mut self.state else {
            not_initialized(self.meta.name())
        };
        // Recorded only once the system returns, so a run that panicked does not count.
        let mut this_run = self.meta.last_run();
        let ticks = world.start_run(&mut this_run);
        // SAFETY: forwarded contract: initialised, archetypes updated, access held.
        let params = unsafe { F::Param::get_param(state, &self.meta, world, ticks) };
        let out = self.function.call(input, params);
        self.meta.set_last_run(this_run);
        out
    }

    fn set_condition_of(&mut self, system: &str) {
        self.meta.set_condition_of(Some(system.to_string()));
    }

    fn set_observer(&mut self) {
        self.meta.set_observer(true);
    }

    fn event_key(&self) -> Option<tabula_core::EventKey> {
        self.meta.event_key()
    }

    fn has_deferred(&self) -> bool {
        self.state.as_ref().is_some_and(F::Param::has_deferred)
    }

    fn deferred_len(&self) -> usize {
        self.state.as_ref().map_or(0, F::Param::deferred_len)
    }

    fn apply_deferred(&mut self, world: &mut World, errors: &mut Vec<CommandError>) {
        if let Some(state) = &mut self.state {
            F::Param::apply_deferred(state, world, errors);
        }
    }

    fn discard_deferred(&mut self, world: &mut World) {
        if let Some(state) = &mut self.state {
            F::Param::discard_deferred(state, world);
        }
    }
}

macro_rules! function_system {
    ($($param:ident),*) => {
        #[allow(non_snake_case)]
        impl<Out, Func, $($param: SystemParam),*> SystemParamFunction<fn($($param,)*) -> Out> for Func
        where
            Func: Send + Sync + 'static,
            for<'a> &'a mut Func: FnMut($($param),*) -> Out + FnMut($(SystemParamItem<'_, '_, $param>),*) -> Out,
            Out: 'static,
        {
            type In = ();
            type Param = ($($param,)*);
            type Out = Out;

            #[inline]
            fn call(&mut self, _: (), param: SystemParamItem<'_, '_, ($($param,)*)>) -> Out {
                // Calling through a helper pins the closure's signature to the item types.
                fn call_inner<Out, $($param),*>(mut f: impl FnMut($($param),*) -> Out, $($param: $param),*) -> Out {
                    f($($param),*)
                }
                let ($($param,)*) = param;
                call_inner(self, $($param),*)
            }
        }

        #[allow(non_snake_case)]
        impl<Input, Out, Func, $($param: SystemParam),*> SystemParamFunction<(HasInput, fn(In<Input>, $($param,)*) -> Out)> for Func
        where
            Func: Send + Sync + 'static,
            for<'a> &'a mut Func: FnMut(In<Input>, $($param),*) -> Out + FnMut(In<Input>, $(SystemParamItem<'_, '_, $param>),*) -> Out,
            Input: 'static,
            Out: 'static,
        {
            type In = Input;
            type Param = ($($param,)*);
            type Out = Out;

            #[inline]
            fn call(&mut self, input: Input, param: SystemParamItem<'_, '_, ($($param,)*)>) -> Out {
                // Calling through a helper pins the closure's signature to the item types.
                fn call_inner<Input, Out, $($param),*>(
                    mut f: impl FnMut(In<Input>, $($param),*) -> Out,
                    input: In<Input>,
                    $($param: $param),*
                ) -> Out {
                    f(input, $($param),*)
                }
                let ($($param,)*) = param;
                call_inner(self, In(input), $($param),*)
            }
        }
    };
}

/// Marks the [`SystemParamFunction`] implementations for functions taking an [`In`] input.
pub struct HasInput;

function_system!();
function_system!(P0);
function_system!(P0, P1);
function_system!(P0, P1, P2);
function_system!(P0, P1, P2, P3);
function_system!(P0, P1, P2, P3, P4);
function_system!(P0, P1, P2, P3, P4, P5);
function_system!(P0, P1, P2, P3, P4, P5, P6);
function_system!(P0, P1, P2, P3, P4, P5, P6, P7);
function_system!(P0, P1, P2, P3, P4, P5, P6, P7, P8);
function_system!(P0, P1, P2, P3, P4, P5, P6, P7, P8, P9);
function_system!(P0, P1, P2, P3, P4, P5, P6, P7, P8, P9, P10);
function_system!(P0, P1, P2, P3, P4, P5, P6, P7, P8, P9, P10, P11);
function_system!(P0, P1, P2, P3, P4, P5, P6, P7, P8, P9, P10, P11, P12);
function_system!(P0, P1, P2, P3, P4, P5, P6, P7, P8, P9, P10, P11, P12, P13);
function_system!(P0, P1, P2, P3, P4, P5, P6, P7, P8, P9, P10, P11, P12, P13, P14);
function_system!(
    P0, P1, P2, P3, P4, P5, P6, P7, P8, P9, P10, P11, P12, P13, P14, P15
);

// ---------------------------------------------------------------------------------------
// Exclusive systems

/// A function of `&mut World`: runs alone, with the whole world.
pub trait ExclusiveSystemFunction<Marker>: Send + Sync + 'static {
    /// The return type.
    type Out;

    /// Calls the function.
    fn call(&mut self, world: &mut World) -> Self::Out;
}

impl<Out: 'static, Func> ExclusiveSystemFunction<fn(&mut World) -> Out> for Func
where
    Func: FnMut(&mut World) -> Out + Send + Sync + 'static,
{
    type Out = Out;

    fn call(&mut self, world: &mut World) -> Out {
        self(world)
    }
}

/// A system made from a function of `&mut World`.
pub struct ExclusiveSystem<Marker, F: ExclusiveSystemFunction<Marker>> {
    function: F,
    name: Cow<'static, str>,
    access: SystemAccess,
    _marker: std::marker::PhantomData<fn() -> Marker>,
}

/// Marks the `IntoSystem` implementation for exclusive functions.
pub struct IsExclusiveSystem;

impl<Marker: 'static, F: ExclusiveSystemFunction<Marker>> IntoSystem<F::Out, (IsExclusiveSystem, Marker)>
    for F
where
    F::Out: 'static,
{
    type System = ExclusiveSystem<Marker, F>;

    fn into_system(self) -> Self::System {
        ExclusiveSystem {
            function: self,
            name: Cow::Borrowed(type_name::<F>()),
            access: SystemAccess::exclusive(),
            _marker: std::marker::PhantomData,
        }
    }
}

impl<Marker: 'static, F: ExclusiveSystemFunction<Marker>> System for ExclusiveSystem<Marker, F>
where
    F::Out: 'static,
{
    type In = ();
    type Out = F::Out;

    fn name(&self) -> &str {
        &self.name
    }

    fn function_type(&self) -> TypeId {
        TypeId::of::<F>()
    }

    fn initialize(&mut self, _: &mut World) {}

    fn access(&self) -> &SystemAccess {
        &self.access
    }

    fn update_archetypes(&mut self, _: &World) {}

    unsafe fn run_unsafe_with(&mut self, (): (), world: UnsafeWorldCell<'_>) -> F::Out {
        // SAFETY: an exclusive system's caller guarantees nothing else touches the world and
        // the cell allows mutation (the trait's contract).
        let world = unsafe { world.world_mut() };
        world.flush();
        self.function.call(world)
    }

    fn has_deferred(&self) -> bool {
        false
    }

    fn apply_deferred(&mut self, _: &mut World, _: &mut Vec<CommandError>) {}
}

/// An exclusive system that applies the pending commands of every system that ran before
/// it in this schedule run. Add it (`schedule.add_systems(apply_deferred)`) where later
/// systems must see earlier systems' structural changes without an ordering edge.
pub fn apply_deferred(_: &mut World) {}

/// The function type of [`apply_deferred`], which the schedule recognises.
pub(crate) fn apply_deferred_type() -> TypeId {
    fn type_of<T: 'static>(_: &T) -> TypeId {
        TypeId::of::<T>()
    }
    type_of(&apply_deferred)
}
