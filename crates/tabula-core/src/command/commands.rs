//! [`Commands`]: the recording side of a [`CommandQueue`], with the world's entity allocator
//! at hand so that spawns can return their entity at once.

use crate::bundle::Bundle;
use crate::component::Component;
use crate::entity::{Entities, Entity, SHARED_LANE};
use crate::error::EntityError;
use crate::world::EntityLane;
use crate::world::World;

use super::{Command, CommandError, CommandQueue, Fallible};

/// The command `$command` on `$entity`: `$apply(world, entity)`, its error reported as
/// `CommandError::$variant`. A macro rather than a function so that the command's name is
/// part of its code, not stored with every recorded command.
macro_rules! entity_command {
    ($variant:ident, $command:literal, $entity:expr, $apply:expr) => {{
        let (entity, apply) = ($entity, $apply);
        Fallible(move |world: &mut World| {
            apply(world, entity)
                .map(drop)
                .map_err(|error| CommandError::$variant {
                    command: $command,
                    entity,
                    error,
                })
        })
    }};
}

/// Records deferred changes to a [`World`] into a [`CommandQueue`].
///
/// It holds the queue mutably and the world's [`Entities`] shared, so it works while other
/// code reads the world; the changes happen when the queue is
/// [applied](CommandQueue::apply).
///
/// ```
/// use tabula::{Commands, CommandQueue, World};
///
/// struct Ship;
/// struct Speed(f32);
///
/// let mut world = World::new();
/// let old = world.spawn((Ship,));
/// let mut queue = CommandQueue::new();
/// let mut commands = Commands::new(&mut queue, &world);
/// let fleet = commands.spawn((Ship,)).id();
/// commands.entity(fleet).insert((Speed(2.0),)).add_child(old);
/// commands.insert_resource(1u32);
/// assert!(queue.apply(&mut world).is_empty());
///
/// assert_eq!(world.get::<Speed>(fleet)?.0, 2.0);
/// assert_eq!(world.parent(old)?, Some(fleet));
/// assert_eq!(world.resource::<u32>(), Ok(&1));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Commands<'w, 's> {
    queue: &'s mut CommandQueue,
    ids: Reserver<'w>,
}

/// Where a [`Commands`] reserves the ids of the entities it spawns: the world's allocator and
/// one of its lanes.
#[derive(Clone, Copy)]
struct Reserver<'w> {
    entities: &'w Entities,
    lane: u32,
}

impl Reserver<'_> {
    fn reserve(self) -> Entity {
        self.entities.reserve_in_lane(self.lane)
    }
}

impl<'w, 's> Commands<'w, 's> {
    /// Records into `queue`, reserving new entities in `world`. The queue then belongs to
    /// `world` until it is applied: [`CommandQueue::apply`] on another world panics.
    ///
    /// # Panics
    /// When `queue` already holds commands recorded for another world.
    pub fn new(queue: &'s mut CommandQueue, world: &'w World) -> Self {
        Self::reserving_in(queue, world, SHARED_LANE)
    }

    /// As [`new`](Self::new), reserving ids in `lane`: the ids of its spawns then depend only
    /// on the world's state at its last flush and on the spawns recorded in this lane before,
    /// not on what other threads reserve meanwhile. A schedule gives each command-recording
    /// system a lane of its own this way, and makes one of these per run of the system: each
    /// call counts as a run of the lane's owner, after which the lane's block of ids is sized
    /// to what the run reserved (see [`EntityLane`]).
    ///
    /// ```
    /// use tabula::{Commands, CommandQueue, World};
    ///
    /// let mut world = World::new();
    /// let (a, b) = (world.add_entity_lane(), world.add_entity_lane());
    /// let (mut qa, mut qb) = (CommandQueue::new(), CommandQueue::new());
    /// // Whichever lane spawns first, each gets the same id.
    /// let from_b = Commands::new_in_lane(&mut qb, &world, &b).spawn(("b",)).id();
    /// let from_a = Commands::new_in_lane(&mut qa, &world, &a).spawn(("a",)).id();
    /// qa.apply(&mut world);
    /// qb.apply(&mut world);
    /// assert_eq!(world.get::<&str>(from_a), Ok(&"a"));
    /// assert_eq!(world.get::<&str>(from_b), Ok(&"b"));
    /// ```
    ///
    /// # Panics
    /// When `lane` belongs to another world, or `queue` holds commands for another world.
    pub fn new_in_lane(queue: &'s mut CommandQueue, world: &'w World, lane: &EntityLane) -> Self {
        let index = lane.index_in(world);
        world.entities().begin_lane_run(index);
        Self::reserving_in(queue, world, index)
    }

