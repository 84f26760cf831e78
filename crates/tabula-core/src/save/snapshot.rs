//! Writing a world: [`WorldSnapshot`], a serde view of everything a replay depends on.

use std::fmt;

use serde::ser::{Error as _, SerializeSeq, SerializeStruct};
use serde::{Serialize, Serializer};

use super::registry::{ResourceEntry, SerdeEntry};
use crate::archetype::Archetype;
use crate::change::{ComponentTicks, Tick};
use crate::component::{Component, ComponentId};
use crate::dynamic::Ptr;
use crate::entity::GENERATION_MASK;
use crate::entity::{AllocatorState, LaneHolder};
use crate::storage::{SparseSet, Table};
use crate::world::World;

/// The version of the save format [`WorldSnapshot`] writes.
pub const SAVE_FORMAT: u32 = 3;

/// Why a world cannot be saved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SaveError {
    /// An archetype holds a component that is not registered for save and load.
    Unregistered {
        /// The component's name (its Rust type name, or a dynamic component's name).
        component: &'static str,
        /// How many entities hold it now (0 when only an archetype that is now empty has it).
        entities: usize,
    },
    /// Ids were reserved (by `World::reserve_entity` or commands) and not yet made into
    /// entities.
    UnflushedReservations,
}

impl fmt::Display for SaveError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Unregistered { component, entities } => write!(
                f,
                "cannot save: component {component} (held by {entities} entities) is not registered \
                 for save and load; call World::register_serde::<{component}>(\"a stable name\") \
                 (every component of every archetype, empty ones included, is saved so that a \
                 loaded world creates archetypes in the same order)"
            ),
            Self::UnflushedReservations => f.write_str(
                "cannot save: entity ids are reserved and not yet spawned; call World::flush \
                 (or save between schedule runs) first",
            ),
        }
    }
}

impl std::error::Error for SaveError {}

/// A serde view of a whole [`World`], from [`World::snapshot`]: serialise it with any serde
/// format. It borrows the world, so what it writes is the world as it is when serialised.
pub struct WorldSnapshot<'w> {
    world: &'w World,
    entities: AllocatorState,
    /// Per archetype, in creation order, its components' serde entries and whether its rows
    /// are saved (a subset save writes some archetypes for their order alone).
    archetypes: Vec<(&'w Archetype, Vec<SerdeEntry>, bool)>,
    resources: Vec<ResourceEntry>,
    /// Per sparse set held by a saved entity, in component id order: its entry and the dense
    /// rows saved (every row, or those of saved entities, in dense order).
    sparse: Vec<(&'w SparseSet, SerdeEntry, Vec<usize>)>,
}

impl fmt::Debug for WorldSnapshot<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WorldSnapshot")
            .field("tag", &self.world.tag())
            .field("entities", &self.world.len())
            .field("slots", &self.entities.generations.len())
            .field("archetypes", &self.archetypes.len())
            .finish()
    }
}

