//! [`World::shrink`]: giving back the memory of empty archetypes.
//!
//! Archetypes are never removed — their ids index every query state's match list and every
//! cached edge — so what an empty archetype can give back is its table's memory: the block
//! holding its columns and its row list. What stays is the bookkeeping, listed with its
//! cost in `docs/architecture.md` (archetype explosion).

use crate::world::World;

impl World {
    /// Frees the table memory of every empty archetype (its columns' block and its row
    /// list) and returns how many bytes that gave back. Archetypes keep their ids, edges and
    /// query matches; an entity that moves into one again allocates afresh.
    ///
    /// Nothing shrinks on its own: a table that empties keeps its memory for the entities
    /// that come back, which is what a game that moves entities through states wants. Call
    /// `shrink` after a burst of archetypes that will not fill again (a level unloaded, a
    /// spike of one-off tag combinations). It visits every archetype once.
    ///
    /// ```
    /// use tabula::prelude::*;
    ///
    /// struct Debris([f32; 4]);
    ///
    /// let mut world = World::new();
    /// let ids: Vec<Entity> = world.spawn_batch((0..1000).map(|_| (Debris([0.0; 4]),))).collect();
    /// for id in ids {
    ///     world.despawn(id)?;
    /// }
    /// assert!(world.shrink() > 1000 * size_of::<Debris>(), "the empty table's memory");
    /// assert_eq!(world.shrink(), 0, "nothing left to free");
    /// world.spawn((Debris([1.0; 4]),)); // the archetype fills again
    /// assert_eq!(world.query::<&Debris>().iter(&world).count(), 1);
    /// # Ok::<(), EntityError>(())
    /// ```
    pub fn shrink(&mut self) -> usize {
        let archetypes = self.archetypes_mut().archetypes.all_mut();
        (archetypes.iter_mut())
            .map(|archetype| archetype.table.shrink_empty())
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use crate::{Entity, World};

    /// Counts its drops, so a test can see each value dropped exactly once.
    struct Counted(Arc<AtomicUsize>, String);

    impl Drop for Counted {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[repr(align(64))]
    struct Wide(u64);
    struct Tag;

    #[test]
    fn shrink_frees_only_empty_tables_and_they_fill_again() {
        let drops = Arc::new(AtomicUsize::new(0));
        let mut world = World::new();
        let counted = |n: u32| Counted(Arc::clone(&drops), n.to_string());
        let full: Vec<Entity> = (0..5).map(|n| world.spawn((counted(n), 1u32))).collect();
        let emptied: Vec<Entity> = (0..50)
            .map(|n| world.spawn((counted(n), Wide(n as u64))))
            .collect();
        let tags: Vec<Entity> = (0..3).map(|_| world.spawn((Tag,))).collect();
        let mut q = world.query::<(&Counted, &Wide)>();
        let mut wide = world.query::<&mut Wide>();
        // Warm the run plan, so that a plan kept past the shrink would show.
        wide.for_each(&mut world, |mut w| w.0 += 1);
        wide.for_each(&mut world, |mut w| w.0 += 1);
        let archetypes = world.archetypes().len();
        for e in emptied.iter().chain(&tags) {
            world.despawn(*e).unwrap();
        }
        assert_eq!(drops.load(Ordering::SeqCst), 50);
        let freed = world.shrink();
        // The `Wide` table's block: at least its values and ticks; the tag table's row list.
        assert!(
            freed >= 50 * (size_of::<Wide>() + size_of::<Counted>()),
            "{freed}"
        );
        assert_eq!(world.shrink(), 0, "freed once");
        assert_eq!(
            world.archetypes().len(),
            archetypes,
            "archetypes stay, ids stable"
        );
        assert_eq!(drops.load(Ordering::SeqCst), 50, "shrinking drops no value");

        // The full table is untouched.
        for (n, &e) in full.iter().enumerate() {
            assert_eq!(world.get::<Counted>(e).unwrap().1, n.to_string());
        }
        // Queries built before see nothing in the freed archetype, then its new rows.
        assert_eq!(q.iter(&world).count(), 0);
        let mut n = 0;
        wide.for_each(&mut world, |_| n += 1);
        assert_eq!(n, 0);
        let back: Vec<Entity> = (0..7)
            .map(|n| world.spawn((counted(n), Wide(n as u64))))
            .collect();
        let tag = world.spawn((Tag,));
        wide.for_each(&mut world, |mut w| w.0 += 10);
        wide.for_each(&mut world, |mut w| w.0 += 10);
        let mut values: Vec<u64> = q.iter(&world).map(|(_, w)| w.0).collect();
        values.sort_unstable();
        assert_eq!(values, [20, 21, 22, 23, 24, 25, 26]);
        for &e in &back {
            let w = world.get::<Wide>(e).unwrap() as *const Wide;
            assert_eq!(w as usize % 64, 0, "over-aligned values stay aligned");
        }
        assert!(world.contains(tag));
        drop(world);
        assert_eq!(
            drops.load(Ordering::SeqCst),
            50 + 5 + 7,
            "every value dropped once"
        );
    }

    #[test]
    fn shrink_on_a_world_with_nothing_empty_frees_nothing() {
        let mut world = World::new();
        assert_eq!(world.shrink(), 0, "the empty archetype has no allocation");
        let e = world.spawn((1u8,));
        assert_eq!(world.shrink(), 0);
        world.remove::<(u8,)>(e).unwrap();
        // `e` lives in the empty archetype now; the `u8` table is empty.
        assert!(world.shrink() > 0);
        world.insert(e, (2u8,)).unwrap();
        assert_eq!(world.get::<u8>(e), Ok(&2));
    }
}
