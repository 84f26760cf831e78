//! The relational export: a world as SQL tables (entities, components, one table per
//! component type with a column per field), queried with SQL, read back into a fresh world
//! with the same ids, and a hostile database refused with an error naming what is wrong
//! while the world stays unchanged.
// SQLite is C, reached through FFI, which Miri cannot run; and it is built only with the
// `sqlite` feature (`cargo test --workspace` turns it on; see tabula-core's Cargo.toml).
#![cfg(all(feature = "sqlite", not(miri)))]

use serde::{Deserialize, Serialize};
use tabula::rusqlite::Connection;
use tabula::{Entity, SqliteError, World};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Ship {
    name: String,
    class: Class,
}
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
enum Class {
    Frigate,
    Carrier { hangars: u8 },
}
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Health(u32);
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Position(f32, f32);
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Player;
/// Every shape of field: flat scalars, options, nested values as JSON, an entity.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Cargo {
    full: bool,
    mass: f64,
    big: u64,
    tag: Option<char>,
    note: Option<String>,
    items: Vec<String>,
    at: Position,
    owner: Entity,
    neg: i8,
}

fn registered() -> World {
    let mut world = World::new();
    world.register_serde::<Ship>("Ship");
    world.register_serde::<Health>("Health");
    world.register_serde::<Position>("Position");
    world.register_serde::<Player>("Player");
    world.register_serde::<Cargo>("Cargo");
    world
}

/// A small fleet; returns the world and its ships' ids.
fn fleet() -> (World, Vec<Entity>) {
    let mut world = registered();
    let mut ships = Vec::new();
    for (i, hp) in [3, 40, 9, 10, 0].into_iter().enumerate() {
        let class = if i % 2 == 0 {
            Class::Frigate
        } else {
            Class::Carrier { hangars: i as u8 }
        };
        let ship = Ship {
            name: format!("ship {i}"),
            class,
        };
        ships.push(world.spawn((ship, Health(hp), Position(i as f32, -1.5))));
    }
    world.spawn((Health(1),)); // a rock: low health, not a ship
    let doomed = world.spawn((Health(2),));
    world.despawn(doomed).unwrap(); // a free slot with a generation moved on
    world.insert_one(ships[0], Player).unwrap();
    let cargo = Cargo {
        full: true,
        mass: 1.25,
        big: u64::MAX - 1,
        tag: Some('x'),
        note: None,
        items: vec!["ore".into(), "ice".into()],
        at: Position(7.0, 8.0),
        owner: ships[1],
        neg: -3,
    };
    world.insert_one(ships[1], cargo).unwrap();
    (world, ships)
}

fn exported(world: &World) -> Connection {
    let db = Connection::open_in_memory().unwrap();
    world.export_sqlite(&db).unwrap();
    db
}

