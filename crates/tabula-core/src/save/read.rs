//! The syntax of a save: serde seeds that read a save into plain vectors and staging
//! columns, resolving component names through the world's serde registry, before
//! `load.rs` checks and commits it. Nothing here touches the world.

use std::alloc::Layout;
use std::fmt;
use std::ptr::NonNull;

use serde::Deserialize;
use serde::de::{self, DeserializeSeed, Deserializer, Error as _, IgnoredAny, MapAccess, SeqAccess, Visitor};

use super::registry::{BoxedResource, MapFn, ResourceEntry, SerdeEntry};
use super::snapshot::SAVE_FORMAT;
use crate::change::Tick;
use crate::component::ComponentId;
use crate::entity::{AllocatorState, LaneHolder, LaneState};
use crate::world::World;

/// A save, deserialised and not yet checked.
pub(super) struct SavedWorld {
    pub(super) format: u32,
    pub(super) tag: u8,
    pub(super) change_tick: u64,
    pub(super) last_change_tick: u32,
    pub(super) next_check_tick: u64,
    pub(super) entities: AllocatorState,
    pub(super) archetypes: Vec<SavedArchetype>,
    pub(super) resources: Vec<SavedResource>,
    /// The sparse-set components, one set each.
    pub(super) sparse: Vec<SavedSparse>,
}

/// One sparse-set component of a save: its holders in the saved set's dense order, and
/// their values (row `r` of `column` is `entities[r]`'s).
pub(super) struct SavedSparse {
    pub(super) name: String,
    pub(super) id: ComponentId,
    pub(super) entities: Vec<u64>,
    pub(super) column: StagedColumn,
}

/// One resource of a save, deserialised.
pub(super) struct SavedResource {
    pub(super) entry: ResourceEntry,
    pub(super) added: Tick,
    pub(super) changed: Tick,
    pub(super) value: BoxedResource,
}

/// The allocator's part of a save, as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawEntities {
    generations: Vec<u32>,
    free: Vec<u32>,
    lanes: Vec<(u64, bool, String)>,
    slot_limit: u32,
    flushed_positions: u64,
}

impl RawEntities {
    fn into_state<E: de::Error>(self) -> Result<AllocatorState, E> {
        let lanes = (self.lanes.into_iter())
            .map(|(block, ran, holder)| {
                let holder = match holder.as_str() {
                    "shared" => LaneHolder::Shared,
                    "owned" => LaneHolder::Owned,
                    "released" => LaneHolder::Released,
                    "free" => LaneHolder::Free,
                    other => {
                        return Err(E::custom(format_args!(
                            "unknown lane holder \"{other}\" (shared, owned, released or free)"
                        )));
                    }
                };
                Ok(LaneState { block, ran, holder })
            })
            .collect::<Result<_, E>>()?;
        Ok(AllocatorState {
            generations: self.generations,
            free: self.free,
            lanes,
            slot_limit: self.slot_limit,
            flushed_positions: self.flushed_positions,
        })
    }
}

/// One archetype of a save: its component set (sorted ids of this world) and rows.
pub(super) struct SavedArchetype {
    pub(super) names: Vec<String>,
    pub(super) set: Vec<ComponentId>,
    pub(super) entities: Vec<u64>,
    /// In the order of `set`.
    pub(super) columns: Vec<StagedColumn>,
}

/// Component values of one column, deserialised into memory laid out for the component's
/// type, with their ticks. Owns the values it holds: dropping it drops them.
pub(super) struct StagedColumn {
    pub(super) id: ComponentId,
    pub(super) name: &'static str,
    /// The component's entity mapping, when registered with one.
    pub(super) map: Option<MapFn>,
    pub(super) layout: Layout,
    drop: Option<unsafe fn(*mut u8)>,
    data: NonNull<u8>,
    capacity: usize,
    /// Rows `0..len` hold initialised values.
    len: usize,
    pub(super) ticks: Vec<(Tick, Tick)>,
}

// SAFETY: the staged values are component values, which are `Send` (a component is
// `Send + Sync`); the column is only moved between threads whole, as a `Vec<T>` would be.
unsafe impl Send for StagedColumn {}

