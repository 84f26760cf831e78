//! Sparse-set storage: one component type's values outside the archetype tables.
//!
//! A component registered with
//! [`ComponentRegistration::sparse_set`](crate::ComponentRegistration::sparse_set) is not part
//! of any archetype's component set (flecs calls this `DontFragment`). Its values live in one
//! [`SparseSet`] per component type:
//!
//! * `sparse`, indexed by entity index: `0` for "absent", else the dense row plus one;
//! * `dense`, a one-column [`Table`]: the entity of each dense row, the value and its
//!   `added`/`changed` ticks, with the same type-erased column (and the same drop, move and
//!   tick code) as an archetype's.
//!
//! Adding the component pushes a dense row and removing it swap-removes one, updating the
//! `sparse` slot of the entity that moved into the hole: the entity's archetype row never
//! moves. Looking a value up costs two dependent loads (the sparse slot, then the dense row's
//! entity, compared with the asked-for entity so that a stale generation is never taken for
//! a live one).
//!
//! The world keeps every set in [`SparseSets`], indexed by component id.

use std::ptr;

use crate::change::{ComponentTicks, Tick};
use crate::component::{ComponentId, ComponentInfo};
use crate::entity::Entity;

use super::Table;

/// The values of one sparse component type, by entity.
///
/// Invariants: for every dense row `r`, `sparse[dense.entities()[r].index()] == r + 1`; every
/// other `sparse` slot is `0`; the dense table's invariants hold (rows `0..len` initialised).
pub(crate) struct SparseSet {
    sparse: Vec<u32>,
    dense: Table,
    /// The component's size and drop function, for values written by pointer.
    size: usize,
    drop: Option<unsafe fn(*mut u8)>,
}

impl SparseSet {
    /// An empty set for values of `info`'s component.
    pub(crate) fn new(info: &ComponentInfo) -> Self {
        Self {
            sparse: Vec::new(),
            dense: Table::new([info]),
            size: info.layout().size(),
            drop: info.drop_fn(),
        }
    }

    /// The entities holding the component, in dense order.
    #[inline]
    pub(crate) fn entities(&self) -> &[Entity] {
        self.dense.entities()
    }

    /// The dense row of `entity`'s value, if it has one.
    #[inline]
    pub(crate) fn row_of(&self, entity: Entity) -> Option<usize> {
        let slot = *self.sparse.get(entity.index() as usize)?;
        let row = slot.checked_sub(1)? as usize;
        // SAFETY: a non-zero slot is some dense row's plus one (the set's invariant), so
        // `row < len`.
        let holder = unsafe { self.dense.entities().get_unchecked(row) };
        // A slot is only ever set for the entity of its row, but an older generation of the
        // same index must not find the newer one's value.
        (*holder == entity).then_some(row)
    }

    /// True when `entity` holds the component.
    #[inline]
    pub(crate) fn contains(&self, entity: Entity) -> bool {
        self.row_of(entity).is_some()
    }

    /// The dense table (one column, index 0).
    #[inline]
    pub(crate) fn table(&self) -> &Table {
        &self.dense
    }

    /// The dense table, mutably.
    ///
    /// # Safety
    /// The caller keeps the set's invariants: it must not push or remove rows through it
    /// (only [`push_uninit`](Self::push_uninit) and the `swap_remove_*` methods do).
    #[inline]
    pub(crate) unsafe fn table_mut(&mut self) -> &mut Table {
        &mut self.dense
    }

    /// Appends a dense row for `entity`, which must not hold the component, and returns it.
    /// The value slot is uninitialised.
    ///
    /// # Safety
    /// `entity` is not in the set; before the set is used again in any other way, and with
    /// no chance of a panic in between, the caller initialises the value (and its ticks) at
    /// the returned row.
    // Always inlined: the body of the one-field insert's fast path.
    #[inline(always)]
    pub(crate) unsafe fn push_uninit(&mut self, entity: Entity) -> usize {
        debug_assert!(!self.contains(entity));
        let index = entity.index() as usize;
        if self.sparse.len() <= index {
            self.grow_sparse(index);
        }
        // Checked before the push, so that a failing conversion leaves no uninitialised row.
        let slot = u32::try_from(self.dense.len() + 1).expect("a sparse set holds fewer than 2^32 values");
        // SAFETY: the caller's contract is passed on; `push_uninit` grows before recording.
        let row = unsafe { self.dense.push_uninit(entity) };
        debug_assert_eq!(row + 1, slot as usize);
        // SAFETY: `index < sparse.len()`, made so above.
        unsafe { *self.sparse.get_unchecked_mut(index) = slot };
        row
    }

