//! A whole frame: labelled schedules, run by one call from the game's own loop.
//!
//! A world holds its schedules in the [`Schedules`] resource, each under a
//! [`ScheduleLabel`]. [`WorldFrame::run_frame`] runs one frame of them, in this order:
//!
//! 1. [`Startup`], on the first frame only (the clock still at zero);
//! 2. the clock ([`Time`]) advances by the frame's delta;
//! 3. [`First`], then [`PreUpdate`];
//! 4. the state transitions ([`StateTransition`]): for each state type, in the order they
//!    were registered, a pending [`NextState`](crate::NextState) is applied —
//!    `OnExit(old)`, then `OnEnter(new)` — and a state registered since the last frame
//!    runs its first `OnEnter`; then the `StateTransition` schedule, if systems were added
//!    to it;
//! 5. [`FixedUpdate`], 0..n times: once for every whole fixed step the clock's accumulator
//!    holds, up to a cap (see [`Time`]), with `Time` showing the fixed step;
//! 6. [`Update`], [`PostUpdate`], [`Last`];
//! 7. events age by one frame (`World::update_events`).
//!
//! A label without a schedule is skipped. The frame's schedules do not age events
//! themselves (a schedule made here has
//! [`set_update_events(false)`](crate::Schedule::set_update_events)): an event lives
//! through the frame it was sent in and the next, whichever schedules read it — the fixed
//! steps included.
//!
//! ```
//! use std::time::Duration;
//! use tabula::prelude::*;
//!
//! #[derive(Default)]
//! struct Log(Vec<&'static str>);
//! fn setup(mut log: ResMut<Log>) { log.0.push("setup"); }
//! fn input(mut log: ResMut<Log>) { log.0.push("input"); }
//! fn physics(mut log: ResMut<Log>) { log.0.push("physics"); }
//! fn logic(mut log: ResMut<Log>) { log.0.push("logic"); }
//!
//! let mut world = World::new();
//! world.init_resource::<Log>();
//! world
//!     .add_systems(Startup, setup)
//!     .add_systems(PreUpdate, input)
//!     .add_systems(FixedUpdate, physics)
//!     .add_systems(Update, logic);
//! // The game's loop (or a window library's) decides when frames happen, and how long.
//! world.run_frame(Duration::from_millis(20)); // one fixed step of 15.625 ms is due
//! world.run_frame(Duration::from_millis(5)); // none: 9.375 ms accumulated
//! assert_eq!(
//!     world.resource::<Log>().unwrap().0,
//!     ["setup", "input", "physics", "logic", "input", "logic"]
//! );
//! ```
//!
//! Systems can be added and removed between runs — and from a system, through
//! `&mut World`: additions to the schedule that is running wait until its run ends, and
//! removing from it is refused ([`ScheduleError::Running`]).

use std::any::TypeId;
use std::borrow::Borrow;
use std::collections::HashMap;
use std::fmt::{self, Debug};
use std::hash::{BuildHasherDefault, Hash, Hasher};
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::Arc;
use std::time::Duration;

use tabula_core::World;

use crate::config::{IntoSetConfigs, IntoSystemConfigs};
use crate::schedule::{Schedule, ScheduleError};
use crate::set::IntoSystemSet;
use crate::state::{self, States};
use crate::time::Time;

/// Names a schedule of [`Schedules`]: usually a unit struct, or an enum for a family of
/// schedules ([`OnEnter`](crate::OnEnter) is keyed by a state's value).
///
/// ```
/// use tabula::prelude::*;
///
/// #[derive(Debug, Clone, PartialEq, Eq, Hash)]
/// struct Render;
/// impl ScheduleLabel for Render {}
///
/// fn draw() {}
///
/// let mut world = World::new();
/// world.add_systems(Render, draw);
/// world.run_schedule(Render);
/// ```
pub trait ScheduleLabel: Debug + Clone + Eq + Hash + Send + Sync + 'static {}