impl StagedColumn {
    fn new(id: ComponentId, entry: &SerdeEntry, layout: Layout, drop: Option<unsafe fn(*mut u8)>) -> Self {
        Self {
            id,
            name: entry.name,
            map: entry.map,
            layout,
            drop,
            // Aligned and non-null: all a zero-sized value needs, and never dereferenced
            // before `reserve_one` allocates for a sized one.
            data: NonNull::new(std::ptr::without_provenance_mut(layout.align())).expect("align > 0"),
            capacity: if layout.size() == 0 { usize::MAX } else { 0 },
            len: 0,
            ticks: Vec::new(),
        }
    }

    /// The layout of `capacity` values.
    fn array(&self, capacity: usize) -> Option<Layout> {
        let size = self.layout.size().checked_mul(capacity)?;
        Layout::from_size_align(size, self.layout.align()).ok()
    }

    /// Makes room for one more value; `false` when that is more memory than can be asked for.
    fn reserve_one(&mut self) -> bool {
        if self.len < self.capacity {
            return true;
        }
        let capacity = self.capacity.max(4).saturating_mul(2);
        let Some(new) = self.array(capacity) else {
            return false;
        };
        let data = if self.capacity == 0 {
            // SAFETY: `new` has a non-zero size (a sized value, at least 8 of them).
            unsafe { std::alloc::alloc(new) }
        } else {
            let old = self
                .array(self.capacity)
                .expect("the current allocation's layout");
            // SAFETY: `data` was allocated with `old` (the same alignment), and `new`'s
            // size is non-zero and was checked not to overflow.
            unsafe { std::alloc::realloc(self.data.as_ptr(), old, new.size()) }
        };
        let Some(data) = NonNull::new(data) else {
            std::alloc::handle_alloc_error(new);
        };
        self.data = data;
        self.capacity = capacity;
        true
    }

    /// Row `row`'s place.
    pub(super) fn ptr(&self, row: usize) -> *mut u8 {
        // SAFETY (of the arithmetic): `row <= capacity`, within (or one past) the allocation;
        // for a zero-sized value the offset is 0.
        self.data.as_ptr().wrapping_add(row * self.layout.size())
    }

    /// How many values the column holds.
    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// Forgets the values without dropping them (they were moved out).
    pub(super) fn forget(&mut self) {
        self.len = 0;
    }
}

impl Drop for StagedColumn {
    fn drop(&mut self) {
        if let Some(drop) = self.drop {
            for row in 0..self.len {
                // SAFETY: rows `0..len` hold initialised values of the component, dropped
                // once here; `drop` is the component's own drop function.
                unsafe { drop(self.ptr(row)) };
            }
        }
        if self.layout.size() != 0
            && self.capacity != 0
            && let Some(layout) = self.array(self.capacity)
        {
            // SAFETY: allocated with this layout by `reserve_one`.
            unsafe { std::alloc::dealloc(self.data.as_ptr(), layout) };
        }
    }
}

/// The top level of a save.
pub(super) struct WorldSeed<'w> {
    pub(super) world: &'w World,
}

const WORLD_FIELDS: &[&str] = &[
    "format",
    "tag",
    "change_tick",
    "last_change_tick",
    "next_check_tick",
    "entities",
    "archetypes",
    "resources",
    "sparse",
];

impl<'de> DeserializeSeed<'de> for WorldSeed<'_> {
    type Value = SavedWorld;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<SavedWorld, D::Error> {
        deserializer.deserialize_struct("World", WORLD_FIELDS, self)
    }
}

/// Collects named fields in any order (a map) or in `WORLD_FIELDS` order (a sequence).
#[derive(Default)]
struct WorldParts {
    format: Option<u32>,
    tag: Option<u8>,
    change_tick: Option<u64>,
    last_change_tick: Option<u32>,
    next_check_tick: Option<u64>,
    entities: Option<RawEntities>,
    archetypes: Option<Vec<SavedArchetype>>,
    resources: Option<Vec<SavedResource>>,
    sparse: Option<Vec<SavedSparse>>,
}

