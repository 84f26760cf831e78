//! Behaviour of the public `World` API as a game uses it: one behaviour per test.
//!
//! `batches_keep_change_ticks` and `query_errors_name_the_query_without_module_paths` run with
//! `Health` and `Player` in tables and in sparse sets (see [`per_storage!`]). The view tests
//! stay table-only (views read table columns); the rest test entity handles and structural
//! changes, covered for sparse components in `tests/sparse.rs`.

use std::any::type_name;
use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use tabula_core::{ArchetypeId, Changed, Entity, EntityError, QueryError, World};

mod common;
use common::{Storage, per_storage};

#[derive(Debug, PartialEq, Clone, Copy)]
struct Position(f32, f32);

#[derive(Debug, PartialEq, Clone, Copy)]
struct Velocity(f32, f32);

#[derive(Debug, PartialEq, Clone, Copy)]
struct Health(u32);

#[derive(Debug, PartialEq, Clone)]
struct Name(String);

#[derive(Debug, PartialEq, Clone, Copy)]
struct Player;

/// Counts its drops, to see exactly when the world lets go of a value.
#[derive(Debug)]
struct DropCounter(Arc<AtomicUsize>);

impl Drop for DropCounter {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// A world with `Health` and `Player` stored as `storage` says.
fn world_with(storage: Storage) -> World {
    let mut world = World::new();
    if storage == Storage::Sparse {
        world.register_component::<Health>().sparse_set();
        world.register_component::<Player>().sparse_set();
    }
    world
}

per_storage!(
    batches_keep_change_ticks,
    query_errors_name_the_query_without_module_paths
);

fn sorted_names(names: impl Iterator<Item = &'static str>) -> Vec<&'static str> {
    let mut names: Vec<_> = names.collect();
    names.sort_unstable();
    names
}

// --- Entity handles --------------------------------------------------------------------------

#[test]
fn stale_handle_never_reaches_the_reused_slot() {
    let mut world = World::new();
    let old = world.spawn((Health(10),));
    world.despawn(old).unwrap();
    let new = world.spawn((Health(99),));
    assert_eq!(new.index(), old.index(), "the freed slot is reused");
    assert_eq!(new.generation(), old.generation() + 1);
    assert_ne!(new, old);

    assert!(!world.contains(old));
    assert_eq!(world.get::<Health>(old), Err(EntityError::NoSuchEntity(old)));
    assert_eq!(
        world.insert_one(old, Health(0)),
        Err(EntityError::NoSuchEntity(old))
    );
    assert_eq!(
        world.remove_one::<Health>(old),
        Err(EntityError::NoSuchEntity(old))
    );
    assert_eq!(world.despawn(old), Err(EntityError::NoSuchEntity(old)));
    assert!(world.entity(old).is_err());
    assert!(world.entity_mut(old).is_err());

    // None of that touched the slot's new occupant.
    assert_eq!(world.get::<Health>(new), Ok(&Health(99)));
    assert_eq!(world.len(), 1);
}

#[test]
fn entity_bits_round_trip() {
    let mut world = World::new();
    let ids: Vec<Entity> = (0..4).map(|i| world.spawn((Health(i),))).collect();
    world.despawn(ids[2]).unwrap();
    let reused = world.spawn((Health(7),));
    for e in ids.iter().copied().chain([reused]) {
        let bits = e.to_bits();
        assert_eq!(
            bits,
            (u64::from(e.world_tag()) << 56) | (u64::from(e.generation()) << 32) | u64::from(e.index())
        );
        assert_eq!(e.world_tag(), world.tag());
        assert_eq!(Entity::from_bits(bits), Some(e));
    }
    // A handle read back from bits (a save file, a network message) reaches the same entity.
    let restored = Entity::from_bits(reused.to_bits()).unwrap();
    assert_eq!(world.get::<Health>(restored), Ok(&Health(7)));
    // The generation bits are never zero in a real handle, whatever the tag.
    assert_eq!(Entity::from_bits(5), None);
    assert_eq!(Entity::from_bits((3 << 56) | 5), None);
    assert_eq!(
        Entity::from_bits(u64::MAX).map(|e| (e.index(), e.generation(), e.world_tag())),
        Some((u32::MAX, (1 << 24) - 1, u8::MAX))
    );
}

#[test]
fn entity_debug_form_is_index_v_generation_at_tag() {
    let mut world = World::new();
    let ids: Vec<Entity> = (0..8).map(|_| world.spawn((Player,))).collect();
    let tag = world.tag();
    assert_eq!(format!("{:?}", ids[7]), format!("7v1@{tag}"));
    world.despawn(ids[7]).unwrap();
    let again = world.spawn((Player,));
    assert_eq!(format!("{again:?}"), format!("7v2@{tag}"));
    assert_eq!(format!("{again}"), format!("7v2@{tag}"), "Display matches Debug");
    assert_eq!(
        format!("{:?}", Entity::from_bits((2 << 32) | 7).unwrap()),
        "7v2@0"
    );
    // The same slot and generation in another live world prints otherwise.
    let mut other = World::new();
    let twin: Vec<Entity> = (0..8).map(|_| other.spawn((Player,))).collect();
    assert_ne!(twin[7], ids[7]);
    assert_ne!(format!("{:?}", twin[7]), format!("{:?}", ids[7]));
    assert_eq!(format!("{:?}", twin[7]), format!("7v1@{}", other.tag()));
}

#[test]
fn entities_work_as_map_keys_and_sort_by_index() {
    let mut world = World::new();
    let a = world.spawn((Player,));
    let b = world.spawn((Player,));
    world.despawn(a).unwrap();
    let c = world.spawn((Player,)); // slot of `a`, generation 2
    let set: HashSet<Entity> = [a, b, c].into_iter().collect();
    assert_eq!(set.len(), 3);
    let mut sorted = vec![b, c, a];
    sorted.sort();
    assert_eq!(sorted, vec![a, c, b], "by index, then generation");
}

// --- Spawning --------------------------------------------------------------------------------

#[test]
fn spawn_batch_with_exact_size_iterator() {
    let mut world = World::new();
    world.spawn((Position(0.0, 0.0),)); // another archetype, untouched by the batch
    let bundles: Vec<_> = (0..50u32).map(|i| (Position(i as f32, 0.0), Health(i))).collect();
    let batch = world.spawn_batch(bundles);
    assert_eq!(batch.len(), 50, "the batch reports its exact size");
    let ids: Vec<Entity> = batch.collect();
    assert_eq!(ids.len(), 50);
    assert_eq!(ids.iter().collect::<HashSet<_>>().len(), 50, "distinct ids");
    assert_eq!(world.len(), 51);
    for (i, &e) in ids.iter().enumerate() {
        assert_eq!(world.get::<Health>(e), Ok(&Health(i as u32)));
        assert_eq!(world.get::<Position>(e), Ok(&Position(i as f32, 0.0)));
    }
    let pair = world.archetypes().find(|a| a.has::<Health>()).unwrap();
    assert_eq!(pair.len(), 50);
    assert_eq!(pair.entities(), &ids[..], "rows are in spawn order");
}

#[test]
fn spawn_batch_with_non_exact_size_iterator() {
    let mut world = World::new();
    // `filter` gives a lower size hint of 0: the batch grows as it goes.
    let source = (0..40u32)
        .filter(|i| i % 3 == 0)
        .map(|i| (Health(i), Name(format!("n{i}"))));
    assert_eq!(source.size_hint().0, 0);
    let ids: Vec<Entity> = world.spawn_batch(source).collect();
    assert_eq!(ids.len(), 14);
    for (&e, i) in ids.iter().zip((0..40u32).step_by(3)) {
        assert_eq!(world.get::<Health>(e), Ok(&Health(i)));
        assert_eq!(world.get::<Name>(e), Ok(&Name(format!("n{i}"))));
    }
    assert_eq!(world.len(), 14);
}

#[test]
fn spawn_batch_not_iterated_still_spawns_everything() {
    let mut world = World::new();
    drop(world.spawn_batch((0..10u32).map(|i| (Health(i),))));
    assert_eq!(world.len(), 10);
    let stored = world.archetypes().find(|a| a.has::<Health>()).unwrap();
    let values: Vec<u32> = stored
        .entities()
        .iter()
        .map(|&e| world.get::<Health>(e).unwrap().0)
        .collect();
    assert_eq!(values, (0..10).collect::<Vec<_>>());
}

#[test]
fn spawn_empty_bundle_makes_a_live_entity_without_components() {
    let mut world = World::new();
    let e = world.spawn(());
    assert!(world.contains(e));
    assert_eq!(world.entity(e).unwrap().component_names().count(), 0);
    assert_eq!(world.entity(e).unwrap().archetype().id(), ArchetypeId::EMPTY);
    // An empty entity may still be given components with spawn_at.
    world.spawn_at(e, (Health(1),)).unwrap();
    assert_eq!(world.get::<Health>(e), Ok(&Health(1)));
}

#[test]
fn reserve_entity_then_spawn_at() {
    let mut world = World::new();
    let e = world.reserve_entity();
    assert!(!world.contains(e), "not live before a flush");
    assert_eq!(world.get::<Health>(e), Err(EntityError::NoSuchEntity(e)));
    assert_eq!(world.len(), 0);
    world.spawn_at(e, (Health(3), Player)).unwrap();
    assert_eq!(world.get::<Health>(e), Ok(&Health(3)));
    assert!(world.has::<Player>(e));
    assert_eq!(world.len(), 1);
    // A second spawn_at on an entity with components is refused and changes nothing.
    assert_eq!(
        world.spawn_at(e, (Health(4),)),
        Err(EntityError::AlreadySpawned(e))
    );
    assert_eq!(world.get::<Health>(e), Ok(&Health(3)));
}

#[test]
fn flush_makes_reservations_visible() {
    let mut world = World::new();
    let reserved: Vec<Entity> = world.reserve_entities(3).collect();
    assert!(reserved.iter().all(|&e| !world.contains(e)));
    world.flush();
    assert!(reserved.iter().all(|&e| world.contains(e)));
    assert_eq!(world.len(), 3);
    let next = world.spawn((Player,));
    assert!(!reserved.contains(&next), "a spawn never hands out a reserved id");
}

#[test]
fn reserve_entities_from_many_threads_at_once() {
    const THREADS: usize = 4;
    const PER_THREAD: u32 = if cfg!(miri) { 8 } else { 200 };
    let mut world = World::new();
    // Free a few slots first, so reservations draw from the free list and from fresh slots.
    let freed: Vec<Entity> = (0..6).map(|_| world.spawn((Player,))).collect();
    let kept = world.spawn((Health(1),));
    for &e in &freed {
        world.despawn(e).unwrap();
    }

    let world_ref = &world;
    let reserved: Vec<Entity> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..THREADS)
            .map(|t| {
                scope.spawn(move || {
                    let mut mine: Vec<Entity> = world_ref.reserve_entities(PER_THREAD / 2).collect();
                    for _ in 0..PER_THREAD / 2 {
                        mine.push(world_ref.reserve_entity());
                    }
                    assert_eq!(mine.len(), PER_THREAD as usize, "thread {t}");
                    mine
                })
            })
            .collect();
        handles.into_iter().flat_map(|h| h.join().unwrap()).collect()
    });

    let total = THREADS * PER_THREAD as usize;
    let distinct: HashSet<Entity> = reserved.iter().copied().collect();
    assert_eq!(distinct.len(), total, "every reserved id is distinct");
    assert!(
        freed.iter().all(|e| !distinct.contains(e)),
        "no stale handle is handed out again"
    );
    assert!(!distinct.contains(&kept));
    let reused = freed
        .iter()
        .filter(|f| reserved.iter().any(|r| r.index() == f.index()))
        .count();
    assert_eq!(
        reused,
        freed.len(),
        "every freed slot was reused by a reservation"
    );

    world.flush();
    assert_eq!(world.len() as usize, total + 1);
    for &e in &reserved {
        assert!(world.contains(e));
        assert_eq!(world.entity(e).unwrap().component_names().count(), 0);
    }
    assert_eq!(world.get::<Health>(kept), Ok(&Health(1)));
}

