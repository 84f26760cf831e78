//! Sparse-set components (`ComponentRegistration::sparse_set`): every world operation gives
//! the same results with a component stored sparse as with it in tables (each test body runs
//! for both storages), and a sparse insert or removal never moves the entity's row. Small
//! counts, so that Miri runs the file in seconds over the new storage's unsafe code (drops,
//! over-aligned values, swap-removes).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use tabula_core::{CommandQueue, Commands, Entity, EntityError, HookContext, HookWorld, World};

/// Where the component under test is stored.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Storage {
    Table,
    Sparse,
}

const BOTH: [Storage; 2] = [Storage::Table, Storage::Sparse];

/// A world with `T` stored as `storage` says.
fn world_with<T: Send + Sync + 'static>(storage: Storage) -> World {
    let mut world = World::new();
    if storage == Storage::Sparse {
        world.register_component::<T>().sparse_set();
    }
    world
}

#[derive(Debug, PartialEq, Clone, Copy)]
struct Pos(u32);
#[derive(Debug, PartialEq, Clone, Copy)]
struct Vel(u32);
#[derive(Debug, PartialEq, Clone, Copy, Default)]
struct Stunned(u32);

/// A value whose drops are counted.
#[derive(Debug)]
struct Counted(Arc<AtomicUsize>, #[allow(dead_code)] u64);

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

/// Over-aligned, with a drop.
#[repr(align(64))]
#[derive(Debug)]
struct Wide(u8, Box<u32>);

#[test]
fn insert_get_get_mut_has_remove_behave_alike() {
    for storage in BOTH {
        let mut world = world_with::<Stunned>(storage);
        let a = world.spawn((Pos(1),));
        let b = world.spawn((Pos(2), Stunned(20)));
        assert_eq!(world.get::<Stunned>(b), Ok(&Stunned(20)), "{storage:?}");
        assert!(!world.has::<Stunned>(a));
        assert!(matches!(
            world.get::<Stunned>(a),
            Err(EntityError::MissingComponent { .. })
        ));
        world.insert(a, (Stunned(10),)).unwrap();
        assert!(world.has::<Stunned>(a));
        world.get_mut::<Stunned>(a).unwrap().0 += 1;
        assert_eq!(world.get::<Stunned>(a), Ok(&Stunned(11)));
        world.insert_one(a, Stunned(12)).unwrap(); // replaces
        assert_eq!(world.get::<Stunned>(a), Ok(&Stunned(12)));
        assert_eq!(world.remove_one::<Stunned>(b), Ok(Stunned(20)));
        assert!(world.remove_one::<Stunned>(b).is_err());
        assert_eq!(
            world.get::<Stunned>(a),
            Ok(&Stunned(12)),
            "{storage:?}: a kept its value"
        );
        assert_eq!(world.get::<Pos>(a), Ok(&Pos(1)));
        assert_eq!(world.get::<Pos>(b), Ok(&Pos(2)));
        world.despawn(a).unwrap();
        assert!(!world.has::<Stunned>(a));
        assert!(world.get::<Stunned>(a).is_err());
        // A new entity in `a`'s slot does not see `a`'s old value.
        let c = world.spawn((Pos(3),));
        assert!(!world.has::<Stunned>(c), "{storage:?}");
    }
}

#[test]
fn a_sparse_insert_or_removal_never_moves_the_row() {
    let mut world = world_with::<Stunned>(Storage::Sparse);
    let entities: Vec<Entity> = (0..8).map(|i| world.spawn((Pos(i),))).collect();
    let archetypes = world.archetypes().len();
    let before: Vec<_> = entities.iter().map(|&e| world.entities().get(e)).collect();
    for &e in &entities {
        world.insert(e, (Stunned(1),)).unwrap();
    }
    for &e in entities.iter().step_by(2) {
        world.remove_one::<Stunned>(e).unwrap();
    }
    let after: Vec<_> = entities.iter().map(|&e| world.entities().get(e)).collect();
    assert_eq!(before, after, "no row moved");
    assert_eq!(world.archetypes().len(), archetypes, "no archetype made");
    for (i, &e) in entities.iter().enumerate() {
        assert_eq!(world.has::<Stunned>(e), i % 2 == 1);
    }
}

#[test]
fn mixed_bundles_spawn_insert_and_remove() {
    for storage in BOTH {
        let mut world = world_with::<Stunned>(storage);
        let e = world.spawn((Pos(1), Stunned(2), Vel(3)));
        assert_eq!(
            (world.get::<Pos>(e), world.get::<Stunned>(e), world.get::<Vel>(e)),
            (Ok(&Pos(1)), Ok(&Stunned(2)), Ok(&Vel(3))),
            "{storage:?}"
        );
        world.insert(e, (Vel(4), Stunned(5))).unwrap();
        assert_eq!(world.get::<Vel>(e), Ok(&Vel(4)));
        assert_eq!(world.get::<Stunned>(e), Ok(&Stunned(5)));
        let missing = world.remove::<(Stunned, String)>(e).unwrap_err();
        assert!(
            matches!(missing, EntityError::MissingComponent { component, .. } if component.contains("String"))
        );
        assert!(world.has::<Stunned>(e), "a failed removal removes nothing");
        assert_eq!(
            world.remove::<(Stunned, Pos)>(e),
            Ok((Stunned(5), Pos(1))),
            "{storage:?}"
        );
        assert!(!world.has::<Stunned>(e) && !world.has::<Pos>(e));
        assert_eq!(world.get::<Vel>(e), Ok(&Vel(4)));
        let f = world.try_spawn((Stunned(9),)).unwrap();
        assert_eq!(world.get::<Stunned>(f), Ok(&Stunned(9)));
    }
}

#[test]
fn values_are_dropped_once_on_every_path() {
    for storage in BOTH {
        let drops = Arc::new(AtomicUsize::new(0));
        let counted = |n| Counted(Arc::clone(&drops), n);
        let mut world = world_with::<Counted>(storage);
        let a = world.spawn((Pos(0), counted(1)));
        let b = world.spawn((counted(2),));
        let c = world.spawn((Pos(1),));
        world.insert(c, (counted(3),)).unwrap();
        world.insert(c, (counted(4), Vel(1))).unwrap(); // replaces 3
        assert_eq!(
            drops.load(Ordering::Relaxed),
            1,
            "{storage:?}: the replaced value"
        );
        let (taken,) = world.remove::<(Counted,)>(a).unwrap();
        assert_eq!(drops.load(Ordering::Relaxed), 1, "handed back, not dropped");
        drop(taken);
        world.despawn(b).unwrap();
        assert_eq!(drops.load(Ordering::Relaxed), 3);
        let d = world.spawn((counted(5),));
        world.clear();
        assert_eq!(
            drops.load(Ordering::Relaxed),
            5,
            "{storage:?}: clear drops 4 and 5"
        );
        assert!(!world.contains(d));
        world.spawn((counted(6), Pos(2)));
        drop(world);
        assert_eq!(drops.load(Ordering::Relaxed), 6, "{storage:?}: the world drops 6");
    }
}

#[test]
fn over_aligned_values_keep_their_alignment() {
    for storage in BOTH {
        let mut world = world_with::<Wide>(storage);
        let entities: Vec<Entity> = (0..5u8)
            .map(|i| world.spawn((Pos(u32::from(i)), Wide(i, Box::new(u32::from(i))))))
            .collect();
        world.remove_one::<Wide>(entities[1]).unwrap();
        world.despawn(entities[0]).unwrap();
        for &e in &entities[2..] {
            let wide = world.get::<Wide>(e).unwrap();
            assert_eq!((wide as *const Wide).addr() % 64, 0, "{storage:?}");
            assert_eq!(u32::from(wide.0), *wide.1);
        }
    }
}

#[test]
fn many_toggles_match_a_model() {
    for storage in BOTH {
        let mut world = world_with::<Stunned>(storage);
        let n = if cfg!(miri) { 12 } else { 200 };
        let entities: Vec<Entity> = (0..n).map(|i| world.spawn((Pos(i),))).collect();
        let mut model = vec![None; n as usize];
        let mut x = 12345u64;
        for step in 0..n * 6 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let i = (x >> 33) as usize % n as usize;
            let e = entities[i];
            match (x >> 20) % 3 {
                0 => {
                    world.insert(e, (Stunned(step),)).unwrap();
                    model[i] = Some(step);
                }
                1 => assert_eq!(world.remove_one::<Stunned>(e).ok(), model[i].take().map(Stunned)),
                _ => {
                    if let Ok(mut s) = world.get_mut::<Stunned>(e) {
                        s.0 += 1;
                    }
                    if let Some(v) = &mut model[i] {
                        *v += 1;
                    }
                }
            }
        }
        for (i, &e) in entities.iter().enumerate() {
            assert_eq!(
                world.get::<Stunned>(e).ok().copied(),
                model[i].map(Stunned),
                "{storage:?}"
            );
            assert_eq!(world.get::<Pos>(e), Ok(&Pos(i as u32)));
        }
    }
}

