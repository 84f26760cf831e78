//! Deferred structural changes: [`Command`]s recorded into a [`CommandQueue`] through
//! [`Commands`], applied to the [`World`] later, in order.
//!
//! A system that runs beside others only borrows parts of the world, so it cannot spawn or
//! despawn on the spot. It records what it wants instead:
//!
//! 1. [`Commands::spawn`] reserves the entity id at once (through `&World`, lock-free), so the
//!    system can use the id — store it, point a component at it — right away.
//! 2. The queue stores each command compactly: a small header and the command's bytes, back
//!    to back in one buffer. No allocation per command.
//! 3. At a sync point, [`CommandQueue::apply`] runs the commands against `&mut World` in the
//!    order they were recorded. A command aimed at an entity that was despawned meanwhile is
//!    skipped and reported as a [`CommandError`], never a panic mid-frame.
//!
//! ```
//! use tabula::{Commands, CommandQueue, World};
//!
//! struct Health(u32);
//!
//! let mut world = World::new();
//! let mut queue = CommandQueue::new();
//! let mut commands = Commands::new(&mut queue, &world);
//! let hero = commands.spawn((Health(10),)).id();
//! assert!(!world.contains(hero)); // not yet: the spawn is deferred
//! assert!(queue.apply(&mut world).is_empty());
//! assert_eq!(world.get::<Health>(hero)?.0, 10);
//! # Ok::<(), tabula::EntityError>(())
//! ```

mod commands;
pub(crate) mod parallel;
mod queue;

use std::fmt;

use crate::entity::Entity;
use crate::error::EntityError;
use crate::hierarchy::HierarchyError;
use crate::resource::ResourceError;
use crate::world::World;

pub use commands::{ChildBuilder, Commands, EntityCommands};
pub use parallel::{ParallelCommandQueue, ScopedCommands};
pub use queue::CommandQueue;

/// A deferred change to the world, recorded now and applied at the next sync point.
///
/// Any `FnOnce(&mut World) + Send + 'static` closure is a command that always succeeds.
/// Implement the trait yourself for a command that can fail:
///
/// ```
/// use tabula::{Command, CommandError, CommandQueue, Entity, World};
///
/// struct Heal(Entity);
///
/// impl Command for Heal {
///     fn apply(self, world: &mut World) -> Result<(), CommandError> {
///         let mut health = world
///             .get_mut::<u32>(self.0)
///             .map_err(|error| CommandError::Entity { command: "heal", entity: self.0, error })?;
///         *health += 1;
///         Ok(())
///     }
/// }
///
/// let mut world = World::new();
/// let e = world.spawn((1u32,));
/// let mut queue = CommandQueue::new();
/// queue.push(Heal(e));
/// assert!(queue.apply(&mut world).is_empty());
/// assert_eq!(world.get::<u32>(e), Ok(&2));
/// ```
pub trait Command: Send + 'static {
    /// Applies the change. An error means the command was skipped and, as far as the command
    /// could manage, left the world unchanged.
    fn apply(self, world: &mut World) -> Result<(), CommandError>;
}

impl<F> Command for F
where
    F: FnOnce(&mut World) + Send + 'static,
{
    fn apply(self, world: &mut World) -> Result<(), CommandError> {
        self(world);
        Ok(())
    }
}

/// A built-in command that may fail: a closure returning the command's result. (A blanket
/// `impl` for closures returning `Result` would overlap with the one for closures returning
/// `()`, so this wrapper names the difference.)
pub(crate) struct Fallible<F>(pub(crate) F);

impl<F> Command for Fallible<F>
where
    F: FnOnce(&mut World) -> Result<(), CommandError> + Send + 'static,
{
    fn apply(self, world: &mut World) -> Result<(), CommandError> {
        (self.0)(world)
    }
}

/// Why a command was skipped. Each variant names the command and what it was aimed at; the
/// world is left as the command found it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum CommandError {
    /// The entity the command works on was dead or lacked a component.
    Entity {
        /// The command, e.g. `"insert"`.
        command: &'static str,
        /// The entity the command was aimed at.
        entity: Entity,
        /// What was wrong.
        error: EntityError,
    },
    /// A hierarchy change was refused (dead entity or a cycle).
    Hierarchy {
        /// The command, e.g. `"set_parent"`.
        command: &'static str,
        /// The entity the command was aimed at (the child for parent changes).
        entity: Entity,
        /// What was wrong.
        error: HierarchyError,
    },
    /// A spawn that had no id yet (one recorded through
    /// [`ScopedCommands`](crate::ScopedCommands), which takes its id when applied) was
    /// refused: [`EntityError::IndexSpaceExhausted`].
    Spawn {
        /// The command, `"spawn"`.
        command: &'static str,
        /// What was wrong.
        error: EntityError,
    },
    /// The resource the command works on was missing.
    Resource {
        /// The command, e.g. `"remove_resource"`.
        command: &'static str,
        /// What was wrong.
        error: ResourceError,
    },
    /// A user-defined command failed for a reason of its own.
    Custom {
        /// The command's name.
        command: &'static str,
        /// What was wrong.
        message: String,
    },
}

impl CommandError {
    /// The entity the command was aimed at, when it was aimed at one.
    pub fn entity(&self) -> Option<Entity> {
        match self {
            Self::Entity { entity, .. } | Self::Hierarchy { entity, .. } => Some(*entity),
            Self::Spawn { .. } | Self::Resource { .. } | Self::Custom { .. } => None,
        }
    }

    /// The name of the command that was skipped.
    pub fn command(&self) -> &'static str {
        match self {
            Self::Entity { command, .. }
            | Self::Hierarchy { command, .. }
            | Self::Spawn { command, .. }
            | Self::Resource { command, .. }
            | Self::Custom { command, .. } => command,
        }
    }
}

impl fmt::Display for CommandError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let reason: &dyn fmt::Display = match self {
            Self::Entity { error, .. } | Self::Spawn { error, .. } => error,
            Self::Hierarchy { error, .. } => error,
            Self::Resource { error, .. } => error,
            Self::Custom { message, .. } => message,
        };
        let command = self.command();
        match self.entity() {
            Some(entity) => write!(f, "{command} {entity} skipped: {reason}"),
            None => write!(f, "{command} skipped: {reason}"),
        }
    }
}

impl std::error::Error for CommandError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Entity { error, .. } | Self::Spawn { error, .. } => Some(error),
            Self::Hierarchy { error, .. } => Some(error),
            Self::Resource { error, .. } => Some(error),
            Self::Custom { .. } => None,
        }
    }
}

#[cfg(test)]
mod tests;
