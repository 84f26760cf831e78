//! Required components: every path that adds the requiring component adds the required ones
//! (transitively) before the call returns; given values are kept; cycles and repeats are
//! refused with the chain named, leaving the world unchanged.

use tabula_core::{CommandQueue, Commands, Entity, ParallelCommandQueue, RequiredComponentError, World};

#[derive(Debug, PartialEq)]
struct Unit;
#[derive(Default, Debug, PartialEq)]
struct Health(u32);
#[derive(Debug, PartialEq)]
struct Armor(u32);
#[derive(Default, Debug, PartialEq)]
struct Tag;

fn world() -> World {
    let mut world = World::new();
    world.register_component::<Unit>().requires::<Health>();
    world
        .register_component::<Health>()
        .requires_with(|| Armor(7))
        .requires::<Tag>();
    world
}

fn complete(world: &World, e: Entity, health: u32) {
    assert_eq!(world.get::<Health>(e), Ok(&Health(health)), "{e:?}");
    assert_eq!(world.get::<Armor>(e), Ok(&Armor(7)), "{e:?}");
    assert!(world.has::<Tag>(e), "{e:?}");
}

#[test]
fn every_path_adds_the_required_components_transitively() {
    let mut world = world();
    let spawned = world.spawn((Unit,));
    complete(&world, spawned, 0);
    let kept = world.spawn((Unit, Health(9)));
    complete(&world, kept, 9);

    let batch: Vec<Entity> = world.spawn_batch((0..3).map(|_| (Unit,))).collect();
    let mut folded = Vec::new();
    world
        .spawn_batch((0..3).map(|_| (Unit,)))
        .for_each(|e| folded.push(e));
    for &e in batch.iter().chain(&folded) {
        complete(&world, e, 0);
    }

    let plain = world.spawn((1u8,));
    world.insert(plain, (Unit,)).unwrap();
    complete(&world, plain, 0);
    let others: Vec<Entity> = (0..3).map(|_| world.spawn((2u8,))).collect();
    world.insert_batch(others.iter().map(|&e| (e, (Unit,)))).unwrap();
    for &e in &others {
        complete(&world, e, 0);
    }

    let reserved = world.reserve_entity();
    world.spawn_at(reserved, (Unit,)).unwrap();
    complete(&world, reserved, 0);

    let mut queue = CommandQueue::new();
    let by_command = Commands::new(&mut queue, &world).spawn((Unit,)).id();
    assert!(queue.apply(&mut world).is_empty());
    complete(&world, by_command, 0);

    let mut parallel = ParallelCommandQueue::new();
    parallel.command_scope(|scoped| scoped.spawn((Unit, 3u16)));
    assert!(parallel.apply(&mut world).is_empty());
    let e = world.query::<(Entity, &u16)>().iter(&world).next().unwrap().0;
    complete(&world, e, 0);
}

#[test]
fn only_gaining_the_component_adds_them() {
    let mut world = world();
    let e = world.spawn((Unit,));
    world.remove::<(Armor,)>(e).unwrap();
    // Replacing `Unit` is not gaining it.
    world.insert(e, (Unit,)).unwrap();
    assert!(!world.has::<Armor>(e));
    world.remove::<(Unit,)>(e).unwrap();
    world.insert(e, (Unit,)).unwrap();
    // `Health` is still there, so nothing is added for it either.
    assert!(!world.has::<Armor>(e));
}

#[test]
fn cycles_and_repeats_are_refused_with_the_chain() {
    let mut world = world();
    let error = world
        .register_component::<Tag>()
        .try_requires_with(|| Unit)
        .err()
        .unwrap();
    match &error {
        RequiredComponentError::Cycle { chain } => assert_eq!(chain.len(), 4, "{chain:?}"),
        other => panic!("{other:?}"),
    }
    assert!(
        error.to_string().contains("Tag -> Unit -> Health -> Tag"),
        "{error}"
    );
    let error = world
        .register_component::<Unit>()
        .try_requires_with(|| Unit)
        .err()
        .unwrap();
    assert!(error.to_string().contains("Unit -> Unit"), "{error}");
    let error = world
        .register_component::<Unit>()
        .try_requires_with(Health::default)
        .err()
        .unwrap();
    assert_eq!(
        error,
        RequiredComponentError::AlreadyRequired {
            component: std::any::type_name::<Unit>(),
            required: std::any::type_name::<Health>(),
        }
    );
    // Nothing changed: a `Tag` still adds nothing.
    let e = world.spawn((Tag,));
    assert!(!world.has::<Unit>(e));
    let unit = world.spawn((Unit,));
    complete(&world, unit, 0);
}

#[test]
#[should_panic(expected = "would form a cycle")]
fn requires_panics_on_a_cycle() {
    let mut world = world();
    world.register_component::<Tag>().requires_with(|| Unit);
}

#[test]
fn ids_are_the_same_on_every_run() {
    let run = || {
        let mut world = World::with_tag(9);
        world.register_component::<Unit>().requires::<Health>();
        let mut queue = CommandQueue::new();
        let mut commands = Commands::new(&mut queue, &world);
        let ids: Vec<Entity> = (0..4).map(|_| commands.spawn((Unit,)).id()).collect();
        assert!(queue.apply(&mut world).is_empty());
        let later = world.spawn(());
        (ids, later)
    };
    assert_eq!(run(), run());
}