impl WorldParts {
    fn finish<E: de::Error>(self) -> Result<SavedWorld, E> {
        fn need<T, E: de::Error>(value: Option<T>, name: &'static str) -> Result<T, E> {
            value.ok_or_else(|| E::missing_field(name))
        }
        Ok(SavedWorld {
            format: need(self.format, "format")?,
            tag: need(self.tag, "tag")?,
            change_tick: need(self.change_tick, "change_tick")?,
            last_change_tick: need(self.last_change_tick, "last_change_tick")?,
            next_check_tick: need(self.next_check_tick, "next_check_tick")?,
            entities: need(self.entities, "entities")?.into_state()?,
            archetypes: need(self.archetypes, "archetypes")?,
            resources: need(self.resources, "resources")?,
            sparse: need(self.sparse, "sparse")?,
        })
    }
}

impl<'de> Visitor<'de> for WorldSeed<'_> {
    type Value = SavedWorld;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a saved tabula world")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<SavedWorld, A::Error> {
        let missing = |name| A::Error::missing_field(name);
        let format = seq.next_element()?.ok_or_else(|| missing("format"))?;
        check_format(format)?;
        let parts = WorldParts {
            format: Some(format),
            tag: Some(seq.next_element()?.ok_or_else(|| missing("tag"))?),
            change_tick: Some(seq.next_element()?.ok_or_else(|| missing("change_tick"))?),
            last_change_tick: Some(seq.next_element()?.ok_or_else(|| missing("last_change_tick"))?),
            next_check_tick: Some(seq.next_element()?.ok_or_else(|| missing("next_check_tick"))?),
            entities: Some(seq.next_element()?.ok_or_else(|| missing("entities"))?),
            archetypes: Some(
                seq.next_element_seed(ArchetypesSeed { world: self.world })?
                    .ok_or_else(|| missing("archetypes"))?,
            ),
            resources: Some(
                seq.next_element_seed(ResourcesSeed { world: self.world })?
                    .ok_or_else(|| missing("resources"))?,
            ),
            sparse: Some(
                seq.next_element_seed(SparseSetsSeed { world: self.world })?
                    .ok_or_else(|| missing("sparse"))?,
            ),
        };
        parts.finish()
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<SavedWorld, A::Error> {
        let mut parts = WorldParts::default();
        while let Some(key) = map.next_key::<String>()? {
            fn once<T, E: de::Error>(slot: &mut Option<T>, value: T, name: &'static str) -> Result<(), E> {
                if slot.replace(value).is_some() {
                    return Err(E::duplicate_field(name));
                }
                Ok(())
            }
            match key.as_str() {
                "format" => {
                    let format = map.next_value()?;
                    check_format(format)?;
                    once(&mut parts.format, format, "format")?;
                }
                "tag" => once(&mut parts.tag, map.next_value()?, "tag")?,
                "change_tick" => once(&mut parts.change_tick, map.next_value()?, "change_tick")?,
                "last_change_tick" => {
                    once(&mut parts.last_change_tick, map.next_value()?, "last_change_tick")?
                }
                "next_check_tick" => once(&mut parts.next_check_tick, map.next_value()?, "next_check_tick")?,
                "entities" => once(&mut parts.entities, map.next_value()?, "entities")?,
                "archetypes" => {
                    let value = map.next_value_seed(ArchetypesSeed { world: self.world })?;
                    once(&mut parts.archetypes, value, "archetypes")?;
                }
                "resources" => {
                    let value = map.next_value_seed(ResourcesSeed { world: self.world })?;
                    once(&mut parts.resources, value, "resources")?;
                }
                "sparse" => {
                    let value = map.next_value_seed(SparseSetsSeed { world: self.world })?;
                    once(&mut parts.sparse, value, "sparse")?;
                }
                other => return Err(A::Error::unknown_field(other, WORLD_FIELDS)),
            }
        }
        parts.finish()
    }
}

/// Refuses a save of another format version as soon as its version is read, before the
/// rest (laid out as that version lays it out) fails to parse with a less helpful message.
/// A map may list `format` after other fields: they are read first, and may fail first.
fn check_format<E: de::Error>(format: u32) -> Result<(), E> {
    if format == SAVE_FORMAT {
        return Ok(());
    }
    let which = if format < SAVE_FORMAT {
        "an older"
    } else {
        "a newer"
    };
    Err(E::custom(format_args!(
        "the save is of format version {format}, {which} version than this build reads (version \
         {SAVE_FORMAT}); load it with the build that wrote it"
    )))
}

