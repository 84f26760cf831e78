//! `scratch`: per-frame scratch memory. One system buckets 10,000 positions into a 100 x 100
//! spatial grid every frame (a counting sort: each entity's cell, the cells' counts and
//! starts, the entities in cell order; three temporary collections of about 10,000 entries)
//! and sums up the grid (occupied cells, the fullest cell, pairs sharing a cell, a checksum of
//! the order) into a resource. The entries differ only in where the temporary collections
//! live:
//!
//! - `scratch`: in the system's `Scratch` arena, emptied at the start of each run;
//! - `vec`: in fresh `Vec`s, allocated and freed every frame;
//! - `local_vec`: in `Vec`s kept in a `Local` and cleared every frame (reuse by hand);
//! - `raw` (the baseline): the same loop without an ECS, over a plain `Vec` of positions, with
//!   `Vec`s reused across frames.
//!
//! The setup checks that the four give the same grid.
//!
//! ```text
//! cargo bench -p tabula-benches --bench scratch
//! TABULA_BENCH_ROUNDS=300 cargo bench -p tabula-benches --bench scratch   # interleaved
//! ```

use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use tabula::prelude::*;

// `evict_caches` is for groups that stream more than the caches hold; this one does not.
#[allow(dead_code)]
#[macro_use]
mod harness;

use harness::*;

/// Entities, and so entries of each temporary collection.
const ENTITIES: usize = 10_000;
/// The grid's side, in cells.
const SIDE: u32 = 100;
/// The cells.
const CELLS: usize = (SIDE * SIDE) as usize;
/// A cell's side, in world units: the world is `SIDE * CELL` units across.
const CELL: f32 = 10.0;

#[derive(Clone, Copy)]
struct Position {
    x: f32,
    y: f32,
}

/// What a frame's grid sums up to; the result every entry writes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct GridStats {
    occupied: u32,
    fullest: u32,
    pairs: u64,
    checksum: u64,
}

fn cell_of(p: &Position) -> u32 {
    let column = ((p.x / CELL) as u32).min(SIDE - 1);
    let row = ((p.y / CELL) as u32).min(SIDE - 1);
    row * SIDE + column
}

/// The counting sort and the summary, over temporary collections the caller provides:
/// `cells` (each entity's cell), `counts` (`CELLS + 1` zeros) and `sorted` (`cells.len()`
/// entries, overwritten).
fn bucket(cells: &[u32], counts: &mut [u32], sorted: &mut [u32]) -> GridStats {
    for &cell in cells {
        counts[cell as usize + 1] += 1;
    }
    // `counts[c]` becomes the start of cell `c`...
    for i in 1..counts.len() {
        counts[i] += counts[i - 1];
    }
    // ...and, as entities are placed, the end of it.
    for (entity, &cell) in cells.iter().enumerate() {
        let next = &mut counts[cell as usize];
        sorted[*next as usize] = entity as u32;
        *next += 1;
    }
    let mut stats = GridStats::default();
    let mut start = 0;
    for &end in &counts[..CELLS] {
        let n = end - start;
        stats.occupied += u32::from(n > 0);
        stats.fullest = stats.fullest.max(n);
        stats.pairs += u64::from(n) * u64::from(n.saturating_sub(1)) / 2;
        start = end;
    }
    stats.checksum = sorted.iter().fold(0u64, |acc, &entity| {
        acc.wrapping_mul(31).wrapping_add(u64::from(entity))
    });
    stats
}

/// The temporary collections in the system's scratch arena.
fn grid_scratch(q: Query<&Position>, scratch: Scratch, mut stats: ResMut<GridStats>) {
    let mut cells = scratch.vec_with_capacity(ENTITIES);
    cells.extend(q.iter().map(cell_of));
    let counts = scratch.alloc_slice_fill_copy(CELLS + 1, 0);
    let sorted = scratch.alloc_slice_fill_copy(cells.len(), 0);
    *stats = bucket(&cells, counts, sorted);
}

/// The temporary collections in fresh `Vec`s.
fn grid_vec(q: Query<&Position>, mut stats: ResMut<GridStats>) {
    let mut cells = Vec::with_capacity(ENTITIES);
    cells.extend(q.iter().map(cell_of));
    let mut counts = vec![0; CELLS + 1];
    let mut sorted = vec![0; cells.len()];
    *stats = bucket(&cells, &mut counts, &mut sorted);
}

