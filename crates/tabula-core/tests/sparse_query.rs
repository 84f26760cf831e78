//! Queries over sparse-set components: each test body runs with the components under test
//! stored in tables and in sparse sets (registered sparse before use), and must give the
//! same results; queries mix table and sparse terms. Small counts, so that Miri runs the
//! file in seconds over the sparse path's unsafe code (`&mut` items into dense rows, drops).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use tabula_core::{
    Added, Allow, BatchSize, Changed, Disabled, Entity, Has, Mut, Or, ParallelCommandQueue, QueryData,
    QueryError, QueryFilter, QueryState, Ref, With, Without, World,
};

/// How the components under test are stored.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Storage {
    Table,
    Sparse,
}

/// Runs `body` once per storage, with a world where `Vel`, `Tag` and `Counted` are stored
/// that way (`Pos` is always in tables).
fn both(body: impl Fn(Storage, &mut World)) {
    for storage in [Storage::Table, Storage::Sparse] {
        let mut world = World::new();
        if storage == Storage::Sparse {
            world.register_component::<Vel>().sparse_set();
            world.register_component::<Tag>().sparse_set();
            world.register_component::<Counted>().sparse_set();
        }
        body(storage, &mut world);
    }
}

#[derive(Debug, PartialEq, Clone, Copy)]
struct Pos(u32);
#[derive(Debug, PartialEq, Clone, Copy)]
struct Vel(u32);
#[derive(Debug, PartialEq, Clone, Copy)]
struct Tag;
#[derive(Debug, PartialEq, Clone, Copy)]
struct Other;

/// A value whose drops are counted.
#[derive(Debug)]
struct Counted(Arc<AtomicUsize>, u64);

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

/// Spawns `n` entities with `Pos(i)`; every even one also gets `Vel(i)`, every third one
/// `Tag`, every fifth one `Other` (a second archetype dimension).
fn populate(world: &mut World, n: u32) -> Vec<Entity> {
    (0..n)
        .map(|i| {
            let e = world.spawn((Pos(i),));
            if i % 2 == 0 {
                world.insert(e, (Vel(i),)).unwrap();
            }
            if i % 3 == 0 {
                world.insert(e, (Tag,)).unwrap();
            }
            if i % 5 == 0 {
                world.insert(e, (Other,)).unwrap();
            }
            e
        })
        .collect()
}

const N: u32 = if cfg!(miri) { 12 } else { 30 };

fn sorted<T: Ord>(mut v: Vec<T>) -> Vec<T> {
    v.sort();
    v
}

#[test]
fn reads_and_filters_match_the_table_results() {
    both(|storage, world| {
        populate(world, N);
        let moving = sorted(
            world
                .query::<(&Pos, &Vel)>()
                .iter(world)
                .map(|(p, v)| (p.0, v.0))
                .collect(),
        );
        let expected: Vec<_> = (0..N).filter(|i| i % 2 == 0).map(|i| (i, i)).collect();
        assert_eq!(moving, expected, "{storage:?}");

        let optional = sorted(
            (world.query::<(&Pos, Option<&Vel>)>().iter(world))
                .map(|(p, v)| (p.0, v.map(|v| v.0)))
                .collect(),
        );
        assert_eq!(optional.len(), N as usize, "{storage:?}");
        assert!(
            optional.iter().all(|&(p, v)| v == (p % 2 == 0).then_some(p)),
            "{storage:?}"
        );

        let has = sorted(
            world
                .query::<(&Pos, Has<Tag>)>()
                .iter(world)
                .map(|(p, t)| (p.0, t))
                .collect(),
        );
        assert!(has.iter().all(|&(p, t)| t == (p % 3 == 0)), "{storage:?}");

        let with = sorted(
            world
                .query_filtered::<&Pos, With<Tag>>()
                .iter(world)
                .map(|p| p.0)
                .collect(),
        );
        assert_eq!(
            with,
            (0..N).filter(|i| i % 3 == 0).collect::<Vec<_>>(),
            "{storage:?}"
        );

        let without = sorted(
            (world
                .query_filtered::<&Pos, (Without<Tag>, With<Vel>)>()
                .iter(world))
            .map(|p| p.0)
            .collect(),
        );
        assert_eq!(
            without,
            (0..N).filter(|i| i % 3 != 0 && i % 2 == 0).collect::<Vec<_>>(),
            "{storage:?}"
        );

        let either = sorted(
            (world
                .query_filtered::<&Pos, Or<(With<Tag>, With<Other>)>>()
                .iter(world))
            .map(|p| p.0)
            .collect(),
        );
        assert_eq!(
            either,
            (0..N).filter(|i| i % 3 == 0 || i % 5 == 0).collect::<Vec<_>>(),
            "{storage:?}"
        );

        // Counts and emptiness agree with the items.
        assert_eq!(
            world.query::<&Vel>().count(world),
            (N as usize).div_ceil(2),
            "{storage:?}"
        );
        assert_eq!(
            world.query_filtered::<&Pos, With<Tag>>().count(world),
            with.len(),
            "{storage:?}"
        );
        assert!(!world.query::<&Vel>().is_empty(world), "{storage:?}");
        let sum: u32 = world.query::<&Vel>().iter(world).map(|v| v.0).sum();
        assert_eq!(sum, (0..N).filter(|i| i % 2 == 0).sum::<u32>(), "{storage:?}");
    });
}