// --- Insert and remove -----------------------------------------------------------------------

#[test]
fn insert_replaces_existing_values_and_drops_the_old_ones() {
    let drops = Arc::new(AtomicUsize::new(0));
    let mut world = World::new();
    let e = world.spawn((Health(10), DropCounter(drops.clone())));
    world
        .insert(e, (Health(20), Velocity(1.0, 0.0), DropCounter(drops.clone())))
        .unwrap();
    assert_eq!(world.get::<Health>(e), Ok(&Health(20)));
    assert_eq!(world.get::<Velocity>(e), Ok(&Velocity(1.0, 0.0)));
    assert_eq!(
        drops.load(Ordering::SeqCst),
        1,
        "the replaced counter was dropped once"
    );
    // Replacing everything the entity has keeps it in its archetype.
    let archetype = world.entity(e).unwrap().archetype().id();
    world.insert_one(e, Health(30)).unwrap();
    assert_eq!(world.get::<Health>(e), Ok(&Health(30)));
    assert_eq!(world.entity(e).unwrap().archetype().id(), archetype);
    drop(world);
    assert_eq!(drops.load(Ordering::SeqCst), 2);
}

#[test]
fn remove_returns_the_values_in_bundle_order() {
    let mut world = World::new();
    let e = world.spawn((Position(1.0, 2.0), Health(5), Name("ada".into()), Player));
    let (name, health) = world.remove::<(Name, Health)>(e).unwrap();
    assert_eq!((name, health), (Name("ada".into()), Health(5)));
    assert!(!world.has::<Name>(e) && !world.has::<Health>(e));
    assert_eq!(world.get::<Position>(e), Ok(&Position(1.0, 2.0)));
    assert!(world.has::<Player>(e));
    assert_eq!(world.remove_one::<Player>(e), Ok(Player));
    assert_eq!(world.remove_one::<Position>(e), Ok(Position(1.0, 2.0)));
    assert!(world.contains(e), "an entity without components is still alive");
    assert_eq!(world.entity(e).unwrap().archetype().id(), ArchetypeId::EMPTY);
}

