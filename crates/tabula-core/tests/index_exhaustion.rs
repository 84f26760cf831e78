//! The end of the entity index space: every way to spawn is refused there with a clear
//! error, and the world stays consistent and usable (a test-only slot limit stands in for
//! the real `u32::MAX - 1`).

use std::panic::{AssertUnwindSafe, catch_unwind};

use tabula::{CommandError, CommandQueue, Commands, Entity, EntityError, ParallelCommandQueue, World};

const LIMIT: u32 = 8;

/// A world with `LIMIT - 1` entities `(i,)` and a slot limit of `LIMIT`.
fn nearly_full() -> (World, Vec<Entity>) {
    let mut world = World::new();
    world.set_entity_slot_limit(LIMIT);
    let ids = (0..LIMIT - 1).map(|i| world.spawn((i,))).collect();
    (world, ids)
}

/// Every entity's value, in query order.
fn values(world: &mut World) -> Vec<u32> {
    world.query::<&u32>().iter(world).copied().collect()
}

#[test]
fn try_spawn_returns_the_error_and_spawn_panics_leaving_the_world_whole() {
    let (mut world, ids) = nearly_full();
    let last = world.try_spawn((100u32,)).expect("the last slot");
    assert_eq!(
        world.try_spawn((101u32,)),
        Err(EntityError::IndexSpaceExhausted { slots: LIMIT })
    );
    let message = EntityError::IndexSpaceExhausted { slots: LIMIT }.to_string();
    assert!(
        message.contains("8 entity slots") && message.contains("despawn"),
        "{message}"
    );
    let panic = catch_unwind(AssertUnwindSafe(|| world.spawn((102u32,)))).expect_err("spawn panics");
    let text = panic.downcast_ref::<String>().expect("a formatted message");
    assert!(text.contains("try_spawn") && text.contains("unchanged"), "{text}");
    // Nothing was half made: the same entities, the same values.
    assert_eq!(world.len(), LIMIT);
    assert_eq!(values(&mut world), [0, 1, 2, 3, 4, 5, 6, 100]);
    // A despawn makes room again, and the slot is reused.
    world.despawn(ids[3]).unwrap();
    let again = world.spawn((103u32,));
    assert_eq!(again.index(), ids[3].index());
    assert!(world.contains(last) && !world.contains(ids[3]));
}

#[test]
fn spawn_batch_stops_at_the_limit_with_every_spawned_row_whole() {
    let mut world = World::new();
    world.set_entity_slot_limit(LIMIT);
    let spawned = catch_unwind(AssertUnwindSafe(|| {
        world
            .spawn_batch((0..20u32).map(|i| (i, format!("#{i}"))))
            .count()
    }));
    assert!(spawned.is_err(), "the ninth spawn is refused");
    assert_eq!(world.len(), LIMIT);
    let rows: Vec<(u32, String)> = world
        .query::<(&u32, &String)>()
        .iter(&world)
        .map(|(i, s)| (*i, s.clone()))
        .collect();
    assert_eq!(rows, (0..LIMIT).map(|i| (i, format!("#{i}"))).collect::<Vec<_>>());
}

#[test]
fn reservations_past_the_limit_become_no_entity_and_their_spawns_are_refused() {
    let (mut world, ids) = nearly_full();
    let mut queue = CommandQueue::new();
    let mut commands = Commands::new(&mut queue, &world);
    let fits = commands.spawn((200u32,)).id();
    let refused = commands.spawn((201u32,)).id();
    let also_refused = world.reserve_entity();
    assert_eq!(refused.index(), u32::MAX, "a placeholder no slot has");
    assert_eq!(also_refused, refused, "placeholders are alike");
    let errors = queue.apply(&mut world);
    assert_eq!(
        errors,
        [CommandError::Entity {
            command: "spawn",
            entity: refused,
            error: EntityError::IndexSpaceExhausted { slots: LIMIT },
        }]
    );
    assert_eq!(world.len(), LIMIT);
    assert!(world.contains(fits) && !world.contains(refused));
    assert_eq!(world.get::<u32>(fits), Ok(&200));
    assert!(world.entity_slots() <= LIMIT as usize);
    // Parallel commands take their ids when applied: refused the same way, as a spawn.
    let mut parallel = ParallelCommandQueue::new();
    parallel.command_scope(|commands| commands.spawn((300u32,)));
    assert!(matches!(
        parallel.apply(&mut world)[..],
        [CommandError::Spawn {
            error: EntityError::IndexSpaceExhausted { .. },
            ..
        }]
    ));
    // The allocator is not bricked: freed slots are handed out to reservations again.
    world.despawn(ids[0]).unwrap();
    world.despawn(ids[1]).unwrap();
    let mut queue = CommandQueue::new();
    let mut commands = Commands::new(&mut queue, &world);
    let new = [commands.spawn((400u32,)).id(), commands.spawn((401u32,)).id()];
    assert!(queue.apply(&mut world).is_empty());
    assert!(new.iter().all(|&e| world.contains(e) && e.index() < LIMIT));
    assert_eq!(world.len(), LIMIT);
}