macro_rules! labels {
    ($($(#[$doc:meta])* $name:ident,)*) => {$(
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
        pub struct $name;
        impl ScheduleLabel for $name {}
    )*};
}

labels! {
    /// Runs once, on the first frame, before everything else (see the [module docs](self)).
    Startup,
    /// The first schedule of every frame.
    First,
    /// Input, and what the frame's logic needs ready; state transitions follow it.
    PreUpdate,
    /// Runs right after the frame applied state transitions (see
    /// [`WorldFrame::apply_state_transitions`]), before the fixed steps: for what must see
    /// the new state before anything else of the frame does.
    StateTransition,
    /// Runs once per fixed step, 0..n times a frame (see [`Time`]).
    FixedUpdate,
    /// The game's main logic, once a frame.
    Update,
    /// What reacts to the frame's logic: cleanup, camera, bookkeeping.
    PostUpdate,
    /// The last schedule of every frame (drawing, diagnostics).
    Last,
}

trait DynLabel: Debug + Send + Sync {
    fn as_any(&self) -> &dyn std::any::Any;
    fn dyn_eq(&self, other: &dyn DynLabel) -> bool;
    fn dyn_hash(&self, state: &mut dyn Hasher);
    fn key(&self) -> LabelKey;
}

impl<L: ScheduleLabel> DynLabel for L {
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }

    fn dyn_eq(&self, other: &dyn DynLabel) -> bool {
        other.as_any().downcast_ref::<L>() == Some(self)
    }

    fn dyn_hash(&self, mut state: &mut dyn Hasher) {
        TypeId::of::<L>().hash(&mut state);
        self.hash(&mut state);
    }

    fn key(&self) -> LabelKey {
        LabelKey(Arc::new(self.clone()))
    }
}

// Labels are looked up as `&dyn DynLabel`, borrowed from the caller's value: running a
// schedule by label allocates nothing.
impl PartialEq for dyn DynLabel {
    fn eq(&self, other: &Self) -> bool {
        self.dyn_eq(other)
    }
}

impl Eq for dyn DynLabel {}

impl Hash for dyn DynLabel {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.dyn_hash(state);
    }
}

impl Borrow<dyn DynLabel> for LabelKey {
    fn borrow(&self) -> &(dyn DynLabel + 'static) {
        &*self.0
    }
}

/// Hashes label keys: a type id and a small value, from code rather than from input, so a
/// multiply-rotate hash (FxHash's) serves, at a fraction of SipHash's cost per lookup.
#[derive(Default)]
struct LabelHasher(u64);

impl Hasher for LabelHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(word));
        }
    }

    fn write_u64(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

/// A type-erased [`ScheduleLabel`].
#[derive(Clone)]
struct LabelKey(Arc<dyn DynLabel>);

impl LabelKey {
    fn of<L: ScheduleLabel>(label: L) -> Self {
        Self(Arc::new(label))
    }

    fn name(&self) -> String {
        format!("{:?}", self.0)
    }
}

impl PartialEq for LabelKey {
    fn eq(&self, other: &Self) -> bool {
        self.0.dyn_eq(&*other.0)
    }
}

impl Eq for LabelKey {}

impl Hash for LabelKey {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.0.dyn_hash(state);
    }
}

/// A change to a schedule that was running when it was asked for.
type PendingEdit = Box<dyn FnOnce(&mut Schedule) + Send + Sync>;

/// One labelled schedule: absent while it runs, with the changes asked for meanwhile.
struct Entry {
    /// Boxed so that taking it out to run and putting it back moves a pointer: moving the
    /// `Schedule` itself was ~400 instructions of `memcpy` per frame (callgrind,
    /// `frame_overhead`'s `run_frame`).
    schedule: Option<Box<Schedule>>,
    pending: Vec<PendingEdit>,
}

/// A registered state type: the step that applies its transitions.
struct StateDriver {
    type_id: TypeId,
    /// Whether its first `OnEnter` ran.
    entered: bool,
    apply: fn(&mut World, bool),
}

