//! Save and load benchmarks (the `serde` feature): a world of the standard
//! (Transform, Position, Rotation, Velocity) entities written and read back through
//! `World::snapshot` / `World::load`, beside a hand-written serde of the same values as
//! plain `Vec`s, in JSON and in a compact binary format (postcard).
//!
//! * `serde_roundtrip`: 1,000 entities to and from JSON and binary.
//! * `save_load_100k`: 100,000 entities, binary save and load.
//!
//! Run with `cargo bench -p tabula-benches --bench serde`.

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use serde::{Deserialize, Serialize};
use tabula::World;

// The components of the community's standard workloads (ecs_bench_suite), with serde.

#[derive(Clone, Copy, Serialize, Deserialize)]
struct Transform([[f32; 4]; 4]);

#[derive(Clone, Copy, Serialize, Deserialize)]
struct Position([f32; 3]);

#[derive(Clone, Copy, Serialize, Deserialize)]
struct Rotation([f32; 3]);

#[derive(Clone, Copy, Serialize, Deserialize)]
struct Velocity([f32; 3]);

type Row = (Transform, Position, Rotation, Velocity);

fn row(i: usize) -> Row {
    let mut transform = [[0.0; 4]; 4];
    for (k, line) in transform.iter_mut().enumerate() {
        line[k] = 1.0;
    }
    (
        Transform(transform),
        Position([i as f32, 1.0, 2.0]),
        Rotation([0.0; 3]),
        Velocity([1.0, 0.0, 0.0]),
    )
}

fn registered() -> World {
    let mut world = World::new();
    world.register_serde::<Transform>("Transform");
    world.register_serde::<Position>("Position");
    world.register_serde::<Rotation>("Rotation");
    world.register_serde::<Velocity>("Velocity");
    world
}

fn world_of(n: usize) -> World {
    let mut world = registered();
    world.spawn_batch((0..n).map(row)).for_each(drop);
    world
}

/// The baseline: the same values as one `Vec` of rows.
fn rows_of(n: usize) -> Vec<Row> {
    (0..n).map(row).collect()
}

fn json_save(world: &World) -> String {
    serde_json::to_string(&world.snapshot().expect("every component is registered")).unwrap()
}

fn json_load(text: &str) -> World {
    let mut world = registered();
    world.load(&mut serde_json::Deserializer::from_str(text)).unwrap();
    world
}

fn binary_save(world: &World) -> Vec<u8> {
    postcard::to_stdvec(&world.snapshot().expect("every component is registered")).unwrap()
}

fn binary_load(bytes: &[u8]) -> World {
    let mut world = registered();
    world
        .load(&mut postcard::Deserializer::from_bytes(bytes))
        .unwrap();
    world
}

fn serde_roundtrip(c: &mut Criterion) {
    const N: usize = 1_000;
    let world = world_of(N);
    let rows = rows_of(N);
    let mut group = c.benchmark_group("serde_roundtrip");
    group.throughput(Throughput::Elements(N as u64));
    group.bench_function("tabula_json", |b| {
        b.iter(|| black_box(json_load(&json_save(black_box(&world)))));
    });
    group.bench_function("raw_json", |b| {
        b.iter(|| {
            let text = serde_json::to_string(black_box(&rows)).unwrap();
            black_box(serde_json::from_str::<Vec<Row>>(&text).unwrap())
        });
    });
    group.bench_function("tabula_binary", |b| {
        b.iter(|| black_box(binary_load(&binary_save(black_box(&world)))));
    });
    group.bench_function("raw_binary", |b| {
        b.iter(|| {
            let bytes = postcard::to_stdvec(black_box(&rows)).unwrap();
            black_box(postcard::from_bytes::<Vec<Row>>(&bytes).unwrap())
        });
    });
    group.finish();
}

fn save_load_100k(c: &mut Criterion) {
    const N: usize = 100_000;
    let world = world_of(N);
    let rows = rows_of(N);
    let saved = binary_save(&world);
    let raw = postcard::to_stdvec(&rows).unwrap();
    let mut group = c.benchmark_group("save_load_100k");
    group.throughput(Throughput::Elements(N as u64));
    group.sample_size(20);
    group.bench_function(BenchmarkId::new("save", "tabula"), |b| {
        b.iter(|| black_box(binary_save(black_box(&world))));
    });
    group.bench_function(BenchmarkId::new("save", "raw"), |b| {
        b.iter(|| black_box(postcard::to_stdvec(black_box(&rows)).unwrap()));
    });
    group.bench_function(BenchmarkId::new("load", "tabula"), |b| {
        b.iter(|| black_box(binary_load(black_box(&saved))));
    });
    group.bench_function(BenchmarkId::new("load", "raw"), |b| {
        b.iter(|| black_box(postcard::from_bytes::<Vec<Row>>(black_box(&raw)).unwrap()));
    });
    group.finish();
}

criterion_group!(benches, serde_roundtrip, save_load_100k);
criterion_main!(benches);
