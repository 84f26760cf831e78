//! Invariants of the world's storage, checked from inside the crate (Miri runs all of these).

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::*;

/// A component that counts its drops, to prove each value is dropped exactly once.
#[derive(Debug)]
struct Counted(Arc<AtomicUsize>, u32);

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// A component whose `Drop` panics when armed.
struct Bomb(bool);

impl Drop for Bomb {
    fn drop(&mut self) {
        if self.0 {
            panic!("bomb");
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
struct Pos(f32, f32);
#[derive(Debug, Clone, Copy, PartialEq)]
struct Vel(f32, f32);
#[derive(Debug, Clone, Copy, PartialEq, Default)]
struct Marker;

#[derive(Debug, Clone, Copy, PartialEq)]
#[repr(align(64))]
struct Aligned(u8);

fn assert_locations_exact(world: &World) {
    for archetype in world.archetypes() {
        for (row, &entity) in archetype.entities().iter().enumerate() {
            let location = world.entities.get(entity).expect("stored entity is alive");
            assert_eq!(location.archetype, archetype.id());
            assert_eq!(location.row as usize, row, "{entity:?} row");
        }
    }
    let stored: usize = world.archetypes().map(Archetype::len).sum();
    assert_eq!(stored, world.len() as usize);
}

#[test]
fn swap_remove_fixes_the_moved_entity() {
    let mut world = World::new();
    let ids: Vec<_> = (0..5)
        .map(|i| world.spawn((Pos(i as f32, 0.0), i as u32)))
        .collect();
    world.despawn(ids[1]).unwrap();
    assert_locations_exact(&world);
    // The last entity moved into row 1 and still reads its own values.
    assert_eq!(world.get::<u32>(ids[4]), Ok(&4));
    assert_eq!(world.entities.get(ids[4]).unwrap().row, 1);
    // Moving out of the middle via insert/remove fixes locations the same way.
    world.insert(ids[0], (Vel(1.0, 1.0),)).unwrap();
    world.remove::<(u32,)>(ids[2]).unwrap();
    assert_locations_exact(&world);
    for (i, &e) in ids.iter().enumerate().filter(|&(i, _)| i != 1) {
        assert_eq!(world.get::<Pos>(e), Ok(&Pos(i as f32, 0.0)));
    }
}

#[test]
fn edges_are_cached_after_the_first_move() {
    let mut world = World::new();
    let a = world.spawn((Pos(0.0, 0.0),));
    let b = world.spawn((Pos(1.0, 0.0),));
    world.insert(a, (Vel(0.0, 0.0),)).unwrap();
    world.remove::<(Vel,)>(a).unwrap();
    let (archetypes, inserts, removes) = (
        world.archetypes.len(),
        world.archetypes.insert_edges.len(),
        world.archetypes.remove_edges.len(),
    );
    for _ in 0..3 {
        world.insert(b, (Vel(0.0, 0.0),)).unwrap();
        world.remove::<(Vel,)>(b).unwrap();
    }
    assert_eq!(world.archetypes.len(), archetypes, "no new archetype");
    assert_eq!(world.archetypes.insert_edges.len(), inserts, "insert edge reused");
    assert_eq!(world.archetypes.remove_edges.len(), removes, "remove edge reused");
}

#[test]
fn alternating_bundle_types_on_one_archetype_use_their_own_edges() {
    // Each archetype caches the last bundle type moved along its edges: alternating two
    // types must miss the cache each time and still find each type's own edge.
    let mut world = World::new();
    let ids: Vec<_> = (0..4).map(|i| world.spawn((Pos(i as f32, 0.0),))).collect();
    for (i, &e) in ids.iter().enumerate() {
        if i % 2 == 0 {
            world.insert(e, (Vel(i as f32, 1.0),)).unwrap();
        } else {
            world.insert(e, (7u32,)).unwrap();
        }
    }
    for (i, &e) in ids.iter().enumerate() {
        assert_eq!(world.get::<Pos>(e), Ok(&Pos(i as f32, 0.0)));
        assert_eq!(world.has::<Vel>(e), i % 2 == 0);
        assert_eq!(world.has::<u32>(e), i % 2 == 1);
    }
    for (i, &e) in ids.iter().enumerate() {
        if i % 2 == 0 {
            assert_eq!(world.remove::<(Vel,)>(e), Ok((Vel(i as f32, 1.0),)));
            assert!(world.remove::<(u32,)>(e).is_err());
        } else {
            assert!(world.remove::<(Vel,)>(e).is_err());
            assert_eq!(world.remove::<(u32,)>(e), Ok((7,)));
        }
    }
    assert_locations_exact(&world);
    for (i, &e) in ids.iter().enumerate() {
        assert_eq!(world.get::<Pos>(e), Ok(&Pos(i as f32, 0.0)));
        assert!(!world.has::<Vel>(e) && !world.has::<u32>(e));
    }
}

#[test]
fn one_bundle_type_moved_from_archetypes_in_turn_takes_each_sources_edge() {
    // The world remembers the last one-entity move of each bundle type (source and edge);
    // entities of different archetypes in turn must each miss it and take their own edge.
    let mut world = World::new();
    let ids: Vec<_> = (0..6)
        .map(|i| match i % 3 {
            0 => world.spawn((Pos(i as f32, 0.0),)),
            1 => world.spawn((Pos(i as f32, 0.0), 1u8)),
            _ => world.spawn((2u16,)),
        })
        .collect();
    for round in 0..3 {
        for (i, &e) in ids.iter().enumerate() {
            world.insert(e, (Vel(i as f32, round as f32),)).unwrap();
            assert_locations_exact(&world);
        }
        for (i, &e) in ids.iter().enumerate() {
            assert_eq!(world.get::<Vel>(e), Ok(&Vel(i as f32, round as f32)));
            assert_eq!(world.has::<Pos>(e), i % 3 != 2);
            assert_eq!(world.has::<u8>(e), i % 3 == 1);
            assert_eq!(world.has::<u16>(e), i % 3 == 2);
        }
        // Removing in reverse order, so that the first removal from each archetype finds the
        // remembered move's source differing from its own.
        for (i, &e) in ids.iter().enumerate().rev() {
            assert_eq!(world.remove::<(Vel,)>(e), Ok((Vel(i as f32, round as f32),)));
            assert_locations_exact(&world);
        }
    }
    for (i, &e) in ids.iter().enumerate() {
        assert!(!world.has::<Vel>(e));
        if i % 3 != 2 {
            assert_eq!(world.get::<Pos>(e), Ok(&Pos(i as f32, 0.0)));
        }
    }
}

#[test]
fn one_bundle_type_moved_in_two_worlds_in_turn_stays_in_each_world() {
    // Two worlds whose archetype 1 stores different components, with entity ids of the same
    // bits: each world's remembered move and edges are its own, so moving one bundle type in
    // both in turn keeps each world's rows and locations. (One tag for both, so that the
    // ids are equal.)
    let (mut one, mut two) = (World::with_tag(9), World::with_tag(9));
    let firsts: Vec<_> = (0..6).map(|i| one.spawn((Pos(i as f32, 0.0),))).collect();
    let seconds: Vec<_> = (0..6).map(|i| two.spawn((i as u64, Marker))).collect();
    assert_eq!(firsts, seconds, "the same ids in both worlds");
    let label = |world: u32, round: u32, i: usize| format!("{world}:{round}:{i}");
    for round in 0..3 {
        for (i, &e) in firsts.iter().enumerate() {
            one.insert(e, (label(1, round, i), Aligned(1))).unwrap();
            two.insert(e, (label(2, round, i), Aligned(2))).unwrap();
        }
        assert_locations_exact(&one);
        assert_locations_exact(&two);
        for (i, &e) in firsts.iter().enumerate().rev() {
            assert_eq!(
                one.remove::<(String, Aligned)>(e),
                Ok((label(1, round, i), Aligned(1)))
            );
            assert_eq!(
                two.remove::<(String, Aligned)>(e),
                Ok((label(2, round, i), Aligned(2)))
            );
            assert_eq!(one.get::<Pos>(e), Ok(&Pos(i as f32, 0.0)));
            assert_eq!(two.get::<u64>(e), Ok(&(i as u64)));
        }
        assert_locations_exact(&one);
        assert_locations_exact(&two);
    }
}

#[test]
fn moves_after_clear_and_after_new_archetypes_take_the_right_edges() {
    // `clear` keeps archetypes and edges, and so the remembered move; archetypes created
    // between two moves reallocate the archetype list. Neither may mislead a later move.
    let mut world = World::new();
    let gone = world.spawn((Pos(0.0, 0.0),));
    world.insert(gone, (Vel(0.0, 0.0),)).unwrap();
    world.clear();
    assert_eq!(world.get::<Pos>(gone), Err(EntityError::NoSuchEntity(gone)));
    let (e, f) = (world.spawn((Pos(1.0, 0.0),)), world.spawn((Pos(2.0, 0.0),)));
    world.insert(e, (Vel(1.0, 1.0),)).unwrap();
    struct Tag<const N: usize>;
    macro_rules! spawn_tagged {
        ($($n:literal)*) => { $( world.spawn((Pos(0.0, 0.0), Tag::<$n>)); )* };
    }
    spawn_tagged!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19);
    assert!(world.archetypes().count() > 20);
    world.insert(f, (Vel(2.0, 2.0),)).unwrap();
    assert_eq!(world.remove::<(Vel,)>(e), Ok((Vel(1.0, 1.0),)));
    assert_eq!(world.remove::<(Vel,)>(f), Ok((Vel(2.0, 2.0),)));
    assert_eq!(world.get::<Pos>(e), Ok(&Pos(1.0, 0.0)));
    assert_eq!(world.get::<Pos>(f), Ok(&Pos(2.0, 0.0)));
    assert_locations_exact(&world);
}

#[test]
fn every_value_is_dropped_exactly_once() {
    let drops = Arc::new(AtomicUsize::new(0));
    let counted = |n| Counted(drops.clone(), n);
    let mut world = World::new();
    let a = world.spawn((counted(1), Pos(0.0, 0.0)));
    let b = world.spawn((counted(2),));
    let c = world.spawn((counted(3), Marker));
    world.despawn(a).unwrap();
    assert_eq!(drops.load(Ordering::SeqCst), 1);
    assert!(world.despawn(a).is_err(), "double despawn is an error");
    assert_eq!(drops.load(Ordering::SeqCst), 1, "and drops nothing");
    // Replacing drops the old value, once.
    world.insert(b, (counted(20), Vel(0.0, 0.0))).unwrap();
    assert_eq!(drops.load(Ordering::SeqCst), 2);
    // Removing hands the value back instead of dropping it.
    let removed = world.remove_one::<Counted>(b).unwrap();
    assert_eq!((removed.1, drops.load(Ordering::SeqCst)), (20, 2));
    drop(removed);
    assert_eq!(drops.load(Ordering::SeqCst), 3);
    world.clear();
    assert_eq!(drops.load(Ordering::SeqCst), 4, "clear drops the rest");
    assert!(!world.contains(c));
    let d = world.spawn((counted(4),));
    drop(world);
    assert_eq!(drops.load(Ordering::SeqCst), 5, "dropping the world drops {d:?}");
}

#[test]
fn over_aligned_components_are_aligned() {
    let mut world = World::new();
    let ids: Vec<_> = (0..40u8).map(|i| world.spawn((i, Aligned(i)))).collect();
    for (i, &e) in ids.iter().enumerate() {
        let value = world.get::<Aligned>(e).unwrap();
        assert_eq!(value.0 as usize, i);
        assert_eq!(std::ptr::from_ref(value).addr() % 64, 0);
    }
    // Moving between tables keeps the alignment.
    world.insert(ids[3], (Pos(0.0, 0.0),)).unwrap();
    assert_eq!(
        std::ptr::from_ref(world.get::<Aligned>(ids[3]).unwrap()).addr() % 64,
        0
    );
}

#[test]
fn page_aligned_components_stay_aligned_through_growth_moves_and_despawns() {
    /// Aligned to a whole page: its array must start on a page boundary of the block.
    #[derive(Debug, Clone, Copy, PartialEq)]
    #[repr(align(4096))]
    struct Page(u32);
    fn assert_page_aligned(world: &World, e: Entity, i: usize) {
        let page = world.get::<Page>(e).unwrap();
        assert_eq!(page.0 as usize, i);
        assert_eq!(std::ptr::from_ref(page).addr() % 4096, 0, "{e:?}");
    }
    let mut world = World::new();
    let n = if cfg!(miri) { 40 } else { 400 };
    // One at a time, so the table grows through every doubling.
    let ids: Vec<Entity> = (0..n)
        .map(|i| world.spawn((Page(i as u32), Aligned(i as u8), i as u8)))
        .collect();
    for (i, &e) in ids.iter().enumerate() {
        assert_page_aligned(&world, e, i);
    }
    for &e in ids.iter().step_by(3) {
        world.insert_one(e, Pos(1.0, 2.0)).unwrap();
    }
    for &e in ids.iter().step_by(5) {
        world.remove_one::<Aligned>(e).unwrap();
    }
    for &e in ids.iter().step_by(7) {
        world.despawn(e).unwrap();
    }
    for (i, &e) in ids.iter().enumerate() {
        if i % 7 == 0 {
            assert!(!world.contains(e));
            continue;
        }
        assert_page_aligned(&world, e, i);
        assert_eq!(world.get::<u8>(e), Ok(&(i as u8)));
        assert_eq!(world.has::<Aligned>(e), i % 5 != 0);
        assert_eq!(world.has::<Pos>(e), i % 3 == 0);
    }
    assert_locations_exact(&world);
}

#[test]
fn growing_tables_keep_every_row_through_realloc_and_page_placement() {
    /// Large values, so that their arrays pass 1 MiB (and start whole pages into the block)
    /// within a few thousand rows.
    #[derive(Debug, Clone, Copy, PartialEq)]
    struct Big<const N: usize>([u64; N]);
    // One entity at a time: the block doubles through realloc, and once the `Big` arrays
    // pass 1 MiB they start a whole number of pages into the block, which shifts them
    // further at that growth step.
    let mut world = World::new();
    let n: u32 = if cfg!(miri) { 2_100 } else { 20_000 };
    let ids: Vec<Entity> = (0..n)
        .map(|i| {
            let v = u64::from(i);
            world.spawn((v * 3, i as u8, Aligned(i as u8), Big([v; 32]), Big([v; 64])))
        })
        .collect();
    let a = std::ptr::from_ref(world.get::<Big<32>>(ids[0]).unwrap()).addr();
    let b = std::ptr::from_ref(world.get::<Big<64>>(ids[0]).unwrap()).addr();
    assert_eq!(
        a.abs_diff(b) % 4096,
        0,
        "large value arrays sit whole pages apart"
    );
    for (i, &e) in ids.iter().enumerate() {
        let v = i as u64;
        assert_eq!(world.get::<u64>(e), Ok(&(v * 3)));
        assert_eq!(world.get::<u8>(e), Ok(&(i as u8)));
        assert_eq!(world.get::<Big<32>>(e), Ok(&Big([v; 32])));
        assert_eq!(world.get::<Big<64>>(e), Ok(&Big([v; 64])));
        let aligned = world.get::<Aligned>(e).unwrap();
        assert_eq!((aligned.0, std::ptr::from_ref(aligned).addr() % 64), (i as u8, 0));
    }
    assert_locations_exact(&world);
}

#[test]
fn zero_sized_components_store_nothing_but_exist() {
    let mut world = World::new();
    let ids: Vec<_> = (0..100).map(|_| world.spawn((Marker, ()))).collect();
    assert!(ids.iter().all(|&e| world.has::<Marker>(e)));
    assert!(world.has::<()>(ids[0]));
    assert_eq!(world.remove_one::<Marker>(ids[7]), Ok(Marker));
    assert!(!world.has::<Marker>(ids[7]));
    world.insert_one(ids[7], Marker).unwrap();
    assert_eq!(world.get::<Marker>(ids[7]), Ok(&Marker));
    assert_locations_exact(&world);
}

#[test]
fn errors_name_entity_and_component() {
    let mut world = World::new();
    let e = world.spawn((Pos(0.0, 0.0),));
    let err = world.get::<Vel>(e).unwrap_err();
    assert_eq!(
        err,
        EntityError::MissingComponent {
            entity: e,
            component: std::any::type_name::<Vel>()
        }
    );
    assert!(err.to_string().contains("Vel") && err.to_string().contains(&format!("{e:?}")));
    world.despawn(e).unwrap();
    assert_eq!(world.get::<Pos>(e), Err(EntityError::NoSuchEntity(e)));
    assert_eq!(
        world.insert_one(e, Vel(0.0, 0.0)),
        Err(EntityError::NoSuchEntity(e))
    );
    assert_eq!(world.remove_one::<Pos>(e), Err(EntityError::NoSuchEntity(e)));
    // Removing a bundle the entity only half has changes nothing, and creates no archetype.
    let f = world.spawn((Pos(1.0, 1.0), 7u8));
    let archetypes = world.archetypes().len();
    assert!(matches!(
        world.remove::<(Pos, Vel)>(f),
        Err(EntityError::MissingComponent { component, .. }) if component.ends_with("Vel")
    ));
    assert!(world.remove_batch::<(Pos, Vel)>(&[f]).is_err());
    assert_eq!(world.get::<Pos>(f), Ok(&Pos(1.0, 1.0)));
    assert_eq!(world.archetypes().len(), archetypes);
}

#[test]
fn reserve_then_flush_then_spawn_at() {
    let mut world = World::new();
    let kept = world.spawn((1u32,));
    let reserved: Vec<_> = world.reserve_entities(3).collect();
    let one = world.reserve_entity();
    assert!(!world.contains(one));
    world.spawn_at(one, (Pos(2.0, 2.0),)).unwrap();
    assert!(
        reserved
            .iter()
            .all(|&e| world.contains(e) && world.entity(e).unwrap().component_names().len() == 0)
    );
    assert_eq!(world.get::<Pos>(one), Ok(&Pos(2.0, 2.0)));
    assert_eq!(
        world.spawn_at(kept, (3u8,)),
        Err(EntityError::AlreadySpawned(kept))
    );
    assert_eq!(world.len(), 5);
    assert_locations_exact(&world);
}

#[test]
fn panicking_drop_leaves_the_world_consistent() {
    let mut world = World::new();
    let a = world.spawn((Bomb(false), 1u32));
    let b = world.spawn((Bomb(true), 2u32));
    let c = world.spawn((Bomb(false), 3u32));
    let result = catch_unwind(AssertUnwindSafe(|| world.despawn(b)));
    assert!(result.is_err(), "the panic reaches the caller");
    assert!(!world.contains(b));
    assert_eq!((world.get::<u32>(a), world.get::<u32>(c)), (Ok(&1), Ok(&3)));
    assert_locations_exact(&world);
    // A panic while replacing a value: the new value is in place, the world consistent.
    world.insert_one(a, Bomb(true)).unwrap();
    let result = catch_unwind(AssertUnwindSafe(|| world.insert(a, (Bomb(false), 10u32))));
    assert!(result.is_err());
    assert_eq!(world.get::<u32>(a), Ok(&10));
    assert!(!world.get::<Bomb>(a).unwrap().0);
    assert_locations_exact(&world);
    let _ = catch_unwind(AssertUnwindSafe(|| {
        world.insert_one(c, Bomb(true)).unwrap();
        world.clear();
    }));
    assert_eq!(world.len(), 0);
    assert!(world.archetypes().all(Archetype::is_empty));
}

#[test]
fn a_panicking_drop_leaks_no_other_value() {
    let drops = Arc::new(AtomicUsize::new(0));
    let counted = |n| Counted(drops.clone(), n);
    let dropped = || drops.load(Ordering::SeqCst);

    // Despawn: the bomb sits in the row's first column, the counted value after it.
    let mut world = World::new();
    let e = world.spawn((Bomb(true), counted(1)));
    assert!(catch_unwind(AssertUnwindSafe(|| world.despawn(e))).is_err());
    assert_eq!(dropped(), 1, "the row's other value is dropped");

    // Clear: every other row of the bomb's table, and every other table.
    world.spawn((Bomb(false), counted(2)));
    world.spawn((Bomb(true), counted(3)));
    world.spawn((Bomb(false), counted(4)));
    world.spawn((counted(5),));
    assert!(catch_unwind(AssertUnwindSafe(|| world.clear())).is_err());
    assert_eq!(dropped(), 5);
    assert_eq!(world.len(), 0);

    // Dropping the world.
    world.spawn((Bomb(true), counted(6)));
    world.spawn((Bomb(false), counted(7)));
    world.spawn((counted(8),));
    assert!(catch_unwind(AssertUnwindSafe(move || drop(world))).is_err());
    assert_eq!(dropped(), 8);
}

#[test]
fn a_panicking_drop_stops_insert_batch_where_repeated_inserts_would_stop() {
    let drops = Arc::new(AtomicUsize::new(0));
    let counted = |n| Counted(drops.clone(), n);
    let dropped = || drops.load(Ordering::SeqCst);
    let mut world = World::new();
    // A batch insert that replaces values stops where a replaced value's drop panics, as
    // repeated inserts would: the rows up to the panicking one have their new values, the
    // rest keep their old ones, and the bundles not inserted are dropped.
    let ids: Vec<Entity> = (0..6)
        .map(|i| world.spawn((Bomb(i == 2), counted(10 + i))))
        .collect();
    let before = dropped();
    let result = catch_unwind(AssertUnwindSafe(|| {
        world.insert_batch(ids.iter().map(|&e| (e, (Bomb(false), counted(20)))))
    }));
    assert!(result.is_err(), "the panic reaches the caller");
    assert_eq!(
        dropped() - before,
        6,
        "3 replaced values and 3 bundles not inserted"
    );
    let kept: Vec<u32> = ids.iter().map(|&e| world.get::<Counted>(e).unwrap().1).collect();
    assert_eq!(kept, [20, 20, 20, 13, 14, 15]);
    assert!(ids[..3].iter().all(|&e| !world.get::<Bomb>(e).unwrap().0));
    assert_locations_exact(&world);
    drop(world);
    assert_eq!(dropped(), 12, "every value made is dropped once");
}

#[test]
fn panicking_spawn_batch_iterator_keeps_what_was_spawned() {
    let mut world = World::new();
    let result = catch_unwind(AssertUnwindSafe(|| {
        let source = (0..10u32).map(|i| {
            assert!(i != 6, "source iterator fails at 6");
            (i, Pos(i as f32, 0.0))
        });
        world.spawn_batch(source).count()
    }));
    assert!(result.is_err());
    assert_eq!(world.len(), 6);
    assert_locations_exact(&world);
    let values: Vec<u32> = world
        .archetypes()
        .flat_map(|a| a.entities().iter().map(|&e| *world.get::<u32>(e).unwrap()))
        .collect();
    assert_eq!(values, (0..6).collect::<Vec<_>>());
}

#[test]
fn spawn_batch_grows_past_its_size_hint_and_survives_a_panicking_consumer() {
    #[derive(Debug, PartialEq)]
    struct Marker;
    let mut world = World::new();
    world.spawn((100u32, Pos(0.0, 0.0), Marker));
    // A lower bound of 0: the rows past the table's room make it grow mid-batch.
    let kept = || (0..50u32).filter(|i| i % 5 != 4);
    let spawned: Vec<Entity> = world
        .spawn_batch(kept().map(|i| (i, Pos(i as f32, 1.0), Marker)))
        .collect();
    assert_eq!(spawned.len(), 40);
    for (&e, i) in spawned.iter().zip(kept()) {
        assert_eq!(world.get::<u32>(e), Ok(&i));
        assert_eq!(world.get::<Pos>(e), Ok(&Pos(i as f32, 1.0)));
        assert_eq!(world.get::<Marker>(e), Ok(&Marker));
    }
    assert_locations_exact(&world);

    // The consumer panics at its fourth entity: the four spawned so far are whole, and the
    // rest of the source is not spawned while unwinding.
    let mut seen = 0;
    let result = catch_unwind(AssertUnwindSafe(|| {
        world
            .spawn_batch((0..10u32).map(|i| (1000 + i, Pos(0.0, 2.0), Marker)))
            .for_each(|_| {
                seen += 1;
                assert!(seen < 4, "consumer fails at its fourth entity");
            })
    }));
    assert!(result.is_err());
    assert_eq!(world.len(), 1 + 40 + 4);
    assert_locations_exact(&world);
    let mut late: Vec<u32> = world
        .query::<&u32>()
        .iter(&world)
        .copied()
        .filter(|&v| v >= 1000)
        .collect();
    late.sort();
    assert_eq!(late, [1000, 1001, 1002, 1003]);
}

#[test]
fn spawn_batch_maps_pages_without_touching_live_rows() {
    // Rows already in the table end mid-page; the batch's pages are written before its rows
    // (`Table::prefault`), over several pages of every array, and the values and ticks of
    // the rows before them stay as they were. Every array here has 8-byte rows (512 a page):
    // the first batch spans more than a page, so the page of its last row starts inside the
    // array, and the second batch (2,300 rows, 1,200 under Miri) spans more than two pages.
    let total = if cfg!(miri) { 1_900 } else { 3_000 };
    let mut world = World::new();
    let first: Vec<Entity> = world
        .spawn_batch((0..700u64).map(|i| (i, Pos(i as f32, 0.0))))
        .collect();
    let mut changed = world.query_filtered::<&u64, crate::Changed<u64>>();
    assert_eq!(changed.iter(&world).count(), 700);
    let second: Vec<Entity> = world
        .spawn_batch((700..total).map(|i| (i, Pos(i as f32, 0.0))))
        .collect();
    for (i, &e) in first.iter().chain(&second).enumerate() {
        assert_eq!(world.get::<u64>(e), Ok(&(i as u64)));
        assert_eq!(world.get::<Pos>(e), Ok(&Pos(i as f32, 0.0)));
    }
    assert_eq!(
        changed.iter(&world).count() as u64,
        total - 700,
        "only the second batch is new"
    );
    assert_locations_exact(&world);
}

#[test]
fn spawn_batch_with_a_lying_size_hint_only_fills_what_it_yields() {
    // Claims 5000 rows and yields 10: the table makes room for and maps 5000, fills 10, and
    // never reads the other rows.
    struct Liar(u32);
    impl Iterator for Liar {
        type Item = (u32, Pos);
        fn next(&mut self) -> Option<Self::Item> {
            (self.0 < 10).then(|| {
                self.0 += 1;
                (self.0, Pos(0.0, 1.0))
            })
        }
        fn size_hint(&self) -> (usize, Option<usize>) {
            (5000, None)
        }
    }
    let mut world = World::new();
    let spawned: Vec<Entity> = world.spawn_batch(Liar(0)).collect();
    assert_eq!(spawned.len(), 10);
    assert_eq!(world.len(), 10);
    let mut values: Vec<u32> = world.query::<&u32>().iter(&world).copied().collect();
    values.sort();
    assert_eq!(values, (1..=10).collect::<Vec<_>>());
    let more = world.spawn((11u32, Pos(0.0, 2.0)));
    assert_eq!(world.get::<Pos>(more), Ok(&Pos(0.0, 2.0)));
    assert_locations_exact(&world);
}

#[test]
fn spawn_batch_of_an_endless_source_panics_clearly_before_reserving() {
    let mut world = World::new();
    let kept = world.spawn((1u32,));
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        world.spawn_batch(std::iter::repeat((2u32,))).next()
    }));
    let payload = caught.expect_err("an endless source is refused");
    let message = payload.downcast_ref::<String>().expect("a formatted message");
    assert!(message.starts_with("spawn_batch: "), "{message}");
    assert!(message.contains(".take(n)"), "{message}");
    // Nothing was spawned or reserved; the world works on.
    assert_eq!(world.len(), 1);
    assert_eq!(world.spawn_batch(std::iter::repeat_n((3u32,), 2)).count(), 2);
    assert_eq!(world.get::<u32>(kept), Ok(&1));
    assert_eq!(world.len(), 3);
    assert_locations_exact(&world);
}

