//! Inserting and removing components: moving a row along a cached archetype edge.

use std::marker::PhantomData;

use crate::archetype::{Archetype, pair_mut_unchecked};
use crate::bundle::{Bundle, BundleId};
use crate::change::Tick;
use crate::component::{Component, ComponentId};
use crate::entity::{Entities, Entity};
use crate::error::EntityError;
use crate::location::ArchetypeId;
use crate::location::EntityLocation;
use crate::storage::Table;

use super::World;
use super::hooks::HookKind;

/// What an insert writes into its row: the fields of a typed [`Bundle`], or a value given
/// by component id (`world/by_id.rs`). The methods have `BundleStorage`'s contracts.
pub(crate) trait InsertValues: Sized {
    /// How many fields are written.
    const FIELDS: usize;

    /// As `BundleStorage::write_new`.
    ///
    /// # Safety
    /// `columns[i]` is a column of `table` storing field `i`'s component, all distinct, and
    /// `row` is a freshly pushed, uninitialised row of `table`.
    unsafe fn write_new(self, table: &mut Table, columns: &[u32], row: usize, tick: Tick);

    /// As `BundleStorage::write_or_replace`: fields with `replaced[i]` replace an
    /// initialised value (dropped after every field is written), the others fill
    /// uninitialised slots.
    ///
    /// # Safety
    /// As for `write_new`, except that slot `(columns[i], row)` is initialised exactly when
    /// `replaced[i]`.
    unsafe fn write_or_replace(
        self,
        table: &mut Table,
        columns: &[u32],
        replaced: &[bool],
        row: usize,
        tick: Tick,
    );
}

impl<B: Bundle> InsertValues for B {
    const FIELDS: usize = <B as crate::bundle::sealed::BundleStorage>::FIELDS;

    #[inline(always)]
    unsafe fn write_new(self, table: &mut Table, columns: &[u32], row: usize, tick: Tick) {
        // SAFETY: the same contract.
        unsafe { crate::bundle::sealed::BundleStorage::write_new(self, table, columns, row, tick) }
    }

    #[inline(always)]
    unsafe fn write_or_replace(
        self,
        table: &mut Table,
        columns: &[u32],
        replaced: &[bool],
        row: usize,
        tick: Tick,
    ) {
        // SAFETY: the same contract.
        unsafe {
            crate::bundle::sealed::BundleStorage::write_or_replace(self, table, columns, replaced, row, tick)
        }
    }
}

/// What a removal does with the values it takes out of the row: hand back a typed
/// [`Bundle`] ([`TakeBundle`]), or move them elsewhere (`world/by_id.rs`).
pub(crate) trait RemoveValues: Copy {
    /// How many fields are removed.
    const FIELDS: usize;
    /// What the removal returns.
    type Output;

    /// Moves the fields out of `row`, leaving those slots logically uninitialised.
    ///
    /// # Safety
    /// As `BundleStorage::take_at`: `columns[i]` is a column of `table` storing field `i`'s
    /// component, all distinct; `row` holds initialised values in them; each is read exactly
    /// once, and the caller treats the slots as empty afterwards. Must not panic.
    unsafe fn take_at(self, table: &Table, columns: &[u32], row: usize) -> Self::Output;
}

/// Removes a typed bundle `B` and returns it.
pub(crate) struct TakeBundle<B>(PhantomData<fn() -> B>);

impl<B> Clone for TakeBundle<B> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<B> Copy for TakeBundle<B> {}

impl<B: Bundle> RemoveValues for TakeBundle<B> {
    const FIELDS: usize = <B as crate::bundle::sealed::BundleStorage>::FIELDS;
    type Output = B;

    #[inline(always)]
    unsafe fn take_at(self, table: &Table, columns: &[u32], row: usize) -> B {
        // SAFETY: the same contract.
        unsafe { <B as crate::bundle::sealed::BundleStorage>::take_at(table, columns, row) }
    }
}

