//! Query benchmarks: iteration, fragmentation, parallel compute and change detection.
//!
//! Every group runs the tabula workload beside a baseline written with plain `Vec`s doing the
//! same per-entity work, so the ratio tabula/baseline comes from one run on one machine.
//!
//! - `simple_iter` / `big_iter`: `pos += vel` over 10k / 1M entities of (Transform, Position,
//!   Rotation, Velocity). `raw` is the zipped per-entity loop; `raw_flat` treats the columns
//!   as flat `f32` lanes (vectorises); `tabula_chunk` does the same over `for_each_chunk`.
//! - `par_big_iter`: the 1M pass with `par_for_each`, beside the serial tabula pass.
//! - `frag_iter`: 26 archetypes of 20 entities; `data *= 2` over `&mut Data`.
//!
//! Entries named `tabula_untracked` / `tabula_one_archetype` are diagnostics, not workloads:
//! they remove one cost (the changed-tick store, the fragmentation) to measure it.
//! - `heavy_compute`: 1k entities, 100 4x4 inversions each, in parallel and serially.
//! - `changed_filter`: a `Changed<T>` pass over 100k rows of which 1% changed.
//!
//! Run with `cargo bench -p tabula-benches --bench query`; results are summarised in
//! `docs/benchmarks-query.md`.

// The fragmentation components are spawned for their archetypes and never read.
#![allow(dead_code)]

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use rayon::prelude::*;
use tabula::prelude::*;
use tabula::{BatchSize, Changed};

// The components of the community's standard workloads (ecs_bench_suite). `#[repr(C)]` so
// that the chunk and flat baselines may view a column as `f32` lanes.

#[derive(Clone, Copy)]
#[repr(C)]
struct Transform([[f32; 4]; 4]);

#[derive(Clone, Copy)]
#[repr(C)]
struct Position([f32; 3]);

#[derive(Clone, Copy)]
#[repr(C)]
struct Rotation([f32; 3]);

#[derive(Clone, Copy)]
#[repr(C)]
struct Velocity([f32; 3]);

const IDENTITY: Transform = Transform([
    [1.0, 0.0, 0.0, 0.0],
    [0.0, 1.0, 0.0, 0.0],
    [0.0, 0.0, 1.0, 0.0],
    [0.0, 0.0, 0.0, 1.0],
]);

fn simple_bundle(i: usize) -> (Transform, Position, Rotation, Velocity) {
    (
        IDENTITY,
        Position([i as f32, 0.0, 0.0]),
        Rotation([1.0, 0.0, 0.0]),
        Velocity([1.0, 0.5, 0.25]),
    )
}

/// The per-entity work of `simple_iter`, shared by every variant.
#[inline(always)]
fn integrate(pos: &mut Position, vel: &Velocity) {
    pos.0[0] += vel.0[0];
    pos.0[1] += vel.0[1];
    pos.0[2] += vel.0[2];
}

/// The flat `f32` lanes of a `Position` column.
fn lanes_mut(positions: &mut [Position]) -> &mut [f32] {
    let len = positions.len() * 3;
    // SAFETY: `Position` is `#[repr(C)]` around `[f32; 3]`: size 12, align 4, no padding, so
    // `len` positions are exactly `3 * len` initialised `f32`s at the same address, and the
    // returned slice inherits the exclusive borrow of `positions`.
    unsafe { std::slice::from_raw_parts_mut(positions.as_mut_ptr().cast::<f32>(), len) }
}

/// The flat `f32` lanes of a `Velocity` column.
fn lanes(velocities: &[Velocity]) -> &[f32] {
    let len = velocities.len() * 3;
    // SAFETY: as for `lanes_mut`; `Velocity` has the same layout, and the borrow is shared.
    unsafe { std::slice::from_raw_parts(velocities.as_ptr().cast::<f32>(), len) }
}

/// `pos += vel` over flat lanes: the loop LLVM vectorises.
#[inline(always)]
fn integrate_lanes(positions: &mut [f32], velocities: &[f32]) {
    for (p, v) in positions.iter_mut().zip(velocities) {
        *p += *v;
    }
}