#[test]
fn spawn_batch_dropped_early_spawns_the_rest() {
    let mut world = World::new();
    let mut batch = world.spawn_batch((0..5u32).map(|i| (i,)));
    let first = batch.next().unwrap();
    drop(batch);
    assert_eq!(world.len(), 5);
    assert_eq!(world.get::<u32>(first), Ok(&0));
}

#[test]
fn get_mut_marks_changed_only_on_write() {
    let mut world = World::new();
    let e = world.spawn((Pos(0.0, 0.0),));
    world.clear_trackers();
    {
        let pos = world.get_mut::<Pos>(e).unwrap();
        assert!(!pos.is_changed() && !pos.is_added());
    }
    world.get_mut::<Pos>(e).unwrap().0 = 5.0;
    assert!(world.get_mut::<Pos>(e).unwrap().is_changed());
}

#[test]
fn wide_bundles_round_trip() {
    let mut world = World::new();
    let e = world.spawn((
        1u8, 2u16, 3u32, 4u64, 5i8, 6i16, 7i32, 8i64, 9f32, 10f64, 'k', true,
    ));
    assert_eq!(world.get::<char>(e), Ok(&'k'));
    let removed = world.remove::<(u8, u16, u32, u64, i8, i16, i32, i64, f32, f64, char, bool)>(e);
    assert_eq!(removed, Ok((1, 2, 3, 4, 5, 6, 7, 8, 9.0, 10.0, 'k', true)));
    assert!(world.contains(e));
}