/// The world's labelled schedules (a resource), and the frame's own bookkeeping: whether
/// `Startup` ran, and the registered state types. Reach it through [`WorldFrame`]'s methods
/// or as `world.resource_mut::<Schedules>()`, e.g. to configure one schedule:
///
/// ```
/// use tabula::prelude::*;
/// use tabula::schedule::Schedules;
///
/// fn tick() {}
///
/// let mut world = World::new();
/// world.add_systems(Update, tick);
/// let mut schedules = world.resource_mut::<Schedules>().unwrap();
/// schedules.entry(Update).unwrap().set_executor(ExecutorKind::SingleThreaded);
/// assert_eq!(schedules.get(Update).unwrap().len(), 1);
/// assert!(!schedules.contains(PostUpdate));
/// ```
#[derive(Default)]
pub struct Schedules {
    entries: HashMap<LabelKey, Entry, BuildHasherDefault<LabelHasher>>,
    started: bool,
    states: Vec<StateDriver>,
    /// Which of [`FRAME_PHASES`] have a schedule, as bits by index; `None` once a label was
    /// added or removed, until [`frame_plan`](Self::frame_plan) looks again.
    phases: Option<u8>,
}

/// The frame's phases, in the order [`WorldFrame::run_frame`] runs them.
const FRAME_PHASES: [&(dyn DynLabel + 'static); 8] = [
    &Startup,
    &First,
    &PreUpdate,
    &StateTransition,
    &FixedUpdate,
    &Update,
    &PostUpdate,
    &Last,
];
const STARTUP: usize = 0;
const FIRST: usize = 1;
const PRE_UPDATE: usize = 2;
const STATE_TRANSITION: usize = 3;
const FIXED_UPDATE: usize = 4;
const UPDATE: usize = 5;
const POST_UPDATE: usize = 6;
const LAST: usize = 7;

/// What [`WorldFrame::run_frame`] reads of [`Schedules`] between phases, in one resource
/// lookup: which phases have a schedule, and whether a state type is registered. A phase
/// without a schedule then costs a bit test; looking each one up (the resource, then the
/// label) was about half of a frame's own cost (callgrind, `frame_overhead`'s `run_frame`).
#[derive(Clone, Copy)]
struct FramePlan {
    phases: u8,
    states: bool,
}

impl Debug for Schedules {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut labels: Vec<String> = self.entries.keys().map(LabelKey::name).collect();
        labels.sort();
        f.debug_struct("Schedules")
            .field("labels", &labels)
            .field("started", &self.started)
            .finish()
    }
}

impl Schedules {
    /// What the frame needs to know between phases (see [`FramePlan`]).
    fn frame_plan(&mut self) -> FramePlan {
        let entries = &self.entries;
        let phases = *self.phases.get_or_insert_with(|| {
            (FRAME_PHASES.iter().enumerate())
                .filter(|(_, label)| entries.contains_key(**label))
                .fold(0, |bits, (index, _)| bits | 1 << index)
        });
        FramePlan {
            phases,
            states: !self.states.is_empty(),
        }
    }

    /// The schedule labelled `label`, made (empty) when there is none.
    ///
    /// # Errors
    /// [`ScheduleError::Running`] while that schedule runs.
    pub fn entry(&mut self, label: impl ScheduleLabel) -> Result<&mut Schedule, ScheduleError> {
        let key = LabelKey::of(label);
        self.phases = None;
        let entry = self.entries.entry(key.clone()).or_insert_with(new_entry);
        entry
            .schedule
            .as_deref_mut()
            .ok_or_else(|| ScheduleError::Running(key.name()))
    }

    /// The schedule labelled `label`, unless there is none or it is running.
    pub fn get(&self, label: impl ScheduleLabel) -> Option<&Schedule> {
        self.entries.get(&label as &dyn DynLabel)?.schedule.as_deref()
    }

    /// True when a schedule is labelled `label` (running or not).
    pub fn contains(&self, label: impl ScheduleLabel) -> bool {
        self.entries.contains_key(&label as &dyn DynLabel)
    }