impl World {
    /// A serde view of the world, for a save: the world tag, the change clock, the entity
    /// allocator's whole state (every slot's generation, the free list in order, retired
    /// slots, every reservation lane with its block and holder), and every archetype in
    /// creation order with its components' stable names and its rows in row order (entity,
    /// `added` and `changed` ticks, and the values through the registered serde functions).
    /// Each [sparse-set](crate::ComponentRegistration::sparse_set) component held by some
    /// entity is written as its set: the holders in the set's dense order, each with its
    /// ticks and value, so a load rebuilds the set in that order.
    ///
    /// Every component of every archetype must be registered with
    /// [`register_serde`](Self::register_serde) — empty archetypes included, because a loaded
    /// world recreates them to create later archetypes in the same order (and so visit rows
    /// in the same order). A component that is not is an error naming it, never a silent
    /// gap in the save; so must every sparse component some entity holds. Resources
    /// registered with
    /// [`register_serde_resource`](Self::register_serde_resource) are saved when present,
    /// with their ticks; others are left out.
    ///
    /// ```
    /// use serde::{Deserialize, Serialize};
    /// use tabula::World;
    ///
    /// #[derive(Serialize, Deserialize)]
    /// struct Position(f32, f32);
    /// struct Scratch;
    ///
    /// let mut world = World::new();
    /// world.register_serde::<Position>("Position");
    /// world.spawn((Position(1.0, 2.0),));
    /// let json = serde_json::to_string(&world.snapshot()?).unwrap();
    /// assert!(json.contains("\"Position\"") && json.contains("[1.0,2.0]"));
    ///
    /// world.spawn((Scratch,));
    /// assert!(world.snapshot().unwrap_err().to_string().contains("Scratch"));
    /// # Ok::<(), tabula::SaveError>(())
    /// ```
    ///
    /// # Errors
    /// [`SaveError::Unregistered`] naming the first component (of an archetype, or sparse
    /// and held) not registered for serde;
    /// [`SaveError::UnflushedReservations`] while reserved ids wait for a
    /// [`flush`](Self::flush).
    pub fn snapshot(&self) -> Result<WorldSnapshot<'_>, SaveError> {
        self.snapshot_of(None)
    }

    /// A serde view of the entities holding marker component `M` (and the resources): a
    /// save game that leaves transient entities (particles, effects, UI) out. It is a save
    /// of the world as if every entity without `M` had been despawned: their slots are on
    /// the free list (with their generation moved on, or retired), the archetypes holding
    /// `M` are written with their rows, and the others are left out (only the archetype a
    /// fresh world starts with is written, empty). Only components of archetypes holding
    /// `M`, and sparse components those entities hold, must be registered for serde; a
    /// sparse set is written with the saved holders alone, in their dense order (a load
    /// makes that the set's order).
    ///
    /// An [`Entity`](crate::Entity) held by a saved component that names an entity left
    /// out of the save *dangles*: after a load into a fresh world ([`load`](Self::load)) it
    /// names a dead entity (its slot's generation has moved on), exactly as after a
    /// despawn; a [remapped load](Self::load_remapped) refuses it with
    /// [`LoadError::Invalid`](crate::LoadError::Invalid) naming the component and both
    /// entities, when the component is registered with
    /// [`register_serde_mapped`](Self::register_serde_mapped) (the load could not map it).
    ///
    /// ```
    /// use serde::{Deserialize, Serialize};
    /// use tabula::World;
    ///
    /// #[derive(Serialize, Deserialize)]
    /// struct SaveMe;
    /// #[derive(Debug, PartialEq, Serialize, Deserialize)]
    /// struct Hp(u32);
    /// struct Particle;
    ///
    /// let mut world = World::new();
    /// world.register_serde::<SaveMe>("SaveMe");
    /// world.register_serde::<Hp>("Hp");
    /// let ship = world.spawn((SaveMe, Hp(3)));
    /// let spark = world.spawn((Particle,)); // not registered, not saved
    /// let json = serde_json::to_string(&world.snapshot_with::<SaveMe>()?)?;
    ///
    /// let mut loaded = World::new();
    /// loaded.register_serde::<SaveMe>("SaveMe");
    /// loaded.register_serde::<Hp>("Hp");
    /// loaded.load(&mut serde_json::Deserializer::from_str(&json))?;
    /// assert_eq!(loaded.get::<Hp>(ship)?, &Hp(3));
    /// assert!(!loaded.contains(spark));
    /// assert_eq!(loaded.len(), 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// As [`snapshot`](Self::snapshot), for the archetypes saved.
    pub fn snapshot_with<M: Component>(&self) -> Result<WorldSnapshot<'_>, SaveError> {
        // `None` inside for a marker never registered: no archetype has it.
        self.snapshot_of(Some(self.components().id::<M>()))
    }

    /// The snapshot of every entity (`None`) or of those holding a marker.
    fn snapshot_of(&self, marker: Option<Option<ComponentId>>) -> Result<WorldSnapshot<'_>, SaveError> {
        let mut entities = self
            .entities()
            .saved_state()
            .ok_or(SaveError::UnflushedReservations)?;
        let saved = |archetype: &Archetype| match marker {
            None => true,
            Some(None) => false,
            Some(Some(marker)) => archetype.component_ids().contains(&marker),
        };
        if marker.is_some() {
            // The entities left out are saved as despawned, in archetype and row order.
            for archetype in self.archetypes().filter(|a| !saved(a)) {
                for entity in archetype.entities() {
                    let word = &mut entities.generations[entity.index() as usize];
                    let next = word.wrapping_add(1);
                    if next & GENERATION_MASK != 0 {
                        *word = next;
                        entities.free.push(entity.index());
                    }
                }
            }
        }
        // A sparse value is saved with its holder: every one in a full save, those of the
        // entities in saved archetypes (in dense order) in a subset save.
        let mut sparse = Vec::new();
        for (id, set) in self.sparse.iter() {
            let rows: Vec<usize> = match marker {
                None => (0..set.entities().len()).collect(),
                Some(_) => (set.entities().iter().enumerate())
                    .filter(|&(_, &entity)| {
                        let location = self
                            .entities()
                            .get(entity)
                            .expect("a sparse value's entity is alive");
                        self.archetypes()
                            .nth(location.archetype.index())
                            .is_some_and(saved)
                    })
                    .map(|(row, _)| row)
                    .collect(),
            };
            if rows.is_empty() {
                continue;
            }
            let entry = self.serde.get(id).copied().ok_or(SaveError::Unregistered {
                component: self.components().info(id).name(),
                entities: rows.len(),
            })?;
            sparse.push((set, entry, rows));
        }
        let archetypes = (self.archetypes().enumerate())
            .filter(|&(a, archetype)| a == 0 || saved(archetype))
            .map(|(_, archetype)| {
                let entries = (archetype.component_ids().iter())
                    .map(|&id| {
                        self.serde.get(id).copied().ok_or(SaveError::Unregistered {
                            component: self.components().info(id).name(),
                            entities: (self.archetypes())
                                .filter(|a| a.component_ids().contains(&id))
                                .map(Archetype::len)
                                .sum(),
                        })
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                Ok((archetype, entries, saved(archetype)))
            })
            .collect::<Result<Vec<_>, SaveError>>()?;
        let resources = (self.serde.resources.iter())
            .filter(|entry| self.resources().ticks_by_id(entry.id).is_some())
            .copied()
            .collect();
        Ok(WorldSnapshot {
            world: self,
            entities,
            archetypes,
            resources,
            sparse,
        })
    }
}

