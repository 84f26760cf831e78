//! [`SkippedCommand`]: a command the schedule skipped, with the system that recorded it.

use std::fmt;

use tabula_core::CommandError;

/// A command that was skipped when the schedule applied it (e.g. aimed at an entity that no
/// longer existed), and the system that recorded it. Reported by
/// [`Schedule::command_errors`](crate::Schedule::command_errors).
///
/// ```
/// use tabula::prelude::*;
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
/// # Ok::<(), tabula::EntityError>(())
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

/// What a schedule does with a command it skipped, besides listing it in
/// [`Schedule::command_errors`](crate::Schedule::command_errors). Set with
/// [`Schedule::set_command_error_policy`](crate::Schedule::set_command_error_policy).
///
/// ```
/// use tabula::prelude::*;
/// use tabula::schedule::CommandErrorPolicy;
///
/// fn despawn_twice(mut commands: Commands, q: Query<Entity>) {
///     for e in q.iter() {
///         commands.entity(e).despawn();
///         commands.entity(e).despawn();
///     }
/// }
///
/// let mut world = World::new();
/// world.spawn((1u8,));
/// let mut schedule = Schedule::new();
/// schedule.add_systems(despawn_twice);
/// schedule.set_command_error_policy(CommandErrorPolicy::Panic);
/// let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| schedule.run(&mut world)));
/// assert!(run.is_err(), "the second despawn panics under CommandErrorPolicy::Panic");
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CommandErrorPolicy {
    /// Only listed.
    Ignore,
    /// Listed and logged through `tracing` at warn level, with the system, the command, the
    /// entity (when there is one) and the reason as fields.
    #[default]
    Warn,
    /// Panics as the command is skipped, which aborts the run like a panicking command: for
    /// tests and debug builds that treat a skipped command as a bug.
    Panic,
}

impl CommandErrorPolicy {
    /// Reacts to `skipped` as the policy says.
    pub(crate) fn report(self, skipped: &SkippedCommand) {
        match self {
            Self::Ignore => {}
            Self::Warn => {
                let entity = skipped.error.entity().map(|e| format!("{e:?}"));
                tracing::warn!(
                    system = skipped.system.as_str(),
                    command = skipped.error.command(),
                    entity = entity.as_deref().unwrap_or("-"),
                    reason = %skipped.error,
                    "command skipped"
                );
            }
            Self::Panic => panic!(
                "{skipped}; the schedule's command error policy is `CommandErrorPolicy::Panic` (use \
                 `Warn` or `Ignore` with `Schedule::set_command_error_policy` to let runs go on)"
            ),
        }
    }
}
