//! Inserting and removing one bundle type for many entities at once.
//!
//! Both operations check every entity before they change anything, so a batch with a bad
//! entity leaves the world exactly as it was. Then they move the rows:
//!
//! * When the batch holds every entity of one archetype (add `Frozen` to all enemies, take it
//!   away again), the whole table moves across: the bundle and its edge are looked up once,
//!   the destination is reserved once, and each column is copied across in one piece
//!   (`Table::move_all_rows`); only the bundle's own values are written row by row.
//! * Otherwise each entity takes the one-entity path ([`World::insert`], [`World::remove`]),
//!   which finds the bundle and edge in its caches.

use fixedbitset::FixedBitSet;

use crate::archetype::{InsertEdge, pair_mut};
use crate::bundle::{Bundle, BundleId};
use crate::component::ComponentId;
use crate::entity::Entity;
use crate::error::EntityError;
use crate::location::ArchetypeId;
use crate::location::EntityLocation;

use super::hooks::HookKind;
use super::sparse::{take_sparse_value, write_sparse_value};
use super::{World, tick_now};

/// Where the entities of a checked batch are: their rows, and their archetype if they share
/// one.
struct BatchRows {
    rows: Vec<u32>,
    /// The archetype of every entity, or `None` when they are spread over several (or the
    /// batch is empty).
    archetype: Option<ArchetypeId>,
}

impl BatchRows {
    fn new(capacity: usize) -> Self {
        Self {
            rows: Vec::with_capacity(capacity),
            archetype: None,
        }
    }

    fn push(&mut self, location: EntityLocation, first: bool) {
        if first {
            self.archetype = Some(location.archetype);
        } else if self.archetype != Some(location.archetype) {
            self.archetype = None;
        }
        self.rows.push(location.row);
    }

    /// The archetype whose every row is in the batch exactly once, if there is one.
    fn whole_table(&self, world: &World) -> Option<ArchetypeId> {
        let archetype = self.archetype?;
        let len = world.archetypes.archetypes.all()[archetype.index()].len();
        if len != self.rows.len() {
            return None;
        }
        let mut seen = FixedBitSet::with_capacity(len);
        // `len` live rows and as many distinct entries below `len` cover every row.
        self.rows
            .iter()
            .all(|&row| !seen.put(row as usize))
            .then_some(archetype)
    }
}

impl World {
    /// Adds a bundle to each entity of `batch`: [`insert`](Self::insert) for many entities,
    /// with the lookups done once. Components an entity already has are replaced, and an
    /// entity listed twice gets its bundles in order, as with repeated `insert`s.
    ///
    /// Every entity is checked first: if one is dead, nothing is inserted (the bundles are
    /// dropped) and the error names the first such entity. A replaced value whose `Drop`
    /// panics stops the batch there, as it would stop repeated inserts: that entity and the
    /// ones before it have their new bundles, the rest keep their components, and the bundles
    /// not inserted are dropped.
    ///
    /// ```
    /// use tabula::{EntityError, World};
    ///
    /// #[derive(Debug, PartialEq)]
    /// struct Frozen(u32);
    ///
    /// let mut world = World::new();
    /// let enemies: Vec<_> = world.spawn_batch((0..3u8).map(|i| (i,))).collect();
    /// world.insert_batch(enemies.iter().map(|&e| (e, (Frozen(5),))))?;
    /// assert_eq!(world.get::<Frozen>(enemies[2]), Ok(&Frozen(5)));
    ///
    /// // A dead entity anywhere in the batch: nothing changes.
    /// let gone = world.spawn((9u8,));
    /// world.despawn(gone)?;
    /// let result = world.insert_batch([(enemies[0], (1.5f32,)), (gone, (2.5f32,))]);
    /// assert_eq!(result, Err(EntityError::NoSuchEntity(gone)));
    /// assert!(!world.has::<f32>(enemies[0]));
    /// # Ok::<(), EntityError>(())
    /// ```
    pub fn insert_batch<I, B>(&mut self, batch: I) -> Result<(), EntityError>
    where
        I: IntoIterator<Item = (Entity, B)>,
        B: Bundle,
    {
        self.flush();
        let batch: Vec<(Entity, B)> = batch.into_iter().collect();
        let bundle = self.bundles.id_of::<B>(&mut self.components);
        if self.bundles.infos[bundle].sparse {
            return self.insert_batch_sparse(bundle, batch);
        }
        if self.bundle_has_hooks(bundle, HookKind::INSERTING) {
            return self.insert_batch_hooked(batch);
        }
        let mut rows = BatchRows::new(0);
        let whole = match self.table_in_order(batch.iter().map(|&(entity, _)| entity)) {
            Some(source) => Some(source),
            None => {
                rows = BatchRows::new(batch.len());
                for (i, &(entity, _)) in batch.iter().enumerate() {
                    rows.push(self.location(entity)?, i == 0);
                }
                rows.whole_table(self)
            }
        };
        if let Some(source) = whole {
            let edge = self
                .archetypes
                .insert_edge(&self.components, source, &self.bundles, bundle);
            let InsertEdge { target, replaced, .. } = &self.archetypes.insert_edges[edge];
            // A self-edge replaces in place, and replaced values are dropped, which may
            // panic: both take the one-entity path.
            if *target != source && !replaced.contains(&true) {
                self.insert_whole_table(source, edge, batch, &rows.rows);
                return Ok(());
            }
        }
        for (entity, bundle) in batch {
            self.insert(entity, bundle)?;
        }
        Ok(())
    }

