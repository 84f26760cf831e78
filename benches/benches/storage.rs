//! Storage benchmarks: spawning, adding/removing components, despawning and random access.
//!
//! Every group runs the tabula workload beside a `raw` baseline written with plain `Vec`s, so
//! the ratio tabula/raw comes from one run on one machine. Both sides create, fill and drop
//! their storage the same way; only the data structure differs.
//!
//! Run with `cargo bench -p tabula-benches --bench storage`; results are summarised in
//! `docs/benchmarks.md`.

// Most component fields are written and never read back: only the storage cost matters here.
#![allow(dead_code)]

use std::hint::black_box;
use std::time::Duration;

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use tabula::prelude::*;

// The components of the community's standard workloads (ecs_bench_suite).

#[derive(Clone, Copy)]
struct Transform([[f32; 4]; 4]);

#[derive(Clone, Copy)]
struct Position([f32; 3]);

#[derive(Clone, Copy)]
struct Rotation([f32; 3]);

#[derive(Clone, Copy)]
struct Velocity([f32; 3]);

struct A(f32);

struct B(f32);

const IDENTITY: Transform = Transform([
    [1.0, 0.0, 0.0, 0.0],
    [0.0, 1.0, 0.0, 0.0],
    [0.0, 0.0, 1.0, 0.0],
    [0.0, 0.0, 0.0, 1.0],
]);

fn position(i: usize) -> Position {
    Position([i as f32, 1.0, 2.0])
}

/// A seeded xorshift64* generator: enough to shuffle an index list the same way every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Fisher–Yates shuffle.
    fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = (self.next() % (i as u64 + 1)) as usize;
            items.swap(i, j);
        }
    }
}

/// A fixed permutation of `0..n`.
fn shuffled_indices(n: usize) -> Vec<usize> {
    let mut indices: Vec<usize> = (0..n).collect();
    Rng(0x9e37_79b9_7f4a_7c15).shuffle(&mut indices);
    indices
}

/// New storage plus 10,000 entities of (Transform, Position, Rotation, Velocity).
fn simple_insert(c: &mut Criterion) {
    const N: usize = 10_000;
    let bundle = |i| {
        (
            IDENTITY,
            position(i),
            Rotation([0.0; 3]),
            Velocity([1.0, 0.0, 0.0]),
        )
    };
    let mut group = c.benchmark_group("simple_insert");
    group.bench_function("tabula_spawn_batch", |b| {
        b.iter(|| {
            let mut world = World::new();
            world.spawn_batch((0..N).map(bundle)).for_each(drop);
            world
        })
    });
    group.bench_function("tabula_spawn_loop", |b| {
        b.iter(|| {
            let mut world = World::new();
            for i in 0..N {
                world.spawn(bundle(i));
            }
            world
        })
    });
    group.bench_function("raw", |b| {
        b.iter(|| {
            let mut transforms = Vec::with_capacity(N);
            let mut positions = Vec::with_capacity(N);
            let mut rotations = Vec::with_capacity(N);
            let mut velocities = Vec::with_capacity(N);
            for i in 0..N {
                let (t, p, r, v) = bundle(i);
                transforms.push(t);
                positions.push(p);
                rotations.push(r);
                velocities.push(v);
            }
            (transforms, positions, rotations, velocities)
        })
    });
    group.finish();
}

/// A minimal sparse set of `B` keyed by entity index, with added/changed ticks: the
/// `raw_sparse_set` diagnostic of `add_remove`.
#[derive(Default)]
struct SparseSet {
    /// Entity index -> position in `values`, or `u32::MAX`.
    sparse: Vec<u32>,
    values: Vec<B>,
    owners: Vec<u32>,
    ticks: Vec<[u32; 2]>,
}

impl SparseSet {
    fn insert(&mut self, index: u32, value: B, tick: u32) {
        let i = index as usize;
        if i >= self.sparse.len() {
            self.sparse.resize(i + 1, u32::MAX);
        }
        match self.sparse[i] {
            u32::MAX => {
                self.sparse[i] = self.values.len() as u32;
                self.values.push(value);
                self.owners.push(index);
                self.ticks.push([tick, tick]);
            }
            at => {
                self.values[at as usize] = value;
                self.ticks[at as usize][1] = tick;
            }
        }
    }

    fn remove(&mut self, index: u32) -> Option<B> {
        let at = std::mem::replace(self.sparse.get_mut(index as usize)?, u32::MAX);
        if at == u32::MAX {
            return None;
        }
        let last = *self.owners.last().expect("a present value has an owner");
        self.owners.swap_remove(at as usize);
        self.ticks.swap_remove(at as usize);
        if last != index {
            self.sparse[last as usize] = at;
        }
        Some(self.values.swap_remove(at as usize))
    }
}

