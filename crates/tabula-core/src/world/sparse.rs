//! The structural paths of sparse components (`storage/sparse.rs`): inserting, removing,
//! spawning and despawning them, and reading them by entity.
//!
//! A bundle with a sparse field never follows an archetype edge (`BundleInfo::sparse`; the
//! edge builders refuse one). The out-of-line general paths of `insert`, `remove` and
//! `spawn` test that flag once and come here; the inline fast paths never see such a
//! bundle, since its edges are never made. So the all-table paths pay one test of a flag
//! that is already in cache, on their out-of-line path only. After the first one-entity
//! insert (or removal) of a one-field sparse bundle type, the world's recent-move entry for
//! that kind names the component (`Archetypes::remember_sparse`), and the next ones come
//! from the inline path's miss straight here, past the general path's lookups.
//!
//! A one-field bundle of a sparse component (the common case, `insert(e, (Stunned,))`) is
//! written straight into the set's dense column. A bundle mixing table and sparse fields is
//! first written into a one-row scratch table of all its fields; the table fields then go
//! through the by-id structural path as one bundle (one archetype move, with its hooks) and
//! the sparse fields into their sets.
//!
//! Hooks, as for table components: `on_replace` (a replaced or removed value, still there),
//! `on_add` (new to the entity), `on_insert` (every written value), `on_remove` (before the
//! value goes), `on_despawn`; observers are hooks, so they fire too. In a mixed bundle the
//! table fields' hooks of a kind run before the sparse fields' of that kind; a removal runs
//! every `on_replace`/`on_remove` hook with the entity whole, then removes the values.
//! Removals of a [tracked](crate::World::track_removals) sparse component are logged.

use std::cell::Cell;
use std::ptr;

use smallvec::SmallVec;

use super::World;
use super::hooks::{ComponentList, HookKind};
use super::structural::{InsertValues, RemoveValues};
use crate::bundle::{Bundle, BundleId};
use crate::change::{ComponentTicks, Mut, RunTicks, Tick};
use crate::component::{Component, ComponentId};
use crate::entity::Entity;
use crate::error::EntityError;
use crate::location::EntityLocation;
use crate::storage::{SparseSet, Table};

impl World {
    /// Makes component `id` sparse. Refused (a panic naming the component) once the
    /// component is stored in a table or listed by a bundle the world has seen.
    #[track_caller]
    pub(super) fn make_sparse(&mut self, id: ComponentId) {
        let info = self.components.info(id);
        if info.is_sparse() {
            return;
        }
        let in_table = (self.archetypes.archetypes.all().iter()).any(|a| a.column_of(id).is_some());
        let in_bundle = (self.bundles.infos.iter()).any(|b| b.fields.contains(&id));
        assert!(
            !in_table && !in_bundle,
            "component `{}` cannot become a sparse-set component: it is already a column of an \
             archetype table or a field of a bundle the world has seen (an entity was spawned \
             or inserted with it, or a bundle naming it was used). Choose the storage first, \
             right after `World::new()`: `world.register_component::<T>().sparse_set()`",
            info.name()
        );
        assert!(
            !self.archetypes.disabling.contains(&id),
            "component `{}` cannot become a sparse-set component: it disables entities, and \
             queries skip disabled entities by archetype, which a sparse component is in none of",
            info.name()
        );
        self.components.set_sparse(id);
        self.sparse.make(self.components.info(id));
        self.archetypes.archetypes.sparse_registered();
    }

    /// True when the sparse component `id` is held by `entity` (false for a table component).
    #[inline]
    pub(crate) fn sparse_contains(&self, id: ComponentId, entity: Entity) -> bool {
        self.sparse.get(id).is_some_and(|set| set.contains(entity))
    }

    /// The sparse set of component `T`, if `T` is registered and sparse.
    #[inline]
    pub(crate) fn sparse_set_of<T: Component>(&self) -> Option<&SparseSet> {
        if !self.sparse.any() {
            return None;
        }
        self.sparse.get(self.components.id::<T>()?)
    }

    /// `has::<T>` for a sparse `T`; false for a table one.
    #[cold]
    #[inline(never)]
    pub(super) fn sparse_has<T: Component>(&self, entity: Entity) -> bool {
        self.sparse_set_of::<T>().is_some_and(|set| set.contains(entity))
    }