#[test]
fn writes_through_iter_mut_and_for_each() {
    both(|storage, world| {
        populate(world, N);
        for (mut p, v) in world.query::<(&mut Pos, &Vel)>().iter_mut(world) {
            p.0 += v.0;
        }
        world.query::<&mut Vel>().for_each(world, |mut v| v.0 += 1);
        let mut q = world.query::<(&mut Vel, Mut<Pos>)>();
        q.for_each(world, |(mut v, p)| v.0 += p.0);
        let got = sorted(
            world
                .query::<(&Pos, &Vel)>()
                .iter(world)
                .map(|(p, v)| (p.0, v.0))
                .collect(),
        );
        let expected: Vec<_> = (0..N)
            .filter(|i| i % 2 == 0)
            .map(|i| (2 * i, 2 * i + i + 1))
            .collect();
        assert_eq!(got, expected, "{storage:?}");
    });
}

#[test]
fn an_iterator_stepped_then_folded_yields_each_item_once() {
    both(|storage, world| {
        let es = populate(world, N);
        let expected: Vec<_> = (0..N)
            .map(|i| (i, (i % 2 == 0).then_some(i), i % 3 == 0))
            .collect();
        let item = |(p, v, t): (&Pos, Option<&Vel>, bool)| (p.0, v.map(|v| v.0), t);
        let mut q = world.query::<(&Pos, Option<&Vel>, Has<Tag>)>();
        // A few items through `next`, the rest through `fold` (what `for_each` runs).
        for stepped in [0, 1, 4, N as usize] {
            let mut iter = q.iter(world);
            let mut got: Vec<_> = iter.by_ref().take(stepped).map(item).collect();
            iter.for_each(|i| got.push(item(i)));
            assert_eq!(sorted(got), expected, "{storage:?}, {stepped} stepped");
        }

        // A per-row filter (`Changed`), stepped through a written `Mut` and then folded.
        let mut changed = world.query_filtered::<(Entity, Mut<Vel>), Changed<Vel>>();
        assert_eq!(
            changed.iter_mut(world).count(),
            expected.iter().filter(|e| e.1.is_some()).count()
        );
        for e in [es[2], es[6], es[8]] {
            world.get_mut::<Vel>(e).unwrap().0 += 100;
        }
        let mut iter = changed.iter_mut(world);
        let (first, mut v) = iter.next().expect("three changed rows");
        v.0 += 1;
        let mut got = vec![first];
        iter.for_each(|(e, _)| got.push(e));
        assert_eq!(sorted(got), sorted(vec![es[2], es[6], es[8]]), "{storage:?}");
        let vels = sorted(
            world
                .query::<&Vel>()
                .iter(world)
                .map(|v| v.0)
                .filter(|v| *v >= 100)
                .collect(),
        );
        assert_eq!(vels.len(), 3, "{storage:?}");
        assert_eq!(vels.iter().sum::<u32>(), 2 + 6 + 8 + 300 + 1, "{storage:?}");
    });
}

