//! The [`System`] trait and the two ways plain functions become systems: functions of
//! [`SystemParam`]s, and exclusive functions of `&mut World`.

use std::any::{TypeId, type_name};
use std::borrow::Cow;

use tabula_core::{CommandError, UnsafeWorldCell, World};

use crate::access::SystemAccess;
use crate::param::{SystemMeta, SystemParam, SystemParamItem};

/// Something a schedule can run: a name, a declared access, and a body.
pub trait System: Send + Sync + 'static {
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

    /// Runs the system.
    ///
    /// # Safety
    /// The system was initialised with this world and its archetypes updated; for the whole
    /// call the caller holds the system's declared access (for an exclusive system: nothing
    /// else touches the world, and the cell allows mutation).
    unsafe fn run_unsafe(&mut self, world: UnsafeWorldCell<'_>) -> Self::Out;

    /// Runs the system with exclusive access to the world.
    fn run(&mut self, world: &mut World) -> Self::Out {
        self.update_archetypes(world);
        // SAFETY: `&mut World` grants every access; the system was initialised by the caller.
        unsafe { self.run_unsafe(UnsafeWorldCell::new_mutable(world)) }
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

    /// Tells a run condition which system it guards, before `initialize`, so its messages
    /// (a missing resource, say) name that system too. Systems that are never conditions
    /// can ignore it.
    fn set_condition_of(&mut self, _system: &str) {}

    /// Tells the system it runs as an observer, before `initialize` (its `Commands` then use
    /// the world's shared entity lane). Systems that are never observers can ignore it.
    fn set_observer(&mut self) {}

    /// The event the system's `Trigger` parameter watches (valid after `initialize`).
    fn event_key(&self) -> Option<tabula_core::EventKey> {
        None
    }
}

/// A boxed system of the schedule.
pub type BoxedSystem<Out = ()> = Box<dyn System<Out = Out>>;

/// Converts a function (or a system) into a [`System`].
pub trait IntoSystem<Out, Marker>: Sized {
    /// The system type.
    type System: System<Out = Out>;

    /// Makes the system.
    fn into_system(self) -> Self::System;
}

/// A function whose parameters are all [`SystemParam`]s.
pub trait SystemParamFunction<Marker>: Send + Sync + 'static {
    /// The parameters, as a tuple.
    type Param: SystemParam;
    /// The return type.
    type Out;

    /// Calls the function.
    fn call(&mut self, param: SystemParamItem<'_, '_, Self::Param>) -> Self::Out;
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

impl<Marker: 'static, F: SystemParamFunction<Marker>> IntoSystem<F::Out, (IsFunctionSystem, Marker)> for F
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

    unsafe fn run_unsafe(&mut self, world: UnsafeWorldCell<'_>) -> F::Out {
        let Some(state) = &mut self.state else {
            not_initialized(self.meta.name())
        };
        // Recorded only once the system returns, so a run that panicked does not count.
        let mut this_run = self.meta.last_run();
        let ticks = world.start_run(&mut this_run);
        // SAFETY: forwarded contract: initialised, archetypes updated, access held.
        let params = unsafe { F::Param::get_param(state, &self.meta, world, ticks) };
        let out = self.function.call(params);
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
            type Param = ($($param,)*);
            type Out = Out;

            #[inline]
            fn call(&mut self, param: SystemParamItem<'_, '_, ($($param,)*)>) -> Out {
                // Calling through a helper pins the closure's signature to the item types.
                fn call_inner<Out, $($param),*>(mut f: impl FnMut($($param),*) -> Out, $($param: $param),*) -> Out {
                    f($($param),*)
                }
                let ($($param,)*) = param;
                call_inner(self, $($param),*)
            }
        }
    };
}

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

    unsafe fn run_unsafe(&mut self, world: UnsafeWorldCell<'_>) -> F::Out {
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
