//! Relational export (the `sqlite` feature): a world as SQL tables, after Adam Martin's
//! layout, so that a save can be queried ("which ships have less than 10 health?").
//!
//! The table layout and the column mapping are documented on `World::export_sqlite`.

use std::collections::HashMap;
use std::fmt;

use rusqlite::types::Value as SqlValue;
use rusqlite::{Connection, OptionalExtension};
use serde::de::value::{SeqDeserializer, StrDeserializer};
use serde::de::{self, DeserializeSeed, Deserializer, IntoDeserializer, MapAccess, SeqAccess, Visitor};
use serde::forward_to_deserialize_any;
use serde::ser::{self, Serialize, Serializer};
use serde_json::Value as Json;

use super::{LoadError, SaveError};
use crate::component::ComponentId;
use crate::entity::Entity;
use crate::world::World;

/// Why a world could not be exported to, or imported from, a database. An import leaves
/// the world unchanged.
#[derive(Debug)]
#[non_exhaustive]
pub enum SqliteError {
    /// The world cannot be saved: a component not registered for serde, reserved ids.
    Save(SaveError),
    /// The database's content, once read, is not a world this one can load (as
    /// [`World::load`] reports it): an id twice, a generation from the future, a value of
    /// the wrong type, ...
    Load(LoadError),
    /// SQLite refused a statement (a table that already exists on export, a file that is
    /// not a database, ...).
    Sql {
        /// What was being done.
        doing: String,
        /// SQLite's error.
        error: rusqlite::Error,
    },
    /// The save's fields other than the rows (a resource's value) could not be serialised.
    Meta(String),
    /// A component value could not be flattened into columns.
    Value {
        /// The component's registered name.
        component: &'static str,
        /// The entity holding it.
        entity: Entity,
        /// What is wrong.
        message: String,
    },
    /// The database is not an export of a world: a missing table or column, an unknown
    /// component name, a value of the wrong SQL type where an id belongs, an entity twice, a
    /// component row for an entity that does not have the component, ...
    Invalid(String),
}

impl fmt::Display for SqliteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Save(error) => write!(f, "cannot export: {error}"),
            Self::Load(error) => write!(f, "cannot import: {error}"),
            Self::Sql { doing, error } => write!(f, "sqlite error while {doing}: {error}"),
            Self::Value {
                component,
                entity,
                message,
            } => write!(
                f,
                "cannot export component {component} of entity {entity}: {message}"
            ),
            Self::Meta(message) => write!(f, "cannot export: {message}"),
            Self::Invalid(message) => write!(f, "cannot import: not a world export: {message}"),
        }
    }
}

impl std::error::Error for SqliteError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Save(error) => Some(error),
            Self::Load(error) => Some(error),
            Self::Sql { error, .. } => Some(error),
            Self::Meta(_) | Self::Value { .. } | Self::Invalid(_) => None,
        }
    }
}

/// `error` while `doing`.
fn sql(doing: impl fmt::Display) -> impl FnOnce(rusqlite::Error) -> SqliteError {
    move |error| SqliteError::Sql {
        doing: doing.to_string(),
        error,
    }
}

fn invalid(message: impl Into<String>) -> SqliteError {
    SqliteError::Invalid(message.into())
}

/// An SQL identifier, quoted.
fn quote(identifier: &str) -> String {
    format!("\"{}\"", identifier.replace('"', "\"\""))
}

/// The tables every export has.
const FIXED_TABLES: [&str; 3] = ["entities", "components", "tabula_world"];

/// A table name for component `name` that no other table has (SQLite compares names
/// without case).
fn table_name(name: &str, taken: &[String]) -> String {
    let clashes = |candidate: &str| {
        candidate.len() >= 7 && candidate[..7].eq_ignore_ascii_case("sqlite_")
            || FIXED_TABLES.iter().any(|t| t.eq_ignore_ascii_case(candidate))
            || taken.iter().any(|t| t.eq_ignore_ascii_case(candidate))
    };
    if !clashes(name) {
        return name.to_owned();
    }
    (1..)
        .map(|n| format!("c{n}_{name}"))
        .find(|candidate| !clashes(candidate))
        .expect("a free name")
}

impl World {
    /// Writes the world into `connection` as SQL tables, in one transaction: an `entities`
    /// table, a `components` table, and one table per component type registered for save
    /// and load, with an `entity` column and one column per field (the layout and the
    /// mapping of values to columns are below). The database must not have these tables
    /// yet.
    ///
    /// ```
    /// use serde::{Deserialize, Serialize};
    /// use tabula::World;
    /// use tabula::rusqlite::Connection;
    /// # // SQLite is C, reached through FFI, which Miri cannot run.
    /// # #[cfg(not(miri))] {
    ///
    /// #[derive(Serialize, Deserialize)]
    /// struct Ship { name: String }
    /// #[derive(Serialize, Deserialize)]
    /// struct Health(u32);
    ///
    /// let mut world = World::new();
    /// world.register_serde::<Ship>("Ship");
    /// world.register_serde::<Health>("Health");
    /// world.spawn((Ship { name: "Nostromo".into() }, Health(3)));
    /// world.spawn((Ship { name: "Sulaco".into() }, Health(80)));
    /// world.spawn((Health(5),)); // not a ship
    ///
    /// let db = Connection::open_in_memory()?;
    /// world.export_sqlite(&db)?;
    /// let weak: Vec<String> = db
    ///     .prepare("SELECT name FROM Ship JOIN Health USING (entity) WHERE Health.value < 10")?
    ///     .query_map([], |row| row.get(0))?
    ///     .collect::<Result<_, _>>()?;
    /// assert_eq!(weak, ["Nostromo"]);
    /// # }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Tables
    ///
    /// * `entities (id, slot, generation, archetype, position)`: one row per entity — its 64
    ///   bits ([`Entity::to_bits`], as a signed integer), its slot index and generation, and
    ///   the archetype (by creation order) and row it is stored in.
    /// * `components (name, table_name)`: one row per component type registered for save and
    ///   load ([`World::register_serde`]): its stable name and the table holding its values.
    /// * One table per registered component type, named as the component (unless that name is
    ///   taken by the tables above, by another component differing only in case, or starts
    ///   with `sqlite_`: then a suffix is added — `components` says which), with an `entity`
    ///   column (the entity's `id`) and one column per field. A sparse-set component's table
    ///   is the same (a row per holder).
    /// * `tabula_world (meta)`: one row, the rest of a save as JSON — the world tag, the change
    ///   clock, the entity allocator's whole state (free list, retired slots, lanes), each
    ///   archetype's component names, each sparse set's holders in dense order, the
    ///   resources — so that an import restores ids, the allocator and the sets' order
    ///   exactly.
    ///
    /// # Columns
    ///
    /// A component's value goes through its serde functions and is flattened:
    ///
    /// | the value is                          | columns                                  |
    /// |---------------------------------------|------------------------------------------|
    /// | a struct with named fields            | one per field, named as the field        |
    /// | a tuple struct or tuple               | one per field: `_0`, `_1`, ...           |
    /// | a newtype struct `T(x)`               | as `x` would be                          |
    /// | a unit struct (a marker)              | none (a row per entity that has it)      |
    /// | anything else (a number, an enum ...) | one, `value`                             |
    ///
    /// and each field becomes one SQL value: integers and `bool` (0 or 1) are `INTEGER` (a
    /// `u64` above `i64::MAX`, such as the bits of an entity from a world with a tag of 128 or
    /// more, wraps to a negative number and comes back whole; an `i128`/`u128` beyond 64 bits
    /// is text), floats `REAL` (SQLite stores NaN as NULL, which does not load back into a
    /// float), strings and chars `TEXT`, byte strings (`serde_bytes`) `BLOB`, `None` and `()`
    /// NULL, `Some(x)` as `x`, an enum's unit variant `TEXT` (its name), and everything nested —
    /// a struct, a sequence, a map, an enum variant with data — `TEXT` holding JSON. A
    /// column's declared type is that of the first row's value. Ticks are not exported: an
    /// imported value counts as changed at the saved world's last change tick.
    ///
    /// # Errors
    /// [`SqliteError::Save`] when the world cannot be saved (as
    /// [`snapshot`](Self::snapshot)), [`SqliteError::Value`] for a value that cannot be
    /// flattened (a row whose fields differ from the first row's), [`SqliteError::Sql`] when
    /// SQLite refuses (the tables exist already). Nothing is written then.
    pub fn export_sqlite(&self, connection: &Connection) -> Result<(), SqliteError> {
        let meta = self.sqlite_meta()?;
        let transaction = (connection.unchecked_transaction()).map_err(sql("starting a transaction"))?;
        transaction
            .execute_batch(
                "CREATE TABLE entities (id INTEGER PRIMARY KEY NOT NULL, slot INTEGER NOT NULL, \
                     generation INTEGER NOT NULL, archetype INTEGER NOT NULL, position INTEGER NOT NULL);
                 CREATE TABLE components (name TEXT PRIMARY KEY NOT NULL, table_name TEXT NOT NULL UNIQUE);
                 CREATE TABLE tabula_world (meta TEXT NOT NULL);",
            )
            .map_err(sql("creating the entities, components and tabula_world tables"))?;
        transaction
            .execute("INSERT INTO tabula_world (meta) VALUES (?1)", [meta.to_string()])
            .map_err(sql("writing tabula_world"))?;

        let mut insert = (transaction.prepare(
            "INSERT INTO entities (id, slot, generation, archetype, position) VALUES (?1, ?2, ?3, ?4, ?5)",
        ))
        .map_err(sql("preparing the entities insert"))?;
        for (a, archetype) in self.archetypes().enumerate() {
            for (position, entity) in archetype.entities().iter().enumerate() {
                let row = (
                    entity.to_bits() as i64,
                    entity.index(),
                    entity.generation(),
                    a as i64,
                    position as i64,
                );
                insert.execute(row).map_err(sql("writing entities"))?;
            }
        }
        drop(insert);

        let mut tables: Vec<String> = Vec::new();
        for info in self.components().iter() {
            let Some(entry) = self.serde.get(info.id()) else {
                continue;
            };
            let table = table_name(entry.name, &tables);
            transaction
                .execute(
                    "INSERT INTO components (name, table_name) VALUES (?1, ?2)",
                    [entry.name, &table],
                )
                .map_err(sql("writing components"))?;
            self.export_component(&transaction, info.id(), entry.name, &table)?;
            tables.push(table);
        }
        transaction.commit().map_err(sql("committing"))
    }