/// The sparse-set list.
struct SparseSetsSeed<'w> {
    world: &'w World,
}

impl<'de> DeserializeSeed<'de> for SparseSetsSeed<'_> {
    type Value = Vec<SavedSparse>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for SparseSetsSeed<'_> {
    type Value = Vec<SavedSparse>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a list of sparse sets")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut sets: Vec<SavedSparse> = Vec::new();
        while let Some(set) = seq.next_element_seed(SparseSeed { world: self.world })? {
            if sets.iter().any(|other| other.id == set.id) {
                return Err(A::Error::custom(format_args!(
                    "sparse component \"{}\" is saved twice",
                    set.name
                )));
            }
            sets.push(set);
        }
        Ok(sets)
    }
}

/// One sparse set: `component` (its name), `entities` (in dense order), `rows`.
struct SparseSeed<'w> {
    world: &'w World,
}

const SPARSE_FIELDS: &[&str] = &["component", "entities", "rows"];

impl<'de> DeserializeSeed<'de> for SparseSeed<'_> {
    type Value = SavedSparse;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_struct("SparseSet", SPARSE_FIELDS, self)
    }
}

impl SparseSeed<'_> {
    fn resolve<E: de::Error>(&self, name: &str) -> Result<(ComponentId, SerdeEntry), E> {
        let id = self.world.serde.id_by_name(name).ok_or_else(|| {
            E::custom(format_args!(
                "unknown component name \"{name}\" (a sparse set): no component is registered \
                 under it here (World::register_serde)"
            ))
        })?;
        Ok((id, *self.world.serde.get(id).expect("registered by name")))
    }

    /// The seed of the set's rows.
    fn rows(&self, id: ComponentId, entry: SerdeEntry, rows: usize) -> ColumnSeed {
        let info = self.world.components().info(id);
        ColumnSeed {
            column: StagedColumn::new(id, &entry, info.layout(), info.drop_fn()),
            entry,
            rows,
        }
    }
}

impl<'de> Visitor<'de> for SparseSeed<'_> {
    type Value = SavedSparse;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a sparse set: its component, entities and rows")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let name: String = seq
            .next_element()?
            .ok_or_else(|| A::Error::missing_field("component"))?;
        let (id, entry) = self.resolve(&name)?;
        let entities: Vec<u64> = seq
            .next_element()?
            .ok_or_else(|| A::Error::missing_field("entities"))?;
        let column = seq
            .next_element_seed(self.rows(id, entry, entities.len()))?
            .ok_or_else(|| A::Error::missing_field("rows"))?;
        Ok(SavedSparse {
            name,
            id,
            entities,
            column,
        })
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut name: Option<(String, ComponentId, SerdeEntry)> = None;
        let mut entities: Option<Vec<u64>> = None;
        let mut column = None;
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "component" if name.is_none() => {
                    let value: String = map.next_value()?;
                    let (id, entry) = self.resolve(&value)?;
                    name = Some((value, id, entry));
                }
                "entities" if entities.is_none() => entities = Some(map.next_value()?),
                "rows" if column.is_none() => {
                    let (Some((_, id, entry)), Some(entities)) = (&name, &entities) else {
                        return Err(A::Error::custom(
                            "a sparse set's rows come after its component and entities",
                        ));
                    };
                    column = Some(map.next_value_seed(self.rows(*id, *entry, entities.len()))?);
                }
                "component" | "entities" | "rows" => {
                    return Err(A::Error::custom(format_args!("duplicate field `{key}`")));
                }
                other => return Err(A::Error::unknown_field(other, SPARSE_FIELDS)),
            }
        }
        let (name, id, _) = name.ok_or_else(|| A::Error::missing_field("component"))?;
        let entities = entities.ok_or_else(|| A::Error::missing_field("entities"))?;
        let column = column.ok_or_else(|| A::Error::missing_field("rows"))?;
        Ok(SavedSparse {
            name,
            id,
            entities,
            column,
        })
    }
}