#[test]
fn change_ticks_mark_added_and_changed() {
    for storage in BOTH {
        let mut world = world_with::<Stunned>(storage);
        let e = world.spawn((Pos(0),));
        world.insert(e, (Stunned(0),)).unwrap();
        {
            let s = world.get_mut::<Stunned>(e).unwrap();
            assert!(s.is_added() && s.is_changed(), "{storage:?}");
        }
        world.clear_trackers();
        {
            let mut s = world.get_mut::<Stunned>(e).unwrap();
            assert!(!s.is_added() && !s.is_changed(), "{storage:?}");
            s.0 = 1;
        }
        world.clear_trackers();
        world.insert(e, (Stunned(2),)).unwrap();
        let s = world.get_mut::<Stunned>(e).unwrap();
        assert!(
            !s.is_added() && s.is_changed(),
            "{storage:?}: a replace changes, does not add"
        );
    }
}

#[test]
fn hooks_fire_for_sparse_components_as_for_table_ones() {
    for storage in BOTH {
        let log = Arc::new(std::sync::Mutex::new(Vec::<&'static str>::new()));
        let mut world = world_with::<Stunned>(storage);
        let hook = |name: &'static str| {
            let log = Arc::clone(&log);
            move |world: &mut HookWorld, ctx: HookContext| {
                let present = world.has::<Stunned>(ctx.entity);
                log.lock().unwrap().push(if present { name } else { "absent" });
            }
        };
        world
            .register_component::<Stunned>()
            .on_add(hook("add"))
            .on_insert(hook("insert"))
            .on_replace(hook("replace"))
            .on_remove(hook("remove"))
            .on_despawn(hook("despawn"));
        let e = world.spawn((Pos(0), Stunned(1)));
        world.insert(e, (Stunned(2),)).unwrap();
        world.remove_one::<Stunned>(e).unwrap();
        world.insert(e, (Stunned(3),)).unwrap();
        world.despawn(e).unwrap();
        assert_eq!(
            *log.lock().unwrap(),
            [
                "add", "insert", "replace", "insert", "replace", "remove", "add", "insert", "despawn",
                "replace", "remove"
            ],
            "{storage:?}"
        );
    }
}

#[test]
fn removals_are_logged_on_every_path() {
    for storage in BOTH {
        let mut world = world_with::<Stunned>(storage);
        world.track_removals::<Stunned>();
        let a = world.spawn((Stunned(1),));
        let b = world.spawn((Pos(0), Stunned(2)));
        let c = world.spawn((Stunned(3),));
        world.remove_one::<Stunned>(a).unwrap();
        world.despawn(b).unwrap();
        world.clear();
        let removed: Vec<Entity> = world.removed::<Stunned>().collect();
        assert_eq!(removed, [a, b, c], "{storage:?}");
    }
}

#[test]
fn commands_and_required_components_reach_sparse_components() {
    for storage in BOTH {
        let mut world = world_with::<Stunned>(storage);
        world.register_component::<Vel>().requires::<Stunned>();
        let e = world.spawn((Pos(0),));
        let mut queue = CommandQueue::new();
        let mut commands = Commands::new(&mut queue, &world);
        commands.insert(e, (Vel(1),));
        let f = commands.spawn((Stunned(7), Pos(1))).id();
        assert!(queue.apply(&mut world).is_empty());
        assert_eq!(world.get::<Stunned>(e), Ok(&Stunned(0)), "{storage:?}: required");
        assert_eq!(world.get::<Stunned>(f), Ok(&Stunned(7)));
        let mut commands = Commands::new(&mut queue, &world);
        commands.remove::<(Stunned,)>(e);
        commands.despawn(f);
        assert!(queue.apply(&mut world).is_empty());
        assert!(!world.has::<Stunned>(e) && !world.contains(f), "{storage:?}");
    }
}

#[test]
fn immutable_sparse_components_refuse_get_mut() {
    let mut world = World::new();
    world.register_component::<Stunned>().sparse_set().immutable();
    let e = world.spawn((Stunned(1),));
    assert!(matches!(
        world.get_mut::<Stunned>(e),
        Err(EntityError::ImmutableComponent { .. })
    ));
    world.insert(e, (Stunned(2),)).unwrap();
    assert_eq!(world.get::<Stunned>(e), Ok(&Stunned(2)));
}

#[test]
fn wrong_world_entities_are_refused() {
    let mut a = World::with_tag(1);
    let mut b = World::with_tag(2);
    a.register_component::<Stunned>().sparse_set();
    b.register_component::<Stunned>().sparse_set();
    let e = a.spawn((Stunned(1),));
    b.spawn((Stunned(2),));
    assert!(matches!(b.get::<Stunned>(e), Err(EntityError::WrongWorld { .. })));
    assert!(matches!(
        b.insert(e, (Stunned(3),)),
        Err(EntityError::WrongWorld { .. })
    ));
    assert!(!b.has::<Stunned>(e));
}

#[test]
#[should_panic(expected = "cannot become a sparse-set component")]
fn choosing_sparse_after_first_use_panics() {
    let mut world = World::new();
    world.spawn((Stunned(1),));
    world.register_component::<Stunned>().sparse_set();
}

#[test]
fn a_query_reads_a_sparse_component() {
    // The query forms over sparse components are tested in `sparse_query.rs`.
    for storage in BOTH {
        let mut world = world_with::<Stunned>(storage);
        world.spawn((Stunned(1),));
        world.spawn((Pos(2),));
        let got: Vec<u32> = world.query::<&Stunned>().iter(&world).map(|s| s.0).collect();
        assert_eq!(got, [1], "{storage:?}");
    }
}

#[test]
fn batches_spawn_insert_and_remove_sparse_components() {
    for storage in BOTH {
        let mut world = world_with::<Stunned>(storage);
        let spawned: Vec<Entity> = world.spawn_batch((0..4).map(|i| (Pos(i), Stunned(i)))).collect();
        for (i, &e) in spawned.iter().enumerate() {
            assert_eq!(world.get::<Stunned>(e), Ok(&Stunned(i as u32)), "{storage:?}");
        }
        let plain: Vec<Entity> = world.spawn_batch((0..3).map(|i| (Pos(10 + i),))).collect();
        world
            .insert_batch(plain.iter().map(|&e| (e, (Stunned(7),))))
            .unwrap();
        assert!(plain.iter().all(|&e| world.get::<Stunned>(e) == Ok(&Stunned(7))));
        let twice = world.remove_batch::<(Stunned,)>(&[plain[0], plain[0]]);
        assert!(
            matches!(twice, Err(EntityError::MissingComponent { .. })),
            "{storage:?}"
        );
        assert!(world.has::<Stunned>(plain[0]), "a refused batch removes nothing");
        let removed = world.remove_batch::<(Stunned,)>(&[plain[2], plain[0]]).unwrap();
        assert_eq!(removed, [(Stunned(7),), (Stunned(7),)]);
        assert!(!world.has::<Stunned>(plain[0]) && world.has::<Stunned>(plain[1]));
        let reserved = world.reserve_entity();
        world.spawn_at(reserved, (Stunned(3),)).unwrap();
        assert_eq!(world.get::<Stunned>(reserved), Ok(&Stunned(3)));
        assert!(
            world.spawn_at(reserved, (Pos(0),)).is_err(),
            "{storage:?}: already spawned"
        );
    }
}

#[test]
fn batches_of_one_component_behave_as_one_by_one_inserts_and_removals() {
    // A one-field sparse batch without hooks goes straight into the set; with hooks it takes
    // the one-entity path. Either way: replaced values dropped once and marked changed, the
    // last of an entity's values kept, removals logged in order, refusals that change nothing.
    for storage in BOTH {
        for hooked in [false, true] {
            let drops = Arc::new(AtomicUsize::new(0));
            let counted = |n| Counted(Arc::clone(&drops), n);
            let mut world = world_with::<Counted>(storage);
            let added = Arc::new(AtomicUsize::new(0));
            if hooked {
                let added = Arc::clone(&added);
                world
                    .register_component::<Counted>()
                    .on_add(move |_: &mut HookWorld, _: HookContext| {
                        added.fetch_add(1, Ordering::Relaxed);
                    });
            }
            world.track_removals::<Counted>();
            let es: Vec<Entity> = (0..4).map(|i| world.spawn((Pos(i),))).collect();
            world.insert_one(es[0], counted(0)).unwrap();
            world.clear_trackers();
            let at = format!("{storage:?}, hooked: {hooked}");
            // es[0] is replaced; es[2] is listed twice: its first value is replaced by its second.
            let batch = [(es[0], 10), (es[1], 11), (es[2], 12), (es[2], 22)];
            world
                .insert_batch(batch.map(|(e, n)| (e, (counted(n),))))
                .unwrap();
            assert_eq!(drops.load(Ordering::Relaxed), 2, "{at}: the two replaced values");
            let values: Vec<Option<u64>> = (es.iter())
                .map(|&e| world.get::<Counted>(e).ok().map(|c| c.1))
                .collect();
            assert_eq!(values, [Some(10), Some(11), Some(22), None], "{at}");
            let marks: Vec<(bool, bool)> = (es[..3].iter())
                .map(|&e| {
                    let c = world.get_mut::<Counted>(e).unwrap();
                    (c.is_added(), c.is_changed())
                })
                .collect();
            assert_eq!(marks, [(false, true), (true, true), (true, true)], "{at}");
            if hooked {
                assert_eq!(
                    added.load(Ordering::Relaxed),
                    3,
                    "{at}: on_add once per new holder"
                );
            }
            // Refused batches remove nothing: a dead entity, one without the component, one
            // listed twice.
            let gone = world.spawn((Pos(9),));
            world.despawn(gone).unwrap();
            let dead = world.remove_batch::<(Counted,)>(&[es[0], gone]);
            assert_eq!(dead.unwrap_err(), EntityError::NoSuchEntity(gone), "{at}");
            let lacking = world.remove_batch::<(Counted,)>(&[es[1], es[3]]);
            assert!(
                matches!(lacking, Err(EntityError::MissingComponent { entity, .. }) if entity == es[3]),
                "{at}"
            );
            let twice = world.remove_batch::<(Counted,)>(&[es[1], es[1]]);
            assert!(matches!(twice, Err(EntityError::MissingComponent { .. })), "{at}");
            assert_eq!(world.query::<&Counted>().iter(&world).count(), 3, "{at}");
            assert_eq!(world.removed::<Counted>().count(), 0, "{at}");
            // Removed in the batch's order, handed back, logged in that order.
            let removed = world.remove_batch::<(Counted,)>(&[es[2], es[0]]).unwrap();
            assert_eq!(
                removed.iter().map(|(c,)| c.1).collect::<Vec<_>>(),
                [22, 10],
                "{at}"
            );
            assert_eq!(drops.load(Ordering::Relaxed), 2, "{at}: handed back, not dropped");
            drop(removed);
            assert_eq!(
                world.removed::<Counted>().collect::<Vec<_>>(),
                [es[2], es[0]],
                "{at}"
            );
            assert_eq!(world.get::<Counted>(es[1]).map(|c| c.1), Ok(11), "{at}");
            assert!(
                !world.has::<Counted>(es[0]) && !world.has::<Counted>(es[2]),
                "{at}"
            );
            drop(world);
            assert_eq!(drops.load(Ordering::Relaxed), 5, "{at}: every value dropped once");
        }
    }
}

#[test]
fn by_id_access_and_entity_views_see_sparse_components() {
    for storage in BOTH {
        let mut world = world_with::<Stunned>(storage);
        let id = world.register_component::<Stunned>().id();
        let e = world.spawn((Pos(0),));
        tabula_core::OwningPtr::make(Stunned(4), |value| {
            // SAFETY: a `Stunned`, component `id`'s type.
            unsafe { world.insert_by_id(e, id, value) }
        })
        .unwrap();
        assert!(world.has_by_id(e, id), "{storage:?}");
        let read = world.get_by_id(e, id).unwrap();
        // SAFETY: component `id` is `Stunned`.
        assert_eq!(unsafe { *read.deref::<Stunned>() }, Stunned(4));
        {
            let mut value = world.get_mut_by_id(e, id).unwrap();
            // SAFETY: as above.
            unsafe { value.as_mut().deref_mut::<Stunned>().0 = 5 };
        }
        assert_eq!(world.get::<Stunned>(e), Ok(&Stunned(5)));
        let view = world.entity(e).unwrap();
        assert!(
            view.has::<Stunned>() && view.get::<Stunned>() == Some(&Stunned(5)),
            "{storage:?}"
        );
        assert_eq!(world.remove_by_id(e, id), Ok(true));
        assert_eq!(world.remove_by_id(e, id), Ok(false));
        assert!(!world.has::<Stunned>(e));
    }
}

/// `World::view`/`view_mut` find a sparse component's values in its set, by entity, with the
/// errors and change marks of a table column; so do multi-component views.
#[test]
fn views_read_and_write_sparse_components() {
    for storage in [Storage::Table, Storage::Sparse] {
        let mut world = world_with::<Stunned>(storage);
        let a = world.spawn((Pos(0), Stunned(1)));
        let b = world.spawn((Stunned(2),));
        let bare = world.spawn((Pos(3),));
        let dead = world.spawn((Stunned(4),));
        world.despawn(dead).unwrap();
        {
            let view = world.view::<Stunned>();
            assert_eq!(view.get(a), Ok(&Stunned(1)), "{storage:?}");
            assert_eq!(view.get(b), Ok(&Stunned(2)), "{storage:?}");
            assert!(
                matches!(view.get(bare), Err(EntityError::MissingComponent { entity, .. }) if entity == bare),
                "{storage:?}"
            );
            assert!(
                matches!(view.get(dead), Err(EntityError::NoSuchEntity { .. })),
                "{storage:?}"
            );
            assert!(view.contains(b) && !view.contains(bare), "{storage:?}");
        }
        let mut changed = world.query_filtered::<Entity, tabula_core::Changed<Stunned>>();
        assert_eq!(changed.iter(&world).count(), 2, "{storage:?}: both new");
        {
            let mut view = world.view_mut::<Stunned>();
            view.get_mut(b).unwrap().0 += 10;
            assert_eq!(view.get(b), Ok(&Stunned(12)), "{storage:?}");
            assert!(
                view.get_mut(bare).is_err() && view.get_mut(dead).is_err(),
                "{storage:?}"
            );
        }
        // The write marked b's value changed, and only it.
        assert_eq!(changed.iter(&world).collect::<Vec<_>>(), [b], "{storage:?}");

        // Multi-component views read it too (tests/sparse_views.rs has the rest).
        let view = world.multi_view::<(&Pos, &Stunned)>();
        assert_eq!(view.get(a), Ok((&Pos(0), &Stunned(1))), "{storage:?}");
    }
}

/// A table component and a sparse one of a mixed bundle, each holding a counted value.
#[derive(Debug)]
struct Held(#[allow(dead_code)] Counted);
#[derive(Debug)]
struct Mark(Counted);

/// A counted value whose `Drop` panics when `.1` is set.
#[derive(Debug)]
struct Boom(Counted, bool);

impl Drop for Boom {
    fn drop(&mut self) {
        if self.1 {
            panic!("Boom::drop panics, as asked");
        }
    }
}

/// A hook that panics the first time it runs once `armed` is set (and disarms it).
fn panics_once(armed: &Arc<AtomicBool>) -> impl Fn(&mut HookWorld, HookContext) + Send + Sync + 'static {
    let armed = Arc::clone(armed);
    move |_: &mut HookWorld, _: HookContext| {
        if armed.swap(false, Ordering::Relaxed) {
            panic!("a hook panics, as asked");
        }
    }
}

fn catch(f: impl FnOnce()) -> bool {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).is_err()
}

