//! Observers: systems that run when an event is triggered, instead of every frame — the
//! system half of [`tabula_core::observer`] (which has the events, the index and when
//! observers run).
//!
//! A system with a [`Trigger<E>`](crate::Trigger) parameter becomes an observer of `E` with
//! [`WorldObserve::observe`] (or [`Observer`], to watch given entities or add run
//! conditions, or [`CommandsObserve::observe`] from a system). It keeps its state between
//! runs, as a one-shot system does, and may take any parameter but `&mut World`: it runs in
//! the middle of the change that triggered it, so it cannot make a structural change
//! itself; its commands are applied right after, before the triggering call returns. Its
//! `Commands` reserve ids in the world's shared entity lane: observers run one at a time in
//! registration order, so the ids are the same with any number of threads.
//!
//! ```
//! use tabula::prelude::*;
//! use tabula::OnAdd;
//!
//! struct Enemy;
//! #[derive(Default)]
//! struct Spawned(Vec<Entity>);
//!
//! fn track(trigger: Trigger<OnAdd<Enemy>>, mut spawned: ResMut<Spawned>) {
//!     spawned.0.push(trigger.target());
//! }
//!
//! let mut world = World::new();
//! world.init_resource::<Spawned>();
//! let observer = world.observe(track);
//! let a = world.spawn((Enemy,));
//! assert_eq!(world.resource::<Spawned>().unwrap().0, [a]);
//! world.despawn(observer).unwrap(); // observers are entities: this removes it
//! world.spawn((Enemy,));
//! assert_eq!(world.resource::<Spawned>().unwrap().0.len(), 1);
//! ```

use tabula_core::{CommandError, Commands, Entity, ObserverRunner, World};

use crate::system::{BoxedSystem, IntoSystem};

/// An observer to add: a system with a [`Trigger`](crate::Trigger) parameter, the entities
/// it watches (every entity when none is given), and its run conditions.
///
/// ```
/// use tabula::prelude::*;
/// use tabula::OnInsert;
/// use tabula::schedule::Observer;
///
/// #[derive(Debug, PartialEq)]
/// struct Hp(u32);
/// #[derive(Default)]
/// struct Log(Vec<u32>);
/// struct Paused(bool);
///
/// fn log_hp(trigger: Trigger<OnInsert<Hp>>, hp: Query<&Hp>, mut log: ResMut<Log>) {
///     log.0.push(hp.get(trigger.target()).unwrap().0);
/// }
///
/// let mut world = World::new();
/// world.init_resource::<Log>();
/// world.insert_resource(Paused(false));
/// let hero = world.spawn(());
/// let other = world.spawn(());
/// world.add_observer(
///     Observer::new(log_hp)
///         .watch(hero)
///         .run_if(|paused: Res<Paused>| !paused.0),
/// );
/// world.insert(hero, (Hp(10),))?;
/// world.insert(other, (Hp(99),))?; // not watched
/// world.insert_resource(Paused(true));
/// world.insert(hero, (Hp(5),))?; // condition false
/// assert_eq!(world.resource::<Log>().unwrap().0, [10]);
/// # Ok::<(), tabula::EntityError>(())
/// ```
pub struct Observer {
    system: BoxedSystem<()>,
    watched: Vec<Entity>,
    conditions: Vec<BoxedSystem<bool>>,
}

impl Observer {
    /// An observer running `system`, watching every entity.
    pub fn new<M>(system: impl IntoSystem<(), M>) -> Self {
        Self {
            system: Box::new(system.into_system()),
            watched: Vec::new(),
            conditions: Vec::new(),
        }
    }

    /// Watches `entity`: the observer runs only for triggers targeting it (or another
    /// watched entity). Untargeted triggers ([`World::trigger`]) reach only observers that
    /// watch no entity.
    pub fn watch(mut self, entity: Entity) -> Self {
        self.watched.push(entity);
        self
    }

    /// Runs the observer only when `condition` (a read-only system returning `bool`, as for
    /// a schedule's `run_if`) returns true.
    pub fn run_if<M>(mut self, condition: impl IntoSystem<bool, M>) -> Self {
        self.conditions.push(Box::new(condition.into_system()));
        self
    }
}

/// An observer's system and conditions, as the world runs them.
struct ObserverSystem {
    system: BoxedSystem<()>,
    conditions: Vec<BoxedSystem<bool>>,
}

impl ObserverRunner for ObserverSystem {
    fn run(&mut self, world: &mut World) {
        for condition in &mut self.conditions {
            if !condition.run(world) {
                return;
            }
        }
        self.system.run(world);
    }

    fn apply_deferred(&mut self, world: &mut World, errors: &mut Vec<CommandError>) {
        self.system.apply_deferred(world, errors);
    }

    fn has_deferred(&self) -> bool {
        self.system.has_deferred()
    }
}

/// Adding observers to a [`World`] (see the [module docs](self)).
pub trait WorldObserve {
    /// Adds `system` as an observer of the event of its [`Trigger`](crate::Trigger)
    /// parameter, watching every entity; returns the observer's entity.
    ///
    /// # Panics
    /// When the system has no `Trigger` parameter, or takes `&mut World`.
    fn observe<M>(&mut self, system: impl IntoSystem<(), M>) -> Entity;

    /// Adds an [`Observer`]; returns its entity.
    ///
    /// # Panics
    /// As for [`observe`](Self::observe), and when a run condition writes.
    fn add_observer(&mut self, observer: Observer) -> Entity;
}

impl WorldObserve for World {
    fn observe<M>(&mut self, system: impl IntoSystem<(), M>) -> Entity {
        self.add_observer(Observer::new(system))
    }

    fn add_observer(&mut self, observer: Observer) -> Entity {
        let Observer {
            mut system,
            watched,
            mut conditions,
        } = observer;
        system.set_observer();
        system.initialize(self);
        let name = system.name().to_string();
        if system.access().is_exclusive() {
            panic!(
                "observer `{name}` takes `&mut World`; an observer runs in the middle of the change \
                 that triggered it, so it cannot change the world's structure itself: take \
                 `Commands` (applied right after) and the queries and resources it needs"
            );
        }
        let Some(key) = system.event_key() else {
            panic!(
                "system `{name}` has no `Trigger<E>` parameter, so it observes no event; add one \
                 (e.g. `trigger: Trigger<OnAdd<Enemy>>`)"
            );
        };
        for condition in &mut conditions {
            condition.set_condition_of(&format!("system `{name}`"));
            condition.set_observer();
            condition.initialize(self);
            let access = condition.access();
            if access.writes_anything() || access.is_deferred() {
                panic!(
                    "run condition `{}` of observer `{name}` writes or records commands; a run \
                     condition only reads",
                    condition.name()
                );
            }
        }
        self.add_observer_runner(key, watched, Box::new(ObserverSystem { system, conditions }))
    }
}

/// Adding observers from [`Commands`]: when the commands are applied.
pub trait CommandsObserve {
    /// Records [`WorldObserve::observe`] of `system`.
    fn observe<M>(&mut self, system: impl IntoSystem<(), M>);

    /// Records [`WorldObserve::add_observer`].
    fn add_observer(&mut self, observer: Observer);
}

impl CommandsObserve for Commands<'_, '_> {
    fn observe<M>(&mut self, system: impl IntoSystem<(), M>) {
        self.add_observer(Observer::new(system));
    }

    fn add_observer(&mut self, observer: Observer) {
        self.add(move |world: &mut World| {
            world.add_observer(observer);
        });
    }
}