    /// Ties `queue` to `world` (see [`new`](Self::new)) and records into it, reserving ids in
    /// the lane with index `lane`.
    fn reserving_in(queue: &'s mut CommandQueue, world: &'w World, lane: u32) -> Self {
        queue.bind(world.id());
        let entities = world.entities();
        Self {
            queue,
            ids: Reserver { entities, lane },
        }
    }

    /// Spawns an entity with `bundle`. The id is reserved now and returned at once; the
    /// entity exists once the queue is applied. If the queue is
    /// [discarded](CommandQueue::discard) instead — a schedule discards the queues of a run
    /// a panic aborted — the id is freed; if it is just dropped, the reservation becomes an
    /// entity with no components at the world's next flush.
    ///
    /// If the spawn is refused when applied (the id was despawned first, or the world's
    /// index space ran out when it was reserved), the error is reported.
    pub fn spawn<B: Bundle>(&mut self, bundle: B) -> EntityCommands<'_> {
        let entity = self.ids.reserve();
        self.queue.note_reserved(entity);
        self.queue.push(Fallible(move |world: &mut World| {
            spawn_reserved(world, entity, bundle)
        }));
        EntityCommands::new(entity, self.queue, self.ids)
    }

    /// Spawns an entity with no components. The id is reserved now; reservations become
    /// entities whenever the world is flushed, at the latest when the queue is applied, so
    /// no command needs to be recorded for it.
    pub fn spawn_empty(&mut self) -> EntityCommands<'_> {
        let entity = self.ids.reserve();
        self.queue.note_reserved(entity);
        EntityCommands::new(entity, self.queue, self.ids)
    }

    /// Spawns one entity per item of `bundles` when applied, through
    /// [`World::spawn_batch`] (one command, the table sized once). The ids are taken when it
    /// is applied, so none is returned: spawn one by one with [`spawn`](Self::spawn) to know
    /// them now.
    ///
    /// ```
    /// use tabula::{Commands, CommandQueue, World};
    ///
    /// struct Rock(u32);
    ///
    /// let mut world = World::new();
    /// let mut queue = CommandQueue::new();
    /// Commands::new(&mut queue, &world).spawn_batch((0..100).map(|i| (Rock(i),)));
    /// assert!(queue.apply(&mut world).is_empty());
    /// assert_eq!(world.len(), 100);
    /// ```
    ///
    /// # Panics
    /// When applied, as [`World::spawn_batch`] does (a bundle holding a hierarchy component,
    /// or no entity slot left).
    pub fn spawn_batch<I>(&mut self, bundles: I)
    where
        I: IntoIterator + Send + 'static,
        I::Item: Bundle,
    {
        self.queue.push(move |world: &mut World| {
            world.spawn_batch(bundles).for_each(drop);
        });
    }

    /// Records commands for an existing (or reserved) entity. Whether it is alive is checked
    /// when each command is applied.
    pub fn entity(&mut self, entity: Entity) -> EntityCommands<'_> {
        EntityCommands::new(entity, self.queue, self.ids)
    }

    /// Adds (or replaces) the components of `bundle` on `entity`.
    pub fn insert<B: Bundle>(&mut self, entity: Entity, bundle: B) {
        self.entity(entity).insert(bundle);
    }

    /// Removes the components of `B` from `entity` and drops them. Fails, removing nothing,
    /// if the entity lacks any of them.
    pub fn remove<B: Bundle>(&mut self, entity: Entity) {
        self.entity(entity).remove::<B>();
    }

    /// Despawns `entity`; its children, if any, become roots.
    pub fn despawn(&mut self, entity: Entity) {
        self.entity(entity).despawn();
    }

    /// Despawns `entity` and all its descendants.
    pub fn despawn_recursive(&mut self, entity: Entity) {
        self.entity(entity).despawn_recursive();
    }

    /// Inserts (or replaces) the resource of type `R`.
    pub fn insert_resource<R: Component>(&mut self, resource: R) {
        self.queue.push(move |world: &mut World| {
            world.insert_resource(resource);
        });
    }

    /// Removes the resource of type `R` and drops it; fails if there is none.
    pub fn remove_resource<R: Component>(&mut self) {
        self.queue.push(Fallible(|world: &mut World| {
            world
                .remove_resource::<R>()
                .map(drop)
                .map_err(|error| CommandError::Resource {
                    command: "remove_resource",
                    error,
                })
        }));
    }

    /// Records any command, e.g. a closure taking `&mut World`.
    pub fn add<C: Command>(&mut self, command: C) {
        self.queue.push(command);
    }

    /// Records a [`World::trigger`] of `event`: its observers run when the command is
    /// applied.
    pub fn trigger<E: crate::Event>(&mut self, event: E) {
        self.add(move |world: &mut World| world.trigger(event));
    }

    /// Records a [`World::trigger_targets`] of `event` for `targets`.
    pub fn trigger_targets<E: crate::Event>(&mut self, event: E, targets: impl IntoIterator<Item = Entity>) {
        let targets: Vec<Entity> = targets.into_iter().collect();
        self.add(move |world: &mut World| world.trigger_targets(event, targets));
    }
}