    /// Where `get::<T>` finds a sparse `T`: the value array of `T`'s set and `entity`'s row
    /// in it; `None` when `T` is not sparse or `entity` lacks it. The array stores `T`s and
    /// the row is live.
    #[cold]
    #[inline(never)]
    pub(super) fn sparse_values_of<T: Component>(&self, entity: Entity) -> Option<(*mut u8, u32)> {
        let set = self.sparse_set_of::<T>()?;
        let row = set.row_of(entity)?;
        // A set's rows are its `u32` slots less one.
        Some((set.table().column(0).data_ptr(), row as u32))
    }

    /// `get_mut::<T>` for a sparse `T`, once `entity` is known alive: `None` when `T` is not
    /// sparse or `entity` lacks it.
    #[cold]
    #[inline(never)]
    pub(super) fn sparse_get_mut<T: Component>(
        &mut self,
        entity: Entity,
        run: RunTicks,
        check: bool,
    ) -> Option<Result<Mut<'_, T>, EntityError>> {
        let id = self.components.id::<T>()?;
        if check && self.components.info(id).is_immutable() {
            let set = self.sparse.get(id)?;
            set.row_of(entity)?;
            return Some(Err(EntityError::ImmutableComponent {
                entity,
                component: std::any::type_name::<T>(),
            }));
        }
        let set = self.sparse.get(id)?;
        let row = set.row_of(entity)?;
        let column = set.table().column(0);
        let ticks = column.ticks_base();
        // SAFETY: the column stores `T` and `row` is live; `&mut self` makes these the only
        // references into the set's values and ticks for the borrow; the value and the
        // `changed` tick are disjoint (as in `get_mut`).
        Some(Ok(unsafe {
            Mut::new(
                &mut *column.ptr(row).cast::<T>(),
                ComponentTicks::added_at(ticks, row),
                &mut *ComponentTicks::changed_at(ticks, row),
                column.changed_floor(run.this_run),
                run,
            )
        }))
    }

    /// Runs `kind`'s hooks of the `components` that have any.
    fn run_sparse_hooks(&mut self, kind: HookKind, entity: Entity, components: &[ComponentId]) {
        if !components.is_empty() {
            self.run_hooks(kind, entity, components);
        }
    }

    /// `spawn` of a bundle with a sparse field: an empty entity, then the insert.
    #[cold]
    #[inline(never)]
    pub(super) fn spawn_with_sparse<B: Bundle>(&mut self, bundle: B) -> Entity {
        let entity = self.spawn(());
        let id = self.bundles.id_of::<B>(&mut self.components);
        self.insert_with_sparse::<B, true>(entity, id, bundle);
        entity
    }

    /// Inserts bundle `B` (bundle `id`), which has a sparse field, into live `entity`, with
    /// reservations flushed (the callers, `insert_general` and `spawn_with_sparse`, did
    /// both). With `APPLY`, the hooks' commands are applied before it returns.
    ///
    /// A one-field bundle of a component without hooks (observers and required components
    /// are hooks too) is the fast path: the flag word is tested once, and the value goes
    /// straight into the set's column, a new row or over the old value. Safe because with no
    /// hook nothing else has to see the entity before or after the write.
    #[inline(always)]
    pub(super) fn insert_with_sparse<B: Bundle, const APPLY: bool>(
        &mut self,
        entity: Entity,
        id: BundleId,
        bundle: B,
    ) {
        if B::FIELDS == 1 {
            let component = self.bundles.infos[id].fields[0];
            // The next one-entity insert of `B` comes straight to the set
            // (`World::cached_move`, `insert_sparse_recent`).
            self.archetypes.remember_sparse::<B>(false, component);
            return self.insert_one_sparse::<B, APPLY>(entity, component, bundle);
        }
        self.insert_sparse_mixed::<B, APPLY>(entity, id, bundle);
    }

    /// A one-entity insert of one-field bundle `B`, whose field is sparse `component`, into
    /// live `entity`, with no upkeep due: where the inline path of `insert` goes once the
    /// world's recent entry names `B` as sparse. Out of line, so that the table path keeps
    /// its registers. The common case (no hooks, a value new to the entity, room in the set)
    /// makes no call, so the function saves no registers (81 instructions per warm insert
    /// in the `add_remove/tabula_sparse` loop, against 93 when it called `push_uninit`); the
    /// rest goes to [`insert_one_sparse`](Self::insert_one_sparse).
    #[inline(never)]
    pub(super) fn insert_sparse_recent<B: Bundle>(
        &mut self,
        entity: Entity,
        component: ComponentId,
        bundle: B,
    ) {
        let info = self.components.info(component);
        debug_assert!(
            info.type_id().is_some_and(B::has_type),
            "`component` is `B`'s field"
        );
        if !info.has_hooks(u8::MAX) {
            let set = self
                .sparse
                .get_mut(component)
                .expect("the bundle's one field is sparse");
            // SAFETY: the row is written at once, and nothing in between can panic.
            if let Some(row) = unsafe { set.push_uninit_in_room(entity) } {
                let tick = super::tick_now(&mut self.change_tick);
                // SAFETY: the set is `component`'s, `B`'s one field (the callers take it from
                // the world's recent entry for `B`, whose `RecentMove` invariant says so), so
                // its one column (index 0) stores that field's type; `row` was just pushed,
                // uninitialised.
                unsafe { bundle.write_new(set.table_mut(), &[0], row, tick) };
                return;
            }
        }
        self.insert_sparse_unusual(entity, component, bundle);
    }

    /// The rest of [`insert_sparse_recent`](Self::insert_sparse_recent).
    #[cold]
    #[inline(never)]
    fn insert_sparse_unusual<B: Bundle>(&mut self, entity: Entity, component: ComponentId, bundle: B) {
        self.insert_one_sparse::<B, true>(entity, component, bundle);
    }

    /// [`insert_sparse_recent`](Self::insert_sparse_recent) for `remove`: the common case
    /// (no hooks, no removal log, the entity holds the component) makes no call.
    #[inline(never)]
    pub(super) fn remove_sparse_recent<B: Bundle>(
        &mut self,
        entity: Entity,
        component: ComponentId,
    ) -> Result<B, EntityError> {
        self.remove_one_sparse::<B, true>(entity, component)
    }

    /// [`insert_with_sparse`](Self::insert_with_sparse) of one-field bundle `B` of sparse
    /// `component` into live `entity`, with nothing to flush: also the rest of
    /// [`insert_sparse_recent`](Self::insert_sparse_recent).
    #[inline(always)]
    pub(super) fn insert_one_sparse<B: Bundle, const APPLY: bool>(
        &mut self,
        entity: Entity,
        component: ComponentId,
        bundle: B,
    ) {
        if self.components.info(component).has_hooks(u8::MAX) {
            return self.insert_sparse_hooked::<B, APPLY>(entity, component, bundle);
        }
        self.write_one_sparse(entity, component, bundle);
    }

    /// Writes one-field bundle `B`'s value as `entity`'s value of sparse `component` (the
    /// bundle's one field), stamped now: a new row (`true`: added) or over the old value,
    /// which is dropped (`false`). No hooks.
    #[inline(always)]
    fn write_one_sparse<B: Bundle>(&mut self, entity: Entity, component: ComponentId, bundle: B) -> bool {
        let tick = super::tick_now(&mut self.change_tick);
        let set = self
            .sparse
            .get_mut(component)
            .expect("the bundle's one field is sparse");
        write_sparse_value(set, entity, bundle, tick)
    }

    /// [`insert_with_sparse`](Self::insert_with_sparse) of a one-field bundle of sparse
    /// `component`, which has hooks: `on_replace` (if the entity has it), the write, `on_add`
    /// (if it did not), `on_insert`.
    #[cold]
    #[inline(never)]
    fn insert_sparse_hooked<B: Bundle, const APPLY: bool>(
        &mut self,
        entity: Entity,
        component: ComponentId,
        bundle: B,
    ) {
        let present = self.sparse_contains(component, entity);
        if present {
            self.run_hooks(HookKind::Replace, entity, &[component]);
        }
        let added = self.write_one_sparse(entity, component, bundle);
        if added {
            self.run_hooks(HookKind::Add, entity, &[component]);
        }
        self.run_hooks(HookKind::Insert, entity, &[component]);
        if APPLY {
            self.apply_hook_commands();
        }
    }

    /// [`insert_with_sparse`](Self::insert_with_sparse) of a bundle of several fields.
    #[cold]
    #[inline(never)]
    fn insert_sparse_mixed<B: Bundle, const APPLY: bool>(&mut self, entity: Entity, id: BundleId, bundle: B) {
        {
            let fields: SmallVec<[ComponentId; 8]> = self.bundles.infos[id].fields.iter().copied().collect();
            let mut scratch = Scratch::new(self, &fields);
            let tick = super::tick_now(&mut self.change_tick);
            // SAFETY: the scratch table has one column per field, in field order, and its one
            // row was just pushed, uninitialised.
            unsafe { bundle.write_new(&mut scratch.table, &scratch.columns, 0, tick) };
            scratch.live.iter().for_each(|live| live.set(true));
            self.insert_scratch(entity, &fields, scratch, tick);
        }
        if APPLY {
            self.apply_hook_commands();
        }
    }

    /// Inserts the values of `scratch` (one per field of `fields`, all initialised and live,
    /// moved out here) into `entity`: the table fields as one bundle by id, the sparse ones
    /// into their sets. A value is marked not live as it is moved out, so a panicking hook
    /// leaves the ones not yet moved to the scratch's `Drop`.
    fn insert_scratch(&mut self, entity: Entity, fields: &[ComponentId], scratch: Scratch, tick: Tick) {
        let (mut table_fields, mut sparse_fields): (SmallVec<[(ComponentId, usize); 8]>, SmallVec<[_; 8]>) =
            (SmallVec::new(), SmallVec::new());
        for (i, &c) in fields.iter().enumerate() {
            if self.components.info(c).is_sparse() {
                sparse_fields.push((c, i));
            } else {
                table_fields.push((c, i));
            }
        }
        table_fields.sort_unstable();
        sparse_fields.sort_unstable();
        if !table_fields.is_empty() {
            let ids: SmallVec<[ComponentId; 8]> = table_fields.iter().map(|&(c, _)| c).collect();
            let bundle = self.bundles.id_of_components(&ids);
            let values = ValuesIn {
                live: &scratch.live,
                values: (table_fields.iter())
                    .map(|&(c, i)| {
                        let info = self.components.info(c);
                        // SAFETY: column `i` of the scratch table holds field `i` at row 0.
                        let ptr = unsafe { scratch.table.column(i).ptr(0) };
                        (ptr, info.layout().size(), info.drop_fn(), i)
                    })
                    .collect(),
            };
            let location = self.location(entity).expect("the entity is alive");
            self.insert_bundle_at::<_, false>(entity, location, bundle, values);
        }
        let present: ComponentList = (sparse_fields.iter())
            .map(|&(c, _)| c)
            .filter(|&c| self.sparse_contains(c, entity))
            .collect();
        self.run_sparse_hooks(HookKind::Replace, entity, &present);
        let mut added = ComponentList::new();
        for &(c, i) in &sparse_fields {
            let set = self.sparse.get_mut(c).expect("a sparse field has a set");
            // SAFETY: column `i` of the scratch holds field `i`'s value at row 0, live (no
            // earlier step moved it), of the set's component. It is marked not live before it
            // is given up to the set, which owns it from then on (a replaced old value is
            // dropped in the scratch slot by the set, once).
            unsafe {
                let src = scratch.table.column(i).ptr(0);
                scratch.live[i].set(false);
                if set.write_or_replace(entity, src, tick) {
                    added.push(c);
                }
            }
        }
        self.run_sparse_hooks(HookKind::Add, entity, &added);
        let inserted: ComponentList = sparse_fields.iter().map(|&(c, _)| c).collect();
        self.run_sparse_hooks(HookKind::Insert, entity, &inserted);
    }

    /// Removes bundle `B` (bundle `id`), which has a sparse field, from live `entity` at
    /// `location` and returns it; reservations are flushed (the caller's `remove_general`
    /// did all three). With `HOOKS`, the `on_replace` and `on_remove` hooks run first (and
    /// their commands after).
    ///
    /// A one-field bundle of a component without hooks and without a removal log is the
    /// fast path: the flag word is tested once, and the value is read out of the set's
    /// column and the hole filled by the last row. Safe because with no hook and no log
    /// nothing else has to see the entity before the value goes.
    #[inline(always)]
    pub(super) fn remove_with_sparse<B: Bundle, const HOOKS: bool>(
        &mut self,
        entity: Entity,
        location: EntityLocation,
        id: BundleId,
    ) -> Result<B, EntityError> {
        if B::FIELDS == 1 {
            let component = self.bundles.infos[id].fields[0];
            // The next one-entity removal of `B` comes straight to the set
            // (`World::cached_move`, `remove_sparse_recent`).
            self.archetypes.remember_sparse::<B>(true, component);
            return self.remove_one_sparse::<B, HOOKS>(entity, component);
        }
        self.remove_sparse_mixed::<B, HOOKS>(entity, location, id)
    }

    /// [`remove_with_sparse`](Self::remove_with_sparse) of one-field bundle `B` of sparse
    /// `component` from live `entity`, with nothing to flush: also where
    /// [`remove_sparse_recent`](Self::remove_sparse_recent) goes.
    #[inline(always)]
    pub(super) fn remove_one_sparse<B: Bundle, const HOOKS: bool>(
        &mut self,
        entity: Entity,
        component: ComponentId,
    ) -> Result<B, EntityError> {
        debug_assert_eq!(B::FIELDS, 1);
        let info = self.components.info(component);
        debug_assert!(
            info.type_id().is_some_and(B::has_type),
            "`component` is `B`'s field"
        );
        if info.has_hooks(u8::MAX) | info.logs_removals() {
            return self.remove_sparse_hooked::<B, HOOKS>(entity, component);
        }
        let set = self
            .sparse
            .get_mut(component)
            .expect("the bundle's one field is sparse");
        match take_sparse_value(set, entity) {
            Some(removed) => Ok(removed),
            None => Err(self.missing_sparse(entity, component)),
        }
    }

    /// The error for `entity` lacking sparse `component`.
    #[cold]
    pub(super) fn missing_sparse(&self, entity: Entity, component: ComponentId) -> EntityError {
        EntityError::MissingComponent {
            entity,
            component: self.components.info(component).name(),
        }
    }

    /// [`remove_with_sparse`](Self::remove_with_sparse) of a one-field bundle of sparse
    /// `component`, which has hooks or a removal log.
    #[cold]
    #[inline(never)]
    fn remove_sparse_hooked<B: Bundle, const HOOKS: bool>(
        &mut self,
        entity: Entity,
        component: ComponentId,
    ) -> Result<B, EntityError> {
        let info = self.components.info(component);
        let (hooked, logged) = (info.has_hooks(u8::MAX), info.logs_removals());
        if !self.sparse_contains(component, entity) {
            return Err(self.missing_sparse(entity, component));
        }
        if HOOKS && hooked {
            self.run_hooks(HookKind::Replace, entity, &[component]);
            self.run_hooks(HookKind::Remove, entity, &[component]);
            self.flush();
        }
        if logged {
            self.removals.record(&[component], &[entity]);
        }
        let set = self
            .sparse
            .get_mut(component)
            .expect("the bundle's one field is sparse");
        let removed = take_sparse_value(set, entity).expect("checked above; hooks make no structural change");
        if HOOKS && hooked {
            self.apply_hook_commands();
        }
        Ok(removed)
    }

    /// [`remove_with_sparse`](Self::remove_with_sparse) of a bundle of several fields.
    #[cold]
    #[inline(never)]
    fn remove_sparse_mixed<B: Bundle, const HOOKS: bool>(
        &mut self,
        entity: Entity,
        location: EntityLocation,
        id: BundleId,
    ) -> Result<B, EntityError> {
        let fields: SmallVec<[ComponentId; 8]> = self.bundles.infos[id].fields.iter().copied().collect();
        let archetype = self.archetype_at(location);
        if let Some(&missing) = fields.iter().find(|&&c| {
            if self.components.info(c).is_sparse() {
                !self.sparse_contains(c, entity)
            } else {
                archetype.column_of(c).is_none()
            }
        }) {
            return Err(EntityError::MissingComponent {
                entity,
                component: self.components.info(missing).name(),
            });
        }
        let (table_ids, sparse_ids): (ComponentList, ComponentList) = fields
            .iter()
            .copied()
            .partition(|&c| !self.components.info(c).is_sparse());
        let (mut table_ids, mut sparse_ids) = (table_ids, sparse_ids);
        table_ids.sort_unstable();
        sparse_ids.sort_unstable();
        let table_bundle = (!table_ids.is_empty()).then(|| self.bundles.id_of_components(&table_ids));
        if HOOKS {
            let mut all: ComponentList = fields.iter().copied().collect();
            all.sort_unstable();
            self.run_hooks(HookKind::Replace, entity, &all);
            self.run_hooks(HookKind::Remove, entity, &all);
            // Hooks make no structural change; they may have reserved ids.
            self.flush();
        }
        let scratch = Scratch::new(self, &fields);
        for &c in &sparse_ids {
            if self.components.info(c).logs_removals() {
                self.removals.record(&[c], &[entity]);
            }
            let i = fields.iter().position(|&f| f == c).expect("a field");
            let size = self.components.info(c).layout().size();
            let set = self.sparse.get_mut(c).expect("a sparse field has a set");
            let row = set
                .row_of(entity)
                .expect("checked above; hooks make no structural change");
            // SAFETY: `row` holds the entity's value; it is moved bit for bit into the scratch
            // row's column `i` (of the same component, uninitialised), then the set forgets it
            // and the scratch owns it (live).
            unsafe {
                ptr::copy_nonoverlapping(
                    set.table().column(0).ptr(row),
                    scratch.table.column(i).ptr(0),
                    size,
                );
                set.swap_remove_taken(row);
            }
            scratch.live[i].set(true);
        }
        if let Some(bundle) = table_bundle {
            let mut out = ValuesOut {
                to: [(ptr::null_mut(), 0); 16],
            };
            for (slot, &c) in out.to.iter_mut().zip(&table_ids) {
                let i = fields.iter().position(|&f| f == c).expect("a field");
                let size = self.components.info(c).layout().size();
                // SAFETY: column `i` of the scratch has room for row 0.
                *slot = (unsafe { scratch.table.column(i).ptr(0) }, size);
            }
            self.remove_bundle::<_, false>(entity, bundle, out)
                .expect("checked above; hooks make no structural change");
            for &c in &table_ids {
                let i = fields.iter().position(|&f| f == c).expect("a field");
                scratch.live[i].set(true);
            }
        }
        // Every value is moved out into `removed` just below: none is left to the scratch.
        scratch.live.iter().for_each(|live| live.set(false));
        // SAFETY: every field's value now sits in its scratch column at row 0 (moved out of
        // the sets and the table above); each is read once (the scratch no longer owns it).
        let removed = unsafe { B::take_at(&scratch.table, &scratch.columns, 0) };
        drop(scratch);
        if HOOKS {
            self.apply_hook_commands();
        }
        Ok(removed)
    }

    /// Takes every sparse value `entity` holds out of its set (after logging tracked
    /// removals), without dropping any: they are dropped with the returned scratch, once the
    /// caller has freed the entity (`None`, with no scratch made, when it holds none). No
    /// hooks: `despawn` ran them.
    #[cold]
    #[inline(never)]
    pub(super) fn take_sparse(&mut self, entity: Entity) -> Option<Scratch> {
        let held = self.sparse.held_by(entity);
        if held.is_empty() {
            return None;
        }
        for &c in &held {
            if self.components.info(c).logs_removals() {
                self.removals.record(&[c], &[entity]);
            }
        }
        let scratch = Scratch::new(self, &held);
        for (i, &c) in held.iter().enumerate() {
            let size = self.components.info(c).layout().size();
            let set = self.sparse.get_mut(c).expect("held by the entity");
            let row = set.row_of(entity).expect("held by the entity");
            // SAFETY: as in `remove_with_sparse`: `row` holds the entity's value, moved bit
            // for bit into the scratch's column `i` (same component, uninitialised), then the
            // set forgets it and the scratch owns it.
            unsafe {
                ptr::copy_nonoverlapping(
                    set.table().column(0).ptr(row),
                    scratch.table.column(i).ptr(0),
                    size,
                );
                set.swap_remove_taken(row);
            }
            scratch.live[i].set(true);
        }
        Some(scratch)
    }

    /// `insert_by_id` of sparse component `id` into live `entity`, with its hooks.
    ///
    /// # Safety
    /// `value` points at a valid value of component `id`, owned by the caller and given up
    /// here (moved into the set, or swapped with the old value, which is dropped).
    pub(super) unsafe fn insert_sparse_by_id(&mut self, entity: Entity, id: ComponentId, value: *mut u8) {
        let present = self.sparse_contains(id, entity);
        if present {
            self.run_hooks(HookKind::Replace, entity, &[id]);
        }
        let tick = super::tick_now(&mut self.change_tick);
        let set = self.sparse.get_mut(id).expect("a sparse component has a set");
        // SAFETY: `value` is a valid value of component `id`, the set's, given up by the
        // caller (this function's contract).
        unsafe { set.write_or_replace(entity, value, tick) };
        if !present {
            self.run_hooks(HookKind::Add, entity, &[id]);
        }
        self.run_hooks(HookKind::Insert, entity, &[id]);
        self.apply_hook_commands();
    }

    /// `remove_by_id` of sparse component `id` from live `entity`: hooks, the removal log,
    /// then the value is dropped. Returns whether the entity had it.
    pub(super) fn remove_sparse_by_id(&mut self, entity: Entity, id: ComponentId) -> bool {
        if !self.sparse_contains(id, entity) {
            return false;
        }
        self.run_hooks(HookKind::Replace, entity, &[id]);
        self.run_hooks(HookKind::Remove, entity, &[id]);
        self.flush();
        if self.components.info(id).logs_removals() {
            self.removals.record(&[id], &[entity]);
        }
        let set = self.sparse.get_mut(id).expect("a sparse component has a set");
        if let Some(row) = set.row_of(entity) {
            // SAFETY: `row` is live.
            unsafe { set.swap_remove_and_drop(row) };
        }
        self.apply_hook_commands();
        true
    }
}

