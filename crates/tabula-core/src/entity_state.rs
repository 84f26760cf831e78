//! Entity state machines: one entity, several named sets of components, switched as a
//! whole (Ash's `EntityStateMachine`).
//!
//! A ship that is *playing* has controls, a gun and a collision circle; a *destroyed* one
//! has none of them but a death animation. Rather than each system removing and adding the
//! right components, the entity carries an [`EntityStateMachine`] component that names its
//! states, each an [`EntityState`]: a list of components and where each value comes from.
//! [`World::change_state`] (or [`EntityCommands::change_state`], deferred) then swaps one set
//! for the other.
//!
//! **Not the app-level `States`.** `tabula-schedule`'s `States` / `NextState` / `OnEnter`
//! are one value per *world* (which screen the game shows) and decide which *systems* run.
//! An entity state machine is one per *entity* and decides which *components* the entity
//! has; no schedule is involved.
//!
//! # What a state change does
//!
//! Changing from state `old` to state `new` (the first change starts from no state):
//!
//! 1. the machine records `new` as [current](EntityStateMachine::current);
//! 2. every component of `old` that `new` does not list (by type) is removed;
//! 3. every component of `new` is inserted, **except** one that `old` gave through *the same
//!    provider* and the entity still has: that one is left untouched — same value, no change
//!    mark, no hook;
//! 4. an [`EntityStateChanged`] event is triggered for the entity (see
//!    [`World::trigger_targets`]).
//!
//! Components the machine does not mention (a `Position`, the machine itself) are never
//! touched. Changing to the state the entity is already in does nothing at all. A change of
//! the same entity asked for while one is under way (by a hook of a swapped component or an
//! observer of the event) waits for it: it is made after the first change and its event, so
//! observers see the changes one at a time, in order.
//!
//! # The sharing rule: same provider ⇒ untouched
//!
//! Each component of a state comes from a *provider*; two states share a component when
//! they list it through the same provider:
//!
//! | given with | provider identity | shared between two states when |
//! |---|---|---|
//! | [`with_default::<T>()`](EntityState::with_default) | the type `T` | both use `with_default::<T>()` |
//! | [`with_shared(arc)`](EntityState::with_shared) | the `Arc`'s allocation | both pass clones of the same `Arc` |
//! | [`with(value)`](EntityState::with) | that one call | never (each `with` is its own provider) |
//! | [`with_fn(f)`](EntityState::with_fn) | that one call | never |
//!
//! When both states list the same component type through *different* providers, the
//! component is replaced: the new state's value is inserted over the old one (its
//! `on_replace` and `on_insert` hooks run, and it is marked changed), without a remove. This
//! is Ash's rule (`ComponentProvider.identifier`): a `with_default` gun kept across states
//! keeps its ammunition count; `with(Display { .. })` in two states gives each state its own
//! sprite.
//!
//! # Cost
//!
//! Every removed or added component is one [`World::remove`] / [`World::insert`] of that
//! component (a [template](crate::template) spawn, by contrast, moves its entity once): a
//! change that removes `r` components and adds `a` moves the entity's row `r + a` times,
//! each along a cached archetype edge. Hooks and observers of each component run as they do
//! for those calls; their commands are applied after each move, so a hook that despawns the
//! entity ends the change early with an error.
//!
//! ```
//! use std::sync::Arc;
//! use tabula::prelude::*;
//!
//! #[derive(Clone, Debug, PartialEq)]
//! struct Gun { ammo: u32 }
//! #[derive(Clone, Default)]
//! struct Controls;
//! #[derive(Clone, Debug, PartialEq)]
//! struct Wreck { seconds: f32 }
//! #[derive(Clone, Debug, PartialEq)]
//! struct Sprite(&'static str);
//!
//! let hull = Arc::new(Sprite("hull"));
//! let machine = EntityStateMachine::new()
//!     .state("playing", |s| s.with(Gun { ammo: 10 }).with_default::<Controls>().with_shared(hull.clone()))
//!     .state("destroyed", |s| s.with(Wreck { seconds: 3.0 }).with_shared(hull.clone()));
//!
//! let mut world = World::new();
//! let ship = world.spawn((machine,));
//! world.change_state(ship, "playing")?;
//! world.get_mut::<Gun>(ship)?.ammo -= 1;
//! assert!(world.has::<Controls>(ship));
//!
//! world.change_state(ship, "destroyed")?;
//! assert!(!world.has::<Gun>(ship) && !world.has::<Controls>(ship));
//! assert_eq!(world.get::<Wreck>(ship)?, &Wreck { seconds: 3.0 });
//! assert_eq!(world.get::<Sprite>(ship)?, &Sprite("hull")); // shared: never touched
//! assert_eq!(world.get::<EntityStateMachine>(ship)?.current(), Some("destroyed"));
//!
//! world.change_state(ship, "playing")?;
//! assert_eq!(world.get::<Gun>(ship)?, &Gun { ammo: 10 }); // a fresh gun
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::any::type_name;
use std::collections::VecDeque;
use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::Arc;