    /// The save without its rows, as JSON, with each archetype's component names.
    fn sqlite_meta(&self) -> Result<Json, SqliteError> {
        let snapshot = self.snapshot().map_err(SqliteError::Save)?;
        let mut meta = (snapshot.serialize(MetaSerializer)).map_err(|e| SqliteError::Meta(e.to_string()))?;
        let archetypes: Vec<Vec<&str>> = (self.archetypes())
            .map(|archetype| {
                (archetype.component_ids().iter())
                    .map(|&id| self.serde.get(id).expect("checked by snapshot").name)
                    .collect()
            })
            .collect();
        meta.insert("archetypes".to_owned(), Json::from(archetypes));
        // Each sparse set's holders in dense order (the values go to the component's table).
        let sparse: Vec<Json> = (self.sparse.iter())
            .filter(|(_, set)| !set.entities().is_empty())
            .map(|(id, set)| {
                let name = self.serde.get(id).expect("checked by snapshot").name;
                let holders: Vec<u64> = set.entities().iter().map(|e| e.to_bits()).collect();
                Json::from(vec![Json::from(name), Json::from(holders)])
            })
            .collect();
        meta.insert("sparse".to_owned(), Json::from(sparse));
        Ok(Json::Object(meta))
    }

    /// Creates `table` and writes a row per entity holding component `id`.
    fn export_component(
        &self,
        transaction: &rusqlite::Transaction<'_>,
        id: ComponentId,
        name: &'static str,
        table: &str,
    ) -> Result<(), SqliteError> {
        let entry = *self.serde.get(id).expect("a registered component");
        let mut schema: Option<Vec<Name>> = None;
        let mut insert = None;
        let mut row: Vec<(Name, SqlValue)> = Vec::new();
        let mut params: Vec<SqlValue> = Vec::new();
        let holders: Vec<Entity> = match self.sparse.get(id) {
            Some(set) => set.entities().to_vec(),
            None => (self.archetypes())
                .filter(|a| a.component_ids().contains(&id))
                .flat_map(|a| a.entities().iter().copied())
                .collect(),
        };
        {
            for entity in holders {
                let value_error = |message: String| SqliteError::Value {
                    component: name,
                    entity,
                    message,
                };
                let ptr = self
                    .get_by_id(entity, id)
                    .map_err(|e| value_error(e.to_string()))?;
                // SAFETY: `entry` is component `id`'s, so its function was made for the
                // type `ptr` points at; `&self` keeps the value unwritten meanwhile.
                let value = unsafe { (entry.serialize)(ptr, entry.size) };
                row.clear();
                flatten(&value, &mut row).map_err(|e| value_error(e.0))?;
                let names = schema.get_or_insert_with(|| row.iter().map(|(n, _)| n.clone()).collect());
                if names.len() != row.len() || names.iter().zip(&row).any(|(n, (m, _))| n != m) {
                    return Err(value_error(format!(
                        "its fields ({}) differ from the first row's ({}); a table has one set of columns",
                        join(row.iter().map(|(n, _)| n)),
                        join(names.iter())
                    )));
                }
                if insert.is_none() {
                    create_table(transaction, table, &row)?;
                    let columns: String = row
                        .iter()
                        .map(|(n, _)| format!(", {}", quote(&n.to_string())))
                        .collect();
                    let holes: String = (0..row.len()).map(|i| format!(", ?{}", i + 2)).collect();
                    let statement = format!(
                        "INSERT INTO {} (entity{columns}) VALUES (?1{holes})",
                        quote(table)
                    );
                    insert = Some(
                        (transaction.prepare(&statement)).map_err(sql(format!("preparing {statement}")))?,
                    );
                }
                params.clear();
                params.push(SqlValue::Integer(entity.to_bits() as i64));
                params.extend(row.drain(..).map(|(_, v)| v));
                let statement = insert.as_mut().expect("prepared");
                (statement.execute(rusqlite::params_from_iter(params.iter())))
                    .map_err(sql(format!("writing table {table}")))?;
            }
        }
        if insert.is_none() {
            // No entity has it: a table with the entity column alone.
            create_table(transaction, table, &[])?;
        }
        Ok(())
    }
}

fn join<'a>(names: impl Iterator<Item = &'a Name>) -> String {
    names.map(Name::to_string).collect::<Vec<_>>().join(", ")
}

fn create_table(
    transaction: &rusqlite::Transaction<'_>,
    table: &str,
    row: &[(Name, SqlValue)],
) -> Result<(), SqliteError> {
    let mut statement = format!(
        "CREATE TABLE {} (entity INTEGER PRIMARY KEY NOT NULL REFERENCES entities (id)",
        quote(table)
    );
    for (name, value) in row {
        let declared = match value {
            SqlValue::Null => "",
            SqlValue::Integer(_) => " INTEGER",
            SqlValue::Real(_) => " REAL",
            SqlValue::Text(_) => " TEXT",
            SqlValue::Blob(_) => " BLOB",
        };
        statement.push_str(&format!(", {}{declared}", quote(&name.to_string())));
    }
    statement.push(')');
    transaction
        .execute_batch(&statement)
        .map_err(sql(format!("creating table {table}")))
}

