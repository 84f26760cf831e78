//! Writing a world: [`WorldSnapshot`], a serde view of everything a replay depends on.

use std::fmt;

use serde::ser::{Error as _, SerializeSeq, SerializeStruct};
use serde::{Serialize, Serializer};

use super::registry::SerdeEntry;
use crate::archetype::Archetype;
use crate::change::{ComponentTicks, Tick};
use crate::dynamic::Ptr;
use crate::entity::{AllocatorState, LaneHolder};
use crate::world::World;

/// The version of the save format [`WorldSnapshot`] writes.
pub const SAVE_FORMAT: u32 = 1;

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
    /// Per archetype, in creation order, its components' serde entries.
    archetypes: Vec<(&'w Archetype, Vec<SerdeEntry>)>,
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
    ///
    /// Every component of every archetype must be registered with
    /// [`register_serde`](Self::register_serde) — empty archetypes included, because a loaded
    /// world recreates them to create later archetypes in the same order (and so visit rows
    /// in the same order). A component that is not is an error naming it, never a silent
    /// gap in the save. Resources are not saved yet.
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
    /// [`SaveError::Unregistered`] naming the first component not registered for serde;
    /// [`SaveError::UnflushedReservations`] while reserved ids wait for a
    /// [`flush`](Self::flush).
    pub fn snapshot(&self) -> Result<WorldSnapshot<'_>, SaveError> {
        let entities = self
            .entities()
            .saved_state()
            .ok_or(SaveError::UnflushedReservations)?;
        let archetypes = (self.archetypes())
            .map(|archetype| {
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
                Ok((archetype, entries))
            })
            .collect::<Result<Vec<_>, SaveError>>()?;
        Ok(WorldSnapshot {
            world: self,
            entities,
            archetypes,
        })
    }
}

impl Serialize for WorldSnapshot<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let (change_tick, last_change_tick, next_check_tick) = self.world.clock();
        let mut world = serializer.serialize_struct("World", 7)?;
        world.serialize_field("format", &SAVE_FORMAT)?;
        world.serialize_field("tag", &self.world.tag())?;
        world.serialize_field("change_tick", &change_tick)?;
        world.serialize_field("last_change_tick", &last_change_tick.get())?;
        world.serialize_field("next_check_tick", &next_check_tick)?;
        world.serialize_field("entities", &Entities(&self.entities))?;
        let archetypes = Seq(self.archetypes.iter().map(|(archetype, entries)| ArchetypeRows {
            archetype,
            entries,
            now: Tick::new(change_tick as u32),
        }));
        world.serialize_field("archetypes", &archetypes)?;
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
    now: Tick,
}

impl Serialize for ArchetypeRows<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let archetype = self.archetype;
        let mut out = serializer.serialize_struct("Archetype", 3)?;
        out.serialize_field("components", &Seq(self.entries.iter().map(|entry| entry.name)))?;
        out.serialize_field("entities", &Seq(archetype.entities().iter().map(|e| e.to_bits())))?;
        let columns = Seq((0..self.entries.len()).map(|column| Column {
            archetype,
            column,
            entry: &self.entries[column],
            now: self.now,
        }));
        out.serialize_field("columns", &columns)?;
        out.end()
    }
}

/// One column: per row, `[added, changed, value]`.
#[derive(Clone, Copy)]
struct Column<'a> {
    archetype: &'a Archetype,
    column: usize,
    entry: &'a SerdeEntry,
    now: Tick,
}

impl Serialize for Column<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let column = self.archetype.table.column(self.column);
        let rows = self.archetype.len();
        let mut seq = serializer.serialize_seq(Some(rows))?;
        for row in 0..rows {
            // SAFETY: `row` is below the table's length, so it holds a written value and
            // ticks; the snapshot borrows the world, so nothing writes the column meanwhile.
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
            let value = unsafe { (self.entry.serialize)(ptr) };
            seq.serialize_element(&(added.get(), changed.get(), value))
                .map_err(|e| S::Error::custom(format_args!("component {}: {e}", self.entry.name)))?;
        }
        seq.end()
    }
}
