//! `RemovedComponents<T>`: the entities that lost a `T`, read once per system.

use std::marker::PhantomData;

use tabula_core::{Component, Entity, EventCursor, Events, UnsafeWorldCell, World};

use super::{RunTicks, SystemMeta, SystemParam};

/// The entities that lost a `T` (removed, or despawned with it) that this system has not seen
/// yet: each removal is seen once per system, during the schedule run it happened in and the
/// next one, like an event.
///
/// The first system that asks for it turns on the world's removal log for `T`
/// ([`World::track_removals`]); removals before that are not seen. Replacing a value is not a
/// removal. An entity read here may be dead, or may have a `T` again.
///
/// Declares no access: the log changes only with exclusive access to the world (at sync
/// points, where commands are applied, and in exclusive systems), never while a system
/// reads it. A removal by a command is logged when the command is applied.
///
/// ```
/// use tabula::prelude::*;
///
/// struct Shield;
/// #[derive(Default)]
/// struct Broken(Vec<tabula::Entity>);
///
/// fn notice(mut removed: RemovedComponents<Shield>, mut broken: ResMut<Broken>) {
///     broken.0.extend(removed.read());
/// }
///
/// let mut world = World::new();
/// world.init_resource::<Broken>();
/// let mut schedule = Schedule::new();
/// schedule.add_systems(notice);
/// schedule.run(&mut world); // the first run turns the log on
///
/// let knight = world.spawn((Shield,));
/// world.remove_one::<Shield>(knight)?;
/// schedule.run(&mut world);
/// schedule.run(&mut world); // seen once
/// assert_eq!(world.resource::<Broken>().unwrap().0, [knight]);
/// # Ok::<(), tabula::EntityError>(())
/// ```
pub struct RemovedComponents<'w, 's, T: Component> {
    log: &'w Events<Entity>,
    cursor: &'s mut EventCursor<Entity>,
    _component: PhantomData<fn() -> T>,
}

impl<T: Component> RemovedComponents<'_, '_, T> {
    /// The entities that lost a `T` since this system last looked, oldest first, once per
    /// removal; they count as read afterwards.
    pub fn read(&mut self) -> impl ExactSizeIterator<Item = Entity> + '_ {
        self.cursor.read(self.log).copied()
    }

    /// How many removals are unread.
    pub fn len(&self) -> usize {
        self.cursor.len(self.log)
    }

    /// True when every removal has been read.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Marks every removal as read without reading it.
    pub fn clear(&mut self) {
        self.cursor.clear(self.log);
    }
}

// SAFETY: declares no access and reads only `T`'s removal log, which changes only under
// `&mut World` (sync points, exclusive systems, between runs), never while a system runs;
// the cursor is the system's own.
unsafe impl<T: Component> SystemParam for RemovedComponents<'_, '_, T> {
    type State = EventCursor<Entity>;
    type Item<'w, 's> = RemovedComponents<'w, 's, T>;

    fn init_state(world: &mut World, _: &mut SystemMeta) -> EventCursor<Entity> {
        world.track_removals::<T>();
        EventCursor::default()
    }

    unsafe fn get_param<'w, 's>(
        cursor: &'s mut EventCursor<Entity>,
        meta: &SystemMeta,
        world: UnsafeWorldCell<'w>,
        _: RunTicks,
    ) -> Self::Item<'w, 's> {
        // SAFETY: no `&mut World` is live while a system's parameters are fetched (the
        // caller's contract), and the removal log is written only through `&mut World`.
        let log = unsafe { world.world() }.removal_log::<T>().unwrap_or_else(|| {
            // `init_state` started the log, and logs are never dropped: only a state made
            // for another world gets here.
            panic!(
                "{} reads `RemovedComponents<{}>`, but this world does not log its removals: \
                 the system was initialised with another world. Call `initialize` with the world \
                 it runs on (a Schedule does so whenever it runs on a new world)",
                meta.describe(),
                std::any::type_name::<T>()
            )
        });
        RemovedComponents {
            log,
            cursor,
            _component: PhantomData,
        }
    }
}
