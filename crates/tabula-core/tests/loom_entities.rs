//! Loom model checks of the entity reservation protocol.
//!
//! `World::reserve_entity` / `reserve_entities` take `&self` and may run on many threads at
//! once; each is one `fetch_sub` on the allocator's cursor (see
//! `src/entity/allocator.rs`). These models share one world between threads, let them reserve
//! concurrently against a pre-populated free list, then take the world back, `flush` it and
//! check that in every interleaving loom explores:
//!
//! * every reserved id is distinct from every other reserved id;
//! * after the flush every reserved id is alive, and none collides with an entity that was
//!   already alive or with a stale (despawned) handle;
//! * the free list is used up before fresh slots are handed out.
//!
//! The lane models go past fresh lanes: a layout after a resize (a lane past its block, into
//! the striped overflow), holes an earlier flush returned to the free list, a lane released
//! on one thread while others reserve (and then reused), and a flush whose only
//! happens-before edge to the reservations is the release of the last `Arc` (no join).
//!
//! Run with `RUSTFLAGS="--cfg loom" cargo test -p tabula-core --release --test loom_entities`.
//! Under `--cfg loom` the crate's atomics are loom's, which only work inside `loom::model`, so
//! this is the only kind of test that runs in that configuration.
#![cfg(loom)]

use std::collections::HashSet;

use loom::sync::Arc;
use loom::thread;
use tabula_core::{Entity, World};

/// A world with `live` entities alive and `freed` more spawned then despawned, so that the
/// free list holds `freed` slots. Returns the world, the live handles and the stale ones.
fn populated(live: usize, freed: usize) -> (World, Vec<Entity>, Vec<Entity>) {
    // One tag for every world built here, so that two built alike hand out equal ids.
    let mut world = World::with_tag(0);
    let all: Vec<Entity> = (0..live + freed).map(|i| world.spawn((i as u32,))).collect();
    let (alive, stale) = all.split_at(live);
    for &entity in stale {
        world.despawn(entity).expect("freshly spawned entity despawns");
    }
    (world, alive.to_vec(), stale.to_vec())
}

/// Takes the world back after the threads joined, flushes it, and checks the reservations.
/// `slots_before` is how many slots existed and `free_slots` how many of them were free when
/// the reservations started.
fn check(
    world: Arc<World>,
    reserved: Vec<Entity>,
    alive: &[Entity],
    stale: &[Entity],
    slots_before: u32,
    free_slots: usize,
) {
    let mut world = Arc::try_unwrap(world).expect("every thread has joined");
    let distinct: HashSet<Entity> = reserved.iter().copied().collect();
    assert_eq!(
        distinct.len(),
        reserved.len(),
        "reserved ids are distinct: {reserved:?}"
    );
    for &entity in &reserved {
        assert!(
            !world.contains(entity),
            "{entity:?} is not alive before the flush"
        );
        assert!(!alive.contains(&entity), "{entity:?} collides with a live entity");
        assert!(!stale.contains(&entity), "{entity:?} reuses a stale handle");
    }

    // The free list is claimed first: every freed slot is reused before any fresh index.
    let reused = reserved.iter().filter(|e| e.index() < slots_before).count();
    assert_eq!(
        reused,
        free_slots.min(reserved.len()),
        "free list used first: {reserved:?}"
    );
    for entity in reserved.iter().filter(|e| e.index() >= slots_before) {
        assert_eq!(
            entity.generation(),
            1,
            "fresh slot {entity:?} starts at generation 1"
        );
    }

    world.flush();
    assert_eq!(world.len() as usize, alive.len() + reserved.len());
    for &entity in &reserved {
        assert!(world.contains(entity), "{entity:?} is alive after the flush");
        assert_eq!(world.entity(entity).map(|e| e.component_names().count()), Ok(0));
    }
    for &entity in alive {
        assert!(world.contains(entity), "{entity:?} stays alive");
    }
    for &entity in stale {
        assert!(!world.contains(entity), "stale {entity:?} stays dead");
    }

    // The reserved entities are ordinary entities now: they take components and despawn.
    for (i, &entity) in reserved.iter().enumerate() {
        world
            .spawn_at(entity, (i as u64,))
            .expect("reserved entity is empty");
        assert_eq!(world.get::<u64>(entity), Ok(&(i as u64)));
    }
    for &entity in &reserved {
        world.despawn(entity).expect("reserved entity despawns");
    }
    assert_eq!(world.len() as usize, alive.len());
}