use crate::command::{CommandError, EntityCommands, Fallible};
use crate::component::Component;
use crate::entity::Entity;
use crate::error::EntityError;
use crate::observer::Event;
use crate::provider::{Provider, Providers};
use crate::world::World;

/// The components one state of an [`EntityStateMachine`] gives its entity; built in the
/// closure passed to [`EntityStateMachine::state`]. Listing a component type twice keeps
/// the last.
#[derive(Clone, Default)]
pub struct EntityState {
    providers: Providers,
}

impl EntityState {
    /// The state has `value` (a clone of it on each entry). A provider of its own: another
    /// state's `with` of the same type replaces the value on a change.
    ///
    /// ```
    /// # use tabula::prelude::*;
    /// #[derive(Clone)]
    /// struct Speed(f32);
    /// let machine = EntityStateMachine::new().state("fast", |s| s.with(Speed(9.0)));
    /// # let _ = machine;
    /// ```
    pub fn with<T: Component + Clone>(mut self, value: T) -> Self {
        self.providers.with(value);
        self
    }

    /// The state has `T::default()`. The provider is the type: two states that both use
    /// `with_default::<T>()` share the component (a change between them leaves it alone).
    ///
    /// ```
    /// # use tabula::prelude::*;
    /// #[derive(Default)]
    /// struct Controls;
    /// let machine = EntityStateMachine::new()
    ///     .state("walking", |s| s.with_default::<Controls>())
    ///     .state("running", |s| s.with_default::<Controls>()); // kept across the change
    /// # let _ = machine;
    /// ```
    pub fn with_default<T: Component + Default>(mut self) -> Self {
        self.providers.with_default::<T>();
        self
    }

    /// The state has a clone of `*shared`. The provider is the `Arc`'s allocation: states
    /// given clones of the same `Arc` share the component (a change between them leaves the
    /// entity's value alone, whatever was written to it), and machines cloned from one
    /// definition hand out the same value.
    ///
    /// ```
    /// # use tabula::prelude::*;
    /// use std::sync::Arc;
    /// #[derive(Clone)]
    /// struct Sprite(&'static str);
    /// let hull = Arc::new(Sprite("hull"));
    /// let machine = EntityStateMachine::new()
    ///     .state("docked", |s| s.with_shared(hull.clone()))
    ///     .state("flying", |s| s.with_shared(hull.clone()));
    /// # let _ = machine;
    /// ```
    pub fn with_shared<T: Component + Clone>(mut self, shared: Arc<T>) -> Self {
        self.providers.with_shared(shared);
        self
    }

    /// The state has what `make` returns, called on each entry. A provider of its own, as
    /// [`with`](Self::with).
    ///
    /// ```
    /// # use tabula::prelude::*;
    /// struct Countdown(f32);
    /// let machine = EntityStateMachine::new().state("dying", |s| s.with_fn(|| Countdown(3.0)));
    /// # let _ = machine;
    /// ```
    pub fn with_fn<T: Component>(mut self, make: impl Fn() -> T + Send + Sync + 'static) -> Self {
        self.providers.with_fn(make);
        self
    }

    /// The Rust type names of the state's components, in the order they were listed (the
    /// order a change inserts them in).
    pub fn components(&self) -> impl ExactSizeIterator<Item = &'static str> + '_ {
        self.providers.names()
    }
}