/// Writes one-field bundle `B`'s value, a value of the component `set` stores, as
/// `entity`'s, stamped `tick`: a new row (`true`: added) or over the old value, which is
/// dropped (`false`). No hooks: the callers checked that the component has none.
#[inline(always)]
pub(super) fn write_sparse_value<B: Bundle>(
    set: &mut SparseSet,
    entity: Entity,
    bundle: B,
    tick: Tick,
) -> bool {
    debug_assert_eq!(B::FIELDS, 1);
    let row = set.row_of(entity);
    // SAFETY: the set's one column (index 0) stores the bundle's one field (the callers'
    // set is that field's); `row` is either the entity's (`Some`: initialised, replaced) or
    // `None`, and then a row is freshly pushed (uninitialised) and written at once; writing
    // cannot panic.
    unsafe {
        match row {
            Some(row) => bundle.write_or_replace(set.table_mut(), &[0], &[true], row, tick),
            None => {
                let row = set.push_uninit(entity);
                bundle.write_new(set.table_mut(), &[0], row, tick);
            }
        }
    }
    row.is_none()
}

/// Moves `entity`'s value out of `set` as one-field bundle `B` (of the component the set
/// stores) and fills the hole with the last row; `None` if `entity` has no value there. No
/// hooks and no removal log: the callers ran or recorded them.
#[inline(always)]
pub(super) fn take_sparse_value<B: Bundle>(set: &mut SparseSet, entity: Entity) -> Option<B> {
    debug_assert_eq!(B::FIELDS, 1);
    let row = set.row_of(entity)?;
    // SAFETY: the set's one column (index 0) stores the bundle's one field (the callers'
    // set is that field's) and `row` holds the entity's value: read once, then the set
    // forgets the row.
    Some(unsafe {
        let removed = B::take_at(set.table(), &[0], row);
        // Typed, the refill needs no dispatch on the value size (about 13 instructions less
        // per one-entity removal).
        set.swap_remove_filling(row, |table, row, last| B::refill_at(table, &[0], row, last));
        removed
    })
}

