//! Entity disabling: queries skip entities with `Disabled` (or another disabling component)
//! unless they name it, in every query form; disabling and enabling move entities between
//! archetypes that queries built earlier see at once; access by id, views, despawn (recursive
//! too), hooks and relations still see disabled entities. (Systems, `SystemState` and
//! observers: `tabula-schedule`'s `tests/disabled.rs`.)
//!
//! The query cases run with `Pos` and `Vel` in tables and in sparse sets (see
//! [`per_storage!`]); `for_each_chunk` only for tables (chunks are table columns). Table-only:
//! `views_find_disabled_entities_by_id` (views read table columns) and
//! `despawn_hooks_and_relations_see_disabled_entities` (no query).

use std::sync::{Arc, Mutex};

use tabula::prelude::*;
use tabula::{BatchSize, QueryError, Related, View};

mod common;
use common::{Storage, per_storage};

#[derive(Debug, PartialEq, Clone, Copy)]
struct Pos(u32);
#[derive(Debug, PartialEq)]
struct Vel(u32);

/// A world with `Pos` and `Vel` stored as `storage` says.
fn world_with(storage: Storage) -> World {
    let mut world = World::new();
    if storage == Storage::Sparse {
        world.register_component::<Pos>().sparse_set();
        world.register_component::<Vel>().sparse_set();
    }
    world
}

per_storage!(
    every_query_state_form_skips_disabled_entities,
    par_for_each_skips_disabled_entities,
    queries_that_name_disabled_see_disabled_entities,
    change_filters_skip_disabled_entities,
    disabling_and_enabling_reach_queries_built_before,
    registered_disabling_components_are_skipped_too
);

/// Three entities with `Pos`: one plain, one disabled, one disabled with `Vel` too.
fn world_with_disabled(storage: Storage) -> (World, [Entity; 3]) {
    let mut world = world_with(storage);
    let live = world.spawn((Pos(1), Vel(10)));
    let off = world.spawn((Pos(2), Disabled));
    let off_moving = world.spawn((Pos(3), Vel(30), Disabled));
    (world, [live, off, off_moving])
}

fn sorted(mut v: Vec<u32>) -> Vec<u32> {
    v.sort_unstable();
    v
}

fn every_query_state_form_skips_disabled_entities(storage: Storage) {
    let (mut world, [live, off, _]) = world_with_disabled(storage);
    let mut q = world.query::<&Pos>();
    assert_eq!(sorted(q.iter(&world).map(|p| p.0).collect()), [1]);
    assert_eq!(q.count(&world), 1);
    assert!(!q.is_empty(&world));
    assert_eq!(q.single(&world).map(|p| p.0), Ok(1));
    assert_eq!(q.get(&world, live).map(|p| p.0), Ok(1));
    assert!(matches!(q.get(&world, off), Err(QueryError::NoMatch { .. })));
    assert!(q.contains(&world, live) && !q.contains(&world, off));

    let mut seen = Vec::new();
    let mut m = world.query::<&mut Pos>();
    m.for_each(&mut world, |p| seen.push(p.0));
    assert_eq!(sorted(seen), [1]);
    assert_eq!(m.iter_mut(&mut world).count(), 1);
    assert!(m.get_mut(&mut world, off).is_err());
    assert!(m.get_many_mut(&mut world, [live, off]).is_err());
    assert_eq!(m.single_mut(&mut world).map(|p| p.0), Ok(1));
    if storage == Storage::Table {
        // Chunks are table columns: a query with a sparse term has none.
        let mut rows = 0;
        m.for_each_chunk(&mut world, |chunk| rows += chunk.len());
        assert_eq!(rows, 1);
    }
    // Read-only forms of a mutable query: the same matches.
    assert_eq!(sorted(m.iter(&world).map(|p| p.0).collect()), [1]);
}

fn par_for_each_skips_disabled_entities(storage: Storage) {
    let (mut world, _) = world_with_disabled(storage);
    for batch in [BatchSize::Automatic, BatchSize::Fixed(1)] {
        let total = Arc::new(Mutex::new(Vec::new()));
        let mut par = world.query::<&mut Pos>();
        par.set_batch_size(batch);
        let sink = Arc::clone(&total);
        par.par_for_each(&mut world, move |p| sink.lock().unwrap().push(p.0));
        assert_eq!(sorted(total.lock().unwrap().clone()), [1], "{batch:?}");
    }
}