#[test]
fn remove_of_a_partly_present_bundle_errors_and_changes_nothing() {
    let drops = Arc::new(AtomicUsize::new(0));
    let mut world = World::new();
    let e = world.spawn((Health(5), DropCounter(drops.clone())));
    let archetype = world.entity(e).unwrap().archetype().id();
    let err = world.remove::<(Health, Velocity, DropCounter)>(e).unwrap_err();
    assert_eq!(
        err,
        EntityError::MissingComponent {
            entity: e,
            component: type_name::<Velocity>()
        }
    );
    assert_eq!(world.get::<Health>(e), Ok(&Health(5)));
    assert!(world.has::<DropCounter>(e));
    assert_eq!(drops.load(Ordering::SeqCst), 0, "nothing was dropped");
    assert_eq!(
        world.entity(e).unwrap().archetype().id(),
        archetype,
        "the entity did not move"
    );
    let counts: Vec<usize> = world
        .archetypes()
        .filter(|a| a.id() == archetype)
        .map(|a| a.len())
        .collect();
    assert_eq!(counts, vec![1]);
}

#[test]
fn insert_and_remove_move_other_entities_correctly() {
    // Swap-removal moves the last row into the hole; its entity must still read its own data.
    let mut world = World::new();
    let ids: Vec<Entity> = (0..5u32)
        .map(|i| world.spawn((Health(i), Name(i.to_string()))))
        .collect();
    world.insert_one(ids[0], Player).unwrap();
    world.remove_one::<Name>(ids[2]).unwrap();
    world.despawn(ids[1]).unwrap();
    for (i, &e) in ids.iter().enumerate().filter(|&(i, _)| i != 1) {
        assert_eq!(world.get::<Health>(e), Ok(&Health(i as u32)), "{e:?}");
    }
    assert_eq!(world.get::<Name>(ids[4]), Ok(&Name("4".into())));
    assert_eq!(world.get::<Name>(ids[3]), Ok(&Name("3".into())));
}

