//! One-shot systems: systems registered with a world and run on demand — from game code with
//! `world.run_system(id)`, or from another system with `commands.run_system(id)` — instead
//! of every frame by a schedule (bevy's `register_system` / `run_system`).
//!
//! A registered system keeps its state between runs (its `Local`s, its query caches, its
//! entity lane), is initialised on its first run, and applies its commands as each run ends.
//! The systems live in a resource per input and output type (`RegisteredSystems<O, I>`); a
//! run takes the system out of it, so the system may use the whole world, and puts it back
//! afterwards.
//!
//! A system whose first parameter is [`In<T>`](crate::In) takes a `T` on each run:
//! `world.run_system_with(id, input)` (or `commands.run_system_with(id, input)`).
//!
//! ```
//! use tabula::prelude::*;
//!
//! struct Enemy;
//!
//! fn spawn_wave(mut commands: Commands, mut wave: Local<u32>) {
//!     *wave += 1;
//!     for _ in 0..*wave {
//!         commands.spawn((Enemy,));
//!     }
//! }
//!
//! let mut world = World::new();
//! let wave = world.register_system(spawn_wave);
//! world.run_system(wave).unwrap(); // 1 enemy
//! world.run_system(wave).unwrap(); // 2 more: the `Local` counts on
//! assert_eq!(world.query::<&Enemy>().iter(&world).count(), 3);
//! ```

use std::fmt;
use std::marker::PhantomData;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};

use tabula_core::{Command, CommandError, Commands, World};

use crate::system::{BoxedSystem, IntoSystem};

/// The handle of a system registered with [`WorldSystems::register_system`]; `O` is what a
/// run returns and `I` what it takes (`T` for a system whose first parameter is
/// [`In<T>`](crate::In); `()` otherwise).
pub struct SystemId<O = (), I = ()> {
    index: u32,
    generation: u32,
    _types: PhantomData<fn(I) -> O>,
}

impl<O, I> Clone for SystemId<O, I> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<O, I> Copy for SystemId<O, I> {}

impl<O, I> PartialEq for SystemId<O, I> {
    fn eq(&self, other: &Self) -> bool {
        (self.index, self.generation) == (other.index, other.generation)
    }
}

impl<O, I> Eq for SystemId<O, I> {}

impl<O, I> std::hash::Hash for SystemId<O, I> {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        (self.index, self.generation).hash(state);
    }
}

impl<O, I> fmt::Debug for SystemId<O, I> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SystemId({}v{})", self.index, self.generation)
    }
}

/// Why a one-shot system did not run.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RunSystemError {
    /// No system is registered under the id (never, or unregistered since), in this world.
    NotRegistered(String),
    /// The system is running already: it asked, directly or through a system it ran, to run
    /// itself.
    Recursive(String),
}

impl fmt::Display for RunSystemError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotRegistered(id) => write!(
                f,
                "no one-shot system is registered as {id} in this world (unregistered, or \
                 registered with another world); register it with World::register_system"
            ),
            Self::Recursive(id) => write!(
                f,
                "one-shot system {id} asked to run while it was running; a system cannot run \
                 itself (record commands.run_system(id) to run it again after this run)"
            ),
        }
    }
}

impl std::error::Error for RunSystemError {}

/// A registered system and whether it was initialised with this world.
struct Entry<O, I> {
    system: BoxedSystem<O, I>,
    initialized: bool,
}

/// One slot of the registry: its generation, and the system unless it is running or the
/// slot is free.
struct Slot<O, I> {
    generation: u32,
    entry: Option<Entry<O, I>>,
    registered: bool,
}

/// The one-shot systems taking `I` and returning `O` registered with a world, as a resource.
struct RegisteredSystems<O: 'static, I: 'static> {
    slots: Vec<Slot<O, I>>,
}

/// Registering and running one-shot systems on a [`World`] (see the [module docs](self)).
pub trait WorldSystems {
    /// Registers `system` and returns its id. It is initialised on its first run.
    fn register_system<O: 'static, I: 'static, M>(
        &mut self,
        system: impl IntoSystem<O, M, I>,
    ) -> SystemId<O, I>;

    /// Runs the system once, applies the commands it recorded, and returns its output.
    ///
    /// # Errors
    /// When `id` names no registered system of this world, or the system is running already.
    ///
    /// # Panics
    /// When the system panics (after dropping the commands it recorded in that run; the
    /// system stays registered).
    fn run_system<O: 'static>(&mut self, id: SystemId<O>) -> Result<O, RunSystemError>;

    /// Runs a system that takes an input (its first parameter is [`In<I>`](crate::In)) once
    /// on `input`, applies the commands it recorded, and returns its output.
    ///
    /// ```
    /// use tabula::prelude::*;
    ///
    /// struct Hp(i32);
    ///
    /// fn damage(In((target, amount)): In<(Entity, i32)>, mut hp: Query<&mut Hp>) -> i32 {
    ///     let mut hp = hp.get_mut(target).unwrap();
    ///     hp.0 -= amount;
    ///     hp.0
    /// }
    ///
    /// let mut world = World::new();
    /// let orc = world.spawn((Hp(10),));
    /// let hit = world.register_system(damage);
    /// assert_eq!(world.run_system_with(hit, (orc, 3)).unwrap(), 7);
    /// assert_eq!(world.run_system_with(hit, (orc, 4)).unwrap(), 3);
    /// ```
    ///
    /// # Errors
    /// As for [`run_system`](Self::run_system).
    ///
    /// # Panics
    /// As for [`run_system`](Self::run_system).
    fn run_system_with<O: 'static, I: 'static>(
        &mut self,
        id: SystemId<O, I>,
        input: I,
    ) -> Result<O, RunSystemError>;

