//! States: an app-level enum (menu, playing, game over) whose changes run schedules.
//!
//! Register a state type with [`WorldFrame::init_state`](crate::WorldFrame::init_state)
//! (or `insert_state`); systems read the current value as `Res<State<S>>` and request a
//! change with `ResMut<NextState<S>>`. The request is deferred: the frame applies it after
//! `PreUpdate` (see [`frame`](crate::frame)), running `OnExit(old)` and then
//! `OnEnter(new)`, so every system of a frame's `Update` sees one state. [`in_state`]
//! gates systems on the current value.
//!
//! ```
//! use std::time::Duration;
//! use tabula::prelude::*;
//!
//! #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
//! enum Game { #[default] Menu, Playing }
//! impl States for Game {}
//!
//! #[derive(Default)]
//! struct Log(Vec<&'static str>);
//! fn start(mut next: ResMut<NextState<Game>>) { next.set(Game::Playing); }
//! fn spawn_level(mut log: ResMut<Log>) { log.0.push("spawn level"); }
//! fn play(mut log: ResMut<Log>) { log.0.push("play"); }
//!
//! let mut world = World::new();
//! world.init_resource::<Log>();
//! world
//!     .init_state::<Game>()
//!     .add_systems(Update, (start.run_if(in_state(Game::Menu)), play.run_if(in_state(Game::Playing))))
//!     .add_systems(OnEnter(Game::Playing), spawn_level);
//! let dt = Duration::from_millis(16);
//! world.run_frame(dt); // Menu: `start` asks for Playing
//! world.run_frame(dt); // the change applies after PreUpdate: OnEnter, then Update plays
//! assert_eq!(**world.resource::<State<Game>>().unwrap(), Game::Playing);
//! assert_eq!(world.resource::<Log>().unwrap().0, ["spawn level", "play"]);
//! ```

use std::fmt::Debug;
use std::hash::Hash;
use std::ops::Deref;

use tabula_core::World;

use crate::frame::{ScheduleLabel, run_state_schedule};
use crate::param::Res;

/// A type whose values are the states of the app: usually a fieldless enum.
pub trait States: Debug + Clone + Eq + Hash + Send + Sync + 'static {}

/// The current state of type `S`, a resource (`Res<State<S>>`); it derefs to `S`. It changes
/// only at the frame's transition step; request a change through [`NextState`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct State<S: States>(S);

impl<S: States> State<S> {
    pub(crate) fn new(state: S) -> Self {
        Self(state)
    }

    /// The current state.
    pub fn get(&self) -> &S {
        &self.0
    }
}

impl<S: States> Deref for State<S> {
    type Target = S;

    fn deref(&self) -> &S {
        &self.0
    }
}

/// The change of state requested for the next transition step, a resource
/// (`ResMut<NextState<S>>`). The last request before the step wins; asking for the current
/// state changes nothing (no `OnExit`/`OnEnter` run).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NextState<S: States>(Option<S>);

impl<S: States> Default for NextState<S> {
    fn default() -> Self {
        Self(None)
    }
}

impl<S: States> NextState<S> {
    /// Requests `state` at the next transition step (replacing an earlier request).
    pub fn set(&mut self, state: S) {
        self.0 = Some(state);
    }

    /// Withdraws the request.
    pub fn reset(&mut self) {
        self.0 = None;
    }

    /// The state requested, if any.
    pub fn pending(&self) -> Option<&S> {
        self.0.as_ref()
    }
}

/// The schedule run when the state becomes the value it holds (`OnEnter(Game::Playing)`);
/// add systems to it with [`WorldFrame::add_systems`](crate::WorldFrame::add_systems).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct OnEnter<S: States>(pub S);

impl<S: States> ScheduleLabel for OnEnter<S> {}

/// The schedule run when the state stops being the value it holds, before the next
/// state's [`OnEnter`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct OnExit<S: States>(pub S);

impl<S: States> ScheduleLabel for OnExit<S> {}

/// A run condition: true while the state of type `S` is `state` (false when `S` is not
/// registered).
///
/// ```
/// use tabula::prelude::*;
///
/// #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
/// enum Game { #[default] Menu, Playing }
/// impl States for Game {}
///
/// #[derive(Default)]
/// struct Ticks(u32);
/// fn tick(mut t: ResMut<Ticks>) { t.0 += 1; }
///
/// let mut world = World::new();
/// world.init_resource::<Ticks>();
/// world.init_state::<Game>().add_systems(Update, tick.run_if(in_state(Game::Playing)));
/// world.run_frame(std::time::Duration::ZERO);
/// assert_eq!(world.resource::<Ticks>().unwrap().0, 0);
/// ```
pub fn in_state<S: States>(
    state: S,
) -> impl FnMut(Option<Res<State<S>>>) -> bool + Clone + Send + Sync + 'static {
    move |current: Option<Res<State<S>>>| current.is_some_and(|current| current.0 == state)
}

/// A run condition: true when the state of type `S` changed since this condition last ran
/// (and on its first run, when the state is new to it); false when `S` is not registered.
///
/// ```
/// use std::time::Duration;
/// use tabula::prelude::*;
/// use tabula::schedule::state_changed;
///
/// #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
/// enum Game { #[default] Menu, Playing }
/// impl States for Game {}
///
/// #[derive(Default)]
/// struct Changes(u32);
/// fn count(mut c: ResMut<Changes>) { c.0 += 1; }
///
/// let mut world = World::new();
/// world.init_resource::<Changes>();
/// world.init_state::<Game>().add_systems(Update, count.run_if(state_changed::<Game>));
/// world.run_frame(Duration::ZERO); // first sight: 1
/// world.run_frame(Duration::ZERO); // unchanged
/// world.resource_mut::<NextState<Game>>().unwrap().set(Game::Playing);
/// world.run_frame(Duration::ZERO); // changed: 2
/// assert_eq!(world.resource::<Changes>().unwrap().0, 2);
/// ```
pub fn state_changed<S: States>(state: Option<Res<State<S>>>) -> bool {
    state.is_some_and(|state| state.is_changed())
}

/// The transition step of state type `S` (see
/// [`WorldFrame::apply_state_transitions`](crate::WorldFrame::apply_state_transitions)).
pub(crate) fn apply_transition<S: States>(world: &mut World, first: bool) {
    let Ok(current) = world.resource::<State<S>>().map(|state| state.0.clone()) else {
        tracing::warn!(
            "state `{}` has no State resource (it was removed): its transitions are skipped",
            std::any::type_name::<S>()
        );
        return;
    };
    // Taken before the first `OnEnter`: a request made in it waits for the next step.
    let pending = world
        .resource::<NextState<S>>()
        .is_ok_and(|next| next.0.is_some());
    let requested = if pending {
        world
            .resource_mut::<NextState<S>>()
            .ok()
            .and_then(|next| next.0.take())
    } else {
        None
    };
    if first {
        run_state_schedule(world, OnEnter(current.clone()));
    }
    let Some(next) = requested else { return };
    let current = world
        .resource::<State<S>>()
        .map_or(current, |state| state.0.clone());
    if next == current {
        return;
    }
    run_state_schedule(world, OnExit(current));
    if let Ok(state) = world.resource_mut::<State<S>>() {
        state.0 = next.clone();
    }
    run_state_schedule(world, OnEnter(next));
}