#[test]
fn twelve_wide_bundle_spawns_and_removes() {
    #[derive(Debug, PartialEq)]
    struct C0(u8);
    #[derive(Debug, PartialEq)]
    struct C1(u16);
    #[derive(Debug, PartialEq)]
    struct C2(u32);
    #[derive(Debug, PartialEq)]
    struct C3(u64);
    #[derive(Debug, PartialEq)]
    struct C4(String);
    #[derive(Debug, PartialEq)]
    struct C5;
    #[derive(Debug, PartialEq)]
    #[repr(align(32))]
    struct C6(u8);
    #[derive(Debug, PartialEq)]
    struct C7(Vec<u32>);
    #[derive(Debug, PartialEq)]
    struct C8(f64);
    #[derive(Debug, PartialEq)]
    struct C9([u8; 3]);
    #[derive(Debug, PartialEq)]
    struct C10(char);
    #[derive(Debug, PartialEq)]
    struct C11(bool);

    let bundle = |n: u8| {
        (
            C0(n),
            C1(u16::from(n) * 2),
            C2(3),
            C3(4),
            C4(format!("s{n}")),
            C5,
            C6(n),
            C7(vec![u32::from(n); 3]),
            C8(0.5),
            C9([n, n, n]),
            C10('x'),
            C11(true),
        )
    };
    let mut world = World::new();
    let a = world.spawn(bundle(1));
    let b = world.spawn(bundle(2));
    let wide = world.archetypes().find(|a| a.has::<C11>()).unwrap();
    assert_eq!((wide.component_names().count(), wide.len()), (12, 2));
    assert_eq!(world.get::<C4>(b), Ok(&C4("s2".into())));
    assert_eq!(std::ptr::from_ref(world.get::<C6>(a).unwrap()).addr() % 32, 0);

    // Half of it, in an order unlike the spawn order.
    let half = world.remove::<(C11, C4, C0, C7, C5, C6)>(a).unwrap();
    assert_eq!(
        half,
        (C11(true), C4("s1".into()), C0(1), C7(vec![1, 1, 1]), C5, C6(1))
    );
    assert_eq!(world.entity(a).unwrap().component_names().count(), 6);
    assert_eq!(world.get::<C9>(a), Ok(&C9([1, 1, 1])));

    // All twelve at once.
    let all = world
        .remove::<(C0, C1, C2, C3, C4, C5, C6, C7, C8, C9, C10, C11)>(b)
        .unwrap();
    assert_eq!(all, bundle(2));
    assert!(world.contains(b));
    assert_eq!(world.entity(b).unwrap().component_names().count(), 0);
}

// --- Batches ---------------------------------------------------------------------------------

/// Checks the world against what the test expects, and its own bookkeeping: every expected
/// entity reads its values, every archetype's rows name live entities that are located there,
/// and the archetypes hold exactly the live entities.
fn assert_consistent(world: &World, expected: &[(Entity, Health, Option<Velocity>)]) {
    for &(e, health, velocity) in expected {
        assert_eq!(world.get::<Health>(e), Ok(&health), "{e:?}");
        assert_eq!(world.get::<Velocity>(e).ok(), velocity.as_ref(), "{e:?}");
    }
    let mut rows = 0;
    for archetype in world.archetypes() {
        for &e in archetype.entities() {
            assert_eq!(world.entity(e).unwrap().archetype().id(), archetype.id(), "{e:?}");
        }
        rows += archetype.len();
    }
    assert_eq!(rows, world.len() as usize);
}