    /// Unregisters the system, dropping it (and releasing what it held, its entity lane
    /// included).
    ///
    /// # Errors
    /// When `id` names no registered system, or the system is running.
    fn unregister_system<O: 'static, I: 'static>(&mut self, id: SystemId<O, I>)
    -> Result<(), RunSystemError>;
}

impl WorldSystems for World {
    fn register_system<O: 'static, I: 'static, M>(
        &mut self,
        system: impl IntoSystem<O, M, I>,
    ) -> SystemId<O, I> {
        let system: BoxedSystem<O, I> = Box::new(system.into_system());
        let registry = registry::<O, I>(self);
        let entry = Some(Entry {
            system,
            initialized: false,
        });
        let index = match registry.slots.iter().position(|slot| !slot.registered) {
            Some(index) => {
                let slot = &mut registry.slots[index];
                slot.generation += 1;
                slot.entry = entry;
                slot.registered = true;
                index
            }
            None => {
                registry.slots.push(Slot {
                    generation: 0,
                    entry,
                    registered: true,
                });
                registry.slots.len() - 1
            }
        };
        SystemId {
            index: index as u32,
            generation: registry.slots[index].generation,
            _types: PhantomData,
        }
    }

    fn run_system<O: 'static>(&mut self, id: SystemId<O>) -> Result<O, RunSystemError> {
        self.run_system_with(id, ())
    }

    fn run_system_with<O: 'static, I: 'static>(
        &mut self,
        id: SystemId<O, I>,
        input: I,
    ) -> Result<O, RunSystemError> {
        let mut entry = take(self, id)?;
        if !entry.initialized {
            entry.system.initialize(self);
            entry.initialized = true;
        }
        let run = catch_unwind(AssertUnwindSafe(|| entry.system.run_with(input, self)));
        let out = match run {
            Ok(out) => out,
            Err(payload) => {
                entry.system.discard_deferred(self);
                put_back(self, id, entry);
                resume_unwind(payload)
            }
        };
        let mut errors = Vec::new();
        entry.system.apply_deferred(self, &mut errors);
        for error in &errors {
            tracing::warn!("one-shot system `{}`: {error}", entry.system.name());
        }
        put_back(self, id, entry);
        Ok(out)
    }

    fn unregister_system<O: 'static, I: 'static>(
        &mut self,
        id: SystemId<O, I>,
    ) -> Result<(), RunSystemError> {
        let entry = take(self, id)?;
        let slot = &mut registry::<O, I>(self).slots[id.index as usize];
        slot.registered = false;
        drop(entry);
        Ok(())
    }
}

/// The registry of systems taking `I` and returning `O`, made on first use.
fn registry<O: 'static, I: 'static>(world: &mut World) -> &mut RegisteredSystems<O, I> {
    if world.resource::<RegisteredSystems<O, I>>().is_err() {
        world.insert_resource(RegisteredSystems::<O, I> { slots: Vec::new() });
    }
    world
        .resource_mut::<RegisteredSystems<O, I>>()
        .expect("just inserted")
}

/// Takes the system `id` out of the registry, for a run.
fn take<O: 'static, I: 'static>(
    world: &mut World,
    id: SystemId<O, I>,
) -> Result<Entry<O, I>, RunSystemError> {
    let slot = registry::<O, I>(world)
        .slots
        .get_mut(id.index as usize)
        .filter(|slot| slot.registered && slot.generation == id.generation)
        .ok_or_else(|| RunSystemError::NotRegistered(format!("{id:?}")))?;
    slot.entry
        .take()
        .ok_or_else(|| RunSystemError::Recursive(format!("{id:?}")))
}

/// Puts the system `id` back after a run (unless it was unregistered meanwhile).
fn put_back<O: 'static, I: 'static>(world: &mut World, id: SystemId<O, I>, entry: Entry<O, I>) {
    if let Some(slot) = registry::<O, I>(world)
        .slots
        .get_mut(id.index as usize)
        .filter(|slot| slot.registered && slot.generation == id.generation)
    {
        slot.entry = Some(entry);
    }
}

/// Running a one-shot system from [`Commands`]: when the commands are applied.
pub trait CommandsRunSystem {
    /// Records a run of the one-shot system `id` (its output is dropped); a failure to run
    /// is reported as a skipped command.
    fn run_system<O: 'static>(&mut self, id: SystemId<O>);

    /// Records a run of the one-shot system `id` on `input` (its output is dropped); a
    /// failure to run is reported as a skipped command.
    fn run_system_with<O: 'static, I: Send + 'static>(&mut self, id: SystemId<O, I>, input: I);
}

impl CommandsRunSystem for Commands<'_, '_> {
    fn run_system<O: 'static>(&mut self, id: SystemId<O>) {
        self.add(RunSystem(id, ()));
    }

    fn run_system_with<O: 'static, I: Send + 'static>(&mut self, id: SystemId<O, I>, input: I) {
        self.add(RunSystem(id, input));
    }
}

/// The command behind [`CommandsRunSystem::run_system`] and
/// [`run_system_with`](CommandsRunSystem::run_system_with).
struct RunSystem<O, I>(SystemId<O, I>, I);

impl<O: 'static, I: Send + 'static> Command for RunSystem<O, I> {
    fn apply(self, world: &mut World) -> Result<(), CommandError> {
        world
            .run_system_with(self.0, self.1)
            .map(drop)
            .map_err(|error| CommandError::Custom {
                command: "run_system",
                message: error.to_string(),
            })
    }
}