#[test]
fn a_panicking_hook_in_a_mixed_insert_drops_each_value_once() {
    // (hook that panics, drops right after the panic): `on_replace` of the table field runs
    // before any value moves, so both new values are dropped and the old one is kept;
    // `on_insert` of the table field runs once it is written (the old one dropped), before
    // the sparse field moves, which is dropped.
    for (on_insert, dropped) in [(false, 2), (true, 2)] {
        let drops = Arc::new(AtomicUsize::new(0));
        let counted = |n| Counted(Arc::clone(&drops), n);
        let mut world = world_with::<Mark>(Storage::Sparse);
        let armed = Arc::new(AtomicBool::new(false));
        let held = world.register_component::<Held>();
        if on_insert {
            held.on_insert(panics_once(&armed));
        } else {
            held.on_replace(panics_once(&armed));
        }
        let e = world.spawn((Held(counted(1)),));
        armed.store(true, Ordering::Relaxed);
        assert!(catch(|| {
            let _ = world.insert(e, (Held(counted(2)), Mark(counted(3))));
        }));
        assert_eq!(drops.load(Ordering::Relaxed), dropped, "on_insert: {on_insert}");
        assert!(world.has::<Held>(e) && !world.has::<Mark>(e));
        drop(world);
        assert_eq!(
            drops.load(Ordering::Relaxed),
            3,
            "on_insert: {on_insert}: each value once"
        );
    }
}

