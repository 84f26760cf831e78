//! The run plan (`query/plan.rs`): passes see every structural change made between them,
//! writes that leave the tables' shape alone keep the plan, and a pass that cannot refresh a
//! stale plan walks the archetypes instead. Miri runs all of these: a pointer kept past a
//! table's growth would be a use after free.

use std::collections::BTreeMap;

use crate::{Changed, Entity, LastRun, QueryState, UnsafeWorldCell, World};

#[derive(Debug, Clone, Copy, PartialEq)]
struct Pos(u32);
#[derive(Debug, Clone, Copy, PartialEq)]
struct Vel(u32);
#[derive(Debug, Clone, Copy, PartialEq)]
struct Tag;

fn shape(world: &World) -> u64 {
    world.archetype_shape()
}

/// One `for_each` pass that adds 1 to every `Pos`, returning what it saw.
fn bump_all(q: &mut QueryState<(Entity, &mut Pos)>, world: &mut World) -> BTreeMap<Entity, u32> {
    let mut seen = BTreeMap::new();
    q.for_each(world, |(entity, mut pos)| {
        pos.0 += 1;
        assert!(seen.insert(entity, pos.0).is_none(), "{entity:?} visited twice");
    });
    seen
}

/// Three passes, each adding 1 to every expected value as `bump_all` does to the world: the
/// first walks the archetypes, the second makes a plan and reads it, the third reads it again
/// (and the next structural change makes it stale).
fn check_pass(
    q: &mut QueryState<(Entity, &mut Pos)>,
    world: &mut World,
    expected: &mut BTreeMap<Entity, u32>,
    after: &str,
) {
    for pass in 0..3 {
        for value in expected.values_mut() {
            *value += 1;
        }
        assert_eq!(&bump_all(q, world), expected, "pass {pass} after {after}");
    }
    assert!(q.plan.at(shape(world)).is_some(), "a plan after {after}");
    let read: BTreeMap<Entity, u32> = world
        .query::<(Entity, &Pos)>()
        .iter(world)
        .map(|(e, p)| (e, p.0))
        .collect();
    assert_eq!(&read, expected, "world after the pass after {after}");
}

#[test]
fn for_each_sees_every_structural_change_between_passes() {
    let mut world = World::new();
    let mut q = world.query::<(Entity, &mut Pos)>();
    let mut expected = BTreeMap::new();
    check_pass(&mut q, &mut world, &mut expected, "nothing");

    for i in 0..3 {
        expected.insert(world.spawn((Pos(i),)), i);
    }
    check_pass(&mut q, &mut world, &mut expected, "spawn");

    // Enough rows to grow (and so move) the block of the table they move into below several
    // times: a third of them (33; 13 under Miri) get `Tag`, one at a time, from capacity 4 up.
    let n = if cfg!(miri) { 40 } else { 100 };
    let batch: Vec<Entity> = world.spawn_batch((0..n).map(|i| (Pos(i), Vel(i)))).collect();
    for (i, &e) in batch.iter().enumerate() {
        expected.insert(e, i as u32);
    }
    check_pass(&mut q, &mut world, &mut expected, "spawn_batch");

    for &e in batch.iter().step_by(3) {
        world.despawn(e).unwrap();
        expected.remove(&e);
    }
    check_pass(&mut q, &mut world, &mut expected, "despawn");

    // A new archetype, and rows moving into it.
    for &e in batch.iter().skip(1).step_by(3) {
        world.insert_one(e, Tag).unwrap();
    }
    check_pass(&mut q, &mut world, &mut expected, "insert");

    for &e in batch.iter().skip(1).step_by(6) {
        world.remove::<(Tag,)>(e).unwrap();
    }
    check_pass(&mut q, &mut world, &mut expected, "remove");

    world.check_change_ticks();
    check_pass(&mut q, &mut world, &mut expected, "check_change_ticks");

    world.clear();
    expected.clear();
    check_pass(&mut q, &mut world, &mut expected, "clear");

    let e = world.spawn((Pos(40), Tag));
    expected.insert(e, 40);
    check_pass(&mut q, &mut world, &mut expected, "spawn after clear");
}

#[test]
fn writes_that_keep_the_shape_keep_the_plan() {
    let mut world = World::new();
    let a = world.spawn((Pos(1), Vel(1)));
    let b = world.spawn((Pos(2),));
    let mut q = world.query::<(Entity, &mut Pos)>();
    bump_all(&mut q, &mut world);
    let before = shape(&world);
    assert!(q.plan.at(before).is_none(), "the first pass at a shape walks");
    bump_all(&mut q, &mut world);
    assert!(
        q.plan.at(before).is_some(),
        "the second pass at the same shape made a plan"
    );

    world.get_mut::<Pos>(a).unwrap().0 = 11;
    world.view_mut::<Pos>().get_mut(b).unwrap().0 = 21;
    world.entity_mut(a).unwrap().get_mut::<Vel>().unwrap().0 = 5;
    world.query::<&mut Vel>().for_each(&mut world, |mut v| v.0 += 1);
    world
        .query::<&mut Vel>()
        .iter_mut(&mut world)
        .for_each(|mut v| v.0 += 1);
    assert_eq!(shape(&world), before, "value writes leave the shape alone");

    let seen = bump_all(&mut q, &mut world);
    assert_eq!(seen, BTreeMap::from([(a, 12), (b, 22)]));
    assert!(q.plan.at(before).is_some(), "the plan was kept");
    assert_eq!(world.get::<Vel>(a).unwrap().0, 7);

    world.spawn((Pos(3),));
    assert_ne!(shape(&world), before, "a spawn changes the shape");
    assert_eq!(bump_all(&mut q, &mut world).len(), 3);
}