impl fmt::Debug for EntityState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.components()).finish()
    }
}

/// The named states, shared by every clone of a machine.
#[derive(Clone, Default)]
struct Definition {
    states: Vec<(Arc<str>, EntityState)>,
}

impl Definition {
    fn index(&self, name: &str) -> Option<usize> {
        self.states.iter().position(|(n, _)| &**n == name)
    }
}

/// A component naming an entity's states, each a set of components, and which one it is
/// in. See the [module docs](self) for what a change does and when a component is shared.
///
/// Build it once, clone it for every entity that needs it (the states are shared through
/// an `Arc`; each clone has its own current state), spawn it with the entity, then
/// [`change_state`](World::change_state) into the first state.
///
/// ```
/// use tabula::prelude::*;
///
/// #[derive(Clone)]
/// struct Awake;
/// #[derive(Clone)]
/// struct Asleep;
///
/// let machine = EntityStateMachine::new()
///     .state("awake", |s| s.with(Awake))
///     .state("asleep", |s| s.with(Asleep));
/// let mut world = World::new();
/// let cat = world.spawn((machine.clone(),));
/// assert_eq!(world.get::<EntityStateMachine>(cat)?.current(), None);
/// world.change_state(cat, "asleep")?;
/// assert!(world.get::<EntityStateMachine>(cat)?.is_in("asleep"));
/// assert!(world.has::<Asleep>(cat) && !world.has::<Awake>(cat));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Default)]
pub struct EntityStateMachine {
    definition: Arc<Definition>,
    current: Option<usize>,
    /// A change is under way (see [`World::change_state`]): further requests wait in
    /// `pending`.
    changing: bool,
    /// States requested while a change was under way, in order.
    pending: VecDeque<usize>,
}

/// A clone has the same states and current state, and no change under way.
impl Clone for EntityStateMachine {
    fn clone(&self) -> Self {
        Self {
            definition: Arc::clone(&self.definition),
            current: self.current,
            changing: false,
            pending: VecDeque::new(),
        }
    }
}

impl EntityStateMachine {
    /// A machine with no states.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds the state `name`, whose components `build` lists (it replaces a state of the
    /// same name).
    pub fn state(mut self, name: &str, build: impl FnOnce(EntityState) -> EntityState) -> Self {
        let state = build(EntityState::default());
        let definition = Arc::make_mut(&mut self.definition);
        match definition.index(name) {
            Some(i) => definition.states[i].1 = state,
            None => definition.states.push((Arc::from(name), state)),
        }
        self
    }

    /// The state the entity is in: `None` until the first [change](World::change_state).
    pub fn current(&self) -> Option<&str> {
        self.current.map(|i| &*self.definition.states[i].0)
    }

    /// Whether the entity is in state `name`.
    pub fn is_in(&self, name: &str) -> bool {
        self.current() == Some(name)
    }

    /// The names of the states, in the order they were added.
    pub fn states(&self) -> impl ExactSizeIterator<Item = &str> + '_ {
        self.definition.states.iter().map(|(n, _)| &**n)
    }

    /// The state named `name`, if there is one.
    pub fn get_state(&self, name: &str) -> Option<&EntityState> {
        self.definition.index(name).map(|i| &self.definition.states[i].1)
    }
}

impl fmt::Debug for EntityStateMachine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EntityStateMachine")
            .field("current", &self.current())
            .field("states", &self.definition.states)
            .finish()
    }
}

/// Triggered for an entity (as [`World::trigger_targets`] does) after its
/// [`EntityStateMachine`] changed state, once the components are swapped.
///
/// ```
/// use tabula::prelude::*;
///
/// #[derive(Default)]
/// struct Log(Vec<String>);
///
/// fn log(trigger: Trigger<EntityStateChanged>, mut log: ResMut<Log>) {
///     let change = trigger.event();
///     log.0.push(format!("{:?} -> {}", change.from.as_deref(), change.to));
/// }
///
/// let mut world = World::new();
/// world.init_resource::<Log>();
/// world.observe(log);
/// let e = world.spawn((EntityStateMachine::new().state("on", |s| s).state("off", |s| s),));
/// world.change_state(e, "on")?;
/// world.change_state(e, "off")?;
/// assert_eq!(world.resource::<Log>()?.0, ["None -> on", "Some(\"on\") -> off"]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EntityStateChanged {
    /// The entity whose state changed.
    pub entity: Entity,
    /// The state it left; `None` on its first change.
    pub from: Option<Arc<str>>,
    /// The state it is in now.
    pub to: Arc<str>,
}