/// Where a one-entity move of a bundle goes, when the world's caches know
/// (`World::cached_move`).
enum Cached {
    /// Along the source archetype's cached `edge` (an index into the edges of the move's
    /// kind), from the entity's live location.
    Move(EntityLocation, usize),
    /// Into (or out of) the set of this sparse component, the bundle's one field; the entity
    /// is alive.
    Sparse(ComponentId),
}

impl World {
    /// Adds the components of `bundle` to `entity`. Components it already has are replaced
    /// and the old values dropped.
    ///
    /// ```
    /// let mut world = tabula::World::new();
    /// let e = world.spawn((1u32,));
    /// world.insert(e, (2u32, "tag"))?;
    /// assert_eq!(world.get::<u32>(e), Ok(&2));
    /// assert_eq!(world.get::<&str>(e), Ok(&"tag"));
    /// # Ok::<(), tabula::EntityError>(())
    /// ```
    ///
    /// The components' [hooks](crate::HookKind) run around the write: `on_replace` for the
    /// components the entity had (seeing the old values), then `on_add` for those it did not
    /// have and `on_insert` for all of them (seeing the new ones).
    ///
    /// # Errors
    /// [`EntityError::NoSuchEntity`] when `entity` is not alive.
    ///
    /// The common case — nothing to flush or clamp, the source archetype's cached edge, no
    /// hook, a move to a table with room — runs inline without a single call; everything
    /// else takes an out-of-line general path. A call anywhere
    /// in the inline path, however rare, would clobber the caller-saved registers, so the
    /// values live across it (entity, location, edge, tick, the caller's own loop) would sit
    /// on the stack and be reloaded on every insert.
    // Always inlined: the hot structural path. With several callers (the batch fallbacks)
    // the compiler would keep one out-of-line copy, about 25 more instructions per call.
    #[inline(always)]
    pub fn insert<B: Bundle>(&mut self, entity: Entity, bundle: B) -> Result<(), EntityError> {
        match self.try_insert_in_room(entity, bundle) {
            Ok(()) => Ok(()),
            Err((bundle, Some(component))) => {
                self.insert_sparse_recent(entity, component, bundle);
                Ok(())
            }
            Err((bundle, None)) => self.insert_general::<B, true>(entity, bundle),
        }
    }

    /// True when a structural operation has no upkeep to do first: no reservation to flush
    /// and no change-tick clamp due (see [`flush`](Self::flush)).
    #[inline(always)]
    fn no_upkeep_due(&mut self) -> bool {
        !self.entities.needs_flush() & (*self.change_tick.get_mut() < self.next_check_tick)
    }

    /// Where a one-entity insert (or, with `remove`, removal) of `B` goes when the cache
    /// knows: [`Cached::Move`] with `entity`'s location and the edge for `B` from its
    /// archetype, when the edge is cached in the world's entry for the last move of `B`
    /// ([`Archetypes::recent`](crate::archetype::Archetypes::recent)), else in the source
    /// archetype's own entry, which then becomes the world's; [`Cached::Sparse`] when the
    /// world's entry names `B` as one sparse component (`Archetypes::remember_sparse`) and
    /// `entity` is alive. `None` when the entity is not alive or nothing is cached. The edge
    /// returned is `location.archetype`'s edge of that kind for `B`: the source's cache holds
    /// only its own edges, and the world's entry only its source's (the `RecentMove`
    /// invariant).
    #[inline(always)]
    fn cached_move<B: Bundle>(&mut self, remove: bool, entity: Entity) -> Option<Cached> {
        // Read before the slot, so that the source taken from it below does not wait for the
        // slot (see `Archetypes::recent`).
        let recent = self.archetypes.recent::<B>(remove);
        let mut location = self.entities.get(entity)?;
        let edge = match recent {
            Some((source, edge)) if source == location.archetype => {
                // The same value, but the world's copy: the table addresses the move derives
                // from it then depend on the world, not on the slot.
                location.archetype = source;
                edge
            }
            // The sparse entry, tested once the table entry missed: the one-entity sparse
            // paths then skip the edge lookup that must miss and a second liveness test
            // out of line (`add_remove`'s `tabula_sparse`, 10k inserts and removals: with
            // the set paths that make no call, 2.70M → 2.01M instructions; the table loop's
            // code shifts by a few spills, 2.78M → 2.83M).
            Some((ArchetypeId::ABSENT, component)) if B::FIELDS == 1 => {
                return Some(Cached::Sparse(ComponentId::from_index(component)));
            }
            _ => {
                // SAFETY: a live entity's location names an existing archetype.
                let edge = unsafe {
                    self.archetypes
                        .cached_edge::<B>(&self.bundles, remove, location.archetype)
                }?;
                // SAFETY: `cached_edge` just returned `edge` as this source's edge of this
                // kind for `B`.
                unsafe { self.archetypes.remember::<B>(remove, location.archetype, edge) };
                edge
            }
        };
        Some(Cached::Move(location, edge))
    }

