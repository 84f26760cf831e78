//! Component hooks: functions a world runs at the moment an entity gains, keeps a new value
//! of, or loses a component, from every path that changes it. The kinds, their order on
//! every path and what a hook may do are documented on [`HookKind`].

use std::sync::Arc;

use super::World;
use crate::change::Mut;
use crate::command::{CommandError, CommandQueue, Commands};
use crate::component::{Component, ComponentId};
use crate::entity::Entity;
use crate::error::EntityError;
use crate::resource::ResourceError;

/// When a component hook runs. Hooks are functions a world runs at the moment an entity gains, keeps a new value
/// of, or loses a component, from every path that changes it.
///
/// **Kinds.** Registered per component type through
/// [`World::register_component`](crate::World::register_component) (several per kind, run
/// in registration order):
///
/// | kind | runs when | the entity |
/// |---|---|---|
/// | [`on_add`](HookKind::Add) | it gains a component it did not have | holds the new value |
/// | [`on_insert`](HookKind::Insert) | a value is written by a spawn or insert, new or replacing | holds the new value |
/// | [`on_replace`](HookKind::Replace) | a value is about to go: replaced by an insert, removed, or despawned | still holds the old value |
/// | [`on_remove`](HookKind::Remove) | it is about to lose the component (remove or despawn) | still holds it |
/// | [`on_despawn`](HookKind::Despawn) | it is about to be despawned | is whole |
///
/// **Order**, the same on every path (spawn, `spawn_batch`, `spawn_at`, insert, `insert_batch`,
/// remove, `remove_batch`, despawn, `despawn_recursive`, `clear`, and every command applied
/// from [`Commands`](crate::Commands) or [`ParallelCommands`](crate::ParallelCommandQueue)):
///
/// * insert (and spawn, an insert into an empty entity): `on_replace` for the components the
///   entity had, then the values are written, then `on_add` for the components it did not
///   have, then `on_insert` for all of the bundle's;
/// * remove: `on_replace`, then `on_remove`, then the components go;
/// * despawn: `on_despawn`, then `on_replace`, then `on_remove`, for all of the entity's
///   components, then the entity goes.
///
/// Within one kind, components run in component-id order (the order they were registered in
/// the world), whatever the order of the bundle's fields; the hooks of one component run in
/// the order they were added. A batch runs each entity's hooks in the batch's order.
///
/// **What a hook can do.** It gets a [`HookWorld`]: it reads and writes component values and
/// resources of any entity, and records commands. It cannot spawn, insert, remove or despawn
/// directly — the entity may be in the middle of a move — so the type has no method that
/// would. The commands it records are applied before the `World` call that ran it returns
/// (`insert_batch`, `remove_batch`: once the whole batch is done; `spawn_batch`: after each
/// entity, each being a spawn; a despawn: before the entity's values are
/// dropped, so a panicking `Drop` cannot undo them; `clear`: after everything is gone). When
/// the call was itself a command, that is within the same apply, and a hook command that
/// fails is returned with that apply's errors, so a schedule's
/// [command error policy](crate::CommandError) reports it as the triggering command's. Outside
/// a command apply, a failed hook command is logged through `tracing` at warn level.
///
/// **What it costs where no hook is involved: nothing new.** The registry marks hooked
/// component types; archetypes, insert edges and remove edges carry what they need to know
/// in the flags the storage path already reads (`Archetype::hooked` for despawns, an insert
/// edge's `inline_target` for the inline insert path, a remove edge's `unusual`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HookKind {
    /// The entity gained the component (it did not have it before).
    Add,
    /// A value of the component was written by a spawn or an insert, new or replacing.
    Insert,
    /// The entity's value is about to be replaced by an insert, removed, or despawned.
    Replace,
    /// The entity is about to lose the component, by a removal or a despawn.
    Remove,
    /// The entity is about to be despawned.
    Despawn,
}

impl HookKind {
    /// The kind's bit in [`ComponentInfo`](crate::ComponentInfo)'s hook mask.
    #[inline]
    pub(crate) const fn bit(self) -> u8 {
        1 << self as u8
    }

    /// The kinds an insert can run.
    pub(crate) const INSERTING: u8 = Self::Add.bit() | Self::Insert.bit() | Self::Replace.bit();
    /// The kinds a removal runs.
    pub(crate) const REMOVING: u8 = Self::Replace.bit() | Self::Remove.bit();
    /// The kinds a despawn runs.
    pub(crate) const LEAVING: u8 = Self::Despawn.bit() | Self::Replace.bit() | Self::Remove.bit();
}