    /// Puts `schedule` under `label`, returning the one it replaces. It stops aging events
    /// ([`set_update_events(false)`](Schedule::set_update_events)): the frame does that once.
    ///
    /// # Errors
    /// [`ScheduleError::Running`] while the schedule labelled `label` runs.
    pub fn insert(
        &mut self,
        label: impl ScheduleLabel,
        mut schedule: Schedule,
    ) -> Result<Option<Schedule>, ScheduleError> {
        let key = LabelKey::of(label);
        schedule.set_update_events(false);
        match self.entries.get_mut(&key) {
            Some(Entry { schedule: None, .. }) => Err(ScheduleError::Running(key.name())),
            Some(entry) => Ok(entry.schedule.replace(Box::new(schedule)).map(|old| *old)),
            None => {
                self.phases = None;
                self.entries.insert(
                    key,
                    Entry {
                        schedule: Some(Box::new(schedule)),
                        pending: Vec::new(),
                    },
                );
                Ok(None)
            }
        }
    }

    /// Removes the schedule labelled `label` and returns it (dropping it releases what its
    /// systems held).
    ///
    /// # Errors
    /// [`ScheduleError::NoSchedule`] when there is none, [`ScheduleError::Running`] while it
    /// runs.
    pub fn remove(&mut self, label: impl ScheduleLabel) -> Result<Schedule, ScheduleError> {
        let key = LabelKey::of(label);
        match self.entries.get(&key) {
            None => Err(ScheduleError::NoSchedule(key.name())),
            Some(Entry { schedule: None, .. }) => Err(ScheduleError::Running(key.name())),
            Some(_) => Ok({
                self.phases = None;
                self.entries
                    .remove(&key)
                    .and_then(|entry| entry.schedule)
                    .map(|schedule| *schedule)
                    .expect("checked above")
            }),
        }
    }

    /// Applies `edit` to the schedule labelled `label` (made when there is none) now, or,
    /// while it runs, when its run ends.
    fn edit(&mut self, key: LabelKey, edit: impl FnOnce(&mut Schedule) + Send + Sync + 'static) {
        self.phases = None;
        let entry = self.entries.entry(key).or_insert_with(new_entry);
        match &mut entry.schedule {
            Some(schedule) => edit(schedule),
            None => entry.pending.push(Box::new(edit)),
        }
    }
}

fn new_entry() -> Entry {
    let mut schedule = Schedule::new();
    schedule.set_update_events(false);
    Entry {
        schedule: Some(Box::new(schedule)),
        pending: Vec::new(),
    }
}

/// The world's `Schedules`, made when there are none.
fn schedules(world: &mut World) -> &mut Schedules {
    if !world.contains_resource::<Schedules>() {
        world.init_resource::<Schedules>();
    }
    world.resource_mut::<Schedules>().expect("made above")
}

/// Labelled schedules, frames and states on a [`World`] (see the [module docs](self)).
pub trait WorldFrame {
    /// Adds systems to the schedule labelled `label` (made when there is none). While that
    /// schedule runs, they are added when its run ends.
    ///
    /// ```
    /// use tabula::prelude::*;
    ///
    /// #[derive(Default)]
    /// struct Count(u32);
    /// fn count(mut c: ResMut<Count>) { c.0 += 1; }
    ///
    /// let mut world = World::new();
    /// world.init_resource::<Count>();
    /// world.add_systems(Update, count);
    /// world.run_schedule(Update);
    /// assert_eq!(world.resource::<Count>().unwrap().0, 1);
    /// ```
    fn add_systems<M>(&mut self, label: impl ScheduleLabel, systems: impl IntoSystemConfigs<M>) -> &mut Self;

    /// Configures sets of the schedule labelled `label` (made when there is none), as
    /// [`Schedule::configure_sets`]; while it runs, when its run ends.
    fn configure_sets<M>(&mut self, label: impl ScheduleLabel, sets: impl IntoSetConfigs<M>) -> &mut Self;