#[test]
fn a_tuple_nested_in_a_bundle_is_refused_naming_it() {
    fn physics() -> (Pos, Vel) {
        (Pos(0.0, 0.0), Vel(1.0, 0.0))
    }
    let mut world = World::new();
    let kept = world.spawn((Pos(5.0, 5.0),));
    let message = |result: std::thread::Result<Entity>| -> String {
        let payload = result.expect_err("a nested tuple is refused");
        payload
            .downcast_ref::<String>()
            .cloned()
            .expect("a formatted message")
    };
    let spawn = message(std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        world.spawn((physics(), Marker))
    })));
    assert!(
        spawn.contains("nested tuple") && spawn.contains("Pos") && spawn.contains("Vel"),
        "{spawn}"
    );
    let insert = message(std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        world.insert(kept, (Marker, physics())).map(|()| kept).unwrap()
    })));
    assert!(insert.contains("nested tuple"), "{insert}");
    // Nothing was stored; the flat bundle works, and `()` stays a plain component.
    assert_eq!(world.len(), 1);
    assert!(!world.has::<Marker>(kept));
    let (pos, vel) = physics();
    let flat = world.spawn((pos, vel, Marker, ()));
    assert!(world.has::<Vel>(flat) && world.has::<()>(flat));
    assert_locations_exact(&world);
}