    /// The call-free common case of [`insert`](Self::insert); hands the bundle back when the
    /// case does not apply, with the sparse component that `B` is when the world's recent
    /// entry says so and the entity is alive (else `None`, and the entity may also be dead:
    /// the general path says so).
    #[inline(always)]
    fn try_insert_in_room<B: Bundle>(
        &mut self,
        entity: Entity,
        bundle: B,
    ) -> Result<(), (B, Option<ComponentId>)> {
        if !self.no_upkeep_due() {
            return Err((bundle, None));
        }
        let (location, edge) = match self.cached_move::<B>(false, entity) {
            Some(Cached::Move(location, edge)) => (location, edge),
            Some(Cached::Sparse(component)) => return Err((bundle, Some(component))),
            None => return Err((bundle, None)),
        };
        // SAFETY: a cached edge exists (edges are never removed), and so does its target.
        // `inline_target` is the source for a self-edge and for an edge whose bundle has
        // hooks: both leave through this one test.
        let room = unsafe {
            let target = self.archetypes.insert_edges.get_unchecked(edge).inline_target;
            target != location.archetype
                && (self.archetypes.archetypes.all())
                    .get_unchecked(target.index())
                    .table
                    .has_room()
        };
        if !room {
            return Err((bundle, None));
        }
        let tick = super::tick_now(&mut self.change_tick);
        // SAFETY: the edge is `location.archetype`'s edge for `B` and leads elsewhere, to a
        // table with room; the entity is live there.
        unsafe { self.insert_moving(entity, location, edge, bundle, tick, true) };
        Ok(())
    }

    /// Every insert [`try_insert_in_room`](Self::try_insert_in_room) leaves: upkeep first,
    /// a dead entity, an edge not cached (or not yet made), hooks, replacing in place, a
    /// target table that must grow. Out of line, so that its calls stay out of the common
    /// path. With `APPLY`, the hooks' commands are applied before it returns (a batch
    /// applies them once, at its end).
    #[inline(never)]
    pub(super) fn insert_general<B: Bundle, const APPLY: bool>(
        &mut self,
        entity: Entity,
        bundle: B,
    ) -> Result<(), EntityError> {
        self.flush();
        let location = self.location(entity)?;
        let id = self.bundles.id_of::<B>(&mut self.components);
        if self.bundles.infos[id].sparse {
            self.insert_with_sparse::<B, APPLY>(entity, id, bundle);
            return Ok(());
        }
        self.insert_bundle_at::<B, APPLY>(entity, location, id, bundle);
        Ok(())
    }

    /// The rest of [`insert_general`](Self::insert_general), once the bundle's id is known:
    /// writes `values` (bundle `id`'s fields, in its field order) into live `entity` at
    /// `location`, with hooks. The one insert path typed bundles and inserts by component
    /// id share. Reservations are flushed.
    #[inline(always)]
    pub(super) fn insert_bundle_at<V: InsertValues, const APPLY: bool>(
        &mut self,
        entity: Entity,
        location: EntityLocation,
        id: BundleId,
        values: V,
    ) {
        let edge = self
            .archetypes
            .insert_edge(&self.components, location.archetype, &self.bundles, id);
        // SAFETY: `insert_edge` returns the index of an existing edge (edges are never removed).
        let edge_ref = unsafe { self.archetypes.insert_edges.get_unchecked(edge) };
        if edge_ref.hooked {
            self.insert_hooked(entity, edge, values);
            if APPLY {
                self.apply_hook_commands();
            }
            return;
        }
        self.insert_along(entity, location, edge, values);
    }

