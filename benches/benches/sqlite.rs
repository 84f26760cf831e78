//! Relational export benchmark (the `sqlite` feature): a world of the standard
//! (Transform, Position, Rotation, Velocity) entities exported to an in-memory SQLite
//! database with `World::export_sqlite` and imported back with `World::import_sqlite`,
//! beside a hand-written rusqlite loop writing and reading the same tables (one
//! transaction, prepared statements) in the same run.
//!
//! * `sqlite_export`: 100,000 entities with 4 components, export and import.
//!
//! The tables are those of the export: `entities (id, slot, generation, archetype,
//! position)`, and per component an `entity` column and one column per tuple field (`_0`,
//! `_1`, ...): `Position`, `Rotation` and `Velocity` three `REAL`s, `Transform` four rows of
//! its matrix as JSON text. The baseline writes the same values (it also builds the JSON),
//! so the ratio is the cost of going through serde and the type-erased registry.
//!
//! Run with `cargo bench -p tabula-benches --bench sqlite`.

use std::hint::black_box;

use criterion::{BatchSize, BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use serde::{Deserialize, Serialize};
use tabula::rusqlite::{Connection, params};
use tabula::{Entity, World};

#[derive(Clone, Copy, Serialize, Deserialize)]
struct Transform([[f32; 4]; 4]);

#[derive(Clone, Copy, Serialize, Deserialize)]
struct Position(f32, f32, f32);

#[derive(Clone, Copy, Serialize, Deserialize)]
struct Rotation(f32, f32, f32);

#[derive(Clone, Copy, Serialize, Deserialize)]
struct Velocity(f32, f32, f32);

type Row = (Transform, Position, Rotation, Velocity);

fn row(i: usize) -> Row {
    let mut transform = [[0.0; 4]; 4];
    for (k, line) in transform.iter_mut().enumerate() {
        line[k] = 1.0;
    }
    (
        Transform(transform),
        Position(i as f32, 1.0, 2.0),
        Rotation(0.0, 0.0, 0.0),
        Velocity(1.0, 0.0, 0.0),
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

fn export(world: &World) -> Connection {
    let db = Connection::open_in_memory().unwrap();
    world.export_sqlite(&db).unwrap();
    db
}

fn import(db: &Connection) -> World {
    let mut world = registered();
    world.import_sqlite(db).unwrap();
    world
}

const TRIPLES: [&str; 3] = ["Position", "Rotation", "Velocity"];

/// The baseline's export: the same tables, written by hand.
fn raw_export(ids: &[Entity], rows: &[Row]) -> Connection {
    let db = Connection::open_in_memory().unwrap();
    let tx = db.unchecked_transaction().unwrap();
    tx.execute_batch(
        "CREATE TABLE entities (id INTEGER PRIMARY KEY NOT NULL, slot INTEGER NOT NULL, \
             generation INTEGER NOT NULL, archetype INTEGER NOT NULL, position INTEGER NOT NULL);
         CREATE TABLE Transform (entity INTEGER PRIMARY KEY NOT NULL REFERENCES entities (id), \
             _0 TEXT, _1 TEXT, _2 TEXT, _3 TEXT);
         CREATE TABLE Position (entity INTEGER PRIMARY KEY NOT NULL REFERENCES entities (id), _0 REAL, _1 REAL, _2 REAL);
         CREATE TABLE Rotation (entity INTEGER PRIMARY KEY NOT NULL REFERENCES entities (id), _0 REAL, _1 REAL, _2 REAL);
         CREATE TABLE Velocity (entity INTEGER PRIMARY KEY NOT NULL REFERENCES entities (id), _0 REAL, _1 REAL, _2 REAL);",
    )
    .unwrap();
    {
        let mut entities = tx
            .prepare("INSERT INTO entities VALUES (?1, ?2, ?3, 1, ?4)")
            .unwrap();
        for (position, e) in ids.iter().enumerate() {
            entities
                .execute(params![
                    e.to_bits() as i64,
                    e.index(),
                    e.generation(),
                    position as i64
                ])
                .unwrap();
        }
        let mut transform = tx
            .prepare("INSERT INTO Transform VALUES (?1, ?2, ?3, ?4, ?5)")
            .unwrap();
        for (e, (t, ..)) in ids.iter().zip(rows) {
            let json = |line: &[f32; 4]| serde_json::to_string(line).unwrap();
            transform
                .execute(params![
                    e.to_bits() as i64,
                    json(&t.0[0]),
                    json(&t.0[1]),
                    json(&t.0[2]),
                    json(&t.0[3])
                ])
                .unwrap();
        }
        for (k, table) in TRIPLES.iter().enumerate() {
            let mut insert = tx
                .prepare(&format!("INSERT INTO {table} VALUES (?1, ?2, ?3, ?4)"))
                .unwrap();
            for (e, (_, p, r, v)) in ids.iter().zip(rows) {
                let Position(a, b, c) = match k {
                    0 => *p,
                    1 => Position(r.0, r.1, r.2),
                    _ => Position(v.0, v.1, v.2),
                };
                insert.execute(params![e.to_bits() as i64, a, b, c]).unwrap();
            }
        }
    }
    tx.commit().unwrap();
    db
}

/// The baseline's import: every row back into a `Vec`, joined on the entity.
fn raw_import(db: &Connection) -> Vec<(u64, Row)> {
    let mut statement = db
        .prepare(
            "SELECT e.id, t._0, t._1, t._2, t._3, p._0, p._1, p._2, r._0, r._1, r._2, v._0, v._1, v._2 \
             FROM entities e JOIN Transform t ON t.entity = e.id JOIN Position p ON p.entity = e.id \
             JOIN Rotation r ON r.entity = e.id JOIN Velocity v ON v.entity = e.id ORDER BY e.position",
        )
        .unwrap();
    let rows = statement
        .query_map([], |r| {
            let line =
                |i: usize| -> [f32; 4] { serde_json::from_str(&r.get::<_, String>(i).unwrap()).unwrap() };
            let f = |i: usize| r.get::<_, f64>(i).unwrap() as f32;
            Ok((
                r.get::<_, i64>(0)? as u64,
                (
                    Transform([line(1), line(2), line(3), line(4)]),
                    Position(f(5), f(6), f(7)),
                    Rotation(f(8), f(9), f(10)),
                    Velocity(f(11), f(12), f(13)),
                ),
            ))
        })
        .unwrap();
    rows.collect::<Result<_, _>>().unwrap()
}

fn sqlite_export(c: &mut Criterion) {
    const N: usize = 100_000;
    let mut world = registered();
    let ids: Vec<Entity> = world.spawn_batch((0..N).map(row)).collect();
    let rows: Vec<Row> = (0..N).map(row).collect();
    let exported = export(&world);
    let raw = raw_export(&ids, &rows);
    assert_eq!(raw_import(&raw).len(), N);
    assert_eq!(import(&exported).len() as usize, N);

    let mut group = c.benchmark_group("sqlite_export");
    group.throughput(Throughput::Elements(N as u64));
    group.sample_size(10);
    group.bench_function(BenchmarkId::new("export", "tabula"), |b| {
        b.iter(|| black_box(export(black_box(&world))));
    });
    group.bench_function(BenchmarkId::new("export", "raw"), |b| {
        b.iter(|| black_box(raw_export(black_box(&ids), black_box(&rows))));
    });
    group.bench_function(BenchmarkId::new("import", "tabula"), |b| {
        b.iter_batched(
            || (),
            |()| black_box(import(black_box(&exported))),
            BatchSize::PerIteration,
        );
    });
    group.bench_function(BenchmarkId::new("import", "raw"), |b| {
        b.iter(|| black_box(raw_import(black_box(&raw))));
    });
    group.finish();
}

criterion_group!(benches, sqlite_export);
criterion_main!(benches);
