//! The rows of one archetype: entity ids plus one column per component.

use std::alloc::{self, Layout};
use std::ptr::NonNull;

use crate::change::Tick;
use crate::component::ComponentInfo;
use crate::entity::Entity;

use super::column::ColumnOffsets;
use super::{Column, drop_each};

/// Marks a column with no counterpart in a move's destination table.
pub(crate) const NO_COLUMN: u32 = u32::MAX;

/// The rows of one archetype.
///
/// All columns live in one allocation, `block` (laid out by [`Column::extend_layout`]): one
/// allocation per table instead of three per column makes spawning and growing cheaper, and
/// keeps the allocator's bookkeeping simple when many tables come and go.
///
/// Invariants, kept by every method here:
/// * `block` was allocated with `block_layout` (or is dangling when its size is zero), and
///   every column's arrays sit inside it for `capacity` rows; `entities.len() <= capacity`,
///   and `entities` has room for `capacity` ids (`grow` reserves both together);
/// * rows `0..entities.len()` are initialised in every column, and nothing past them is;
/// * row `r` of every column belongs to `entities[r]`;
pub struct Table {
    entities: Vec<Entity>,
    columns: Box<[Column]>,
    capacity: usize,
    block: NonNull<u8>,
    block_layout: Layout,
    /// For each of the archetype's `TypeId` slots, the column it names (`u32::MAX` for a
    /// vacant slot)...
    slot_columns: [u32; TYPED_SLOTS],
    /// ...and that column's value array, refreshed whenever the block moves, so that a typed
    /// lookup (`World::get`) reads the array next to the slot instead of through the column.
    slot_values: [*mut u8; TYPED_SLOTS],
}

/// How many `TypeId` slots an archetype has (a power of two); the table keeps a value
/// pointer for each.
pub(crate) const TYPED_SLOTS: usize = 32;

// SAFETY: the block is owned by the table alone, like a `Vec`'s buffer; the columns in it are
// `Send + Sync` (see `Column`).
unsafe impl Send for Table {}
// SAFETY: as above; shared access never hands out anything but what `Column` allows.
unsafe impl Sync for Table {}