#[test]
fn insert_batch_over_a_whole_archetype_then_remove_batch() {
    let drops = Arc::new(AtomicUsize::new(0));
    let mut world = World::new();
    let ids: Vec<Entity> = (0..50u32)
        .map(|i| world.spawn((Health(i), DropCounter(drops.clone()))))
        .collect();
    let other = world.spawn((Health(99),));
    // A shuffled order: batch order need not be row order.
    let mut order = ids.clone();
    order.sort_by_key(|e| (e.index() * 7) % 50);

    world
        .insert_batch(order.iter().map(|&e| (e, (Velocity(e.index() as f32, 1.0),))))
        .unwrap();
    let mut expected: Vec<_> = ids
        .iter()
        .enumerate()
        .map(|(i, &e)| (e, Health(i as u32), Some(Velocity(e.index() as f32, 1.0))))
        .collect();
    expected.push((other, Health(99), None));
    assert_consistent(&world, &expected);
    let source = world
        .archetypes()
        .find(|a| a.has::<DropCounter>() && !a.has::<Velocity>());
    assert_eq!(source.map(|a| a.len()), Some(0), "the source archetype is empty");
    assert_eq!(drops.load(Ordering::SeqCst), 0, "moving drops nothing");

    let removed = world.remove_batch::<(Velocity,)>(&order).unwrap();
    let velocities: Vec<Velocity> = order.iter().map(|e| Velocity(e.index() as f32, 1.0)).collect();
    assert_eq!(removed, velocities.into_iter().map(|v| (v,)).collect::<Vec<_>>());
    for entry in &mut expected {
        entry.2 = None;
    }
    assert_consistent(&world, &expected);
    assert_eq!(drops.load(Ordering::SeqCst), 0);
    drop(world);
    assert_eq!(
        drops.load(Ordering::SeqCst),
        ids.len(),
        "every counter dropped once"
    );
}

#[test]
fn insert_batch_over_part_of_an_archetype_and_mixed_archetypes() {
    let mut world = World::new();
    let plain: Vec<Entity> = (0..6u32).map(|i| world.spawn((Health(i),))).collect();
    let named = world.spawn((Health(10), Name("n".into())));
    let moving = world.spawn((Health(11), Velocity(0.0, 0.0)));
    // Part of `plain`, one entity listed twice (the second bundle wins), and entities of two
    // other archetypes, one of which already has a `Velocity`.
    let batch = [
        (plain[4], (Velocity(4.0, 0.0),)),
        (named, (Velocity(10.0, 0.0),)),
        (plain[1], (Velocity(1.0, 0.0),)),
        (moving, (Velocity(11.0, 0.0),)),
        (plain[4], (Velocity(4.5, 0.0),)),
    ];
    world.insert_batch(batch).unwrap();
    let expected = [
        (plain[0], Health(0), None),
        (plain[1], Health(1), Some(Velocity(1.0, 0.0))),
        (plain[2], Health(2), None),
        (plain[3], Health(3), None),
        (plain[4], Health(4), Some(Velocity(4.5, 0.0))),
        (plain[5], Health(5), None),
        (named, Health(10), Some(Velocity(10.0, 0.0))),
        (moving, Health(11), Some(Velocity(11.0, 0.0))),
    ];
    assert_consistent(&world, &expected);
    assert_eq!(world.get::<Name>(named), Ok(&Name("n".into())));

    let removed = world.remove_batch::<(Velocity,)>(&[moving, plain[4]]).unwrap();
    assert_eq!(removed, vec![(Velocity(11.0, 0.0),), (Velocity(4.5, 0.0),)]);
    assert!(!world.has::<Velocity>(moving) && !world.has::<Velocity>(plain[4]));
    assert_eq!(world.get::<Velocity>(plain[1]), Ok(&Velocity(1.0, 0.0)));
}

#[test]
fn insert_batch_with_a_dead_entity_changes_nothing() {
    let drops = Arc::new(AtomicUsize::new(0));
    let mut world = World::new();
    let ids: Vec<Entity> = (0..4u32).map(|i| world.spawn((Health(i),))).collect();
    let dead = world.spawn((Health(9),));
    world.despawn(dead).unwrap();
    let batch = ids
        .iter()
        .chain([&dead])
        .chain(&ids)
        .map(|&e| (e, (DropCounter(drops.clone()),)));
    assert_eq!(world.insert_batch(batch), Err(EntityError::NoSuchEntity(dead)));
    assert_eq!(
        drops.load(Ordering::SeqCst),
        9,
        "every bundle of the batch was dropped"
    );
    assert!(ids.iter().all(|&e| !world.has::<DropCounter>(e)));
    let expected: Vec<_> = ids
        .iter()
        .enumerate()
        .map(|(i, &e)| (e, Health(i as u32), None))
        .collect();
    assert_consistent(&world, &expected);
    assert_eq!(
        world.insert_batch(std::iter::empty::<(Entity, (Health,))>()),
        Ok(())
    );
}