#[test]
fn get_single_and_contains_look_sparse_components_up() {
    both(|storage, world| {
        let es = populate(world, 6);
        let mut q = world.query::<(&Pos, &mut Vel)>();
        assert_eq!(
            q.get(world, es[2]).map(|(p, v)| (p.0, v.0)),
            Ok((2, 2)),
            "{storage:?}"
        );
        assert!(
            matches!(q.get(world, es[1]), Err(QueryError::NoMatch { .. })),
            "{storage:?}"
        );
        q.get_mut(world, es[4]).unwrap().1.0 = 40;
        assert_eq!(world.get::<Vel>(es[4]).map(|v| v.0).ok(), Some(40), "{storage:?}");
        let [(_, mut a), (_, mut b)] = q.get_many_mut(world, [es[0], es[2]]).unwrap();
        std::mem::swap(&mut a.0, &mut b.0);
        assert_eq!(world.get::<Vel>(es[0]).map(|v| v.0).ok(), Some(2), "{storage:?}");
        assert!(
            q.contains(world, es[0]) && !q.contains(world, es[3]),
            "{storage:?}"
        );

        let mut tagged = world.query_filtered::<Entity, (With<Tag>, Without<Other>)>();
        assert_eq!(tagged.single(world), Ok(es[3]), "{storage:?}");
        world.insert(es[4], (Tag,)).unwrap();
        assert!(
            matches!(tagged.single(world), Err(QueryError::MultipleEntities { .. })),
            "{storage:?}"
        );
        let mut vel_only = world.query_filtered::<&Vel, With<Other>>();
        assert_eq!(
            vel_only.single(world).map(|v| v.0),
            Ok(2),
            "{storage:?}: swapped above"
        );
        world.remove_one::<Vel>(es[0]).unwrap();
        assert!(
            matches!(vel_only.single(world), Err(QueryError::NoEntities { .. })),
            "{storage:?}"
        );
    });
}

#[test]
fn change_detection_sees_sparse_writes() {
    both(|storage, world| {
        let es = populate(world, 8);
        let mut changed = world.query_filtered::<Entity, Changed<Vel>>();
        let mut added = world.query_filtered::<Entity, Added<Vel>>();
        assert_eq!(
            changed.iter(world).count(),
            4,
            "{storage:?}: spawned values count as changed"
        );
        assert_eq!(added.iter(world).count(), 4, "{storage:?}");
        assert_eq!(changed.iter(world).count(), 0, "{storage:?}");

        // Only the written rows count; a `Mut` that is only read marks nothing.
        let mut q = world.query::<(Entity, &mut Vel)>();
        q.for_each(world, |(e, mut v)| {
            if e == es[2] {
                v.0 += 1;
            }
        });
        for (e, v) in world.query::<(Entity, Mut<Vel>)>().iter_mut(world) {
            if e == es[4] {
                let _ = v.0;
            }
        }
        assert_eq!(changed.iter(world).collect::<Vec<_>>(), [es[2]], "{storage:?}");
        world.query::<&mut Vel>().get_mut(world, es[6]).unwrap().0 += 1;
        assert_eq!(changed.iter(world).collect::<Vec<_>>(), [es[6]], "{storage:?}");

        // `Ref` reports the same.
        world.insert(es[1], (Vel(1),)).unwrap();
        let refs: Vec<_> = (world.query::<(Entity, Ref<Vel>)>().iter(world))
            .filter(|(_, r)| r.is_added())
            .map(|(e, _)| e)
            .collect();
        assert!(refs.contains(&es[1]), "{storage:?}");
        assert_eq!(added.iter(world).collect::<Vec<_>>(), [es[1]], "{storage:?}");
    });
}

#[test]
fn disabled_entities_stay_skipped() {
    both(|storage, world| {
        let es = populate(world, 6);
        world.insert(es[0], (Disabled,)).unwrap();
        assert_eq!(world.query::<&Vel>().iter(world).count(), 2, "{storage:?}");
        assert_eq!(
            world
                .query_filtered::<&Vel, Allow<Disabled>>()
                .iter(world)
                .count(),
            3,
            "{storage:?}"
        );
    });
}