#[test]
fn a_panicking_sparse_drop_in_clear_leaves_the_world_consistent() {
    let drops = Arc::new(AtomicUsize::new(0));
    let boom = |n, panics| Boom(Counted(Arc::clone(&drops), n), panics);
    let mut world = world_with::<Boom>(Storage::Sparse);
    let old: Vec<Entity> = (0..3)
        .map(|i| world.spawn((Pos(i), boom(i.into(), i == 1))))
        .collect();
    assert!(catch(|| world.clear()));
    assert_eq!(drops.load(Ordering::Relaxed), 3, "every value dropped once");
    assert!(old.iter().all(|&e| !world.contains(e)));
    assert_eq!(
        world.query::<&Pos>().iter(&world).count(),
        0,
        "no row of a freed id"
    );
    let a = world.spawn((Pos(7),));
    let b = world.spawn((Pos(8), boom(8, false)));
    assert!(!world.has::<Boom>(a));
    assert_eq!(world.get::<Boom>(b).map(|b| b.0.1), Ok(8));
    assert_eq!(world.query::<&Pos>().iter(&world).count(), 2);
    drop(world);
    assert_eq!(drops.load(Ordering::Relaxed), 4);
}

#[test]
fn a_panicking_sparse_drop_in_despawn_still_despawns() {
    let drops = Arc::new(AtomicUsize::new(0));
    let counted = |n| Counted(Arc::clone(&drops), n);
    let mut world = World::new();
    world.register_component::<Boom>().sparse_set();
    world.register_component::<Mark>().sparse_set();
    let e = world.spawn((Pos(1), Boom(counted(1), true), Mark(counted(2)), counted(3)));
    let other = world.spawn((Pos(2), Mark(counted(4))));
    assert!(catch(|| {
        let _ = world.despawn(e);
    }));
    assert!(!world.contains(e), "the entity is gone");
    assert_eq!(
        drops.load(Ordering::Relaxed),
        3,
        "each of its values dropped once"
    );
    let reused = world.spawn((Pos(5),));
    assert!(!world.has::<Mark>(reused) && !world.has::<Boom>(reused));
    assert_eq!(world.get::<Mark>(other).map(|m| m.0.1), Ok(4));
    assert_eq!(world.query::<&Pos>().iter(&world).count(), 2);
    drop(world);
    assert_eq!(drops.load(Ordering::Relaxed), 4);
}

