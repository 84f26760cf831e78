//! Reading a world back: [`World::load`].
//!
//! A save file is hostile until checked. Loading runs in two phases, and only the second
//! touches the world:
//!
//! 1. *Build aside*: the input is deserialised (`read.rs`) into plain vectors and, for
//!    component values, type-erased staging columns (`StagedColumn`) laid out for each
//!    component; names are resolved through the registry, and every rule a world keeps is checked (ids within the
//!    allocator, generations equal to their slot's, no id twice, free and retired slots
//!    consistent, distinct archetypes, as many rows per column as entities). Any error drops
//!    what was built (values included) and leaves the world as it was.
//! 2. *Commit*: the archetypes are created in the saved order with room for their rows (the
//!    one step that can fail, out of memory, before any entity exists), the allocator is
//!    rebuilt from its parts, and each row's values are moved from the staging columns into
//!    the tables with their saved ticks, and each sparse set's values into this world's set
//!    in the saved dense order.

use std::fmt;

use serde::de::{DeserializeSeed, Deserializer};

use super::map::TableMapper;
use super::read::{SavedResource, SavedSparse, SavedWorld, WorldSeed};
use super::snapshot::SAVE_FORMAT;
use crate::change::{ComponentTicks, Tick};
use crate::component::ComponentId;
use crate::entity::{Entities, Entity, GENERATION_BITS, GENERATION_MASK, LaneHolder, LaneState};
use crate::hierarchy::{Children, Parent};
use crate::location::{ArchetypeId, EntityLocation};
use crate::world::World;

/// The most reservation lanes a save may record.
const MAX_LANES: usize = 1 << 16;

/// Why a save could not be loaded. The world loaded into is unchanged.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LoadError {
    /// The world already has entities, archetypes of its own, reservation lanes or reserved
    /// ids: a save loads only into a world fresh from [`World::new`] (components may be
    /// registered).
    NotEmpty(String),
    /// The input is not a save: malformed or truncated, a field of the wrong type, or a
    /// component name no component is registered under. The deserialiser's message.
    Malformed(String),
    /// The input is a well-formed save whose content no world can have: an id beyond the
    /// allocator, a generation its slot never had, an id twice, a free list naming a live
    /// slot, two archetypes with one component set, ...
    Invalid(String),
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotEmpty(what) => write!(
                f,
                "cannot load into this world: it {what}; load into a world fresh from World::new \
                 (registering components first is fine)"
            ),
            Self::Malformed(message) => write!(f, "cannot load: malformed save: {message}"),
            Self::Invalid(message) => write!(f, "cannot load: invalid save: {message}"),
        }
    }
}

impl std::error::Error for LoadError {}

fn invalid(message: impl Into<String>) -> LoadError {
    LoadError::Invalid(message.into())
}

impl World {
    /// Loads a save written from a [`WorldSnapshot`](crate::WorldSnapshot) into this world,
    /// which must be empty (fresh from [`World::new`]; registering components first is
    /// needed, and fine). Everything a replay depends on comes back: the world tag (the
    /// world takes the saved one), every slot's generation, the free list in order, retired
    /// slots, the reservation lanes with their blocks, the archetypes in creation order with
    /// their rows in row order, each sparse set's values in its dense order, the change
    /// clock and each value's `added` and `changed` ticks. So queries visit rows in the saved
    /// order, and the next ids spawned are those the saved world would have spawned.
    ///
    /// A component loads into the storage it was saved from: a component the save holds in
    /// a [sparse set](crate::ComponentRegistration::sparse_set) must be registered sparse
    /// here before loading, and one it holds in the tables must not be (a mismatch is
    /// [`LoadError::Invalid`] naming the component).
    ///
    /// Lanes the saved world had owners for (a schedule's command-recording systems) are
    /// held for new owners: the next [`add_entity_lane`](Self::add_entity_lane) calls — a
    /// schedule's systems binding to this world, in the order they were added — get them,
    /// lowest first, so a schedule built as the saving one was spawns the same ids.
    /// [`release_loaded_lanes`](Self::release_loaded_lanes) gives them up.
    ///
    /// No hook or observer runs: the loaded components were added in the saved world.
    ///
    /// ```
    /// use serde::{Deserialize, Serialize};
    /// use tabula::World;
    ///
    /// #[derive(Debug, PartialEq, Serialize, Deserialize)]
    /// struct Position(f32, f32);
    ///
    /// let mut world = World::new();
    /// world.register_serde::<Position>("Position");
    /// let a = world.spawn((Position(1.0, 2.0),));
    /// let json = serde_json::to_string(&world.snapshot()?)?;
    ///
    /// let mut loaded = World::new();
    /// loaded.register_serde::<Position>("Position");
    /// loaded.load(&mut serde_json::Deserializer::from_str(&json))?;
    /// assert_eq!(loaded.get::<Position>(a)?, &Position(1.0, 2.0));
    /// assert_eq!(loaded.spawn(()), world.spawn(()), "the same next id");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`LoadError::NotEmpty`] for a world that is not empty, [`LoadError::Malformed`] for
    /// input that is not a save (or names a component not registered here),
    /// [`LoadError::Invalid`] for a save no world can have. The world is unchanged.
    pub fn load<'de, D: Deserializer<'de>>(&mut self, deserializer: D) -> Result<(), LoadError> {
        self.check_empty()?;
        let saved = WorldSeed { world: self }
            .deserialize(deserializer)
            .map_err(|e| LoadError::Malformed(e.to_string()))?;
        let placed = self.check(&saved, false)?;
        self.commit(saved, &placed);
        Ok(())
    }