#[test]
fn drop_types_and_mutable_items_in_dense_rows() {
    both(|storage, world| {
        let drops = Arc::new(AtomicUsize::new(0));
        let es: Vec<_> = (0..6u64).map(|i| world.spawn((Pos(i as u32),))).collect();
        for (i, &e) in es.iter().enumerate().filter(|(i, _)| i % 2 == 1) {
            world.insert(e, (Counted(drops.clone(), i as u64),)).unwrap();
        }
        let mut q = world.query::<(&Pos, &mut Counted)>();
        q.for_each(world, |(p, mut c)| c.1 += u64::from(p.0) * 10);
        for (_, mut c) in q.iter_mut(world) {
            c.1 += 1;
        }
        let got = sorted(world.query::<&Counted>().iter(world).map(|c| c.1).collect());
        assert_eq!(got, [12, 34, 56], "{storage:?}");
        world.despawn(es[1]).unwrap();
        assert_eq!(drops.load(Ordering::Relaxed), 1, "{storage:?}");
        world.clear();
        assert_eq!(drops.load(Ordering::Relaxed), 3, "{storage:?}");
    });
}

#[test]
fn par_for_each_covers_sparse_terms() {
    both(|storage, world| {
        let n = if cfg!(miri) { 8 } else { 3000 };
        populate(world, n);
        let mut q = world.query::<(&Pos, &mut Vel)>();
        q.par_for_each(world, |(p, mut v)| v.0 += p.0);
        let bad = world
            .query::<(&Pos, &Vel)>()
            .iter(world)
            .filter(|(p, v)| v.0 != 2 * p.0)
            .count();
        assert_eq!(bad, 0, "{storage:?}");
        assert_eq!(
            world.query_filtered::<(), Changed<Vel>>().count(world),
            (n as usize).div_ceil(2)
        );
    });
}

#[test]
fn a_component_made_sparse_after_a_query_named_it() {
    let mut world = World::new();
    let mut q = world.query::<(&Pos, &Vel)>();
    let mut without = world.query_filtered::<&Pos, Without<Vel>>();
    world.register_component::<Vel>().sparse_set();
    let es = populate(&mut world, 4);
    assert_eq!(q.iter(&world).count(), 2);
    assert_eq!(q.get(&world, es[2]).map(|(_, v)| v.0), Ok(2));
    assert_eq!(without.iter(&world).count(), 2);
}

#[test]
#[should_panic(expected = "Vel` is stored in a sparse set")]
fn for_each_chunk_refuses_a_sparse_term() {
    let mut world = World::new();
    world.register_component::<Vel>().sparse_set();
    populate(&mut world, 4);
    world
        .query::<(&mut Pos, &Vel)>()
        .for_each_chunk(&mut world, |_| {});
}

// ---------------------------------------------------------------------------------------
// par_for_each on the sparse path

/// How a scenario runs its passes: `for_each`, or `par_for_each` in a rayon pool of that
/// many threads.
#[derive(Clone, Copy, Debug)]
enum Pass<'p> {
    ForEach,
    Pool(&'p rayon::ThreadPool),
}

/// Rows per run of the parallel passes: small enough that even Miri's few rows are cut into
/// several runs per archetype.
const PAR_BATCH: usize = if cfg!(miri) { 3 } else { 64 };
const PAR_N: u32 = if cfg!(miri) { 12 } else { 1500 };