/// What a hook is called for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HookContext {
    /// The entity whose component changes.
    pub entity: Entity,
    /// The component the hook was registered for.
    pub component: ComponentId,
    /// Which change it is.
    pub kind: HookKind,
}

/// A copy of a list of components (an edge's, an archetype's) to run hooks over while the
/// world is borrowed mutably: on the stack for the common sizes.
pub(crate) type ComponentList = smallvec::SmallVec<[ComponentId; 8]>;

/// A component hook, as stored.
pub(crate) type Hook = Arc<dyn Fn(&mut HookWorld<'_>, HookContext) + Send + Sync>;

/// One component's hooks, by kind.
#[derive(Clone, Default)]
struct ComponentHooks {
    by_kind: [Vec<Hook>; 5],
}

/// The world's hooks, by component, and the commands they recorded.
#[derive(Default)]
pub(crate) struct Hooks {
    /// `table[c]` holds component `c`'s hooks. Shared, so that running hooks (which borrow
    /// the world mutably) holds the table through a clone of the `Arc`, not a borrow.
    table: Arc<Vec<ComponentHooks>>,
    /// Commands recorded by the hooks of the operation under way; empty between operations.
    deferred: CommandQueue,
    /// Failed hook commands not yet handed to a command apply (see `collecting`).
    errors: Vec<CommandError>,
    /// How many command applies are under way: while any is, failed hook commands wait in
    /// `errors` for it, which returns them with its own.
    collecting: u32,
    /// `requirements[c]`: the components `c` requires, in registration order (see
    /// `world/registration.rs`).
    requirements: Vec<Vec<ComponentId>>,
    /// The relationships registered (see [`crate::relationship`]), by type.
    relationships: hashbrown::HashSet<std::any::TypeId>,
}

// A world stays consistent when a panic unwinds through it (every structural change records
// locations before a `Drop` or hook can run; the tests under Miri check it), so it is unwind
// safe as before hooks existed; what a hook closure captures is its owner's to keep
// consistent, as with any closure a panic crosses.
impl std::panic::UnwindSafe for Hooks {}
impl std::panic::RefUnwindSafe for Hooks {}

/// The world as a hook sees it: component values and resources of every entity, read and
/// written in place, and commands; no structural change (see [`HookKind`]).
///
/// ```
/// use tabula::{HookWorld, World};
///
/// struct Hp(u32);
/// #[derive(Default)]
/// struct Alive(u32);
///
/// let mut world = World::new();
/// world.init_resource::<Alive>();
/// world
///     .register_component::<Hp>()
///     .on_add(|world: &mut HookWorld, _| world.resource_mut::<Alive>().unwrap().0 += 1)
///     .on_remove(|world: &mut HookWorld, _| world.resource_mut::<Alive>().unwrap().0 -= 1);
/// let a = world.spawn((Hp(3),));
/// world.spawn_batch((0..4).map(|_| (Hp(1),))).for_each(drop);
/// world.despawn(a)?;
/// assert_eq!(world.resource::<Alive>().unwrap().0, 4);
/// # Ok::<(), tabula::EntityError>(())
/// ```
pub struct HookWorld<'w> {
    world: &'w mut World,
    commands: &'w mut CommandQueue,
}