// ---------------------------------------------------------------------------------------
// Import.

/// One archetype as read from the database: its component names and, per component, the
/// rows (column names, values) in row order.
struct ArchetypeRows {
    names: Vec<String>,
    entities: Vec<u64>,
    /// Per component of `names`: the table, its value columns, and a row per entity.
    columns: Vec<(String, Vec<String>, Vec<Vec<SqlValue>>)>,
}

/// One sparse set as read from the database: its component, its holders in the saved
/// dense order, and the table, its value columns and a row per holder.
struct SparseRows {
    name: String,
    entities: Vec<u64>,
    table: String,
    columns: Vec<String>,
    rows: Vec<Vec<SqlValue>>,
}

/// What an import reads before it touches the world.
struct Read {
    meta: serde_json::Map<String, Json>,
    archetypes: Vec<ArchetypeRows>,
    sparse: Vec<SparseRows>,
    tick: u32,
}

impl World {
    /// Reads a world written by [`export_sqlite`](Self::export_sqlite) into this world,
    /// which must be empty (fresh from [`World::new`], its components registered for save
    /// and load under the names of the export): the same entities with the same ids, the
    /// allocator, the archetypes in creation order with their rows in order, the resources —
    /// everything [`load`](Self::load) restores but the ticks (each value counts as changed
    /// at the saved world's last change tick).
    ///
    /// The database is checked before the world is touched: a missing table or column, a
    /// component name not registered here, an id that is not an integer, an entity twice, a
    /// component row for an entity whose archetype lacks the component (or a missing one),
    /// a value of the wrong type, and everything [`load`](Self::load) checks are errors,
    /// and the world is left unchanged.
    ///
    /// ```
    /// use serde::{Deserialize, Serialize};
    /// use tabula::World;
    /// use tabula::rusqlite::Connection;
    /// # // SQLite is C, reached through FFI, which Miri cannot run.
    /// # #[cfg(not(miri))] {
    ///
    /// #[derive(Debug, PartialEq, Serialize, Deserialize)]
    /// struct Health(u32);
    ///
    /// let mut world = World::new();
    /// world.register_serde::<Health>("Health");
    /// let ship = world.spawn((Health(3),));
    /// let db = Connection::open_in_memory()?;
    /// world.export_sqlite(&db)?;
    /// db.execute("UPDATE Health SET value = 10 WHERE entity = ?1", [ship.to_bits() as i64])?;
    ///
    /// let mut loaded = World::new();
    /// loaded.register_serde::<Health>("Health");
    /// loaded.import_sqlite(&db)?;
    /// assert_eq!(loaded.get::<Health>(ship)?, &Health(10));
    /// assert_eq!(loaded.spawn(()), world.spawn(()), "the same next id");
    /// # }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`SqliteError::Invalid`] for a database that is not an export (naming the table,
    /// component or entity), [`SqliteError::Load`] for content no world can have or a value
    /// of the wrong type (as [`load`](Self::load) reports it), [`SqliteError::Sql`] when
    /// SQLite refuses a read.
    pub fn import_sqlite(&mut self, connection: &Connection) -> Result<(), SqliteError> {
        let read = self.read_sqlite(connection)?;
        self.load(SaveDe { read: &read }).map_err(SqliteError::Load)
    }

    /// Reads a world written by [`export_sqlite`](Self::export_sqlite) into this world,
    /// which may have entities of its own: the imported entities get new ids, and the
    /// `Entity` values inside components registered with
    /// [`register_serde_mapped`](Self::register_serde_mapped) are rewritten to them, as
    /// [`load_remapped`](Self::load_remapped) does. Returns the map from exported to new ids.
    ///
    /// ```
    /// use serde::{Deserialize, Serialize};
    /// use tabula::World;
    /// use tabula::rusqlite::Connection;
    /// # // SQLite is C, reached through FFI, which Miri cannot run.
    /// # #[cfg(not(miri))] {
    ///
    /// #[derive(Debug, PartialEq, Serialize, Deserialize)]
    /// struct Health(u32);
    ///
    /// let mut world = World::new();
    /// world.register_serde::<Health>("Health");
    /// let ship = world.spawn((Health(3),));
    /// let db = Connection::open_in_memory()?;
    /// world.export_sqlite(&db)?;
    ///
    /// let mut other = World::new();
    /// other.register_serde::<Health>("Health");
    /// let station = other.spawn((Health(900),));
    /// let map = other.import_sqlite_remapped(&db)?;
    /// assert_eq!(other.get::<Health>(map[&ship])?, &Health(3));
    /// assert_eq!(other.get::<Health>(station)?, &Health(900));
    /// # }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// As [`import_sqlite`](Self::import_sqlite) and [`load_remapped`](Self::load_remapped).
    pub fn import_sqlite_remapped(
        &mut self,
        connection: &Connection,
    ) -> Result<std::collections::HashMap<Entity, Entity>, SqliteError> {
        let read = self.read_sqlite(connection)?;
        self.load_remapped(SaveDe { read: &read })
            .map_err(SqliteError::Load)
    }