    /// Removes the systems of `set` (a function or a set) from the schedule labelled
    /// `label`, as [`Schedule::remove_systems`]: they are dropped with what they held.
    ///
    /// ```
    /// use tabula::prelude::*;
    ///
    /// fn tutorial_hint() {}
    ///
    /// let mut world = World::new();
    /// world.add_systems(Update, tutorial_hint);
    /// assert_eq!(world.remove_systems(Update, tutorial_hint), Ok(1));
    /// let error = world.remove_systems(Update, tutorial_hint).unwrap_err();
    /// assert!(error.to_string().contains("schedule `Update`"));
    /// ```
    ///
    /// # Errors
    /// When no schedule is labelled `label`, when it is running (removal from a system of
    /// that same schedule), or when none of its systems is in `set`.
    fn remove_systems<M>(
        &mut self,
        label: impl ScheduleLabel,
        set: impl IntoSystemSet<M>,
    ) -> Result<usize, ScheduleError>;

    /// Runs the schedule labelled `label` once.
    ///
    /// # Panics
    /// When there is no such schedule, or it is running (see
    /// [`try_run_schedule`](Self::try_run_schedule)), and as [`Schedule::run`] does.
    fn run_schedule(&mut self, label: impl ScheduleLabel);

    /// Runs the schedule labelled `label` once. While it runs it is taken out of
    /// [`Schedules`]; it is put back afterwards (also when a system panics), with the
    /// systems added to it meanwhile.
    ///
    /// ```
    /// use tabula::prelude::*;
    /// use tabula::schedule::ScheduleError;
    ///
    /// let mut world = World::new();
    /// assert_eq!(
    ///     world.try_run_schedule(Last),
    ///     Err(ScheduleError::NoSchedule("Last".to_string()))
    /// );
    /// ```
    ///
    /// # Errors
    /// When there is no such schedule, or it is running already.
    fn try_run_schedule(&mut self, label: impl ScheduleLabel) -> Result<(), ScheduleError>;

    /// Runs one frame: the schedules in the order of the [module docs](self), with the
    /// clock advanced by `delta` (the time the frame stands for: measured by the game's loop
    /// with [`FrameTimer`](crate::FrameTimer), or a constant in tests and replays).
    ///
    /// ```
    /// use std::time::Duration;
    /// use tabula::prelude::*;
    /// use tabula::schedule::Time;
    ///
    /// let mut world = World::new();
    /// for _ in 0..60 {
    ///     world.run_frame(Duration::from_millis(16));
    /// }
    /// let time = world.resource::<Time>().unwrap();
    /// assert_eq!(time.frame_count(), 60);
    /// assert_eq!(time.elapsed(), Duration::from_millis(960));
    /// assert_eq!(time.fixed_steps(), 61); // 61 steps of 15.625 ms, 6.875 ms left over
    /// assert_eq!(time.overstep(), Duration::from_micros(6_875));
    /// ```
    ///
    /// # Panics
    /// When called from a system of the frame itself, and as [`Schedule::run`] does.
    fn run_frame(&mut self, delta: Duration);

    /// Registers the state type `S`, starting in `S::default()` (see
    /// [`insert_state`](Self::insert_state)).
    fn init_state<S: States + Default>(&mut self) -> &mut Self;

    /// Registers the state type `S`, starting in `initial`: adds the [`State<S>`] and
    /// [`NextState<S>`] resources, and has the frame apply `S`'s transitions after
    /// `PreUpdate`. The first transition step (on the next frame) runs `OnEnter(initial)`.
    /// Registering a type again changes nothing (request a change with `NextState`).
    ///
    /// ```
    /// use tabula::prelude::*;
    ///
    /// #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    /// enum Level { One, Two }
    /// impl States for Level {}
    ///
    /// let mut world = World::new();
    /// world.insert_state(Level::Two);
    /// assert_eq!(**world.resource::<State<Level>>().unwrap(), Level::Two);
    /// assert_eq!(world.resource::<NextState<Level>>().unwrap().pending(), None);
    /// ```
    ///
    /// [`State<S>`]: crate::State
    /// [`NextState<S>`]: crate::NextState
    fn insert_state<S: States>(&mut self, initial: S) -> &mut Self;