#[test]
fn for_each_unchecked_walks_the_archetypes_when_the_plan_is_stale() {
    let mut world = World::new();
    world.spawn_batch((0..3).map(|i| (Pos(i),))).for_each(drop);
    let mut q = world.query::<(Entity, &mut Pos)>();
    bump_all(&mut q, &mut world);
    bump_all(&mut q, &mut world);
    assert!(q.plan.at(shape(&world)).is_some());
    // The table grows and moves; the state learns of no new archetype, so its plan is stale.
    world.spawn_batch((3..80).map(|i| (Pos(i),))).for_each(drop);
    world.spawn((Pos(80), Tag));
    q.update_archetypes(&world);
    assert!(q.plan.at(shape(&world)).is_none());

    let mut last_run = LastRun::NEVER;
    let ticks = world.start_run(&mut last_run);
    let mut total = 0u64;
    let mut rows = 0;
    // SAFETY: `&mut World` is exclusive for the call, and the archetypes are up to date.
    unsafe {
        q.for_each_unchecked(UnsafeWorldCell::new_mutable(&mut world), ticks, |(_, mut pos)| {
            pos.0 += 1000;
            total += u64::from(pos.0);
            rows += 1;
        });
    }
    assert_eq!(rows, 81);
    // Rows 0..3 were bumped twice before; each row gained 1000 now.
    assert_eq!(total, (0..81).sum::<u64>() + 6 + 81 * 1000);

    // `update_plan` makes it fresh once the shape has been seen twice, and the unchecked
    // pass then reads it.
    q.update_plan(&world);
    assert!(q.plan.at(shape(&world)).is_none());
    q.update_plan(&world);
    assert!(q.plan.at(shape(&world)).is_some());
    let ticks = world.start_run(&mut last_run);
    let mut rows = 0;
    // SAFETY: as above.
    unsafe {
        q.for_each_unchecked(UnsafeWorldCell::new_mutable(&mut world), ticks, |_| rows += 1);
    }
    assert_eq!(rows, 81);
}

#[test]
fn for_each_chunk_and_tick_filters_follow_new_rows() {
    let mut world = World::new();
    world.spawn_batch((0..5).map(|i| (Pos(i), Vel(1)))).for_each(drop);
    let mut chunks = world.query::<(&mut Pos, &Vel)>();
    let mut changed = world.query_filtered::<Entity, Changed<Pos>>();
    let mut changed_count = |world: &mut World| {
        let mut n = 0;
        changed.for_each(world, |_| n += 1);
        n
    };
    assert_eq!(changed_count(&mut world), 5, "spawns count as changes");
    assert_eq!(changed_count(&mut world), 0);

    let mut sum = 0;
    chunks.for_each_chunk(&mut world, |(pos, vel)| {
        for (p, v) in pos.iter_mut().zip(vel) {
            p.0 += v.0;
            sum += p.0;
        }
    });
    assert_eq!(sum, (1..=5).sum::<u32>());
    assert_eq!(changed_count(&mut world), 5, "the chunk pass marked every row");

    // New rows in the same table (which grows) and in a new one.
    world
        .spawn_batch((0..60).map(|_| (Pos(0), Vel(2))))
        .for_each(drop);
    world.spawn((Pos(0), Vel(3), Tag));
    assert_eq!(changed_count(&mut world), 61, "only the new rows");
    let mut rows = 0;
    chunks.for_each_chunk(&mut world, |(pos, vel)| {
        rows += pos.len();
        assert_eq!(pos.len(), vel.len());
    });
    assert_eq!(rows, 66);
}

#[test]
fn a_plan_is_made_once_the_world_has_settled() {
    let mut world = World::new();
    world.spawn_batch((0..4).map(|i| (Pos(i),))).for_each(drop);
    let mut q = world.query::<(Entity, &mut Pos)>();
    // A world that changes before every pass: every pass walks, none makes a plan.
    for i in 0..3 {
        world.spawn((Pos(10 + i), Tag));
        assert_eq!(bump_all(&mut q, &mut world).len(), 5 + i as usize);
        assert!(q.plan.at(shape(&world)).is_none(), "pass {i} after a change");
    }
    // Unchanged since the last pass: this pass makes the plan and reads it, and so does the next.
    assert_eq!(bump_all(&mut q, &mut world).len(), 7);
    let settled = shape(&world);
    assert!(q.plan.at(settled).is_some());
    let seen = bump_all(&mut q, &mut world);
    assert_eq!(seen.len(), 7);
    assert_eq!(
        seen.values().copied().min(),
        Some(5),
        "Pos(0) was bumped five times"
    );
    assert_eq!(shape(&world), settled);
}
