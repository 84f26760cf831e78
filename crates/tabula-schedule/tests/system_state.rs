//! `SystemState`: system parameters used outside a schedule — fetched together from
//! `&mut World` (or `&World` when they only read), checked for aliasing as a system's are,
//! keeping change ticks and `Local`s between fetches, and applying their commands on demand.

use std::panic::{AssertUnwindSafe, catch_unwind};

use tabula_core::{Commands, Entity, Parent, World};
use tabula_schedule::SystemState;
use tabula_schedule::prelude::*;

#[derive(Debug, PartialEq)]
struct Local2(f32);
#[derive(Debug, PartialEq)]
struct Global(f32);
struct Score(u32);

fn panic_message(f: impl FnOnce()) -> String {
    let payload = catch_unwind(AssertUnwindSafe(f)).expect_err("should panic");
    payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default()
}

#[test]
fn a_tree_walk_reads_parents_while_writing_transforms() {
    let mut world = World::new();
    let root = world.spawn((Local2(1.0), Global(0.0)));
    let mid = world.spawn((Local2(2.0), Global(0.0), Parent::new(root)));
    let leaf = world.spawn((Local2(4.0), Global(0.0), Parent::new(mid)));

    let mut state = SystemState::<(Query<&Parent>, Query<(&Local2, &mut Global)>)>::new(&mut world);
    let (parents, mut transforms) = state.get_mut(&mut world);
    // Depth order: root, mid, leaf.
    for entity in [root, mid, leaf] {
        let base = match parents.get(entity) {
            Ok(parent) => transforms.get_mut(parent.get()).unwrap().1.0,
            Err(_) => 0.0,
        };
        let (local, mut global) = transforms.get_mut(entity).unwrap();
        global.0 = base + local.0;
    }
    assert_eq!(world.get::<Global>(leaf), Ok(&Global(7.0)));
    assert_eq!(world.get::<Global>(mid), Ok(&Global(3.0)));
}

#[test]
fn conflicting_parameters_panic_naming_both() {
    let mut world = World::new();
    let message = panic_message(|| {
        SystemState::<(Query<&mut Global>, Query<&Global>)>::new(&mut world);
    });
    assert!(message.contains("SystemState<"), "{message}");
    assert!(message.contains("Query<&mut Global>"), "{message}");
    assert!(message.contains("Query<&Global>"), "{message}");
    assert!(
        message.contains("Without<"),
        "the advice a system gets: {message}"
    );

    let message = panic_message(|| {
        SystemState::<(Res<Score>, ResMut<Score>)>::new(&mut world);
    });
    assert!(message.contains("ResMut<Score>"), "{message}");
}

#[test]
fn commands_wait_for_apply_and_report_skipped_ones() {
    let mut world = World::new();
    let gone = world.spawn((Global(0.0),));
    world.despawn(gone).unwrap();
    let mut state = SystemState::<(Commands, Query<Entity>)>::new(&mut world);
    let (mut commands, entities) = state.get_mut(&mut world);
    assert_eq!(entities.count(), 0);
    let spawned = commands.spawn((Global(1.0),)).id();
    commands.entity(gone).insert((Global(2.0),));
    assert!(!world.contains(spawned), "nothing applied before apply");
    let errors = state.apply(&mut world);
    assert_eq!(errors.len(), 1, "the insert on a despawned entity: {errors:?}");
    assert_eq!(world.get::<Global>(spawned), Ok(&Global(1.0)));
    assert!(state.apply(&mut world).is_empty(), "applied once");
    let (_, entities) = state.get_mut(&mut world);
    assert_eq!(entities.count(), 1, "the query sees the new archetype");
}

#[test]
fn change_ticks_and_locals_persist_between_fetches() {
    let mut world = World::new();
    let a = world.spawn((Global(0.0),));
    world.spawn((Global(0.0),));
    let mut state = SystemState::<(Query<Entity, tabula_core::Changed<Global>>, Local<u32>)>::new(&mut world);
    {
        let (changed, mut fetches) = state.get(&world);
        *fetches += 1;
        assert_eq!(changed.count(), 2, "everything is new on the first fetch");
    }
    {
        let (changed, mut fetches) = state.get(&world);
        *fetches += 1;
        assert_eq!(changed.count(), 0, "nothing changed since the last fetch");
    }
    world.get_mut::<Global>(a).unwrap().0 = 5.0;
    let (changed, fetches) = state.get(&world);
    assert_eq!(changed.iter().collect::<Vec<_>>(), [a]);
    assert_eq!(*fetches, 2);
}

#[test]
fn read_only_parameters_are_fetched_from_a_shared_world() {
    let mut world = World::new();
    world.insert_resource(Score(3));
    world.spawn((Global(2.0),));
    let mut scores = SystemState::<Res<Score>>::new(&mut world);
    let mut globals = SystemState::<(Query<&Global>, Option<Res<Local2>>)>::new(&mut world);
    let world = &world;
    // Two states fetched from the same shared world at once.
    let score = scores.get(world);
    let (query, missing) = globals.get(world);
    assert_eq!(score.0 + query.single().unwrap().0 as u32, 5);
    assert!(missing.is_none());
}

#[test]
fn a_state_refuses_another_world() {
    let mut world = World::new();
    let mut other = World::new();
    let mut state = SystemState::<Query<&Global>>::new(&mut world);
    let message = panic_message(|| {
        state.get_mut(&mut other);
    });
    assert!(message.contains("another World"), "{message}");
}
