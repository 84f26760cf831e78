//! Removal logs: which entities lost a component, for code that reacts to removals (the
//! `RemovedComponents<T>` system parameter of `tabula::schedule` reads them).
//!
//! Nothing is logged until someone asks. [`World::track_removals::<T>()`] marks `T` in the
//! component registry, which sets a flag on every archetype holding `T` and on every cached
//! remove edge whose bundle holds `T` (archetypes and edges made later read the registry).
//! From then on an entity is written to `T`'s log when it loses `T`:
//!
//! * by [`World::remove`] and its relatives (`remove_one`, `remove_batch`, [`EntityMut`]'s
//!   `remove`, [`Commands`]' `remove`), and by component hooks' commands that remove it
//!   (a [relationship](crate::relationship)'s, when they unlink its sources);
//! * by [`World::despawn`] (and `despawn_recursive`, and the despawn command);
//! * by [`World::clear`].
//!
//! Replacing a value (inserting a component the entity already has) is not a removal.
//!
//! The one-entity remove path already tests its edge for a missing component; the logging
//! flag shares that test, so a remove costs nothing more while its components are untracked.
//! A despawn tests its archetype's flag.
//!
//! Each log is an [`Events<Entity>`]: double buffered and aged by [`World::update_events`],
//! which a schedule calls at the end of each run, and read with an
//! [`EventCursor<Entity>`](crate::EventCursor), one per reader. So an entity that lost `T`
//! during run `N` is readable during runs `N` and `N + 1`, exactly as an event sent then
//! would be, and each reader sees it once. A logged entity may be dead by the time it is
//! read, or may have `T` again. A world that no schedule runs must call `update_events`
//! itself, or the logs keep growing.
//!
//! ```
//! use tabula::{EventCursor, World};
//!
//! struct Shield(u32);
//!
//! let mut world = World::new();
//! world.track_removals::<Shield>();
//! let a = world.spawn((Shield(3),));
//! let b = world.spawn((Shield(5),));
//! world.remove_one::<Shield>(a)?;
//! world.despawn(b)?;
//! assert_eq!(world.removed::<Shield>().collect::<Vec<_>>(), [a, b]);
//!
//! // A reader with its own cursor sees each removal once.
//! let mut cursor = EventCursor::default();
//! let log = world.removal_log::<Shield>().unwrap();
//! assert_eq!(cursor.read(log).count(), 2);
//! assert_eq!(cursor.read(log).count(), 0);
//!
//! world.update_events();
//! world.update_events(); // two updates later the log has moved on
//! assert_eq!(world.removed::<Shield>().count(), 0);
//! # Ok::<(), tabula::EntityError>(())
//! ```
//!
//! [`EntityMut`]: crate::EntityMut
//! [`Commands`]: crate::Commands

use crate::archetype::Archetype;
use crate::component::{Component, ComponentId, Components};
use crate::entity::Entity;
use crate::event::Events;
use crate::world::World;

/// The removal log of every tracked component, indexed by [`ComponentId`].
#[derive(Default)]
pub(crate) struct RemovalLogs(Vec<Option<Events<Entity>>>);

impl RemovalLogs {
    /// The log of `component`, if it is tracked.
    pub(crate) fn get(&self, component: ComponentId) -> Option<&Events<Entity>> {
        self.0.get(component.index())?.as_ref()
    }

    /// Starts `component`'s log, unless it has one.
    pub(crate) fn start(&mut self, component: ComponentId) {
        if self.0.len() <= component.index() {
            self.0.resize_with(component.index() + 1, || None);
        }
        self.0[component.index()].get_or_insert_with(Events::default);
    }

    /// The log of a tracked component.
    fn log_mut(&mut self, component: ComponentId) -> &mut Events<Entity> {
        self.0
            .get_mut(component.index())
            .and_then(Option::as_mut)
            .expect("a component flagged as logged has a removal log")
    }

    /// Records that each of `entities` lost each of `components` (all tracked).
    #[cold]
    #[inline(never)]
    pub(crate) fn record(&mut self, components: &[ComponentId], entities: &[Entity]) {
        for &component in components {
            self.log_mut(component).send_batch(entities.iter().copied());
        }
    }

    /// Records that each of `entities`, all stored in `archetype` (which logs removals), lost
    /// every tracked component there: they are being despawned or cleared.
    #[cold]
    #[inline(never)]
    pub(crate) fn record_archetype(
        &mut self,
        registry: &Components,
        archetype: &Archetype,
        entities: &[Entity],
    ) {
        for &component in archetype.component_ids() {
            if registry.info(component).logs_removals() {
                self.log_mut(component).send_batch(entities.iter().copied());
            }
        }
    }

    /// Ages every log (see [`Events::update`]).
    pub(crate) fn update(&mut self) {
        for log in self.0.iter_mut().flatten() {
            log.update();
        }
    }
}

impl World {
    /// Starts logging which entities lose a `T` (see the [`removal`](crate::removal) module):
    /// read the log with [`removed`](Self::removed) or [`removal_log`](Self::removal_log),
    /// or in a system with `RemovedComponents<T>`. Calling it again is harmless.
    ///
    /// Removals before the first call are not logged.
    ///
    /// ```
    /// let mut world = tabula::World::new();
    /// let e = world.spawn((1u8,));
    /// world.remove_one::<u8>(e)?; // not logged yet
    /// world.track_removals::<u8>();
    /// world.insert_one(e, 2u8)?;
    /// world.remove_one::<u8>(e)?;
    /// assert_eq!(world.removed::<u8>().collect::<Vec<_>>(), [e]);
    /// # Ok::<(), tabula::EntityError>(())
    /// ```
    pub fn track_removals<T: Component>(&mut self) -> ComponentId {
        let id = self.component_id_or_register::<T>();
        self.log_removals_of(id);
        id
    }

    /// The entities that lost a `T` since the second-to-last [`update_events`](Self::update_events),
    /// oldest first; empty unless [`track_removals`](Self::track_removals) was called for `T`.
    /// An entity appears once per removal, and may be dead or have a `T` again.
    pub fn removed<T: Component>(&self) -> impl DoubleEndedIterator<Item = Entity> + '_ {
        self.removal_log::<T>()
            .into_iter()
            .flat_map(|log| log.iter().copied())
    }

    /// `T`'s removal log, for readers that keep their own
    /// [`EventCursor<Entity>`](crate::EventCursor); `None` unless
    /// [`track_removals`](Self::track_removals) was called for `T`.
    pub fn removal_log<T: Component>(&self) -> Option<&Events<Entity>> {
        self.removal_logs().get(self.components().id::<T>()?)
    }
}