impl Event for EntityStateChanged {}

/// Why a [state change](World::change_state) was refused, naming the entity.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum EntityStateError {
    /// The entity is dead or from another world, or the change ended early because a hook
    /// of one of the swapped components despawned it.
    Entity(EntityError),
    /// The entity has no [`EntityStateMachine`].
    NoMachine(Entity),
    /// The entity's machine has no state of that name.
    UnknownState {
        /// The entity.
        entity: Entity,
        /// The name asked for.
        state: String,
        /// The states the machine has.
        known: Vec<Arc<str>>,
    },
}

impl fmt::Display for EntityStateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Entity(error) => write!(f, "cannot change the state: {error}"),
            Self::NoMachine(entity) => write!(
                f,
                "entity {entity:?} has no EntityStateMachine: insert one before changing its state"
            ),
            Self::UnknownState { entity, state, known } => {
                write!(
                    f,
                    "entity {entity:?} has no state named {state:?}; its states are ["
                )?;
                for (i, name) in known.iter().enumerate() {
                    let sep = if i == 0 { "" } else { ", " };
                    write!(f, "{sep}{name:?}")?;
                }
                write!(f, "]")
            }
        }
    }
}

impl std::error::Error for EntityStateError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Entity(error) => Some(error),
            _ => None,
        }
    }
}

impl World {
    /// Moves `entity`'s [`EntityStateMachine`] to state `state`: removes the components of
    /// the old state the new one lacks, inserts the new state's, leaves those both share
    /// (same provider) untouched, then triggers [`EntityStateChanged`] for the entity. See
    /// the [module docs](crate::entity_state) for the rules and the cost. Changing to the
    /// current state does nothing.
    ///
    /// ```
    /// use tabula::prelude::*;
    /// #[derive(Clone)]
    /// struct Lit;
    /// let mut world = World::new();
    /// let lamp = world.spawn((EntityStateMachine::new().state("on", |s| s.with(Lit)).state("off", |s| s),));
    /// world.change_state(lamp, "on")?;
    /// assert!(world.has::<Lit>(lamp));
    /// world.change_state(lamp, "off")?;
    /// assert!(!world.has::<Lit>(lamp));
    /// assert!(world.change_state(lamp, "broken").is_err());
    /// # Ok::<(), tabula::EntityStateError>(())
    /// ```
    ///
    /// # Errors
    /// [`EntityStateError::Entity`] for a dead entity, [`EntityStateError::NoMachine`] when
    /// it has no machine, [`EntityStateError::UnknownState`] when the machine has no such
    /// state; the world is unchanged in those cases. A hook or observer that despawns the
    /// entity during the change ends it early with [`EntityStateError::Entity`].
    ///
    /// # Changes asked for during a change
    /// A hook of a swapped component, or an observer of [`EntityStateChanged`], may ask for
    /// another change of the same entity (directly or through a command, which hooks and
    /// observers apply before the call returns). It is not made in the middle of this one:
    /// it is checked (an unknown state is refused at once), queued, and made after this
    /// change and its event, each queued change in turn, before this call returns.
    pub fn change_state(&mut self, entity: Entity, state: &str) -> Result<(), EntityStateError> {
        let machine = match self.get::<EntityStateMachine>(entity) {
            Ok(machine) => machine,
            Err(EntityError::MissingComponent { .. }) => return Err(EntityStateError::NoMachine(entity)),
            Err(error) => return Err(EntityStateError::Entity(error)),
        };
        let Some(to) = machine.definition.index(state) else {
            return Err(EntityStateError::UnknownState {
                entity,
                state: state.to_owned(),
                known: machine.states().map(Arc::from).collect(),
            });
        };
        let mut machine = self
            .get_mut::<EntityStateMachine>(entity)
            .map_err(EntityStateError::Entity)?;
        if machine.changing {
            // Asked by a hook or observer of the change under way: made after it, in order.
            machine.pending.push_back(to);
            return Ok(());
        }
        machine.changing = true;
        let result = catch_unwind(AssertUnwindSafe(|| {
            let mut next = Some(to);
            while let Some(to) = next {
                self.change_state_once(entity, to)?;
                next = self
                    .get_mut::<EntityStateMachine>(entity)
                    .ok()
                    .and_then(|mut machine| machine.pending.pop_front());
            }
            Ok(())
        }));
        if let Ok(mut machine) = self.get_mut::<EntityStateMachine>(entity) {
            machine.changing = false;
            machine.pending.clear();
        }
        result.unwrap_or_else(|payload| resume_unwind(payload))
    }