impl HookWorld<'_> {
    /// The whole world, read-only: queries through `&World`, views, anything that reads.
    pub fn world(&self) -> &World {
        self.world
    }

    /// `entity`'s `T`.
    pub fn get<T: Component>(&self, entity: Entity) -> Result<&T, EntityError> {
        self.world.get(entity)
    }

    /// `entity`'s `T`, mutably; writing marks it changed. Refused for immutable components,
    /// as [`World::get_mut`] refuses them.
    pub fn get_mut<T: Component>(&mut self, entity: Entity) -> Result<Mut<'_, T>, EntityError> {
        self.world.get_mut(entity)
    }

    /// `entity`'s `T`, mutably, immutable or not: for the module that owns an immutable
    /// component and keeps it consistent.
    pub(crate) fn get_mut_owned<T: Component>(&mut self, entity: Entity) -> Result<Mut<'_, T>, EntityError> {
        self.world.get_mut_raw(entity)
    }

    /// True when `entity` is alive.
    pub fn contains(&self, entity: Entity) -> bool {
        self.world.contains(entity)
    }

    /// True when `entity` is alive and has a `T`.
    pub fn has<T: Component>(&self, entity: Entity) -> bool {
        self.world.has::<T>(entity)
    }

    /// Resource `R`.
    pub fn resource<R: Component>(&self) -> Result<&R, ResourceError> {
        self.world.resource()
    }

    /// Resource `R`, mutably.
    pub fn resource_mut<R: Component>(&mut self) -> Result<&mut R, ResourceError> {
        self.world.resource_mut()
    }

    /// Records commands, applied once the change that ran the hook is complete (see the
    /// [`HookKind`]). Spawns reserve their ids at once, so they are the same whatever
    /// else runs.
    pub fn commands(&mut self) -> Commands<'_, '_> {
        Commands::new(self.commands, self.world)
    }

    /// The queue the hook's commands go to, for closures over `&mut World`.
    pub(crate) fn queue(&mut self) -> &mut CommandQueue {
        self.commands
    }

    /// The world and the hook's queue, for the modules that own what hooks maintain (the
    /// observer index, observers' runs): they make no structural change through it.
    pub(crate) fn parts(&mut self) -> (&mut World, &mut CommandQueue) {
        (self.world, self.commands)
    }
}

impl Hooks {
    /// Notes relationship type `relationship` as registered; false when it already was.
    pub(crate) fn note_relationship(&mut self, relationship: std::any::TypeId) -> bool {
        self.relationships.insert(relationship)
    }

    /// The components `component` requires, in registration order.
    pub(crate) fn requirements(&self, component: ComponentId) -> &[ComponentId] {
        self.requirements
            .get(component.index())
            .map_or(&[], Vec::as_slice)
    }

    /// Records that `component` requires `required`.
    pub(crate) fn add_requirement(&mut self, component: ComponentId, required: ComponentId) {
        if self.requirements.len() <= component.index() {
            self.requirements.resize_with(component.index() + 1, Vec::new);
        }
        self.requirements[component.index()].push(required);
    }
}

impl World {
    /// Adds `hook` to component `id`'s hooks of `kind`, after any it has. Archetypes and
    /// edges that hold the component are marked, so every path runs it from now on.
    pub(crate) fn add_hook(&mut self, id: ComponentId, kind: HookKind, hook: Hook) {
        let table = Arc::make_mut(&mut self.hooks.table);
        if table.len() <= id.index() {
            table.resize_with(id.index() + 1, ComponentHooks::default);
        }
        table[id.index()].by_kind[kind as usize].push(hook);
        self.components.set_has_hook(id, kind);
        self.archetypes
            .component_flags_changed(&self.components, &self.bundles, id);
    }

    /// Runs the hooks of `kind` of each of `components` (sorted by id) for `entity`. Their
    /// commands wait in the world's hook queue.
    #[cold]
    #[inline(never)]
    pub(crate) fn run_hooks(&mut self, kind: HookKind, entity: Entity, components: &[ComponentId]) {
        // Most lists hold no component with a hook of this kind: nothing to set up then.
        if !(components.iter()).any(|&c| self.components.info(c).has_hooks(kind.bit())) {
            return;
        }
        let table = Arc::clone(&self.hooks.table);
        let mut commands = std::mem::take(&mut self.hooks.deferred);
        let mut world = HookWorld {
            world: self,
            commands: &mut commands,
        };
        for &component in components {
            let Some(hooks) = table.get(component.index()) else {
                continue;
            };
            for hook in &hooks.by_kind[kind as usize] {
                hook(
                    &mut world,
                    HookContext {
                        entity,
                        component,
                        kind,
                    },
                );
            }
        }
        // Hooks make no structural change, so none ran hooks in turn: the queue is the
        // world's own, with this call's commands after the earlier ones.
        self.hooks.deferred = commands;
    }

    /// Runs the insert hooks of `entity`, which moved along insert edge `edge`: `on_add`
    /// for the components it did not have, then `on_insert` for all the bundle's.
    #[cold]
    #[inline(never)]
    pub(crate) fn run_inserted_hooks(&mut self, entity: Entity, edge: usize) {
        let edge = &self.archetypes.insert_edges[edge];
        let (added, inserted) = (
            ComponentList::from(&edge.added[..]),
            ComponentList::from(&edge.inserted[..]),
        );
        self.run_hooks(HookKind::Add, entity, &added);
        self.run_hooks(HookKind::Insert, entity, &inserted);
    }

