//! The ready-made run conditions and the combinators: each decides as documented, the
//! combinators short-circuit, and a combined condition is ordered by its parts' accesses.

use tabula_core::World;
use tabula_schedule::condition::{
    and, any_with_component, not, on_event, or, resource_added, resource_changed, resource_equals,
    resource_exists, run_once,
};
use tabula_schedule::prelude::*;

#[derive(Default)]
struct Ran(Vec<&'static str>);
#[derive(Clone, Copy, PartialEq)]
struct Level(u32);
struct Boom;
struct Enemy;

macro_rules! marker {
    ($($name:ident)*) => {$(
        fn $name(mut ran: ResMut<Ran>) {
            ran.0.push(stringify!($name));
        }
    )*};
}
marker!(exists changed added equals event enemy once neither both either);

fn frame(world: &mut World, schedule: &mut Schedule) -> Vec<&'static str> {
    world.resource_mut::<Ran>().unwrap().0.clear();
    schedule.run(world);
    world.resource::<Ran>().unwrap().0.clone()
}

#[test]
fn each_condition_decides_as_documented() {
    let mut world = World::new();
    world.init_resource::<Ran>();
    world.add_event::<Boom>();
    let mut schedule = Schedule::new();
    schedule.add_systems(
        (
            exists.run_if(resource_exists::<Level>),
            changed.run_if(resource_changed::<Level>),
            added.run_if(resource_added::<Level>),
            equals.run_if(resource_equals(Level(2))),
            event.run_if(on_event::<Boom>),
            enemy.run_if(any_with_component::<Enemy>),
            once.run_if(run_once),
            neither.run_if(not(or(resource_exists::<Level>, on_event::<Boom>))),
            both.run_if(and(resource_exists::<Level>, any_with_component::<Enemy>)),
            either.run_if(or(resource_equals(Level(2)), any_with_component::<Enemy>)),
        )
            .chain(),
    );
    assert_eq!(frame(&mut world, &mut schedule), ["once", "neither"]);
    world.insert_resource(Level(1));
    assert_eq!(frame(&mut world, &mut schedule), ["exists", "changed", "added"]);
    assert_eq!(frame(&mut world, &mut schedule), ["exists"]);
    world.insert_resource(Level(2));
    world.send_event(Boom).unwrap();
    assert_eq!(
        frame(&mut world, &mut schedule),
        ["exists", "changed", "equals", "event", "either"]
    );
    let foe = world.spawn((Enemy,));
    assert_eq!(
        frame(&mut world, &mut schedule),
        ["exists", "equals", "enemy", "both", "either"]
    );
    world.despawn(foe).unwrap();
    world.remove_resource::<Level>().unwrap();
    assert_eq!(frame(&mut world, &mut schedule), ["neither"]);
}

#[test]
fn and_and_or_short_circuit() {
    // `run_once` on the right only counts the runs it was asked: with `and(false, ..)` it is
    // never asked, so when the left turns true it still says yes once.
    fn open(level: Option<Res<Level>>) -> bool {
        level.is_some()
    }
    let mut world = World::new();
    world.init_resource::<Ran>();
    let mut schedule = Schedule::new();
    schedule.add_systems(
        (
            both.run_if(and(open, run_once)),
            either.run_if(or(not(open), run_once)),
        )
            .chain(),
    );
    assert_eq!(
        frame(&mut world, &mut schedule),
        ["either"],
        "or: the left decided"
    );
    assert_eq!(frame(&mut world, &mut schedule), ["either"]);
    world.insert_resource(Level(1));
    assert_eq!(
        frame(&mut world, &mut schedule),
        ["both", "either"],
        "both right sides ran once"
    );
    assert_eq!(frame(&mut world, &mut schedule), Vec::<&str>::new());
}

#[test]
fn a_combined_condition_carries_both_accesses() {
    // `bump` writes `Level`; a system guarded by a combination that reads `Level` must be
    // ordered against it (the conflict names `Level`), not run beside it.
    fn bump(mut level: ResMut<Level>) {
        level.0 += 1;
    }
    let mut world = World::new();
    world.init_resource::<Ran>();
    world.insert_resource(Level(1));
    let mut schedule = Schedule::new();
    schedule.add_systems((
        bump,
        exists.run_if(not(not(and(run_once, resource_equals(Level(2)))))),
    ));
    let dependencies = schedule.dependencies(&mut world).unwrap();
    assert!(
        dependencies
            .iter()
            .any(|d| d.before.ends_with("bump") && d.after.ends_with("exists") && d.reason.contains("Level")),
        "{dependencies:?}"
    );
    assert_eq!(frame(&mut world, &mut schedule), ["exists"]);
    let name = schedule.order(&mut world).unwrap();
    assert!(name.iter().any(|n| n.ends_with("exists")));
}
