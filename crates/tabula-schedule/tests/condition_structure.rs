//! A combined condition (`and` / `or`) whose first part is exclusive: the second part is
//! fetched after the first changed the world's structure, so it must see the archetypes the
//! first made (its query state is brought up to date between the parts, as in a pipe).
//! Without that, `Query::get` of an entity in a new archetype indexes the state's
//! per-archetype table past its end. Schedules refuse exclusive conditions; a one-shot
//! system runs any system, so that is where the combination can occur.

use tabula_core::{Entity, World};
use tabula_schedule::condition::{and, or};
use tabula_schedule::prelude::*;

struct Fresh(u32);
struct Last(Entity);

fn spawn_fresh(world: &mut World) -> bool {
    let entity = world.spawn((Fresh(7),));
    world.insert_resource(Last(entity));
    true
}

fn spawn_fresh_then_refuse(world: &mut World) -> bool {
    !spawn_fresh(world)
}

fn get_fresh(last: Option<Res<Last>>, q: Query<&Fresh>) -> bool {
    last.is_some_and(|last| q.get(last.0).is_ok_and(|fresh| fresh.0 == 7))
}

fn count_fresh(q: Query<&Fresh>) -> bool {
    q.iter().count() == 1
}

#[test]
fn the_second_part_of_and_sees_what_its_exclusive_first_part_spawned() {
    let mut world = World::new();
    let id = world.register_system(and(spawn_fresh, get_fresh));
    assert!(world.run_system(id).unwrap());
    let mut world = World::new();
    let id = world.register_system(and(spawn_fresh, count_fresh));
    assert!(world.run_system(id).unwrap());
}

#[test]
fn the_second_part_of_or_sees_what_its_exclusive_first_part_spawned() {
    let mut world = World::new();
    let id = world.register_system(or(spawn_fresh_then_refuse, get_fresh));
    assert!(world.run_system(id).unwrap());
}
