//! Entity slots that hold their own index while placed (`UNPLACED` otherwise),
//! the reservation cursor relative to the free list, `View::get`'s hot-archetype lookup
//! (`Locations::row_in`, `ArchetypeId::ABSENT`), and `resource_scope`'s unwinding.

use std::panic::{AssertUnwindSafe, catch_unwind};

use tabula_core::{Entity, EntityError, World};

mod common;
use common::{MAX_GENERATION, forge};

#[derive(Debug, PartialEq)]
struct Pos(u64);
#[derive(Debug, PartialEq)]
struct Tag;

#[test]
fn view_rejects_every_handle_that_is_not_live() {
    let mut world = World::new();
    let es: Vec<Entity> = (0..8).map(|i| world.spawn((Pos(i),))).collect();
    let tagged = world.spawn((Pos(100), Tag));
    let bare = world.spawn(());
    world.despawn(es[3]).unwrap();
    let view = world.view::<Pos>();
    // Live ones, in the hot archetype and elsewhere.
    assert_eq!(view.get(es[0]), Ok(&Pos(0)));
    assert_eq!(view.get(tagged), Ok(&Pos(100)));
    assert!(matches!(
        view.get(bare),
        Err(EntityError::MissingComponent { .. })
    ));
    // The despawned handle, and a handle from the future of its free slot (the generation
    // the slot's next entity will get): the slot is unplaced, so neither matches.
    assert_eq!(view.get(es[3]), Err(EntityError::NoSuchEntity(es[3])));
    let future = forge(&world, es[3].index(), es[3].generation() + 1);
    assert_eq!(view.get(future), Err(EntityError::NoSuchEntity(future)));
    // Ids reserved while the view lives (through `&World`): the free slot and a fresh one,
    // neither placed until a flush.
    let reserved: Vec<Entity> = world.reserve_entities(3).collect();
    assert!(
        reserved.contains(&future),
        "the free slot is reserved first: {reserved:?}"
    );
    for &r in &reserved {
        assert_eq!(view.get(r), Err(EntityError::NoSuchEntity(r)));
        assert!(!world.contains(r));
    }
    // Index `u32::MAX` (what an unplaced slot holds), a huge index, and a wrong generation.
    for e in [
        forge(&world, u32::MAX, 1),
        forge(&world, u32::MAX, MAX_GENERATION),
        forge(&world, u32::MAX - 1, 1),
        forge(&world, es[0].index(), 2),
        forge(&world, es[0].index(), MAX_GENERATION),
    ] {
        assert_eq!(view.get(e), Err(EntityError::NoSuchEntity(e)), "{e:?}");
        assert!(!world.contains(e));
        assert_eq!(world.get::<Pos>(e), Err(EntityError::NoSuchEntity(e)));
    }
    drop(view);
    world.flush();
    for &r in &reserved {
        assert!(world.contains(r));
        assert!(matches!(
            world.view::<Pos>().get(r),
            Err(EntityError::MissingComponent { .. })
        ));
    }
    // A view of a type no archetype has: the hot archetype is `ABSENT`.
    let none = world.view::<Tag>();
    assert_eq!(none.get(tagged), Ok(&Tag));
    assert!(matches!(
        none.get(es[0]),
        Err(EntityError::MissingComponent { .. })
    ));
    #[derive(Debug)]
    struct Never;
    let absent = world.view::<Never>();
    for e in es
        .iter()
        .copied()
        .chain([bare, tagged])
        .chain(reserved.iter().copied())
    {
        assert!(absent.get(e).is_err());
    }
}

#[test]
fn reservations_across_flushes_despawns_and_clear() {
    let mut world = World::new();
    let mut live: Vec<Entity> = (0..10).map(|i| world.spawn((Pos(i),))).collect();
    for round in 0..6u64 {
        // Free a few, reserve more than the free list holds, in singles and batches.
        for _ in 0..3 {
            let e = live.remove((round as usize * 7) % live.len());
            world.despawn(e).unwrap();
            assert!(!world.contains(e));
        }
        let mut reserved: Vec<Entity> = vec![world.reserve_entity()];
        reserved.extend(world.reserve_entities(4));
        reserved.push(world.reserve_entity());
        reserved.extend(world.reserve_entities(0));
        let mut all: Vec<Entity> = reserved.iter().copied().chain(live.iter().copied()).collect();
        all.sort();
        all.dedup();
        assert_eq!(
            all.len(),
            reserved.len() + live.len(),
            "reserved ids are distinct and not live"
        );
        for &r in &reserved {
            assert!(!world.contains(r));
        }
        // `spawn_at` flushes, then gives the first one components.
        world.spawn_at(reserved[0], (Pos(1000 + round),)).unwrap();
        assert_eq!(world.get::<Pos>(reserved[0]), Ok(&Pos(1000 + round)));
        assert_eq!(
            world.spawn_at(reserved[0], (Tag,)),
            Err(EntityError::AlreadySpawned(reserved[0]))
        );
        for &r in &reserved[1..] {
            assert!(world.contains(r));
            world.insert(r, (Pos(7),)).unwrap();
        }
        live.extend(reserved);
        assert_eq!(world.len() as usize, live.len());
        for &e in &live {
            assert!(world.get::<Pos>(e).is_ok());
        }
    }
    let old = live.clone();
    world.clear();
    assert!(world.is_empty());
    let r = world.reserve_entity();
    let fresh = world.spawn((Pos(1),));
    assert_ne!(r, fresh);
    for e in old {
        assert!(!world.contains(e));
        assert_eq!(world.despawn(e), Err(EntityError::NoSuchEntity(e)));
    }
    assert!(world.contains(r) && world.contains(fresh));
}

#[test]
fn resource_scope_unwinds_with_ticks_and_values_in_place() {
    #[derive(Debug, PartialEq)]
    struct Score(u32);
    #[derive(Debug, PartialEq)]
    struct Other(Vec<u32>);
    let mut world = World::new();
    world.insert_resource(Score(1));
    world.insert_resource(Other(vec![1]));
    // A panic in a nested scope over another resource, after the inner scope removed and
    // re-inserted things: both resources are back, with the writes made before the panic.
    let caught = catch_unwind(AssertUnwindSafe(|| {
        world.resource_scope(|world, score: &mut Score| {
            score.0 = 2;
            world
                .resource_scope(|world, other: &mut Other| {
                    other.0.push(2);
                    assert!(world.remove_resource::<Score>().is_err());
                    assert!(world.remove_resource::<Other>().is_err());
                    world.spawn((Score(9),));
                    panic!("inner");
                })
                .unwrap()
        })
    }));
    assert!(caught.is_err());
    assert_eq!(world.resource::<Score>(), Ok(&Score(2)));
    assert_eq!(world.resource::<Other>(), Ok(&Other(vec![1, 2])));
    // A scope that inserts its own type and then panics: the one in scope is put back.
    let caught = catch_unwind(AssertUnwindSafe(|| {
        world.resource_scope(|world, score: &mut Score| {
            score.0 = 3;
            world.insert_resource(Score(99));
            panic!("after inserting");
        })
    }));
    assert!(caught.is_err());
    assert_eq!(world.resource::<Score>(), Ok(&Score(3)));
    // A scope that removes another resource and returns normally.
    world
        .resource_scope(|world, _: &mut Score| {
            assert_eq!(world.remove_resource::<Other>(), Ok(Other(vec![1, 2])));
        })
        .unwrap();
    assert!(!world.contains_resource::<Other>());
    assert_eq!(world.resource::<Score>(), Ok(&Score(3)));
}
