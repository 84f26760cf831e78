//! Change detection against a model: random structural operations, writes through every
//! writer (`get_mut`, views, `for_each`, `iter_mut`, `par_for_each` with automatic and fixed
//! batches, chunks, tuples, `Option`, `get_many_mut`, batch inserts and moves) and polls of
//! `Changed`, `Added` and `Ref` observers, each compared with a model of when every entity's
//! `A` was last added and changed. Ticks stand for operation numbers: an observer must see
//! exactly the entities added or changed since its last poll.

use std::collections::{HashMap, HashSet};

use tabula_core::query::BatchSize;
use tabula_core::{Added, Changed, Entity, QueryState, Ref, With, Without, World};

mod common;
use common::Rng;

#[derive(Debug, Clone, Copy, PartialEq)]
struct A(u32);
#[derive(Debug, Clone, Copy, PartialEq)]
struct B(u32);
#[derive(Debug, Clone, Copy, PartialEq)]
struct Tag;
#[derive(Debug, Clone, Copy, PartialEq)]
struct Other(u64);

fn sorted(mut v: Vec<Entity>) -> Vec<Entity> {
    v.sort_by_key(|e| e.to_bits());
    v
}

#[test]
// Thousands of operations with rayon underneath: far too slow under Miri, which runs the
// marking tests instead.
#[cfg_attr(miri, ignore)]
fn observers_see_exactly_the_changes_the_model_expects() {
    // Under the sanitizers (`.ci/run` sets `--cfg tabula_sanitizer`), 4 seeds: they look for
    // memory and thread errors, which every writer meets in any seed.
    let seeds: u64 = if cfg!(tabula_sanitizer) { 4 } else { 12 };
    for seed in 1..=seeds {
        // Every other run stores `B` in a sparse set, so that the writers over `(A, B)` and
        // `(Option<A>, B)` take the queries' sparse path (and moves happen without `B`).
        run(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1, 1_000, seed % 2 == 0);
    }
}

/// When an entity's `A` was last added and last changed, in operation numbers.
#[derive(Clone, Copy, Debug)]
struct Ticks {
    added: u64,
    changed: u64,
}