/// One benchmark group of the `pos += vel` pass over `n` entities, serially.
fn iter_group(c: &mut Criterion, name: &str, n: usize) {
    let mut group = c.benchmark_group(name);
    {
        let mut world = World::new();
        world.spawn_batch((0..n).map(simple_bundle)).for_each(drop);
        let mut query = world.query::<(&mut Position, &Velocity)>();
        group.bench_function("tabula", |b| {
            b.iter(|| query.for_each(&mut world, |(mut pos, vel)| integrate(&mut pos, vel)))
        });
        // Diagnostic: the same pass writing through `bypass_change_detection`, so without the
        // per-row changed-tick store; the gap to `tabula` is the cost of change detection.
        group.bench_function("tabula_untracked", |b| {
            b.iter(|| {
                query.for_each(&mut world, |(mut pos, vel)| {
                    integrate(pos.bypass_change_detection(), vel)
                })
            })
        });
        group.bench_function("tabula_chunk", |b| {
            b.iter(|| {
                query.for_each_chunk(&mut world, |(positions, velocities)| {
                    integrate_lanes(lanes_mut(positions), lanes(velocities))
                })
            })
        });
    }
    {
        let mut positions: Vec<Position> = (0..n).map(|i| simple_bundle(i).1).collect();
        let velocities: Vec<Velocity> = (0..n).map(|i| simple_bundle(i).3).collect();
        group.bench_function("raw", |b| {
            b.iter(|| {
                let (positions, velocities) = black_box((&mut positions, &velocities));
                for (pos, vel) in positions.iter_mut().zip(velocities.iter()) {
                    integrate(pos, vel);
                }
            })
        });
        group.bench_function("raw_flat", |b| {
            b.iter(|| {
                let (positions, velocities) = black_box((&mut positions, &velocities));
                integrate_lanes(lanes_mut(positions), lanes(velocities))
            })
        });
    }
    group.finish();
}

/// 10,000 entities: `pos += vel`.
fn simple_iter(c: &mut Criterion) {
    iter_group(c, "simple_iter", 10_000);
}

/// 1,000,000 entities: `pos += vel`.
fn big_iter(c: &mut Criterion) {
    iter_group(c, "big_iter", 1_000_000);
}

/// 1,000,000 entities: `pos += vel` on rayon's threads, beside the serial tabula pass.
fn par_big_iter(c: &mut Criterion) {
    const N: usize = 1_000_000;
    let mut group = c.benchmark_group("par_big_iter");
    {
        let mut world = World::new();
        world.spawn_batch((0..N).map(simple_bundle)).for_each(drop);
        // Automatic batches: 1M rows / (2 threads * 4) = 125k rows per batch here.
        let mut query = world.query::<(&mut Position, &Velocity)>();
        group.bench_function("tabula_par", |b| {
            b.iter(|| query.par_for_each(&mut world, |(mut pos, vel)| integrate(&mut pos, vel)))
        });
        group.bench_function("tabula_serial", |b| {
            b.iter(|| query.for_each(&mut world, |(mut pos, vel)| integrate(&mut pos, vel)))
        });
    }
    {
        let mut positions: Vec<Position> = (0..N).map(|i| simple_bundle(i).1).collect();
        let velocities: Vec<Velocity> = (0..N).map(|i| simple_bundle(i).3).collect();
        group.bench_function("raw_par", |b| {
            b.iter(|| {
                let (positions, velocities) = black_box((&mut positions, &velocities));
                positions
                    .par_iter_mut()
                    .zip(velocities.par_iter())
                    .for_each(|(pos, vel)| integrate(pos, vel));
            })
        });
    }
    group.finish();
}

// ---------------------------------------------------------------------------------------
// frag_iter

#[derive(Clone, Copy)]
struct Data(f32);

macro_rules! fragments {
    ($($name:ident),*) => {
        $(struct $name(f32);)*

        /// 20 entities of (`X`, `Data`) for each of the 26 fragment types `X`.
        fn spawn_fragments(world: &mut World) {
            $(world.spawn_batch((0..20).map(|_| ($name(0.0), Data(1.0)))).for_each(drop);)*
        }
    };
}

fragments!(
    A, B, C, D, E, F, G, H, I, J, K, L, M, N, O, P, Q, R, S, T, U, V, W, X, Y, Z
);

/// 26 archetypes of 20 entities: `data *= 2` over `&mut Data`.
fn frag_iter(c: &mut Criterion) {
    let mut group = c.benchmark_group("frag_iter");
    let mut world = World::new();
    spawn_fragments(&mut world);
    let mut query = world.query::<&mut Data>();
    group.bench_function("tabula", |b| {
        b.iter(|| query.for_each(&mut world, |mut data| data.0 *= 2.0))
    });
    // Diagnostics: without the changed-tick store, and the same 520 rows in one archetype
    // (the gap to `tabula` is the cost of visiting 26 archetypes instead of one).
    group.bench_function("tabula_untracked", |b| {
        b.iter(|| query.for_each(&mut world, |mut data| data.bypass_change_detection().0 *= 2.0))
    });
    let mut one_world = World::new();
    one_world
        .spawn_batch((0..26 * 20).map(|_| (A(0.0), Data(1.0))))
        .for_each(drop);
    let mut one_query = one_world.query::<&mut Data>();
    group.bench_function("tabula_one_archetype", |b| {
        b.iter(|| one_query.for_each(&mut one_world, |mut data| data.0 *= 2.0))
    });
    let mut data = vec![Data(1.0); 26 * 20];
    group.bench_function("raw", |b| {
        b.iter(|| {
            for data in black_box(&mut data).iter_mut() {
                data.0 *= 2.0;
            }
        })
    });
    group.finish();
}