fn queries_that_name_disabled_see_disabled_entities(storage: Storage) {
    let (mut world, _) = world_with_disabled(storage);
    let mut allow = world.query_filtered::<&Pos, Allow<Disabled>>();
    assert_eq!(sorted(allow.iter(&world).map(|p| p.0).collect()), [1, 2, 3]);
    let mut with = world.query_filtered::<&Pos, With<Disabled>>();
    assert_eq!(sorted(with.iter(&world).map(|p| p.0).collect()), [2, 3]);
    let mut has = world.query::<(&Pos, Has<Disabled>)>();
    let mut flags: Vec<(u32, bool)> = has.iter(&world).map(|(p, d)| (p.0, d)).collect();
    flags.sort_unstable();
    assert_eq!(flags, [(1, false), (2, true), (3, true)]);
    let mut option = world.query::<(&Pos, Option<&Disabled>)>();
    assert_eq!(option.iter(&world).count(), 3);
    let mut read = world.query::<(&Pos, &Disabled)>();
    assert_eq!(read.iter(&world).count(), 2);
    // Naming it inside an `Or` counts too.
    let mut either = world.query_filtered::<&Pos, Or<(With<Vel>, With<Disabled>)>>();
    assert_eq!(sorted(either.iter(&world).map(|p| p.0).collect()), [1, 2, 3]);
    // `Without<Disabled>` names it and excludes it: the same as the default.
    let mut without = world.query_filtered::<&Pos, Without<Disabled>>();
    assert_eq!(sorted(without.iter(&world).map(|p| p.0).collect()), [1]);
    // Other filters do not lift the default.
    let mut vel = world.query_filtered::<&Pos, With<Vel>>();
    assert_eq!(sorted(vel.iter(&world).map(|p| p.0).collect()), [1]);
    let mut allowed_vel = world.query_filtered::<&Pos, (With<Vel>, Allow<Disabled>)>();
    assert_eq!(sorted(allowed_vel.iter(&world).map(|p| p.0).collect()), [1, 3]);
    let mut seen = Vec::new();
    let mut allow_mut = world.query_filtered::<&mut Pos, Allow<Disabled>>();
    allow_mut.for_each(&mut world, |p| seen.push(p.0));
    assert_eq!(sorted(seen), [1, 2, 3]);
}

fn change_filters_skip_disabled_entities(storage: Storage) {
    let (mut world, [live, off, _]) = world_with_disabled(storage);
    let mut changed = world.query_filtered::<Entity, Changed<Pos>>();
    let mut added = world.query_filtered::<Entity, Added<Pos>>();
    assert_eq!(changed.iter(&world).collect::<Vec<_>>(), [live]);
    assert_eq!(added.iter(&world).collect::<Vec<_>>(), [live]);
    world.get_mut::<Pos>(off).unwrap().0 += 1;
    world.get_mut::<Pos>(live).unwrap().0 += 1;
    assert_eq!(changed.iter(&world).collect::<Vec<_>>(), [live]);
    let mut allowed = world.query_filtered::<Entity, (Changed<Pos>, Allow<Disabled>)>();
    assert_eq!(allowed.iter(&world).count(), 3, "first run: every row is new");
    world.get_mut::<Pos>(off).unwrap().0 += 1;
    assert_eq!(allowed.iter(&world).collect::<Vec<_>>(), [off]);
}

fn disabling_and_enabling_reach_queries_built_before(storage: Storage) {
    let mut world = world_with(storage);
    let a = world.spawn((Pos(1),));
    let b = world.spawn((Pos(2),));
    let mut q = world.query::<Entity>();
    let mut positions = world.query::<&mut Pos>();
    let mut pool = world.query_filtered::<Entity, With<Disabled>>();
    assert_eq!(q.iter(&world).count(), 2);
    // Warm the run plan, so that a stale one would show.
    positions.for_each(&mut world, |_| {});
    positions.for_each(&mut world, |_| {});

    world.insert(a, (Disabled,)).unwrap();
    assert_eq!(q.iter(&world).collect::<Vec<_>>(), [b]);
    let mut n = 0;
    positions.for_each(&mut world, |_| n += 1);
    assert_eq!(n, 1);
    assert_eq!(pool.iter(&world).collect::<Vec<_>>(), [a]);
    // Still there by id.
    assert_eq!(world.get::<Pos>(a), Ok(&Pos(1)));
    assert!(world.entity(a).unwrap().has::<Disabled>());

    world.remove::<(Disabled,)>(a).unwrap();
    let mut both = q.iter(&world).collect::<Vec<_>>();
    both.sort();
    assert_eq!(both, [a, b]);
    let mut n = 0;
    positions.for_each(&mut world, |_| n += 1);
    assert_eq!(n, 2);
    assert_eq!(pool.iter(&world).count(), 0);
}

