//! Query benchmarks: iteration, fragmentation, parallel compute and change detection.
//!
//! Every group runs the tabula workload beside a baseline written with plain `Vec`s doing the
//! same per-entity work, so the ratio tabula/baseline comes from one run on one machine.
//!
//! - `simple_iter` / `big_iter`: `pos += vel` over 10k / 1M entities of (Transform, Position,
//!   Rotation, Velocity). `raw` is the zipped per-entity loop; `raw_flat` treats the columns
//!   as flat `f32` lanes (vectorises); `tabula_chunk` does the same over `for_each_chunk`.
//! - `par_big_iter`: the 1M pass with `par_for_each`, beside the serial tabula pass.
//! - `frag_iter`: 26 archetypes of 20 entities; `data *= 2` over `&mut Data`; also in hecs.
//! - `heavy_compute`: 1k entities, 100 4x4 inversions each, in parallel and serially.
//! - `light_par`: 20k entities, a `steer` kernel of about 50 flops each over (Position,
//!   Velocity, Target): `for_each`, and `par_for_each` in rayon pools of 1, 2 and 8 threads;
//!   the baselines are a plain `Vec` of the same fields, serially (`raw_serial`) and with
//!   rayon's `par_iter_mut` in the 2-thread pool (`raw_par_iter_mut`, the ratio's baseline).
//!   Diagnostics: `for_each` inside the 1-thread pool (what `install` adds to
//!   `tabula_par_1`), and `par_iter_mut` in the 8-thread pool.
//! - `changed_filter`: a `Changed<T>` pass over 100k rows of which 1% changed.
//!
//! Entries named `tabula_untracked` / `tabula_one_archetype` are diagnostics, not workloads:
//! they remove one cost (the changed-tick store, the fragmentation) to measure it;
//! `tabula_for_loop` writes the pass as a `for` loop over `iter_mut`, the way many users do.
//!
//! Run with `cargo bench -p tabula-benches --bench query`; results are summarised in
//! `docs/benchmarks.md` (section "Queries").
//!
//! ## Interleaved mode, for busy machines
//!
//! `TABULA_BENCH_ROUNDS=300 cargo bench -p tabula-benches --bench query [-- <group filter>]`
//! runs each group in interleaved rounds instead of under criterion; see `harness/mod.rs`.

// The fragmentation components are spawned for their archetypes and never read.
#![allow(dead_code)]

use std::hint::black_box;
use std::time::Duration;

use criterion::Criterion;
use rayon::prelude::*;
use tabula::prelude::*;
use tabula::{Changed, QueryData, QueryState};

#[macro_use]
mod harness;

use harness::*;

/// A world of `bundles`, and a query over it.
fn world_with<D: QueryData, B: Bundle>(bundles: impl Iterator<Item = B>) -> (World, QueryState<D>) {
    let mut world = World::new();
    world.spawn_batch(bundles).for_each(drop);
    let query = world.query();
    (world, query)
}

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

/// `pos += vel` over `n` entities: a world and its query, and the same data in plain `Vec`s.
struct IterState {
    world: World,
    query: QueryState<(&'static mut Position, &'static Velocity)>,
    positions: Vec<Position>,
    velocities: Vec<Velocity>,
    /// Whether each interleaved round starts with the caches emptied (see [`Rounds`]).
    cold: bool,
}

impl IterState {
    /// Copy `copy` of `n` entities (see [`in_turn`]).
    fn new(n: usize, copy: usize) -> Self {
        let ((world, query), (positions, velocities)) = in_turn(
            copy,
            || world_with((0..n).map(simple_bundle)),
            || {
                let positions = (0..n).map(|i| simple_bundle(i).1).collect();
                (positions, (0..n).map(|i| simple_bundle(i).3).collect())
            },
        );
        Self {
            world,
            query,
            positions,
            velocities,
            cold: n >= 1_000_000,
        }
    }
}

impl Rounds for IterState {
    fn before_round(&mut self) {
        if self.cold {
            evict_caches();
        }
    }
}

/// tabula's serial `pos += vel` pass, one function for every group that runs it.
#[inline(never)]
fn tabula_pass(s: &mut IterState) {
    s.query
        .for_each(&mut s.world, |(mut pos, vel)| integrate(&mut pos, vel))
}

