//! Spawning many entities of one bundle type with one lookup and one reservation.

use crate::bundle::Bundle;
use crate::entity::Entity;

use super::World;

/// The lazy iterator returned by [`World::spawn_batch`]: each `next` spawns one entity.
/// Dropping it spawns whatever the source iterator still holds (unless it is dropped while
/// unwinding from a panic).
///
/// A panic inside the source iterator happens before the entity it was producing is
/// allocated, so the world stays consistent and every entity spawned so far stays alive.
pub struct SpawnBatch<'w, I>
where
    I: Iterator,
    I::Item: Bundle,
{
    world: &'w mut World,
    source: I,
    edge: usize,
}

impl<'w, I> SpawnBatch<'w, I>
where
    I: Iterator,
    I::Item: Bundle,
{
    pub(super) fn new(world: &'w mut World, source: I) -> Self {
        world.flush();
        let edge = world.spawn_edge::<I::Item>();
        let target = world.archetypes.insert_edges[edge].target;
        let (lower, _) = source.size_hint();
        world.archetypes.archetypes[target.index()].table.reserve(lower);
        world.entities.reserve(lower);
        Self { world, source, edge }
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
        Some(self.world.spawn_along(self.edge, bundle))
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
        for bundle in self.source.by_ref() {
            acc = f(acc, self.world.spawn_along(self.edge, bundle));
        }
        acc
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
        for bundle in self.source.by_ref() {
            self.world.spawn_along(self.edge, bundle);
        }
    }
}