#[test]
fn two_threads_reserve_one_each_across_free_list_and_fresh_slots() {
    loom::model(|| {
        // One free slot: one thread gets it, the other a fresh index, in either order.
        let (world, alive, stale) = populated(2, 1);
        let world = Arc::new(world);
        let other = {
            let world = Arc::clone(&world);
            thread::spawn(move || world.reserve_entity())
        };
        let mine = world.reserve_entity();
        let theirs = other.join().unwrap();
        check(world, vec![mine, theirs], &alive, &stale, 3, 1);
    });
}

#[test]
fn batch_and_single_reservations_race() {
    loom::model(|| {
        // Two free slots, three reservations: a batch of two races a single one.
        let (world, alive, stale) = populated(1, 2);
        let world = Arc::new(world);
        let batch = {
            let world = Arc::clone(&world);
            thread::spawn(move || world.reserve_entities(2).collect::<Vec<_>>())
        };
        let single = {
            let world = Arc::clone(&world);
            thread::spawn(move || world.reserve_entity())
        };
        let mut reserved = batch.join().unwrap();
        assert_eq!(reserved.len(), 2);
        reserved.push(single.join().unwrap());
        check(world, reserved, &alive, &stale, 3, 2);
    });
}

#[test]
fn two_batches_race_past_the_end_of_the_free_list() {
    loom::model(|| {
        // One free slot, two batches of two: three of the four ids are fresh indices.
        let (world, alive, stale) = populated(1, 1);
        let world = Arc::new(world);
        let other = {
            let world = Arc::clone(&world);
            thread::spawn(move || world.reserve_entities(2).collect::<Vec<_>>())
        };
        let mut reserved: Vec<_> = world.reserve_entities(2).collect();
        reserved.extend(other.join().unwrap());
        check(world, reserved, &alive, &stale, 2, 1);
    });
}

#[test]
fn reservations_after_a_flush_start_from_the_new_state() {
    loom::model(|| {
        // Reserve concurrently, flush, despawn one of the new entities, reserve again: the
        // cursor reset by the flush must hand out the newly freed slot, not an old claim.
        let (world, alive, stale) = populated(1, 1);
        let world = Arc::new(world);
        let other = {
            let world = Arc::clone(&world);
            thread::spawn(move || world.reserve_entity())
        };
        let first = world.reserve_entity();
        let second = other.join().unwrap();
        let mut world = Arc::try_unwrap(world).expect("every thread has joined");
        world.flush();
        world.despawn(first).expect("flushed reservation despawns");

        let world = Arc::new(world);
        let other = {
            let world = Arc::clone(&world);
            thread::spawn(move || world.reserve_entity())
        };
        let third = world.reserve_entity();
        let fourth = other.join().unwrap();
        let reserved = [third, fourth];
        assert!(
            reserved
                .iter()
                .any(|e| e.index() == first.index() && e.generation() == first.generation() + 1),
            "the freed slot is reused with a bumped generation: {reserved:?}"
        );
        let mut alive = alive;
        alive.push(second);
        let mut stale = stale;
        stale.push(first);
        check(world, reserved.to_vec(), &alive, &stale, 3, 1);
    });
}