    /// Inserts `bundle` into live `entity` along insert edge `edge`, whose bundle has hooks:
    /// `on_replace`, the write, `on_add`, `on_insert` (see [`hooks`](super::hooks)).
    #[cold]
    #[inline(never)]
    fn insert_hooked<B: InsertValues>(&mut self, entity: Entity, edge: usize, bundle: B) {
        let kept = super::hooks::ComponentList::from(&self.archetypes.insert_edges[edge].kept[..]);
        self.run_hooks(HookKind::Replace, entity, &kept);
        // Hooks make no structural change, so the entity is where it was and the edge is
        // still its own; they may have reserved ids, which the move must not leave unflushed.
        self.flush();
        let location = self.location(entity).expect("hooks make no structural change");
        self.insert_along(entity, location, edge, bundle);
        self.run_inserted_hooks(entity, edge);
    }

    /// Moves `entity` (live at `location`) along insert edge `edge`, `location.archetype`'s
    /// edge for `B`, or writes in place for a self-edge. No hooks.
    #[inline(always)]
    fn insert_along<B: InsertValues>(
        &mut self,
        entity: Entity,
        location: EntityLocation,
        edge: usize,
        bundle: B,
    ) {
        let tick = super::tick_now(&mut self.change_tick);
        // SAFETY: `edge` names an existing edge (edges are never removed).
        let target = unsafe { self.archetypes.insert_edges.get_unchecked(edge) }.target;

        if target == location.archetype {
            // Every component is already there: replace in place.
            let edge = &self.archetypes.insert_edges[edge];
            let table = &mut self.archetypes.archetypes.all_mut()[target.index()].table;
            let row = location.row as usize;
            // SAFETY: `row` is live, every field replaces an initialised value of its type
            // (`replaced` is all true for a self-edge) in distinct columns.
            unsafe { bundle.write_or_replace(table, &edge.bundle_columns, &edge.replaced, row, tick) };
            return;
        }
        // SAFETY: the edge is `location.archetype`'s edge for `B` and leads elsewhere; the
        // entity is live there.
        unsafe { self.insert_moving(entity, location, edge, bundle, tick, false) };
    }

    /// Moves `entity` along insert edge `edge` and writes `bundle` into its new row. With
    /// `in_room`, the target table is known to have room (no growing, so no call).
    ///
    /// # Safety
    /// `edge` is the insert edge for `B` of `location.archetype`, whose target differs from
    /// it; `location` is `entity`'s live location; with `in_room`, the target table has room.
    #[inline(always)]
    unsafe fn insert_moving<B: InsertValues>(
        &mut self,
        entity: Entity,
        location: EntityLocation,
        edge: usize,
        bundle: B,
        tick: Tick,
        in_room: bool,
    ) {
        // SAFETY: the caller names an existing edge.
        let edge = unsafe { self.archetypes.insert_edges.get_unchecked(edge) };
        // A one-field bundle that moves the entity replaces nothing: had the entity its one
        // component, the edge would be the self-edge. Then the plain write skips the test,
        // and comes before the row's other values move: nothing the caller holds is needed
        // after the column loop (callgrind: 5 to 10 instructions fewer per insert).
        debug_assert!(B::FIELDS != 1 || !edge.replaced[0]);
        let write_first = |_: &Table, _: usize, dst: &mut Table, dst_row: usize| {
            if B::FIELDS == 1 {
                // SAFETY: the bundle's one column is left empty by `move_map`, so its slot at
                // the freshly pushed row is uninitialised until written here.
                unsafe { bundle.write_new(dst, &edge.bundle_columns, dst_row, tick) };
                None
            } else {
                Some(bundle)
            }
        };
        // SAFETY: `move_map` maps every source column to the target column of the same
        // component (the target's set is a superset); the target columns it leaves empty are
        // exactly the fields with `replaced == false`, which `write_new` fills before the move
        // (for one field) or `write_or_replace` after it, and writing cannot panic. Old values
        // (if any) are dropped only after every field is written. The target differs from
        // the source and has room when `in_room` says so (the caller's contract).
        let (rest, dst, dst_row) = unsafe {
            move_entity(
                self.archetypes.archetypes.all_mut(),
                &mut self.entities,
                entity,
                location,
                edge.target,
                &edge.move_map,
                tick,
                in_room,
                write_first,
            )
        };
        if let Some(bundle) = rest {
            // SAFETY: see above.
            unsafe { bundle.write_or_replace(dst, &edge.bundle_columns, &edge.replaced, dst_row, tick) };
        }
    }