fn query<T: tabula::rusqlite::types::FromSql>(db: &Connection, sql: &str) -> Vec<T> {
    let mut statement = db.prepare(sql).unwrap();
    statement
        .query_map([], |row| row.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

#[test]
fn which_ships_have_less_than_10_health() {
    let (world, ships) = fleet();
    let db = exported(&world);
    let weak: Vec<i64> = query(
        &db,
        "SELECT Ship.entity FROM Ship JOIN Health ON Health.entity = Ship.entity \
         WHERE Health.value < 10 ORDER BY Health.value",
    );
    let expected: Vec<i64> = [ships[4], ships[0], ships[2]]
        .iter()
        .map(|e| e.to_bits() as i64)
        .collect();
    assert_eq!(weak, expected);
    let names: Vec<String> = query(
        &db,
        "SELECT name FROM Ship JOIN Health USING (entity) WHERE Health.value < 10 ORDER BY name",
    );
    assert_eq!(names, ["ship 0", "ship 2", "ship 4"]);
}

#[test]
fn the_tables_follow_the_layout() {
    let (world, ships) = fleet();
    let db = exported(&world);
    let components: Vec<String> = query(
        &db,
        "SELECT name || '=' || table_name FROM components ORDER BY name",
    );
    assert_eq!(
        components,
        [
            "Cargo=Cargo",
            "Health=Health",
            "Player=Player",
            "Position=Position",
            "Ship=Ship"
        ]
    );
    let count: Vec<i64> = query(&db, "SELECT count(*) FROM entities");
    assert_eq!(count, [world.len() as i64]);
    let row: Vec<String> = query(
        &db,
        &format!(
            "SELECT slot || ' ' || generation FROM entities WHERE id = {}",
            ships[2].to_bits() as i64
        ),
    );
    assert_eq!(row, [format!("{} {}", ships[2].index(), ships[2].generation())]);
    // Columns: named fields, tuple fields, a unit variant as its name, data as JSON.
    let xs: Vec<f64> = query(&db, "SELECT _0 FROM Position ORDER BY _0");
    assert_eq!(xs, [0.0, 1.0, 2.0, 3.0, 4.0]);
    let classes: Vec<String> = query(&db, "SELECT class FROM Ship ORDER BY name LIMIT 2");
    assert_eq!(classes, ["Frigate", r#"{"Carrier":{"hangars":1}}"#]);
    let players: Vec<i64> = query(&db, "SELECT entity FROM Player");
    assert_eq!(players, [ships[0].to_bits() as i64]);
    let cargo: Vec<String> = query(
        &db,
        "SELECT full || '|' || mass || '|' || tag || '|' || typeof(note) || '|' || items || '|' || at || '|' || neg FROM Cargo",
    );
    assert_eq!(cargo, [r#"1|1.25|x|null|["ore","ice"]|[7.0,8.0]|-3"#]);
    let types: Vec<String> = query(&db, "SELECT name || ':' || type FROM pragma_table_info('Cargo')");
    assert_eq!(
        types,
        [
            "entity:INTEGER",
            "full:INTEGER",
            "mass:REAL",
            "big:INTEGER",
            "tag:TEXT",
            "note:",
            "items:TEXT",
            "at:TEXT",
            "owner:INTEGER",
            "neg:INTEGER"
        ]
    );
}

/// Every entity's components, through the typed API, for comparisons.
fn contents(world: &World, ids: &[Entity]) -> Vec<String> {
    ids.iter()
        .map(|&e| {
            format!(
                "{e}: {:?} {:?} {:?} {} {:?}",
                world.get::<Ship>(e).ok(),
                world.get::<Health>(e).ok(),
                world.get::<Position>(e).ok(),
                world.has::<Player>(e),
                world.get::<Cargo>(e).ok()
            )
        })
        .collect()
}

#[test]
fn an_import_restores_the_world_and_its_ids() {
    let (mut world, ships) = fleet();
    let db = exported(&world);
    let mut loaded = registered();
    loaded.import_sqlite(&db).unwrap();
    assert_eq!(loaded.len(), world.len());
    let all: Vec<Entity> = world.archetypes().flat_map(|a| a.entities().to_vec()).collect();
    let loaded_all: Vec<Entity> = loaded.archetypes().flat_map(|a| a.entities().to_vec()).collect();
    assert_eq!(all, loaded_all, "the same ids, archetypes and row order");
    assert_eq!(contents(&loaded, &all), contents(&world, &all));
    assert_eq!(loaded.get::<Cargo>(ships[1]).unwrap().big, u64::MAX - 1);
    // The allocator too: the next ids are those the exported world would give.
    for _ in 0..3 {
        assert_eq!(loaded.spawn(()), world.spawn(()));
    }
}

#[test]
fn an_edited_database_imports_its_edits() {
    let (world, ships) = fleet();
    let db = exported(&world);
    db.execute("UPDATE Health SET value = value + 100 WHERE value < 10", [])
        .unwrap();
    db.execute(
        "UPDATE Ship SET class = 'Frigate', name = 'renamed' WHERE entity = ?1",
        [ships[1].to_bits() as i64],
    )
    .unwrap();
    let mut loaded = registered();
    loaded.import_sqlite(&db).unwrap();
    assert_eq!(loaded.get::<Health>(ships[0]), Ok(&Health(103)));
    assert_eq!(loaded.get::<Health>(ships[1]), Ok(&Health(40)));
    let ship = loaded.get::<Ship>(ships[1]).unwrap();
    assert_eq!((ship.name.as_str(), &ship.class), ("renamed", &Class::Frigate));
}

#[test]
fn a_remapped_import_keeps_the_worlds_own_entities() {
    let (world, ships) = fleet();
    let db = exported(&world);
    let mut other = registered();
    let mine = other.spawn((Health(999),));
    let map = other.import_sqlite_remapped(&db).unwrap();
    assert_eq!(other.get::<Health>(mine), Ok(&Health(999)));
    assert_eq!(other.get::<Health>(map[&ships[3]]), Ok(&Health(10)));
    assert_eq!(other.len(), world.len() + 1);
}

#[test]
fn name_clashes_get_their_own_tables() {
    #[derive(Serialize, Deserialize)]
    struct A(u8);
    #[derive(Serialize, Deserialize)]
    struct B(u8);
    #[derive(Serialize, Deserialize)]
    struct C(u8);
    let mut world = World::new();
    world.register_serde::<A>("entities");
    world.register_serde::<B>("Entities2");
    world.register_serde::<C>("ENTITIES2");
    let e = world.spawn((A(1), B(2), C(3)));
    let db = exported(&world);
    let tables: Vec<String> = query(
        &db,
        "SELECT name || '=' || table_name FROM components ORDER BY name",
    );
    assert_eq!(
        tables,
        [
            "ENTITIES2=c1_ENTITIES2",
            "Entities2=Entities2",
            "entities=c1_entities"
        ]
    );
    let mut loaded = World::new();
    loaded.register_serde::<A>("entities");
    loaded.register_serde::<B>("Entities2");
    loaded.register_serde::<C>("ENTITIES2");
    loaded.import_sqlite(&db).unwrap();
    assert_eq!(loaded.get::<C>(e).map(|c| c.0), Ok(3));
}

#[test]
fn an_export_refuses_an_unsaveable_world_and_writes_nothing() {
    struct Scratch;
    let (mut world, _) = fleet();
    world.spawn((Scratch,));
    let db = Connection::open_in_memory().unwrap();
    let error = world.export_sqlite(&db).unwrap_err();
    assert!(matches!(error, SqliteError::Save(_)), "{error:?}");
    assert!(error.to_string().contains("Scratch"), "{error}");
    let tables: Vec<String> = query(&db, "SELECT name FROM sqlite_schema");
    assert!(tables.is_empty(), "{tables:?}");
    // Into a database that has the tables already: an error, and the database as it was.
    let (world, _) = fleet();
    let db = exported(&world);
    let error = world.export_sqlite(&db).unwrap_err();
    assert!(matches!(error, SqliteError::Sql { .. }), "{error:?}");
    let count: Vec<i64> = query(&db, "SELECT count(*) FROM entities");
    assert_eq!(count, [world.len() as i64]);
}

/// Corrupts a fresh export with `sql`, imports it into a registered world holding nothing,
/// and returns the error; checks that the world is unchanged.
fn hostile(sql: &str) -> SqliteError {
    let (world, _) = fleet();
    let db = exported(&world);
    // A hostile file keeps no constraint: the bundled SQLite enforces foreign keys.
    db.execute_batch("PRAGMA foreign_keys = OFF").unwrap();
    db.execute_batch(sql).unwrap();
    let mut target = registered();
    let Err(error) = target.import_sqlite(&db) else {
        panic!("{sql}: imported")
    };
    assert_eq!(target.len(), 0, "{sql}: the world is unchanged");
    assert_eq!(target.archetypes().len(), 1, "{sql}: no archetype created");
    error
}

#[test]
fn a_hostile_database_is_refused_naming_what_is_wrong() {
    let cases: &[(&str, &str)] = &[
        ("DROP TABLE Health", "Health"),
        ("DROP TABLE entities", "table entities is missing"),
        ("ALTER TABLE Ship DROP COLUMN name", "name"),
        ("UPDATE Health SET value = 'lots' WHERE value = 40", "lots"),
        ("UPDATE Position SET _0 = NULL WHERE _0 = 1.0", "Position"),
        (
            "INSERT INTO components VALUES ('Shield', 'Shield')",
            "\"Shield\" (table Shield) is not registered",
        ),
        (
            "UPDATE components SET name = 'Hull' WHERE name = 'Health'",
            "\"Hull\"",
        ),
        ("DELETE FROM Health WHERE value = 40", "no row in table Health"),
        (
            "DELETE FROM entities WHERE id = (SELECT entity FROM Player)",
            "not in entities",
        ),
        (
            "UPDATE entities SET archetype = 99 WHERE id = (SELECT min(id) FROM entities)",
            "archetype 99",
        ),
        (
            "UPDATE entities SET slot = slot + 1 WHERE id = (SELECT min(id) FROM entities)",
            "disagree",
        ),
        (
            "UPDATE entities SET archetype = 'x' WHERE id = (SELECT min(id) FROM entities)",
            "column archetype: not an integer",
        ),
        ("DELETE FROM tabula_world", "tabula_world"),
        ("UPDATE tabula_world SET meta = '{'", "not JSON"),
    ];
    for (sql, needle) in cases {
        let error = hostile(sql);
        assert!(error.to_string().contains(needle), "{sql}: {error}");
    }
}

#[test]
fn duplicate_entity_ids_are_refused() {
    // A hostile file need not keep the primary keys: rebuild the tables without them.
    let twice = "CREATE TABLE e2 AS SELECT * FROM entities; DROP TABLE entities; \
                 ALTER TABLE e2 RENAME TO entities; INSERT INTO entities SELECT * FROM entities LIMIT 1";
    let error = hostile(twice);
    assert!(error.to_string().contains("appears twice"), "{error}");
    let twice = "CREATE TABLE h2 AS SELECT * FROM Health; DROP TABLE Health; \
                 ALTER TABLE h2 RENAME TO Health; INSERT INTO Health SELECT * FROM Health LIMIT 1";
    let error = hostile(twice);
    assert!(error.to_string().contains("two rows"), "{error}");
}

#[test]
fn ids_of_a_world_with_a_high_tag_and_an_empty_world_round_trip() {
    // A tag of 128 or more sets the top bit: the ids are negative integers in SQL.
    let mut world = World::with_tag(200);
    world.register_serde::<Cargo>("Cargo");
    world.register_serde::<Health>("Health");
    let a = world.spawn((Health(1),));
    let cargo = Cargo {
        full: false,
        mass: -0.5,
        big: 0,
        tag: None,
        note: Some("fragile".into()),
        items: Vec::new(),
        at: Position(0.0, 0.0),
        owner: a,
        neg: i8::MIN,
    };
    let b = world.spawn((cargo.clone(),));
    let db = exported(&world);
    let ids: Vec<i64> = query(&db, "SELECT id FROM entities ORDER BY position, archetype");
    assert!(ids.iter().all(|&id| id < 0), "{ids:?}");
    let mut loaded = World::new();
    loaded.register_serde::<Cargo>("Cargo");
    loaded.register_serde::<Health>("Health");
    loaded.import_sqlite(&db).unwrap();
    assert_eq!(loaded.tag(), 200);
    assert_eq!(loaded.get::<Health>(a), Ok(&Health(1)));
    assert_eq!(loaded.get::<Cargo>(b), Ok(&cargo));

    let mut empty = registered();
    let db = exported(&empty);
    let tables: Vec<i64> = query(&db, "SELECT count(*) FROM sqlite_schema WHERE type = 'table'");
    assert_eq!(
        tables,
        [3 + 5],
        "the fixed tables and one per registered component"
    );
    let mut loaded = registered();
    loaded.import_sqlite(&db).unwrap();
    assert_eq!(loaded.len(), 0);
    assert_eq!(
        loaded.spawn(()),
        empty.spawn(()),
        "the tag and the allocator of the export"
    );
}

/// A sparse-set component: a table like any other, and its set's dense order restored.
#[test]
fn sparse_components_export_and_import() {
    #[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
    struct Shield(u32);
    let sparse = || {
        let mut world = World::new();
        world.register_component::<Shield>().sparse_set();
        world.register_serde::<Shield>("Shield");
        world.register_serde::<Health>("Health");
        world
    };
    let mut world = sparse();
    let ids: Vec<Entity> = (0..5).map(|i| world.spawn((Health(i),))).collect();
    for (i, &e) in ids.iter().enumerate() {
        world.insert_one(e, Shield(10 * i as u32)).unwrap();
    }
    world.remove::<(Shield,)>(ids[1]).unwrap(); // the last holder moves into its place
    let db = exported(&world);
    let strong: Vec<i64> = query(&db, "SELECT entity FROM Shield WHERE value >= 20 ORDER BY value");
    assert_eq!(strong, [ids[2], ids[3], ids[4]].map(|e| e.to_bits() as i64));

    let mut loaded = sparse();
    loaded.import_sqlite(&db).unwrap();
    for &e in &ids {
        assert_eq!(loaded.get::<Shield>(e).ok(), world.get::<Shield>(e).ok(), "{e}");
    }
    // The dense order (what a save lists), by the holders a save of each world lists.
    let holders = |w: &World| {
        let save: serde_json::Value = serde_json::to_value(w.snapshot().unwrap()).unwrap();
        save["sparse"][0]["entities"].clone()
    };
    assert_eq!(holders(&loaded), holders(&world));

    // A holder without its row is refused, naming both.
    db.execute("DELETE FROM Shield WHERE entity = ?1", [ids[4].to_bits() as i64])
        .unwrap();
    let mut refused = sparse();
    let error = refused.import_sqlite(&db).unwrap_err().to_string();
    assert!(
        error.contains(&format!("entity {} holds sparse component \"Shield\"", ids[4])),
        "{error}"
    );
    assert!(refused.is_empty());
}

/// A dynamic component saved as bytes (`register_serde_bytes`): a `BLOB` column `value`.
#[test]
fn dynamic_components_export_as_blobs_and_import() {
    use std::alloc::Layout;
    use tabula::{ComponentDescriptor, OwningPtr};
    let registered = || {
        let mut world = World::new();
        // SAFETY: plain bytes, no drop.
        let hp = world
            .register_component_with_descriptor(unsafe {
                ComponentDescriptor::new("Hp", Layout::new::<u32>(), None)
            })
            .unwrap();
        // SAFETY: `Hp` values are `u32`s: no padding, any 4 bytes a value.
        unsafe { world.register_serde_bytes(hp, "Hp") };
        (world, hp)
    };
    let (mut world, hp) = registered();
    let e = world.spawn(());
    // SAFETY: a `u32`, of `hp`'s layout.
    OwningPtr::make(0x0102_0304u32, |value| unsafe {
        world.insert_by_id(e, hp, value)
    })
    .unwrap();
    let db = exported(&world);
    let blobs: Vec<Vec<u8>> = query(&db, "SELECT value FROM Hp");
    assert_eq!(blobs, [0x0102_0304u32.to_ne_bytes().to_vec()]);

    let (mut loaded, hp) = registered();
    loaded.import_sqlite(&db).unwrap();
    let ptr = loaded.get_by_id(e, hp).unwrap();
    // SAFETY: `hp` holds `u32`s.
    let value = unsafe { *ptr.deref::<u32>() };
    assert_eq!(value, 0x0102_0304);

    db.execute("UPDATE Hp SET value = x'0102'", []).unwrap();
    let (mut refused, _) = registered();
    let error = refused.import_sqlite(&db).unwrap_err().to_string();
    assert!(error.contains("expected 4 bytes"), "{error}");
    assert!(refused.is_empty());
}