    /// Reads and checks the database, touching nothing.
    fn read_sqlite(&self, connection: &Connection) -> Result<Read, SqliteError> {
        // One read transaction: a consistent view if another connection writes meanwhile.
        let transaction = (connection.unchecked_transaction()).map_err(sql("starting a transaction"))?;
        for table in FIXED_TABLES {
            let exists: Option<i64> = transaction
                .query_row(
                    "SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = ?1",
                    [table],
                    |row| row.get(0),
                )
                .optional()
                .map_err(sql("reading the schema"))?;
            if exists.is_none() {
                return Err(invalid(format!("the table {table} is missing")));
            }
        }
        let meta: String = transaction
            .query_row("SELECT meta FROM tabula_world", [], |row| row.get(0))
            .map_err(|e| {
                invalid(format!(
                    "tabula_world must have one row holding the meta text: {e}"
                ))
            })?;
        let meta = match serde_json::from_str(&meta) {
            Ok(Json::Object(meta)) => meta,
            Ok(_) => return Err(invalid("tabula_world.meta is not a JSON object")),
            Err(e) => return Err(invalid(format!("tabula_world.meta is not JSON: {e}"))),
        };
        let names: Vec<Vec<String>> = (meta.get("archetypes").cloned())
            .and_then(|a| serde_json::from_value(a).ok())
            .ok_or_else(|| invalid("tabula_world.meta has no list of archetypes' component names"))?;
        let tick = (meta.get("last_change_tick").and_then(Json::as_u64)).map_or(0, |t| t as u32);

        // The component tables, by component name.
        let mut tables: HashMap<String, String> = HashMap::new();
        {
            let mut statement = (transaction.prepare("SELECT name, table_name FROM components"))
                .map_err(sql("reading components"))?;
            let rows = statement
                .query_map([], |row| Ok((row.get::<_, String>(0)?, row.get::<_, String>(1)?)))
                .map_err(sql("reading components"))?;
            for row in rows {
                let (name, table) = row.map_err(|e| invalid(format!("table components: {e}")))?;
                if self.component_by_serde_name(&name).is_none() {
                    return Err(invalid(format!(
                        "component \"{name}\" (table {table}) is not registered in this world; \
                         register it with World::register_serde under that name"
                    )));
                }
                if tables.insert(name.clone(), table).is_some() {
                    return Err(invalid(format!(
                        "component \"{name}\" is listed twice in components"
                    )));
                }
            }
        }

        // The entities, by archetype in row order.
        let mut by_archetype: Vec<Vec<(i64, u64)>> = vec![Vec::new(); names.len()];
        let mut seen: hashbrown::HashSet<u64> = hashbrown::HashSet::new();
        {
            let mut statement = (transaction
                .prepare("SELECT id, slot, generation, archetype, position FROM entities"))
            .map_err(sql("reading entities"))?;
            let mut rows = statement.query([]).map_err(sql("reading entities"))?;
            while let Some(row) = rows.next().map_err(sql("reading entities"))? {
                let get = |i: usize, column: &str| {
                    row.get::<_, i64>(i).map_err(|e| {
                        invalid(format!("table entities, column {column}: not an integer ({e})"))
                    })
                };
                let bits = get(0, "id")? as u64;
                let Some(entity) = Entity::from_bits(bits) else {
                    return Err(invalid(format!("table entities: {bits:#x} is not an entity id")));
                };
                if (get(1, "slot")?, get(2, "generation")?)
                    != (entity.index().into(), entity.generation().into())
                {
                    return Err(invalid(format!(
                        "table entities: the slot and generation of entity {entity} disagree with its id"
                    )));
                }
                if !seen.insert(bits) {
                    return Err(invalid(format!("table entities: entity {entity} appears twice")));
                }
                let archetype = get(3, "archetype")?;
                let list = usize::try_from(archetype)
                    .ok()
                    .and_then(|a| by_archetype.get_mut(a))
                    .ok_or_else(|| {
                        invalid(format!(
                            "table entities: entity {entity} is in archetype {archetype}, and there are {}",
                            names.len()
                        ))
                    })?;
                list.push((get(4, "position")?, bits));
            }
        }

        // The component tables' rows, by entity.
        let mut rows_of: HashMap<String, (Vec<String>, HashMap<u64, Vec<SqlValue>>)> = HashMap::new();
        for (name, table) in &tables {
            rows_of.insert(name.clone(), read_table(&transaction, name, table)?);
        }

        let mut archetypes = Vec::with_capacity(names.len());
        for (a, (names, mut members)) in names.into_iter().zip(by_archetype).enumerate() {
            members.sort_unstable_by_key(|&(position, _)| position);
            let entities: Vec<u64> = members.into_iter().map(|(_, bits)| bits).collect();
            let mut columns = Vec::with_capacity(names.len());
            for name in &names {
                let table = tables.get(name).ok_or_else(|| {
                    invalid(format!(
                        "archetype {a} has component \"{name}\", which components does not list"
                    ))
                })?;
                let (columns_of, rows) = rows_of.get_mut(name).expect("read above");
                let values = (entities.iter())
                    .map(|&bits| {
                        rows.remove(&bits).ok_or_else(|| {
                            invalid(format!(
                                "entity {} has component \"{name}\" (its archetype has) and no row in table {table}",
                                show(bits)
                            ))
                        })
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                columns.push((table.clone(), columns_of.clone(), values));
            }
            archetypes.push(ArchetypeRows {
                names,
                entities,
                columns,
            });
        }
        let sparse_names: Vec<(String, Vec<u64>)> = (meta.get("sparse").cloned())
            .and_then(|a| serde_json::from_value(a).ok())
            .ok_or_else(|| invalid("tabula_world.meta has no list of sparse sets' holders"))?;
        let mut sparse = Vec::with_capacity(sparse_names.len());
        for (name, entities) in sparse_names {
            let table = tables.get(&name).ok_or_else(|| {
                invalid(format!(
                    "the sparse set of component \"{name}\" is not listed by components"
                ))
            })?;
            let (columns, rows) = rows_of.get_mut(&name).expect("read above");
            let values = (entities.iter())
                .map(|&bits| {
                    rows.remove(&bits).ok_or_else(|| {
                        invalid(format!(
                            "entity {} holds sparse component \"{name}\" and has no row in table {table}",
                            show(bits)
                        ))
                    })
                })
                .collect::<Result<Vec<_>, _>>()?;
            sparse.push(SparseRows {
                table: table.clone(),
                columns: columns.clone(),
                name,
                entities,
                rows: values,
            });
        }
        for (name, (_, rows)) in &rows_of {
            if let Some(&bits) = rows.keys().next() {
                return Err(invalid(format!(
                    "table {} has a row for entity {}, which is not in entities or whose archetype lacks \
                     component \"{name}\"",
                    tables[name],
                    show(bits)
                )));
            }
        }
        Ok(Read {
            meta,
            archetypes,
            sparse,
            tick,
        })
    }
}

/// An entity id for a message.
fn show(bits: u64) -> String {
    Entity::from_bits(bits).map_or_else(|| format!("{bits:#x}"), |e| e.to_string())
}

/// A component table: its value columns, and each row's values by entity.
#[allow(clippy::type_complexity)]
fn read_table(
    transaction: &rusqlite::Transaction<'_>,
    name: &str,
    table: &str,
) -> Result<(Vec<String>, HashMap<u64, Vec<SqlValue>>), SqliteError> {
    let mut columns: Vec<String> = Vec::new();
    {
        let mut info = (transaction.prepare(&format!("PRAGMA table_info({})", quote(table))))
            .map_err(sql(format!("reading the columns of {table}")))?;
        let names = (info.query_map([], |row| row.get::<_, String>(1)))
            .map_err(sql(format!("reading the columns of {table}")))?;
        for column in names {
            columns.push(column.map_err(sql(format!("reading the columns of {table}")))?);
        }
    }
    if columns.is_empty() {
        return Err(invalid(format!(
            "the table {table} of component \"{name}\" is missing"
        )));
    }
    let Some(at) = columns.iter().position(|c| c == "entity") else {
        return Err(invalid(format!(
            "the table {table} of component \"{name}\" has no entity column"
        )));
    };
    columns.remove(at);
    let list: String = columns.iter().map(|c| format!(", {}", quote(c))).collect();
    let statement = format!("SELECT entity{list} FROM {}", quote(table));
    let mut select = transaction
        .prepare(&statement)
        .map_err(sql(format!("reading {table}")))?;
    let mut rows = select.query([]).map_err(sql(format!("reading {table}")))?;
    let mut by_entity = HashMap::new();
    while let Some(row) = rows.next().map_err(sql(format!("reading {table}")))? {
        let bits = row
            .get::<_, i64>(0)
            .map_err(|e| invalid(format!("table {table}: an entity that is not an integer ({e})")))?
            as u64;
        let values = (1..=columns.len())
            .map(|i| row.get::<_, SqlValue>(i))
            .collect::<Result<Vec<_>, _>>()
            .map_err(sql(format!("reading {table}")))?;
        if by_entity.insert(bits, values).is_some() {
            return Err(invalid(format!(
                "table {table}: entity {} has two rows",
                show(bits)
            )));
        }
    }
    Ok((columns, by_entity))
}

// ---------------------------------------------------------------------------------------
// The save as a deserializer, for `World::load`: the meta's fields from JSON, and the
// archetypes' rows from the tables.

/// The error of the serializer and the deserialiser below: a message.
#[derive(Debug)]
struct Message(String);

impl fmt::Display for Message {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Message {}

impl de::Error for Message {
    fn custom<T: fmt::Display>(message: T) -> Self {
        Self(message.to_string())
    }
}

impl ser::Error for Message {
    fn custom<T: fmt::Display>(message: T) -> Self {
        Self(message.to_string())
    }
}

fn json_error(error: serde_json::Error) -> Message {
    Message(error.to_string())
}

/// The whole save.
struct SaveDe<'a> {
    read: &'a Read,
}

impl<'de> Deserializer<'de> for SaveDe<'de> {
    type Error = Message;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Message> {
        let fields = (self.read.meta.iter()).filter(|(key, _)| *key != "archetypes" && *key != "sparse");
        visitor.visit_map(SaveMap {
            fields: Box::new(fields),
            next: None,
            archetypes: Some(&self.read.archetypes),
            sparse: Some(&self.read.sparse),
            tick: self.read.tick,
        })
    }

    forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf option
        unit unit_struct newtype_struct seq tuple tuple_struct map struct enum identifier ignored_any
    }
}

type Fields<'a> = Box<dyn Iterator<Item = (&'a String, &'a Json)> + 'a>;