    /// Adds one component; shorthand for `insert(entity, (component,))`.
    pub fn insert_one<T: Component>(&mut self, entity: Entity, component: T) -> Result<(), EntityError> {
        self.insert(entity, (component,))
    }

    /// Removes the components of bundle type `B` from `entity` and returns them.
    ///
    /// If the entity lacks any of them, nothing is removed and the error names the first
    /// missing component.
    ///
    /// The components' `on_replace` and then `on_remove` [hooks](crate::HookKind) run first,
    /// with the entity whole (so removing one side of a
    /// [relationship](crate::relationship) updates the other).
    ///
    /// ```
    /// let mut world = tabula::World::new();
    /// let e = world.spawn((1u32, 2.5f64));
    /// assert_eq!(world.remove::<(f64,)>(e), Ok((2.5,)));
    /// assert!(world.remove::<(f64,)>(e).is_err());
    /// assert_eq!(world.get::<u32>(e), Ok(&1));
    /// ```
    // Always inlined, as `insert`.
    #[inline(always)]
    pub fn remove<B: Bundle>(&mut self, entity: Entity) -> Result<B, EntityError> {
        // A bundle with a hooked component never takes the fast path (its edge is `unusual`).
        match self.try_remove_in_room::<B>(entity) {
            Ok(removed) => Ok(removed),
            Err(Some(component)) => self.remove_sparse_recent::<B>(entity, component),
            Err(None) => self.remove_general::<B, true>(entity),
        }
    }

    /// The call-free common case of [`remove`](Self::remove): nothing to flush or
    /// clamp, a bundle with fields, the source archetype's cached edge, no missing
    /// component and no logged removal, and a target table with room. An error when the
    /// case does not apply: the sparse component that `B` is when the world's recent entry
    /// says so and the entity is alive, else `None` (the entity may also be dead: the
    /// general path says so).
    #[inline(always)]
    fn try_remove_in_room<B: Bundle>(&mut self, entity: Entity) -> Result<B, Option<ComponentId>> {
        if B::FIELDS == 0 || !self.no_upkeep_due() {
            return Err(None);
        }
        let (location, edge) = match self.cached_move::<B>(true, entity) {
            Some(Cached::Move(location, edge)) => (location, edge),
            Some(Cached::Sparse(component)) => return Err(Some(component)),
            None => return Err(None),
        };
        // SAFETY: a cached edge exists (edges are never removed), and so does its target.
        let room = unsafe {
            let edge = self.archetypes.remove_edges.get_unchecked(edge);
            !edge.unusual
                && (self.archetypes.archetypes.all())
                    .get_unchecked(edge.target.index())
                    .table
                    .has_room()
        };
        if !room {
            return Err(None);
        }
        let now = super::tick_now(&mut self.change_tick);
        // SAFETY: the edge is `location.archetype`'s edge for `B`, which has fields and none
        // missing, so it leads elsewhere (`RemoveEdge` invariant), to a table with room.
        Ok(unsafe { self.remove_moving(entity, location, edge, now, true, TakeBundle::<B>(PhantomData)) })
    }