/// The serial `pos += vel` entries, over `state`.
fn iter_group(c: &mut Criterion, name: &str, states: &mut [IterState]) {
    bench_group!(c, name, states, [
        "tabula" => tabula_pass;
        // Diagnostic: the same pass writing through `bypass_change_detection`, so without the
        // per-row changed-tick store; the gap to `tabula` is the cost of change detection.
        "tabula_untracked" => |s: &mut IterState| {
            s.query.for_each(&mut s.world, |(mut pos, vel)| integrate(pos.bypass_change_detection(), vel))
        };
        // Diagnostic: a `for` loop over `iter_mut` writing each field through the item, the
        // way bevy_ecs and hecs users write it (`integrate`'s arithmetic, spelled out).
        "tabula_for_loop" => |s: &mut IterState| {
            for (mut pos, vel) in s.query.iter_mut(&mut s.world) {
                pos.0[0] += vel.0[0];
                pos.0[1] += vel.0[1];
                pos.0[2] += vel.0[2];
            }
        };
        "tabula_chunk" => |s: &mut IterState| {
            s.query.for_each_chunk(&mut s.world, |(positions, velocities)| {
                integrate_lanes(lanes_mut(positions), lanes(velocities))
            })
        };
        "raw" => |s: &mut IterState| {
            let (positions, velocities) = black_box((&mut s.positions, &s.velocities));
            for (pos, vel) in positions.iter_mut().zip(velocities.iter()) {
                integrate(pos, vel);
            }
        };
        "raw_flat" => |s: &mut IterState| {
            let (positions, velocities) = black_box((&mut s.positions, &s.velocities));
            integrate_lanes(lanes_mut(positions), lanes(velocities))
        };
    ]);
}

/// 10,000 entities: `pos += vel`.
fn simple_iter(c: &mut Criterion) {
    iter_group(
        c,
        "simple_iter",
        &mut placements(|copy| IterState::new(10_000, copy)),
    );
}

/// 1,000,000 entities: `pos += vel` serially (`big_iter`), and on rayon's threads beside the
/// serial tabula pass (`par_big_iter`).
fn big_iter(c: &mut Criterion) {
    let mut states = placements(|copy| IterState::new(1_000_000, copy));
    iter_group(c, "big_iter", &mut states);
    // The default batching: rayon splits the 1M rows as its threads ask for work.
    bench_group!(c, "par_big_iter", &mut states, [
        "tabula_par" => |s: &mut IterState| {
            s.query.par_for_each(&mut s.world, |(mut pos, vel)| integrate(&mut pos, vel))
        };
        "tabula_serial" => tabula_pass;
        "raw_par" => |s: &mut IterState| {
            let (positions, velocities) = black_box((&mut s.positions, &s.velocities));
            positions
                .par_iter_mut()
                .zip(velocities.par_iter())
                .for_each(|(pos, vel)| integrate(pos, vel));
        };
    ]);
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

        /// The same entities in a hecs world.
        fn spawn_hecs_fragments(world: &mut hecs::World) {
            $(world.spawn_batch((0..20).map(|_| ($name(0.0), Data(1.0)))).for_each(drop);)*
        }
    };
}

fragments!(
    A, B, C, D, E, F, G, H, I, J, K, L, M, N, O, P, Q, R, S, T, U, V, W, X, Y, Z
);

/// 26 archetypes of 20 `Data` rows, in tabula and in hecs; diagnostics: the same 520 rows
/// in one archetype; and a plain `Vec` of 520.
struct FragState {
    world: World,
    query: QueryState<&'static mut Data>,
    /// The same archetypes in hecs, the crate the storage bench compares with (`storage.rs`).
    hecs: hecs::World,
    one_world: World,
    one_query: QueryState<&'static mut Data>,
    data: Vec<Data>,
    /// The 26 archetypes' rows as 26 separate `Vec`s: the hand-written floor for any
    /// storage that keeps each archetype's rows together.
    tables: Vec<Vec<Data>>,
}

impl Rounds for FragState {}