#[test]
fn row_moves_keep_values_of_every_size_with_and_without_a_floor() {
    // Value sizes a row move copies inline (0, 1, 2, 4, 8, 12, 16, 20, 24, 28, 32, 36, 40, 48
    // and 64 bytes) beside sizes it hands to the general path (3 and 72 bytes); in the second
    // round a changed floor on the third column hands the rest of the row to the general path
    // from there.
    let mut world = World::new();
    let ids: Vec<Entity> = (0..20u32)
        .map(|i| {
            let w = u64::from(i);
            // Columns follow registration, so inline sizes come first here, the general path
            // starts mid-row (at `[u8; 3]`), and inline sizes follow it.
            let e = world.spawn((
                i,
                w,
                [i; 3],
                u128::from(i),
                Marker,
                [w; 3],
                [w; 4],
                i as u8,
                [i as u8; 3],
                i as u16,
                [i; 5],
                [i; 7],
                [i; 9],
                [w; 5],
                [w; 6],
                [w; 8],
            ));
            // A second general size, at the end of the row (and a move of every size).
            world.insert(e, ([w; 9],)).unwrap();
            e
        })
        .collect();
    let check = |world: &World, moved: Option<Vel>| {
        for (i, &e) in ids.iter().enumerate() {
            let (i, w) = (i as u32, i as u64);
            assert_eq!(world.get::<u8>(e), Ok(&(i as u8)));
            assert_eq!(world.get::<u16>(e), Ok(&(i as u16)));
            assert_eq!(world.get::<[u8; 3]>(e), Ok(&[i as u8; 3]));
            assert_eq!(world.get::<u32>(e), Ok(&i));
            assert_eq!(world.get::<u64>(e), Ok(&w));
            assert_eq!(world.get::<[u32; 3]>(e), Ok(&[i; 3]));
            assert_eq!(world.get::<u128>(e), Ok(&u128::from(i)));
            assert_eq!(world.get::<[u32; 5]>(e), Ok(&[i; 5]));
            assert_eq!(world.get::<[u32; 7]>(e), Ok(&[i; 7]));
            assert_eq!(world.get::<[u32; 9]>(e), Ok(&[i; 9]));
            assert_eq!(world.get::<[u64; 3]>(e), Ok(&[w; 3]));
            assert_eq!(world.get::<[u64; 4]>(e), Ok(&[w; 4]));
            assert_eq!(world.get::<[u64; 5]>(e), Ok(&[w; 5]));
            assert_eq!(world.get::<[u64; 6]>(e), Ok(&[w; 6]));
            assert_eq!(world.get::<[u64; 8]>(e), Ok(&[w; 8]));
            assert_eq!(world.get::<[u64; 9]>(e), Ok(&[w; 9]));
            assert!(world.has::<Marker>(e));
            let vel = moved.filter(|_| i % 3 == 0);
            assert_eq!(world.get::<Vel>(e).ok(), vel.as_ref());
        }
        assert_locations_exact(world);
    };
    let mut floor = world.query::<&mut [u32; 3]>();
    let mut changed = world.query_filtered::<Entity, crate::Changed<[u32; 3]>>();
    for round in 0..2 {
        if round == 1 {
            changed.iter(&world).for_each(drop);
            // A whole-column pass: every row of the column changed, recorded as its floor.
            floor.for_each_chunk(&mut world, |chunk| chunk.iter_mut().for_each(|v| v[0] += 0));
        }
        let vel = Vel(round as f32, 1.0);
        for &e in ids.iter().step_by(3) {
            world.insert(e, (vel,)).unwrap();
        }
        check(&world, Some(vel));
        for &e in ids.iter().step_by(3) {
            assert_eq!(world.remove::<(Vel,)>(e), Ok((vel,)));
        }
        check(&world, None);
        if round == 1 {
            // The floor's tick travelled with every moved row.
            assert_eq!(changed.iter(&world).count(), ids.len());
        }
    }
}