    /// Every removal [`try_remove_in_room`](Self::try_remove_in_room) leaves. Out of line,
    /// as [`insert_general`](Self::insert_general).
    /// With `HOOKS`, the bundle's `on_replace` and `on_remove` hooks run first.
    #[inline(never)]
    pub(super) fn remove_general<B: Bundle, const HOOKS: bool>(
        &mut self,
        entity: Entity,
    ) -> Result<B, EntityError> {
        self.flush();
        let location = self.location(entity)?;
        let id = self.bundles.id_of::<B>(&mut self.components);
        if self.bundles.infos[id].sparse {
            return self.remove_with_sparse::<B, HOOKS>(entity, location, id);
        }
        self.remove_bundle_at::<TakeBundle<B>, HOOKS>(entity, location, id, TakeBundle(PhantomData))
    }

    /// Removes bundle `id`'s fields from `entity`, handing them to `values`, as
    /// [`remove_bundle_at`](Self::remove_bundle_at). Flushes reservations first.
    pub(super) fn remove_bundle<V: RemoveValues, const HOOKS: bool>(
        &mut self,
        entity: Entity,
        id: BundleId,
        values: V,
    ) -> Result<V::Output, EntityError> {
        self.flush();
        let location = self.location(entity)?;
        self.remove_bundle_at::<V, HOOKS>(entity, location, id, values)
    }

    /// The rest of [`remove_general`](Self::remove_general), once the bundle's id is known:
    /// removes bundle `id`'s fields from live `entity` at `location`, handing them to
    /// `values`. The one removal path typed bundles and removals by component id share.
    /// Reservations are flushed.
    #[inline(always)]
    fn remove_bundle_at<V: RemoveValues, const HOOKS: bool>(
        &mut self,
        entity: Entity,
        location: EntityLocation,
        id: BundleId,
        values: V,
    ) -> Result<V::Output, EntityError> {
        let edge = self
            .archetypes
            .remove_edge(&self.components, location.archetype, &self.bundles, id);
        // SAFETY: `remove_edge` returns the index of an existing edge (edges are never removed).
        let edge_ref = unsafe { self.archetypes.remove_edges.get_unchecked(edge) };
        // One test for the three rare cases: a missing component, hooks, tracked removals.
        if edge_ref.unusual {
            if let Some(component) = edge_ref.missing {
                return Err(EntityError::MissingComponent { entity, component });
            }
            if HOOKS && !edge_ref.hooked.is_empty() {
                // The hooks see the entity whole and make no structural change, so the
                // removal below finds every component still there; their commands run once
                // the bundle is out (it is handed to the caller, so no value is dropped
                // before them).
                self.run_removal_hooks(entity, edge);
                let removed = self.remove_bundle::<V, false>(entity, id, values);
                self.apply_hook_commands();
                return removed;
            }
            // Nothing can fail from here on, so the entity is logged before it moves.
            self.removals.record(&edge_ref.logged, &[entity]);
        }
        // Only the empty bundle removes nothing and stays put: for any other, an edge without
        // a missing component leads elsewhere (`RemoveEdge` invariant).
        if V::FIELDS == 0 {
            debug_assert!(edge_ref.target == location.archetype);
            // SAFETY: `V` has no fields, so nothing is read.
            return Ok(unsafe {
                values.take_at(
                    &self.archetypes.archetypes.all()[edge_ref.target.index()].table,
                    &[],
                    location.row as usize,
                )
            });
        }
        let now = super::tick_now(&mut self.change_tick);
        // SAFETY: as in `try_remove_in_room`, without the room.
        Ok(unsafe { self.remove_moving(entity, location, edge, now, false, values) })
    }

    /// Moves `entity` along remove edge `edge` and returns what `values` made of the removed
    /// values. With `in_room`, the target table is known to have room (no growing, so no
    /// call).
    ///
    /// # Safety
    /// `edge` is the remove edge of `location.archetype` for the bundle `values` takes, with
    /// no missing component, and the bundle has fields (so the target differs from the
    /// source); `location` is `entity`'s
    /// live location; with `in_room`, the target table has room.
    #[inline(always)]
    unsafe fn remove_moving<V: RemoveValues>(
        &mut self,
        entity: Entity,
        location: EntityLocation,
        edge: usize,
        now: Tick,
        in_room: bool,
        values: V,
    ) -> V::Output {
        // SAFETY: the caller names an existing edge.
        let edge = unsafe { self.archetypes.remove_edges.get_unchecked(edge) };
        debug_assert!(edge.target != location.archetype);
        // SAFETY: the target differs from the source (above); the target's set is the
        // source's minus `B`, so `move_map` fills every target column; `B`'s columns are the
        // unmapped ones, and `take_at` moves their values out at the entity's row
        // (`bundle_columns` are those source columns, one per field, each read once) before
        // `move_row` overwrites them. The target has room when `in_room` says so.
        let (removed, _, _) = unsafe {
            move_entity(
                self.archetypes.archetypes.all_mut(),
                &mut self.entities,
                entity,
                location,
                edge.target,
                &edge.move_map,
                now,
                in_room,
                |src, row, _, _| values.take_at(src, &edge.bundle_columns, row),
            )
        };
        removed
    }