#[test]
fn remove_batch_refuses_bad_batches_and_changes_nothing() {
    let mut world = World::new();
    let ids: Vec<Entity> = (0..4u32)
        .map(|i| world.spawn((Health(i), Velocity(i as f32, 0.0))))
        .collect();
    let bare = world.spawn((Health(7),));
    let dead = world.spawn((Health(8), Velocity(8.0, 0.0)));
    world.despawn(dead).unwrap();
    let missing = |entity| EntityError::MissingComponent {
        entity,
        component: type_name::<Velocity>(),
    };

    let cases: [(Vec<Entity>, EntityError); 3] = [
        (vec![ids[0], ids[1], bare, ids[2]], missing(bare)),
        (vec![ids[3], dead, ids[0]], EntityError::NoSuchEntity(dead)),
        // The second removal of `ids[2]` would find no `Velocity`.
        (vec![ids[2], ids[0], ids[1], ids[3], ids[2]], missing(ids[2])),
    ];
    for (batch, error) in cases {
        assert_eq!(world.remove_batch::<(Velocity,)>(&batch), Err(error));
        let mut expected: Vec<_> = ids
            .iter()
            .enumerate()
            .map(|(i, &e)| (e, Health(i as u32), Some(Velocity(i as f32, 0.0))))
            .collect();
        expected.push((bare, Health(7), None));
        assert_consistent(&world, &expected);
    }
    // A bundle with two components names the first one the entity lacks.
    assert_eq!(
        world.remove_batch::<(Health, Name)>(&[ids[0]]),
        Err(EntityError::MissingComponent {
            entity: ids[0],
            component: type_name::<Name>()
        })
    );
    assert_eq!(world.remove_batch::<(Velocity,)>(&[]), Ok(vec![]));
}

#[test]
fn batches_listing_a_whole_table_in_row_order() {
    let drops = Arc::new(AtomicUsize::new(0));
    let mut world = World::new();
    // Two rows already wait in the destination, so moved rows land after them.
    let settled: Vec<Entity> = (0..2u32)
        .map(|i| world.spawn((Health(100 + i), DropCounter(drops.clone()), Velocity(0.0, 0.0))))
        .collect();
    let ids: Vec<Entity> = world
        .spawn_batch((0..20u32).map(|i| (Health(i), DropCounter(drops.clone()))))
        .collect();
    let velocity = |e: Entity| Velocity(e.index() as f32, 2.0);
    let check = |world: &World, moved: bool| {
        let mut expected: Vec<_> = settled
            .iter()
            .enumerate()
            .map(|(i, &e)| (e, Health(100 + i as u32), Some(Velocity(0.0, 0.0))))
            .collect();
        expected.extend(
            (ids.iter().enumerate()).map(|(i, &e)| (e, Health(i as u32), moved.then(|| velocity(e)))),
        );
        assert_consistent(world, &expected);
    };

    // Longer than the table, or not the table in row order: the general path checks them.
    let dead = world.spawn((Health(9), DropCounter(drops.clone())));
    world.despawn(dead).unwrap();
    let longer = [&ids[..], &[dead]].concat();
    let result = world.insert_batch(longer.iter().map(|&e| (e, (velocity(e),))));
    assert_eq!(result, Err(EntityError::NoSuchEntity(dead)));
    check(&world, false);
    let mut duplicated = ids.clone();
    duplicated[19] = ids[0];
    assert_eq!(
        world.remove_batch::<(Velocity,)>(&duplicated),
        Err(EntityError::MissingComponent {
            entity: ids[0],
            component: type_name::<Velocity>()
        }),
        "nothing to remove, and the error names the first entity"
    );
    check(&world, false);

    world
        .insert_batch(ids.iter().map(|&e| (e, (velocity(e),))))
        .unwrap();
    check(&world, true);
    assert_eq!(drops.load(Ordering::SeqCst), 1, "moving drops nothing");
    let removed = world.remove_batch::<(Velocity,)>(&ids).unwrap();
    assert_eq!(removed, ids.iter().map(|&e| (velocity(e),)).collect::<Vec<_>>());
    check(&world, false);
    // A prefix of the table takes the one-entity path.
    world
        .insert_batch(ids[..5].iter().map(|&e| (e, (velocity(e),))))
        .unwrap();
    for (i, &e) in ids.iter().enumerate() {
        assert_eq!(
            world.get::<Velocity>(e).ok(),
            (i < 5).then(|| velocity(e)).as_ref()
        );
    }
    assert_eq!(drops.load(Ordering::SeqCst), 1);
    drop(world);
    assert_eq!(drops.load(Ordering::SeqCst), 23, "every counter dropped once");
}

#[test]
fn view_finds_what_get_finds() {
    let mut world = World::new();
    let plain: Vec<Entity> = (0..5u32).map(|i| world.spawn((Health(i),))).collect();
    let moving = world.spawn((Health(10), Velocity(1.0, 0.0)));
    let bare = world.spawn((Velocity(2.0, 0.0),));
    let dead = world.spawn((Health(99),));
    world.despawn(dead).unwrap();
    let reserved = world.reserve_entity();
    // Moves to a new archetype before the view is made.
    world.insert_one(plain[2], Name("two".into())).unwrap();

    let view = world.view::<Health>();
    for &e in plain.iter().chain([&moving, &bare, &dead, &reserved]) {
        assert_eq!(view.get(e), world.get::<Health>(e), "{e:?}");
        assert_eq!(view.contains(e), world.has::<Health>(e), "{e:?}");
    }
    assert_eq!(view.get(plain[2]), Ok(&Health(2)));
    assert_eq!(view.get(dead), Err(EntityError::NoSuchEntity(dead)));
    assert_eq!(
        view.get(bare),
        Err(EntityError::MissingComponent {
            entity: bare,
            component: type_name::<Health>()
        })
    );
    // References from the view live as long as the world's borrow, not the view's.
    let health = view.get(moving).unwrap();
    drop(view);
    assert_eq!(health, &Health(10));
    assert!(World::new().view::<Health>().get(plain[0]).is_err());
}