    /// True when a component of bundle `bundle` has a hook of a kind in `kinds`.
    fn bundle_has_hooks(&self, bundle: BundleId, kinds: u8) -> bool {
        (self.bundles.infos[bundle].fields.iter()).any(|&c| self.components.info(c).has_hooks(kinds))
    }

    /// [`insert_batch`](Self::insert_batch) for a bundle with hooks: every entity checked,
    /// then the one-entity path with its hooks, entity by entity, and the hooks' commands
    /// applied once at the end.
    #[cold]
    #[inline(never)]
    fn insert_batch_hooked<B: Bundle>(&mut self, batch: Vec<(Entity, B)>) -> Result<(), EntityError> {
        for &(entity, _) in &batch {
            self.location(entity)?;
        }
        let mut result = Ok(());
        for (entity, bundle) in batch {
            // Hooks make no structural change, so every entity checked above is still alive.
            result = self.insert_general::<B, false>(entity, bundle);
            if result.is_err() {
                break;
            }
        }
        self.apply_hook_commands();
        result
    }

    /// The archetype whose table lists exactly `entities`, in row order, if there is one.
    ///
    /// The common batch (entities collected from a query, or as `spawn_batch` returned them)
    /// is a whole table in order. This check is a comparison per entity, and it proves all
    /// that the general check does: a table holds only live entities, each once.
    fn table_in_order(&self, entities: impl ExactSizeIterator<Item = Entity> + Clone) -> Option<ArchetypeId> {
        let first = entities.clone().next()?;
        let location = self.entities.get(first)?;
        let listed = self.archetype_at(location).table.entities();
        if location.row != 0 || listed.len() != entities.len() {
            return None;
        }
        // Compared without stopping at the first difference, so that the loop vectorises: a
        // mismatch is rare, and a match has to look at every entity anyway.
        let same = entities.zip(listed).fold(true, |same, (entity, listed)| {
            same & (entity.to_bits() == listed.to_bits())
        });
        same.then_some(location.archetype)
    }