    /// Removes one component and returns it; shorthand for `remove::<(T,)>`.
    pub fn remove_one<T: Component>(&mut self, entity: Entity) -> Result<T, EntityError> {
        self.remove::<(T,)>(entity).map(|(value,)| value)
    }
}

/// Moves `entity`'s row from `location` to archetype `target` along `move_map` and records
/// the new locations of `entity` and of the entity that filled its old row. Before the row
/// moves, `before` gets the source table and the row, and the target table and the entity's
/// new row there: to move out the values of the source columns `move_map` leaves unmapped,
/// or to fill the target columns it leaves empty. Returns what `before` returned, the
/// target table and the new row.
///
/// Always inlined: it is the body of every insert and remove, and a call would spill the
/// half-dozen values both sides keep in registers.
///
/// # Safety
/// `target != location.archetype` is an existing archetype, whose table has room when
/// `in_room` says so; `location` is `entity`'s live
/// location; `move_map` has one entry per source column, made by
/// [`Table::move_entry`] for it, naming a target column of the same component type (all
/// distinct) or none. `before` must move out (or drop) the value at the given row of every
/// source column the map sends nowhere, may write (only) target columns the map leaves
/// empty at the new row, and must not panic. The caller must fill every target column the
/// map leaves empty that `before` did not, at the returned row, with nothing in between that
/// can panic.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn move_entity<'a, R>(
    archetypes: &'a mut [Archetype],
    entities: &mut Entities,
    entity: Entity,
    location: EntityLocation,
    target: ArchetypeId,
    move_map: &[u32],
    now: Tick,
    in_room: bool,
    before: impl FnOnce(&Table, usize, &mut Table, usize) -> R,
) -> (R, &'a mut Table, usize) {
    let row = location.row as usize;
    // SAFETY: a live entity's location names an existing archetype, and so does an edge's
    // target (archetypes are never removed); they differ (the caller's contract).
    let (src, dst) = unsafe { pair_mut_unchecked(archetypes, location.archetype, target) };
    // SAFETY: `push_uninit` reserves before it records anything (the only step that can
    // fail), and it comes first, so nothing can panic once `before` has moved values out; with
    // `in_room`, the target has room (the caller's contract), so `push_uninit_in_room` writes
    // within its capacity. The row is filled by `before`, `move_row` and the caller, with
    // nothing in between that can panic.
    let dst_row = unsafe {
        if in_room {
            dst.table.push_uninit_in_room(entity)
        } else {
            dst.table.push_uninit(entity)
        }
    };
    let taken = before(&src.table, row, &mut dst.table, dst_row);
    let record = |moved: Entity| {
        // SAFETY: `moved` was listed in the table, so it is live; `entity` is live (the
        // caller's contract). Both are recorded before any value is dropped.
        unsafe {
            entities.record_move(
                moved,
                location,
                entity,
                EntityLocation {
                    archetype: target,
                    row: dst_row as u32,
                },
            );
        }
    };
    // SAFETY: the map satisfies `move_row`'s contract (the caller's, with `before` having
    // emptied the unmapped slots), `dst_row` was just pushed, and the caller fills the rest of
    // the row; `record` cannot panic and touches no table.
    unsafe {
        src.table
            .move_row(row, &mut dst.table, dst_row, move_map, now, record)
    };
    (taken, &mut dst.table, dst_row)
}