/// Reserves `a` ids in lane `la`, `b` in lane `lb` and one in the shared lane, each from its
/// own thread when `threaded`, in order otherwise; returns the three lists of ids.
fn reserve_in_lanes(world: World, a: usize, b: usize, threaded: bool) -> (World, [Vec<Entity>; 3]) {
    use tabula_core::{CommandQueue, Commands, EntityLane};
    fn lane_ids(world: &World, lane: EntityLane, n: usize) -> Vec<Entity> {
        let mut queue = CommandQueue::new();
        let mut commands = Commands::new_in_lane(&mut queue, world, &lane);
        (0..n).map(|_| commands.spawn_empty().id()).collect()
    }
    let mut world = world;
    let (la, lb) = (world.add_entity_lane(), world.add_entity_lane());
    let world = Arc::new(world);
    let ids = if threaded {
        let first = {
            let world = Arc::clone(&world);
            thread::spawn(move || lane_ids(&world, la, a))
        };
        let second = {
            let world = Arc::clone(&world);
            thread::spawn(move || lane_ids(&world, lb, b))
        };
        let shared = vec![world.reserve_entity()];
        [first.join().unwrap(), second.join().unwrap(), shared]
    } else {
        [
            lane_ids(&world, la, a),
            lane_ids(&world, lb, b),
            vec![world.reserve_entity()],
        ]
    };
    (Arc::try_unwrap(world).expect("every thread has joined"), ids)
}

#[test]
fn lanes_hand_out_the_same_ids_whatever_the_interleaving() {
    loom::model(|| {
        // Two free slots, four reservations in three lanes: free slots and fresh indices mix.
        let (reference, _, _) = populated(1, 2);
        let (_, expected) = reserve_in_lanes(reference, 2, 1, false);
        let (world, alive, stale) = populated(1, 2);
        let (mut world, ids) = reserve_in_lanes(world, 2, 1, true);
        assert_eq!(
            ids[..2],
            expected[..2],
            "each lane's ids depend on that lane alone"
        );
        let all: Vec<Entity> = ids.iter().flatten().copied().collect();
        let distinct: HashSet<Entity> = all.iter().copied().collect();
        assert_eq!(distinct.len(), all.len(), "reserved ids are distinct: {all:?}");
        for entity in &all {
            assert!(
                !world.contains(*entity),
                "{entity:?} is not alive before the flush"
            );
            assert!(
                !alive.contains(entity) && !stale.contains(entity),
                "{entity:?} collides"
            );
        }
        world.flush();
        for entity in &all {
            assert!(world.contains(*entity), "{entity:?} is alive after the flush");
        }
        assert_eq!(world.len() as usize, alive.len() + all.len());
    });
}

/// Lane ids reserved through `Commands`, as a system's are.
fn ids_in(world: &World, lane: &tabula_core::EntityLane, n: usize) -> Vec<Entity> {
    let mut queue = tabula_core::CommandQueue::new();
    let mut commands = tabula_core::Commands::new_in_lane(&mut queue, world, lane);
    (0..n).map(|_| commands.spawn_empty().id()).collect()
}

/// A world with two lanes whose blocks an earlier round sized: lane A reserved 3 and lane B
/// 1 (a 4-entity table with two freed slots before it), then B's block was re-laid again
/// after a round where B reserved nothing while its owner ran. Its free list holds the
/// holes that earlier round's striped overflow left.
fn resized() -> (World, [tabula_core::EntityLane; 2]) {
    let (mut world, _, _) = populated(2, 2);
    let lanes = [world.add_entity_lane(), world.add_entity_lane()];
    // Round 1: A past its (empty) block, into the overflow striped by lane; B one id.
    ids_in(&world, &lanes[0], 3);
    ids_in(&world, &lanes[1], 1);
    world.flush();
    // Round 2: B's owner runs and reserves nothing (its block halves), A reserves one.
    ids_in(&world, &lanes[1], 0);
    ids_in(&world, &lanes[0], 1);
    world.flush();
    (world, lanes)
}

/// Checks ids reserved on threads against the same reservations made in order, and that the
/// flush makes each of them, once.
fn same_as_serial(mut world: World, threaded: [Vec<Entity>; 2], serial: [Vec<Entity>; 2]) {
    assert_eq!(threaded, serial, "each lane's ids depend on that lane alone");
    let all: Vec<Entity> = threaded.iter().flatten().copied().collect();
    let distinct: HashSet<Entity> = all.iter().copied().collect();
    assert_eq!(distinct.len(), all.len(), "reserved ids are distinct: {all:?}");
    let before = world.len() as usize;
    for entity in &all {
        assert!(
            !world.contains(*entity),
            "{entity:?} is not alive before the flush"
        );
    }
    world.flush();
    for entity in &all {
        assert!(world.contains(*entity), "{entity:?} is alive after the flush");
    }
    assert_eq!(world.len() as usize, before + all.len());
}