impl std::fmt::Debug for Commands<'_, '_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Commands").field("queue", &self.queue).finish()
    }
}

/// Records commands for one entity; from [`Commands::spawn`] or [`Commands::entity`].
///
/// ```
/// use tabula::{Commands, CommandQueue, World};
///
/// let mut world = World::new();
/// let mut queue = CommandQueue::new();
/// let mut commands = Commands::new(&mut queue, &world);
/// let parent = commands.spawn(("parent",)).id();
/// let child = commands.spawn(("child",)).set_parent(parent).id();
/// commands.entity(parent).insert((7u8,));
/// assert!(queue.apply(&mut world).is_empty());
/// assert_eq!(world.children(parent)?, &[child]);
/// assert_eq!(world.get::<u8>(parent), Ok(&7));
/// # Ok::<(), tabula::EntityError>(())
/// ```
pub struct EntityCommands<'a> {
    entity: Entity,
    queue: &'a mut CommandQueue,
    ids: Reserver<'a>,
}

impl<'a> EntityCommands<'a> {
    fn new(entity: Entity, queue: &'a mut CommandQueue, ids: Reserver<'a>) -> Self {
        Self { entity, queue, ids }
    }

    /// The entity the commands are for.
    pub fn id(&self) -> Entity {
        self.entity
    }

    /// Adds (or replaces) the components of `bundle`.
    pub fn insert<B: Bundle>(&mut self, bundle: B) -> &mut Self {
        self.add(insert_command(self.entity, bundle))
    }

    /// Removes the components of `B` and drops them. Fails, removing nothing, if the entity
    /// lacks any of them.
    pub fn remove<B: Bundle>(&mut self) -> &mut Self {
        self.add(remove_command::<B>(self.entity))
    }

    /// Adds (or replaces) one component; [`insert`](Self::insert) without the tuple.
    pub fn insert_one<T: Component>(&mut self, component: T) -> &mut Self {
        self.insert((component,))
    }