    /// Moves every row of `source` along insert edge `edge`, writing the batch's bundles.
    /// `rows[i]` is the row of `batch[i]`'s entity, and the rows are all of `source`'s; an
    /// empty `rows` means `batch[i]` is at row `i`.
    fn insert_whole_table<B: Bundle>(
        &mut self,
        source: ArchetypeId,
        edge: usize,
        batch: Vec<(Entity, B)>,
        rows: &[u32],
    ) {
        let tick = tick_now(&mut self.change_tick);
        let edge = &self.archetypes.insert_edges[edge];
        let (src, dst) = pair_mut(self.archetypes.archetypes.all_mut(), source, edge.target);
        // The only step that can fail comes before anything changes.
        dst.table.reserve(batch.len());
        // SAFETY: room is reserved; the edge comes from `source`, so `move_map` has one entry
        // per source column, each naming the target column of the same component (an insert
        // keeps every column, so nothing is left to read here). The target columns it leaves
        // empty are exactly the bundle's (none is `replaced`), and the loop below fills them
        // at every new row: `rows` (or, when empty, `0..batch.len()`) are all of the source's
        // rows, each once, and row `r` landed at `start + r`. The entities from `start` on are
        // the moved ones, all live. Nothing in between can panic (`write_at` only moves
        // values), and the source is detached right after.
        unsafe {
            let start = src.table.move_all_rows(&mut dst.table, &edge.move_map, tick);
            let columns = B::columns(&mut dst.table, &edge.bundle_columns);
            let bundles = batch.into_iter().map(|(_, bundle)| bundle);
            if rows.is_empty() {
                for (row, bundle) in bundles.enumerate() {
                    bundle.write_at(columns, start + row, tick);
                }
            } else {
                for (bundle, &row) in bundles.zip(rows) {
                    bundle.write_at(columns, start + row as usize, tick);
                }
            }
            // The moved entities, in their new rows.
            self.entities
                .place_rows(edge.target, &dst.table.entities()[start..], start);
        }
        // Every value has moved out and every entity's location is recorded: the source
        // keeps no rows, and nothing is dropped.
        src.table.detach_rows();
    }

    /// Removes bundle `B` from each of `entities` and returns the removed bundles in the same
    /// order: [`remove`](Self::remove) for many entities, with the lookups done once.
    ///
    /// Every entity is checked first; if any is dead, lacks a component of `B`, or is listed
    /// twice (its second removal would find nothing), nothing is removed and the error names
    /// the first such entity (and the component).
    ///
    /// ```
    /// use tabula::{EntityError, World};
    ///
    /// #[derive(Debug, PartialEq)]
    /// struct Frozen(u32);
    ///
    /// let mut world = World::new();
    /// let a = world.spawn((1u8, Frozen(1)));
    /// let b = world.spawn((2u8, Frozen(2)));
    /// let c = world.spawn((3u8,));
    ///
    /// // `c` has no `Frozen`: nothing is removed.
    /// let err = world.remove_batch::<(Frozen,)>(&[a, b, c]).unwrap_err();
    /// assert!(matches!(err, EntityError::MissingComponent { entity, .. } if entity == c));
    /// assert!(world.has::<Frozen>(a));
    ///
    /// let removed = world.remove_batch::<(Frozen,)>(&[b, a])?;
    /// assert_eq!(removed, vec![(Frozen(2),), (Frozen(1),)]);
    /// assert!(!world.has::<Frozen>(a) && world.has::<u8>(a));
    /// # Ok::<(), EntityError>(())
    /// ```
    pub fn remove_batch<B: Bundle>(&mut self, entities: &[Entity]) -> Result<Vec<B>, EntityError> {
        self.flush();
        let bundle = self.bundles.id_of::<B>(&mut self.components);
        if self.bundles.infos[bundle].sparse {
            return self.remove_batch_sparse::<B>(bundle, entities);
        }
        // A bundle with removal hooks (see `hooks`) takes the one-entity path after the
        // checks, with every entity's hooks run before the first removal.
        let hooked = self.bundle_has_hooks(bundle, HookKind::REMOVING);
        if !hooked && let Some(source) = self.table_in_order(entities.iter().copied()) {
            let edge = self
                .archetypes
                .remove_edge(&self.components, source, &self.bundles, bundle);
            if let Some(component) = self.archetypes.remove_edges[edge].missing {
                let entity = entities[0];
                return Err(EntityError::MissingComponent { entity, component });
            }
            if self.archetypes.remove_edges[edge].target != source {
                return Ok(self.remove_whole_table(source, edge, entities, &[]));
            }
        }
        let first_field = self.bundles.infos[bundle].fields.first().copied();
        let mut seen = FixedBitSet::with_capacity(self.entities.slots());
        let mut rows = BatchRows::new(entities.len());
        // The edge of the previous entity's archetype: batches tend to come from one.
        let mut last: Option<(ArchetypeId, usize)> = None;
        // With hooks, each entity's edge.
        let mut edges = Vec::with_capacity(if hooked { entities.len() } else { 0 });
        for (i, &entity) in entities.iter().enumerate() {
            let location = self.location(entity)?;
            if let Some(field) = first_field
                && seen.put(entity.index() as usize)
            {
                // Listed twice: the second removal would find the component gone.
                let component = self.components.info(field).name();
                return Err(EntityError::MissingComponent { entity, component });
            }
            let edge = match last {
                Some((archetype, edge)) if archetype == location.archetype => edge,
                _ => self
                    .archetypes
                    .remove_edge(&self.components, location.archetype, &self.bundles, bundle),
            };
            last = Some((location.archetype, edge));
            if let Some(component) = self.archetypes.remove_edges[edge].missing {
                return Err(EntityError::MissingComponent { entity, component });
            }
            rows.push(location, i == 0);
            if hooked {
                edges.push(edge);
            }
        }
        if !hooked
            && let Some(source) = rows.whole_table(self)
            && let Some((_, edge)) = last
            && self.archetypes.remove_edges[edge].target != source
        {
            return Ok(self.remove_whole_table(source, edge, entities, &rows.rows));
        }
        // Every hook sees the entities as the checks did (hooks make no structural change);
        // their commands run after every removal, so that one entity's cannot take a
        // component another entity of the batch was checked to have.
        for (&entity, &edge) in entities.iter().zip(&edges) {
            self.run_removal_hooks(entity, edge);
        }
        // Checked above: none of these can fail.
        let removed: Vec<B> = (entities.iter())
            .map(|&entity| {
                if hooked {
                    // Their hooks ran above.
                    self.remove_general::<B, false>(entity)
                } else {
                    self.remove::<B>(entity)
                }
            })
            .collect::<Result<_, _>>()?;
        if hooked {
            self.apply_hook_commands();
        }
        Ok(removed)
    }