#[test]
fn views_find_disabled_entities_by_id() {
    let (world, [live, off, off_moving]) = world_with_disabled(Storage::Table);
    let view: View<'_, Pos> = world.view::<Pos>();
    assert_eq!(view.get(off).copied(), Ok(Pos(2)));
    assert_eq!(view.get(live).copied(), Ok(Pos(1)));
    let multi = world.multi_view::<(&Pos, &Vel)>();
    assert_eq!(multi.get(off_moving).map(|(p, v)| (p.0, v.0)), Ok((3, 30)));
}

fn registered_disabling_components_are_skipped_too(storage: Storage) {
    struct Prefab;
    let mut world = world_with(storage);
    // An archetype with `Prefab` exists before `Prefab` becomes disabling.
    let early = world.spawn((Pos(1), Prefab));
    let plain = world.spawn((Pos(2),));
    let mut before = world.query::<Entity>();
    let id = world.register_disabling_component::<Prefab>();
    assert_eq!(
        world.register_disabling_component::<Prefab>(),
        id,
        "twice is once"
    );
    let late = world.spawn((Pos(3), Prefab, Vel(0)));
    let mut after = world.query::<Entity>();
    assert_eq!(after.iter(&world).collect::<Vec<_>>(), [plain]);
    let mut allowed = world.query_filtered::<Entity, Allow<Prefab>>();
    assert_eq!(allowed.iter(&world).count(), 3);
    // `Disabled` still applies beside it, and each is lifted on its own.
    let both = world.spawn((Prefab, Disabled));
    assert!(
        !world
            .query_filtered::<Entity, Allow<Prefab>>()
            .contains(&world, both)
    );
    let mut everything = world.query_filtered::<Entity, (Allow<Prefab>, Allow<Disabled>)>();
    assert!(everything.contains(&world, both));
    // A query built before the registration keeps seeing `Prefab` entities.
    let mut seen = before.iter(&world).collect::<Vec<_>>();
    seen.sort();
    assert_eq!(seen, [early, plain, late]);
}

#[test]
fn despawn_hooks_and_relations_see_disabled_entities() {
    struct Hooked;
    struct Likes;
    impl Relation for Likes {}

    let log = Arc::new(Mutex::new(Vec::new()));
    let mut world = World::new();
    let (add, despawn) = (Arc::clone(&log), Arc::clone(&log));
    world
        .register_component::<Hooked>()
        .on_add(move |_, ctx| add.lock().unwrap().push(("add", ctx.entity)))
        .on_despawn(move |_, ctx| despawn.lock().unwrap().push(("despawn", ctx.entity)));

    // Hooks fire for disabled entities.
    let e = world.spawn((Hooked, Disabled));
    world.despawn(e).unwrap();
    assert_eq!(*log.lock().unwrap(), [("add", e), ("despawn", e)]);

    // Recursive despawn of a disabled parent reaches its children, disabled or not.
    let parent = world.spawn((Pos(0), Disabled));
    let child = world.spawn((Pos(1),));
    let off_child = world.spawn((Pos(2), Disabled));
    world.set_parent(child, parent).unwrap();
    world.set_parent(off_child, parent).unwrap();
    assert_eq!(world.children(parent), Ok(&[child, off_child][..]));
    world.despawn_recursive(parent).unwrap();
    for e in [parent, child, off_child] {
        assert!(!world.contains(e), "{e:?}");
    }
    // Recursive despawn of a parent reaches a disabled child.
    let parent = world.spawn((Pos(0),));
    let off_child = world.spawn((Pos(2), Disabled));
    world.set_parent(off_child, parent).unwrap();
    world.despawn_recursive(parent).unwrap();
    assert!(!world.contains(off_child));

    // Relations link and clean up disabled entities.
    let a = world.spawn((Disabled,));
    let b = world.spawn(());
    world.relate::<Likes>(a, b).unwrap();
    assert_eq!(world.targets::<Likes>(a), [b]);
    assert!(world.has::<Related<Likes>>(a));
    world.despawn(b).unwrap();
    assert!(world.targets::<Likes>(a).is_empty());
}