/// 10,000 entities with `A`: add `B` to each, then remove it from each; one by one, and as
/// one batch of each (`insert_batch`, `remove_batch`).
fn add_remove(c: &mut Criterion) {
    const N: usize = 10_000;
    let mut group = c.benchmark_group("add_remove");
    group.bench_function("tabula", |b| {
        let mut world = World::new();
        let entities: Vec<Entity> = world.spawn_batch((0..N).map(|i| (A(i as f32),))).collect();
        b.iter(|| {
            for &e in &entities {
                world.insert_one(e, B(0.0)).unwrap();
            }
            for &e in &entities {
                world.remove_one::<B>(e).unwrap();
            }
        })
    });
    group.bench_function("tabula_batch", |b| {
        let mut world = World::new();
        let entities: Vec<Entity> = world.spawn_batch((0..N).map(|i| (A(i as f32),))).collect();
        b.iter(|| {
            world
                .insert_batch(entities.iter().map(|&e| (e, (B(0.0),))))
                .unwrap();
            world.remove_batch::<(B,)>(&entities).unwrap()
        })
    });
    // Diagnostic: the same adds and removes through a hand-written sparse set for `B`
    // (values outside any table, so nothing moves), with generation-checked handles: the
    // floor of the storage that does not move rows, for comparison with the target.
    group.bench_function("raw_sparse_set", |b| {
        let handles: Vec<(u32, u32)> = (0..N as u32).map(|i| (i, 1)).collect();
        let generations = vec![1u32; N];
        let mut set = SparseSet::default();
        let mut tick = 0u32;
        b.iter(|| {
            for &(index, generation) in &handles {
                assert_eq!(generations[index as usize], generation, "stale handle");
                tick = tick.wrapping_add(1);
                set.insert(index, B(0.0), tick);
            }
            for &(index, generation) in &handles {
                assert_eq!(generations[index as usize], generation, "stale handle");
                black_box(set.remove(index).expect("inserted above"));
            }
        })
    });
    group.bench_function("raw", |b| {
        let a: Vec<A> = (0..N).map(|i| A(i as f32)).collect();
        let mut bs: Vec<Option<B>> = (0..N).map(|_| None).collect();
        b.iter(|| {
            for slot in &mut bs {
                *slot = Some(B(0.0));
            }
            // Keeps the "add" pass from being optimised away as a dead store.
            black_box(&mut bs);
            for slot in &mut bs {
                *slot = None;
            }
            black_box((&a, &mut bs));
        })
    });
    group.finish();
}

/// New storage plus 1,000,000 entities of (Position, Velocity).
fn spawn_1m(c: &mut Criterion) {
    const N: usize = 1_000_000;
    let bundle = |i| (position(i), Velocity([1.0, 0.0, 0.0]));
    let mut group = c.benchmark_group("spawn_1m");
    group.sample_size(10).measurement_time(Duration::from_secs(5));
    group.bench_function("tabula", |b| {
        b.iter(|| {
            let mut world = World::new();
            world.spawn_batch((0..N).map(bundle)).for_each(drop);
            world
        })
    });
    group.bench_function("raw", |b| {
        b.iter(|| {
            let mut positions = Vec::with_capacity(N);
            let mut velocities = Vec::with_capacity(N);
            for i in 0..N {
                let (p, v) = bundle(i);
                positions.push(p);
                velocities.push(v);
            }
            (positions, velocities)
        })
    });
    group.finish();
}

/// Despawning 10,000 entities of (Position, Velocity), in spawn order. Building the storage
/// and dropping what is left happen outside the timing.
fn despawn_10k(c: &mut Criterion) {
    const N: usize = 10_000;
    let bundle = |i| (position(i), Velocity([1.0, 0.0, 0.0]));
    let mut group = c.benchmark_group("despawn_10k");
    group.bench_function("tabula", |b| {
        b.iter_batched(
            || {
                let mut world = World::new();
                let entities: Vec<Entity> = world.spawn_batch((0..N).map(bundle)).collect();
                (world, entities)
            },
            |(mut world, entities)| {
                for &e in &entities {
                    world.despawn(e).unwrap();
                }
                world
            },
            BatchSize::LargeInput,
        )
    });
    // The raw side is the smallest storage that can despawn by id: dense columns plus a
    // row-per-id table. Despawn = look up the row, swap-remove it from every column, and
    // point the moved id at its new row. No generations, no free list.
    struct RawStorage {
        row_of: Vec<u32>,
        ids: Vec<u32>,
        positions: Vec<Position>,
        velocities: Vec<Velocity>,
    }
    group.bench_function("raw", |b| {
        b.iter_batched(
            || RawStorage {
                row_of: (0..N as u32).collect(),
                ids: (0..N as u32).collect(),
                positions: (0..N).map(position).collect(),
                velocities: vec![Velocity([1.0, 0.0, 0.0]); N],
            },
            |mut s| {
                for id in 0..N {
                    let row = s.row_of[id] as usize;
                    s.ids.swap_remove(row);
                    s.positions.swap_remove(row);
                    s.velocities.swap_remove(row);
                    if let Some(&moved) = s.ids.get(row) {
                        s.row_of[moved as usize] = row as u32;
                    }
                }
                s
            },
            BatchSize::LargeInput,
        )
    });
    group.finish();
}