#[test]
fn a_sparse_insert_batch_with_a_dead_entity_changes_nothing() {
    for storage in BOTH {
        let mut world = world_with::<Stunned>(storage);
        let a = world.spawn((Pos(0),));
        let gone = world.spawn((Pos(1),));
        world.despawn(gone).unwrap();
        let result = world.insert_batch([(a, (Stunned(1),)), (gone, (Stunned(2),))]);
        assert_eq!(result, Err(EntityError::NoSuchEntity(gone)), "{storage:?}");
        assert!(!world.has::<Stunned>(a), "{storage:?}: nothing inserted");
    }
}

#[test]
fn replacing_a_value_drops_the_old_one_once_and_marks_it_changed_on_every_path() {
    for storage in BOTH {
        let drops = Arc::new(AtomicUsize::new(0));
        let counted = |n| Counted(Arc::clone(&drops), n);
        let mut world = world_with::<Counted>(storage);
        let id = world.register_component::<Counted>().id();
        let es: Vec<Entity> = (0..3).map(|i| world.spawn((Pos(i),))).collect();
        for (i, &e) in es.iter().enumerate() {
            world.insert_one(e, counted(i as u64)).unwrap();
        }
        world.clear_trackers();
        // One field, by type.
        world.insert_one(es[1], counted(10)).unwrap();
        assert_eq!(
            drops.load(Ordering::Relaxed),
            1,
            "{storage:?}: insert_one replaces"
        );
        // By id.
        tabula_core::OwningPtr::make(counted(11), |value| {
            // SAFETY: a `Counted`, component `id`'s type.
            unsafe { world.insert_by_id(es[1], id, value) }
        })
        .unwrap();
        assert_eq!(
            drops.load(Ordering::Relaxed),
            2,
            "{storage:?}: insert_by_id replaces"
        );
        // A mixed bundle.
        world.insert(es[1], (counted(12), Vel(1))).unwrap();
        assert_eq!(
            drops.load(Ordering::Relaxed),
            3,
            "{storage:?}: a mixed insert replaces"
        );
        {
            let value = world.get_mut::<Counted>(es[1]).unwrap();
            assert!(value.is_changed() && !value.is_added(), "{storage:?}");
            assert_eq!(value.1, 12, "{storage:?}");
        }
        assert!(
            !world.get_mut::<Counted>(es[0]).unwrap().is_changed(),
            "{storage:?}"
        );
        // Removing the first value fills its place with the last; the others keep theirs.
        let removed = world.remove_one::<Counted>(es[0]).unwrap();
        assert_eq!(removed.1, 0, "{storage:?}");
        drop(removed);
        assert_eq!(world.get::<Counted>(es[1]).unwrap().1, 12, "{storage:?}");
        assert_eq!(world.get::<Counted>(es[2]).unwrap().1, 2, "{storage:?}");
        assert_eq!(
            world.remove_one::<Counted>(es[2]).unwrap().1,
            2,
            "{storage:?}: the last"
        );
        assert_eq!(
            world.remove_one::<Counted>(es[2]).unwrap_err(),
            EntityError::MissingComponent {
                entity: es[2],
                component: std::any::type_name::<Counted>(),
            },
            "{storage:?}"
        );
        assert_eq!(drops.load(Ordering::Relaxed), 5, "{storage:?}");
        drop(world);
        assert_eq!(
            drops.load(Ordering::Relaxed),
            6,
            "{storage:?}: the world drops 12"
        );
    }
}

