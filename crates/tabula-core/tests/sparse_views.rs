//! Multi-component views over sparse-set components: `World::multi_view` and
//! `multi_view_mut` hand out an entity's components whichever storage each is in. Each test
//! body runs with `Vel` and `Tag` in tables and in sparse sets (`Pos` always in tables) and
//! must give the same results. Small counts: Miri runs the file over the views' raw pointers
//! into dense rows.

use std::panic::{AssertUnwindSafe, catch_unwind};

use tabula_core::{Changed, Entity, EntityError, World};

/// How `Vel` and `Tag` are stored.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Storage {
    Table,
    Sparse,
}

#[derive(Debug, PartialEq, Clone, Copy)]
struct Pos(u32);
#[derive(Debug, PartialEq, Clone, Copy)]
struct Vel(u32);
#[derive(Debug, PartialEq, Clone, Copy)]
struct Tag;

/// Runs `body` once per storage, on a world with `Pos(i)` for six entities, `Vel(10 * i)` on
/// the even ones and `Tag` on every third; returns nothing, the body asserts.
fn both(body: impl Fn(Storage, &mut World, &[Entity])) {
    for storage in [Storage::Table, Storage::Sparse] {
        let mut world = World::new();
        if storage == Storage::Sparse {
            world.register_component::<Vel>().sparse_set();
            world.register_component::<Tag>().sparse_set();
        }
        let es: Vec<Entity> = (0..6u32)
            .map(|i| {
                let e = world.spawn((Pos(i),));
                if i % 2 == 0 {
                    world.insert(e, (Vel(10 * i),)).unwrap();
                }
                if i % 3 == 0 {
                    world.insert(e, (Tag,)).unwrap();
                }
                e
            })
            .collect();
        body(storage, &mut world, &es);
    }
}

/// True when `result` is the error for `entity` lacking a component whose name ends with
/// `component`.
fn lacks<T>(result: Result<T, EntityError>, entity: Entity, component: &str) -> bool {
    matches!(result, Err(EntityError::MissingComponent { entity: e, component: name })
        if e == entity && name.ends_with(component))
}

fn panic_message(f: impl FnOnce()) -> String {
    let payload = catch_unwind(AssertUnwindSafe(f)).expect_err("should panic");
    payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default()
}

#[test]
fn a_shared_view_reads_table_and_sparse_components_together() {
    both(|storage, world, es| {
        let view = world.multi_view::<(&Pos, &Vel)>();
        assert_eq!(view.get(es[2]), Ok((&Pos(2), &Vel(20))), "{storage:?}");
        assert_eq!(view.get(es[0]), Ok((&Pos(0), &Vel(0))), "{storage:?}");
        assert!(lacks(view.get(es[1]), es[1], "Vel"), "{storage:?}");
        assert!(view.contains(es[4]) && !view.contains(es[3]), "{storage:?}");
        // Sparse terms first, and two sparse terms at once.
        let view = world.multi_view::<(&Tag, &Vel, &Pos)>();
        assert_eq!(view.get(es[0]), Ok((&Tag, &Vel(0), &Pos(0))), "{storage:?}");
        assert!(lacks(view.get(es[3]), es[3], "Vel"), "{storage:?}");
        assert!(lacks(view.get(es[2]), es[2], "Tag"), "{storage:?}");
        // A component read twice.
        let twice = world.multi_view::<(&Vel, &Vel)>();
        assert_eq!(twice.get(es[4]), Ok((&Vel(40), &Vel(40))), "{storage:?}");
    });
}

#[test]
fn missing_entities_and_stale_ids_are_errors_naming_them() {
    both(|storage, world, es| {
        world.despawn(es[2]).unwrap();
        // The freed index is taken again by an entity with a `Vel` of its own: the stale id
        // must not find it.
        let newer = world.spawn((Pos(7), Vel(70)));
        assert_eq!(newer.index(), es[2].index(), "{storage:?}");
        let view = world.multi_view::<(&Pos, &Vel)>();
        assert_eq!(
            view.get(es[2]),
            Err(EntityError::NoSuchEntity(es[2])),
            "{storage:?}"
        );
        assert_eq!(view.get(newer), Ok((&Pos(7), &Vel(70))), "{storage:?}");
        let mut view = world.multi_view_mut::<(&mut Vel, &Pos)>();
        assert!(view.get_mut(es[2]).is_err(), "{storage:?}");
        assert!(lacks(view.get_mut(es[3]), es[3], "Vel"), "{storage:?}");
    });
}

#[test]
fn a_mutable_view_writes_sparse_components_and_marks_only_what_it_writes() {
    both(|storage, world, es| {
        let mut changed_vel = world.query_filtered::<Entity, Changed<Vel>>();
        let mut changed_pos = world.query_filtered::<Entity, Changed<Pos>>();
        changed_vel.iter(world).for_each(drop);
        changed_pos.iter(world).for_each(drop);
        {
            let mut view = world.multi_view_mut::<(&Pos, &mut Vel)>();
            let (pos, mut vel) = view.get_mut(es[4]).unwrap();
            vel.0 += pos.0;
            // Read through `get_mut` without writing: no mark.
            let (_, vel) = view.get_mut(es[2]).unwrap();
            assert_eq!(vel.0, 20, "{storage:?}");
            assert_eq!(view.get(es[4]).unwrap().1, &Vel(44), "{storage:?}");
            assert!(view.get_mut(es[1]).is_err(), "{storage:?}");
        }
        assert_eq!(world.get::<Vel>(es[4]), Ok(&Vel(44)), "{storage:?}");
        assert_eq!(
            changed_vel.iter(world).collect::<Vec<_>>(),
            [es[4]],
            "{storage:?}"
        );
        assert_eq!(changed_pos.iter(world).count(), 0, "{storage:?}");

        // Both terms written, the table one and the sparse one.
        {
            let mut view = world.multi_view_mut::<(&mut Pos, &mut Vel, &Tag)>();
            let (mut pos, mut vel, _) = view.get_mut(es[0]).unwrap();
            pos.0 = 100;
            vel.0 = 200;
            assert!(lacks(view.get_mut(es[2]), es[2], "Tag"), "{storage:?}");
        }
        assert_eq!(world.get::<Pos>(es[0]), Ok(&Pos(100)), "{storage:?}");
        assert_eq!(world.get::<Vel>(es[0]), Ok(&Vel(200)), "{storage:?}");
        assert_eq!(
            changed_vel.iter(world).collect::<Vec<_>>(),
            [es[0]],
            "{storage:?}"
        );
        assert_eq!(
            changed_pos.iter(world).collect::<Vec<_>>(),
            [es[0]],
            "{storage:?}"
        );
    });
}

#[test]
fn aliasing_and_immutable_sparse_terms_are_refused() {
    both(|storage, world, _| {
        let message = panic_message(|| {
            world.multi_view_mut::<(&mut Vel, &Pos, &Vel)>();
        });
        assert!(message.contains("`Vel` twice"), "{storage:?}: {message}");
    });
    struct Frozen(u32);
    let mut world = World::new();
    world.register_component::<Frozen>().sparse_set().immutable();
    let e = world.spawn((Pos(1), Frozen(5)));
    let message = panic_message(|| {
        world.multi_view_mut::<(&Pos, &mut Frozen)>();
    });
    assert!(message.contains("immutable"), "{message}");
    // Reading it is fine.
    let mut view = world.multi_view_mut::<(&mut Pos, &Frozen)>();
    let (mut pos, frozen) = view.get_mut(e).unwrap();
    pos.0 = frozen.0;
    assert_eq!(world.get::<Pos>(e), Ok(&Pos(5)));
}