// ---------------------------------------------------------------------------------------
// heavy_compute

/// A rotation about the x axis by 1.2 rad (column-major), so that inverting is well-defined
/// and 100 inversions give the matrix back.
fn rotation_x() -> Transform {
    let (s, c) = 1.2f32.sin_cos();
    Transform([
        [1.0, 0.0, 0.0, 0.0],
        [0.0, c, s, 0.0],
        [0.0, -s, c, 0.0],
        [0.0, 0.0, 0.0, 1.0],
    ])
}

/// The inverse of a 4x4 matrix by cofactors (2x2 sub-determinants), `None` when singular.
#[inline]
fn invert(m: &[[f32; 4]; 4]) -> Option<[[f32; 4]; 4]> {
    let [a0, a1, a2, a3] = *m;
    let s0 = a0[0] * a1[1] - a1[0] * a0[1];
    let s1 = a0[0] * a1[2] - a1[0] * a0[2];
    let s2 = a0[0] * a1[3] - a1[0] * a0[3];
    let s3 = a0[1] * a1[2] - a1[1] * a0[2];
    let s4 = a0[1] * a1[3] - a1[1] * a0[3];
    let s5 = a0[2] * a1[3] - a1[2] * a0[3];
    let c5 = a2[2] * a3[3] - a3[2] * a2[3];
    let c4 = a2[1] * a3[3] - a3[1] * a2[3];
    let c3 = a2[1] * a3[2] - a3[1] * a2[2];
    let c2 = a2[0] * a3[3] - a3[0] * a2[3];
    let c1 = a2[0] * a3[2] - a3[0] * a2[2];
    let c0 = a2[0] * a3[1] - a3[0] * a2[1];
    let det = s0 * c5 - s1 * c4 + s2 * c3 + s3 * c2 - s4 * c1 + s5 * c0;
    if det == 0.0 {
        return None;
    }
    let inv = 1.0 / det;
    Some([
        [
            (a1[1] * c5 - a1[2] * c4 + a1[3] * c3) * inv,
            (-a0[1] * c5 + a0[2] * c4 - a0[3] * c3) * inv,
            (a3[1] * s5 - a3[2] * s4 + a3[3] * s3) * inv,
            (-a2[1] * s5 + a2[2] * s4 - a2[3] * s3) * inv,
        ],
        [
            (-a1[0] * c5 + a1[2] * c2 - a1[3] * c1) * inv,
            (a0[0] * c5 - a0[2] * c2 + a0[3] * c1) * inv,
            (-a3[0] * s5 + a3[2] * s2 - a3[3] * s1) * inv,
            (a2[0] * s5 - a2[2] * s2 + a2[3] * s1) * inv,
        ],
        [
            (a1[0] * c4 - a1[1] * c2 + a1[3] * c0) * inv,
            (-a0[0] * c4 + a0[1] * c2 - a0[3] * c0) * inv,
            (a3[0] * s4 - a3[1] * s2 + a3[3] * s0) * inv,
            (-a2[0] * s4 + a2[1] * s2 - a2[3] * s0) * inv,
        ],
        [
            (-a1[0] * c3 + a1[1] * c1 - a1[2] * c0) * inv,
            (a0[0] * c3 - a0[1] * c1 + a0[2] * c0) * inv,
            (-a3[0] * s3 + a3[1] * s1 - a3[2] * s0) * inv,
            (a2[0] * s3 - a2[1] * s1 + a2[2] * s0) * inv,
        ],
    ])
}

/// The per-entity work of `heavy_compute`: invert 100 times, then transform the position
/// as a direction (w = 0).
#[inline(always)]
fn heavy(transform: &mut Transform, pos: &mut Position) {
    for _ in 0..100 {
        transform.0 = invert(&transform.0).expect("a rotation is invertible");
    }
    let m = &transform.0;
    let p = pos.0;
    pos.0 = [0, 1, 2].map(|row| m[0][row] * p[0] + m[1][row] * p[1] + m[2][row] * p[2]);
}

