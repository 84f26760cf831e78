//! A pipe whose first part is exclusive: the second part is fetched after the first changed
//! the world's structure, so it must see the archetypes the first made (its query state is
//! brought up to date between the parts). Without that, its query misses the new
//! archetypes and `Query::get` of an entity in one indexes the state's per-archetype table
//! past its end.

use tabula_core::{Entity, World};
use tabula_schedule::prelude::*;

struct Fresh(u32);

fn spawn_fresh(world: &mut World) -> Entity {
    world.spawn((Fresh(7),))
}

fn count_fresh(In(_): In<Entity>, q: Query<&Fresh>) -> usize {
    q.iter().count()
}

fn get_fresh(In(entity): In<Entity>, q: Query<&Fresh>) -> Option<u32> {
    q.get(entity).ok().map(|fresh| fresh.0)
}

#[test]
fn the_second_part_of_a_pipe_iterates_archetypes_its_exclusive_first_part_made() {
    let mut world = World::new();
    let id = world.register_system(spawn_fresh.pipe(count_fresh));
    assert_eq!(world.run_system(id).unwrap(), 1);
    assert_eq!(world.run_system(id).unwrap(), 2);
}

#[test]
fn the_second_part_of_a_pipe_looks_up_entities_its_exclusive_first_part_spawned() {
    let mut world = World::new();
    let id = world.register_system(spawn_fresh.pipe(get_fresh));
    assert_eq!(world.run_system(id).unwrap(), Some(7));
}

#[test]
fn a_scheduled_pipe_with_an_exclusive_first_part_sees_what_it_spawned() {
    #[derive(Default)]
    struct Seen(Vec<Option<u32>>);
    fn record(In(found): In<Option<u32>>, mut seen: ResMut<Seen>) {
        seen.0.push(found);
    }
    let mut world = World::new();
    world.init_resource::<Seen>();
    let mut schedule = Schedule::new();
    schedule.add_systems(spawn_fresh.pipe(get_fresh).pipe(record));
    schedule.run(&mut world);
    schedule.run(&mut world);
    assert_eq!(world.resource::<Seen>().unwrap().0, [Some(7), Some(7)]);
}
