//! # tabula-schedule: systems and the parallel scheduler
//!
//! Systems are plain functions. Each parameter declares what it reads and writes
//! ([`SystemParam`]); the [`Schedule`] builds a dependency graph from those declarations
//! plus explicit ordering, and runs systems that do not conflict at the same time.
//!
//! ## How a run flows
//!
//! 1. **Build** (once, and again after systems are added): initialise each system's
//!    parameters against the world (a system whose own parameters would alias panics here,
//!    naming both), resolve sets, add explicit edges, order every conflicting pair as added,
//!    insert sync points on the edges that leave command-recording systems, and reduce the
//!    graph (`graph.rs`).
//! 2. **Execute**: the parallel executor keeps an atomic counter of unfinished dependencies
//!    per node; whoever finishes a node releases its dependents, running cheap ones inline
//!    and handing the rest to rayon, except the one heading the longest chain of work, which
//!    it keeps (the plan in `executor/plan.rs`). Exclusive systems and sync points run alone
//!    because they conflict with everything.
//! 3. **Finish**: command buffers still pending are applied in the graph's order (the order
//!    the systems were added, along explicit ordering);
//!    events age by one run.
//!
//! Because every two conflicting systems are ordered the same way on every run, the world
//! after a run is the same with one thread or many.
//!
//! ```
//! use tabula::prelude::*;
//!
//! struct Position(f32);
//! struct Velocity(f32);
//!
//! fn movement(mut q: Query<(&mut Position, &Velocity)>) {
//!     q.for_each(|(mut p, v)| p.0 += v.0);
//! }
//!
//! let mut world = World::new();
//! world.spawn((Position(0.0), Velocity(1.5)));
//! let mut schedule = Schedule::new();
//! schedule.add_systems(movement);
//! schedule.run(&mut world);
//! let mut q = world.query::<&Position>();
//! assert_eq!(q.single(&world).unwrap().0, 1.5);
//! ```

mod access;
pub mod condition;
mod config;
mod executor;
pub mod frame;
mod graph;
mod hooks;
pub mod observer;
pub mod one_shot;
mod pair;
mod param;
mod pipe;
pub mod plugin;
mod schedule;
mod set;
mod skipped;
pub mod state;
mod sync;
mod system;
mod system_state;
mod time;
mod trace;

pub use access::SystemAccess;
pub use config::{
    BoxedCondition, IntoSetConfigs, IntoSystemConfigs, SetConfig, SetConfigs, SystemConfig, SystemConfigs,
};
pub use executor::ExecutorKind;
pub use frame::{
    First, FixedUpdate, Last, PostUpdate, PreUpdate, ScheduleLabel, Schedules, Startup, StateTransition,
    Update, WorldFrame,
};
pub use graph::{ConditionWrite, ScheduleBuildError};
pub use observer::{CommandsObserve, Observer, WorldObserve};
pub use one_shot::{CommandsRunSystem, RunSystemError, SystemId, WorldSystems};
pub use param::ParamSet;
pub use param::{
    Described, EventReader, EventWriter, Local, ParallelCommands, Query, RemovedComponents, Res, ResMut,
    RunTicks, SystemChangeTick, SystemMeta, SystemParam, SystemParamItem, Trigger,
};
pub use param::{ParScratch, Scratch, ScratchArenas, ScratchVec};
pub use pipe::{IsPipe, Pipe, PipeSystem};
pub use plugin::{Plugin, WorldPlugins};
pub use schedule::{Dependency, InsertionOrderedPair, OrderedPair, Schedule, ScheduleError, SystemOrder};
pub use set::{CoreSet, IntoSystemSet, SetKey, SystemSet};
pub use skipped::{CommandErrorPolicy, SkippedCommand};
pub use state::{NextState, OnEnter, OnExit, State, States, in_state, state_changed};
pub use system::{
    BoxedSystem, ExclusiveSystem, ExclusiveSystemFunction, FunctionSystem, HasInput, In, IntoSystem, NoInput,
    System, SystemParamFunction, apply_deferred,
};
pub use system_state::{ReadOnlySystemParam, SystemState};
pub use time::{DEFAULT_FIXED_STEP, DEFAULT_MAX_FIXED_STEPS, FrameTimer, Time};
pub use trace::{Overlap, Trace, TraceEvent, TraceKind};

/// The names system code uses every day.
pub mod prelude {
    pub use crate::ParamSet;
    pub use crate::Scratch;
    pub use crate::{
        CommandsObserve, CommandsRunSystem, CoreSet, EventReader, EventWriter, ExecutorKind, In,
        IntoSetConfigs, IntoSystem, IntoSystemConfigs, Local, ParallelCommands, Query, RemovedComponents,
        Res, ResMut, Schedule, SystemSet, Trigger, WorldObserve, WorldSystems, apply_deferred,
    };
    pub use crate::{
        First, FixedUpdate, FrameTimer, Last, NextState, OnEnter, OnExit, Plugin, PostUpdate, PreUpdate,
        ScheduleLabel, Startup, State, States, Update, WorldFrame, WorldPlugins, in_state,
    };
}