struct SaveMap<'a> {
    fields: Fields<'a>,
    /// The value of the key just read: a meta field, the archetypes or the sparse sets.
    next: Option<Next<'a>>,
    archetypes: Option<&'a [ArchetypeRows]>,
    sparse: Option<&'a [SparseRows]>,
    tick: u32,
}

enum Next<'a> {
    Meta(&'a Json),
    Archetypes,
    Sparse,
}

impl<'de> MapAccess<'de> for SaveMap<'de> {
    type Error = Message;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, Message> {
        if let Some((key, value)) = self.fields.next() {
            self.next = Some(Next::Meta(value));
            return seed.deserialize(StrDeserializer::<Message>::new(key)).map(Some);
        }
        if self.archetypes.is_some() {
            self.next = Some(Next::Archetypes);
            return seed
                .deserialize(StrDeserializer::<Message>::new("archetypes"))
                .map(Some);
        }
        if self.sparse.is_some() {
            self.next = Some(Next::Sparse);
            return seed
                .deserialize(StrDeserializer::<Message>::new("sparse"))
                .map(Some);
        }
        Ok(None)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Message> {
        match self.next.take().expect("a key first") {
            Next::Meta(json) => seed.deserialize(json).map_err(json_error),
            Next::Archetypes => seed.deserialize(Archetypes {
                archetypes: self.archetypes.take().expect("once"),
                tick: self.tick,
            }),
            Next::Sparse => {
                let tick = self.tick;
                let sets = self.sparse.take().expect("once");
                seed.deserialize(SeqDeserializer::new(
                    sets.iter().map(move |set| OneSparse { set, tick }),
                ))
            }
        }
    }
}

/// One sparse set: `{ component, entities, rows }`.
struct OneSparse<'a> {
    set: &'a SparseRows,
    tick: u32,
}

impl<'de> IntoDeserializer<'de, Message> for OneSparse<'de> {
    type Deserializer = Self;
    fn into_deserializer(self) -> Self {
        self
    }
}

impl<'de> Deserializer<'de> for OneSparse<'de> {
    type Error = Message;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Message> {
        visitor.visit_map(SparseMap {
            set: self.set,
            tick: self.tick,
            field: 0,
        })
    }

    forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf option
        unit unit_struct newtype_struct seq tuple tuple_struct map struct enum identifier ignored_any
    }
}

struct SparseMap<'a> {
    set: &'a SparseRows,
    tick: u32,
    /// 1 after `component`, 2 after `entities`, 3 after `rows`.
    field: u8,
}

const SPARSE_FIELDS: [&str; 3] = ["component", "entities", "rows"];

impl<'de> MapAccess<'de> for SparseMap<'de> {
    type Error = Message;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, Message> {
        let Some(key) = SPARSE_FIELDS.get(usize::from(self.field)) else {
            return Ok(None);
        };
        self.field += 1;
        seed.deserialize(StrDeserializer::<Message>::new(key)).map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Message> {
        let set = self.set;
        match self.field {
            1 => seed.deserialize(StrDeserializer::<Message>::new(&set.name)),
            2 => seed.deserialize(SeqDeserializer::new(set.entities.iter().copied())),
            _ => seed.deserialize(Column {
                table: &set.table,
                names: &set.columns,
                rows: &set.rows,
                entities: &set.entities,
                tick: self.tick,
            }),
        }
    }
}

/// The archetypes: a sequence of `{ components, entities, columns }`.
struct Archetypes<'a> {
    archetypes: &'a [ArchetypeRows],
    tick: u32,
}

impl<'de> Deserializer<'de> for Archetypes<'de> {
    type Error = Message;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Message> {
        let tick = self.tick;
        visitor.visit_seq(SeqDeserializer::new(
            self.archetypes
                .iter()
                .map(move |archetype| OneArchetype { archetype, tick }),
        ))
    }

    forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf option
        unit unit_struct newtype_struct seq tuple tuple_struct map struct enum identifier ignored_any
    }
}

struct OneArchetype<'a> {
    archetype: &'a ArchetypeRows,
    tick: u32,
}

impl<'de> IntoDeserializer<'de, Message> for OneArchetype<'de> {
    type Deserializer = Self;
    fn into_deserializer(self) -> Self {
        self
    }
}

impl<'de> Deserializer<'de> for OneArchetype<'de> {
    type Error = Message;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Message> {
        visitor.visit_map(ArchetypeMap {
            archetype: self.archetype,
            tick: self.tick,
            field: 0,
        })
    }

    forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf option
        unit unit_struct newtype_struct seq tuple tuple_struct map struct enum identifier ignored_any
    }
}

struct ArchetypeMap<'a> {
    archetype: &'a ArchetypeRows,
    tick: u32,
    /// 1 after `components`, 2 after `entities`, 3 after `columns`.
    field: u8,
}

const ARCHETYPE_FIELDS: [&str; 3] = ["components", "entities", "columns"];

impl<'de> MapAccess<'de> for ArchetypeMap<'de> {
    type Error = Message;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, Message> {
        let Some(key) = ARCHETYPE_FIELDS.get(usize::from(self.field)) else {
            return Ok(None);
        };
        self.field += 1;
        seed.deserialize(StrDeserializer::<Message>::new(key)).map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Message> {
        let archetype = self.archetype;
        match self.field {
            1 => seed.deserialize(SeqDeserializer::new(archetype.names.iter().map(String::as_str))),
            2 => seed.deserialize(SeqDeserializer::new(archetype.entities.iter().copied())),
            _ => {
                let tick = self.tick;
                seed.deserialize(SeqDeserializer::new(archetype.columns.iter().map(
                    move |(table, names, rows)| Column {
                        table,
                        names,
                        rows,
                        entities: &archetype.entities,
                        tick,
                    },
                )))
            }
        }
    }
}

/// One component's column of an archetype: per row, `(added, changed, value)`.
#[derive(Clone, Copy)]
struct Column<'a> {
    table: &'a str,
    names: &'a [String],
    rows: &'a [Vec<SqlValue>],
    entities: &'a [u64],
    tick: u32,
}

impl<'de> IntoDeserializer<'de, Message> for Column<'de> {
    type Deserializer = Self;
    fn into_deserializer(self) -> Self {
        self
    }
}

impl<'de> Deserializer<'de> for Column<'de> {
    type Error = Message;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Message> {
        visitor.visit_seq(SeqDeserializer::new((0..self.rows.len()).map(move |row| {
            RowTriple {
                column: self,
                row,
                at: 0,
            }
        })))
    }

    forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf option
        unit unit_struct newtype_struct seq tuple tuple_struct map struct enum identifier ignored_any
    }
}

/// `(added, changed, value)` of one row.
struct RowTriple<'a> {
    column: Column<'a>,
    row: usize,
    at: u8,
}

impl<'de> IntoDeserializer<'de, Message> for RowTriple<'de> {
    type Deserializer = Self;
    fn into_deserializer(self) -> Self {
        self
    }
}

impl<'de> Deserializer<'de> for RowTriple<'de> {
    type Error = Message;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Message> {
        visitor.visit_seq(self)
    }

    forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf option
        unit unit_struct newtype_struct seq tuple tuple_struct map struct enum identifier ignored_any
    }
}

impl<'de> SeqAccess<'de> for RowTriple<'de> {
    type Error = Message;

    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<Option<T::Value>, Message> {
        self.at += 1;
        let column = self.column;
        match self.at {
            1 | 2 => seed.deserialize(column.tick.into_deserializer()).map(Some),
            3 => {
                let values = &column.rows[self.row];
                (seed.deserialize(RowDe {
                    names: column.names,
                    values,
                }))
                .map(Some)
                .map_err(|e| {
                    Message(format!(
                        "table {}, entity {}: {e}",
                        column.table,
                        show(column.entities[self.row])
                    ))
                })
            }
            _ => Ok(None),
        }
    }

    fn size_hint(&self) -> Option<usize> {
        Some(3usize.saturating_sub(usize::from(self.at)))
    }
}

