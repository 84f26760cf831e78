//! Parameters that reach beyond one run: `Commands` (structural changes applied at sync
//! points) and `EventReader` / `EventWriter`.

use std::any::type_name;

use tabula_core::{
    Access, CommandError, CommandQueue, Commands, EntityLane, EventCursor, Events, ParallelCommandQueue,
    ScopedCommands, UnsafeWorldCell, World, short_type_name,
};

use super::{RunTicks, SystemMeta, SystemParam};

// SAFETY: declares no data access: `Commands` only reserves ids through `&Entities`, in the
// system's own lane (one atomic counter only this system uses; an observer, which runs
// alone, uses the shared lane), and records into the system's own queue; nothing is applied
// until `apply_deferred`, which runs with `&mut World`.
unsafe impl SystemParam for Commands<'_, '_> {
    /// The system's queue, and the entity lane its spawns reserve ids in: ids then depend on
    /// the world at the last sync point and on this system's own spawns, never on which
    /// other systems run at the same time. Observers have no lane of their own: they run
    /// one at a time, in an order that does not depend on threads, so the shared lane gives
    /// the same ids on every run, and lanes do not pile up with observers.
    type State = (CommandQueue, Option<EntityLane>);
    type Item<'w, 's> = Commands<'w, 's>;

    fn init_state(world: &mut World, meta: &mut SystemMeta) -> Self::State {
        meta.set_deferred();
        let lane = (!meta.is_observer()).then(|| world.add_entity_lane());
        (CommandQueue::new(), lane)
    }

    fn has_deferred((queue, _): &Self::State) -> bool {
        !queue.is_empty()
    }

    fn deferred_len((queue, _): &Self::State) -> usize {
        queue.len()
    }

    fn apply_deferred((queue, _): &mut Self::State, world: &mut World, errors: &mut Vec<CommandError>) {
        errors.extend(queue.apply(world));
    }

    fn discard_deferred((queue, _): &mut Self::State, world: &mut World) {
        queue.discard(world);
    }

    unsafe fn get_param<'w, 's>(
        (queue, lane): &'s mut Self::State,
        _: &SystemMeta,
        world: UnsafeWorldCell<'w>,
        _: RunTicks,
    ) -> Self::Item<'w, 's> {
        // SAFETY: only the entity allocator's reservation (atomics) is used through this
        // reference, which no concurrently running system mutates.
        let world = unsafe { world.world() };
        match lane {
            Some(lane) => Commands::new_in_lane(queue, world, lane),
            None => Commands::new(queue, world),
        }
    }
}

/// Records commands from many threads at once, typically from a `par_for_each` closure; they
/// are applied at the system's next sync point in row order, whichever thread ran which
/// rows, so the world (spawned ids included) is the same with one thread or many.
///
/// ```
/// use tabula::prelude::*;
///
/// struct Fuse(u32);
/// struct Spark(Entity);
///
/// fn ignite(mut fuses: Query<(Entity, &mut Fuse)>, commands: ParallelCommands) {
///     fuses.par_for_each_mut(|(entity, mut fuse)| {
///         fuse.0 -= 1;
///         if fuse.0 == 0 {
///             commands.command_scope(|commands| {
///                 commands.despawn(entity);
///                 commands.spawn((Spark(entity),));
///             });
///         }
///     });
/// }
///
/// let mut world = World::new();
/// world.spawn_batch((1..=1000).map(|i| (Fuse(i % 3 + 1),))).for_each(drop);
/// let mut schedule = Schedule::new();
/// schedule.add_systems(ignite);
/// schedule.run(&mut world);
/// assert_eq!(world.query::<&Spark>().iter(&world).count(), 333);
/// assert_eq!(world.query::<&Fuse>().iter(&world).count(), 667);
/// ```
pub struct ParallelCommands<'s> {
    queue: &'s ParallelCommandQueue,
}

impl ParallelCommands<'_> {
    /// Runs `record` with commands that are applied at this scope's place in row order; see
    /// [`ParallelCommandQueue::command_scope`].
    pub fn command_scope<R>(&self, record: impl FnOnce(&mut ScopedCommands<'_>) -> R) -> R {
        self.queue.command_scope(record)
    }
}

// SAFETY: declares no data access and touches none: the queue is the system's own, and
// nothing is applied until `apply_deferred`, which runs with `&mut World`.
unsafe impl SystemParam for ParallelCommands<'_> {
    type State = ParallelCommandQueue;
    type Item<'w, 's> = ParallelCommands<'s>;

    fn init_state(_: &mut World, meta: &mut SystemMeta) -> ParallelCommandQueue {
        meta.set_deferred();
        ParallelCommandQueue::new()
    }

    fn has_deferred(queue: &ParallelCommandQueue) -> bool {
        !queue.is_empty()
    }

    fn deferred_len(queue: &ParallelCommandQueue) -> usize {
        queue.len()
    }

    fn apply_deferred(queue: &mut ParallelCommandQueue, world: &mut World, errors: &mut Vec<CommandError>) {
        errors.extend(queue.apply(world));
    }

    fn discard_deferred(queue: &mut ParallelCommandQueue, _: &mut World) {
        // Its spawns take their ids when applied: nothing was reserved.
        *queue = ParallelCommandQueue::new();
    }

    unsafe fn get_param<'w, 's>(
        queue: &'s mut ParallelCommandQueue,
        _: &SystemMeta,
        _: UnsafeWorldCell<'w>,
        _: RunTicks,
    ) -> Self::Item<'w, 's> {
        ParallelCommands { queue }
    }
}

