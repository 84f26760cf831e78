//! Removal logs (`World::track_removals`): every way an entity can lose a tracked component
//! is logged once, untracked components cost nothing, and the logs age like events.
//!
//! Every case runs with the tracked components in tables and in sparse sets (see
//! [`per_storage!`]), except `hierarchy_changes_log_parent_removals`, whose `Parent` is the
//! crate's own component.

use tabula_core::{CommandQueue, Commands, Entity, EventCursor, Parent, World};

mod common;
use common::{Storage, per_storage};

#[derive(Debug, PartialEq)]
struct Shield(u32);

#[derive(Debug, PartialEq)]
struct Speed(f32);

#[derive(Debug, PartialEq)]
struct Name(&'static str);

/// A world with `Shield` and `Speed` stored as `storage` says.
fn world_with(storage: Storage) -> World {
    let mut world = World::new();
    if storage == Storage::Sparse {
        world.register_component::<Shield>().sparse_set();
        world.register_component::<Speed>().sparse_set();
    }
    world
}

per_storage!(
    only_tracked_components_are_logged_and_only_from_when_tracking_starts,
    tracking_twice_keeps_the_log,
    edges_and_archetypes_cached_before_tracking_start_logging,
    archetypes_made_after_tracking_log_too,
    despawn_logs_every_tracked_component_of_the_entity,
    a_refused_removal_logs_nothing,
    replacing_a_value_is_not_a_removal,
    batch_removals_log_every_entity_in_batch_order,
    clear_logs_every_entity_with_a_tracked_component,
    commands_log_when_applied,
    logs_age_like_events_and_each_cursor_reads_once,
    a_removed_and_readded_component_is_still_logged
);

fn removed<T: Send + Sync + 'static>(world: &World) -> Vec<Entity> {
    world.removed::<T>().collect()
}

fn only_tracked_components_are_logged_and_only_from_when_tracking_starts(storage: Storage) {
    let mut world = world_with(storage);
    let a = world.spawn((Shield(1), Speed(1.0)));
    world.remove_one::<Shield>(a).unwrap();
    assert!(world.removal_log::<Shield>().is_none(), "not tracked yet");
    assert_eq!(removed::<Shield>(&world), []);

    world.track_removals::<Shield>();
    assert!(
        world
            .components()
            .info(world.components().id::<Shield>().unwrap())
            .logs_removals()
    );
    assert_eq!(removed::<Shield>(&world), [], "earlier removals are not logged");
    world.insert_one(a, Shield(2)).unwrap();
    world.remove_one::<Shield>(a).unwrap();
    world.remove_one::<Speed>(a).unwrap();
    assert_eq!(removed::<Shield>(&world), [a]);
    assert_eq!(removed::<Speed>(&world), [], "Speed is not tracked");
    assert!(world.removal_log::<Speed>().is_none());
}

fn tracking_twice_keeps_the_log(storage: Storage) {
    let mut world = world_with(storage);
    let id = world.track_removals::<Shield>();
    let a = world.spawn((Shield(1),));
    world.remove_one::<Shield>(a).unwrap();
    assert_eq!(world.track_removals::<Shield>(), id);
    assert_eq!(removed::<Shield>(&world), [a]);
}

fn edges_and_archetypes_cached_before_tracking_start_logging(storage: Storage) {
    let mut world = world_with(storage);
    let entities: Vec<Entity> = (0..4).map(|i| world.spawn((Speed(i as f32),))).collect();
    // Warm every cache: the edges, and the one-entry bundle caches of both archetypes.
    for _ in 0..2 {
        for &e in &entities {
            world.insert_one(e, Shield(0)).unwrap();
        }
        for &e in &entities {
            world.remove_one::<Shield>(e).unwrap();
        }
    }
    for &e in &entities {
        world.insert_one(e, Shield(0)).unwrap();
    }
    world.track_removals::<Shield>();
    world.remove_one::<Shield>(entities[2]).unwrap();
    world.despawn(entities[0]).unwrap();
    world.remove::<(Shield, Speed)>(entities[1]).unwrap();
    assert_eq!(removed::<Shield>(&world), [entities[2], entities[0], entities[1]]);
}

fn archetypes_made_after_tracking_log_too(storage: Storage) {
    let mut world = world_with(storage);
    world.track_removals::<Shield>();
    let a = world.spawn((Shield(1), Name("a")));
    let b = world.spawn((Name("b"), Speed(2.0), Shield(2)));
    world.despawn(b).unwrap();
    world.remove::<(Name, Shield)>(a).unwrap();
    assert_eq!(removed::<Shield>(&world), [b, a]);
}

fn despawn_logs_every_tracked_component_of_the_entity(storage: Storage) {
    let mut world = world_with(storage);
    world.track_removals::<Shield>();
    world.track_removals::<Speed>();
    let both = world.spawn((Shield(1), Speed(1.0), Name("both")));
    let shield_only = world.spawn((Shield(2), Name("shield")));
    let neither = world.spawn((Name("neither"),));
    world.despawn(both).unwrap();
    world.despawn(neither).unwrap();
    world.despawn(shield_only).unwrap();
    assert_eq!(removed::<Shield>(&world), [both, shield_only]);
    assert_eq!(removed::<Speed>(&world), [both]);
    assert!(world.despawn(both).is_err());
    assert_eq!(
        removed::<Shield>(&world).len(),
        2,
        "a refused despawn logs nothing"
    );
}