/// The archetype list.
struct ArchetypesSeed<'w> {
    world: &'w World,
}

impl<'de> DeserializeSeed<'de> for ArchetypesSeed<'_> {
    type Value = Vec<SavedArchetype>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for ArchetypesSeed<'_> {
    type Value = Vec<SavedArchetype>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a list of archetypes")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut archetypes = Vec::new();
        while let Some(archetype) = seq.next_element_seed(ArchetypeSeed { world: self.world })? {
            archetypes.push(archetype);
        }
        Ok(archetypes)
    }
}

/// One archetype: `components`, then `entities`, then `columns`.
struct ArchetypeSeed<'w> {
    world: &'w World,
}

const ARCHETYPE_FIELDS: &[&str] = &["components", "entities", "columns"];

impl<'de> DeserializeSeed<'de> for ArchetypeSeed<'_> {
    type Value = SavedArchetype;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_struct("Archetype", ARCHETYPE_FIELDS, self)
    }
}

impl ArchetypeSeed<'_> {
    /// The components named, in save order, with their serde entries; an error names an
    /// unknown or repeated name.
    fn resolve<E: de::Error>(&self, names: &[String]) -> Result<Vec<(ComponentId, SerdeEntry)>, E> {
        let mut resolved: Vec<(ComponentId, SerdeEntry)> = Vec::with_capacity(names.len());
        for name in names {
            let id = self.world.serde.id_by_name(name).ok_or_else(|| {
                E::custom(format_args!(
                    "unknown component name \"{name}\": no component is registered under it here \
                     (World::register_serde)"
                ))
            })?;
            if resolved.iter().any(|&(other, _)| other == id) {
                return Err(E::custom(format_args!(
                    "component \"{name}\" is listed twice in an archetype"
                )));
            }
            let entry = *self.world.serde.get(id).expect("registered by name");
            resolved.push((id, entry));
        }
        Ok(resolved)
    }

    fn finish<E: de::Error>(
        names: Vec<String>,
        resolved: &[(ComponentId, SerdeEntry)],
        entities: Vec<u64>,
        columns: Vec<StagedColumn>,
    ) -> Result<SavedArchetype, E> {
        let mut set: Vec<ComponentId> = resolved.iter().map(|&(id, _)| id).collect();
        set.sort_unstable();
        let mut columns = columns;
        columns.sort_unstable_by_key(|column| column.id);
        Ok(SavedArchetype {
            names,
            set,
            entities,
            columns,
        })
    }
}

impl<'de> Visitor<'de> for ArchetypeSeed<'_> {
    type Value = SavedArchetype;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an archetype: its components, entities and columns")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let names: Vec<String> = seq
            .next_element()?
            .ok_or_else(|| A::Error::missing_field("components"))?;
        let resolved = self.resolve(&names)?;
        let entities: Vec<u64> = seq
            .next_element()?
            .ok_or_else(|| A::Error::missing_field("entities"))?;
        let columns = seq
            .next_element_seed(ColumnsSeed {
                world: self.world,
                resolved: &resolved,
                rows: entities.len(),
            })?
            .ok_or_else(|| A::Error::missing_field("columns"))?;
        Self::finish(names, &resolved, entities, columns)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut names: Option<(Vec<String>, Vec<(ComponentId, SerdeEntry)>)> = None;
        let mut entities: Option<Vec<u64>> = None;
        let mut columns = None;
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "components" if names.is_none() => {
                    let list: Vec<String> = map.next_value()?;
                    let resolved = self.resolve(&list)?;
                    names = Some((list, resolved));
                }
                "entities" if entities.is_none() => entities = Some(map.next_value()?),
                "columns" if columns.is_none() => {
                    let (Some((_, resolved)), Some(entities)) = (&names, &entities) else {
                        return Err(A::Error::custom(
                            "an archetype's columns come after its components and entities",
                        ));
                    };
                    columns = Some(map.next_value_seed(ColumnsSeed {
                        world: self.world,
                        resolved,
                        rows: entities.len(),
                    })?);
                }
                "components" | "entities" | "columns" => {
                    return Err(A::Error::custom(format_args!("duplicate field `{key}`")));
                }
                other => return Err(A::Error::unknown_field(other, ARCHETYPE_FIELDS)),
            }
        }
        let (names, resolved) = names.ok_or_else(|| A::Error::missing_field("components"))?;
        let entities = entities.ok_or_else(|| A::Error::missing_field("entities"))?;
        let columns = columns.ok_or_else(|| A::Error::missing_field("columns"))?;
        Self::finish(names, &resolved, entities, columns)
    }
}