// ---------------------------------------------------------------------------------------
// A component's value from its row, and one column's value.

/// A component's row: its value columns (names and values, `entity` left out).
#[derive(Clone, Copy)]
struct RowDe<'a> {
    names: &'a [String],
    values: &'a [SqlValue],
}

impl<'a> RowDe<'a> {
    /// The one `value` column of a value that is not flattened.
    fn single(self) -> Result<ColDe<'a>, Message> {
        match (self.names, self.values) {
            ([name], [value]) if name == "value" => Ok(ColDe(value)),
            _ => Err(Message(format!(
                "expected one column named value, found [{}]",
                self.names.join(", ")
            ))),
        }
    }
}

macro_rules! single {
    ($($method:ident)*) => {$(
        fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Message> {
            self.single()?.$method(visitor)
        }
    )*};
}

impl<'de> Deserializer<'de> for RowDe<'de> {
    type Error = Message;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Message> {
        match self.names {
            [] => visitor.visit_unit(),
            [name] if name == "value" => ColDe(&self.values[0]).deserialize_any(visitor),
            _ => self.deserialize_map(visitor),
        }
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Message> {
        visitor.visit_map(RowMap { row: self, at: 0 })
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Message> {
        visitor.visit_map(RowMap { row: self, at: 0 })
    }

    fn deserialize_tuple<V: Visitor<'de>>(self, _len: usize, visitor: V) -> Result<V::Value, Message> {
        visitor.visit_seq(SeqDeserializer::new(self.values.iter().map(ColDe)))
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, Message> {
        self.deserialize_tuple(len, visitor)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Message> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_unit<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Message> {
        if self.names.is_empty() {
            visitor.visit_unit()
        } else {
            self.single()?.deserialize_unit(visitor)
        }
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Message> {
        self.deserialize_unit(visitor)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Message> {
        self.single()?.deserialize_enum(name, variants, visitor)
    }

    single! {
        deserialize_bool deserialize_i8 deserialize_i16 deserialize_i32 deserialize_i64 deserialize_i128
        deserialize_u8 deserialize_u16 deserialize_u32 deserialize_u64 deserialize_u128 deserialize_f32
        deserialize_f64 deserialize_char deserialize_str deserialize_string deserialize_bytes
        deserialize_byte_buf deserialize_option deserialize_seq deserialize_identifier
        deserialize_ignored_any
    }
}

struct RowMap<'a> {
    row: RowDe<'a>,
    at: usize,
}

impl<'de> MapAccess<'de> for RowMap<'de> {
    type Error = Message;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, Message> {
        match self.row.names.get(self.at) {
            Some(name) => seed.deserialize(StrDeserializer::<Message>::new(name)).map(Some),
            None => Ok(None),
        }
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Message> {
        let at = self.at;
        self.at += 1;
        (seed.deserialize(ColDe(&self.row.values[at])))
            .map_err(|e| Message(format!("column {}: {e}", self.row.names[at])))
    }
}

/// One column's value.
#[derive(Clone, Copy)]
struct ColDe<'a>(&'a SqlValue);

impl<'de> IntoDeserializer<'de, Message> for ColDe<'de> {
    type Deserializer = Self;
    fn into_deserializer(self) -> Self {
        self
    }
}

impl<'de> ColDe<'de> {
    /// JSON text, read with `read`; anything else with `otherwise`.
    fn json<V: Visitor<'de>>(
        self,
        visitor: V,
        read: impl FnOnce(
            &mut serde_json::Deserializer<serde_json::de::StrRead<'de>>,
            V,
        ) -> serde_json::Result<V::Value>,
    ) -> Result<V::Value, Message> {
        match self.0 {
            SqlValue::Text(text) => {
                let mut json = serde_json::Deserializer::from_str(text);
                let value = read(&mut json, visitor).map_err(json_error)?;
                json.end().map_err(json_error)?;
                Ok(value)
            }
            _ => self.deserialize_any(visitor),
        }
    }
}

