//! What the schedule does to the world at the end of every run.

use tabula_core::World;

/// Advances per-run world state: events become one run older.
pub(crate) fn end_of_run(world: &mut World) {
    world.update_events();
}
