//! The hierarchy example: propagation composes transforms down the tree, re-parenting moves a
//! moon under its new planet, and `despawn_recursive` leaves no dangling links.

use tabula::prelude::*;
use tabula::schedule::ExecutorKind;
use tabula_examples::hierarchy::{
    Body, CAPTURED_RADIUS, GlobalTransform, LocalTransform, Scenario, SolarSystem, Transform2,
};

fn local(system: &SolarSystem, entity: Entity) -> Transform2 {
    system.world.get::<LocalTransform>(entity).unwrap().0
}

fn global(system: &SolarSystem, entity: Entity) -> Transform2 {
    system.world.get::<GlobalTransform>(entity).unwrap().0
}

fn assert_close(a: Transform2, b: Transform2, what: &str) {
    let close = |x: f32, y: f32| (x - y).abs() <= 1e-3 * (1.0 + x.abs().max(y.abs()));
    assert!(
        close(a.offset.0, b.offset.0) && close(a.offset.1, b.offset.1) && close(a.angle, b.angle),
        "{what}: {a:?} != {b:?}"
    );
}

/// The composition of the local transforms from the root down to `entity`.
fn composed(system: &SolarSystem, entity: Entity) -> Transform2 {
    let mut chain = vec![entity];
    while let Some(parent) = system.world.parent(*chain.last().unwrap()).unwrap() {
        chain.push(parent);
    }
    chain
        .iter()
        .rev()
        .fold(Transform2::IDENTITY, |acc, &e| acc.then(&local(system, e)))
}

fn no_script() -> Scenario {
    Scenario {
        reparent_at: None,
        destroy_at: None,
    }
}

#[test]
fn a_moons_global_transform_is_the_composition_of_its_ancestors() {
    let mut system = SolarSystem::new(no_script(), ExecutorKind::Parallel);
    let (sun, earth, moon) = (
        system.find("Sun").unwrap(),
        system.find("Earth").unwrap(),
        system.find("Moon").unwrap(),
    );
    system.step();
    let start = global(&system, moon);
    for _ in 0..20 {
        system.step();
    }
    assert_eq!(system.world.parent(moon).unwrap(), Some(earth));
    assert_eq!(system.world.parent(earth).unwrap(), Some(sun));
    let by_hand = local(&system, sun)
        .then(&local(&system, earth))
        .then(&local(&system, moon));
    assert_close(global(&system, moon), by_hand, "Moon");
    assert_ne!(global(&system, moon), start, "orbiting moved the Moon");
    // And for every body at once.
    let mut bodies = system.world.query::<(Entity, &Body)>();
    let all: Vec<(Entity, &'static str)> = bodies.iter(&system.world).map(|(e, b)| (e, b.name)).collect();
    for (entity, name) in all {
        assert_close(global(&system, entity), composed(&system, entity), name);
    }
    // The Moon stays at its orbital radius from Earth in the world frame.
    let (m, e) = (global(&system, moon).offset, global(&system, earth).offset);
    assert!(((m.0 - e.0).hypot(m.1 - e.1) - 8.0).abs() < 1e-3);
}

#[test]
fn reparenting_moves_the_moon_under_the_new_planet() {
    let mut system = SolarSystem::new(
        Scenario {
            reparent_at: Some(5),
            destroy_at: None,
        },
        ExecutorKind::Parallel,
    );
    let (earth, mars, moon) = (
        system.find("Earth").unwrap(),
        system.find("Mars").unwrap(),
        system.find("Moon").unwrap(),
    );
    for _ in 0..5 {
        system.step();
    }
    assert_eq!(system.world.parent(moon).unwrap(), Some(earth));
    system.step();
    assert!(
        system.schedule.command_errors().is_empty(),
        "{:?}",
        system.schedule.command_errors()
    );
    assert_eq!(system.world.parent(moon).unwrap(), Some(mars));
    assert!(!system.world.children(earth).unwrap().contains(&moon));
    assert!(system.world.children(earth).unwrap().is_empty());
    assert!(
        !system.world.has::<Children>(earth),
        "an emptied Children component is removed"
    );
    assert_eq!(system.world.children(mars).unwrap().last(), Some(&moon));
    // Propagated in the same frame: the scenario's commands were applied before `Update`.
    assert_close(global(&system, moon), composed(&system, moon), "Moon under Mars");
    let (m, p) = (global(&system, moon).offset, global(&system, mars).offset);
    assert!(((m.0 - p.0).hypot(m.1 - p.1) - CAPTURED_RADIUS).abs() < 1e-3);
    assert_eq!(system.chronicle().len(), 1);
    assert!(system.tree().contains("└─ Moon"));
}

#[test]
fn despawn_recursive_removes_the_subtree_and_leaves_no_dangling_links() {
    let mut system = SolarSystem::new(
        Scenario {
            reparent_at: Some(2),
            destroy_at: Some(4),
        },
        ExecutorKind::Parallel,
    );
    let sun = system.find("Sun").unwrap();
    let jupiter = system.find("Jupiter").unwrap();
    let jovians: Vec<Entity> = system.world.children(jupiter).unwrap().to_vec();
    assert_eq!(jovians.len(), 4);
    let before = system.world.len();
    for _ in 0..6 {
        system.step();
        assert!(
            system.schedule.command_errors().is_empty(),
            "{:?}",
            system.schedule.command_errors()
        );
    }
    assert_eq!(system.world.len(), before - 5);
    assert!(!system.world.contains(jupiter));
    assert!(jovians.iter().all(|&moon| !system.world.contains(moon)));
    assert!(!system.world.children(sun).unwrap().contains(&jupiter));
    assert_eq!(system.world.children(sun).unwrap().len(), 4);

    // Both sides of every link agree, and every linked entity is alive.
    let mut parents = system.world.query::<(Entity, &Parent)>();
    for (child, parent) in parents.iter(&system.world) {
        assert!(system.world.contains(parent.get()), "{child:?} has a dead parent");
        assert!(system.world.children(parent.get()).unwrap().contains(&child));
    }
    let mut lists = system.world.query::<(Entity, &Children)>();
    for (parent, children) in lists.iter(&system.world) {
        assert!(!children.is_empty());
        for &child in children {
            assert_eq!(
                system.world.parent(child),
                Ok(Some(parent)),
                "{child:?} under {parent:?}"
            );
        }
    }
    // The rest keeps propagating.
    let mars = system.find("Mars").unwrap();
    assert_eq!(system.world.children(mars).unwrap().len(), 3);
    let mut bodies = system.world.query::<(Entity, &Body)>();
    let all: Vec<(Entity, &'static str)> = bodies.iter(&system.world).map(|(e, b)| (e, b.name)).collect();
    assert_eq!(all.len(), 8);
    for (entity, name) in all {
        assert_close(global(&system, entity), composed(&system, entity), name);
    }
}
