//! Spawning many entities of one bundle type with one lookup and one reservation.

use crate::bundle::Bundle;
use crate::bundle::sealed::BundleStorage as _;
use crate::entity::Entity;
use crate::location::EntityLocation;

use super::{World, tick_now};

/// The lazy iterator returned by [`World::spawn_batch`]: each `next` spawns one entity.
/// Dropping it spawns whatever the source iterator still holds (unless it is dropped while
/// unwinding from a panic).
///
/// A panic inside the source iterator happens before the entity it was producing is
/// allocated, so the world stays consistent and every entity spawned so far stays alive.
///
/// Each entity's `on_add` and `on_insert` [hooks](crate::HookKind) run as it is spawned, and
/// their commands are applied before the next one: each item is a [`World::spawn`].
pub struct SpawnBatch<'w, I>
where
    I: Iterator,
    I::Item: Bundle,
{
    world: &'w mut World,
    source: I,
    /// The spawn edge; unused (`usize::MAX`) for a bundle with a sparse field.
    edge: usize,
    /// The bundle has `on_add` or `on_insert` hooks, or a sparse field: each item is then
    /// spawned on its own.
    hooked: bool,
}

impl<'w, I> SpawnBatch<'w, I>
where
    I: Iterator,
    I::Item: Bundle,
{
    #[track_caller]
    pub(super) fn new(world: &'w mut World, source: I) -> Self {
        world.flush();
        let Some(edge) = world.spawn_edge::<I::Item>() else {
            // A sparse field never enters the archetype: each item is a `World::spawn`.
            return Self {
                world,
                source,
                edge: usize::MAX,
                hooked: true,
            };
        };
        let target = world.archetypes.insert_edges[edge].target;
        let (lower, _) = source.size_hint();
        if lower >= u32::MAX as usize {
            // An endless iterator, usually; refused before anything is reserved for it.
            panic!(
                "spawn_batch: the source iterator promises at least {lower} items (its size hint), more than \
                 the u32::MAX - 1 entities a world can hold; give spawn_batch a finite iterator (`.take(n)`)"
            )
        }
        let table = &mut world.archetypes.archetypes.all_mut()[target.index()].table;
        table.reserve(lower);
        // The rows are filled one by one across all columns: map each column's pages first.
        table.prefault(lower);
        world.entities.reserve(lower);
        let hooked = world.archetypes.insert_edges[edge].hooked;
        Self {
            world,
            source,
            edge,
            hooked,
        }
    }

    /// Spawns one entity along the batch's edge, with its hooks.
    #[inline(always)]
    fn spawn_one(&mut self, bundle: I::Item) -> Entity {
        if self.hooked {
            // A copy of its own for the out-of-line path, as in `World::spawn`.
            return self.spawn_one_hooked(std::hint::black_box(bundle));
        }
        self.world.spawn_along(self.edge, bundle).0
    }

    /// [`spawn_one`](Self::spawn_one) for a bundle with hooks or a sparse field.
    #[inline(never)]
    fn spawn_one_hooked(&mut self, bundle: I::Item) -> Entity {
        if self.edge == usize::MAX {
            return self.world.spawn(bundle);
        }
        let (entity, _) = self.world.spawn_along(self.edge, bundle);
        self.world.run_inserted_hooks(entity, self.edge);
        self.world.apply_hook_commands();
        entity
    }
}

impl<I> Iterator for SpawnBatch<'_, I>
where
    I: Iterator,
    I::Item: Bundle,
{
    type Item = Entity;

    #[inline]
    fn next(&mut self) -> Option<Entity> {
        let bundle = self.source.next()?;
        Some(self.spawn_one(bundle))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.source.size_hint()
    }

    /// Internal iteration (`for_each`, `count`, `fold`, ...) runs one loop here instead of a
    /// call to `next` per entity, so the spawn inlines into it.
    #[inline]
    fn fold<B, F>(mut self, init: B, mut f: F) -> B
    where
        F: FnMut(B, Entity) -> B,
    {
        let mut acc = init;
        if self.hooked {
            // Hooks between the rows: the one-entity path.
            while let Some(bundle) = self.source.next() {
                acc = f(acc, self.spawn_one(bundle));
            }
            return acc;
        }
        loop {
            let world = &mut *self.world;
            let edge = &world.archetypes.insert_edges[self.edge];
            let target = edge.target;
            let table = &mut world.archetypes.archetypes.all_mut()[target.index()].table;
            let room = table.room();
            if room == 0 {
                // The source outran its size hint: one spawn grows the table, then the
                // rows it made room for take the loop below.
                let Some(bundle) = self.source.next() else {
                    return acc;
                };
                acc = f(acc, world.spawn_along(self.edge, bundle).0);
                continue;
            }
            let tick = tick_now(&mut world.change_tick);
            // SAFETY: the edge's bundle columns are the target's columns for the bundle's
            // fields; the table does not grow in the loop below, which fills at most `room`
            // rows.
            let columns = unsafe { I::Item::columns(table, &edge.bundle_columns) };
            for _ in 0..room {
                // The source runs before the row is pushed: if it panics, every row so far is
                // complete.
                let Some(bundle) = self.source.next() else {
                    return acc;
                };
                let row = table.len();
                let location = EntityLocation {
                    archetype: target,
                    row: row as u32,
                };
                let entity = world.entities.alloc(location);
                // SAFETY: there is room, so `push_uninit` returns `row` without growing, and
                // `write_at` fills every column of it at once, only moving values: a spawn
                // edge starts at the empty archetype, so the bundle's columns are all of the
                // target's columns.
                unsafe {
                    table.push_uninit(entity);
                    bundle.write_at(columns, row, tick);
                }
                acc = f(acc, entity);
            }
        }
    }
}

impl<I> ExactSizeIterator for SpawnBatch<'_, I>
where
    I: ExactSizeIterator,
    I::Item: Bundle,
{
}

impl<I> Drop for SpawnBatch<'_, I>
where
    I: Iterator,
    I::Item: Bundle,
{
    fn drop(&mut self) {
        // While unwinding from a panic in the source, stop: draining it could panic again
        // (aborting the process) and would spawn items the caller never got to see.
        if std::thread::panicking() {
            return;
        }
        while let Some(bundle) = self.source.next() {
            self.spawn_one(bundle);
        }
    }
}