    /// Loads a save into this world as new entities, beside those it has: each saved entity
    /// gets a fresh id from this world's allocator, and every [`Entity`] held by a
    /// component or resource registered with
    /// [`register_serde_mapped`](Self::register_serde_mapped) (the hierarchy's
    /// [`Parent`](crate::Parent) and [`Children`](crate::Children), user relationships, any
    /// type implementing [`MapEntities`](crate::MapEntities)) is rewritten to the new ids,
    /// so relationships come out between the loaded entities. Returns the map from each
    /// saved id to its new one.
    ///
    /// Unlike [`load`](Self::load), this keeps the world's own allocator, tag, clock and
    /// lanes: it is for save games, prefabs and levels merged into a running world, not for
    /// replays. The loaded values' `added` and `changed` ticks are now (they are new to this
    /// world); sparse values go after those this world's sets hold, in their saved order;
    /// saved resources replace this world's. No hook or observer runs: both sides of
    /// every saved relationship are in the save. Reserved ids are [flushed](Self::flush)
    /// first.
    ///
    /// ```
    /// use serde::{Deserialize, Serialize};
    /// use tabula::{Parent, World};
    ///
    /// #[derive(Debug, PartialEq, Serialize, Deserialize)]
    /// struct Name(String);
    ///
    /// fn registered() -> World {
    ///     let mut world = World::new();
    ///     world.register_serde::<Name>("Name");
    ///     world.register_serde_mapped::<Parent>("Parent");
    ///     world.register_serde_mapped::<tabula::Children>("Children");
    ///     world
    /// }
    ///
    /// let mut saved = registered();
    /// let ship = saved.spawn((Name("ship".into()),));
    /// let turret = saved.spawn((Name("turret".into()), Parent::new(ship)));
    /// let json = serde_json::to_string(&saved.snapshot()?)?;
    ///
    /// let mut world = registered();
    /// let other = world.spawn((Name("station".into()),)); // takes the id `ship` had
    /// let map = world.load_remapped(&mut serde_json::Deserializer::from_str(&json))?;
    /// let (new_ship, new_turret) = (map[&ship], map[&turret]);
    /// assert_ne!(new_ship, other);
    /// assert_eq!(world.get::<Name>(new_ship)?, &Name("ship".into()));
    /// assert_eq!(world.parent(new_turret)?, Some(new_ship));
    /// assert_eq!(world.children(new_ship)?, &[new_turret]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`LoadError::Malformed`] and [`LoadError::Invalid`] as for [`load`](Self::load), and
    /// [`LoadError::Invalid`] when a mapped component holds an entity the save does not hold
    /// (it could not be mapped), or the save has more entities than this world has free
    /// slots. The world is unchanged (but for the flush of reserved ids).
    pub fn load_remapped<'de, D: Deserializer<'de>>(
        &mut self,
        deserializer: D,
    ) -> Result<std::collections::HashMap<Entity, Entity>, LoadError> {
        self.flush();
        let mut saved = WorldSeed { world: self }
            .deserialize(deserializer)
            .map_err(|e| LoadError::Malformed(e.to_string()))?;
        let placed = self.check(&saved, true)?;
        let room = self.entities().room();
        if placed.len() > room {
            return Err(invalid(format!(
                "the save has {} entities, more than the {room} entity slots this world has free",
                placed.len()
            )));
        }
        check_references(&mut saved, &placed)?;
        Ok(self.commit_remapped(saved, &placed))
    }