    /// [`push_uninit`](Self::push_uninit) when it needs no growing and no entity of
    /// `entity`'s index holds the component: the new row, or `None` with nothing done. No
    /// call, so that the one-entity insert's common case saves no registers: a warm sparse
    /// `insert` took 93 instructions through `push_uninit` and takes 81 with this (the
    /// `add_remove/tabula_sparse` loop).
    ///
    /// # Safety
    /// As for `push_uninit`, when it returns a row.
    #[inline(always)]
    pub(crate) unsafe fn push_uninit_in_room(&mut self, entity: Entity) -> Option<usize> {
        let row = self.dense.len();
        let slot = self.sparse.get_mut(entity.index() as usize)?;
        if *slot != 0 || !self.dense.has_room() {
            return None;
        }
        *slot = u32::try_from(row + 1).ok()?;
        // SAFETY: the table has room; the caller's contract is passed on.
        unsafe { self.dense.push_uninit_in_room(entity) };
        Some(row)
    }

    /// Makes the `sparse` array cover entity index `index` (empty slots), at least doubling
    /// it, so that a run of pushes for rising indices grows it a logarithmic number of times.
    #[cold]
    #[inline(never)]
    fn grow_sparse(&mut self, index: usize) {
        let len = (index + 1).max(self.sparse.len() * 2);
        self.sparse.resize(len, 0);
    }

    /// Removes dense `row` by moving the last row into it and fixes the moved entity's slot;
    /// the removed value sits just past the end, owned by the caller, who must drop it right
    /// after ([`swap_remove_and_drop`](Self::swap_remove_and_drop)).
    ///
    /// # Safety
    /// `row < len`.
    #[inline]
    unsafe fn swap_out(&mut self, row: usize) -> usize {
        let last = self.dense.len() - 1;
        let removed = self.dense.entities()[row];
        if row != last {
            let moved = self.dense.entities()[last];
            self.sparse[moved.index() as usize] = (row + 1) as u32;
            // SAFETY: both rows are live and distinct.
            unsafe { self.dense.column_unchecked_mut(0).swap(row, last) };
        }
        self.sparse[removed.index() as usize] = 0;
        // SAFETY: the values stay in place (at `last`) for the caller, as documented.
        unsafe { self.dense.forget_last_row(row) };
        last
    }

    /// Removes `row`, whose value the caller has already moved out: the last row's value
    /// and ticks are moved into the hole (one copy, not a swap: the hole holds nothing to
    /// keep) and the moved entity's slot is fixed.
    ///
    /// # Safety
    /// `row < len`, and its value was read out (it is not dropped here).
    #[inline(always)]
    pub(crate) unsafe fn swap_remove_taken(&mut self, row: usize) {
        // SAFETY: the caller's contract; `refill_values` moves the value by the column's size.
        unsafe {
            self.swap_remove_filling(row, |table, row, last| {
                table.column_unchecked_mut(0).refill_values(row, last)
            })
        }
    }

    /// [`swap_remove_taken`](Self::swap_remove_taken) with the value moved by `fill`, which
    /// gets the dense table, `row` and the last row, and must move the value at the last row
    /// into `row` (nothing else; `row == last` is possible, then a copy onto itself or
    /// nothing). A typed `fill` copies without the column's dispatch on the value size.
    ///
    /// # Safety
    /// As for `swap_remove_taken`; `fill` does what is said above and does not panic.
    // Always inlined: the body of the one-field removal's fast path.
    #[inline(always)]
    pub(crate) unsafe fn swap_remove_filling(
        &mut self,
        row: usize,
        fill: impl FnOnce(&mut Table, usize, usize),
    ) {
        let entities = self.dense.entities();
        let last = entities.len() - 1;
        // SAFETY: `row <= last < len` (the caller's contract); every dense entity has a
        // `sparse` slot (the set's invariant).
        unsafe {
            let (removed, moved) = (*entities.get_unchecked(row), *entities.get_unchecked(last));
            // The moved entity's slot first, then the removed one's: for `row == last` they
            // are the same entity, whose slot must end up empty.
            *self.sparse.get_unchecked_mut(moved.index() as usize) = (row + 1) as u32;
            *self.sparse.get_unchecked_mut(removed.index() as usize) = 0;
        }
        // SAFETY: `row <= last < len`, `last` is initialised and the value at `row` is owned
        // by nobody (the caller moved it out); for `row == last` the copy is onto itself.
        // Then row `last` holds a value moved to `row`, which the shortened table forgets.
        unsafe {
            self.dense.column_unchecked_mut(0).refill_ticks(row, last);
            fill(&mut self.dense, row, last);
            self.dense.forget_last_row(row);
        }
    }