fn a_refused_removal_logs_nothing(storage: Storage) {
    let mut world = world_with(storage);
    world.track_removals::<Shield>();
    let a = world.spawn((Shield(1),));
    assert!(world.remove::<(Shield, Speed)>(a).is_err(), "Speed is missing");
    assert_eq!(world.get::<Shield>(a), Ok(&Shield(1)));
    assert!(world.remove_batch::<(Shield, Speed)>(&[a]).is_err());
    world.despawn(a).unwrap();
    assert!(world.remove_one::<Shield>(a).is_err(), "dead");
    assert_eq!(removed::<Shield>(&world), [a], "only the despawn");
}

fn replacing_a_value_is_not_a_removal(storage: Storage) {
    let mut world = world_with(storage);
    world.track_removals::<Shield>();
    let a = world.spawn((Shield(1),));
    world.insert_one(a, Shield(2)).unwrap();
    world.insert(a, (Shield(3), Speed(1.0))).unwrap();
    assert_eq!(removed::<Shield>(&world), []);
}

fn batch_removals_log_every_entity_in_batch_order(storage: Storage) {
    let mut world = world_with(storage);
    world.track_removals::<Shield>();
    // A whole table in row order (the bulk path) ...
    let table: Vec<Entity> = world.spawn_batch((0..5).map(|i| (Shield(i),))).collect();
    world.remove_batch::<(Shield,)>(&table).unwrap();
    assert_eq!(removed::<Shield>(&world), table);
    // ... a whole table in another order ...
    let table2: Vec<Entity> = world
        .spawn_batch((0..3).map(|i| (Shield(i), Speed(0.0))))
        .collect();
    let reversed: Vec<Entity> = table2.iter().rev().copied().collect();
    world.remove_batch::<(Shield,)>(&reversed).unwrap();
    // ... and entities from two archetypes (one at a time).
    let x = world.spawn((Shield(7),));
    let y = world.spawn((Shield(8), Name("y")));
    world.remove_batch::<(Shield,)>(&[y, x]).unwrap();
    let expected: Vec<Entity> = (table.iter().chain(&reversed).chain(&[y, x])).copied().collect();
    assert_eq!(removed::<Shield>(&world), expected);
}

fn clear_logs_every_entity_with_a_tracked_component(storage: Storage) {
    let mut world = world_with(storage);
    world.track_removals::<Shield>();
    let a = world.spawn((Shield(1),));
    let b = world.spawn((Name("b"),));
    let c = world.spawn((Shield(3), Name("c")));
    world.clear();
    let mut logged = removed::<Shield>(&world);
    logged.sort();
    let mut expected = vec![a, c];
    expected.sort();
    assert_eq!(logged, expected);
    assert!(!logged.contains(&b));
}

fn commands_log_when_applied(storage: Storage) {
    let mut world = world_with(storage);
    world.track_removals::<Shield>();
    let a = world.spawn((Shield(1),));
    let b = world.spawn((Shield(2), Name("b")));
    let mut queue = CommandQueue::new();
    let mut commands = Commands::new(&mut queue, &world);
    commands.remove::<(Shield,)>(a);
    commands.despawn(b);
    assert_eq!(removed::<Shield>(&world), [], "nothing before apply");
    assert!(queue.apply(&mut world).is_empty());
    assert_eq!(removed::<Shield>(&world), [a, b]);
}

#[test]
fn hierarchy_changes_log_parent_removals() {
    let mut world = World::new();
    world.track_removals::<Parent>();
    let root = world.spawn((Name("root"),));
    let kept = world.spawn((Name("kept"),));
    let child = world.spawn((Name("child"),));
    let grandchild = world.spawn((Name("grandchild"),));
    world.set_parent(kept, root).unwrap();
    world.set_parent(child, root).unwrap();
    world.set_parent(grandchild, child).unwrap();
    world.remove_parent(kept).unwrap();
    assert_eq!(removed::<Parent>(&world), [kept]);
    world.despawn_recursive(child).unwrap();
    let mut logged = removed::<Parent>(&world);
    logged.sort();
    let mut expected = vec![kept, child, grandchild];
    expected.sort();
    assert_eq!(logged, expected);
}

fn logs_age_like_events_and_each_cursor_reads_once(storage: Storage) {
    let mut world = world_with(storage);
    world.track_removals::<Shield>();
    let a = world.spawn((Shield(1),));
    let b = world.spawn((Shield(2),));
    let mut early = EventCursor::default();
    let mut late = EventCursor::default();
    world.remove_one::<Shield>(a).unwrap();
    let log = world.removal_log::<Shield>().unwrap();
    assert_eq!(early.read(log).copied().collect::<Vec<_>>(), [a]);

    world.update_events();
    world.despawn(b).unwrap();
    let log = world.removal_log::<Shield>().unwrap();
    assert_eq!(
        early.read(log).copied().collect::<Vec<_>>(),
        [b],
        "a was read already"
    );
    assert_eq!(
        late.read(log).copied().collect::<Vec<_>>(),
        [a, b],
        "one update later"
    );

    world.update_events();
    assert_eq!(removed::<Shield>(&world), [b], "a is two updates old");
    world.update_events();
    assert_eq!(removed::<Shield>(&world), []);
}

fn a_removed_and_readded_component_is_still_logged(storage: Storage) {
    let mut world = world_with(storage);
    world.track_removals::<Shield>();
    let a = world.spawn((Shield(1),));
    world.remove_one::<Shield>(a).unwrap();
    world.insert_one(a, Shield(2)).unwrap();
    world.remove_one::<Shield>(a).unwrap();
    assert_eq!(removed::<Shield>(&world), [a, a], "once per removal");
}