/// An archetype's columns, one per component named, each `rows` long.
struct ColumnsSeed<'a> {
    world: &'a World,
    resolved: &'a [(ComponentId, SerdeEntry)],
    rows: usize,
}

impl<'de> DeserializeSeed<'de> for ColumnsSeed<'_> {
    type Value = Vec<StagedColumn>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for ColumnsSeed<'_> {
    type Value = Vec<StagedColumn>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} columns", self.resolved.len())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut columns = Vec::with_capacity(self.resolved.len());
        for &(id, entry) in self.resolved {
            let info = self.world.components().info(id);
            let column = StagedColumn::new(id, &entry, info.layout(), info.drop_fn());
            let column = seq
                .next_element_seed(ColumnSeed {
                    column,
                    entry,
                    rows: self.rows,
                })?
                .ok_or_else(|| {
                    A::Error::custom(format_args!("no column for component \"{}\"", entry.name))
                })?;
            columns.push(column);
        }
        if seq.next_element::<IgnoredAny>()?.is_some() {
            return Err(A::Error::custom("more columns than components"));
        }
        Ok(columns)
    }
}

/// One column: `rows` of `(added, changed, value)`.
struct ColumnSeed {
    column: StagedColumn,
    entry: SerdeEntry,
    rows: usize,
}

impl<'de> DeserializeSeed<'de> for ColumnSeed {
    type Value = StagedColumn;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for ColumnSeed {
    type Value = StagedColumn;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} rows of component \"{}\"", self.rows, self.entry.name)
    }

    fn visit_seq<A: SeqAccess<'de>>(mut self, mut seq: A) -> Result<Self::Value, A::Error> {
        let name = self.entry.name;
        for row in 0..self.rows {
            if !self.column.reserve_one() {
                return Err(A::Error::custom(format_args!(
                    "too many rows of component \"{name}\""
                )));
            }
            let written = std::cell::Cell::new(false);
            let out = self.column.ptr(self.column.len);
            let row_result = seq.next_element_seed(RowSeed {
                out,
                entry: self.entry,
                written: &written,
            });
            let ticks = match row_result {
                Ok(Some(ticks)) => ticks,
                Ok(None) => {
                    return Err(A::Error::custom(format_args!(
                        "component \"{name}\" has {row} rows, but the archetype has {} entities",
                        self.rows
                    )));
                }
                Err(e) => {
                    // The value may be written and the row refused after it (a bad element
                    // after the value, or a format's check at the row's end): the column
                    // does not count it, so it is dropped here.
                    if written.get()
                        && let Some(drop) = self.column.drop
                    {
                        // SAFETY: `out` holds the value `ValueSeed` wrote (`written`), not
                        // counted by the column, and dropped once here.
                        unsafe { drop(out) };
                    }
                    return Err(A::Error::custom(format_args!(
                        "component \"{name}\", row {row}: {e}"
                    )));
                }
            };
            // The row's value is written (`RowSeed` returned `Ok`).
            self.column.len += 1;
            self.column.ticks.push(ticks);
        }
        if seq.next_element::<IgnoredAny>()?.is_some() {
            return Err(A::Error::custom(format_args!(
                "component \"{name}\" has more rows than the archetype's {} entities",
                self.rows
            )));
        }
        Ok(self.column)
    }
}

/// One row: `(added, changed, value)`, the value written to `out`.
struct RowSeed<'a> {
    out: *mut u8,
    entry: SerdeEntry,
    /// Set once the value is written, so that the column drops it when the row is refused
    /// after that.
    written: &'a std::cell::Cell<bool>,
}

impl<'de> DeserializeSeed<'de> for RowSeed<'_> {
    type Value = (Tick, Tick);

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_tuple(3, self)
    }
}