/// Reads the events of type `E` this system has not seen yet; each event is seen once per
/// reader, during the run it was sent in and the next one.
///
/// ```
/// use tabula::prelude::*;
///
/// struct Hit(u32);
/// #[derive(Default)]
/// struct Damage(u32);
///
/// fn attack(mut hits: EventWriter<Hit>) {
///     hits.send(Hit(3));
/// }
/// fn take(mut hits: EventReader<Hit>, mut damage: ResMut<Damage>) {
///     damage.0 += hits.read().map(|h| h.0).sum::<u32>();
/// }
///
/// let mut world = World::new();
/// world.init_resource::<Damage>();
/// let mut schedule = Schedule::new();
/// schedule.add_systems((attack, take.after(attack)));
/// schedule.run(&mut world);
/// schedule.run(&mut world);
/// assert_eq!(world.resource::<Damage>().unwrap().0, 6);
/// ```
pub struct EventReader<'w, 's, E: Send + Sync + 'static> {
    events: &'w Events<E>,
    cursor: &'s mut EventCursor<E>,
}

impl<'w, E: Send + Sync + 'static> EventReader<'w, '_, E> {
    /// The unread events, oldest first; they count as read afterwards.
    pub fn read(&mut self) -> impl ExactSizeIterator<Item = &'w E> + '_ {
        self.cursor.read(self.events)
    }

    /// How many events are unread.
    pub fn len(&self) -> usize {
        self.cursor.len(self.events)
    }

    /// True when every event has been read.
    pub fn is_empty(&self) -> bool {
        self.cursor.is_empty(self.events)
    }

    /// Marks every event as read without reading it.
    pub fn clear(&mut self) {
        self.cursor.clear(self.events);
    }
}

fn events_access<E: Send + Sync + 'static>(world: &mut World, write: bool) -> Access {
    world.add_event::<E>();
    let id = world.register_resource::<Events<E>>();
    let mut access = Access::default();
    let result = if write {
        access.add_write(id)
    } else {
        access.add_read(id)
    };
    result.expect("a fresh access cannot conflict");
    access
}

// SAFETY: declares a read of `Events<E>` and reads only it (the cursor is the system's own).
unsafe impl<E: Send + Sync + 'static> SystemParam for EventReader<'_, '_, E> {
    type State = EventCursor<E>;
    type Item<'w, 's> = EventReader<'w, 's, E>;

    fn init_state(world: &mut World, meta: &mut SystemMeta) -> EventCursor<E> {
        let access = events_access::<E>(world, false);
        meta.add_param_access(world, type_name::<Self>(), access);
        EventCursor::default()
    }

    unsafe fn get_param<'w, 's>(
        cursor: &'s mut EventCursor<E>,
        meta: &SystemMeta,
        world: UnsafeWorldCell<'w>,
        _: RunTicks,
    ) -> Self::Item<'w, 's> {
        // SAFETY: the system holds a read of `Events<E>`.
        let events =
            unsafe { world.get_resource::<Events<E>>() }.unwrap_or_else(|| missing_events::<E>(meta));
        EventReader { events, cursor }
    }
}

/// Sends events of type `E`.
pub struct EventWriter<'w, E: Send + Sync + 'static> {
    events: &'w mut Events<E>,
}

impl<E: Send + Sync + 'static> EventWriter<'_, E> {
    /// Sends one event.
    pub fn send(&mut self, event: E) {
        self.events.send(event);
    }

    /// Sends several events.
    pub fn send_batch(&mut self, events: impl IntoIterator<Item = E>) {
        self.events.send_batch(events);
    }
}

// SAFETY: declares a write of `Events<E>` and touches only it.
unsafe impl<E: Send + Sync + 'static> SystemParam for EventWriter<'_, E> {
    type State = ();
    type Item<'w, 's> = EventWriter<'w, E>;

    fn init_state(world: &mut World, meta: &mut SystemMeta) {
        let access = events_access::<E>(world, true);
        meta.add_param_access(world, type_name::<Self>(), access);
    }

    unsafe fn get_param<'w, 's>(
        _: &'s mut (),
        meta: &SystemMeta,
        world: UnsafeWorldCell<'w>,
        _: RunTicks,
    ) -> Self::Item<'w, 's> {
        // SAFETY: the system holds a write of `Events<E>`.
        let events =
            unsafe { world.get_resource_mut::<Events<E>>() }.unwrap_or_else(|| missing_events::<E>(meta));
        EventWriter { events }
    }
}

#[cold]
fn missing_events<E>(meta: &SystemMeta) -> ! {
    panic!(
        "{} uses events `{}`, but their `Events` resource was removed from the world; keep it \
         while systems use it, or put it back with `World::add_event::<{}>()`",
        meta.describe(),
        type_name::<E>(),
        short_type_name(type_name::<E>())
    )
}