    /// [`insert_batch`](Self::insert_batch) of a bundle with a sparse field, which never
    /// enters the archetype: every entity is checked alive first (all or nothing, as
    /// documented). A one-field bundle of a component without hooks (a marker set on many
    /// entities) goes straight into the set, stamped with one tick as a table batch is; any
    /// other bundle is one [`insert`](Self::insert) per entity. With the removal below, the
    /// set looked up once: `add_remove/tabula_sparse_batch` runs 1.44M instructions per
    /// 10,000 adds and removes, against 2.71M one entity at a time (`tabula_sparse`).
    #[cold]
    fn insert_batch_sparse<B: Bundle>(
        &mut self,
        bundle: BundleId,
        batch: Vec<(Entity, B)>,
    ) -> Result<(), EntityError> {
        for &(entity, _) in &batch {
            self.location(entity)?;
        }
        let component = self.bundles.infos[bundle].fields[0];
        if B::FIELDS == 1 && !self.components.info(component).has_hooks(u8::MAX) {
            let tick = tick_now(&mut self.change_tick);
            let set = (self.sparse.get_mut(component)).expect("the bundle's one field is sparse");
            set.reserve(batch.len());
            for (entity, value) in batch {
                write_sparse_value(set, entity, value, tick);
            }
            return Ok(());
        }
        for (entity, bundle) in batch {
            self.insert(entity, bundle)?;
        }
        Ok(())
    }