    /// Applies pending state transitions now, as the frame does after `PreUpdate`: for each
    /// registered state type, in registration order, a first `OnEnter` for a state not
    /// entered yet, then the requested [`NextState`](crate::NextState), if any and
    /// different from the current state: `OnExit(current)`, the change of
    /// [`State`](crate::State), then `OnEnter(next)`. A request made during those schedules
    /// waits for the next step.
    fn apply_state_transitions(&mut self);
}

impl WorldFrame for World {
    fn add_systems<M>(&mut self, label: impl ScheduleLabel, systems: impl IntoSystemConfigs<M>) -> &mut Self {
        let systems = systems.into_configs();
        schedules(self).edit(LabelKey::of(label), move |schedule| {
            schedule.add_systems(systems);
        });
        self
    }

    fn configure_sets<M>(&mut self, label: impl ScheduleLabel, sets: impl IntoSetConfigs<M>) -> &mut Self {
        let sets = sets.into_set_configs();
        schedules(self).edit(LabelKey::of(label), move |schedule| {
            schedule.configure_sets(sets);
        });
        self
    }

    fn remove_systems<M>(
        &mut self,
        label: impl ScheduleLabel,
        set: impl IntoSystemSet<M>,
    ) -> Result<usize, ScheduleError> {
        let key = LabelKey::of(label);
        let entry = schedules(self)
            .entries
            .get_mut(&key)
            .ok_or_else(|| ScheduleError::NoSchedule(key.name()))?;
        let schedule = entry
            .schedule
            .as_mut()
            .ok_or_else(|| ScheduleError::Running(key.name()))?;
        schedule.remove_systems(set).map_err(|error| match error {
            ScheduleError::NoSystem { set, .. } => ScheduleError::NoSystem {
                schedule: Some(key.name()),
                set,
            },
            other => other,
        })
    }

    fn run_schedule(&mut self, label: impl ScheduleLabel) {
        if let Err(error) = self.try_run_schedule(label) {
            panic!("{error}");
        }
    }

    fn try_run_schedule(&mut self, label: impl ScheduleLabel) -> Result<(), ScheduleError> {
        run_key(self, &label).map(drop).map_err(|not_run| match not_run {
            NotRun::Missing => ScheduleError::NoSchedule(format!("{label:?}")),
            NotRun::Running => ScheduleError::Running(format!("{label:?}")),
        })
    }

    fn run_frame(&mut self, delta: Duration) {
        let all = schedules(self);
        let first_frame = !std::mem::replace(&mut all.started, true);
        let mut plan = all.frame_plan();
        if first_frame {
            // `Startup`'s systems see the clock, at zero.
            if !self.contains_resource::<Time>() {
                self.init_resource::<Time>();
            }
            run_phase(self, &mut plan, STARTUP);
        }
        let steps = match self.resource_mut::<Time>() {
            Ok(time) => time.advance(delta),
            Err(_) => {
                self.init_resource::<Time>();
                time(self).advance(delta)
            }
        };
        run_phase(self, &mut plan, FIRST);
        run_phase(self, &mut plan, PRE_UPDATE);
        if plan.states {
            self.apply_state_transitions();
            plan = schedules(self).frame_plan();
        }
        run_phase(self, &mut plan, STATE_TRANSITION);
        for _ in 0..steps {
            time(self).begin_fixed_step();
            let ran = catch_unwind(AssertUnwindSafe(|| run_phase(self, &mut plan, FIXED_UPDATE)));
            time(self).end_fixed_step();
            if let Err(payload) = ran {
                resume_unwind(payload);
            }
        }
        run_phase(self, &mut plan, UPDATE);
        run_phase(self, &mut plan, POST_UPDATE);
        run_phase(self, &mut plan, LAST);
        crate::hooks::end_of_run(self);
    }

    fn init_state<S: States + Default>(&mut self) -> &mut Self {
        self.insert_state(S::default())
    }