/// 1,000 entities: 100 matrix inversions each, on rayon's threads and serially.
fn heavy_compute(c: &mut Criterion) {
    const N: usize = 1_000;
    // 64 rows per batch: 16 batches, 8 per thread on 2 cores. One batch is 6,400 inversions
    // (~100 µs), so rayon's per-task cost (~1 µs) is about 1%, and 8 batches per thread let
    // work stealing even out a core that the machine interrupts.
    const BATCH: usize = 64;
    let bundle = |i| {
        (
            rotation_x(),
            Position([i as f32, 1.0, 2.0]),
            Rotation([1.0, 0.0, 0.0]),
            Velocity([1.0; 3]),
        )
    };
    let mut group = c.benchmark_group("heavy_compute");
    {
        let mut world = World::new();
        world.spawn_batch((0..N).map(bundle)).for_each(drop);
        let mut query = world.query::<(&mut Position, &mut Transform)>();
        query.set_batch_size(BatchSize::Fixed(BATCH));
        group.bench_function("tabula_par", |b| {
            b.iter(|| {
                query.par_for_each(&mut world, |(mut pos, mut transform)| {
                    heavy(&mut transform, &mut pos)
                })
            })
        });
        group.bench_function("tabula_serial", |b| {
            b.iter(|| {
                query.for_each(&mut world, |(mut pos, mut transform)| {
                    heavy(&mut transform, &mut pos)
                })
            })
        });
    }
    {
        let mut positions: Vec<Position> = (0..N).map(|i| bundle(i).1).collect();
        let mut transforms: Vec<Transform> = (0..N).map(|i| bundle(i).0).collect();
        group.bench_function("raw_par", |b| {
            b.iter(|| {
                let (positions, transforms) = black_box((&mut positions, &mut transforms));
                positions
                    .par_iter_mut()
                    .zip(transforms.par_iter_mut())
                    .for_each(|(pos, transform)| heavy(transform, pos));
            })
        });
        group.bench_function("raw_serial", |b| {
            b.iter(|| {
                let (positions, transforms) = black_box((&mut positions, &mut transforms));
                for (pos, transform) in positions.iter_mut().zip(transforms.iter_mut()) {
                    heavy(transform, pos);
                }
            })
        });
    }
    group.finish();
}

// ---------------------------------------------------------------------------------------
// changed_filter

struct Value(u32);

/// A seeded xorshift64* generator, so both sides mark the same rows every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

/// `count` distinct row indices below `n`, in random order.
fn random_rows(n: usize, count: usize) -> Vec<usize> {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut taken = vec![false; n];
    let mut rows = Vec::with_capacity(count);
    while rows.len() < count {
        let row = (rng.next() % n as u64) as usize;
        if !std::mem::replace(&mut taken[row], true) {
            rows.push(row);
        }
    }
    rows
}

/// 100,000 rows, 1% of them changed before each run; the pass sums the changed values.
///
/// Each measured run is a query run (it advances the query's `last_run`), so the changes are
/// re-made before every run, outside the timed region (`iter_custom`).
fn changed_filter(c: &mut Criterion) {
    const N: usize = 100_000;
    let marked = random_rows(N, N / 100);
    let mut group = c.benchmark_group("changed_filter");
    {
        let mut world = World::new();
        let entities: Vec<Entity> = world.spawn_batch((0..N as u32).map(|i| (Value(i),))).collect();
        let marked: Vec<Entity> = marked.iter().map(|&i| entities[i]).collect();
        let mut query = world.query_filtered::<&Value, Changed<Value>>();
        // The first run sees every row as added; later runs see only the marked rows.
        black_box(query.iter(&world).count());
        group.bench_function("tabula", |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    for &e in &marked {
                        world.get_mut::<Value>(e).unwrap().0 += 1;
                    }
                    let start = Instant::now();
                    let sum: u64 = query.iter(&world).map(|v| u64::from(v.0)).sum();
                    total += start.elapsed();
                    black_box(sum);
                }
                total
            })
        });
        debug_assert_eq!(query.iter(&world).count(), 0);
    }
    {
        let mut values: Vec<Value> = (0..N as u32).map(Value).collect();
        let mut ticks = vec![1u32; N];
        let mut now = 1u32;
        group.bench_function("raw", |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let last_run = now;
                    now += 1;
                    for &i in &marked {
                        values[i].0 += 1;
                        ticks[i] = now;
                    }
                    let start = Instant::now();
                    let (values, ticks) = black_box((&values, &ticks));
                    let mut sum = 0u64;
                    for (value, &tick) in values.iter().zip(ticks.iter()) {
                        if tick > last_run {
                            sum += u64::from(value.0);
                        }
                    }
                    total += start.elapsed();
                    black_box(sum);
                }
                total
            })
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .sample_size(30);
    targets = simple_iter, frag_iter, heavy_compute, big_iter, par_big_iter, changed_filter
}
criterion_main!(benches);