/// A despawn hook whose command makes the world's first sparse set and puts a value of it on
/// the dying entity: the despawn takes that value too (dropping it then, not with the
/// world), so no dead entity holds one (a save would list it, and the slot is reused).
#[test]
fn a_sparse_value_added_by_a_despawn_hook_goes_with_the_entity() {
    let drops = Arc::new(AtomicUsize::new(0));
    let mut world = World::new();
    let in_hook = Arc::clone(&drops);
    world
        .register_component::<Pos>()
        .on_despawn(move |world: &mut HookWorld, ctx: HookContext| {
            let (entity, drops) = (ctx.entity, Arc::clone(&in_hook));
            world.commands().add(move |world: &mut World| {
                world.register_component::<Counted>().sparse_set();
                world.insert_one(entity, Counted(drops, 7)).unwrap();
            });
        });
    let e = world.spawn((Pos(0),));
    world.despawn(e).unwrap();
    assert!(!world.contains(e));
    assert_eq!(drops.load(Ordering::Relaxed), 1, "dropped with its entity");
    assert_eq!(world.query::<&Counted>().iter(&world).count(), 0);
    // The slot comes back for a new entity, which holds nothing sparse.
    let again = world.spawn((Vel(0),));
    assert_eq!(again.index(), e.index());
    assert!(world.get::<Counted>(again).is_err());
    drop(world);
    assert_eq!(drops.load(Ordering::Relaxed), 1);
}