/// 10,000 lookups of `Position` in a fixed shuffled order, summing one field.
fn random_get(c: &mut Criterion) {
    random_get_group(c, "random_get", 10_000, true);
    // Diagnostic: the same lookups over 1,000 entities, whose slots and values fit in L1, to
    // tell how much of the gap at 10,000 is the second cache line a slot lookup touches
    // rather than its instructions (docs/benchmarks.md, random_get).
    random_get_group(c, "random_get_l1", 1_000, false);
}

/// `n` lookups of `Position` in a fixed shuffled order; `all` adds the `World::get` and
/// `QueryState::get` entries.
fn random_get_group(c: &mut Criterion, name: &str, n: usize, all: bool) {
    let order = shuffled_indices(n);
    let mut group = c.benchmark_group(name);
    let world_and_order = || {
        let mut world = World::new();
        let entities: Vec<Entity> = world
            .spawn_batch((0..n).map(|i| (position(i), Velocity([1.0, 0.0, 0.0]))))
            .collect();
        let shuffled: Vec<Entity> = order.iter().map(|&i| entities[i]).collect();
        (world, shuffled)
    };
    if all {
        group.bench_function("tabula", |b| {
            let (world, shuffled) = world_and_order();
            b.iter(|| {
                let mut sum = 0.0f32;
                for &e in &shuffled {
                    sum += world.get::<Position>(e).unwrap().0[0];
                }
                sum
            })
        });
    }
    group.bench_function("tabula_view", |b| {
        let (world, shuffled) = world_and_order();
        b.iter(|| {
            // Made afresh every pass, as a system would.
            let positions = world.view::<Position>();
            let mut sum = 0.0f32;
            for &e in &shuffled {
                sum += positions.get(e).unwrap().0[0];
            }
            sum
        })
    });
    if all {
        group.bench_function("tabula_query_get", |b| {
            let (mut world, shuffled) = world_and_order();
            let mut query = world.query::<&Position>();
            b.iter(|| {
                let mut sum = 0.0f32;
                for &e in &shuffled {
                    sum += query.get(&world, e).unwrap().0[0];
                }
                sum
            })
        });
    }
    // Diagnostic: a hand-written lookup through generation-checked slots into one `Vec`,
    // i.e. the floor for any storage addressed by generational entity ids.
    group.bench_function("raw_entity_slots", |b| {
        let positions: Vec<Position> = (0..n).map(position).collect();
        // (generation, row) per slot; handles are (slot, generation).
        let slots: Vec<(u32, u32)> = (0..n as u32).map(|i| (1, i)).collect();
        let handles: Vec<(u32, u32)> = order.iter().map(|&i| (i as u32, 1)).collect();
        b.iter(|| {
            let mut sum = 0.0f32;
            for &(slot, generation) in &handles {
                let (current, row) = slots[slot as usize];
                assert_eq!(current, generation, "stale handle");
                sum += positions[row as usize].0[0];
            }
            sum
        })
    });
    // Diagnostic: the same with 16-byte slots (generation, table, row, spare), the width of
    // tabula's entity slots: the floor of this layout.
    group.bench_function("raw_entity_slots16", |b| {
        let positions: Vec<Position> = (0..n).map(position).collect();
        let slots: Vec<[u32; 4]> = (0..n as u32).map(|i| [1, 0, i, 1]).collect();
        let handles: Vec<(u32, u32)> = order.iter().map(|&i| (i as u32, 1)).collect();
        b.iter(|| {
            let mut sum = 0.0f32;
            for &(slot, generation) in &handles {
                let [current, table, row, _] = slots[slot as usize];
                assert!(current == generation && table == 0, "stale handle");
                sum += positions[row as usize].0[0];
            }
            sum
        })
    });
    group.bench_function("raw", |b| {
        let positions: Vec<Position> = (0..n).map(position).collect();
        b.iter(|| {
            let mut sum = 0.0f32;
            for &i in &order {
                sum += positions[i].0[0];
            }
            sum
        })
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .sample_size(30);
    targets = simple_insert, add_remove, spawn_1m, despawn_10k, random_get
}
criterion_main!(benches);