impl<'de> Deserializer<'de> for ColDe<'de> {
    type Error = Message;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Message> {
        match self.0 {
            SqlValue::Null => visitor.visit_unit(),
            &SqlValue::Integer(n) => visitor.visit_i64(n),
            &SqlValue::Real(x) => visitor.visit_f64(x),
            SqlValue::Text(text) => visitor.visit_borrowed_str(text),
            SqlValue::Blob(bytes) => visitor.visit_borrowed_bytes(bytes),
        }
    }

    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Message> {
        match self.0 {
            &SqlValue::Integer(n) => visitor.visit_bool(n != 0),
            _ => self.deserialize_any(visitor),
        }
    }

    fn deserialize_u64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Message> {
        match self.0 {
            // Written wrapped when above `i64::MAX`.
            &SqlValue::Integer(n) => visitor.visit_u64(n as u64),
            _ => self.deserialize_any(visitor),
        }
    }

    fn deserialize_i128<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Message> {
        match self.0 {
            SqlValue::Text(text) => match text.parse() {
                Ok(n) => visitor.visit_i128(n),
                Err(_) => self.deserialize_any(visitor),
            },
            _ => self.deserialize_any(visitor),
        }
    }

    fn deserialize_u128<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Message> {
        match self.0 {
            SqlValue::Text(text) => match text.parse() {
                Ok(n) => visitor.visit_u128(n),
                Err(_) => self.deserialize_any(visitor),
            },
            _ => self.deserialize_any(visitor),
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Message> {
        match self.0 {
            SqlValue::Null => visitor.visit_none(),
            _ => visitor.visit_some(self),
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Message> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Message> {
        match self.0 {
            SqlValue::Text(text) if text.starts_with('{') => self.json(visitor, |json, visitor| {
                json.deserialize_enum(name, variants, visitor)
            }),
            SqlValue::Text(text) => visitor.visit_enum(StrDeserializer::<Message>::new(text)),
            _ => self.deserialize_any(visitor),
        }
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Message> {
        self.json(visitor, |json, visitor| json.deserialize_seq(visitor))
    }

    fn deserialize_tuple<V: Visitor<'de>>(self, len: usize, visitor: V) -> Result<V::Value, Message> {
        self.json(visitor, |json, visitor| json.deserialize_tuple(len, visitor))
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, Message> {
        self.json(visitor, |json, visitor| {
            json.deserialize_tuple_struct(name, len, visitor)
        })
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Message> {
        self.json(visitor, |json, visitor| json.deserialize_map(visitor))
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Message> {
        self.json(visitor, |json, visitor| {
            json.deserialize_struct(name, fields, visitor)
        })
    }

    forward_to_deserialize_any! {
        i8 i16 i32 i64 u8 u16 u32 f32 f64 char str string bytes byte_buf
        unit unit_struct identifier ignored_any
    }
}

// ---------------------------------------------------------------------------------------
// Export: flattening a value into columns, and the save's fields but its rows as JSON.

/// A column's name.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Name {
    /// A named field.
    Field(&'static str),
    /// A tuple's field: `_0`, `_1`, ...
    Index(usize),
    /// The one column of a value that is not flattened.
    Value,
}

impl fmt::Display for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Field(name) => f.write_str(name),
            Self::Index(i) => write!(f, "_{i}"),
            Self::Value => f.write_str("value"),
        }
    }
}

/// Flattens `value` into `row` (see the module docs for the mapping).
fn flatten(value: &dyn erased_serde::Serialize, row: &mut Vec<(Name, SqlValue)>) -> Result<(), Message> {
    if let Some(single) = value.serialize(ValueSer { row: Some(&mut *row) })? {
        row.push((Name::Value, single));
    }
    Ok(())
}

/// One SQL value of a column — or, at the top of a component's value (`row` given), a
/// struct's or tuple's fields written to `row` as columns (then `Ok(None)`).
struct ValueSer<'r> {
    row: Option<&'r mut Vec<(Name, SqlValue)>>,
}

/// `value` as one column's SQL value.
fn column<T: Serialize + ?Sized>(value: &T) -> Result<SqlValue, Message> {
    Ok(value.serialize(ValueSer { row: None })?.unwrap_or(SqlValue::Null))
}

use serde_json::value::Serializer as JsonSer;

/// JSON text of a value serde_json made.
fn json_text(value: Result<Json, serde_json::Error>) -> Result<Option<SqlValue>, Message> {
    Ok(Some(SqlValue::Text(value.map_err(json_error)?.to_string())))
}

/// A compound value: fields flattened into columns, or JSON text.
enum Compound<'r, J> {
    Flat(&'r mut Vec<(Name, SqlValue)>, usize),
    Json(J),
}

impl<'r> Serializer for ValueSer<'r> {
    type Ok = Option<SqlValue>;
    type Error = Message;
    type SerializeSeq = Compound<'r, <JsonSer as Serializer>::SerializeSeq>;
    type SerializeTuple = Compound<'r, <JsonSer as Serializer>::SerializeTuple>;
    type SerializeTupleStruct = Compound<'r, <JsonSer as Serializer>::SerializeTupleStruct>;
    type SerializeTupleVariant = Compound<'r, <JsonSer as Serializer>::SerializeTupleVariant>;
    type SerializeMap = Compound<'r, <JsonSer as Serializer>::SerializeMap>;
    type SerializeStruct = Compound<'r, <JsonSer as Serializer>::SerializeStruct>;
    type SerializeStructVariant = Compound<'r, <JsonSer as Serializer>::SerializeStructVariant>;

    fn serialize_bool(self, v: bool) -> Result<Self::Ok, Message> {
        Ok(Some(SqlValue::Integer(i64::from(v))))
    }
    fn serialize_i8(self, v: i8) -> Result<Self::Ok, Message> {
        self.serialize_i64(v.into())
    }
    fn serialize_i16(self, v: i16) -> Result<Self::Ok, Message> {
        self.serialize_i64(v.into())
    }
    fn serialize_i32(self, v: i32) -> Result<Self::Ok, Message> {
        self.serialize_i64(v.into())
    }
    fn serialize_i64(self, v: i64) -> Result<Self::Ok, Message> {
        Ok(Some(SqlValue::Integer(v)))
    }
    fn serialize_i128(self, v: i128) -> Result<Self::Ok, Message> {
        Ok(Some(match i64::try_from(v) {
            Ok(v) => SqlValue::Integer(v),
            Err(_) => SqlValue::Text(v.to_string()),
        }))
    }
    fn serialize_u8(self, v: u8) -> Result<Self::Ok, Message> {
        self.serialize_i64(v.into())
    }
    fn serialize_u16(self, v: u16) -> Result<Self::Ok, Message> {
        self.serialize_i64(v.into())
    }
    fn serialize_u32(self, v: u32) -> Result<Self::Ok, Message> {
        self.serialize_i64(v.into())
    }
    fn serialize_u64(self, v: u64) -> Result<Self::Ok, Message> {
        // Wrapped above `i64::MAX`; read back whole by a `u64`.
        self.serialize_i64(v as i64)
    }
    fn serialize_u128(self, v: u128) -> Result<Self::Ok, Message> {
        Ok(Some(match i64::try_from(v) {
            Ok(v) => SqlValue::Integer(v),
            Err(_) => SqlValue::Text(v.to_string()),
        }))
    }
    fn serialize_f32(self, v: f32) -> Result<Self::Ok, Message> {
        self.serialize_f64(v.into())
    }
    fn serialize_f64(self, v: f64) -> Result<Self::Ok, Message> {
        Ok(Some(SqlValue::Real(v)))
    }
    fn serialize_char(self, v: char) -> Result<Self::Ok, Message> {
        Ok(Some(SqlValue::Text(v.to_string())))
    }
    fn serialize_str(self, v: &str) -> Result<Self::Ok, Message> {
        Ok(Some(SqlValue::Text(v.to_owned())))
    }
    fn serialize_bytes(self, v: &[u8]) -> Result<Self::Ok, Message> {
        Ok(Some(SqlValue::Blob(v.to_vec())))
    }
    fn serialize_none(self) -> Result<Self::Ok, Message> {
        Ok(Some(SqlValue::Null))
    }
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<Self::Ok, Message> {
        value.serialize(self)
    }
    fn serialize_unit(self) -> Result<Self::Ok, Message> {
        Ok(if self.row.is_some() {
            None
        } else {
            Some(SqlValue::Null)
        })
    }
    fn serialize_unit_struct(self, _name: &'static str) -> Result<Self::Ok, Message> {
        self.serialize_unit()
    }
    fn serialize_unit_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
    ) -> Result<Self::Ok, Message> {
        Ok(Some(SqlValue::Text(variant.to_owned())))
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        value: &T,
    ) -> Result<Self::Ok, Message> {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        name: &'static str,
        index: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<Self::Ok, Message> {
        json_text(JsonSer.serialize_newtype_variant(name, index, variant, value))
    }
    fn serialize_seq(self, len: Option<usize>) -> Result<Self::SerializeSeq, Message> {
        Ok(Compound::Json(JsonSer.serialize_seq(len).map_err(json_error)?))
    }
    fn serialize_tuple(self, len: usize) -> Result<Self::SerializeTuple, Message> {
        Ok(match self.row {
            Some(row) => Compound::Flat(row, 0),
            None => Compound::Json(JsonSer.serialize_tuple(len).map_err(json_error)?),
        })
    }
    fn serialize_tuple_struct(
        self,
        name: &'static str,
        len: usize,
    ) -> Result<Self::SerializeTupleStruct, Message> {
        Ok(match self.row {
            Some(row) => Compound::Flat(row, 0),
            None => Compound::Json(JsonSer.serialize_tuple_struct(name, len).map_err(json_error)?),
        })
    }
    fn serialize_tuple_variant(
        self,
        name: &'static str,
        index: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Self::SerializeTupleVariant, Message> {
        Ok(Compound::Json(
            JsonSer
                .serialize_tuple_variant(name, index, variant, len)
                .map_err(json_error)?,
        ))
    }
    fn serialize_map(self, len: Option<usize>) -> Result<Self::SerializeMap, Message> {
        Ok(Compound::Json(JsonSer.serialize_map(len).map_err(json_error)?))
    }
    fn serialize_struct(self, name: &'static str, len: usize) -> Result<Self::SerializeStruct, Message> {
        Ok(match self.row {
            Some(row) => Compound::Flat(row, 0),
            None => Compound::Json(JsonSer.serialize_struct(name, len).map_err(json_error)?),
        })
    }
    fn serialize_struct_variant(
        self,
        name: &'static str,
        index: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Self::SerializeStructVariant, Message> {
        Ok(Compound::Json(
            JsonSer
                .serialize_struct_variant(name, index, variant, len)
                .map_err(json_error)?,
        ))
    }
}

impl<J: ser::SerializeSeq<Ok = Json, Error = serde_json::Error>> ser::SerializeSeq for Compound<'_, J> {
    type Ok = Option<SqlValue>;
    type Error = Message;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Message> {
        match self {
            Self::Json(json) => json.serialize_element(value).map_err(json_error),
            Self::Flat(..) => unreachable!("a sequence is never flattened"),
        }
    }
    fn end(self) -> Result<Self::Ok, Message> {
        match self {
            Self::Json(json) => json_text(json.end()),
            Self::Flat(..) => Ok(None),
        }
    }
}

/// A tuple's or tuple struct's next field.
fn tuple_field<J, T: Serialize + ?Sized>(
    compound: &mut Compound<'_, J>,
    value: &T,
    json: impl FnOnce(&mut J, &T) -> Result<(), serde_json::Error>,
) -> Result<(), Message> {
    match compound {
        Compound::Json(j) => json(j, value).map_err(json_error),
        Compound::Flat(row, at) => {
            row.push((Name::Index(*at), column(value)?));
            *at += 1;
            Ok(())
        }
    }
}

impl<J: ser::SerializeTuple<Ok = Json, Error = serde_json::Error>> ser::SerializeTuple for Compound<'_, J> {
    type Ok = Option<SqlValue>;
    type Error = Message;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Message> {
        tuple_field(self, value, |j, v| j.serialize_element(v))
    }
    fn end(self) -> Result<Self::Ok, Message> {
        match self {
            Self::Json(json) => json_text(json.end()),
            Self::Flat(..) => Ok(None),
        }
    }
}

impl<J: ser::SerializeTupleStruct<Ok = Json, Error = serde_json::Error>> ser::SerializeTupleStruct
    for Compound<'_, J>
{
    type Ok = Option<SqlValue>;
    type Error = Message;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Message> {
        tuple_field(self, value, |j, v| j.serialize_field(v))
    }
    fn end(self) -> Result<Self::Ok, Message> {
        match self {
            Self::Json(json) => json_text(json.end()),
            Self::Flat(..) => Ok(None),
        }
    }
}

impl<J: ser::SerializeTupleVariant<Ok = Json, Error = serde_json::Error>> ser::SerializeTupleVariant
    for Compound<'_, J>
{
    type Ok = Option<SqlValue>;
    type Error = Message;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Message> {
        match self {
            Self::Json(json) => json.serialize_field(value).map_err(json_error),
            Self::Flat(..) => unreachable!("a variant is never flattened"),
        }
    }
    fn end(self) -> Result<Self::Ok, Message> {
        match self {
            Self::Json(json) => json_text(json.end()),
            Self::Flat(..) => Ok(None),
        }
    }
}

impl<J: ser::SerializeMap<Ok = Json, Error = serde_json::Error>> ser::SerializeMap for Compound<'_, J> {
    type Ok = Option<SqlValue>;
    type Error = Message;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), Message> {
        match self {
            Self::Json(json) => json.serialize_key(key).map_err(json_error),
            Self::Flat(..) => unreachable!("a map is never flattened"),
        }
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Message> {
        match self {
            Self::Json(json) => json.serialize_value(value).map_err(json_error),
            Self::Flat(..) => unreachable!("a map is never flattened"),
        }
    }
    fn end(self) -> Result<Self::Ok, Message> {
        match self {
            Self::Json(json) => json_text(json.end()),
            Self::Flat(..) => Ok(None),
        }
    }
}

impl<J: ser::SerializeStruct<Ok = Json, Error = serde_json::Error>> ser::SerializeStruct for Compound<'_, J> {
    type Ok = Option<SqlValue>;
    type Error = Message;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), Message> {
        match self {
            Self::Json(json) => json.serialize_field(key, value).map_err(json_error),
            Self::Flat(row, _) => {
                row.push((Name::Field(key), column(value)?));
                Ok(())
            }
        }
    }
    fn skip_field(&mut self, key: &'static str) -> Result<(), Message> {
        match self {
            Self::Json(json) => json.skip_field(key).map_err(json_error),
            Self::Flat(..) => Err(Message(format!(
                "field {key} is skipped for this value (skip_serializing_if): a table has one set of columns"
            ))),
        }
    }
    fn end(self) -> Result<Self::Ok, Message> {
        match self {
            Self::Json(json) => json_text(json.end()),
            Self::Flat(..) => Ok(None),
        }
    }
}