/// Queries skip disabled entities by archetype, which a sparse component is in none of: a
/// disabling component cannot be sparse, whichever is chosen first.
#[test]
fn a_disabling_component_cannot_be_sparse() {
    use std::panic::{AssertUnwindSafe, catch_unwind};
    struct Prefab;
    let message = |result: std::thread::Result<()>| {
        let payload = result.unwrap_err();
        payload.downcast_ref::<String>().cloned().unwrap_or_default()
    };

    let mut world = World::new();
    world.register_component::<Prefab>().sparse_set();
    let refused = catch_unwind(AssertUnwindSafe(|| {
        world.register_disabling_component::<Prefab>();
    }));
    assert!(message(refused).contains("sparse set and cannot disable"));

    let mut world = World::new();
    world.register_disabling_component::<Prefab>();
    let refused = catch_unwind(AssertUnwindSafe(|| {
        world.register_component::<Prefab>().sparse_set();
    }));
    assert!(message(refused).contains("it disables entities"));

    // `Disabled` itself, made sparse before any query registered it as disabling.
    let mut world = World::new();
    world.register_component::<tabula_core::Disabled>().sparse_set();
    let refused = catch_unwind(AssertUnwindSafe(|| {
        world.query::<&Pos>();
    }));
    assert!(message(refused).contains("`tabula_core::disabled::Disabled` is stored in a sparse set"));
}

