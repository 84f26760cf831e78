//! `hooks`: what component hooks and observers cost. 10,000 one-entity inserts of `Vel` into entities
//! holding `Pos` (each insert moves a row to the `(Pos, Vel)` table; the timing covers the
//! inserts only, and the `Vel`s are removed again, untimed, between iterations, so the tables
//! are warm), with:
//!
//! - `no_hook`: `Vel` has no hook (the A/B figure: the inline insert path);
//! - `one_hook`: one `on_add` hook on `Vel`, counting into a resource;
//! - `ten_hooks`: ten such hooks;
//! - `one_observer` / `ten_observers`: observer systems of `OnAdd<Vel>` (each a system with a
//!   `Trigger` and a `ResMut`), counting into the resource;
//! - `raw` (the baseline): two hand-written tables (`Vec<Pos>` → `Vec<(Pos, Vel)>`,
//!   swap-remove at the source, an index per entity), no hook.
//!
//! ```text
//! cargo bench -p tabula-benches --bench hooks
//! ```

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use tabula::prelude::*;
use tabula::{HookContext, HookWorld, OnAdd};

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

fn count_observed(_: Trigger<OnAdd<Vel>>, mut count: ResMut<Count>) {
    count.0 += 1;
}

/// A world of `ENTITIES` entities holding `Pos`, with `observers` observers of `OnAdd<Vel>`.
fn world_observed(observers: usize) -> (World, Vec<Entity>) {
    let (mut world, entities) = world_with(0);
    for _ in 0..observers {
        world.observe(count_observed);
    }
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

    /// Moves every entity back to the source table (the untimed half of an iteration).
    fn remove_all(&mut self) {
        for (&id, (pos, _)) in self.target_ids.iter().zip(&self.target) {
            self.slots[id as usize] = (false, self.source.len() as u32);
            self.source.push(*pos);
            self.source_ids.push(id);
        }
        self.target.clear();
        self.target_ids.clear();
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
        let mut raw = Raw::new();
        b.iter_custom(|iters| {
            let mut timed = Duration::ZERO;
            for _ in 0..iters {
                let ids = raw.source_ids.clone();
                let start = Instant::now();
                for &id in &ids {
                    raw.insert_vel(id, Vel(1.0, 1.0));
                }
                timed += start.elapsed();
                black_box(raw.target.iter().map(|(p, v)| p.0 + p.1 + v.0 + v.1).sum::<f32>());
                raw.remove_all();
            }
            timed
        })
    });
    let entries = [
        ("no_hook", 0, 0),
        ("one_hook", 1, 0),
        ("ten_hooks", 10, 0),
        ("one_observer", 0, 1),
        ("ten_observers", 0, 10),
    ];
    for (name, hooks, observers) in entries {
        let (mut world, entities) = if observers > 0 {
            world_observed(observers)
        } else {
            world_with(hooks)
        };
        group.bench_function(name, |b| {
            b.iter_custom(|iters| {
                let mut timed = Duration::ZERO;
                for _ in 0..iters {
                    let start = Instant::now();
                    insert_all(&mut world, &entities);
                    timed += start.elapsed();
                    world.remove_batch::<(Vel,)>(&entities).unwrap();
                }
                timed
            })
        });
        // Every entity kept its `Pos`; read untimed, so the values are part of the work.
        let sum: f32 = world.query::<&Pos>().iter(&world).map(|p| p.0 + p.1).sum();
        assert_eq!(sum, (0..ENTITIES).map(|i| i as f32).sum::<f32>());
        // Every run counted once per insert and hook or observer (none when a filter skipped
        // the entry).
        let count = world.resource::<Count>().unwrap().0;
        assert_eq!(count % ((hooks + observers).max(1) * ENTITIES) as u64, 0);
    }
    group.finish();
}

criterion_group!(benches, hooks);
criterion_main!(benches);