    /// Removes one component and drops it; [`remove`](Self::remove) without the tuple.
    pub fn remove_one<T: Component>(&mut self) -> &mut Self {
        self.remove::<(T,)>()
    }

    /// As [`insert`](Self::insert), but skipped silently when the entity is gone by the time
    /// it is applied (despawned by another command, say): for races the game expects, such
    /// as one system despawning what another tags this frame. Other failures are reported
    /// under the schedule's error policy, as for every command.
    ///
    /// ```
    /// use tabula::{Commands, CommandQueue, World};
    ///
    /// struct Burning;
    ///
    /// let mut world = World::new();
    /// let crate_ = world.spawn(("crate",));
    /// let mut queue = CommandQueue::new();
    /// let mut commands = Commands::new(&mut queue, &world);
    /// commands.entity(crate_).despawn();
    /// commands.entity(crate_).try_insert((Burning,)); // expected to lose the race
    /// assert!(queue.apply(&mut world).is_empty(), "nothing reported");
    /// ```
    pub fn try_insert<B: Bundle>(&mut self, bundle: B) -> &mut Self {
        let entity = self.entity;
        self.add(Fallible(move |world: &mut World| {
            skip_if_gone("try_insert", entity, world.insert(entity, bundle))
        }))
    }

    /// As [`despawn`](Self::despawn), but skipped silently when the entity is already gone.
    pub fn try_despawn(&mut self) {
        let entity = self.entity;
        self.queue.push(Fallible(move |world: &mut World| {
            skip_if_gone("try_despawn", entity, world.despawn(entity))
        }));
    }

    /// Despawns the entity; its children, if any, become roots.
    pub fn despawn(&mut self) {
        self.queue.push(despawn_command(self.entity));
    }

    /// Despawns the entity and all its descendants.
    pub fn despawn_recursive(&mut self) {
        self.queue.push(entity_command!(
            Entity,
            "despawn_recursive",
            self.entity,
            World::despawn_recursive
        ));
    }

    /// Makes the entity a child of `parent`, leaving its old parent if it had one. Fails on
    /// a dead entity or if `parent` is the entity itself or one of its descendants.
    pub fn set_parent(&mut self, parent: Entity) -> &mut Self {
        self.add(entity_command!(
            Hierarchy,
            "set_parent",
            self.entity,
            move |world: &mut World, child| world.set_parent(child, parent)
        ))
    }

    /// Detaches the entity from its parent, making it a root; nothing happens if it has none.
    pub fn remove_parent(&mut self) -> &mut Self {
        self.add(entity_command!(
            Entity,
            "remove_parent",
            self.entity,
            World::remove_parent
        ))
    }

    /// Makes `child` a child of this entity; see [`set_parent`](Self::set_parent).
    pub fn add_child(&mut self, child: Entity) -> &mut Self {
        self.add(entity_command!(
            Hierarchy,
            "add_child",
            self.entity,
            move |world: &mut World, parent| world.set_parent(child, parent)
        ))
    }

    /// Spawns children of the entity: `build` gets a [`ChildBuilder`] whose `spawn` records
    /// a spawn and a [`set_parent`](Self::set_parent) to this entity. Their ids are
    /// reserved at once, as for [`Commands::spawn`].
    ///
    /// ```
    /// use tabula::{Commands, CommandQueue, World};
    ///
    /// struct Ship;
    /// struct Turret(u8);
    ///
    /// let mut world = World::new();
    /// let mut queue = CommandQueue::new();
    /// let mut commands = Commands::new(&mut queue, &world);
    /// let mut turrets = Vec::new();
    /// let ship = commands
    ///     .spawn((Ship,))
    ///     .with_children(|ship| {
    ///         turrets.push(ship.spawn((Turret(1),)).id());
    ///         turrets.push(ship.spawn((Turret(2),)).id());
    ///     })
    ///     .id();
    /// assert!(queue.apply(&mut world).is_empty());
    /// assert_eq!(world.children(ship)?, turrets.as_slice());
    /// # Ok::<(), tabula::EntityError>(())
    /// ```
    pub fn with_children(&mut self, build: impl FnOnce(&mut ChildBuilder<'_, '_>)) -> &mut Self {
        let mut builder = ChildBuilder {
            parent: self.entity,
            commands: Commands {
                queue: self.queue,
                ids: self.ids,
            },
        };
        build(&mut builder);
        self
    }