    /// Gives up the reservation lanes a [`load`](Self::load) held for the saved world's
    /// owners and that no new owner took: they are released, as when an owner is dropped,
    /// and reused by later owners lowest first.
    ///
    /// ```
    /// use tabula::World;
    ///
    /// let mut world = World::new();
    /// let lane = world.add_entity_lane(); // a schedule's system would hold it
    /// let json = serde_json::to_string(&world.snapshot()?)?;
    /// let mut loaded = World::new();
    /// loaded.load(&mut serde_json::Deserializer::from_str(&json))?;
    /// loaded.release_loaded_lanes();
    /// assert_eq!(loaded.entity_lane_count(), 2, "still there, waiting for an owner");
    /// assert_eq!(loaded.add_entity_lane().index(), lane.index());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn release_loaded_lanes(&mut self) {
        self.entities_for_load().release_restored_lanes();
    }

    fn check_empty(&self) -> Result<(), LoadError> {
        if !self.is_empty() {
            return Err(LoadError::NotEmpty(format!("has {} entities", self.len())));
        }
        if self.entities().slots() > 0 {
            return Err(LoadError::NotEmpty(format!(
                "has used {} entity slots",
                self.entities().slots()
            )));
        }
        if self.entity_lane_count() > 1 {
            return Err(LoadError::NotEmpty(format!(
                "has {} reservation lanes (a schedule ran on it)",
                self.entity_lane_count() - 1
            )));
        }
        if self.entities().saved_state().is_none() {
            return Err(LoadError::NotEmpty("has reserved entity ids".into()));
        }
        Ok(())
    }

    /// Phase 1's checks of everything but the syntax; returns each live entity's location.
    /// `remap`: for [`load_remapped`](Self::load_remapped), which does not need this world's
    /// archetypes to be a prefix of the save's.
    fn check(&self, saved: &SavedWorld, remap: bool) -> Result<Vec<(Entity, EntityLocation)>, LoadError> {
        if saved.format != SAVE_FORMAT {
            return Err(invalid(format!(
                "format version {} (this build reads version {SAVE_FORMAT})",
                saved.format
            )));
        }
        let tag = saved.tag;
        let state = &saved.entities;
        let slots = state.generations.len();
        if slots > crate::entity::MAX_SLOTS as usize {
            return Err(invalid(format!("{slots} entity slots, more than any world has")));
        }
        for (index, &word) in state.generations.iter().enumerate() {
            if word >> GENERATION_BITS != u32::from(tag) || word & GENERATION_MASK == 0 {
                return Err(invalid(format!(
                    "slot {index}'s generation word {word:#x} is not one of world tag {tag}"
                )));
            }
        }
        check_lanes(&state.lanes, slots)?;
        // Which slots are live: 1 live, 2 free.
        let mut used = vec![0u8; slots];
        let mut placed = Vec::new();
        let existing = self.archetypes().len();
        let mut sets = hashbrown::HashSet::new();
        for (a, archetype) in saved.archetypes.iter().enumerate() {
            if !sets.insert(archetype.set.clone()) {
                return Err(invalid(format!(
                    "archetype {a} has the component set of an earlier one ({:?})",
                    archetype.names
                )));
            }
            // A sparse component's values live outside the tables (`storage/sparse.rs`): a
            // table column for one would hold values `get` finds and `remove` does not.
            if let Some(&sparse) = (archetype.set.iter()).find(|&&id| self.components().info(id).is_sparse())
            {
                return Err(invalid(format!(
                    "archetype {a} ({:?}) holds `{}` in its table, but this world stores that \
                     component in a sparse set: a save loads each component into the storage it \
                     was saved from, so choose the same storage as the saving world (the \
                     default, tables) before loading",
                    archetype.names,
                    self.components().info(sparse).name()
                )));
            }
            if a < existing && !remap {
                let have = self.archetypes().nth(a).map(|x| x.component_ids());
                if have != Some(&archetype.set[..]) {
                    return Err(invalid(format!(
                        "archetype {a} ({:?}) is not this world's archetype {a}: a save loads into a \
                         world with only the archetypes World::new makes",
                        archetype.names
                    )));
                }
            }
            if u32::try_from(archetype.entities.len()).is_err() {
                return Err(invalid(format!("archetype {a} has more rows than a table holds")));
            }
            for (row, &bits) in archetype.entities.iter().enumerate() {
                let entity = Entity::from_bits(bits).ok_or_else(|| {
                    invalid(format!(
                        "{bits:#x} (archetype {a}, row {row}) is not an entity id"
                    ))
                })?;
                let index = entity.index() as usize;
                let Some(&word) = state.generations.get(index) else {
                    return Err(invalid(format!(
                        "entity {entity} (archetype {a}, row {row}) is beyond the allocator's {slots} slots"
                    )));
                };
                let generation = entity.to_bits() >> 32;
                if generation != u64::from(word) {
                    let when = if generation > u64::from(word) {
                        "from the future"
                    } else {
                        "stale"
                    };
                    return Err(invalid(format!(
                        "entity {entity} (archetype {a}, row {row}) has a generation {when}: its slot is \
                         at generation {}",
                        word & GENERATION_MASK
                    )));
                }
                if used[index] != 0 {
                    return Err(invalid(format!("entity {entity} is saved twice")));
                }
                used[index] = 1;
                placed.push((
                    entity,
                    EntityLocation {
                        archetype: ArchetypeId(a as u32),
                        row: row as u32,
                    },
                ));
            }
        }
        if existing > saved.archetypes.len() && !remap {
            return Err(invalid("fewer archetypes than a fresh world has"));
        }
        for &index in &state.free {
            match used.get(index as usize) {
                None => {
                    return Err(invalid(format!(
                        "free slot {index} is beyond the allocator's {slots} slots"
                    )));
                }
                Some(1) => return Err(invalid(format!("slot {index} is both free and live"))),
                Some(2) => return Err(invalid(format!("slot {index} is on the free list twice"))),
                Some(_) => used[index as usize] = 2,
            }
        }
        for (index, &use_) in used.iter().enumerate() {
            if use_ == 0 && state.generations[index] & GENERATION_MASK != GENERATION_MASK {
                return Err(invalid(format!(
                    "slot {index} is neither live, free nor retired (a retired slot's generation \
                     count is at its last)"
                )));
            }
        }
        self.check_sparse(saved, &placed)?;
        self.check_hierarchy(saved)?;
        Ok(placed)
    }

    /// Each saved sparse set is of a component this world stores sparse, and its holders
    /// are distinct live entities of the save.
    fn check_sparse(&self, saved: &SavedWorld, placed: &[(Entity, EntityLocation)]) -> Result<(), LoadError> {
        if saved.sparse.is_empty() {
            return Ok(());
        }
        let live: hashbrown::HashSet<u64> = placed.iter().map(|(e, _)| e.to_bits()).collect();
        for set in &saved.sparse {
            let name = &set.name;
            if !self.components().info(set.id).is_sparse() {
                return Err(invalid(format!(
                    "component \"{name}\" is saved in a sparse set, but this world stores it in \
                     archetype tables: a save loads each component into the storage it was saved \
                     from, so register it with `.sparse_set()` (as the saving world did) before \
                     loading"
                )));
            }
            if u32::try_from(set.entities.len()).is_err() {
                return Err(invalid(format!(
                    "sparse component \"{name}\" has more values than a set holds"
                )));
            }
            let mut seen = hashbrown::HashSet::with_capacity(set.entities.len());
            for (row, &bits) in set.entities.iter().enumerate() {
                if !live.contains(&bits) {
                    let what =
                        Entity::from_bits(bits).map_or_else(|| format!("{bits:#x}"), |e| e.to_string());
                    return Err(invalid(format!(
                        "sparse component \"{name}\" (value {row}) is held by {what}, which is not a \
                         live entity of the save"
                    )));
                }
                if !seen.insert(bits) {
                    let entity = Entity::from_bits(bits).expect("a live entity's id");
                    return Err(invalid(format!(
                        "sparse component \"{name}\" is held twice by entity {entity}"
                    )));
                }
            }
        }
        Ok(())
    }

    /// Moves the saved sparse values into this world's sets, each held by `holder(bits)`
    /// with ticks `ticks(saved ticks)`, after the set's present rows (in a fresh load there
    /// are none: the saved dense order comes back exactly).
    fn commit_sparse(
        &mut self,
        sparse: Vec<SavedSparse>,
        holder: impl Fn(u64) -> Entity,
        ticks: impl Fn((Tick, Tick)) -> ComponentTicks,
    ) {
        for mut saved in sparse {
            let size = saved.column.layout.size();
            let set = (self.sparse.get_mut(saved.id)).expect("checked: stored sparse here");
            set.reserve(saved.entities.len());
            for (row, &bits) in saved.entities.iter().enumerate() {
                let entity = holder(bits);
                // SAFETY: `entity` is not in the set (checked: each holder once, and a holder
                // is a saved entity, new to this world); the row is written at once, value
                // and ticks, with no call that can panic before (room was reserved). The
                // staged value at `row` is initialised and of the set's component (the
                // staged column was made for `saved.id`); it is moved out here once
                // (`forget` below keeps the staging column from dropping it).
                unsafe {
                    let at = set.push_uninit(entity);
                    let column = set.table_mut().column_unchecked_mut(0);
                    std::ptr::copy_nonoverlapping(saved.column.ptr(row), column.ptr(at), size);
                    column.ticks_base().add(at).write(ticks(saved.column.ticks[row]));
                }
            }
            saved.column.forget();
        }
    }

    /// The saved hierarchy is one a world can have: no entity is its own ancestor along
    /// [`Parent`], and [`Parent`] and [`Children`] agree — every entity with a `Parent` is
    /// listed (once) by its parent's `Children`, and every entity a `Children` lists has
    /// that parent as its `Parent`. (The hierarchy's hooks keep both sides in step in a
    /// world; a load runs no hook, so a save whose sides disagree would load a hierarchy
    /// that despawns and reparents wrongly.)
    fn check_hierarchy(&self, saved: &SavedWorld) -> Result<(), LoadError> {
        let Some(parent) = self.components().id::<Parent>() else {
            return Ok(());
        };
        let children_id = self.components().id::<Children>();
        // Every saved value of a component, with its holder: archetype columns, then sparse
        // sets, in save order.
        let holders = |id: ComponentId| {
            let columns = (saved.archetypes.iter())
                .filter_map(move |a| Some((&a.entities, a.columns.iter().find(|c| c.id == id)?)));
            let sets = (saved.sparse.iter())
                .filter(move |set| set.id == id)
                .map(|set| (&set.entities, &set.column));
            columns.chain(sets).flat_map(|(entities, column)| {
                (entities.iter().enumerate()).map(move |(row, &bits)| (bits, column.ptr(row)))
            })
        };
        // In save order (for a deterministic error), and by child for the lookups.
        let mut links: Vec<(u64, u64)> = Vec::new();
        for (bits, ptr) in holders(parent) {
            // SAFETY: the column is `Parent`'s (its id), so its rows are `Parent`s, and it
            // holds one per entity (checked while reading).
            let of = unsafe { *ptr.cast::<Parent>() };
            links.push((bits, of.get().to_bits()));
        }
        let parents: hashbrown::HashMap<u64, u64> = links.iter().copied().collect();
        let mut lists: Vec<(u64, &[Entity])> = Vec::new();
        if let Some(children_id) = children_id {
            for (bits, ptr) in holders(children_id) {
                // SAFETY: as above, for `Children`; the staged column outlives the borrow
                // (it lives in `saved`, borrowed for this call).
                let list: &Children = unsafe { &*ptr.cast::<Children>() };
                lists.push((bits, &list[..]));
            }
        }
        for &start in parents.keys() {
            let mut current = start;
            // A chain longer than the number of links has a cycle.
            for _ in 0..=parents.len() {
                match parents.get(&current) {
                    Some(&up) if up == start => {
                        let entity = Entity::from_bits(start).expect("checked: an entity id");
                        return Err(invalid(format!(
                            "entity {entity} is its own ancestor: the saved hierarchy (Parent) has a cycle"
                        )));
                    }
                    Some(&up) => current = up,
                    None => break,
                }
            }
        }
        let show = |bits: u64| Entity::from_bits(bits).expect("checked: an entity id");
        let with_children: hashbrown::HashSet<u64> = lists.iter().map(|&(parent, _)| parent).collect();
        // Every child some Children lists; each was just checked to name that list's owner
        // as its Parent, so a child found here is listed by its own parent. (A set, not a
        // scan of the parent's list per child: a root with N children stays O(N).)
        let mut listed = hashbrown::HashSet::new();
        for &(parent_bits, list) in &lists {
            let mut seen = hashbrown::HashSet::with_capacity(list.len());
            for child in list {
                let child_bits = child.to_bits();
                if !seen.insert(child_bits) {
                    return Err(invalid(format!(
                        "entity {}'s Children lists entity {child} twice",
                        show(parent_bits)
                    )));
                }
                match parents.get(&child_bits) {
                    Some(&up) if up == parent_bits => {
                        listed.insert(child_bits);
                    }
                    Some(&up) => {
                        return Err(invalid(format!(
                            "the saved hierarchy disagrees with itself: entity {}'s Children lists \
                             entity {child}, whose Parent is entity {}",
                            show(parent_bits),
                            show(up)
                        )));
                    }
                    None => {
                        return Err(invalid(format!(
                            "the saved hierarchy disagrees with itself: entity {}'s Children lists \
                             entity {child}, which has no Parent",
                            show(parent_bits)
                        )));
                    }
                }
            }
        }
        for &(child_bits, parent_bits) in &links {
            if !listed.contains(&child_bits) {
                let why = if with_children.contains(&parent_bits) {
                    "whose Children does not list it"
                } else {
                    "which has no Children"
                };
                return Err(invalid(format!(
                    "the saved hierarchy disagrees with itself: entity {}'s Parent is entity {}, {why}",
                    show(child_bits),
                    show(parent_bits)
                )));
            }
        }
        Ok(())
    }

    /// Phase 2: moves the checked save into the (empty) world.
    fn commit(&mut self, mut saved: SavedWorld, placed: &[(Entity, EntityLocation)]) {
        // The archetypes first, each table with room for its rows: growing a table is the
        // one step that can fail (out of memory), and it fails while the world still has no
        // entity, so no location can point at a row that was never written.
        for (a, archetype) in saved.archetypes.iter().enumerate() {
            let id = self.archetype_of_set(&archetype.set);
            debug_assert_eq!(id.index(), a, "checked: distinct sets, a fresh world's prefix");
            let target = &mut self.archetypes_mut().archetypes.all_mut()[id.index()];
            target.table.reserve(archetype.entities.len());
        }
        let entities = Entities::restore(saved.tag, &saved.entities, placed);
        let clock = (
            saved.change_tick,
            Tick::new(saved.last_change_tick),
            saved.next_check_tick,
        );
        self.restore_for_load(saved.tag, entities, clock);
        for (a, mut archetype) in saved.archetypes.into_iter().enumerate() {
            let target = &mut self.archetypes_mut().archetypes.all_mut()[a];
            // Each staged column's place in the table.
            let columns: Vec<usize> = (archetype.columns.iter())
                .map(|staged| target.column_of(staged.id).expect("the archetype of this set"))
                .collect();
            for (row, &bits) in archetype.entities.iter().enumerate() {
                let entity = Entity::from_bits(bits).expect("checked");
                // SAFETY: the table was empty and `reserve` made room for every row above;
                // each column of the table is one staged column (the archetype is that of
                // the staged set), and each is written just below, with no call that can
                // panic before.
                let at = unsafe { target.table.push_uninit_in_room(entity) };
                debug_assert_eq!(at, row);
                for (staged, &column) in archetype.columns.iter().zip(&columns) {
                    // SAFETY: `column` stores `staged`'s component (found by its id), so the
                    // value layouts agree; row `row` of the staged column holds an
                    // initialised value (the column has exactly `rows` of them), moved out
                    // here once (`forget` below keeps the staging column from dropping it);
                    // `at` is below the table's capacity.
                    unsafe {
                        let column = target.table.column_unchecked_mut(column);
                        std::ptr::copy_nonoverlapping(staged.ptr(row), column.ptr(at), staged.layout.size());
                        column.ticks_base().add(at).write(ComponentTicks {
                            added: staged.ticks[row].0,
                            changed: staged.ticks[row].1,
                        });
                    }
                }
            }
            for staged in &mut archetype.columns {
                staged.forget();
            }
        }
        let sparse = std::mem::take(&mut saved.sparse);
        self.commit_sparse(
            sparse,
            |bits| Entity::from_bits(bits).expect("checked"),
            |(added, changed)| ComponentTicks { added, changed },
        );
        self.commit_resources(saved.resources, true);
    }

    /// Inserts the saved resources, with their saved ticks when `ticks`.
    fn commit_resources(&mut self, resources: Vec<SavedResource>, ticks: bool) {
        for resource in resources {
            (resource.entry.insert)(self, resource.value);
            if ticks {
                (self.resources_mut()).set_ticks_by_id(resource.entry.id, resource.added, resource.changed);
            }
        }
    }

    /// Phase 2 of a remapped load: new ids, mapped values, rows appended to this world's
    /// tables.
    fn commit_remapped(
        &mut self,
        mut saved: SavedWorld,
        placed: &[(Entity, EntityLocation)],
    ) -> std::collections::HashMap<Entity, Entity> {
        // The tables first, with room for their rows (the one step that can fail, before any
        // entity is allocated).
        let mut targets = Vec::with_capacity(saved.archetypes.len());
        for archetype in &saved.archetypes {
            let id = self.archetype_of_set(&archetype.set);
            let target = &mut self.archetypes_mut().archetypes.all_mut()[id.index()];
            target.table.reserve(archetype.entities.len());
            targets.push((id, target.len()));
        }
        // New ids, in the saved archetype and row order, each at the row it will take.
        let entities = self.entities_for_load();
        entities.reserve(placed.len());
        let mut table = hashbrown::HashMap::with_capacity(placed.len());
        let mut new_ids = Vec::with_capacity(saved.archetypes.len());
        for (archetype, &(id, base)) in saved.archetypes.iter().zip(&targets) {
            let ids: Vec<Entity> = (archetype.entities.iter().enumerate())
                .map(|(row, &bits)| {
                    let new = entities.alloc(EntityLocation {
                        archetype: id,
                        row: (base + row) as u32,
                    });
                    table.insert(Entity::from_bits(bits).expect("checked"), new);
                    new
                })
                .collect();
            new_ids.push(ids);
        }
        // The ids above are live but their rows are not pushed yet: if a user's
        // `map_entities` panics, free them again before unwinding on, so that no live id
        // names a row its table does not have.
        if let Err(payload) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            map_saved(&mut saved, &table);
        })) {
            let entities = self.entities_for_load();
            for new in table.values() {
                entities.free(*new);
            }
            std::panic::resume_unwind(payload);
        }
        let now = self.change_tick();
        for ((mut archetype, ids), &(id, base)) in saved.archetypes.into_iter().zip(new_ids).zip(&targets) {
            let target = &mut self.archetypes_mut().archetypes.all_mut()[id.index()];
            let columns: Vec<usize> = (archetype.columns.iter())
                .map(|staged| target.column_of(staged.id).expect("the archetype of this set"))
                .collect();
            for (row, &entity) in ids.iter().enumerate() {
                // SAFETY: `reserve` made room for every row of this archetype above, and no
                // other row was pushed since; each column of the table is one staged column
                // (the archetype is that of the staged set), each written just below, with no
                // call that can panic before.
                let at = unsafe { target.table.push_uninit_in_room(entity) };
                debug_assert_eq!(at, base + row);
                for (staged, &column) in archetype.columns.iter().zip(&columns) {
                    // SAFETY: as in `commit`: `column` stores `staged`'s component, row `row`
                    // of the staged column holds an initialised value, moved out once here
                    // (`forget` below), and `at` is below the table's capacity.
                    unsafe {
                        let column = target.table.column_unchecked_mut(column);
                        std::ptr::copy_nonoverlapping(staged.ptr(row), column.ptr(at), staged.layout.size());
                        column.ticks_base().add(at).write(ComponentTicks {
                            added: now,
                            changed: now,
                        });
                    }
                }
            }
            for staged in &mut archetype.columns {
                staged.forget();
            }
        }
        let sparse = std::mem::take(&mut saved.sparse);
        self.commit_sparse(
            sparse,
            |bits| table[&Entity::from_bits(bits).expect("checked")],
            |_| ComponentTicks {
                added: now,
                changed: now,
            },
        );
        self.commit_resources(saved.resources, false);
        table.into_iter().collect()
    }
}