#[test]
fn view_mut_writes_and_marks_what_get_mut_would() {
    let mut world = World::new();
    let plain: Vec<Entity> = (0..4u32).map(|i| world.spawn((Health(i),))).collect();
    let moving = world.spawn((Health(10), Velocity(1.0, 0.0)));
    let bare = world.spawn((Velocity(2.0, 0.0),));
    let dead = world.spawn((Health(99),));
    world.despawn(dead).unwrap();
    let mut changed = world.query_filtered::<Entity, Changed<Health>>();
    assert_eq!(changed.iter(&world).count(), 5);
    world.clear_trackers();

    let mut view = world.view_mut::<Health>();
    assert_eq!(view.get(plain[1]), Ok(&Health(1)));
    assert_eq!(view.get_mut(dead).err(), Some(EntityError::NoSuchEntity(dead)));
    assert_eq!(
        view.get_mut(bare).err(),
        Some(EntityError::MissingComponent {
            entity: bare,
            component: type_name::<Health>()
        })
    );
    assert!(view.contains(moving) && !view.contains(bare));
    // Read through `Mut` only: not a change.
    let read = view.get_mut(plain[0]).unwrap();
    assert!(!read.is_changed() && !read.is_added());
    assert_eq!(read.0, 0);
    view.get_mut(plain[2]).unwrap().0 += 20;
    view.get_mut(moving).unwrap().0 += 20;
    assert_eq!(view.get(moving), Ok(&Health(30)));

    let mut seen: Vec<Entity> = changed.iter(&world).collect();
    seen.sort();
    assert_eq!(seen, vec![plain[2], moving]);
    assert_eq!(world.get::<Health>(plain[2]), Ok(&Health(22)));
    assert!(world.get_mut::<Health>(plain[2]).unwrap().is_changed());
    assert!(!world.get_mut::<Health>(plain[3]).unwrap().is_changed());
}

fn batches_keep_change_ticks(storage: Storage) {
    let mut world = world_with(storage);
    let ids: Vec<Entity> = (0..8u32).map(|i| world.spawn((Health(i),))).collect();
    world.clear_trackers();
    world.get_mut::<Health>(ids[5]).unwrap().0 += 100;
    world.insert_batch(ids.iter().map(|&e| (e, (Player,)))).unwrap();
    for (i, &e) in ids.iter().enumerate() {
        let health = world.get_mut::<Health>(e).unwrap();
        assert_eq!(health.is_changed(), i == 5, "{e:?}");
        assert!(!health.is_added(), "{e:?}");
        assert!(world.get_mut::<Player>(e).unwrap().is_added());
    }
    world.clear_trackers();
    world.get_mut::<Health>(ids[2]).unwrap().0 += 100;
    world.remove_batch::<(Player,)>(&ids).unwrap();
    for (i, &e) in ids.iter().enumerate() {
        assert_eq!(world.get_mut::<Health>(e).unwrap().is_changed(), i == 2, "{e:?}");
    }
}

// --- Views -----------------------------------------------------------------------------------

#[test]
fn entity_ref_reads_one_entity() {
    let mut world = World::new();
    let e = world.spawn((Position(1.0, 1.0), Name("probe".into())));
    let view = world.entity(e).unwrap();
    assert_eq!(view.id(), e);
    assert_eq!(view.get::<Name>(), Some(&Name("probe".into())));
    assert_eq!(view.get::<Health>(), None);
    assert!(view.has::<Position>() && !view.has::<Health>());
    assert_eq!(
        sorted_names(view.component_names()),
        sorted_names([type_name::<Position>(), type_name::<Name>()].into_iter())
    );
    assert_eq!(view.archetype().len(), 1);
    let debug = format!("{view:?}");
    assert!(
        debug.contains(&format!("{e:?}")) && debug.contains("Name"),
        "{debug}"
    );
}

#[test]
fn entity_mut_writes_and_reshapes_one_entity() {
    let mut world = World::new();
    let e = world.spawn((Health(10),));
    let mut view = world.entity_mut(e).unwrap();
    assert_eq!(view.id(), e);
    view.get_mut::<Health>().unwrap().0 -= 4;
    assert!(view.get_mut::<Velocity>().is_none());
    view.insert((Velocity(0.0, 1.0),)).insert((Player,));
    assert!(view.has::<Velocity>() && view.has::<Player>());
    assert_eq!(view.get::<Health>(), Some(&Health(6)));
    assert_eq!(view.remove::<(Velocity,)>(), Ok((Velocity(0.0, 1.0),)));
    assert!(
        matches!(view.remove::<(Velocity,)>(), Err(EntityError::MissingComponent { entity, .. }) if entity == e)
    );
    assert_eq!(view.world().len(), 1);
    view.despawn();
    assert!(!world.contains(e));
    assert!(world.is_empty());
}