/// 26 archetypes of 20 entities: `data *= 2` over `&mut Data`.
fn frag_iter(c: &mut Criterion) {
    let mut states = placements(|copy| {
        let ((world, query, one_world, one_query), (data, tables)) = in_turn(
            copy,
            || {
                let mut world = World::new();
                spawn_fragments(&mut world);
                let query = world.query();
                let mut one_world = World::new();
                one_world
                    .spawn_batch((0..26 * 20).map(|_| (A(0.0), Data(1.0))))
                    .for_each(drop);
                let one_query = one_world.query();
                (world, query, one_world, one_query)
            },
            || (vec![Data(1.0); 26 * 20], vec![vec![Data(1.0); 20]; 26]),
        );
        let mut hecs = hecs::World::new();
        spawn_hecs_fragments(&mut hecs);
        FragState {
            world,
            query,
            hecs,
            one_world,
            one_query,
            data,
            tables,
        }
    });
    bench_group!(c, "frag_iter", &mut states, [
        "tabula" => |s: &mut FragState| s.query.for_each(&mut s.world, |mut data| data.0 *= 2.0);
        // Diagnostics: without the changed-tick store, and the same 520 rows in one archetype
        // (the gap to `tabula` is the cost of visiting 26 archetypes instead of one).
        "tabula_untracked" => |s: &mut FragState| {
            s.query.for_each(&mut s.world, |mut data| data.bypass_change_detection().0 *= 2.0)
        };
        // Diagnostic: a `for` loop over `iter_mut`.
        "tabula_for_loop" => |s: &mut FragState| {
            for mut data in s.query.iter_mut(&mut s.world) {
                data.0 *= 2.0;
            }
        };
        "tabula_one_archetype" => |s: &mut FragState| {
            s.one_query.for_each(&mut s.one_world, |mut data| data.0 *= 2.0)
        };
        // The same pass in hecs: its fastest form, a `for` loop over `query_mut` (no borrow
        // flags to take).
        "hecs" => |s: &mut FragState| {
            for data in s.hecs.query_mut::<&mut Data>() {
                data.0 *= 2.0;
            }
        };
        // Diagnostic: the same pass over 26 separate `Vec`s of 20, i.e. the cost of
        // visiting 26 tables with hand-written loops.
        "raw_per_archetype" => |s: &mut FragState| {
            for table in black_box(&mut s.tables).iter_mut() {
                for data in table.iter_mut() {
                    data.0 *= 2.0;
                }
            }
        };
        "raw" => |s: &mut FragState| {
            for data in black_box(&mut s.data).iter_mut() {
                data.0 *= 2.0;
            }
        };
    ]);
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

/// A 4x4 matrix on a cache line of its own: `invert`'s return value.
///
/// `invert` stays out of line, so its result goes through a slot on the calling thread's
/// stack. As a plain `Option<[[f32; 4]; 4]>` that slot is 68 bytes at 4-byte alignment, and
/// where a thread's stack happens to put it across a page boundary, every one of that
/// thread's 100 inversions per entity pays split loads and stores: measured with gdb, one
/// rayon worker's slot sat at page offset 0xfe0 in one build of this bench, and that build's
/// `tabula_par` ran 1.17-1.22x `raw_par` with identical loop code (the same bench built
/// from the previous commit: 1.00x, its slots at 0xea0 and 0x010). Aligning the slot takes
/// that lottery out of the comparison.
#[repr(C, align(64))]
struct Inverse([[f32; 4]; 4]);

/// The inverse of a 4x4 matrix by cofactors (2x2 sub-determinants), `None` when singular.
#[inline]
fn invert(m: &[[f32; 4]; 4]) -> Option<Inverse> {
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
    Some(Inverse([
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
    ]))
}

/// The per-entity work of `heavy_compute`: invert 100 times, then transform the position
/// as a direction (w = 0).
#[inline(always)]
fn heavy(transform: &mut Transform, pos: &mut Position) {
    for _ in 0..100 {
        transform.0 = invert(&transform.0).expect("a rotation is invertible").0;
    }
    let m = &transform.0;
    let p = pos.0;
    pos.0 = [0, 1, 2].map(|row| m[0][row] * p[0] + m[1][row] * p[1] + m[2][row] * p[2]);
}

/// 1,000 entities for `heavy_compute`, in a world and in plain `Vec`s.
struct HeavyState {
    world: World,
    query: QueryState<(&'static mut Position, &'static mut Transform)>,
    positions: Vec<Position>,
    transforms: Vec<Transform>,
}

impl Rounds for HeavyState {}

/// 1,000 entities: 100 matrix inversions each, on rayon's threads and serially.
fn heavy_compute(c: &mut Criterion) {
    const N: usize = 1_000;
    let bundle = |i| {
        (
            rotation_x(),
            Position([i as f32, 1.0, 2.0]),
            Rotation([1.0, 0.0, 0.0]),
            Velocity([1.0; 3]),
        )
    };
    let mut states = placements(|copy| {
        let ((world, query), (positions, transforms)) = in_turn(
            copy,
            // The query's default batching: rayon halves the rows while a thread is idle,
            // as it does for `raw_par`. (Fixed batches of 64 rows, 156 µs of work each, left
            // one thread idle for up to a batch at the end: 1.02-1.03x raw_par.)
            || world_with((0..N).map(bundle)),
            || {
                let positions = (0..N).map(|i| bundle(i).1).collect();
                (positions, (0..N).map(|i| bundle(i).0).collect())
            },
        );
        HeavyState {
            world,
            query,
            positions,
            transforms,
        }
    });
    bench_group!(c, "heavy_compute", &mut states, [
        "tabula_par" => |s: &mut HeavyState| {
            s.query.par_for_each(&mut s.world, |(mut pos, mut transform)| heavy(&mut transform, &mut pos))
        };
        "tabula_serial" => |s: &mut HeavyState| {
            s.query.for_each(&mut s.world, |(mut pos, mut transform)| heavy(&mut transform, &mut pos))
        };
        "raw_par" => |s: &mut HeavyState| {
            let (positions, transforms) = black_box((&mut s.positions, &mut s.transforms));
            positions
                .par_iter_mut()
                .zip(transforms.par_iter_mut())
                .for_each(|(pos, transform)| heavy(transform, pos));
        };
        "raw_serial" => |s: &mut HeavyState| {
            let (positions, transforms) = black_box((&mut s.positions, &mut s.transforms));
            for (pos, transform) in positions.iter_mut().zip(transforms.iter_mut()) {
                heavy(transform, pos);
            }
        };
    ]);
}

// ---------------------------------------------------------------------------------------
// light_par

/// Where a `light_par` agent heads.
#[derive(Clone, Copy)]
#[repr(C)]
struct Target([f32; 3]);

/// One `light_par` agent as the plain-`Vec` baselines store it.
#[derive(Clone, Copy)]
struct Agent {
    pos: Position,
    vel: Velocity,
    target: Target,
}

/// The per-entity work of `light_par`, about 50 flops: steer the velocity towards the
/// target (normalised direction at full speed, the change clamped to a maximum force), clamp
/// the speed, then move.
#[inline(always)]
fn steer(pos: &mut Position, vel: &mut Velocity, target: &Target) {
    const MAX_SPEED: f32 = 4.0;
    const MAX_FORCE: f32 = 0.5;
    const DT: f32 = 1.0 / 60.0;
    let [p, v, t] = [pos.0, vel.0, target.0];
    let to = [t[0] - p[0], t[1] - p[1], t[2] - p[2]];
    let dist = (to[0] * to[0] + to[1] * to[1] + to[2] * to[2]).sqrt().max(1e-6);
    let scale = MAX_SPEED / dist;
    let force = [to[0] * scale - v[0], to[1] * scale - v[1], to[2] * scale - v[2]];
    let len = (force[0] * force[0] + force[1] * force[1] + force[2] * force[2]).sqrt();
    let clamp = (MAX_FORCE / len.max(1e-6)).min(1.0);
    let v = [
        v[0] + force[0] * clamp,
        v[1] + force[1] * clamp,
        v[2] + force[2] * clamp,
    ];
    let speed = (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt();
    let slow = (MAX_SPEED / speed.max(1e-6)).min(1.0);
    let v = [v[0] * slow, v[1] * slow, v[2] * slow];
    vel.0 = v;
    pos.0 = [p[0] + v[0] * DT, p[1] + v[1] * DT, p[2] + v[2] * DT];
}

/// The `light_par` agent `i`: spread over a plane, heading for a point across it.
fn agent(i: usize) -> Agent {
    let x = (i % 200) as f32;
    let z = (i / 200) as f32;
    Agent {
        pos: Position([x, 0.0, z]),
        vel: Velocity([0.5, 0.0, -0.5]),
        target: Target([200.0 - x, 1.0, z * 0.5]),
    }
}

/// 20,000 agents in a world and in a plain `Vec`, and the rayon pools the entries run in.
struct LightState {
    world: World,
    query: QueryState<(&'static mut Position, &'static mut Velocity, &'static Target)>,
    agents: Vec<Agent>,
}

impl Rounds for LightState {}

/// 20,000 entities, `steer` (about 50 flops each): serially, and `par_for_each` in pools of
/// 1, 2 and 8 threads (8 oversubscribes a 2-core machine), beside a `Vec` of the same fields
/// under rayon's `par_iter_mut` in the 2-thread pool.
fn light_par(c: &mut Criterion) {
    const N: usize = 20_000;
    let pool = |threads| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .expect("a rayon pool")
    };
    let (pool1, pool2, pool8) = (pool(1), pool(2), pool(8));
    let mut states = placements(|copy| {
        let ((world, query), agents) = in_turn(
            copy,
            || world_with((0..N).map(agent).map(|a| (a.pos, a.vel, a.target))),
            || (0..N).map(agent).collect(),
        );
        LightState { world, query, agents }
    });
    let par = |s: &mut LightState| {
        s.query.par_for_each(&mut s.world, |(mut pos, mut vel, target)| {
            steer(&mut pos, &mut vel, target)
        })
    };
    bench_group!(c, "light_par", &mut states, [
        "tabula_for_each" => |s: &mut LightState| {
            s.query
                .for_each(&mut s.world, |(mut pos, mut vel, target)| steer(&mut pos, &mut vel, target))
        };
        // Diagnostic: `for_each` in the 1-thread pool, i.e. `tabula_par_1`'s serial pass
        // plus what `install` costs (handing the pass to the pool's thread and back).
        "tabula_for_each_in_pool_1" => |s: &mut LightState| {
            pool1.install(|| {
                s.query
                    .for_each(&mut s.world, |(mut pos, mut vel, target)| steer(&mut pos, &mut vel, target))
            })
        };
        "tabula_par_1" => |s: &mut LightState| pool1.install(|| par(s));
        "tabula_par_2" => |s: &mut LightState| pool2.install(|| par(s));
        "tabula_par_8" => |s: &mut LightState| pool8.install(|| par(s));
        "raw_par_iter_mut" => |s: &mut LightState| {
            let agents = black_box(&mut s.agents);
            pool2.install(|| {
                agents
                    .par_iter_mut()
                    .for_each(|a| steer(&mut a.pos, &mut a.vel, &a.target))
            });
        };
        // Diagnostic: the baseline in the 8-thread pool, what rayon itself loses to
        // oversubscription.
        "raw_par_iter_mut_8" => |s: &mut LightState| {
            let agents = black_box(&mut s.agents);
            pool8.install(|| {
                agents
                    .par_iter_mut()
                    .for_each(|a| steer(&mut a.pos, &mut a.vel, &a.target))
            });
        };
        "raw_serial" => |s: &mut LightState| {
            for a in black_box(&mut s.agents).iter_mut() {
                steer(&mut a.pos, &mut a.vel, &a.target);
            }
        };
    ]);
}

// ---------------------------------------------------------------------------------------
// changed_filter

struct Value(u32);

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

/// 100,000 `Value` rows in a world and in plain `Vec`s with a tick array, and the 1% of
/// rows re-marked before each run.
struct ChangedState {
    world: World,
    query: QueryState<&'static Value, Changed<Value>>,
    marked_entities: Vec<Entity>,
    values: Vec<Value>,
    ticks: Vec<u32>,
    marked_rows: Vec<usize>,
    now: u32,
    last_run: u32,
}

impl Rounds for ChangedState {}

/// 100,000 rows, 1% of them changed before each run; the pass sums the changed values.
///
/// Each measured run is a query run (it advances the query's `last_run`), so the changes are
/// re-made before every run, outside the timed region.
fn changed_filter(c: &mut Criterion) {
    const N: usize = 100_000;
    let marked_rows = random_rows(N, N / 100);
    let mut states = placements(|copy| {
        let ((world, query, marked_entities), (values, ticks)) = in_turn(
            copy,
            || {
                let mut world = World::new();
                let entities: Vec<Entity> = world.spawn_batch((0..N as u32).map(|i| (Value(i),))).collect();
                let mut query = world.query_filtered::<&Value, Changed<Value>>();
                // The first run sees every row as added; later runs see only the marked rows.
                black_box(query.iter(&world).count());
                let marked_entities = marked_rows.iter().map(|&i| entities[i]).collect();
                (world, query, marked_entities)
            },
            || ((0..N as u32).map(Value).collect(), vec![1; N]),
        );
        ChangedState {
            world,
            query,
            marked_entities,
            values,
            ticks,
            marked_rows: marked_rows.clone(),
            now: 1,
            last_run: 1,
        }
    });
    bench_group!(c, "changed_filter", &mut states, [
        "tabula" => |s: &mut ChangedState| {
            let sum: u64 = s.query.iter(&s.world).map(|v| u64::from(v.0)).sum();
            black_box(sum);
        }, prepare |s: &mut ChangedState| {
            for &e in &s.marked_entities {
                s.world.get_mut::<Value>(e).unwrap().0 += 1;
            }
        };
        "raw" => |s: &mut ChangedState| {
            let (values, ticks) = black_box((&s.values, &s.ticks));
            let mut sum = 0u64;
            for (value, &tick) in values.iter().zip(ticks.iter()) {
                if tick > s.last_run {
                    sum += u64::from(value.0);
                }
            }
            black_box(sum);
        }, prepare |s: &mut ChangedState| {
            s.last_run = s.now;
            s.now += 1;
            for &i in &s.marked_rows {
                s.values[i].0 += 1;
                s.ticks[i] = s.now;
            }
        };
    ]);
}

/// `pos += vel` over 10,000 entities with `Velocity` in a sparse set, in a world of its own.
struct SparseIterState {
    /// `Velocity` in tables: the plain `simple_iter` pass.
    table: IterState,
    /// `Velocity` stored sparse (registered before the spawns).
    sparse: World,
    sparse_query: QueryState<(&'static mut Position, &'static Velocity)>,
}

impl Rounds for SparseIterState {}

/// 10,000 entities: `pos += vel` with `vel` in a sparse set, beside the same pass with `vel`
/// in a table and the plain-`Vec` baseline. Each sparse row costs a lookup by entity (the
/// sparse slot, then the dense row's entity) on top of the table pass.
fn sparse_iter(c: &mut Criterion) {
    const N: usize = 10_000;
    let mut states = placements(|copy| {
        let table = IterState::new(N, copy);
        let mut sparse = World::new();
        sparse.register_component::<Velocity>().sparse_set();
        sparse.spawn_batch((0..N).map(simple_bundle)).for_each(drop);
        let sparse_query = sparse.query();
        SparseIterState {
            table,
            sparse,
            sparse_query,
        }
    });
    bench_group!(c, "sparse_iter", &mut states, [
        "tabula_sparse" => |s: &mut SparseIterState| {
            s.sparse_query
                .for_each(&mut s.sparse, |(mut pos, vel)| integrate(&mut pos, vel))
        };
        // The same as a `for` loop over `iter_mut`: the iterator's sparse walk, stepped out
        // of line once per row (`QueryIter::next`).
        "tabula_sparse_for_loop" => |s: &mut SparseIterState| {
            for (mut pos, vel) in s.sparse_query.iter_mut(&mut s.sparse) {
                integrate(&mut pos, vel);
            }
        };
        "tabula_table" => |s: &mut SparseIterState| tabula_pass(&mut s.table);
        "raw" => |s: &mut SparseIterState| {
            let (positions, velocities) = black_box((&mut s.table.positions, &s.table.velocities));
            for (pos, vel) in positions.iter_mut().zip(velocities.iter()) {
                integrate(pos, vel);
            }
        };
    ]);
}

fn main() {
    let mut c = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .sample_size(30)
        .configure_from_args();
    simple_iter(&mut c);
    frag_iter(&mut c);
    heavy_compute(&mut c);
    light_par(&mut c);
    big_iter(&mut c);
    changed_filter(&mut c);
    sparse_iter(&mut c);
    c.final_summary();
}