impl<J: ser::SerializeStructVariant<Ok = Json, Error = serde_json::Error>> ser::SerializeStructVariant
    for Compound<'_, J>
{
    type Ok = Option<SqlValue>;
    type Error = Message;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), Message> {
        match self {
            Self::Json(json) => json.serialize_field(key, value).map_err(json_error),
            Self::Flat(..) => unreachable!("a variant is never flattened"),
        }
    }
    fn end(self) -> Result<Self::Ok, Message> {
        match self {
            Self::Json(json) => json_text(json.end()),
            Self::Flat(..) => Ok(None),
        }
    }
}

/// Serialises a [`WorldSnapshot`](crate::WorldSnapshot) into a JSON map, leaving out its
/// `archetypes` (the rows go to the tables): only `serialize_struct` is expected.
struct MetaSerializer;

macro_rules! refuse {
    ($($method:ident($($arg:ty),*) -> $ok:ty;)*) => {$(
        fn $method(self, $(_: $arg),*) -> Result<$ok, Message> {
            Err(Message("a world snapshot is a struct".into()))
        }
    )*};
}

impl Serializer for MetaSerializer {
    type Ok = serde_json::Map<String, Json>;
    type Error = Message;
    type SerializeSeq = ser::Impossible<Self::Ok, Message>;
    type SerializeTuple = ser::Impossible<Self::Ok, Message>;
    type SerializeTupleStruct = ser::Impossible<Self::Ok, Message>;
    type SerializeTupleVariant = ser::Impossible<Self::Ok, Message>;
    type SerializeMap = ser::Impossible<Self::Ok, Message>;
    type SerializeStruct = MetaStruct;
    type SerializeStructVariant = ser::Impossible<Self::Ok, Message>;

    fn serialize_struct(self, _name: &'static str, _len: usize) -> Result<MetaStruct, Message> {
        Ok(MetaStruct(serde_json::Map::new()))
    }

    refuse! {
        serialize_bool(bool) -> Self::Ok;
        serialize_i8(i8) -> Self::Ok;
        serialize_i16(i16) -> Self::Ok;
        serialize_i32(i32) -> Self::Ok;
        serialize_i64(i64) -> Self::Ok;
        serialize_u8(u8) -> Self::Ok;
        serialize_u16(u16) -> Self::Ok;
        serialize_u32(u32) -> Self::Ok;
        serialize_u64(u64) -> Self::Ok;
        serialize_f32(f32) -> Self::Ok;
        serialize_f64(f64) -> Self::Ok;
        serialize_char(char) -> Self::Ok;
        serialize_str(&str) -> Self::Ok;
        serialize_bytes(&[u8]) -> Self::Ok;
        serialize_none() -> Self::Ok;
        serialize_unit() -> Self::Ok;
        serialize_unit_struct(&'static str) -> Self::Ok;
        serialize_unit_variant(&'static str, u32, &'static str) -> Self::Ok;
        serialize_seq(Option<usize>) -> Self::SerializeSeq;
        serialize_tuple(usize) -> Self::SerializeTuple;
        serialize_tuple_struct(&'static str, usize) -> Self::SerializeTupleStruct;
        serialize_tuple_variant(&'static str, u32, &'static str, usize) -> Self::SerializeTupleVariant;
        serialize_map(Option<usize>) -> Self::SerializeMap;
        serialize_struct_variant(&'static str, u32, &'static str, usize) -> Self::SerializeStructVariant;
    }

    fn serialize_some<T: Serialize + ?Sized>(self, _value: &T) -> Result<Self::Ok, Message> {
        Err(Message("a world snapshot is a struct".into()))
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        _value: &T,
    ) -> Result<Self::Ok, Message> {
        Err(Message("a world snapshot is a struct".into()))
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _value: &T,
    ) -> Result<Self::Ok, Message> {
        Err(Message("a world snapshot is a struct".into()))
    }
}

struct MetaStruct(serde_json::Map<String, Json>);

impl ser::SerializeStruct for MetaStruct {
    type Ok = serde_json::Map<String, Json>;
    type Error = Message;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), Message> {
        if key != "archetypes" && key != "sparse" {
            let value = serde_json::to_value(value).map_err(json_error)?;
            self.0.insert(key.to_owned(), value);
        }
        Ok(())
    }
    fn end(self) -> Result<Self::Ok, Message> {
        Ok(self.0)
    }
}