/// Three views of one observer's changes: they share a last run, so each sees what the
/// others would.
struct Observer {
    changed: QueryState<Entity, Changed<A>>,
    added: QueryState<Entity, Added<A>>,
    refs: QueryState<(Entity, Ref<'static, A>)>,
    last: u64,
}

/// One writing pass over `q` by `for_each`, `iter_mut` or `par_for_each` (`how`); returns
/// the entities whose `A` it wrote.
fn pass<F: tabula_core::QueryFilter>(
    q: &mut QueryState<(Entity, &'static mut A), F>,
    world: &mut World,
    how: usize,
    bs: BatchSize,
    subset: &HashSet<Entity>,
) -> Vec<Entity> {
    let mut written: Vec<Entity> = Vec::new();
    match how {
        0 => q.for_each(world, |(e, mut a)| {
            if subset.contains(&e) {
                a.0 += 1;
                written.push(e);
            }
        }),
        1 => {
            for (e, mut a) in q.iter_mut(world) {
                if subset.contains(&e) {
                    a.0 += 1;
                    written.push(e);
                }
            }
        }
        _ => {
            q.set_batch_size(bs);
            let out = std::sync::Mutex::new(Vec::new());
            q.par_for_each(world, |(e, mut a)| {
                if subset.contains(&e) {
                    a.0 += 1;
                    out.lock().unwrap().push(e);
                }
            });
            written = out.into_inner().unwrap();
        }
    }
    written
}

/// Applies `steps` random operations from `seed`, checking every observation against the
/// model; `sparse_b` stores `B` in a sparse set.
fn run(seed: u64, steps: usize, sparse_b: bool) {
    let mut rng = Rng(seed);
    let mut world = World::new();
    if sparse_b {
        world.register_component::<B>().sparse_set();
    }
    let mut seq: u64 = 1;
    let mut alive: Vec<Entity> = Vec::new();
    let mut model: HashMap<Entity, Ticks> = HashMap::new();
    let mut observers: Vec<Observer> = (0..3)
        .map(|_| Observer {
            changed: world.query_filtered::<Entity, Changed<A>>(),
            added: world.query_filtered::<Entity, Added<A>>(),
            refs: world.query::<(Entity, Ref<A>)>(),
            last: 0,
        })
        .collect();
    let mut w_all = world.query::<(Entity, &mut A)>();
    let mut w_tag = world.query_filtered::<(Entity, &mut A), With<Tag>>();
    let mut w_notag = world.query_filtered::<(Entity, &mut A), Without<Tag>>();
    let mut w_ab = world.query::<(Entity, &mut A, &mut B)>();
    let mut w_opt = world.query::<(Entity, Option<&mut A>, &B)>();
    let mut chunk_tag = world.query_filtered::<&mut A, With<Tag>>();
    let mut ids = world.query::<(Entity, &A, Option<&Tag>)>();
    let mut w_changed = world.query_filtered::<(Entity, &mut A), Changed<A>>();
    let mut w_changed_last: u64 = 0;
    let mut w_added = world.query_filtered::<(Entity, &mut A), Added<A>>();
    let mut w_added_last: u64 = 0;

    for step in 0..steps {
        seq += 1;
        let op = rng.below(32);
        let pick = |rng: &mut Rng, alive: &Vec<Entity>| -> Option<Entity> {
            (!alive.is_empty()).then(|| alive[rng.below(alive.len())])
        };
        let with_a = |world: &World, e: Entity| world.has::<A>(e);
        let desc;
        match op {
            0 | 1 => {
                let e = match rng.below(4) {
                    0 => world.spawn((A(0),)),
                    1 => world.spawn((A(0), B(0))),
                    2 => world.spawn((B(0),)),
                    _ => world.spawn((A(0), Tag)),
                };
                if world.has::<A>(e) {
                    model.insert(
                        e,
                        Ticks {
                            added: seq,
                            changed: seq,
                        },
                    );
                }
                alive.push(e);
                desc = "spawn";
            }
            2 => {
                let n = rng.below(200);
                let tag = rng.below(2) == 0;
                let es: Vec<Entity> = if tag {
                    world.spawn_batch((0..n).map(|_| (A(0), Tag))).collect()
                } else {
                    world.spawn_batch((0..n).map(|_| (A(0),))).collect()
                };
                for e in es {
                    model.insert(
                        e,
                        Ticks {
                            added: seq,
                            changed: seq,
                        },
                    );
                    alive.push(e);
                }
                desc = "spawn_batch";
            }
            3 => {
                if let Some(e) = pick(&mut rng, &alive) {
                    world.despawn(e).unwrap();
                    alive.retain(|&x| x != e);
                    model.remove(&e);
                }
                desc = "despawn";
            }
            4 => {
                if let Some(e) = pick(&mut rng, &alive) {
                    let had = with_a(&world, e);
                    world.insert_one(e, A(1)).unwrap();
                    if had {
                        model.get_mut(&e).unwrap().changed = seq;
                    } else {
                        model.insert(
                            e,
                            Ticks {
                                added: seq,
                                changed: seq,
                            },
                        );
                    }
                }
                desc = "insert A";
            }
            5 => {
                if let Some(e) = pick(&mut rng, &alive)
                    && world.remove_one::<A>(e).is_ok()
                {
                    model.remove(&e);
                }
                desc = "remove A";
            }
            6 => {
                if let Some(e) = pick(&mut rng, &alive) {
                    if world.has::<Tag>(e) {
                        world.remove_one::<Tag>(e).unwrap();
                    } else {
                        world.insert_one(e, Tag).unwrap();
                    }
                }
                desc = "toggle Tag";
            }
            7 => {
                if let Some(e) = pick(&mut rng, &alive) {
                    if world.has::<B>(e) {
                        world.remove_one::<B>(e).unwrap();
                    } else {
                        world.insert(e, (B(1), Other(2))).unwrap();
                    }
                }
                desc = "toggle B";
            }
            8 => {
                if let Some(e) = pick(&mut rng, &alive)
                    && let Ok(mut a) = world.get_mut::<A>(e)
                {
                    if rng.below(2) == 0 {
                        a.0 += 1;
                        model.get_mut(&e).unwrap().changed = seq;
                    } else {
                        let _ = a.0;
                    }
                }
                desc = "get_mut";
            }
            9 => {
                if let Some(e) = pick(&mut rng, &alive)
                    && with_a(&world, e)
                {
                    world.view_mut::<A>().get_mut(e).unwrap().0 += 1;
                    model.get_mut(&e).unwrap().changed = seq;
                }
                desc = "view_mut";
            }
            10..=14 => {
                // a pass writing a random subset (or all / none)
                let mode = rng.below(4);
                let subset: HashSet<Entity> = match mode {
                    0 => alive.iter().copied().collect(),
                    1 => HashSet::new(),
                    _ => alive.iter().copied().filter(|_| rng.below(3) == 0).collect(),
                };
                let which = rng.below(3);
                let how = rng.below(5);
                let bs = match how {
                    3 => BatchSize::Fixed(1 + rng.below(8)),
                    4 => BatchSize::Fixed(1 + rng.below(300)),
                    _ => BatchSize::Automatic,
                };
                let written = match which {
                    0 => pass(&mut w_all, &mut world, how, bs, &subset),
                    1 => pass(&mut w_tag, &mut world, how, bs, &subset),
                    _ => pass(&mut w_notag, &mut world, how, bs, &subset),
                };
                for e in written {
                    model.get_mut(&e).unwrap().changed = seq;
                }
                desc = "pass";
            }
            15 => {
                let subset: HashSet<Entity> = alive.iter().copied().filter(|_| rng.below(2) == 0).collect();
                let mut written = vec![];
                w_ab.for_each(&mut world, |(e, mut a, mut b)| {
                    b.0 += 1;
                    if subset.contains(&e) {
                        a.0 += 1;
                        written.push(e);
                    }
                });
                for e in written {
                    model.get_mut(&e).unwrap().changed = seq;
                }
                desc = "tuple pass";
            }
            16 => {
                let mut written = vec![];
                w_opt.for_each(&mut world, |(e, a, _)| {
                    if let Some(mut a) = a {
                        a.0 += 1;
                        written.push(e);
                    }
                });
                for e in written {
                    model.get_mut(&e).unwrap().changed = seq;
                }
                desc = "option pass";
            }
            17 => {
                chunk_tag.for_each_chunk(&mut world, |c| c.iter_mut().for_each(|a| a.0 += 1));
                let tagged: Vec<Entity> = ids
                    .iter(&world)
                    .filter(|(_, _, t)| t.is_some())
                    .map(|(e, _, _)| e)
                    .collect();
                for e in tagged {
                    model.get_mut(&e).unwrap().changed = seq;
                }
                desc = "chunk";
            }
            18 => {
                if alive.len() >= 2 {
                    let x = pick(&mut rng, &alive).unwrap();
                    let y = pick(&mut rng, &alive).unwrap();
                    if x != y && with_a(&world, x) && with_a(&world, y) {
                        let [(_, mut a), (_, b)] = w_all.get_many_mut(&mut world, [x, y]).unwrap();
                        a.0 += 1;
                        let _ = b.0;
                        model.get_mut(&x).unwrap().changed = seq;
                    }
                }
                desc = "get_many_mut";
            }
            19 => {
                // whole-table batch moves: toggle Tag for every entity of one archetype
                let tagged: Vec<Entity> = ids
                    .iter(&world)
                    .filter(|(_, _, t)| t.is_some())
                    .map(|(e, _, _)| e)
                    .collect();
                let with_b: HashSet<Entity> = alive
                    .iter()
                    .copied()
                    .filter(|&e| world.has::<B>(e) || world.has::<Other>(e))
                    .collect();
                let plain: Vec<Entity> = tagged.iter().copied().filter(|e| !with_b.contains(e)).collect();
                if rng.below(2) == 0 {
                    if !plain.is_empty() {
                        world.remove_batch::<(Tag,)>(&plain).unwrap();
                    }
                } else {
                    let untagged: Vec<Entity> = ids
                        .iter(&world)
                        .filter(|(e, _, t)| t.is_none() && !with_b.contains(e))
                        .map(|(e, _, _)| e)
                        .collect();
                    if !untagged.is_empty() {
                        let mut v = untagged.clone();
                        if rng.below(2) == 0 {
                            v.reverse();
                        }
                        world.insert_batch(v.into_iter().map(|e| (e, (Tag,)))).unwrap();
                    }
                }
                desc = "batch move";
            }
            20 => {
                // insert_batch replacing A on some entities
                let some: Vec<Entity> = alive
                    .iter()
                    .copied()
                    .filter(|&e| with_a(&world, e))
                    .take(5)
                    .collect();
                world.insert_batch(some.iter().map(|&e| (e, (A(7),)))).unwrap();
                for e in some {
                    model.get_mut(&e).unwrap().changed = seq;
                }
                desc = "insert_batch replace";
            }
            22 | 23 => {
                let use_added = op == 23;
                let last = if use_added { w_added_last } else { w_changed_last };
                let exp: Vec<Entity> = sorted(
                    model
                        .iter()
                        .filter(|(_, t)| {
                            if use_added {
                                t.added > last
                            } else {
                                t.changed > last
                            }
                        })
                        .map(|(&e, _)| e)
                        .collect(),
                );
                let subset: HashSet<Entity> = alive.iter().copied().filter(|_| rng.below(2) == 0).collect();
                let how = rng.below(5);
                let bs = match how {
                    3 => BatchSize::Fixed(1 + rng.below(8)),
                    4 => BatchSize::Fixed(1 + rng.below(300)),
                    _ => BatchSize::Automatic,
                };
                let visited = std::sync::Mutex::new(Vec::new());
                let out = std::sync::Mutex::new(Vec::new());
                let body = |(e, mut a): (Entity, tabula_core::Mut<A>)| {
                    visited.lock().unwrap().push(e);
                    if subset.contains(&e) {
                        a.0 += 1;
                        out.lock().unwrap().push(e);
                    }
                };
                if use_added {
                    match how {
                        0 => w_added.for_each(&mut world, body),
                        1 => w_added.iter_mut(&mut world).for_each(body),
                        _ => {
                            w_added.set_batch_size(bs);
                            w_added.par_for_each(&mut world, body)
                        }
                    }
                    w_added_last = seq;
                } else {
                    match how {
                        0 => w_changed.for_each(&mut world, body),
                        1 => w_changed.iter_mut(&mut world).for_each(body),
                        _ => {
                            w_changed.set_batch_size(bs);
                            w_changed.par_for_each(&mut world, body)
                        }
                    }
                    w_changed_last = seq;
                }
                assert_eq!(
                    sorted(visited.into_inner().unwrap()),
                    exp,
                    "seed {seed} step {step}: filtered writer (added={use_added})"
                );
                for e in out.into_inner().unwrap() {
                    model.get_mut(&e).unwrap().changed = seq;
                }
                desc = "filtered pass";
            }
            21 => {
                if rng.below(20) == 0 {
                    world.clear();
                    alive.clear();
                    model.clear();
                }
                desc = "clear";
            }
            _ => {
                // poll an observer
                let i = rng.below(observers.len());
                let o = &mut observers[i];
                let mut exp_c: Vec<Entity> = model
                    .iter()
                    .filter(|(_, t)| t.changed > o.last)
                    .map(|(&e, _)| e)
                    .collect();
                let mut exp_a: Vec<Entity> = model
                    .iter()
                    .filter(|(_, t)| t.added > o.last)
                    .map(|(&e, _)| e)
                    .collect();
                exp_c = sorted(exp_c);
                exp_a = sorted(exp_a);
                let kind = rng.below(3);
                match kind {
                    0 => {
                        // peek first (not a run)
                        assert_eq!(
                            o.changed.count(&world),
                            exp_c.len(),
                            "seed {seed} step {step} count"
                        );
                        let c = sorted(o.changed.iter(&world).collect());
                        assert_eq!(c, exp_c, "seed {seed} step {step}: Changed");
                        o.added.set_last_run(o.changed.last_run());
                        o.refs.set_last_run(o.changed.last_run());
                    }
                    1 => {
                        let a = sorted(o.added.iter(&world).collect());
                        assert_eq!(a, exp_a, "seed {seed} step {step}: Added");
                        o.changed.set_last_run(o.added.last_run());
                        o.refs.set_last_run(o.added.last_run());
                    }
                    _ => {
                        let mut c = vec![];
                        let mut a = vec![];
                        for (e, r) in o.refs.iter(&world) {
                            if r.is_changed() {
                                c.push(e);
                            }
                            if r.is_added() {
                                a.push(e);
                            }
                        }
                        assert_eq!(sorted(c), exp_c, "seed {seed} step {step}: Ref changed");
                        assert_eq!(sorted(a), exp_a, "seed {seed} step {step}: Ref added");
                        o.changed.set_last_run(o.refs.last_run());
                        o.added.set_last_run(o.refs.last_run());
                    }
                }
                o.last = seq;
                desc = "poll";
            }
        }
        let _ = desc;
    }
}
