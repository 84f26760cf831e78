//! `DynamicQuery` over components stored in tables and in sparse sets: every term (read,
//! write, optional, with, without, added, changed) gives the same entities and values with
//! the component in either storage, as the typed query over the same world does. Small
//! worlds, so that Miri runs the file in seconds over the by-id fetches' unsafe code.

mod common;

use common::{Storage, per_storage};
use tabula_core::{Added, Changed, ComponentId, DynamicQuery, Entity, World};

#[derive(Clone, Copy, Debug, PartialEq)]
struct Pos(u32);
#[derive(Clone, Copy, Debug, PartialEq)]
struct Mark(u32);
#[derive(Clone, Copy, Debug, PartialEq)]
struct Other;

/// A world with `Mark` stored as `storage` says, and its ids of `Pos` and `Mark`: entities
/// 0..6 have `Pos(i)`, the even ones `Mark(10 * i)`, entity 3 `Other`.
fn world_with(storage: Storage) -> (World, Vec<Entity>, ComponentId, ComponentId) {
    let mut world = World::new();
    let pos = world.register_component::<Pos>().id();
    let mut mark = world.register_component::<Mark>();
    if storage == Storage::Sparse {
        mark = mark.sparse_set();
    }
    let mark = mark.id();
    let entities = (0..6)
        .map(|i| {
            let e = world.spawn((Pos(i),));
            if i % 2 == 0 {
                world.insert_one(e, Mark(10 * i)).unwrap();
            }
            if i == 3 {
                world.insert_one(e, Other).unwrap();
            }
            e
        })
        .collect();
    (world, entities, pos, mark)
}

/// The entities a dynamic query visits, in its order, sorted (storages visit in different
/// orders).
fn visited(query: &mut DynamicQuery, world: &World) -> Vec<Entity> {
    let mut seen: Vec<Entity> = query.iter(world).map(|item| item.entity()).collect();
    seen.sort();
    seen
}

fn reads_and_filters_match_the_typed_query(storage: Storage) {
    let (mut world, e, pos, mark) = world_with(storage);
    let evens = vec![e[0], e[2], e[4]];
    let odds = vec![e[1], e[3], e[5]];

    let mut read = DynamicQuery::builder(&mut world).read(mark).build().unwrap();
    let mark_of = |item: &tabula_core::DynamicItem<'_>| {
        let ptr = item.get(mark)?;
        // SAFETY: `mark` is the `Mark` component.
        Some(unsafe { ptr.deref::<Mark>().0 })
    };
    let mut values: Vec<(Entity, u32)> = (read.iter(&world))
        .map(|item| (item.entity(), mark_of(&item).unwrap()))
        .collect();
    values.sort();
    assert_eq!(values, [(e[0], 0), (e[2], 20), (e[4], 40)], "{storage:?}");

    let mut with = DynamicQuery::builder(&mut world)
        .read(pos)
        .with(mark)
        .build()
        .unwrap();
    assert_eq!(visited(&mut with, &world), evens, "{storage:?}");
    let mut without = DynamicQuery::builder(&mut world)
        .read(pos)
        .without(mark)
        .build()
        .unwrap();
    assert_eq!(visited(&mut without, &world), odds, "{storage:?}");

    let mut optional = DynamicQuery::builder(&mut world)
        .read(pos)
        .optional(mark)
        .build()
        .unwrap();
    let mut seen: Vec<(Entity, Option<u32>)> = (optional.iter(&world))
        .map(|item| (item.entity(), mark_of(&item)))
        .collect();
    seen.sort();
    let expected: Vec<(Entity, Option<u32>)> = (0..6)
        .map(|i| (e[i], (i % 2 == 0).then_some(10 * i as u32)))
        .collect();
    assert_eq!(seen, expected, "{storage:?}");

    // The typed query agrees.
    let mut typed: Vec<Entity> = (world.query::<(Entity, &Pos, &Mark)>().iter(&world))
        .map(|(entity, ..)| entity)
        .collect();
    typed.sort();
    assert_eq!(typed, evens, "{storage:?}");
}

fn writes_mark_changes_that_changed_and_typed_queries_see(storage: Storage) {
    let (mut world, e, pos, mark) = world_with(storage);
    let mut added = DynamicQuery::builder(&mut world).added(mark).build().unwrap();
    let mut changed = DynamicQuery::builder(&mut world)
        .read(pos)
        .changed(mark)
        .build()
        .unwrap();
    let mut typed_changed = world.query_filtered::<Entity, Changed<Mark>>();
    // First runs see every row that has `Mark`.
    assert_eq!(visited(&mut added, &world), [e[0], e[2], e[4]], "{storage:?}");
    assert_eq!(visited(&mut changed, &world), [e[0], e[2], e[4]], "{storage:?}");
    assert_eq!(typed_changed.iter(&world).count(), 3, "{storage:?}");

    let mut write = DynamicQuery::builder(&mut world)
        .write(mark)
        .read(pos)
        .build()
        .unwrap();
    write.for_each(&mut world, |mut item| {
        // SAFETY: `pos` is `Pos`, `mark` is `Mark`.
        let p = unsafe { item.get(pos).unwrap().deref::<Pos>().0 };
        if p == 2 {
            let mut value = item.get_mut(mark).unwrap();
            // SAFETY: `mark` is `Mark`.
            unsafe { value.as_mut().deref_mut::<Mark>().0 += 1 };
        }
    });
    assert_eq!(world.get::<Mark>(e[2]), Ok(&Mark(21)), "{storage:?}");
    assert_eq!(visited(&mut changed, &world), [e[2]], "{storage:?}");
    assert_eq!(
        typed_changed.iter(&world).collect::<Vec<_>>(),
        [e[2]],
        "{storage:?}"
    );
    assert_eq!(visited(&mut added, &world), [], "{storage:?}");

    // A new `Mark` is added and changed, for both kinds of query.
    world.insert_one(e[1], Mark(1)).unwrap();
    assert_eq!(visited(&mut added, &world), [e[1]], "{storage:?}");
    assert_eq!(visited(&mut changed, &world), [e[1]], "{storage:?}");
    let mut typed_added = world.query_filtered::<Entity, Added<Mark>>();
    assert_eq!(typed_added.iter(&world).count(), 4, "{storage:?}"); // its first run
}

fn later_inserts_and_removals_are_seen(storage: Storage) {
    let (mut world, e, pos, mark) = world_with(storage);
    let mut with = DynamicQuery::builder(&mut world)
        .read(pos)
        .read(mark)
        .build()
        .unwrap();
    assert_eq!(visited(&mut with, &world), [e[0], e[2], e[4]], "{storage:?}");
    world.remove_one::<Mark>(e[0]).unwrap();
    world.insert_one(e[5], Mark(50)).unwrap();
    // A new archetype (table storage) or only a new set row (sparse).
    let late = world.spawn((Pos(9), Mark(90), Other));
    world.despawn(e[4]).unwrap();
    assert_eq!(visited(&mut with, &world), [e[2], e[5], late], "{storage:?}");
}

per_storage!(
    reads_and_filters_match_the_typed_query,
    writes_mark_changes_that_changed_and_typed_queries_see,
    later_inserts_and_removals_are_seen,
);
