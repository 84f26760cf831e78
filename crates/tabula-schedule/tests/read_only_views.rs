//! A query with mutable terms read through shared access: `iter`, `get`, `get_many`,
//! `single`, `iter_many`, `iter_combinations` and `for x in &query` hand out the terms'
//! read-only forms (`&T` for `&mut T`), and reading marks nothing changed.

use tabula_core::{Changed, Entity, World};
use tabula_schedule::SystemState;
use tabula_schedule::prelude::*;

#[derive(Debug, PartialEq)]
struct Pos(i32);
#[derive(Debug, PartialEq)]
struct Vel(i32);
#[derive(Default, Debug, PartialEq)]
struct Seen(Vec<i32>);

#[test]
fn a_mutable_query_is_read_as_its_read_only_form() {
    fn system(mut q: Query<(&mut Pos, &Vel)>, mut seen: ResMut<Seen>) {
        // Read first: `(&Pos, &Vel)` items from `&self`.
        let total: i32 = q.iter().map(|(p, v): (&Pos, &Vel)| p.0 + v.0).sum();
        seen.0.push(total);
        seen.0.extend((&q).into_iter().map(|(p, _)| p.0));
        // Then write.
        for (mut p, v) in &mut q {
            p.0 += v.0;
        }
        seen.0.extend(q.iter().map(|(p, _)| p.0));
    }
    let mut world = World::new();
    world.init_resource::<Seen>();
    world.spawn((Pos(1), Vel(10)));
    let mut schedule = Schedule::new();
    schedule.add_systems(system);
    schedule.run(&mut world);
    assert_eq!(world.resource::<Seen>().unwrap().0, [11, 1, 11]);
}

#[test]
fn lookups_through_a_mutable_query_are_read_only() {
    let mut world = World::new();
    let a = world.spawn((Pos(1), Vel(0)));
    let b = world.spawn((Pos(2), Vel(0)));
    let c = world.spawn((Pos(3),));
    let mut state = SystemState::<Query<(Entity, &mut Pos), tabula_core::With<Vel>>>::new(&mut world);
    let q = state.get_mut(&mut world);
    assert_eq!(q.get(a).map(|(_, p)| p.0), Ok(1));
    let [x, y] = q.get_many([b, a]).unwrap();
    assert_eq!((x.1.0, y.1.0), (2, 1));
    assert_eq!(
        q.iter_many([c, b, a, b]).map(|(_, p)| p.0).collect::<Vec<_>>(),
        [2, 1, 2]
    );
    let pairs: Vec<(i32, i32)> = q.iter_combinations::<2>().map(|[x, y]| (x.1.0, y.1.0)).collect();
    assert_eq!(pairs.len(), 1);
    assert!(q.single().is_err(), "two match");
    assert!(q.get(c).is_err(), "c has no Vel");
}

#[test]
fn reading_a_mutable_query_marks_nothing_changed() {
    fn read(q: Query<&mut Pos>, mut seen: ResMut<Seen>) {
        seen.0.extend(q.iter().map(|p| p.0));
    }
    fn changed(q: Query<&Pos, Changed<Pos>>, mut seen: ResMut<Seen>) {
        seen.0.push(q.count() as i32 * 100);
    }
    let mut world = World::new();
    world.init_resource::<Seen>();
    world.spawn((Pos(7),));
    let mut schedule = Schedule::new();
    schedule.add_systems((read, changed).chain());
    schedule.run(&mut world); // the spawn counts as a change
    schedule.run(&mut world);
    assert_eq!(world.resource::<Seen>().unwrap().0, [7, 100, 7, 0]);
}
