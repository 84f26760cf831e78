//! What many archetypes cost queries, and what disabled entities cost them.
//!
//! - `archetype_match/new_archetype`: a world of 1,000 archetypes (an `A` plus a combination
//!   of 14 tags, one entity each) with 100 cached queries; one step inserts a marker into
//!   one entity, which creates one new archetype, then updates every query
//!   (`QueryState::update_archetypes`). `0_queries` is the same insert with no query to
//!   update, so the difference is the queries' share.
//! - `archetype_match/new_query`: building a `QueryState<(&A, &T3)>` over 1,000 and 10,000
//!   archetypes (every archetype is tested once).
//! - `disabled`: `pos += vel` with `for_each` over 10,000 entities, in a world that also has
//!   1,000 disabled ones, beside the same world without them.
//!
//! Run with `cargo bench -p tabula-benches --bench archetype_match`; results are in
//! `docs/benchmarks.md` (section "Many archetypes").

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use tabula::QueryState;
use tabula::prelude::*;

struct A;
struct T<const N: usize>;
struct Marker<const N: usize>;

#[derive(Clone, Copy)]
struct Pos(f32);
#[derive(Clone, Copy)]
struct Vel(f32);

/// Inserts tag `bit` (0..14) into `e`.
fn insert_tag(world: &mut World, e: Entity, bit: u32) {
    macro_rules! tags {
        ($($n:literal)*) => {
            match bit {
                $($n => world.insert(e, (T::<$n>,)).unwrap(),)*
                _ => unreachable!("14 tags"),
            }
        };
    }
    tags!(0 1 2 3 4 5 6 7 8 9 10 11 12 13)
}

/// A world with at least `archetypes` archetypes: entities with an `A` and the tags of the
/// bits of 0, 1, 2, ..., one entity left in each combination. Returns one entity per
/// combination.
fn world_of(archetypes: usize) -> (World, Vec<Entity>) {
    let mut world = World::new();
    let mut entities = Vec::new();
    let mut combination = 0u32;
    while world.archetypes().len() < archetypes {
        let e = world.spawn((A,));
        for bit in (0..14).filter(|bit| combination & (1 << bit) != 0) {
            insert_tag(&mut world, e, bit);
        }
        entities.push(e);
        combination += 1;
    }
    (world, entities)
}

/// 100 cached queries of ten kinds, each updating itself when called.
fn cached_queries(world: &mut World) -> Vec<Box<dyn FnMut(&World)>> {
    fn cached<D: tabula::QueryData + 'static, F: tabula::QueryFilter + 'static>(
        world: &mut World,
    ) -> Box<dyn FnMut(&World)> {
        let mut state = QueryState::<D, F>::new(world);
        Box::new(move |world| state.update_archetypes(world))
    }
    let mut queries = Vec::new();
    for _ in 0..10 {
        queries.push(cached::<&A, ()>(world));
        queries.push(cached::<(&A, &T<0>), ()>(world));
        queries.push(cached::<(Entity, &mut A), With<T<1>>>(world));
        queries.push(cached::<&A, Without<T<2>>>(world));
        queries.push(cached::<(&A, Option<&T<3>>), ()>(world));
        queries.push(cached::<(&A, Has<T<4>>), Or<(With<T<5>>, With<T<6>>)>>(world));
        queries.push(cached::<&T<7>, (With<T<8>>, Without<T<9>>)>(world));
        queries.push(cached::<(&A, &T<10>, &T<11>), ()>(world));
        queries.push(cached::<Entity, Changed<A>>(world));
        queries.push(cached::<&Pos, ()>(world));
    }
    queries
}

/// Inserts marker `round` (0..4) into `e`, moving it to an archetype no entity was in.
fn insert_marker(world: &mut World, e: Entity, round: usize) {
    match round {
        0 => world.insert(e, (Marker::<0>,)),
        1 => world.insert(e, (Marker::<1>,)),
        2 => world.insert(e, (Marker::<2>,)),
        _ => world.insert(e, (Marker::<3>,)),
    }
    .unwrap();
}

fn new_archetype(c: &mut Criterion) {
    let mut group = c.benchmark_group("archetype_match/new_archetype");
    for queries in [0, 100] {
        group.bench_function(BenchmarkId::from_parameter(format!("{queries}_queries")), |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                let mut fresh: Option<(World, Vec<Entity>, Vec<Box<dyn FnMut(&World)>>, usize)> = None;
                for _ in 0..iters {
                    // A new world (untimed) once every entity has taken all four markers.
                    let (world, entities, cached, step) = match &mut fresh {
                        Some(f) if f.3 < 4 * f.1.len() => f,
                        _ => {
                            let (mut world, entities) = world_of(1_000);
                            let cached = if queries == 0 {
                                Vec::new()
                            } else {
                                cached_queries(&mut world)
                            };
                            fresh.insert((world, entities, cached, 0))
                        }
                    };
                    let e = entities[*step % entities.len()];
                    let round = *step / entities.len();
                    *step += 1;
                    let start = Instant::now();
                    insert_marker(world, e, round);
                    for query in cached.iter_mut() {
                        query(world);
                    }
                    total += start.elapsed();
                }
                total
            });
        });
    }
    group.finish();
}

fn new_query(c: &mut Criterion) {
    let mut group = c.benchmark_group("archetype_match/new_query");
    for archetypes in [1_000, 10_000] {
        let (mut world, _) = world_of(archetypes);
        group.bench_function(BenchmarkId::from_parameter(archetypes), |b| {
            b.iter(|| black_box(world.query::<(&A, &T<3>)>()));
        });
    }
    group.finish();
}

fn disabled(c: &mut Criterion) {
    let mut group = c.benchmark_group("disabled");
    for disabled in [0, 1_000] {
        let mut world = World::new();
        world
            .spawn_batch((0..10_000).map(|i| (Pos(i as f32), Vel(1.0))))
            .for_each(drop);
        world
            .spawn_batch((0..disabled).map(|i| (Pos(i as f32), Vel(1.0), Disabled)))
            .for_each(drop);
        let mut query = world.query::<(&mut Pos, &Vel)>();
        let name = if disabled == 0 {
            "without_disabled"
        } else {
            "with_1000_disabled"
        };
        group.bench_function(name, |b| {
            b.iter(|| query.for_each(&mut world, |(mut p, v)| p.0 += v.0));
        });
        assert_eq!(query.iter(&world).count(), 10_000, "disabled entities skipped");
    }
    group.finish();
}

criterion_group!(benches, new_archetype, new_query, disabled);
criterion_main!(benches);
