//! The storage API as a program: spawn, insert, get, remove, despawn, saying what happens.
//!
//! Run it with `cargo run --release -p tabula-examples --example quickstart`.

use tabula::prelude::*;

#[derive(Clone, Copy, Debug, PartialEq)]
struct Position(f32, f32);
#[derive(Clone, Copy, Debug, PartialEq)]
struct Velocity(f32, f32);

/// The type names of the components `entity` has now, i.e. its archetype.
fn shape(world: &World, entity: Entity) -> Result<Vec<&'static str>, EntityError> {
    Ok(world.entity(entity)?.component_names().collect())
}

fn main() -> Result<(), EntityError> {
    let mut world = World::new();

    let ship = world.spawn((Position(0.0, 0.0), "ship"));
    println!("spawned {ship:?} with {:?}", shape(&world, ship)?);

    world.insert(ship, (Velocity(1.0, 2.0),))?;
    println!("inserted Velocity: {ship:?} now has {:?}", shape(&world, ship)?);

    let v = *world.get::<Velocity>(ship)?;
    let mut p = world.get_mut::<Position>(ship)?;
    p.0 += v.0;
    p.1 += v.1;
    println!("moved by {v:?}: {:?}", world.get::<Position>(ship)?);
    assert_eq!(world.get::<Position>(ship)?, &Position(1.0, 2.0));

    let (velocity,) = world.remove::<(Velocity,)>(ship)?;
    println!(
        "removed {velocity:?}: {ship:?} has {:?} again",
        shape(&world, ship)?
    );
    assert_eq!(velocity, Velocity(1.0, 2.0));

    match world.get::<Velocity>(ship) {
        Err(error) => println!("reading the removed component is an error value: {error}"),
        Ok(v) => unreachable!("Velocity was removed, yet read {v:?}"),
    }

    world.despawn(ship)?;
    println!("despawned {ship:?}; the world holds {} entities", world.len());
    match world.despawn(ship) {
        Err(error) => println!("despawning it again is an error too: {error}"),
        Ok(()) => unreachable!("a stale id despawned twice"),
    }

    let next = world.spawn((Position(5.0, 5.0),));
    println!(
        "{next:?} reuses slot {} with generation {}, so the stale {ship:?} stays dead: contains = {}",
        next.index(),
        next.generation(),
        world.contains(ship)
    );
    Ok(())
}