/// Every entity held by a mapped component or resource of the save is a saved entity.
fn check_references(saved: &mut SavedWorld, placed: &[(Entity, EntityLocation)]) -> Result<(), LoadError> {
    let known: hashbrown::HashMap<Entity, Entity> = placed.iter().map(|&(e, _)| (e, e)).collect();
    let mut mapper = TableMapper {
        table: &known,
        missing: None,
    };
    for archetype in &saved.archetypes {
        for column in &archetype.columns {
            let Some(map) = column.map else { continue };
            for (row, &bits) in archetype.entities.iter().enumerate() {
                // SAFETY: row `row` holds an initialised value of the column's component,
                // `map` is that component's, and nothing else reaches the staged column;
                // mapping through `known` writes every entity back unchanged.
                unsafe { map(column.ptr(row), &mut mapper) };
                if let Some(missing) = mapper.missing {
                    let entity = Entity::from_bits(bits).expect("checked");
                    return Err(invalid(format!(
                        "component \"{}\" of saved entity {entity} holds entity {missing}, which the \
                         save does not hold: a remapped load cannot map it",
                        column.name
                    )));
                }
            }
        }
    }
    for set in &saved.sparse {
        let Some(map) = set.column.map else { continue };
        for (row, &bits) in set.entities.iter().enumerate() {
            // SAFETY: as above, for the staged values of the sparse set.
            unsafe { map(set.column.ptr(row), &mut mapper) };
            if let Some(missing) = mapper.missing {
                let entity = Entity::from_bits(bits).expect("checked");
                return Err(invalid(format!(
                    "sparse component \"{}\" of saved entity {entity} holds entity {missing}, which \
                     the save does not hold: a remapped load cannot map it",
                    set.name
                )));
            }
        }
    }
    for resource in &mut saved.resources {
        if let Some(map) = resource.entry.map {
            map(&mut resource.value, &mut mapper);
            if let Some(missing) = mapper.missing {
                return Err(invalid(format!(
                    "resource \"{}\" holds entity {missing}, which the save does not hold: a \
                     remapped load cannot map it",
                    resource.entry.name
                )));
            }
        }
    }
    Ok(())
}