    /// [`remove_batch`](Self::remove_batch) of a bundle with a sparse field: every entity is
    /// checked first (alive, listed once, holding every field), then each removal is one
    /// [`remove`](Self::remove), or, for a one-field bundle of a component without hooks,
    /// a move straight out of the set (its removal log, if tracked, written first for all).
    #[cold]
    fn remove_batch_sparse<B: Bundle>(
        &mut self,
        bundle: BundleId,
        entities: &[Entity],
    ) -> Result<Vec<B>, EntityError> {
        let first = self.bundles.infos[bundle].fields[0];
        if B::FIELDS == 1 && !self.components.info(first).has_hooks(u8::MAX) {
            return self.remove_batch_one_sparse(first, entities);
        }
        let mut seen = FixedBitSet::with_capacity(self.entities.slots());
        for &entity in entities {
            let location = self.location(entity)?;
            let fields = &self.bundles.infos[bundle].fields;
            if seen.put(entity.index() as usize) {
                // Listed twice: the second removal would find the component gone.
                let component = self.components.info(fields[0]).name();
                return Err(EntityError::MissingComponent { entity, component });
            }
            let archetype = self.archetype_at(location);
            if let Some(&missing) = fields
                .iter()
                .find(|&&c| archetype.column_of(c).is_none() && !self.sparse_contains(c, entity))
            {
                let component = self.components.info(missing).name();
                return Err(EntityError::MissingComponent { entity, component });
            }
        }
        entities.iter().map(|&entity| self.remove::<B>(entity)).collect()
    }

    /// [`remove_batch_sparse`](Self::remove_batch_sparse) of one-field bundle `B` of sparse
    /// `component`, which has no hooks.
    fn remove_batch_one_sparse<B: Bundle>(
        &mut self,
        component: ComponentId,
        entities: &[Entity],
    ) -> Result<Vec<B>, EntityError> {
        let set = (self.sparse.get(component)).expect("the bundle's one field is sparse");
        let mut seen = FixedBitSet::with_capacity(self.entities.slots());
        for &entity in entities {
            self.location(entity)?;
            // Listed twice: the second removal would find the component gone.
            if seen.put(entity.index() as usize) || !set.contains(entity) {
                return Err(self.missing_sparse(entity, component));
            }
        }
        if self.components.info(component).logs_removals() {
            self.removals.record(&[component], entities);
        }
        let set = (self.sparse.get_mut(component)).expect("the bundle's one field is sparse");
        Ok((entities.iter())
            .map(|&entity| take_sparse_value(set, entity).expect("checked above"))
            .collect())
    }

    /// Moves every row of `source` along remove edge `edge` and returns the removed bundles.
    /// `rows[i]` is the row of `entities[i]`, and the rows are all of `source`'s; an empty
    /// `rows` means `entities[i]` is at row `i`.
    fn remove_whole_table<B: Bundle>(
        &mut self,
        source: ArchetypeId,
        edge: usize,
        entities: &[Entity],
        rows: &[u32],
    ) -> Vec<B> {
        let now = tick_now(&mut self.change_tick);
        let edge = &self.archetypes.remove_edges[edge];
        let (src, dst) = pair_mut(self.archetypes.archetypes.all_mut(), source, edge.target);
        // The only steps that can fail come before anything changes.
        let mut removed = Vec::with_capacity(entities.len());
        dst.table.reserve(entities.len());
        if !edge.logged.is_empty() {
            self.removals.record(&edge.logged, entities);
        }
        // SAFETY: room is reserved in the target and in `removed`. The edge comes from
        // `source` and its bundle is present (checked by the caller), so `move_map` names the
        // target column of the same component for every kept column and fills the whole
        // target row, and `bundle_columns` are the unmapped source columns of `B`'s fields,
        // whose values stay at their rows here. `rows` (or, when empty, `0..entities.len()`)
        // are all of the source's rows, each once, so each removed value is read exactly once,
        // and row `r` landed at `start + r`; the entities from `start` on are the moved ones,
        // all live. Nothing in between can panic, and the source is detached right after.
        unsafe {
            let start = src.table.move_all_rows(&mut dst.table, &edge.move_map, now);
            let columns = &edge.bundle_columns;
            if rows.is_empty() {
                let table = &src.table;
                removed.extend((0..entities.len()).map(|row| B::take_at(table, columns, row)));
            } else {
                for &row in rows {
                    removed.push(B::take_at(&src.table, columns, row as usize));
                }
            }
            // The moved entities, in their new rows.
            self.entities
                .place_rows(edge.target, &dst.table.entities()[start..], start);
        }
        // Every value has moved or been read out and every entity's location is recorded:
        // the source keeps no rows, and nothing is dropped.
        src.table.detach_rows();
        removed
    }
}