/// A one-row table with a column per field of a bundle, in field order: where a mixed
/// bundle's values wait between the typed bundle and their stores.
///
/// Invariant: `live[i]` is true exactly when column `i` holds, at row 0, an initialised value
/// the scratch owns. The row itself is never dropped by the table: the scratch's `Drop`
/// drops the live values and forgets the row, so it is sound whatever panics where.
pub(super) struct Scratch {
    table: Table,
    columns: SmallVec<[u32; 8]>,
    live: SmallVec<[Cell<bool>; 8]>,
}

impl Scratch {
    /// A scratch row for `fields`, every column uninitialised (not live).
    fn new(world: &World, fields: &[ComponentId]) -> Self {
        let mut table = Table::new(fields.iter().map(|&c| world.components.info(c)));
        // SAFETY: the row's slots are only dropped through `live`, which starts all false;
        // `Scratch::drop` forgets the row before the table is dropped, so `Table::drop` never
        // sees it.
        unsafe { table.push_uninit(Entity::new(u32::MAX, std::num::NonZeroU32::MIN)) };
        Self {
            table,
            columns: (0..fields.len() as u32).collect(),
            live: fields.iter().map(|_| Cell::new(false)).collect(),
        }
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        // SAFETY: row 0 is the only row (pushed in `new`); its values are owned through
        // `live` from here on, not by the table.
        unsafe { self.table.forget_last_row(0) };
        let table = &mut self.table;
        crate::storage::drop_each(self.live.iter().enumerate(), |(i, live)| {
            if live.replace(false) {
                // SAFETY: `live[i]` says column `i` holds an initialised value at row 0 that
                // the scratch owns (the row's memory outlives the forgotten row); it is
                // marked not live first, so it is dropped once.
                unsafe { table.column_unchecked_mut(i).drop_in_place(0) };
            }
        });
    }
}