    /// One change of `entity`'s machine to its state `to` (an index into its definition).
    fn change_state_once(&mut self, entity: Entity, to: usize) -> Result<(), EntityStateError> {
        let machine = self
            .get::<EntityStateMachine>(entity)
            .map_err(EntityStateError::Entity)?;
        let definition = Arc::clone(&machine.definition);
        let from = machine.current;
        if from == Some(to) || to >= definition.states.len() {
            return Ok(());
        }
        self.get_mut::<EntityStateMachine>(entity)
            .map_err(EntityStateError::Entity)?
            .current = Some(to);
        let old: &[Provider] = from.map_or(&[], |i| definition.states[i].1.providers.as_slice());
        let new = definition.states[to].1.providers.as_slice();
        let in_new = |p: &Provider| new.iter().find(|q| q.component == p.component);
        // Kept: in both states through the same provider, and still on the entity.
        let kept: Vec<bool> = new
            .iter()
            .map(|p| {
                old.iter()
                    .any(|q| q.component == p.component && q.identity == p.identity)
                    && p.make.has(self, entity)
            })
            .collect();
        for p in old {
            // A type the new state also lists is replaced by its insert, not removed.
            if in_new(p).is_none() && p.make.has(self, entity) {
                p.make.remove(self, entity).map_err(EntityStateError::Entity)?;
            }
        }
        for (p, kept) in new.iter().zip(kept) {
            if !kept {
                p.make.insert(self, entity).map_err(EntityStateError::Entity)?;
            }
        }
        let from = from.map(|i| Arc::clone(&definition.states[i].0));
        let to = Arc::clone(&definition.states[to].0);
        self.trigger_targets(EntityStateChanged { entity, from, to }, [entity]);
        Ok(())
    }
}

impl EntityCommands<'_> {
    /// Records a [`World::change_state`] of this entity to `state`. When applied, a refused
    /// change is a [`CommandError`]: [`CommandError::Entity`] for a dead entity or one
    /// without a machine (a missing `EntityStateMachine`), [`CommandError::Custom`] naming
    /// the entity and the state for an unknown state.
    ///
    /// ```
    /// use tabula::prelude::*;
    /// use tabula::CommandQueue;
    /// #[derive(Clone)]
    /// struct Lit;
    /// let mut world = World::new();
    /// let lamp = world.spawn((EntityStateMachine::new().state("on", |s| s.with(Lit)),));
    /// let mut queue = CommandQueue::new();
    /// Commands::new(&mut queue, &world).entity(lamp).change_state("on");
    /// assert!(queue.apply(&mut world).is_empty());
    /// assert!(world.has::<Lit>(lamp));
    /// ```
    pub fn change_state(&mut self, state: impl Into<String>) -> &mut Self {
        let entity = self.id();
        let state = state.into();
        self.add(Fallible(move |world: &mut World| {
            world.change_state(entity, &state).map_err(|error| match error {
                EntityStateError::Entity(error) => CommandError::Entity {
                    command: "change_state",
                    entity,
                    error,
                },
                EntityStateError::NoMachine(entity) => CommandError::Entity {
                    command: "change_state",
                    entity,
                    error: EntityError::MissingComponent {
                        entity,
                        component: type_name::<EntityStateMachine>(),
                    },
                },
                error => CommandError::Custom {
                    command: "change_state",
                    message: error.to_string(),
                },
            })
        }))
    }
}