/// Runs `f` over `q` as `how` says (a fixed batch size for the parallel passes, so that
/// they are cut into runs however few rows there are).
fn pass<D: QueryData, F: QueryFilter>(
    q: &mut QueryState<D, F>,
    world: &mut World,
    how: Pass<'_>,
    f: impl Fn(D::Item<'_>) + Send + Sync,
) {
    match how {
        Pass::ForEach => q.for_each(world, f),
        Pass::Pool(pool) => {
            q.set_batch_size(BatchSize::Fixed(PAR_BATCH));
            pool.install(|| q.par_for_each(world, f));
        }
    }
}

/// A spawned entity's payload: the index of the entity whose row spawned it.
#[derive(Debug, PartialEq, Clone, Copy)]
struct Spawned(u32);

/// What a scenario leaves: every entity with its components, the entities that read as
/// changed after each marking pass, and the entities spawned by commands with their payloads;
/// entities as index and generation (each world has its own tag).
#[derive(Debug, PartialEq)]
struct Outcome {
    rows: Vec<((u32, u32), Option<u32>, Option<u32>, bool, bool)>,
    /// How many rows read as changed after the pass that writes every `Vel`.
    written_all: usize,
    changed_vel: Vec<(u32, u32)>,
    changed_pos: Vec<(u32, u32)>,
    spawned: Vec<((u32, u32), u32)>,
}

/// Passes over sparse terms (with `Vel` and `Tag` sparse, `Pos` in tables): `&mut Vel` beside
/// `&Pos`, `Mut<Vel>` written on some rows only, `Changed<Vel>` on the next pass, `Option<&Vel>`
/// with `With<Tag>`, `Without<Tag>`, and `ParallelCommandQueue` scopes that spawn, insert and
/// remove.
fn sparse_scenario(storage: Storage, how: Pass<'_>) -> Outcome {
    let mut world = World::new();
    if storage == Storage::Sparse {
        world.register_component::<Vel>().sparse_set();
        world.register_component::<Tag>().sparse_set();
    }
    populate(&mut world, PAR_N);
    let world = &mut world;
    let mut changed_vel = world.query_filtered::<Entity, Changed<Vel>>();
    let mut changed_pos = world.query_filtered::<Entity, Changed<Pos>>();
    changed_vel.iter(world).for_each(drop);
    changed_pos.iter(world).for_each(drop);

    // A sparse write beside a table read, on every row that has both.
    pass(
        &mut world.query::<(&Pos, &mut Vel)>(),
        world,
        how,
        |(p, mut v)| v.0 += p.0,
    );
    let written_all = changed_vel.iter(world).count();
    // `Mut<Vel>` written on every fourth entity only; the others are read, which marks nothing.
    pass(
        &mut world.query::<(Entity, Mut<Vel>)>(),
        world,
        how,
        |(e, mut v)| {
            if e.index() % 4 == 0 {
                v.0 += 1000;
            } else {
                assert_eq!(v.0 % 2, 0, "read, not written");
            }
        },
    );
    let changed_vel_after = sorted(changed_vel.iter(world).map(id).collect());
    // `Changed<Vel>` on the next pass sees exactly the rows written above.
    pass(
        &mut world.query_filtered::<&mut Pos, Changed<Vel>>(),
        world,
        how,
        |mut p| p.0 += 1,
    );
    // `Option<&Vel>` with `With<Tag>`, and `Without<Tag>` with `&Vel`.
    pass(
        &mut world.query_filtered::<(&mut Pos, Option<&Vel>), With<Tag>>(),
        world,
        how,
        |(mut p, v)| p.0 += v.map_or(7, |v| v.0 % 10),
    );
    pass(
        &mut world.query_filtered::<(&mut Pos, &Vel), Without<Tag>>(),
        world,
        how,
        |(mut p, v)| p.0 = p.0.wrapping_mul(3) ^ v.0,
    );
    let changed_pos_after = sorted(changed_pos.iter(world).map(id).collect());
    // Commands recorded per row apply in row order whichever thread ran the row: spawns take
    // their ids in that order.
    let mut queue = ParallelCommandQueue::new();
    pass(
        &mut world.query_filtered::<(Entity, &Vel), Without<Tag>>(),
        world,
        how,
        |(e, v)| match v.0 % 3 {
            0 => queue.command_scope(|commands| {
                commands.spawn((Spawned(e.index()), Pos(e.index())));
                commands.insert(e, (Tag,));
            }),
            1 => queue.command_scope(|commands| commands.remove::<(Vel,)>(e)),
            _ => {}
        },
    );
    assert!(queue.apply(world).is_empty());
    let spawned = sorted(
        (world.query::<(Entity, &Spawned)>().iter(world))
            .map(|(e, s)| (id(e), s.0))
            .collect(),
    );
    let rows = sorted(
        (world
            .query::<(Entity, Option<&Pos>, Option<&Vel>, Has<Tag>, Has<Other>)>()
            .iter(world))
        .map(|(e, p, v, t, o)| (id(e), p.map(|p| p.0), v.map(|v| v.0), t, o))
        .collect(),
    );
    Outcome {
        rows,
        written_all,
        changed_vel: changed_vel_after,
        changed_pos: changed_pos_after,
        spawned,
    }
}

/// An entity as index and generation.
fn id(e: Entity) -> (u32, u32) {
    (e.index(), e.generation())
}

fn pool(threads: usize) -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .expect("a rayon pool")
}