impl Serialize for WorldSnapshot<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let (change_tick, last_change_tick, next_check_tick) = self.world.clock();
        let mut world = serializer.serialize_struct("World", 9)?;
        world.serialize_field("format", &SAVE_FORMAT)?;
        world.serialize_field("tag", &self.world.tag())?;
        world.serialize_field("change_tick", &change_tick)?;
        world.serialize_field("last_change_tick", &last_change_tick.get())?;
        world.serialize_field("next_check_tick", &next_check_tick)?;
        world.serialize_field("entities", &Entities(&self.entities))?;
        let archetypes = Seq(self
            .archetypes
            .iter()
            .map(|(archetype, entries, rows)| ArchetypeRows {
                archetype,
                entries,
                rows: *rows,
                now: Tick::new(change_tick as u32),
            }));
        world.serialize_field("archetypes", &archetypes)?;
        let resources = Seq(self.resources.iter().map(|entry| SavedResource {
            world: self.world,
            entry,
        }));
        world.serialize_field("resources", &resources)?;
        let now = Tick::new(change_tick as u32);
        let sparse = Seq((self.sparse.iter()).map(|(set, entry, rows)| SparseRows {
            set,
            entry,
            rows,
            now,
        }));
        world.serialize_field("sparse", &sparse)?;
        world.end()
    }
}

/// A sequence written from an iterator (cloned for the one pass serialising makes).
struct Seq<I>(I);

impl<I: Iterator<Item = T> + Clone, T: Serialize> Serialize for Seq<I> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let items = self.0.clone();
        let mut seq = serializer.serialize_seq(items.size_hint().1)?;
        for item in items {
            seq.serialize_element(&item)?;
        }
        seq.end()
    }
}

struct Entities<'a>(&'a AllocatorState);

impl Serialize for Entities<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let state = self.0;
        let mut entities = serializer.serialize_struct("Entities", 5)?;
        entities.serialize_field("generations", &state.generations)?;
        entities.serialize_field("free", &state.free)?;
        let lanes = Seq(state.lanes.iter().map(|lane| {
            let holder = match lane.holder {
                LaneHolder::Shared => "shared",
                LaneHolder::Owned => "owned",
                LaneHolder::Released => "released",
                LaneHolder::Free => "free",
            };
            (lane.block, lane.ran, holder)
        }));
        entities.serialize_field("lanes", &lanes)?;
        entities.serialize_field("slot_limit", &state.slot_limit)?;
        entities.serialize_field("flushed_positions", &state.flushed_positions)?;
        entities.end()
    }
}