impl Table {
    /// A table with one column per component, in the order given.
    pub(crate) fn new<'a>(components: impl IntoIterator<Item = &'a ComponentInfo>) -> Self {
        let columns: Box<[Column]> = components.into_iter().map(Column::new).collect();
        Self {
            entities: Vec::new(),
            columns,
            capacity: 0,
            block: NonNull::dangling(),
            block_layout: Layout::new::<()>(),
            slot_columns: [u32::MAX; TYPED_SLOTS],
            slot_values: [std::ptr::null_mut(); TYPED_SLOTS],
        }
    }

    /// Records which column each typed slot names (`u32::MAX`: none), for
    /// [`slot_values`](Self::slot_values).
    pub(crate) fn index_slots(&mut self, columns: [u32; TYPED_SLOTS]) {
        assert!(
            columns
                .iter()
                .all(|&c| c == u32::MAX || (c as usize) < self.columns.len()),
            "a typed slot names a column the table does not have"
        );
        self.slot_columns = columns;
        self.refresh_slots();
    }

    /// Re-reads the value array of every indexed slot's column.
    fn refresh_slots(&mut self) {
        for (values, &column) in self.slot_values.iter_mut().zip(&self.slot_columns) {
            if column != u32::MAX {
                *values = self.columns[column as usize].data_ptr();
            }
        }
    }

    /// The value array of the column that typed slot `slot` names (see
    /// [`index_slots`](Self::index_slots)); null for a slot that names none.
    #[inline]
    pub(crate) fn slot_values(&self, slot: usize) -> *mut u8 {
        self.slot_values[slot]
    }

    /// The entry of a move map (see [`move_row`](Self::move_row)) for this table's column
    /// `column`, whose values move to the destination table's column `target`, or nowhere
    /// (`None`: the destination lacks the component).
    pub(crate) fn move_entry(target: Option<usize>) -> u32 {
        target.map_or(NO_COLUMN, |target| {
            u32::try_from(target).expect("too many columns in one table")
        })
    }

    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.entities.len()
    }

    /// How many rows fit before the table has to grow.
    #[inline]
    pub(crate) fn room(&self) -> usize {
        self.capacity - self.len()
    }

    /// Maps the memory of the next `rows` rows (at most the room there is) now, array by
    /// array, for a batch about to fill them.
    ///
    /// Anonymous memory is mapped page by page when first written. Filled row by row, a
    /// table writes all of its arrays in turn, so each array's pages are mapped interleaved
    /// with every other array's and end up scattered in physical memory; streaming one
    /// such column from DRAM measured up to 14% slower than a `Vec` filled on its own, and
    /// a column whose pages were mapped array by array 3-5% faster (1M rows, caches emptied
    /// before each pass). Touching one byte per page first maps each array in order; the
    /// pages would be mapped by the batch anyway, so the cost is one write per 4 KiB.
    pub(crate) fn prefault(&mut self, rows: usize) {
        let rows = self.len()..self.len() + rows.min(self.room());
        // The row list is a `Vec` of its own: one write per page of its spare capacity.
        let per_page = 4096 / size_of::<Entity>();
        for slot in self.entities.spare_capacity_mut()[..rows.len()]
            .iter_mut()
            .step_by(per_page)
        {
            *slot = std::mem::MaybeUninit::zeroed();
        }
        for column in &mut self.columns {
            // SAFETY: `rows` lie between the length and the capacity: unused rows.
            unsafe { column.prefault(rows.clone()) };
        }
    }

    #[inline]
    pub(crate) fn entities(&self) -> &[Entity] {
        &self.entities
    }

    #[inline]
    pub(crate) fn column(&self, index: usize) -> &Column {
        &self.columns[index]
    }

    /// [`column`](Self::column) without the bounds check, for indices taken from an
    /// archetype's own lookup tables.
    ///
    /// # Safety
    /// `index` is less than the number of columns.
    #[inline]
    pub(crate) unsafe fn column_unchecked(&self, index: usize) -> &Column {
        debug_assert!(index < self.columns.len());
        // SAFETY: in bounds (the caller's contract).
        unsafe { self.columns.get_unchecked(index) }
    }

    /// A column, mutably, without the bounds check, for indices taken from a
    /// cached edge or bundle mapping of this table.
    ///
    /// # Safety
    /// `index` is less than the number of columns.
    #[inline]
    pub(crate) unsafe fn column_unchecked_mut(&mut self, index: usize) -> &mut Column {
        debug_assert!(index < self.columns.len());
        // SAFETY: in bounds (the caller's contract).
        unsafe { self.columns.get_unchecked_mut(index) }
    }

    /// Makes room for `additional` more rows; amortised doubling.
    ///
    /// Every spawn and move calls this, so the check is inlined and the growth is not.
    #[inline]
    pub(crate) fn reserve(&mut self, additional: usize) {
        // `len <= capacity` (table invariant), so the subtraction cannot underflow.
        if additional > self.capacity - self.len() {
            self.grow(additional);
        }
    }

    /// The slow half of [`reserve`](Self::reserve): moves every column into a new block.
    #[cold]
    #[inline(never)]
    fn grow(&mut self, additional: usize) {
        let needed = self
            .len()
            .checked_add(additional)
            .expect("table capacity overflow");
        let new_cap = needed.max(self.capacity * 2).max(4);
        // Reserve the row list first: if that fails, nothing else has changed.
        self.entities.reserve_exact(new_cap - self.len());

        let (layout, offsets) = self.block_layout_for(new_cap);
        let len = self.len();
        // `realloc` keeps the old alignment, so a block whose alignment would change moves to a
        // fresh allocation instead (it cannot today: the alignment depends only on the column
        // types, but nothing here relies on that).
        let block = if self.block_layout.size() == 0 || layout.align() != self.block_layout.align() {
            let block = if layout.size() == 0 {
                // No columns (a zero-sized layout needs no memory): a dangling, aligned block.
                NonNull::new(std::ptr::without_provenance_mut(layout.align()))
                    .expect("alignment is never zero")
            } else {
                // SAFETY: `layout` has a non-zero size.
                let raw = unsafe { alloc::alloc(layout) };
                NonNull::new(raw).unwrap_or_else(|| alloc::handle_alloc_error(layout))
            };
            for (column, placed) in self.columns.iter_mut().zip(offsets) {
                // SAFETY: `block` holds `layout`, in which `extend_layout` placed this column's
                // arrays for `new_cap >= len` rows; it is fresh, so it overlaps no old array;
                // rows `0..len` are initialised (table invariant).
                unsafe { column.relocate(block, placed, len) };
            }
            // SAFETY: the old block was allocated with `block_layout` (table invariant), and
            // no column points into it any more.
            unsafe { self.free_block() };
            block
        } else {
            // Grow in place where the allocator can (large blocks are remapped, not copied),
            // then slide each array up to its new offset, last first: every array's new
            // offset is at or past its old one, so no array overwrites one not yet moved.
            let (_, old_offsets) = self.block_layout_for(self.capacity);
            // SAFETY: the block was allocated with `block_layout` (table invariant), whose
            // alignment equals `layout`'s (checked above), and `layout.size()` is larger than
            // the old size, so non-zero; `Layout` checked it.
            let raw = unsafe { alloc::realloc(self.block.as_ptr(), self.block_layout, layout.size()) };
            let block = NonNull::new(raw).unwrap_or_else(|| alloc::handle_alloc_error(layout));
            for ((column, placed), old) in self.columns.iter_mut().zip(offsets).zip(old_offsets).rev() {
                // SAFETY: `block` now holds `layout`, which contains both the old arrays (at
                // `old`, carried over by `realloc`) and the new ones (at `placed`); arrays of
                // later columns, already moved, lie past this column's new arrays, and arrays
                // of earlier columns lie before its old ones; rows `0..len` are initialised.
                unsafe { column.slide(block, old, placed, len) };
            }
            block
        };
        self.block = block;
        self.block_layout = layout;
        self.capacity = new_cap;
        // The value arrays moved.
        self.refresh_slots();
    }

    /// The block layout for `capacity` rows, and where each column's arrays sit in it.
    fn block_layout_for(&self, capacity: usize) -> (Layout, Vec<ColumnOffsets>) {
        let mut layout = Layout::new::<()>();
        let mut offsets = Vec::with_capacity(self.columns.len());
        for column in self.columns.iter() {
            let (extended, placed) = column.extend_layout(layout, capacity);
            layout = extended;
            offsets.push(placed);
        }
        (layout.pad_to_align(), offsets)
    }

    /// Frees the block, if it was allocated.
    ///
    /// # Safety
    /// Nothing points into the block afterwards.
    unsafe fn free_block(&mut self) {
        if self.block_layout.size() != 0 {
            // SAFETY: allocated with exactly this layout (table invariant).
            unsafe { alloc::dealloc(self.block.as_ptr(), self.block_layout) }
        }
    }

    /// Frees the memory of an empty table (its block and its row list) and returns how many
    /// bytes that was; a table with rows, or with nothing allocated, is left alone (0). The
    /// table stays usable: the next row grows it again from nothing.
    pub(crate) fn shrink_empty(&mut self) -> usize {
        if self.len() != 0 {
            return 0;
        }
        let freed = self.block_layout.size() + self.entities.capacity() * size_of::<Entity>();
        // SAFETY: the columns are pointed away from the block right below, before anything
        // reads them; with no rows, nothing in it is live.
        unsafe { self.free_block() };
        for column in self.columns.iter_mut() {
            column.detach();
        }
        self.block = NonNull::dangling();
        self.block_layout = Layout::new::<()>();
        self.capacity = 0;
        self.entities = Vec::new();
        // The value arrays are dangling now, as in a new table.
        self.refresh_slots();
        freed
    }

    /// True when one more row fits without growing.
    #[inline]
    pub(crate) fn has_room(&self) -> bool {
        self.len() < self.capacity
    }

    /// Appends a row for `entity` and returns its index. Every column's slot at that row is
    /// uninitialised.
    ///
    /// # Safety
    /// Before the table is used again in any other way, and with no chance of a panic in
    /// between, the caller must initialise every column at the returned row.
    #[inline]
    pub(crate) unsafe fn push_uninit(&mut self, entity: Entity) -> usize {
        self.reserve(1);
        // SAFETY: `reserve(1)` made room; the caller's contract is passed on.
        unsafe { self.push_uninit_in_room(entity) }
    }

    /// [`push_uninit`](Self::push_uninit) into a table that [`has_room`](Self::has_room): no
    /// growing, so no call.
    ///
    /// # Safety
    /// As for `push_uninit`, and the table has room for the row.
    #[inline]
    pub(crate) unsafe fn push_uninit_in_room(&mut self, entity: Entity) -> usize {
        debug_assert!(self.has_room());
        let row = self.entities.len();
        // SAFETY: `row < capacity` (the caller's contract), and the row list has room for
        // `capacity` ids (table invariant), so the slot is allocated; the id is written before
        // the length covers it.
        unsafe {
            self.entities.as_mut_ptr().add(row).write(entity);
            self.entities.set_len(row + 1);
        }
        row
    }

    /// Removes `row` by moving the last row into it, then drops the removed values. The caller
    /// must already have recorded the moved entity's new location, because the drops run last
    /// and may panic (the table is consistent by then).
    ///
    /// # Safety
    /// `row < len`.
    // Always inlined: see `World::free_entity_and_row`.
    #[inline(always)]
    pub(crate) unsafe fn swap_remove_and_drop(&mut self, row: usize) {
        let last = self.len() - 1;
        if row != last {
            for column in self.columns.iter_mut() {
                // SAFETY: `row < last < capacity`, distinct.
                unsafe { column.swap(row, last) };
            }
        }
        self.entities.swap_remove(row);
        // The removed values now sit at `last`, just past the end, owned by nobody else.
        drop_each(self.columns.iter_mut(), |column| {
            // SAFETY: slot `last` holds the initialised removed value; it is past `len`, so no
            // other path reads it again, and `drop_each` visits each column once.
            unsafe { column.drop_in_place(last) }
        });
    }

    /// Removes `row` from the row list by moving the last id into it, and touches no column:
    /// for a caller that has already swapped (or moved out) the columns' values itself, as a
    /// sparse set does.
    ///
    /// # Safety
    /// `row < len`; the caller has made every column's rows `0..len - 1` hold the values of
    /// the ids the list will hold, and owns the values left at `len - 1`.
    #[inline]
    pub(crate) unsafe fn forget_last_row(&mut self, row: usize) {
        self.entities.swap_remove(row);
    }

    /// Moves `row` into the freshly pushed `dst_row` of `dst`: column `i` goes to the `dst`
    /// column that `map[i]` names (see [`move_entry`](Self::move_entry)). Columns `map` sends
    /// nowhere must have had their value at `row` moved out (or dropped) by the caller
    /// beforehand; it is overwritten. The last row moves into `row`. Once the ids have moved,
    /// and before the values do, `moved` gets the id that now fills `row`: the entity whose
    /// location the caller must update (the moved entity itself when `row` was the last row).
    ///
    /// # Safety
    /// `row < len`; `dst_row` is `dst`'s last row, just pushed (by `push_uninit` or
    /// `push_uninit_in_room`), so rows `0..dst_row` are live there, and its mapped slots are
    /// not yet initialised; `map` has one entry per column here, made by `move_entry` for that
    /// column, naming distinct `dst` columns of the same component type, or none; the values
    /// at `row` of the columns sent nowhere are no longer owned by the table. `now` is the
    /// world's current tick (not older than any changed floor of either table). `moved` must not panic: the table is half way through the move
    /// when it runs.
    // Always inlined, now that the column loop is lean: a call spilled most of the caller's
    // values around it (callgrind, 10k entities: 165.3 instructions per insert or remove out
    // of line, 159.3 inlined; with the world behind a pointer, 180.8 and 163.3).
    #[inline(always)]
    pub(crate) unsafe fn move_row(
        &mut self,
        row: usize,
        dst: &mut Table,
        dst_row: usize,
        map: &[u32],
        now: Tick,
        moved: impl FnOnce(Entity),
    ) {
        debug_assert_eq!(map.len(), self.columns.len());
        debug_assert!(row < self.len());
        let last = self.len() - 1;
        // The ids first, and `moved` with them: then what the caller keeps for `moved` (the
        // entity, its locations) need not stay in registers through the column loop, nor
        // `self` after it (callgrind, world behind a pointer: 10 instructions fewer per insert
        // or remove than recording the locations after the loop).
        // SAFETY: `row <= last` are rows of the list (the caller's contract); the last id
        // fills the hole, and the shorter length drops nothing (ids are `Copy`).
        let filler = unsafe {
            let ids = self.entities.as_mut_ptr();
            let filler = *ids.add(last);
            *ids.add(row) = filler;
            self.entities.set_len(last);
            filler
        };
        moved(filler);
        let targets = dst.columns.as_mut_ptr();
        let mut entry = map.as_ptr();
        let std::ops::Range {
            start: mut column,
            end,
        } = self.columns.as_mut_ptr_range();
        // One pointer walks the map beside the columns: one register fewer than an index
        // (callgrind: one instruction fewer per move). The common case of a column moves
        // here, with no call anywhere in the loop: a call, however rare, made the compiler
        // keep the rows and the target array on the stack across every column (callgrind,
        // 10k entities: 150.5 → 139.5 instructions per insert or remove). The first column that
        // needs more (a value size without an inline copy, a changed floor) hands itself and
        // every later column to `move_rest`.
        while column != end {
            // SAFETY: bounds and types as the caller guarantees: `map` has an entry per column,
            // made by `move_entry`, naming distinct `dst` columns of the same type (or none,
            // whose value at `row` was moved out); `row <= last` are live rows here. `column`
            // walks this table's columns (`column < end`), `entry` the map beside it.
            unsafe {
                let to = *entry;
                let moved = if to != NO_COLUMN {
                    (*column).try_move_out(row, last, &mut *targets.add(to as usize), dst_row)
                } else {
                    (*column).try_refill_inline(row, last)
                };
                if !moved {
                    let left = end.offset_from_unsigned(column);
                    let columns = std::slice::from_raw_parts_mut(column, left);
                    let map = std::slice::from_raw_parts(entry, left);
                    return move_rest(columns, map, row, last, dst, dst_row, now);
                }
                column = column.add(1);
                entry = entry.add(1);
            }
        }
    }

    /// Moves every row to the end of `dst` in bulk, in order (row `r` lands at `start + r`,
    /// where `start` is `dst`'s old length, which is returned): column `i` goes to `dst`
    /// column `map[i]` names, one copy per column. Columns the map sends nowhere keep their values
    /// at their rows here, for the caller to read with `Bundle::take_at`; `dst` columns no
    /// source column maps to are left uninitialised at the new rows.
    ///
    /// # Safety
    /// `dst` has room for `self.len()` more rows; `map` is as for [`move_row`](Self::move_row).
    /// Before either table is used in any other way, and with no chance of a panic in between,
    /// the caller must fill the `dst` columns left empty at every new row, read (or forget)
    /// each unmapped value here at most once, and call [`detach_rows`](Self::detach_rows) on
    /// this table, whose values have all moved out.
    pub(crate) unsafe fn move_all_rows(&mut self, dst: &mut Table, map: &[u32], now: Tick) -> usize {
        debug_assert_eq!(map.len(), self.columns.len());
        let (n, start) = (self.len(), dst.len());
        debug_assert!(dst.capacity - start >= n, "move_all_rows without room");
        dst.entities.extend_from_slice(&self.entities);
        for (column, &entry) in self.columns.iter_mut().zip(map) {
            if entry != NO_COLUMN {
                let target = entry as usize;
                // SAFETY: rows `0..n` are live here; `dst` has room for them past its `start`
                // live rows (the caller's contract), and the column has the same type.
                unsafe { column.copy_rows_to(n, &mut dst.columns[target], start, now) };
            }
        }
        start
    }

    /// Clamps every change tick older than the maximum age (seen from `now`).
    pub(crate) fn check_change_ticks(&mut self, now: Tick) {
        let len = self.len();
        for column in self.columns.iter_mut() {
            // SAFETY: rows `0..len` are initialised (table invariant).
            unsafe { column.check_change_ticks(len, now) };
        }
    }

    /// Removes every row, dropping all values.
    pub(crate) fn clear(&mut self) {
        let len = self.detach_rows();
        // SAFETY: `detach_rows` just returned the old length.
        unsafe { self.drop_detached(len) };
    }

    /// Empties the row list without dropping anything and returns the old length, so that a
    /// caller clearing many tables can make all of them consistent before any `Drop` runs.
    pub(crate) fn detach_rows(&mut self) -> usize {
        let len = self.len();
        self.entities.clear();
        for column in self.columns.iter_mut() {
            column.clear_floor();
        }
        len
    }

    /// Drops the values left behind by [`detach_rows`](Self::detach_rows).
    ///
    /// # Safety
    /// `len` is what `detach_rows` returned, and no row was pushed since.
    pub(crate) unsafe fn drop_detached(&mut self, len: usize) {
        drop_each(self.columns.iter_mut(), |column| {
            // SAFETY: rows `0..len` still hold initialised values no row list refers to, and
            // `drop_each` visits each column once.
            unsafe { column.drop_rows(len) }
        });
    }
}