/// Repeated one-entity inserts and removals of one component take a cached path after the
/// first (for a sparse component: straight to its set); hooks, a removal log, a dead entity
/// and an unflushed reservation that come after the cache is warm are all still seen.
#[test]
fn cached_one_entity_moves_still_see_later_hooks_logs_and_dead_entities() {
    for storage in BOTH {
        let mut world = world_with::<Stunned>(storage);
        let entities: Vec<Entity> = (0..4).map(|i| world.spawn((Pos(i),))).collect();
        // Warm the caches: twice round, so that the second round takes the cached path.
        for round in 0..2 {
            for &e in &entities {
                world.insert_one(e, Stunned(round)).unwrap();
            }
            for &e in &entities {
                assert_eq!(world.remove_one::<Stunned>(e), Ok(Stunned(round)), "{storage:?}");
            }
        }

        let log = Arc::new(std::sync::Mutex::new(Vec::<(&'static str, Entity)>::new()));
        let hook = |name: &'static str| {
            let log = Arc::clone(&log);
            move |_: &mut HookWorld, ctx: HookContext| log.lock().unwrap().push((name, ctx.entity))
        };
        world
            .register_component::<Stunned>()
            .on_add(hook("add"))
            .on_remove(hook("remove"));
        world.track_removals::<Stunned>();
        let e = entities[1];
        world.insert_one(e, Stunned(7)).unwrap();
        assert_eq!(world.remove_one::<Stunned>(e), Ok(Stunned(7)), "{storage:?}");
        assert_eq!(*log.lock().unwrap(), [("add", e), ("remove", e)], "{storage:?}");
        assert_eq!(world.removed::<Stunned>().collect::<Vec<_>>(), [e], "{storage:?}");

        // A dead entity is an error naming it, on both kinds of move.
        let dead = entities[2];
        world.despawn(dead).unwrap();
        assert_eq!(
            world.insert_one(dead, Stunned(9)),
            Err(EntityError::NoSuchEntity(dead)),
            "{storage:?}"
        );
        assert_eq!(
            world.remove_one::<Stunned>(dead),
            Err(EntityError::NoSuchEntity(dead)),
            "{storage:?}"
        );
        // A reserved id is flushed before the insert.
        let reserved = world.reserve_entity();
        world.insert_one(reserved, Stunned(5)).unwrap();
        assert_eq!(world.get::<Stunned>(reserved), Ok(&Stunned(5)), "{storage:?}");
        // Missing: the error names the component, and nothing changes.
        assert!(
            matches!(world.remove_one::<Stunned>(entities[3]), Err(EntityError::MissingComponent { entity, .. }) if entity == entities[3]),
            "{storage:?}"
        );
        assert_eq!(world.get::<Pos>(entities[3]), Ok(&Pos(3)), "{storage:?}");
    }
}

/// Once the one-entity caches are warm, every case of the cached path gives what the
/// general path gives: a replaced value (dropped once), a value for an entity whose index is
/// past every earlier one, a set that must grow, and removals from the middle, the end and
/// the only row of the set (values of a drop type, so that a lost or doubled move shows).
#[test]
fn warm_one_entity_moves_replace_grow_and_swap_remove_as_the_general_path() {
    for storage in BOTH {
        let drops = Arc::new(AtomicUsize::new(0));
        let counted = |tag: u64| Counted(Arc::clone(&drops), tag);
        let mut world = world_with::<Counted>(storage);
        let mut entities: Vec<Entity> = (0..3).map(|i| world.spawn((Pos(i),))).collect();
        for round in 0..2 {
            for &e in &entities {
                world.insert_one(e, counted(round)).unwrap();
            }
            for &e in &entities {
                assert_eq!(
                    world.remove_one::<Counted>(e).map(|c| c.1),
                    Ok(round),
                    "{storage:?}"
                );
            }
        }
        assert_eq!(drops.load(Ordering::Relaxed), 6, "{storage:?}");

        // A replaced value: the old one is dropped once, the new one kept.
        world.insert_one(entities[0], counted(10)).unwrap();
        world.insert_one(entities[0], counted(11)).unwrap();
        assert_eq!(drops.load(Ordering::Relaxed), 7, "{storage:?}");
        assert_eq!(
            world.get::<Counted>(entities[0]).map(|c| c.1),
            Ok(11),
            "{storage:?}"
        );
        // Entities whose indices lie past all earlier ones, and more values than the set
        // had room for.
        let n = if cfg!(miri) { 12 } else { 100 };
        entities.extend((3..n).map(|i| world.spawn((Pos(i),))));
        for (i, &e) in entities.iter().enumerate().skip(1) {
            world.insert_one(e, counted(100 + i as u64)).unwrap();
        }
        // Removals from the middle, then the last row, then down to the only one.
        let middle = entities[n as usize / 2];
        assert_eq!(
            world.remove_one::<Counted>(middle).map(|c| c.1),
            Ok(100 + n as u64 / 2),
            "{storage:?}"
        );
        let last = *entities.last().unwrap();
        assert_eq!(
            world.remove_one::<Counted>(last).map(|c| c.1),
            Ok(100 + n as u64 - 1),
            "{storage:?}"
        );
        for (i, &e) in entities.iter().enumerate() {
            let expected = match i {
                0 => Some(11),
                _ if e == middle || e == last => None,
                _ => Some(100 + i as u64),
            };
            assert_eq!(
                world.get::<Counted>(e).ok().map(|c| c.1),
                expected,
                "{storage:?} {i}"
            );
            assert_eq!(world.get::<Pos>(e), Ok(&Pos(i as u32)), "{storage:?}");
        }
        for &e in &entities[1..] {
            let _ = world.remove_one::<Counted>(e);
        }
        assert_eq!(
            world.remove_one::<Counted>(entities[0]).map(|c| c.1),
            Ok(11),
            "{storage:?}"
        );
        assert!(world.remove_one::<Counted>(entities[0]).is_err(), "{storage:?}");
        // Every value made was dropped exactly once: 6 + 2 + (n - 1).
        assert_eq!(drops.load(Ordering::Relaxed), 8 + n as usize - 1, "{storage:?}");
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
struct DockedIn(Entity);
#[derive(Debug)]
struct Hangar(Vec<Entity>);

impl tabula_core::Relationship for DockedIn {
    type Target = Hangar;
    fn target(&self) -> Entity {
        self.0
    }
    fn from_target(target: Entity) -> Self {
        DockedIn(target)
    }
}
impl tabula_core::RelationshipTarget for Hangar {
    type Relationship = DockedIn;
    const LINKED_SPAWN: bool = false;
    fn sources(&self) -> &[Entity] {
        &self.0
    }
    fn sources_mut(&mut self) -> &mut Vec<Entity> {
        &mut self.0
    }
    fn from_sources(sources: Vec<Entity>) -> Self {
        Hangar(sources)
    }
}

/// `immutable()` (and so `register_relationship`, which makes both sides immutable) refuses
/// a component some entity already holds, in a sparse set as in a table: the values it held
/// could have been changed in place, and a relationship registered late would leave its two
/// sides disagreeing.
#[test]
fn making_a_held_component_immutable_panics_in_either_storage() {
    for storage in BOTH {
        let mut world = world_with::<Stunned>(storage);
        let e = world.spawn((Pos(0), Stunned(1)));
        world.get_mut::<Stunned>(e).unwrap().0 = 2;
        let message = catch_message(|| {
            world.register_component::<Stunned>().immutable();
        });
        assert!(
            message.contains("made immutable after entities of this world held it"),
            "{storage:?}: {message}"
        );

        let mut world = world_with::<DockedIn>(storage);
        let hangar = world.spawn((Pos(0),));
        world.spawn((Pos(1), DockedIn(hangar)));
        let message = catch_message(|| world.register_relationship::<DockedIn>());
        assert!(
            message.contains("made immutable after entities of this world held it"),
            "{storage:?}: {message}"
        );
    }
    // Registered first, a sparse relationship keeps both sides in step.
    let mut world = world_with::<DockedIn>(Storage::Sparse);
    world.register_relationship::<DockedIn>();
    let hangar = world.spawn((Pos(0),));
    let ship = world.spawn((Pos(1), DockedIn(hangar)));
    assert_eq!(world.get::<Hangar>(hangar).map(|h| h.0.clone()), Ok(vec![ship]));
}

/// The panic message of `f`, which must panic.
fn catch_message(f: impl FnOnce()) -> String {
    let payload = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).expect_err("it panics");
    (payload.downcast_ref::<String>().cloned())
        .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default()
}

#[derive(Debug, Default, PartialEq)]
struct Needed;

/// A requirement registered after one-entity moves of the component are cached is still met
/// by the next insert; and two worlds that store the component differently (with different
/// component ids) keep their caches apart.
#[test]
fn cached_moves_meet_later_requirements_and_stay_per_world() {
    for storage in BOTH {
        let mut world = world_with::<Stunned>(storage);
        let e = world.spawn((Pos(0),));
        for round in 0..2 {
            world.insert_one(e, Stunned(round)).unwrap();
            world.remove_one::<Stunned>(e).unwrap();
        }
        world.register_component::<Stunned>().requires::<Needed>();
        world.insert_one(e, Stunned(5)).unwrap();
        assert_eq!(world.get::<Needed>(e), Ok(&Needed), "{storage:?}");
    }

    // World `a` registers another component first, so `Stunned`'s id differs between them.
    let mut a = World::new();
    a.register_component::<Vel>();
    a.register_component::<Stunned>().sparse_set();
    let mut b = World::new();
    let (ea, eb) = (a.spawn((Pos(1),)), b.spawn((Pos(2),)));
    for round in 0..3 {
        a.insert_one(ea, Stunned(round)).unwrap();
        b.insert_one(eb, Stunned(10 + round)).unwrap();
        assert_eq!(a.get::<Stunned>(ea), Ok(&Stunned(round)));
        assert_eq!(b.get::<Stunned>(eb), Ok(&Stunned(10 + round)));
        assert_eq!(a.remove_one::<Stunned>(ea), Ok(Stunned(round)));
        assert_eq!(b.remove_one::<Stunned>(eb), Ok(Stunned(10 + round)));
    }
    // A handle of the other world is refused by name, not taken for a local entity.
    assert!(a.insert_one(eb, Stunned(0)).is_err());
    assert!(a.remove_one::<Stunned>(eb).is_err());
}