// --- Introspection ---------------------------------------------------------------------------

#[test]
fn archetypes_report_component_names_and_counts() {
    let mut world = World::new();
    assert_eq!(world.archetypes().len(), 1, "the empty archetype always exists");
    assert_eq!(world.archetypes().next().unwrap().id(), ArchetypeId::EMPTY);

    for i in 0..3 {
        world.spawn((Position(0.0, 0.0), Velocity(i as f32, 0.0)));
    }
    let lone = world.spawn((Position(0.0, 0.0),));
    world.spawn((Name("x".into()),));

    let mut shapes: Vec<(Vec<&str>, usize)> = world
        .archetypes()
        .filter(|a| !a.is_empty())
        .map(|a| (sorted_names(a.component_names()), a.len()))
        .collect();
    shapes.sort();
    let mut expected = vec![
        (
            sorted_names([type_name::<Position>(), type_name::<Velocity>()].into_iter()),
            3,
        ),
        (vec![type_name::<Position>()], 1),
        (vec![type_name::<Name>()], 1),
    ];
    expected.sort();
    assert_eq!(shapes, expected);

    // Emptying an archetype keeps it (its cached edges stay useful).
    let before = world.archetypes().len();
    world.despawn(lone).unwrap();
    assert_eq!(world.archetypes().len(), before);
    let position_only = world
        .archetypes()
        .find(|a| a.component_names().eq([type_name::<Position>()]))
        .expect("archetype kept");
    assert!(position_only.is_empty() && position_only.entities().is_empty());
    assert_eq!(
        world.archetype(position_only.id()).map(|a| a.id()),
        Some(position_only.id())
    );
}

// --- Errors ----------------------------------------------------------------------------------

#[test]
fn error_display_names_the_entity_and_component() {
    let mut world = World::new();
    let e = world.spawn((Health(1),));
    let missing = world.get::<Velocity>(e).unwrap_err().to_string();
    assert!(missing.contains(&format!("{e:?}")), "{missing}");
    assert!(missing.contains(type_name::<Velocity>()), "{missing}");

    let already = world.spawn_at(e, (Player,)).unwrap_err().to_string();
    assert!(
        already.contains(&format!("{e:?}")) && already.contains("spawn_at"),
        "{already}"
    );

    world.despawn(e).unwrap();
    let gone = world.get::<Health>(e).unwrap_err();
    let text = gone.to_string();
    assert!(
        text.contains(&format!("{e:?}")) && text.contains("does not exist"),
        "{text}"
    );
    // Usable as a boxed error, the way applications propagate it.
    let boxed: Box<dyn std::error::Error> = Box::new(gone);
    assert_eq!(boxed.to_string(), text);
}

// --- Whole-world operations ------------------------------------------------------------------

#[test]
fn clear_keeps_old_ids_dead() {
    let drops = Arc::new(AtomicUsize::new(0));
    let mut world = World::new();
    let old: Vec<Entity> = (0..5)
        .map(|_| world.spawn((Health(1), DropCounter(drops.clone()))))
        .collect();
    let reserved = world.reserve_entity();
    let archetypes = world.archetypes().len();
    world.clear();
    assert_eq!(drops.load(Ordering::SeqCst), 5);
    assert!(world.is_empty());
    assert_eq!(world.archetypes().len(), archetypes, "archetypes are kept");
    assert!(world.archetypes().all(|a| a.is_empty()));
    assert!(!world.contains(reserved), "pending reservations are cleared too");

    let new: Vec<Entity> = (0..6).map(|_| world.spawn((Health(2),))).collect();
    for &e in old.iter().chain([&reserved]) {
        assert!(!world.contains(e));
        assert_eq!(world.get::<Health>(e), Err(EntityError::NoSuchEntity(e)));
        assert!(!new.contains(&e), "{e:?} was handed out again");
    }
    assert!(new.iter().all(|&e| world.get::<Health>(e) == Ok(&Health(2))));
}

fn query_errors_name_the_query_without_module_paths(storage: Storage) {
    let mut world = world_with(storage);
    let walker = world.spawn((Position(0.0, 0.0),));
    let mut players = world.query_filtered::<(&mut Position, Option<&Health>), tabula_core::With<Player>>();
    let err = players.get_mut(&mut world, walker).unwrap_err();
    // The field keeps the full name; the message shows the short one.
    assert!(
        matches!(err, QueryError::NoMatch { query, .. } if query.contains("world_api::Position")),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        format!("query `((&mut Position, Option<&Health>), With<Player>)` does not match entity {walker:?}")
    );
    assert_eq!(
        players
            .single_mut(&mut world)
            .map(|_| ())
            .unwrap_err()
            .to_string(),
        "query `((&mut Position, Option<&Health>), With<Player>)` matched no entity; `single` needs exactly one"
    );
    world.spawn((Position(1.0, 1.0),));
    let mut positions = world.query::<&Position>();
    assert_eq!(
        positions.single(&world).unwrap_err().to_string(),
        "query `(&Position, ())` matched more than one entity; `single` needs exactly one"
    );
}