/// The general half of [`Table::move_row`], from the first column its loop could not move:
/// each of `columns` moved (or refilled) along its entry of `map`, with the floors applied
/// and values of any size. Out of line, so that the loop makes no call; not marked cold,
/// since a table with a value size that has no inline copy comes here on every move.
///
/// # Safety
/// As for `move_row`, for these columns and their entries of `map` (one each); `row`'s values
/// in the earlier columns have moved already.
#[inline(never)]
unsafe fn move_rest(
    columns: &mut [Column],
    map: &[u32],
    row: usize,
    last: usize,
    dst: &mut Table,
    dst_row: usize,
    now: Tick,
) {
    debug_assert_eq!(map.len(), columns.len());
    let targets = dst.columns.as_mut_ptr();
    for i in 0..columns.len() {
        // SAFETY: as in `move_row`, whose contract the caller passes on; `map` has an entry
        // per column, and a target offset names a column of `dst`.
        unsafe {
            let column = columns.get_unchecked_mut(i);
            match *map.get_unchecked(i) {
                NO_COLUMN => column.refill(row, last),
                to => column.move_out(row, last, &mut *targets.add(to as usize), dst_row, now),
            }
        }
    }
}

impl Drop for Table {
    fn drop(&mut self) {
        /// Frees the block even when a component's `Drop` panics in `clear`.
        struct FreeBlock<'a>(&'a mut Table);
        impl Drop for FreeBlock<'_> {
            fn drop(&mut self) {
                // SAFETY: the table is being dropped; no column is used again.
                unsafe { self.0.free_block() }
            }
        }
        let guard = FreeBlock(self);
        guard.0.clear();
    }
}