#[test]
fn par_for_each_on_sparse_terms_matches_for_each_on_1_and_4_threads() {
    let four = pool(4);
    let one = (!cfg!(miri)).then(|| pool(1));
    let reference = sparse_scenario(Storage::Table, Pass::ForEach);
    // The reference itself is right: the marks and the commands did what they say.
    let written = |&(index, _): &(u32, u32)| index % 4 == 0 && index < PAR_N;
    assert_eq!(
        reference.changed_vel,
        sorted(reference.rows.iter().map(|r| r.0).filter(written).collect())
    );
    assert!(reference.changed_vel.len() > 1);
    assert_eq!(reference.written_all, PAR_N.div_ceil(2) as usize);
    assert!(!reference.spawned.is_empty());
    assert!(
        reference
            .rows
            .iter()
            .any(|r| r.0.0 < PAR_N && r.0.0 % 2 == 0 && r.2.is_none())
    );
    // Under Miri, only the case the new unsafe code serves: sparse terms cut over 4 threads.
    let cases = match &one {
        None => vec![(Storage::Sparse, Pass::Pool(&four))],
        Some(one) => {
            let hows = [Pass::ForEach, Pass::Pool(one), Pass::Pool(&four)];
            [Storage::Table, Storage::Sparse]
                .into_iter()
                .flat_map(|storage| hows.map(|how| (storage, how)))
                .collect()
        }
    };
    for (storage, how) in cases {
        let got = sparse_scenario(storage, how);
        assert_eq!(got, reference, "{storage:?}, {how:?}");
    }
}

#[test]
#[cfg_attr(
    miri,
    ignore = "20,000 rows; the pass's unsafe code is covered by the small par_for_each tests"
)]
fn par_for_each_on_sparse_terms_uses_several_threads() {
    let mut world = World::new();
    world.register_component::<Vel>().sparse_set();
    world
        .spawn_batch((0..20_000).map(|i| (Pos(i), Vel(i))))
        .for_each(drop);
    let mut q = world.query::<(&Pos, &mut Vel)>();
    let threads = std::sync::Mutex::new(std::collections::HashSet::new());
    // A few passes at most: one is nearly always enough, but a loaded machine may leave the
    // other threads asleep until a short pass is over.
    for _ in 0..20 {
        pool(4).install(|| {
            q.par_for_each(&mut world, |(p, mut v)| {
                v.0 = (0..50).fold(v.0, |acc, k| acc.rotate_left(k) ^ p.0);
                if let Some(index) = rayon::current_thread_index() {
                    threads.lock().unwrap().insert(index);
                }
            })
        });
        if threads.lock().unwrap().len() > 1 {
            break;
        }
    }
    let seen = threads.into_inner().unwrap();
    assert!(seen.len() > 1, "every row ran on thread {seen:?}");
}

#[test]
fn par_for_each_on_sparse_terms_marks_what_it_wrote_before_a_panic() {
    let n = if cfg!(miri) { 12 } else { 600 };
    let mut world = World::new();
    world.register_component::<Vel>().sparse_set();
    world.spawn_batch((0..n).map(|i| (Pos(i), Vel(0)))).for_each(drop);
    let mut changed = world.query_filtered::<(Entity, &Vel), Changed<Vel>>();
    changed.iter(&world).for_each(drop);
    let mut q = world.query::<(&Pos, &mut Vel)>();
    q.set_batch_size(BatchSize::Fixed(4));
    let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        pool(4).install(|| {
            q.par_for_each(&mut world, |(p, mut v)| {
                v.0 = 1;
                assert_ne!(p.0, n / 2, "a row that panics after its write");
            })
        })
    }));
    assert!(panicked.is_err(), "the closure's panic reaches the caller");
    // Whichever rows ran before the panic stopped the other runs: every one written reads as
    // changed, and no other.
    let written = world.query::<&Vel>().iter(&world).filter(|v| v.0 == 1).count();
    let marked: Vec<u32> = changed.iter(&world).map(|(_, v)| v.0).collect();
    assert!(written > 0);
    assert_eq!(marked.len(), written);
    assert!(marked.iter().all(|&v| v == 1));
}