/// Rewrites every mapped value of the save through `table` (checked to hold every id met).
fn map_saved(saved: &mut SavedWorld, table: &hashbrown::HashMap<Entity, Entity>) {
    let mut mapper = TableMapper { table, missing: None };
    for archetype in &saved.archetypes {
        for column in &archetype.columns {
            let Some(map) = column.map else { continue };
            for row in 0..column.len() {
                // SAFETY: as in `check_references`.
                unsafe { map(column.ptr(row), &mut mapper) };
            }
        }
    }
    for set in &saved.sparse {
        let Some(map) = set.column.map else { continue };
        for row in 0..set.column.len() {
            // SAFETY: as in `check_references`.
            unsafe { map(set.column.ptr(row), &mut mapper) };
        }
    }
    for resource in &mut saved.resources {
        if let Some(map) = resource.entry.map {
            map(&mut resource.value, &mut mapper);
        }
    }
    debug_assert!(mapper.missing.is_none(), "checked by check_references");
}

/// Lane 0 is the shared one and no other is; bounded count and blocks.
fn check_lanes(lanes: &[LaneState], slots: usize) -> Result<(), LoadError> {
    if lanes.is_empty() || lanes.len() > MAX_LANES {
        return Err(invalid(format!(
            "{} reservation lanes (1 to {MAX_LANES})",
            lanes.len()
        )));
    }
    for (k, lane) in lanes.iter().enumerate() {
        if (k == 0) != (lane.holder == LaneHolder::Shared) {
            return Err(invalid(format!(
                "lane {k} is {:?}, but lane 0 and only lane 0 is the shared lane",
                lane.holder
            )));
        }
        if lane.block > slots as u64 {
            return Err(invalid(format!(
                "lane {k}'s block of {} positions is larger than the {slots} slots",
                lane.block
            )));
        }
    }
    Ok(())
}