    /// Writes the value at `src` as `entity`'s, with change tick `tick`: into a freshly
    /// pushed row when `entity` lacks the component (`true`: added), else over the old value
    /// (`false`: replaced), which is swapped into `src` and dropped there once the set holds
    /// the new one, so that a panicking `Drop` leaves the set consistent.
    ///
    /// # Safety
    /// `src` points at a valid value of the set's component, owned by the caller and given
    /// up here (its memory is neither read nor dropped by the caller afterwards).
    pub(crate) unsafe fn write_or_replace(&mut self, entity: Entity, src: *mut u8, tick: Tick) -> bool {
        let row = self.row_of(entity);
        let added = row.is_none();
        // SAFETY: a new row is pushed uninitialised and filled at once (nothing in between
        // can panic); a live row's initialised value is swapped with `src`'s. Either way the
        // column stores this component, whose size the column knows.
        unsafe {
            let row = match row {
                Some(row) => row,
                None => self.push_uninit(entity),
            };
            let column = self.dense.column_unchecked_mut(0);
            let (dst, ticks) = (column.ptr(row), column.ticks_base().add(row));
            let size = self.size;
            if added {
                ptr::copy_nonoverlapping(src, dst, size);
                ticks.write(ComponentTicks::new(tick));
            } else {
                ptr::swap_nonoverlapping(src, dst, size);
                ComponentTicks::changed_at(column.ticks_base(), row).write(tick);
                if let Some(drop) = self.drop {
                    // SAFETY: `src` now holds the replaced value, owned by nobody else.
                    drop(src);
                }
            }
        }
        added
    }

    /// Removes `row` and drops its value (last, once the set is consistent again).
    ///
    /// # Safety
    /// `row < len`.
    pub(crate) unsafe fn swap_remove_and_drop(&mut self, row: usize) {
        // SAFETY: the caller's contract; the removed value is at `last`, past the length, and
        // owned by nobody else: dropped once here.
        unsafe {
            let last = self.swap_out(row);
            self.dense.column_unchecked_mut(0).drop_in_place(last);
        }
    }

    /// Makes room for `additional` more values, so that as many
    /// [`push_uninit`](Self::push_uninit) calls do not grow the dense table (the `sparse`
    /// array may still grow, for entity indices past its end): for batches and loads.
    pub(crate) fn reserve(&mut self, additional: usize) {
        self.dense.reserve(additional);
    }

    /// Clamps the change ticks older than the maximum age.
    pub(crate) fn check_change_ticks(&mut self, now: Tick) {
        self.dense.check_change_ticks(now);
    }

    /// Empties the set without dropping its values and returns the old length, so that a
    /// caller clearing many stores can make all of them consistent before any `Drop` runs;
    /// [`drop_detached`](Self::drop_detached) drops them after.
    pub(crate) fn detach_rows(&mut self) -> usize {
        self.sparse.clear();
        self.dense.detach_rows()
    }

    /// Drops the values left behind by [`detach_rows`](Self::detach_rows).
    ///
    /// # Safety
    /// `len` is what `detach_rows` returned, and no row was pushed since.
    pub(crate) unsafe fn drop_detached(&mut self, len: usize) {
        // SAFETY: the caller's contract is `Table::drop_detached`'s.
        unsafe { self.dense.drop_detached(len) };
    }
}

/// Every sparse set of one world, indexed by component id (`None` for table components).
#[derive(Default)]
pub(crate) struct SparseSets {
    sets: Vec<Option<SparseSet>>,
    /// How many components are stored sparse: the structural paths test this one word before
    /// looking for sparse values of an entity.
    count: usize,
}

impl SparseSets {
    /// True when some component is stored sparse.
    #[inline(always)]
    pub(crate) fn any(&self) -> bool {
        self.count != 0
    }

    /// Makes component `info` sparse (idempotent).
    pub(crate) fn make(&mut self, info: &ComponentInfo) {
        let index = info.id().index();
        if self.sets.len() <= index {
            self.sets.resize_with(index + 1, || None);
        }
        if self.sets[index].is_none() {
            self.sets[index] = Some(SparseSet::new(info));
            self.count += 1;
        }
    }

    /// The set of component `id`, if it is sparse.
    #[inline]
    pub(crate) fn get(&self, id: ComponentId) -> Option<&SparseSet> {
        self.sets.get(id.index())?.as_ref()
    }

    /// The set of component `id`, mutably, if it is sparse.
    #[inline]
    pub(crate) fn get_mut(&mut self, id: ComponentId) -> Option<&mut SparseSet> {
        self.sets.get_mut(id.index())?.as_mut()
    }

    /// Every sparse set with its component id.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (ComponentId, &SparseSet)> {
        (self.sets.iter().enumerate()).filter_map(|(i, s)| Some((ComponentId::from_index(i), s.as_ref()?)))
    }

    /// Every sparse set, mutably.
    pub(crate) fn iter_mut(&mut self) -> impl Iterator<Item = &mut SparseSet> {
        self.sets.iter_mut().flatten()
    }

    /// The sparse components `entity` holds, in id order.
    pub(crate) fn held_by(&self, entity: Entity) -> crate::world::hooks::ComponentList {
        (self.iter())
            .filter(|(_, set)| set.contains(entity))
            .map(|(id, _)| id)
            .collect()
    }
}

impl SparseSets {
    /// How many components are stored sparse (grows by one per registration, so a query can
    /// tell whether some component became sparse since it last looked).
    #[inline]
    pub(crate) fn count(&self) -> usize {
        self.count
    }
}
