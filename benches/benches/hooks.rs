//! `hooks`: what component hooks cost. 10,000 one-entity inserts of `Vel` into entities
//! holding `Pos` (each insert moves a row to the `(Pos, Vel)` table), with:
//!
//! - `no_hook`: `Vel` has no hook (the A/B figure: the inline insert path);
//! - `one_hook`: one `on_add` hook on `Vel`, counting into a resource;
//! - `ten_hooks`: ten such hooks;
//! - `raw` (the baseline): two hand-written tables (`Vec<Pos>` → `Vec<(Pos, Vel)>`,
//!   swap-remove at the source, an index per entity), no hook.
//!
//! ```text
//! cargo bench -p tabula-benches --bench hooks
//! ```

use std::hint::black_box;
use std::time::Duration;

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use tabula::prelude::*;
use tabula::{HookContext, HookWorld};

const ENTITIES: usize = 10_000;

#[derive(Clone, Copy)]
struct Pos(f32, f32);
#[derive(Clone, Copy)]
struct Vel(f32, f32);

#[derive(Default)]
struct Count(u64);

fn count(world: &mut HookWorld<'_>, _: HookContext) {
    world.resource_mut::<Count>().unwrap().0 += 1;
}

/// A world of `ENTITIES` entities holding `Pos`, with `hooks` `on_add` hooks on `Vel`.
fn world_with(hooks: usize) -> (World, Vec<Entity>) {
    let mut world = World::new();
    world.init_resource::<Count>();
    for _ in 0..hooks {
        world.register_component::<Vel>().on_add(count);
    }
    let entities = world
        .spawn_batch((0..ENTITIES).map(|i| (Pos(i as f32, 0.0),)))
        .collect();
    (world, entities)
}

fn insert_all(world: &mut World, entities: &[Entity]) {
    for &e in entities {
        world.insert(e, (Vel(1.0, 1.0),)).unwrap();
    }
}

/// The hand-written baseline: two tables and each entity's (table, row).
struct Raw {
    source: Vec<Pos>,
    source_ids: Vec<u32>,
    target: Vec<(Pos, Vel)>,
    target_ids: Vec<u32>,
    slots: Vec<(bool, u32)>,
}

impl Raw {
    fn new() -> Self {
        Self {
            source: (0..ENTITIES).map(|i| Pos(i as f32, 0.0)).collect(),
            source_ids: (0..ENTITIES as u32).collect(),
            target: Vec::with_capacity(ENTITIES),
            target_ids: Vec::with_capacity(ENTITIES),
            slots: (0..ENTITIES as u32).map(|i| (false, i)).collect(),
        }
    }

    fn insert_vel(&mut self, id: u32, vel: Vel) {
        let (moved, row) = self.slots[id as usize];
        assert!(!moved);
        let row = row as usize;
        let pos = self.source.swap_remove(row);
        self.source_ids.swap_remove(row);
        if let Some(&filler) = self.source_ids.get(row) {
            self.slots[filler as usize].1 = row as u32;
        }
        self.slots[id as usize] = (true, self.target.len() as u32);
        self.target.push((pos, vel));
        self.target_ids.push(id);
    }
}

fn hooks(c: &mut Criterion) {
    let mut group = c.benchmark_group("hooks_insert");
    group
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    group.bench_function("raw", |b| {
        b.iter_batched(
            Raw::new,
            |mut raw| {
                for id in 0..ENTITIES as u32 {
                    raw.insert_vel(id, Vel(1.0, 1.0));
                }
                black_box(raw.target.len())
            },
            BatchSize::LargeInput,
        )
    });
    for (name, hooks) in [("no_hook", 0), ("one_hook", 1), ("ten_hooks", 10)] {
        group.bench_function(name, |b| {
            b.iter_batched(
                || world_with(hooks),
                |(mut world, entities)| {
                    insert_all(&mut world, &entities);
                    assert_eq!(
                        world.resource::<Count>().unwrap().0,
                        (hooks * ENTITIES) as u64
                    );
                    world
                },
                BatchSize::LargeInput,
            )
        });
    }
    group.finish();
}

criterion_group!(benches, hooks);
criterion_main!(benches);
