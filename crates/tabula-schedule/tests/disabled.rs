//! Entity disabling through systems: the system parameter `Query` (every method), a
//! `SystemState`, and observers skip or see `Disabled` entities as `QueryState` does.

use std::sync::Mutex;

use tabula::prelude::*;
use tabula_schedule::SystemState;

#[derive(Debug, PartialEq, Clone, Copy)]
struct Pos(u32);

#[derive(Default)]
struct Seen(Vec<(&'static str, Vec<u32>)>);

fn sorted(mut v: Vec<u32>) -> Vec<u32> {
    v.sort_unstable();
    v
}

fn record(seen: &mut Seen, label: &'static str, values: Vec<u32>) {
    seen.0.push((label, sorted(values)));
}

#[derive(Clone)]
struct Ids(Vec<Entity>);

fn reads(q: Query<&Pos>, ids: Res<Ids>, mut seen: ResMut<Seen>) {
    record(&mut seen, "iter", q.iter().map(|p| p.0).collect());
    record(&mut seen, "into_iter", (&q).into_iter().map(|p| p.0).collect());
    record(&mut seen, "count", vec![q.count() as u32]);
    record(&mut seen, "single", q.single().map(|p| p.0).into_iter().collect());
    let found = ids.0.iter().filter_map(|&e| q.get(e).ok()).map(|p| p.0).collect();
    record(&mut seen, "get", found);
    let contained = ids.0.iter().filter(|&&e| q.contains(e)).count() as u32;
    record(&mut seen, "contains", vec![contained]);
    record(
        &mut seen,
        "iter_many",
        q.iter_many(ids.0.iter().copied()).map(|p| p.0).collect(),
    );
    let pairs = q.iter_combinations::<2>().count() as u32;
    record(&mut seen, "iter_combinations", vec![pairs]);
    let par = Mutex::new(Vec::new());
    q.par_for_each(|p| par.lock().unwrap().push(p.0));
    record(&mut seen, "par_for_each", par.into_inner().unwrap());
}

fn writes(mut q: Query<&mut Pos>, ids: Res<Ids>, mut seen: ResMut<Seen>) {
    let mut each = Vec::new();
    q.for_each(|p| each.push(p.0));
    record(&mut seen, "for_each", each);
    let mut rows = 0;
    q.for_each_chunk(|chunk| rows += chunk.len() as u32);
    record(&mut seen, "for_each_chunk", vec![rows]);
    let par_mut = Mutex::new(Vec::new());
    q.par_for_each_mut(|p| par_mut.lock().unwrap().push(p.0));
    record(&mut seen, "par_for_each_mut", par_mut.into_inner().unwrap());
    record(&mut seen, "iter_mut", q.iter_mut().map(|p| p.0).collect());
    // The read-only forms of a mutable query.
    record(&mut seen, "iter (mut query)", q.iter().map(|p| p.0).collect());
    let mut found = Vec::new();
    for &e in &ids.0 {
        if let Ok(p) = q.get_mut(e) {
            found.push(p.0);
        }
    }
    record(&mut seen, "get_mut", found);
    record(
        &mut seen,
        "single_mut",
        q.single_mut().map(|p| p.0).into_iter().collect(),
    );
    let mut many = Vec::new();
    q.for_each_many_mut(ids.0.iter().copied(), |p| many.push(p.0));
    record(&mut seen, "for_each_many_mut", many);
    let mut pairs = 0;
    q.for_each_combination_mut::<2>(|_| pairs += 1);
    record(&mut seen, "for_each_combination_mut", vec![pairs]);
}

fn changed(q: Query<&Pos, Changed<Pos>>, added: Query<&Pos, Added<Pos>>, mut seen: ResMut<Seen>) {
    record(&mut seen, "changed", q.iter().map(|p| p.0).collect());
    record(&mut seen, "added", added.iter().map(|p| p.0).collect());
}

fn allowed(q: Query<&Pos, Allow<Disabled>>, pool: Query<&Pos, With<Disabled>>, mut seen: ResMut<Seen>) {
    record(&mut seen, "allowed", q.iter().map(|p| p.0).collect());
    record(&mut seen, "pool", pool.iter().map(|p| p.0).collect());
}

#[test]
fn every_system_query_method_skips_disabled_entities_unless_asked() {
    let mut world = World::new();
    world.init_resource::<Seen>();
    let live = world.spawn((Pos(1),));
    let off = world.spawn((Pos(2), Disabled));
    world.insert_resource(Ids(vec![live, off]));
    let mut schedule = Schedule::new();
    schedule.add_systems((reads, writes, changed, allowed).chain());
    schedule.run(&mut world);
    let seen = std::mem::take(&mut world.resource_mut::<Seen>().unwrap().0);
    let expected: Vec<(&str, Vec<u32>)> = vec![
        ("iter", vec![1]),
        ("into_iter", vec![1]),
        ("count", vec![1]),
        ("single", vec![1]),
        ("get", vec![1]),
        ("contains", vec![1]),
        ("iter_many", vec![1]),
        ("iter_combinations", vec![0]),
        ("par_for_each", vec![1]),
        ("for_each", vec![1]),
        ("for_each_chunk", vec![1]),
        ("par_for_each_mut", vec![1]),
        ("iter_mut", vec![1]),
        ("iter (mut query)", vec![1]),
        ("get_mut", vec![1]),
        ("single_mut", vec![1]),
        ("for_each_many_mut", vec![1]),
        ("for_each_combination_mut", vec![0]),
        ("changed", vec![1]),
        ("added", vec![1]),
        ("allowed", vec![1, 2]),
        ("pool", vec![2]),
    ];
    assert_eq!(seen, expected);

    // Enabling moves the entity into the systems' queries, built before.
    world.remove::<(Disabled,)>(off).unwrap();
    schedule.run(&mut world);
    let seen = std::mem::take(&mut world.resource_mut::<Seen>().unwrap().0);
    let of = |label: &str| seen.iter().find(|(l, _)| *l == label).unwrap().1.clone();
    assert_eq!(of("iter"), [1, 2]);
    assert_eq!(of("for_each"), [1, 2]);
    assert_eq!(of("iter_combinations"), [1]);
    assert_eq!(of("single"), Vec::<u32>::new(), "two match now");
    assert_eq!(of("pool"), Vec::<u32>::new());
}

#[test]
fn system_state_skips_disabled_entities() {
    let mut world = World::new();
    world.spawn((Pos(1),));
    let off = world.spawn((Pos(2), Disabled));
    let mut state = SystemState::<(Query<&Pos>, Query<Entity, With<Disabled>>)>::new(&mut world);
    let (positions, pool) = state.get(&world);
    assert_eq!(positions.iter().map(|p| p.0).collect::<Vec<_>>(), [1]);
    assert_eq!(pool.iter().collect::<Vec<_>>(), [off]);
    let mut writer = SystemState::<Query<&mut Pos>>::new(&mut world);
    let mut q = writer.get_mut(&mut world);
    let mut n = 0;
    q.for_each(|_| n += 1);
    assert_eq!(n, 1);
}

#[test]
fn observers_run_for_disabled_entities() {
    #[derive(Default)]
    struct Log(Vec<(&'static str, Entity)>);
    fn on_add(trigger: Trigger<OnAdd<Pos>>, mut log: ResMut<Log>) {
        log.0.push(("add", trigger.target()));
    }
    fn on_despawn(trigger: Trigger<OnDespawn<Pos>>, mut log: ResMut<Log>) {
        log.0.push(("despawn", trigger.target()));
    }
    let mut world = World::new();
    world.init_resource::<Log>();
    world.observe(on_add);
    world.observe(on_despawn);
    let off = world.spawn((Pos(1), Disabled));
    world.despawn(off).unwrap();
    assert_eq!(
        world.resource::<Log>().unwrap().0,
        [("add", off), ("despawn", off)]
    );
}