/// A parallel pass over a sparse `&mut` term on 4 threads, in small runs over two
/// archetypes: the next pass of `Added` sees nothing, and `Changed` exactly the rows the
/// closure wrote, as with the term in a table.
#[test]
fn par_for_each_on_sparse_terms_leaves_added_clear_and_changed_exact() {
    both(|storage, world| {
        let n = if cfg!(miri) { 16 } else { 3_000 };
        let entities: Vec<Entity> = (0..n).map(|i| world.spawn((Pos(i),))).collect();
        let mut added = world.query_filtered::<Entity, Added<Vel>>();
        let mut changed = world.query_filtered::<Entity, Changed<Vel>>();
        for (i, &e) in entities.iter().enumerate() {
            if i % 2 == 0 {
                world.insert_one(e, Vel(0)).unwrap();
            }
            if i % 7 == 0 {
                world.insert_one(e, Other).unwrap();
            }
        }
        assert_eq!(
            added.iter(world).count(),
            entities.len().div_ceil(2),
            "{storage:?}"
        );
        assert_eq!(
            changed.iter(world).count(),
            entities.len().div_ceil(2),
            "{storage:?}"
        );
        let mut query = world.query::<(&Pos, &mut Vel)>();
        query.set_batch_size(BatchSize::Fixed(8));
        let pool = rayon::ThreadPoolBuilder::new().num_threads(4).build().unwrap();
        pool.install(|| {
            query.par_for_each(world, |(pos, mut vel)| {
                if pos.0 % 3 == 0 {
                    vel.0 += 1;
                }
            })
        });
        assert_eq!(added.iter(world).count(), 0, "{storage:?}");
        let mut written: Vec<u32> = (changed.iter(world))
            .map(|e| world.get::<Pos>(e).unwrap().0)
            .collect();
        written.sort();
        let expected: Vec<u32> = (0..n).filter(|i| i % 6 == 0).collect();
        assert_eq!(written, expected, "{storage:?}");
    });
}

/// Making a component sparse creates no archetype, and inserting it moves no row: a query
/// built before still learns of the registration, with no new archetype to tell it.
#[test]
fn a_sparse_registration_alone_moves_a_query_to_the_sparse_path() {
    let mut world = World::new();
    let a = world.spawn((Pos(1),));
    let mut q = world.query::<(&Pos, &Vel)>();
    assert!(matches!(q.get(&world, a), Err(QueryError::NoMatch { .. })));
    world.register_component::<Vel>().sparse_set();
    world.insert_one(a, Vel(10)).unwrap();
    assert_eq!(q.get(&world, a).unwrap(), (&Pos(1), &Vel(10)));
    assert_eq!(q.iter(&world).count(), 1);
}

/// A query built before its component is made sparse (the query registered it, nothing
/// stored it yet) takes the sparse path from its next use: `get`, `iter` and `contains`
/// find the entities spawned afterwards, and a later archetype is matched too.
#[test]
fn a_query_built_before_its_component_is_made_sparse_follows_it() {
    let mut world = World::new();
    let mut q = world.query::<(&Pos, &Vel)>();
    world.register_component::<Vel>().sparse_set();
    let a = world.spawn((Pos(1), Vel(10)));
    let b = world.spawn((Pos(2),));
    assert_eq!(q.get(&world, a).unwrap(), (&Pos(1), &Vel(10)));
    assert!(matches!(q.get(&world, b), Err(QueryError::NoMatch { .. })));
    let c = world.spawn((Pos(3), Vel(30), Tag));
    let mut seen: Vec<u32> = q.iter(&world).map(|(p, v)| p.0 + v.0).collect();
    seen.sort_unstable();
    assert_eq!(seen, [11, 33]);
    assert!(q.contains(&world, c));
    world.insert_one(b, Vel(20)).unwrap();
    assert_eq!(q.get(&world, b).unwrap(), (&Pos(2), &Vel(20)));
}