    /// Runs the removal hooks of `entity`, which is about to move along remove edge `edge`:
    /// `on_replace`, then `on_remove`, for the bundle's components that have either.
    #[cold]
    #[inline(never)]
    pub(crate) fn run_removal_hooks(&mut self, entity: Entity, edge: usize) {
        let hooked = ComponentList::from(&self.archetypes.remove_edges[edge].hooked[..]);
        self.run_hooks(HookKind::Replace, entity, &hooked);
        self.run_hooks(HookKind::Remove, entity, &hooked);
    }

    /// Runs the despawn hooks of `entity`, which is whole: `on_despawn`, `on_replace` and
    /// `on_remove` for each of its components.
    #[cold]
    #[inline(never)]
    pub(crate) fn run_despawn_hooks(&mut self, entity: Entity) {
        let Ok(location) = self.location(entity) else {
            return;
        };
        let mut components = ComponentList::from(self.archetype_at(location).component_ids());
        if self.sparse.any() {
            components.extend(self.sparse.held_by(entity));
            components.sort_unstable();
        }
        for kind in [HookKind::Despawn, HookKind::Replace, HookKind::Remove] {
            self.run_hooks(kind, entity, &components);
        }
    }

    /// Applies the commands the hooks recorded, in order, until none is left (an applied
    /// command may run hooks in turn, whose commands its own call applies). A failed one
    /// goes to the command apply under way, or to `tracing`.
    #[cold]
    #[inline(never)]
    pub(crate) fn apply_hook_commands(&mut self) {
        while !self.hooks.deferred.is_empty() {
            let mut deferred = std::mem::take(&mut self.hooks.deferred);
            let errors = deferred.apply(self);
            self.hooks.errors.extend(errors);
            if self.hooks.deferred.is_empty() {
                // Keep the buffer for the next operation.
                self.hooks.deferred = deferred;
            }
        }
        // A hook command may have reserved ids without a structural call after it.
        self.flush();
        if self.hooks.collecting == 0 && !self.hooks.errors.is_empty() {
            for error in self.hooks.errors.drain(..) {
                let entity = error.entity().map(|e| format!("{e:?}"));
                tracing::warn!(
                    command = error.command(),
                    entity = entity.as_deref().unwrap_or("-"),
                    reason = %error,
                    "a command recorded by a component hook was skipped"
                );
            }
        }
    }

    /// Queues `queue`'s commands after the hook commands waiting to be applied.
    pub(crate) fn push_hook_commands(&mut self, queue: &mut CommandQueue) {
        self.hooks.deferred.append(queue);
    }

    /// Adds failed commands recorded by hooks or observers to those waiting for the command
    /// apply under way (or for `tracing`, at the next [`apply_hook_commands`](Self::apply_hook_commands)).
    pub(crate) fn note_hook_errors(&mut self, errors: Vec<CommandError>) {
        self.hooks.errors.extend(errors);
    }

    /// Starts a command apply: failed hook commands wait for it (see `Hooks::collecting`).
    pub(crate) fn begin_collecting_hook_errors(&mut self) {
        self.hooks.collecting += 1;
    }

    /// Ends a command apply. (A command that panics skips this: failed hook commands of
    /// later direct calls then wait for the next apply, which returns them.)
    pub(crate) fn end_collecting_hook_errors(&mut self) {
        self.hooks.collecting -= 1;
    }

    /// Moves the failed hook commands waiting for a command apply into `errors`.
    #[inline]
    pub(crate) fn take_hook_errors(&mut self, errors: &mut Vec<CommandError>) {
        if !self.hooks.errors.is_empty() {
            errors.append(&mut self.hooks.errors);
        }
    }
}

/// Panics for `what` (e.g. "a query term") asking to write immutable `component`.
#[cold]
#[track_caller]
pub(crate) fn write_refused(component: &str, what: &str) -> ! {
    panic!(
        "{what} asks to write `{component}`, which is immutable (registered with \
         `ComponentRegistration::immutable`): its values are replaced by insert, never changed in \
         place; read it with `&{component}`, and insert a new value to change it"
    )
}
