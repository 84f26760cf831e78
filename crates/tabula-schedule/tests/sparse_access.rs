//! A sparse-set component in systems: the scheduler's access checks are by component id,
//! so a system writing a sparse component is ordered against one reading it, whatever the
//! storage, and systems see and change sparse values through their queries.

use tabula_core::World;
use tabula_schedule::SystemOrder;
use tabula_schedule::prelude::*;

#[derive(Debug, PartialEq)]
struct Stunned(u32);
struct Gold(u32);

fn stun(mut q: Query<&mut Stunned>) {
    q.for_each(|mut s| s.0 += 1);
}
fn look(q: Query<&Stunned>, mut total: ResMut<Total>) {
    total.0 = q.iter().map(|s| s.0).sum();
}
fn mine(mut q: Query<&mut Gold>) {
    q.for_each(|mut g| g.0 += 1);
}

#[derive(Default)]
struct Total(u32);

#[test]
fn a_sparse_write_conflicts_with_a_sparse_read() {
    let mut world = World::new();
    world.register_component::<Stunned>().sparse_set();
    world.insert_resource(Total::default());
    world.spawn((Gold(0), Stunned(1)));
    world.spawn((Gold(0),));
    world.spawn((Gold(0), Stunned(10)));
    let mut schedule = Schedule::new();
    schedule.add_systems((stun, look, mine));
    let SystemOrder::Before(path) = schedule.explain(&mut world, stun, look).unwrap() else {
        panic!("stun and look both name `Stunned`, one writing it: they must be ordered");
    };
    assert_eq!(path[0].reason, "data conflict on `Stunned`");
    schedule.assert_parallel(&mut world, stun, mine);
    schedule.run(&mut world);
    assert_eq!(world.resource::<Total>().unwrap().0, 13);
}