impl<'de> Visitor<'de> for RowSeed<'_> {
    type Value = (Tick, Tick);

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a row: [added tick, changed tick, value]")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let added: u32 = seq
            .next_element()?
            .ok_or_else(|| A::Error::invalid_length(0, &self))?;
        let changed: u32 = seq
            .next_element()?
            .ok_or_else(|| A::Error::invalid_length(1, &self))?;
        let entry = self.entry;
        seq.next_element_seed(ValueSeed { out: self.out, entry })?
            .ok_or_else(|| A::Error::invalid_length(2, &self))?;
        self.written.set(true);
        if seq.next_element::<IgnoredAny>()?.is_some() {
            return Err(A::Error::invalid_length(4, &self));
        }
        Ok((Tick::new(added), Tick::new(changed)))
    }
}

/// One value, deserialised through the component's erased function into `out`.
struct ValueSeed {
    out: *mut u8,
    entry: SerdeEntry,
}

impl<'de> DeserializeSeed<'de> for ValueSeed {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        let mut erased = <dyn erased_serde::Deserializer>::erase(deserializer);
        // SAFETY: `out` is the staging column's next row: allocated (`reserve_one`), aligned
        // for the component and holding nothing; `entry` is that component's, so its
        // function writes a value of the column's type.
        unsafe { (self.entry.deserialize)(&mut erased, self.out, self.entry.size) }.map_err(de::Error::custom)
    }
}

/// The resource list: `[name, added, changed, value]` each.
struct ResourcesSeed<'w> {
    world: &'w World,
}

impl<'de> DeserializeSeed<'de> for ResourcesSeed<'_> {
    type Value = Vec<SavedResource>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for ResourcesSeed<'_> {
    type Value = Vec<SavedResource>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a list of resources")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut resources: Vec<SavedResource> = Vec::new();
        while let Some(resource) = seq.next_element_seed(ResourceSeed { world: self.world })? {
            if resources.iter().any(|r| r.entry.id == resource.entry.id) {
                return Err(A::Error::custom(format_args!(
                    "resource \"{}\" is saved twice",
                    resource.entry.name
                )));
            }
            resources.push(resource);
        }
        Ok(resources)
    }
}

/// One resource.
struct ResourceSeed<'w> {
    world: &'w World,
}

impl<'de> DeserializeSeed<'de> for ResourceSeed<'_> {
    type Value = SavedResource;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_tuple(4, self)
    }
}

impl<'de> Visitor<'de> for ResourceSeed<'_> {
    type Value = SavedResource;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a resource: [name, added tick, changed tick, value]")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let name: String = seq
            .next_element()?
            .ok_or_else(|| A::Error::invalid_length(0, &self))?;
        let entry = *self.world.serde.resource_by_name(&name).ok_or_else(|| {
            A::Error::custom(format_args!(
                "unknown resource name \"{name}\": no resource is registered under it here \
                 (World::register_serde_resource)"
            ))
        })?;
        let added: u32 = seq
            .next_element()?
            .ok_or_else(|| A::Error::invalid_length(1, &self))?;
        let changed: u32 = seq
            .next_element()?
            .ok_or_else(|| A::Error::invalid_length(2, &self))?;
        let value = seq
            .next_element_seed(ResourceValueSeed { entry })
            .map_err(|e| A::Error::custom(format_args!("resource \"{name}\": {e}")))?
            .ok_or_else(|| A::Error::invalid_length(3, &self))?;
        if seq.next_element::<IgnoredAny>()?.is_some() {
            return Err(A::Error::invalid_length(5, &self));
        }
        Ok(SavedResource {
            entry,
            added: Tick::new(added),
            changed: Tick::new(changed),
            value,
        })
    }
}

/// One resource's value, through its erased function.
struct ResourceValueSeed {
    entry: ResourceEntry,
}

impl<'de> DeserializeSeed<'de> for ResourceValueSeed {
    type Value = BoxedResource;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<BoxedResource, D::Error> {
        let mut erased = <dyn erased_serde::Deserializer>::erase(deserializer);
        (self.entry.deserialize)(&mut erased).map_err(de::Error::custom)
    }
}