/// One archetype: its components' names, then its rows column by column.
struct ArchetypeRows<'a> {
    archetype: &'a Archetype,
    entries: &'a [SerdeEntry],
    /// False for an archetype written for its place in the creation order alone.
    rows: bool,
    now: Tick,
}

/// One resource: `[name, added, changed, value]`.
#[derive(Clone, Copy)]
struct SavedResource<'a> {
    world: &'a World,
    entry: &'a ResourceEntry,
}

impl Serialize for SavedResource<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let entry = self.entry;
        let (added, changed) = (self.world.resources().ticks_by_id(entry.id))
            .ok_or_else(|| S::Error::custom(format_args!("resource {} was removed", entry.name)))?;
        let value = (entry.serialize)(self.world)
            .ok_or_else(|| S::Error::custom(format_args!("resource {} was removed", entry.name)))?;
        (entry.name, added.get(), changed.get(), value).serialize(serializer)
    }
}

impl Serialize for ArchetypeRows<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let archetype = self.archetype;
        let mut out = serializer.serialize_struct("Archetype", 3)?;
        out.serialize_field("components", &Seq(self.entries.iter().map(|entry| entry.name)))?;
        let entities = if self.rows { archetype.entities() } else { &[] };
        out.serialize_field("entities", &Seq(entities.iter().map(|e| e.to_bits())))?;
        let columns = Seq((0..self.entries.len()).map(|column| Column {
            table: &archetype.table,
            column,
            rows: Rows::First(entities.len()),
            entry: &self.entries[column],
            now: self.now,
        }));
        out.serialize_field("columns", &columns)?;
        out.end()
    }
}

/// One sparse set: `component` (its name), `entities` (in dense order), `rows`.
#[derive(Clone, Copy)]
struct SparseRows<'a> {
    set: &'a SparseSet,
    entry: &'a SerdeEntry,
    /// The dense rows saved, in dense order.
    rows: &'a [usize],
    now: Tick,
}

impl Serialize for SparseRows<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let entities = self.set.entities();
        let mut out = serializer.serialize_struct("SparseSet", 3)?;
        out.serialize_field("component", self.entry.name)?;
        out.serialize_field(
            "entities",
            &Seq(self.rows.iter().map(|&row| entities[row].to_bits())),
        )?;
        let column = Column {
            table: self.set.table(),
            column: 0,
            rows: Rows::Some(self.rows),
            entry: self.entry,
            now: self.now,
        };
        out.serialize_field("rows", &column)?;
        out.end()
    }
}

/// Which rows of a column are saved.
#[derive(Clone, Copy)]
enum Rows<'a> {
    /// The first `n`.
    First(usize),
    /// These, in this order.
    Some(&'a [usize]),
}

/// One column: per row, `[added, changed, value]`.
#[derive(Clone, Copy)]
struct Column<'a> {
    table: &'a Table,
    column: usize,
    rows: Rows<'a>,
    entry: &'a SerdeEntry,
    now: Tick,
}

impl Serialize for Column<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let column = self.table.column(self.column);
        let (count, listed) = match self.rows {
            Rows::First(n) => (n, None),
            Rows::Some(rows) => (rows.len(), Some(rows)),
        };
        let mut seq = serializer.serialize_seq(Some(count))?;
        for i in 0..count {
            let row = listed.map_or(i, |rows| rows[i]);
            assert!(row < self.table.len(), "a saved row is a live row of its table");
            // SAFETY: `row` is below the table's length (asserted), so it holds a written
            // value and ticks; the snapshot borrows the world, so nothing writes the column
            // meanwhile.
            let (ptr, added, changed) = unsafe {
                (
                    column.ptr(row),
                    ComponentTicks::added_at(column.ticks_base(), row),
                    column.changed_of(row, self.now),
                )
            };
            // SAFETY: as above; the pointer is non-null (a live row's, or dangling and
            // aligned for a zero-sized value) and the borrow of the world outlives the
            // element's serialisation.
            let ptr = unsafe { Ptr::new(std::ptr::NonNull::new_unchecked(ptr)) };
            // SAFETY: `entry` is this column's component's (looked up by its id), so its
            // function was made for the column's type.
            let value = unsafe { (self.entry.serialize)(ptr, self.entry.size) };
            seq.serialize_element(&(added.get(), changed.get(), value))
                .map_err(|e| S::Error::custom(format_args!("component {}: {e}", self.entry.name)))?;
        }
        seq.end()
    }
}
