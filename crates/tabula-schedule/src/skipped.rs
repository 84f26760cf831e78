//! [`SkippedCommand`]: a command the schedule skipped, with the system that recorded it.

use std::fmt;

use tabula_core::CommandError;

/// A command that was skipped when the schedule applied it (e.g. aimed at an entity that no
/// longer existed), and the system that recorded it. Reported by
/// [`Schedule::command_errors`](crate::Schedule::command_errors).
///
/// ```
/// use tabula_core::{Commands, Entity, World};
/// use tabula_schedule::prelude::*;
///
/// #[derive(Default)]
/// struct Target(Option<Entity>);
///
/// fn despawn_target(mut commands: Commands, target: Res<Target>) {
///     if let Some(entity) = target.0 {
///         commands.entity(entity).despawn();
///     }
/// }
///
/// let mut world = World::new();
/// let gone = world.spawn((1u8,));
/// world.despawn(gone)?;
/// world.insert_resource(Target(Some(gone)));
/// let mut schedule = Schedule::new();
/// schedule.add_systems(despawn_target);
/// schedule.run(&mut world);
///
/// let skipped = &schedule.command_errors()[0];
/// assert!(skipped.system().ends_with("despawn_target"));
/// assert_eq!(skipped.error().command(), "despawn");
/// assert!(skipped.to_string().starts_with("system `"));
/// # Ok::<(), tabula_core::EntityError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SkippedCommand {
    system: String,
    error: CommandError,
}

impl SkippedCommand {
    pub(crate) fn new(system: &str, error: CommandError) -> Self {
        Self {
            system: system.to_owned(),
            error,
        }
    }

    /// The name of the system that recorded the command.
    pub fn system(&self) -> &str {
        &self.system
    }

    /// Why the command was skipped: the command and what it was aimed at.
    pub fn error(&self) -> &CommandError {
        &self.error
    }
}

impl fmt::Display for SkippedCommand {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "system `{}`: {}", self.system, self.error)
    }
}

impl std::error::Error for SkippedCommand {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.error)
    }
}