/// `Vec`s kept from frame to frame.
#[derive(Default)]
struct Buffers {
    cells: Vec<u32>,
    counts: Vec<u32>,
    sorted: Vec<u32>,
}

impl Buffers {
    /// Refills the buffers from `positions` and buckets them.
    fn bucket<'a>(&mut self, positions: impl Iterator<Item = &'a Position>) -> GridStats {
        self.cells.clear();
        self.cells.extend(positions.map(cell_of));
        self.counts.clear();
        self.counts.resize(CELLS + 1, 0);
        self.sorted.clear();
        self.sorted.resize(self.cells.len(), 0);
        bucket(&self.cells, &mut self.counts, &mut self.sorted)
    }
}

/// The temporary collections in `Vec`s kept in a `Local`.
fn grid_local_vec(q: Query<&Position>, mut buffers: Local<Buffers>, mut stats: ResMut<GridStats>) {
    *stats = buffers.bucket(q.iter());
}

/// The baseline: the frame over a plain `Vec` of positions, its buffers reused.
struct RawGrid {
    positions: Vec<Position>,
    buffers: Buffers,
    stats: GridStats,
}

impl RawGrid {
    fn frame(&mut self) {
        self.stats = self.buffers.bucket(self.positions.iter());
    }
}

fn positions() -> Vec<Position> {
    let mut rng = Rng(0x2545_f491);
    let side = SIDE as f32 * CELL;
    let mut unit = move || (rng.next() >> 40) as f32 / (1u64 << 24) as f32;
    (0..ENTITIES)
        .map(|_| Position {
            x: unit() * side,
            y: unit() * side,
        })
        .collect()
}

/// A world of the positions, with a schedule of `system` alone.
fn world<M>(positions: &[Position], system: impl IntoSystemConfigs<M>) -> (World, Schedule) {
    let mut world = World::new();
    world.init_resource::<GridStats>();
    world.spawn_batch(positions.iter().map(|&p| (p,))).for_each(drop);
    let mut schedule = Schedule::new();
    schedule.add_systems(system);
    (world, schedule)
}

struct ScratchState {
    scratch: (World, Schedule),
    vec: (World, Schedule),
    local_vec: (World, Schedule),
    raw: RawGrid,
}

impl Rounds for ScratchState {}

fn run_frame((world, schedule): &mut (World, Schedule)) -> GridStats {
    schedule.run(world);
    *world.resource::<GridStats>().expect("the world has GridStats")
}

fn scratch(c: &mut Criterion) {
    /// Frames run before timing: the scratch arena settles to one block in two.
    const WARM_FRAMES: usize = 10;
    let positions = positions();
    let mut states = placements(|copy| {
        let ((scratch, vec, local_vec), raw) = in_turn(
            copy,
            || {
                (
                    world(&positions, grid_scratch),
                    world(&positions, grid_vec),
                    world(&positions, grid_local_vec),
                )
            },
            || RawGrid {
                positions: positions.clone(),
                buffers: Buffers::default(),
                stats: GridStats::default(),
            },
        );
        ScratchState {
            scratch,
            vec,
            local_vec,
            raw,
        }
    });
    // Not timed: every entry builds the same grid.
    for state in &mut states {
        for _ in 0..WARM_FRAMES {
            state.raw.frame();
            let stats = [
                run_frame(&mut state.scratch),
                run_frame(&mut state.vec),
                run_frame(&mut state.local_vec),
            ];
            assert!(
                stats.iter().all(|&s| s == state.raw.stats),
                "scratch: the entries disagree: raw {:?}, scratch / vec / local_vec {stats:?}",
                state.raw.stats
            );
        }
    }
    println!("scratch: {:?}", states[0].raw.stats);
    bench_group!(c, "scratch", &mut states, [
        "raw" => |s: &mut ScratchState| s.raw.frame();
        "scratch" => |s: &mut ScratchState| {
            let (world, schedule) = &mut s.scratch;
            schedule.run(world);
        };
        "vec" => |s: &mut ScratchState| {
            let (world, schedule) = &mut s.vec;
            schedule.run(world);
        };
        "local_vec" => |s: &mut ScratchState| {
            let (world, schedule) = &mut s.local_vec;
            schedule.run(world);
        };
    ]);
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    targets = scratch
}
criterion_main!(benches);