    fn insert_state<S: States>(&mut self, initial: S) -> &mut Self {
        let schedules = schedules(self);
        if schedules.states.iter().any(|d| d.type_id == TypeId::of::<S>()) {
            return self;
        }
        schedules.states.push(StateDriver {
            type_id: TypeId::of::<S>(),
            entered: false,
            apply: state::apply_transition::<S>,
        });
        self.insert_resource(crate::State::new(initial));
        self.insert_resource(crate::NextState::<S>::default());
        self
    }

    fn apply_state_transitions(&mut self) {
        let count = schedules(self).states.len();
        for index in 0..count {
            let driver = &mut schedules(self).states[index];
            let (apply, first) = (driver.apply, !std::mem::replace(&mut driver.entered, true));
            apply(self, first);
        }
    }
}

/// The world's clock (the frame made it).
fn time(world: &mut World) -> &mut Time {
    world
        .resource_mut::<Time>()
        .expect("the Time resource was removed during a frame; change it instead of removing it")
}

/// Runs frame phase `FRAME_PHASES[phase]` when `plan` says it has a schedule, then reads
/// the plan again: its systems may have added or removed schedules or registered a state.
fn run_phase(world: &mut World, plan: &mut FramePlan, phase: usize) {
    if plan.phases & 1 << phase != 0 {
        *plan = match run_key(world, FRAME_PHASES[phase]) {
            Ok(schedules) => schedules.frame_plan(),
            // A system of an earlier phase removed it: look again.
            Err(NotRun::Missing) => schedules(world).frame_plan(),
            Err(NotRun::Running) => frame_running(FRAME_PHASES[phase]),
        };
    }
}

/// The panic for running a frame from one of its own systems, whose schedule `label` is.
#[cold]
fn frame_running(label: &dyn DynLabel) -> ! {
    panic!(
        "{}; a frame cannot be run from one of its own systems",
        ScheduleError::Running(format!("{label:?}"))
    )
}

/// Runs a state's `OnEnter`/`OnExit` schedule when it exists.
pub(crate) fn run_state_schedule<L: ScheduleLabel>(world: &mut World, label: L) {
    match run_key(world, &label) {
        Ok(_) | Err(NotRun::Missing) => {}
        Err(NotRun::Running) => panic!(
            "{}; a state transition cannot run from its own schedules",
            ScheduleError::Running(format!("{label:?}"))
        ),
    }
}

/// Why [`run_key`] ran nothing. The [`ScheduleError`] that names the label is made only
/// where one is reported: formatting the label took 40% of `run_frame`'s own cost, once
/// for each of the frame's phases that has no schedule (`frame_overhead` in
/// `benches/benches/schedule.rs`, callgrind).
enum NotRun {
    /// No schedule has the label.
    Missing,
    /// The schedule is running (this is one of its systems).
    Running,
}

/// Takes the schedule out, runs it, and puts it back with the changes asked meanwhile;
/// returns the world's `Schedules`, which it had to look up again to do so.
fn run_key<'w>(world: &'w mut World, label: &(dyn DynLabel + 'static)) -> Result<&'w mut Schedules, NotRun> {
    let entry = world
        .resource_mut::<Schedules>()
        .ok()
        .and_then(|schedules| schedules.entries.get_mut(label))
        .ok_or(NotRun::Missing)?;
    let mut schedule = entry.schedule.take().ok_or(NotRun::Running)?;
    let result = catch_unwind(AssertUnwindSafe(|| schedule.run(world)));
    let schedules = schedules(world);
    match schedules.entries.get_mut(label) {
        Some(entry) => {
            for edit in entry.pending.drain(..) {
                edit(&mut schedule);
            }
            entry.schedule = Some(schedule);
        }
        None => {
            // The resource was replaced while the schedule ran: it goes into the new one.
            schedules.phases = None;
            schedules.entries.insert(
                label.key(),
                Entry {
                    schedule: Some(schedule),
                    pending: Vec::new(),
                },
            );
        }
    }
    if let Err(payload) = result {
        resume_unwind(payload);
    }
    Ok(schedules)
}