/// Table fields of a mixed bundle, inserted by id: [`InsertValues`] for values in a scratch
/// table, in the sub-bundle's field order (ids sorted).
///
/// Each value is its pointer, size, drop and scratch column; writing marks every one of them
/// not live in the scratch (`live`), as they are moved out (or swapped for the old values,
/// dropped here).
struct ValuesIn<'a> {
    live: &'a [Cell<bool>],
    values: SmallVec<[(*mut u8, usize, Option<unsafe fn(*mut u8)>, usize); 8]>,
}

impl ValuesIn<'_> {
    /// The values leave the scratch: it no longer drops them.
    fn taken(&self) {
        for &(.., i) in &self.values {
            self.live[i].set(false);
        }
    }
}

impl InsertValues for ValuesIn<'_> {
    // More than one, or one: only compared with 0 and 1, to pick the write order; the
    // general order (`write_or_replace` after the move) is right for any count.
    const FIELDS: usize = 2;

    unsafe fn write_new(self, table: &mut Table, columns: &[u32], row: usize, tick: Tick) {
        self.taken();
        for (&(src, size, ..), &column) in self.values.iter().zip(columns) {
            // SAFETY: `columns[i]` stores field `i`'s component and `row` is free (the
            // caller's contract); `src` owns a value of that component, moved once.
            unsafe {
                let column = table.column_unchecked_mut(column as usize);
                ptr::copy_nonoverlapping(src, column.ptr(row), size);
                column.ticks_base().add(row).write(ComponentTicks::new(tick));
            }
        }
    }

    unsafe fn write_or_replace(
        self,
        table: &mut Table,
        columns: &[u32],
        replaced: &[bool],
        row: usize,
        tick: Tick,
    ) {
        self.taken();
        for ((&(src, size, ..), &column), &replaced) in self.values.iter().zip(columns).zip(replaced) {
            // SAFETY: as in `write_new`; a replaced slot is initialised, and its old value is
            // swapped into `src`'s memory, dropped below once every field is written.
            unsafe {
                let column = table.column_unchecked_mut(column as usize);
                if replaced {
                    ptr::swap_nonoverlapping(src, column.ptr(row), size);
                    ComponentTicks::changed_at(column.ticks_base(), row).write(tick);
                } else {
                    ptr::copy_nonoverlapping(src, column.ptr(row), size);
                    column.ticks_base().add(row).write(ComponentTicks::new(tick));
                }
            }
        }
        for (&(src, _, drop, _), &replaced) in self.values.iter().zip(replaced) {
            if let (true, Some(drop)) = (replaced, drop) {
                // SAFETY: `src` holds the replaced old value (swapped out above), dropped once.
                unsafe { drop(src) };
            }
        }
    }
}

/// Where the table fields of a mixed bundle go when removed: [`RemoveValues`] into a
/// scratch table's slots, in the sub-bundle's field order.
#[derive(Clone, Copy)]
struct ValuesOut {
    to: [(*mut u8, usize); 16],
}

impl RemoveValues for ValuesOut {
    const FIELDS: usize = 2;
    type Output = ();

    unsafe fn take_at(self, table: &Table, columns: &[u32], row: usize) {
        for (&(to, size), &column) in self.to.iter().zip(columns) {
            // SAFETY: `columns[i]` stores field `i`'s component and `row` holds a value (the
            // caller's contract); `to` is its scratch slot, outside the table; moved once.
            unsafe { ptr::copy_nonoverlapping(table.column_unchecked(column as usize).ptr(row), to, size) };
        }
    }
}
