//! `lanes`: the apply side of a frame with K command-recording systems, each in its own
//! entity lane, beside 1,000 `ParallelCommands` spawns — the per-frame apply time should not
//! grow with K.
//!
//! Each pass (untimed prepare) records what one frame records: every lane's `Commands` spawn
//! 4 entities, and a `par_for_each` over 1,000 seeds records one spawn per row into a
//! `ParallelCommandQueue`; it also despawns the last pass's spawns, so the world is in steady
//! state. The timed part applies the K queues and the parallel queue, as a sync point does.
//! `k0` (no lane, parallel spawns only) is the baseline.
//!
//! ```text
//! cargo bench -p tabula-benches --bench lanes
//! ```

use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use tabula::{CommandQueue, Commands, Entity, EntityLane, ParallelCommandQueue, QueryState, With, World};

// The harness's interleaved mode is not used here; `criterion_entry` is.
#[allow(dead_code, unused_macros)]
mod harness;

use harness::*;

struct Seed;
struct Spark;

/// Spawns each lane records a frame.
const PER_LANE: u32 = 4;
/// `ParallelCommands` spawns a frame.
const PARALLEL: u32 = 1_000;

struct Frame {
    world: World,
    lanes: Vec<(EntityLane, CommandQueue)>,
    parallel: ParallelCommandQueue,
    seeds: QueryState<Entity, With<Seed>>,
    sparks: QueryState<Entity, With<Spark>>,
}

impl Frame {
    fn new(k: usize) -> Self {
        let mut world = World::new();
        world.spawn_batch((0..PARALLEL).map(|_| (Seed,))).for_each(drop);
        let lanes = (0..k)
            .map(|_| (world.add_entity_lane(), CommandQueue::new()))
            .collect();
        let seeds = world.query_filtered::<Entity, With<Seed>>();
        let sparks = world.query_filtered::<Entity, With<Spark>>();
        let mut frame = Self {
            world,
            lanes,
            parallel: ParallelCommandQueue::new(),
            seeds,
            sparks,
        };
        // Settle the lanes' blocks before measuring.
        for _ in 0..20 {
            frame.record();
            frame.apply();
        }
        frame
    }

    /// What the systems record in one frame, after the last frame's sparks are despawned.
    fn record(&mut self) {
        let old: Vec<Entity> = self.sparks.iter(&self.world).collect();
        for spark in old {
            self.world.despawn(spark).expect("a live spark");
        }
        for (lane, queue) in &mut self.lanes {
            let mut commands = Commands::new_in_lane(queue, &self.world, lane);
            for _ in 0..PER_LANE {
                commands.spawn((Spark,));
            }
        }
        let parallel = &self.parallel;
        self.seeds.par_for_each(&mut self.world, |_seed| {
            parallel.command_scope(|commands| commands.spawn((Spark,)));
        });
    }

    /// What the sync point does: every queue applied, in order.
    fn apply(&mut self) {
        for (_, queue) in &mut self.lanes {
            assert!(queue.apply(&mut self.world).is_empty());
        }
        assert!(self.parallel.apply(&mut self.world).is_empty());
    }
}

fn lanes(c: &mut Criterion) {
    let mut group = c.benchmark_group("lanes");
    for k in [0, 1, 8, 64] {
        let mut frame = Frame::new(k);
        criterion_entry(
            &mut group,
            &format!("apply_k{k}"),
            &mut frame,
            Some(Frame::record),
            Frame::apply,
        );
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    targets = lanes
}
criterion_main!(benches);