#[test]
fn lanes_after_a_resize_and_over_returned_holes_stay_independent() {
    loom::model(|| {
        // A reserves past its block (into the overflow), B inside and past its own.
        let (reference, ref_lanes) = resized();
        let serial = [
            ids_in(&reference, &ref_lanes[0], 2),
            ids_in(&reference, &ref_lanes[1], 2),
        ];
        let (world, [a, b]) = resized();
        let world = Arc::new(world);
        let other = {
            let world = Arc::clone(&world);
            thread::spawn(move || ids_in(&world, &b, 2))
        };
        let mine = ids_in(&world, &a, 2);
        let theirs = other.join().unwrap();
        same_as_serial(Arc::try_unwrap(world).expect("joined"), [mine, theirs], serial);
    });
}

#[test]
fn a_lane_released_while_others_reserve_is_taken_back_and_reused() {
    loom::model(|| {
        let (world, alive, _) = populated(1, 1);
        let mut world = world;
        let (a, b) = (world.add_entity_lane(), world.add_entity_lane());
        let released = b.index();
        let world = Arc::new(world);
        // One thread reserves in A while another reserves in B and then drops B.
        let reserving = {
            let world = Arc::clone(&world);
            // The lane comes back with the ids: it stays owned.
            thread::spawn(move || (ids_in(&world, &a, 2), a))
        };
        let releasing = {
            let world = Arc::clone(&world);
            thread::spawn(move || {
                let ids = ids_in(&world, &b, 1);
                drop(b);
                ids
            })
        };
        let shared = world.reserve_entity();
        let (mut all, _kept) = reserving.join().unwrap();
        all.extend(releasing.join().unwrap());
        all.push(shared);
        let mut world = Arc::try_unwrap(world).expect("joined");
        let distinct: HashSet<Entity> = all.iter().copied().collect();
        assert_eq!(distinct.len(), all.len(), "{all:?}");
        world.flush();
        assert!(
            all.iter().all(|&e| world.contains(e)),
            "the released lane's ids were made too"
        );
        assert_eq!(world.len() as usize, alive.len() + all.len());
        // The released lane comes back for the next owner; no lane is added.
        let lanes = world.entity_lane_count();
        let again = world.add_entity_lane();
        assert_eq!(again.index(), released);
        assert_eq!(world.entity_lane_count(), lanes);
        let next = ids_in(&world, &again, 1);
        world.flush();
        assert!(world.contains(next[0]) && !all.contains(&next[0]));
    });
}

#[test]
fn a_flush_after_the_last_arc_is_released_sees_every_reservation() {
    loom::model(|| {
        // No join: the reserving thread's relaxed counter update reaches the flush only
        // through the `Arc`'s release (drop) and acquire (`try_unwrap` succeeding).
        let (mut world, _, _) = populated(1, 1);
        let lane = world.add_entity_lane();
        let world = Arc::new(world);
        let ids = Arc::new(loom::sync::Mutex::new(Vec::new()));
        {
            let (world, ids) = (Arc::clone(&world), Arc::clone(&ids));
            thread::spawn(move || {
                let reserved = ids_in(&world, &lane, 2);
                *ids.lock().unwrap() = reserved;
                drop(world);
            });
        }
        let mut world = world;
        let mut world = loop {
            match Arc::try_unwrap(world) {
                Ok(world) => break world,
                Err(shared) => {
                    world = shared;
                    thread::yield_now();
                }
            }
        };
        world.flush();
        let ids = ids.lock().unwrap().clone();
        assert_eq!(ids.len(), 2);
        assert!(
            ids.iter().all(|&e| world.contains(e)),
            "{ids:?} made by the flush"
        );
    });
}