    /// Records any command, e.g. a closure taking `&mut World`.
    pub fn add<C: Command>(&mut self, command: C) -> &mut Self {
        self.queue.push(command);
        self
    }
}

/// Spawns children of one entity; see [`EntityCommands::with_children`].
pub struct ChildBuilder<'w, 's> {
    parent: Entity,
    commands: Commands<'w, 's>,
}

impl<'w> ChildBuilder<'w, '_> {
    /// Spawns a child with `bundle` (a spawn, then `set_parent` to the parent).
    pub fn spawn<B: Bundle>(&mut self, bundle: B) -> EntityCommands<'_> {
        let parent = self.parent;
        let mut child = self.commands.spawn(bundle);
        child.set_parent(parent);
        child
    }

    /// The entity whose children are being spawned.
    pub fn parent_entity(&self) -> Entity {
        self.parent
    }

    /// The commands, for anything other than spawning children.
    pub fn commands(&mut self) -> Commands<'w, '_> {
        Commands {
            queue: self.commands.queue,
            ids: self.commands.ids,
        }
    }
}

impl std::fmt::Debug for ChildBuilder<'_, '_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChildBuilder")
            .field("parent", &self.parent)
            .finish_non_exhaustive()
    }
}

impl std::fmt::Debug for EntityCommands<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EntityCommands")
            .field("entity", &self.entity)
            .finish_non_exhaustive()
    }
}

/// The command behind [`EntityCommands::insert`].
pub(super) fn insert_command<B: Bundle>(entity: Entity, bundle: B) -> impl Command {
    entity_command!(Entity, "insert", entity, move |world: &mut World, entity| {
        world.insert(entity, bundle)
    })
}

/// `result` of command `command` on `entity` as a command's outcome, with a missing entity
/// taken as success (the `try_` commands).
fn skip_if_gone<T>(
    command: &'static str,
    entity: Entity,
    result: Result<T, EntityError>,
) -> Result<(), CommandError> {
    match result {
        Ok(_) | Err(EntityError::NoSuchEntity(_)) => Ok(()),
        Err(error) => Err(CommandError::Entity {
            command,
            entity,
            error,
        }),
    }
}

/// The command behind [`EntityCommands::remove`].
pub(super) fn remove_command<B: Bundle>(entity: Entity) -> impl Command {
    entity_command!(Entity, "remove", entity, World::remove::<B>)
}

/// The command behind [`EntityCommands::despawn`].
pub(super) fn despawn_command(entity: Entity) -> impl Command {
    entity_command!(Entity, "despawn", entity, World::despawn)
}

/// A spawn whose id is taken when it is applied (no reservation beforehand).
pub(super) fn spawn_command<B: Bundle>(bundle: B) -> impl Command {
    Fallible(move |world: &mut World| {
        // No reservation: one would make the next structural call flush, and every flush
        // re-lays the lanes' blocks (thousands of these are applied at one sync point).
        world
            .try_spawn(bundle)
            .map(drop)
            .map_err(|error| CommandError::Spawn {
                command: "spawn",
                error,
            })
    })
}

/// Gives the reserved `entity` its components.
fn spawn_reserved<B: Bundle>(world: &mut World, entity: Entity, bundle: B) -> Result<(), CommandError> {
    // `spawn_at` refuses only an id that is not a live, empty reservation (despawned before
    // the apply, an exhausted placeholder, or given components already): nothing to undo.
    world
        .spawn_at(entity, bundle)
        .map_err(|error| CommandError::Entity {
            command: "spawn",
            entity,
            error,
        })
}
