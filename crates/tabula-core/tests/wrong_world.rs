//! Entity handles used on a world that did not make them: every entry point that takes an
//! `Entity` refuses them with `WrongWorld` (naming both worlds' tags), and the entity that
//! lives at the same index and generation in that world is left untouched.
//!
//! `query_lookups_refuse_another_worlds_entity` runs with `Hp` in tables and in a sparse set
//! (see [`per_storage!`]); the other entry points are not queries.

use tabula_core::query::QueryError;
use tabula_core::{CommandError, CommandQueue, Commands, Entity, EntityError, HierarchyError, World};

mod common;
use common::{Storage, per_storage};

#[derive(Debug, PartialEq)]
struct Hp(u32);

#[derive(Debug, PartialEq)]
struct Name(&'static str);

per_storage!(query_lookups_refuse_another_worlds_entity);

/// Two worlds with distinct tags, each with three entities at the same indices and
/// generations, and the handles of `home`'s.
fn two_worlds() -> (World, World, Vec<Entity>) {
    two_worlds_with(Storage::Table)
}

/// [`two_worlds`], with `Hp` stored in both worlds as `storage` says.
fn two_worlds_with(storage: Storage) -> (World, World, Vec<Entity>) {
    let mut home = World::with_tag(3);
    let mut other = World::with_tag(4);
    if storage == Storage::Sparse {
        home.register_component::<Hp>().sparse_set();
        other.register_component::<Hp>().sparse_set();
    }
    let ids: Vec<Entity> = (0..3).map(|i| home.spawn((Hp(i), Name("home")))).collect();
    let twins: Vec<Entity> = (0..3)
        .map(|i| other.spawn((Hp(100 + i), Name("other"))))
        .collect();
    for (&e, &twin) in ids.iter().zip(&twins) {
        assert_eq!((e.index(), e.generation()), (twin.index(), twin.generation()));
        assert_ne!(e, twin, "the tags tell them apart");
        assert_eq!((e.world_tag(), twin.world_tag()), (3, 4));
    }
    (home, other, ids)
}

fn wrong(entity: Entity) -> EntityError {
    EntityError::WrongWorld { entity, world: 4 }
}

/// `other`'s own entities are exactly as `two_worlds` made them.
fn assert_untouched(other: &mut World) {
    let mut q = other.query::<(Entity, &Hp, &Name)>();
    let rows: Vec<(u32, u32, &'static str)> = q
        .iter(other)
        .map(|(e, hp, name)| (e.index(), hp.0, name.0))
        .collect();
    assert_eq!(rows, [(0, 100, "other"), (1, 101, "other"), (2, 102, "other")]);
    assert_eq!(other.len(), 3);
}

#[test]
fn world_methods_refuse_another_worlds_entity() {
    let (_home, mut other, ids) = two_worlds();
    let e = ids[1];
    assert!(!other.contains(e));
    assert!(!other.has::<Hp>(e));
    assert_eq!(other.get::<Hp>(e), Err(wrong(e)));
    assert_eq!(other.get_mut::<Hp>(e).map(drop), Err(wrong(e)));
    assert_eq!(other.entity(e).map(drop), Err(wrong(e)));
    assert_eq!(other.entity_mut(e).map(drop), Err(wrong(e)));
    assert_eq!(other.insert(e, (Hp(7),)), Err(wrong(e)));
    assert_eq!(other.insert_one(e, 1u8), Err(wrong(e)));
    assert_eq!(other.remove::<(Hp,)>(e), Err(wrong(e)));
    assert_eq!(other.remove_one::<Name>(e), Err(wrong(e)));
    assert_eq!(other.spawn_at(e, (Hp(7),)), Err(wrong(e)));
    assert_eq!(other.insert_batch([(e, (Hp(7),))]), Err(wrong(e)));
    assert_eq!(other.remove_batch::<(Hp,)>(&[e]), Err(wrong(e)));
    assert_eq!(other.despawn(e), Err(wrong(e)));
    assert_untouched(&mut other);
}

#[test]
fn the_error_names_both_worlds() {
    let (_home, other, ids) = two_worlds();
    let message = other.get::<Hp>(ids[0]).unwrap_err().to_string();
    assert!(
        message.contains("tagged 3") && message.contains("tagged 4"),
        "{message}"
    );
    assert!(
        message.contains("only valid in the world that made it"),
        "{message}"
    );
}

#[test]
fn views_refuse_another_worlds_entity() {
    let (_home, mut other, ids) = two_worlds();
    {
        let view = other.view::<Hp>();
        for &e in &ids {
            assert_eq!(view.get(e), Err(wrong(e)));
            assert!(!view.contains(e));
        }
    }
    {
        let mut view = other.view_mut::<Hp>();
        for &e in &ids {
            assert_eq!(view.get(e), Err(wrong(e)));
            assert_eq!(view.get_mut(e).map(drop), Err(wrong(e)));
            assert!(!view.contains(e));
        }
    }
    assert_untouched(&mut other);
}

fn query_lookups_refuse_another_worlds_entity(storage: Storage) {
    let (_home, mut other, ids) = two_worlds_with(storage);
    let mut reads = other.query::<&Hp>();
    let mut writes = other.query::<&mut Hp>();
    for &e in &ids {
        let wrong = QueryError::WrongWorld { entity: e, world: 4 };
        assert_eq!(reads.get(&other, e).map(drop), Err(wrong));
        assert_eq!(writes.get_mut(&mut other, e).map(drop), Err(wrong));
        assert!(!reads.contains(&other, e));
        let message = wrong.to_string();
        assert!(message.contains("tagged 3"), "{message}");
    }
    assert_untouched(&mut other);
}

#[test]
fn commands_with_another_worlds_entity_are_skipped_and_reported() {
    let (_home, mut other, ids) = two_worlds();
    let mut queue = CommandQueue::new();
    let mut commands = Commands::new(&mut queue, &other);
    commands.insert(ids[0], (Hp(9),));
    commands.remove::<(Hp,)>(ids[1]);
    commands.despawn(ids[2]);
    commands.entity(ids[0]).set_parent(ids[1]);
    let errors = queue.apply(&mut other);
    let reasons: Vec<(&str, Option<Entity>)> = errors.iter().map(|e| (e.command(), e.entity())).collect();
    assert_eq!(
        reasons,
        [
            ("insert", Some(ids[0])),
            ("remove", Some(ids[1])),
            ("despawn", Some(ids[2])),
            ("set_parent", Some(ids[0])),
        ]
    );
    assert!(matches!(
        errors[0],
        CommandError::Entity {
            error: EntityError::WrongWorld { .. },
            ..
        }
    ));
    assert_untouched(&mut other);
}

#[test]
fn hierarchy_methods_refuse_another_worlds_entity() {
    let (mut home, mut other, ids) = two_worlds();
    let own = other.spawn(());
    let e = ids[0];
    assert_eq!(other.set_parent(e, own), Err(HierarchyError::Entity(wrong(e))));
    assert_eq!(other.set_parent(own, e), Err(HierarchyError::Entity(wrong(e))));
    assert_eq!(other.remove_parent(e), Err(wrong(e)));
    assert_eq!(other.children(e).map(<[Entity]>::len), Err(wrong(e)));
    assert_eq!(other.parent(e), Err(wrong(e)));
    assert_eq!(other.despawn_recursive(e), Err(wrong(e)));
    other.despawn(own).unwrap();
    assert_untouched(&mut other);
    // The home world still takes its own handles.
    home.set_parent(ids[1], ids[0]).unwrap();
    assert_eq!(home.children(ids[0]), Ok(&[ids[1]][..]));
}

#[test]
fn worlds_made_in_turn_get_distinct_tags_and_a_tag_makes_the_same_ids() {
    let worlds: Vec<World> = (0..8).map(|_| World::new()).collect();
    let mut tags: Vec<u8> = worlds.iter().map(World::tag).collect();
    tags.sort_unstable();
    tags.dedup();
    assert_eq!(tags.len(), 8, "consecutive worlds have distinct tags");
    // A replay (or a load) into a world with the recorded tag reproduces the ids exactly.
    let run = |mut world: World| -> Vec<u64> {
        let ids: Vec<Entity> = (0..5).map(|i| world.spawn((Hp(i),))).collect();
        world.despawn(ids[2]).unwrap();
        (0..3).map(|i| world.spawn((Hp(i),)).to_bits()).collect()
    };
    assert_eq!(run(World::with_tag(77)), run(World::with_tag(77)));
    assert_ne!(run(World::with_tag(77)), run(World::with_tag(78)));
}

#[test]
fn a_dead_handle_of_this_world_is_still_no_such_entity() {
    let mut world = World::with_tag(5);
    let e = world.spawn((Hp(1),));
    world.despawn(e).unwrap();
    assert_eq!(world.get::<Hp>(e), Err(EntityError::NoSuchEntity(e)));
    assert_eq!(world.despawn(e), Err(EntityError::NoSuchEntity(e)));
    // Same tag, same slot, newer generation: the old handle never reaches the new entity.
    let again = world.spawn((Hp(2),));
    assert_eq!(again.index(), e.index());
    assert_eq!(world.get::<Hp>(e), Err(EntityError::NoSuchEntity(e)));
}
