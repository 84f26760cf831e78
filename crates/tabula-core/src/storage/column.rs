//! One component type's values for every row of a table, plus their change ticks.

use std::alloc::Layout;
use std::cell::UnsafeCell;
use std::ptr::{self, NonNull};

use crate::change::{ComponentTicks, Tick};
use crate::component::ComponentInfo;

/// A correctly aligned array of one component type, with a pair of `added` and `changed`
/// ticks per row ([`ComponentTicks`]). It neither owns memory nor knows its length or
/// capacity: the owning [`Table`](super::Table) allocates one block for all of its columns,
/// places each column's two arrays in it, and passes lengths in.
///
/// Invariant (kept by `Table`): `data` and `ticks` point at arrays of the table's
/// `capacity` rows inside the table's block, at the offsets `extend_layout` computed (or are
/// dangling and aligned while the capacity is zero), and rows `0..len` hold initialised
/// values of the column's type.
///
/// ## The changed floor
///
/// A pass that writes every row of the column (`for_each_chunk`, or a `for_each` whose closure
/// wrote each row) records that once, as the column's *changed floor*, instead of storing a
/// tick per row. A row's changed tick is then the newer of its own tick and the floor.
/// Invariant: the floor is never newer than the true changed tick of any row in the column;
/// so before a row with an older tick moves in, [`settle_floor`](Self::settle_floor) writes
/// the floor into the rows and clears it. New values are stamped with the current tick, which
/// is never older than the floor, so pushing them needs nothing.
pub(crate) struct Column {
    item: Layout,
    drop: Option<unsafe fn(*mut u8)>,
    data: NonNull<u8>,
    ticks: NonNull<ComponentTicks>,
    /// Written through shared references by queries that hold a write access to the column.
    changed_floor: UnsafeCell<Option<Tick>>,
    /// The value size has an inline copy (see [`has_inline_move`](Self::has_inline_move)),
    /// decided once, so that a move tests one flag.
    inline_move: bool,
}

// SAFETY: a column owns values of one component type, and components are `Send + Sync`
// (enforced by the `Component` bound wherever a column's type is chosen). The raw pointers are
// uniquely owned, like a `Vec`'s.
unsafe impl Send for Column {}
// SAFETY: as above; shared access only ever hands out `&T` of a `Sync` component type.
unsafe impl Sync for Column {}

fn dangling(align: usize) -> NonNull<u8> {
    // A non-null pointer aligned for the type, valid for zero-sized accesses.
    NonNull::new(ptr::without_provenance_mut(align)).expect("alignment is never zero")
}

/// The page size that large value arrays are placed by.
const PAGE: usize = 4096;
/// Value arrays of at least this many bytes start a whole number of pages into their block
/// (the padding is then at most 0.4% of the array). Only arrays well past the L2 cache
/// gain from it: for cache-resident arrays the same page offset costs ~5% instead
/// (`simple_iter`, 10k rows: 1.05x raw page-placed, 1.00x not).
const PAGE_ALIGN_FROM: usize = 256 * PAGE;

/// Writes a zero byte at the start of every page that lies wholly within rows `rows` of the
/// array of `stride`-byte elements at `base`. A page first written here is mapped now, so a
/// table filled row by row across all its columns gets each array's pages in array order
/// instead of interleaved with the other arrays' (see `Table::prefault`).
///
/// # Safety
/// The array at `base` spans `rows`, and those elements hold nothing anyone reads.
unsafe fn touch_pages(base: *mut u8, stride: usize, rows: std::ops::Range<usize>) {
    let (start, end) = (rows.start * stride, rows.end * stride);
    // The first page boundary at or after the array's byte `start`, as an offset from `base`.
    let mut offset = start + (PAGE - (base.addr() + start) % PAGE) % PAGE;
    while offset < end {
        // SAFETY: `start <= offset < end`, so the byte lies in the unused rows (the caller's
        // contract); a volatile write so that it is not dropped as dead before the row is
        // filled.
        unsafe { base.add(offset).write_volatile(0) };
        offset += PAGE;
    }
}

/// Where a column's two arrays sit inside its table's block, as byte offsets.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ColumnOffsets {
    pub(crate) data: usize,
    pub(crate) ticks: usize,
}

/// Swaps two values of `size` bytes. Most components are a few words; for those sizes the
/// length is a constant, so the swap compiles to a few moves instead of a call.
///
/// # Safety
/// As for `ptr::swap_nonoverlapping(a, b, size)`.
#[inline]
unsafe fn swap_values(a: *mut u8, b: *mut u8, size: usize) {
    // SAFETY: the caller's contract; every arm swaps exactly `size` bytes.
    unsafe {
        match size {
            0 => {}
            4 => ptr::swap_nonoverlapping(a, b, 4),
            8 => ptr::swap_nonoverlapping(a, b, 8),
            12 => ptr::swap_nonoverlapping(a, b, 12),
            16 => ptr::swap_nonoverlapping(a, b, 16),
            _ => swap_any(a, b, size),
        }
    }
}

/// [`swap_values`] for other sizes, kept out of line so that the callers' common paths make
/// no call (and need not save registers around one).
///
/// # Safety
/// As for `swap_values`.
#[cold]
#[inline(never)]
unsafe fn swap_any(a: *mut u8, b: *mut u8, size: usize) {
    // SAFETY: the caller's contract.
    unsafe { ptr::swap_nonoverlapping(a, b, size) }
}

/// The value copies of a row move for a value of `SIZE` bytes in `data`: row `row` to the
/// slot `dst` names (if any), then row `last` to row `row`. With the size a constant, the row
/// offsets fold into the addressing.
///
/// # Safety
/// `row` and `last` are in-bounds rows of `data` (possibly the same); `dst`, if given, is a
/// base pointer and an in-bounds row of another array of the same type.
#[inline(always)]
unsafe fn move_value<const SIZE: usize>(
    data: *mut u8,
    row: usize,
    last: usize,
    dst: Option<(*mut u8, usize)>,
) {
    // SAFETY: the caller's contract; `ptr::copy` allows `row == last`.
    unsafe {
        let at = data.add(row * SIZE);
        if let Some((dst, dst_row)) = dst {
            ptr::copy_nonoverlapping(at, dst.add(dst_row * SIZE), SIZE);
        }
        ptr::copy(data.add(last * SIZE), at, SIZE);
    }
}

/// [`move_value`] for the other sizes with an inline copy (see [`OTHER_INLINE`]), `size`.
/// The offsets are computed from the run-time size before it is looked at again: with a
/// constant size per arm, the compiler hoisted every arm's offsets out of `Table::move_row`'s
/// loop, and spilled them (callgrind).
///
/// # Safety
/// As for `move_value`, with `size` (one of [`OTHER_INLINE`]) for `SIZE`.
#[inline(always)]
unsafe fn move_other(data: *mut u8, size: usize, row: usize, last: usize, dst: Option<(*mut u8, usize)>) {
    debug_assert!(OTHER_INLINE.contains(&size));
    // SAFETY: the caller's contract; `ptr::copy` allows `row == last`; each arm copies the
    // size it names, and the last arm is 64, the one size of `OTHER_INLINE` not named before
    // (the test `every_inline_size_copies_exactly_its_bytes` fails for a size without an arm).
    unsafe {
        let at = data.add(row * size);
        let from = data.add(last * size);
        let dst = dst.map(|(dst, dst_row)| dst.add(dst_row * size));
        match size {
            1 => copy_both::<1>(at, from, dst),
            2 => copy_both::<2>(at, from, dst),
            12 => copy_both::<12>(at, from, dst),
            16 => copy_both::<16>(at, from, dst),
            24 => copy_both::<24>(at, from, dst),
            20 => copy_both::<20>(at, from, dst),
            28 => copy_both::<28>(at, from, dst),
            32 => copy_both::<32>(at, from, dst),
            36 => copy_both::<36>(at, from, dst),
            40 => copy_both::<40>(at, from, dst),
            48 => copy_both::<48>(at, from, dst),
            _ => copy_both::<64>(at, from, dst),
        }
    }
}

/// The value sizes with an inline copy in [`move_other`]: besides 0, 4 and 8 bytes, which
/// [`move_sized`] and `Column::move_inline` test first, the flags and small enums (1 and 2
/// bytes), a few words (12 to 40), and larger values up to a 4x4 `f32` matrix (64).
const OTHER_INLINE: [usize; 12] = [1, 2, 12, 16, 20, 24, 28, 32, 36, 40, 48, 64];

/// True when values of `size` bytes are copied inline on a move: 0, 4, 8 and
/// [`OTHER_INLINE`].
fn inline_size(size: usize) -> bool {
    matches!(size, 0 | 4 | 8) || OTHER_INLINE.contains(&size)
}

/// The copies of [`move_other`] for a constant size.
///
/// # Safety
/// `at` and `from` are slots of one array (possibly the same), `dst` a slot of another, each
/// valid for `SIZE` bytes.
#[inline(always)]
unsafe fn copy_both<const SIZE: usize>(at: *mut u8, from: *const u8, dst: Option<*mut u8>) {
    // SAFETY: the caller's contract; `ptr::copy` allows `at == from`.
    unsafe {
        if let Some(dst) = dst {
            ptr::copy_nonoverlapping(at, dst, SIZE);
        }
        ptr::copy(from, at, SIZE);
    }
}

/// [`move_value`] for any size: inline for the sizes with an inline copy, else through
/// [`move_any`].
///
/// # Safety
/// As for `move_value`, with `size` for `SIZE`.
#[inline(always)]
unsafe fn move_sized(data: *mut u8, size: usize, row: usize, last: usize, dst: Option<(*mut u8, usize)>) {
    // SAFETY: the caller's contract; each arm is for the sizes it names.
    unsafe {
        match size {
            4 => move_value::<4>(data, row, last, dst),
            8 => move_value::<8>(data, row, last, dst),
            0 => {}
            // The sizes of `OTHER_INLINE`.
            1 | 2 | 12 | 16 | 20 | 24 | 28 | 32 | 36 | 40 | 48 | 64 => move_other(data, size, row, last, dst),
            _ => move_any(data, size, row, last, dst),
        }
    }
}

/// [`move_value`] for a size known only at run time: `memcpy` calls, for the general path
/// of a move ([`Column::move_out`], [`Column::refill`]), out of line as [`swap_any`].
///
/// # Safety
/// As for `move_value`, with `size` for `SIZE`.
#[cold]
#[inline(never)]
unsafe fn move_any(data: *mut u8, size: usize, row: usize, last: usize, dst: Option<(*mut u8, usize)>) {
    // SAFETY: the caller's contract; `ptr::copy` allows `row == last`.
    unsafe {
        let at = data.add(row * size);
        if let Some((dst, dst_row)) = dst {
            ptr::copy_nonoverlapping(at, dst.add(dst_row * size), size);
        }
        ptr::copy(data.add(last * size), at, size);
    }
}

impl Column {
    pub(crate) fn new(info: &ComponentInfo) -> Self {
        Self {
            item: info.layout(),
            drop: info.drop_fn(),
            data: dangling(info.layout().align()),
            ticks: NonNull::dangling(),
            changed_floor: UnsafeCell::new(None),
            inline_move: inline_size(info.layout().size()),
        }
    }

    /// Appends this column's arrays for `rows` rows to a table block's `layout` (values, then
    /// ticks) and returns their offsets.
    pub(crate) fn extend_layout(&self, layout: Layout, rows: usize) -> (Layout, ColumnOffsets) {
        let overflow = "table capacity overflow";
        let size = self.item.size().checked_mul(rows).expect(overflow);
        let values = Layout::from_size_align(size, self.item.align()).expect(overflow);
        // Large value arrays start a whole number of pages into the block: then the arrays a
        // loop streams through side by side sit at the same offset within their pages, as
        // separate (mmapped) allocations would. Measured on `big_iter` (1M rows): arbitrary
        // offsets cost 15-30% on that memory-bound pass. (The block itself keeps its natural alignment: asking the
        // allocator for page alignment made allocation much slower.)
        let layout = if size >= PAGE_ALIGN_FROM && self.item.align() <= PAGE {
            let start = layout.size().checked_next_multiple_of(PAGE).expect(overflow);
            Layout::from_size_align(start, layout.align()).expect(overflow)
        } else {
            layout
        };
        let ticks = Layout::array::<ComponentTicks>(rows).expect(overflow);
        let (layout, data) = layout.extend(values).expect(overflow);
        let (layout, ticks) = layout.extend(ticks).expect(overflow);
        (layout, ColumnOffsets { data, ticks })
    }

    /// Moves the column's arrays within a block that grew: from `old` to `new` offsets
    /// (each new offset at or past the old one), keeping rows `0..len`, and points the
    /// column there. The arrays move last first, so a longer one never overwrites the rest.
    ///
    /// # Safety
    /// `block` holds a layout containing both placements, the old arrays at `old` hold the
    /// column's `len` initialised rows, and no other column's live arrays overlap the new
    /// ones.
    pub(crate) unsafe fn slide(
        &mut self,
        block: NonNull<u8>,
        old: ColumnOffsets,
        new: ColumnOffsets,
        len: usize,
    ) {
        // SAFETY: all offsets lie inside `block` (the caller's contract); `ptr::copy` allows
        // overlap, and moving the ticks, then the values keeps each source intact until it
        // is copied (new offsets are at or past old ones).
        unsafe {
            let ticks = |offset: usize| block.add(offset).cast::<ComponentTicks>().as_ptr();
            ptr::copy(ticks(old.ticks), ticks(new.ticks), len);
            ptr::copy(
                block.add(old.data).as_ptr(),
                block.add(new.data).as_ptr(),
                self.item.size() * len,
            );
            self.data = block.add(new.data);
            self.ticks = block.add(new.ticks).cast();
        }
    }

    /// Moves the column into a new block: copies rows `0..len` (values and ticks) to the
    /// arrays at `offsets` in `block`, then points the column there.
    ///
    /// # Safety
    /// `block` is valid for writes of a layout that `extend_layout` placed this column in at
    /// `offsets`, for at least `len` rows, and does not overlap the column's current arrays;
    /// rows `0..len` are initialised here. Afterwards the old arrays hold nothing.
    pub(crate) unsafe fn relocate(&mut self, block: NonNull<u8>, offsets: ColumnOffsets, len: usize) {
        // SAFETY: every offset lies inside `block`'s allocation (the caller's contract), and
        // the copies move `len` initialised rows between non-overlapping arrays.
        unsafe {
            let data = block.add(offsets.data);
            let ticks = block.add(offsets.ticks).cast::<ComponentTicks>();
            ptr::copy_nonoverlapping(self.data.as_ptr(), data.as_ptr(), self.item.size() * len);
            ptr::copy_nonoverlapping(self.ticks.as_ptr(), ticks.as_ptr(), len);
            self.data = data;
            self.ticks = ticks;
        }
    }

    /// Points the column at no memory (dangling, aligned arrays), as a new column, for a
    /// table that freed its block: the table's capacity is zero afterwards, so no row is
    /// read or written through these pointers before the next `relocate`. Clears the floor.
    pub(crate) fn detach(&mut self) {
        self.data = dangling(self.item.align());
        self.ticks = NonNull::dangling();
        self.clear_floor();
    }

    /// Pointer to the value slot of `row`.
    ///
    /// # Safety
    /// `row < capacity`.
    #[inline]
    pub(crate) unsafe fn ptr(&self, row: usize) -> *mut u8 {
        // SAFETY: `row < capacity` keeps the offset inside the allocation (or zero for ZSTs).
        unsafe { self.data.as_ptr().add(row * self.item.size()) }
    }

    /// Moves a typed value into the uninitialised slot `row`, stamping both ticks.
    ///
    /// # Safety
    /// The column stores `T`; `row < capacity` and the slot is uninitialised.
    #[inline]
    pub(crate) unsafe fn write_value<T>(&mut self, row: usize, value: T, tick: Tick) {
        // SAFETY: the caller guarantees the type and that the slot is in bounds and free.
        unsafe {
            self.data.as_ptr().cast::<T>().add(row).write(value);
            self.ticks.as_ptr().add(row).write(ComponentTicks::new(tick));
        }
    }

    /// Replaces the typed value at `row`, marks it changed, and returns the old value.
    ///
    /// # Safety
    /// The column stores `T` and `row < len`.
    #[inline]
    pub(crate) unsafe fn replace_value<T>(&mut self, row: usize, value: T, tick: Tick) -> T {
        // SAFETY: the caller guarantees the type and that the slot is initialised.
        unsafe {
            ComponentTicks::changed_at(self.ticks.as_ptr(), row).write(tick);
            ptr::replace(self.data.as_ptr().cast::<T>().add(row), value)
        }
    }

    /// Swaps two rows, values and ticks.
    ///
    /// # Safety
    /// Both rows `< capacity` and distinct.
    #[inline]
    pub(crate) unsafe fn swap(&mut self, a: usize, b: usize) {
        // SAFETY: distinct in-bounds rows of the same buffers.
        unsafe {
            swap_values(self.ptr(a), self.ptr(b), self.item.size());
            ptr::swap(self.ticks.as_ptr().add(a), self.ticks.as_ptr().add(b));
        }
    }

    /// Whether [`try_move_out`](Self::try_move_out) and
    /// [`refill_inline`](Self::refill_inline) can move this column's values: sizes of 0, 4,
    /// 8 and those of [`OTHER_INLINE`] (1, 2, 12, 16, 20, 24, 28, 32, 36, 40, 48 and 64
    /// bytes), which cover most components, are copied inline; others take `move_out` and
    /// `refill`, which call `memcpy`. Tested when a move map is built, not per move.
    pub(crate) fn has_inline_move(&self) -> bool {
        self.inline_move
    }

    /// [`move_out`](Self::move_out) for the common case, a column with an inline move and
    /// no changed floor on either side: then it moves the row and returns `true`. With a
    /// floor it moves nothing and returns `false`, for the caller to move the column with
    /// `move_out`. Nothing here calls a function.
    ///
    /// # Safety
    /// As for `move_out`; and the column [`has_inline_move`](Self::has_inline_move).
    #[inline(always)]
    pub(crate) unsafe fn try_move_out(
        &mut self,
        row: usize,
        last: usize,
        dst: &mut Column,
        dst_row: usize,
    ) -> bool {
        debug_assert_eq!(self.item, dst.item);
        // `|`, not `||`: one branch for the three tests.
        if !self.inline_move | self.changed_floor.get_mut().is_some() | dst.changed_floor.get_mut().is_some()
        {
            return false;
        }
        // SAFETY: the caller's contract; `dst` is another column of the same type, and
        // neither has a floor.
        unsafe { self.move_inline(row, last, Some((dst, dst_row))) };
        true
    }

    /// [`refill`](Self::refill) for a column with an inline move. Nothing here calls a
    /// function.
    ///
    /// # Safety
    /// As for `refill`; and the column [`has_inline_move`](Self::has_inline_move).
    #[inline(always)]
    pub(crate) unsafe fn try_refill_inline(&mut self, row: usize, last: usize) -> bool {
        if !self.inline_move {
            return false;
        }
        // SAFETY: the caller's contract, and the column has an inline move.
        unsafe { self.move_inline(row, last, None) };
        true
    }

    /// The copies of [`try_move_out`](Self::try_move_out) (with a target) and
    /// [`refill_inline`](Self::refill_inline) (without): row `row`'s value and ticks to
    /// `dst_row` of the target, then row `last`'s to `row`.
    ///
    /// # Safety
    /// The column [`has_inline_move`](Self::has_inline_move); `row <= last < capacity`. If
    /// there is a target, it is another column of the same type, neither it nor this column
    /// has a changed floor, and its `dst_row` is in bounds and uninitialised (without a
    /// target, the refilled row stays in this column, under its floor if it has one). `row`'s
    /// value is owned by nobody once this returns (moved to the target, or by the caller
    /// beforehand).
    #[inline(always)]
    unsafe fn move_inline(&mut self, row: usize, last: usize, dst: Option<(&mut Column, usize)>) {
        debug_assert!(self.has_inline_move());
        // Each field is read once, into a local, before the first write that follows it: the
        // writes go through raw pointers that, for all the compiler knows, could point into
        // the columns, so a field read after a write is read again. The target is done with
        // before the first write, the values after the tick copies (fewer values live at
        // once).
        let ticks = self.ticks.as_ptr();
        let dst = dst.map(|(dst, dst_row)| (dst.data.as_ptr(), dst.ticks.as_ptr(), dst_row));
        // SAFETY: in-bounds tick slots (the caller's contract) of two different columns; with a
        // target, neither side has a floor, so a row's own changed tick is its effective one
        // and moves as it is; without one, the row `last` stays under this column's floor. For
        // `row == last` the refill copies a slot onto itself.
        unsafe {
            if let Some((_, dst_ticks, dst_row)) = dst {
                dst_ticks.add(dst_row).write(*ticks.add(row));
            }
            *ticks.add(row) = *ticks.add(last);
        }
        let (size, data) = (self.item.size(), self.data.as_ptr());
        let dst = dst.map(|(dst_data, _, dst_row)| (dst_data, dst_row));
        // SAFETY: rows in bounds (the caller's contract); the target is another column's
        // array, so its slot overlaps neither of this column's slots; the size is one of
        // those `has_inline_move` accepts.
        unsafe {
            match size {
                4 => move_value::<4>(data, row, last, dst),
                8 => move_value::<8>(data, row, last, dst),
                // Zero-sized tags are rarer than 4- and 8-byte values: marked cold, they are
                // tested after those, not first (callgrind: 2 instructions fewer per insert or
                // remove).
                0 => std::hint::cold_path(),
                _ => move_other(data, size, row, last, dst),
            }
        }
    }

    /// Moves the value and ticks of `row` into slot `dst_row` of `dst`, then moves row `last`
    /// into `row`, leaving `last` logically empty. The moved-out row takes its effective
    /// changed tick along (see the floor); if that is older than `dst`'s floor, `dst` settles
    /// its floor first.
    ///
    /// `row == last` is allowed: the refill is then a copy of the slot onto itself (`ptr::copy`
    /// of bytes, and the slot is past the end afterwards), so the loop needs no branch on it.
    ///
    /// The general path, for the columns [`try_move_out`](Self::try_move_out) cannot take:
    /// any value size, and changed floors.
    ///
    /// # Safety
    /// `row <= last < capacity`, `row` initialised; `dst` stores the same component type and
    /// is not this column, `dst_row` is uninitialised and in bounds there, and is `dst`'s table
    /// length before the push (rows `0..dst_row` are live there).
    // Always inlined into `move_rest`, its one caller, as is `refill`.
    #[inline(always)]
    pub(crate) unsafe fn move_out(
        &mut self,
        row: usize,
        last: usize,
        dst: &mut Column,
        dst_row: usize,
        now: Tick,
    ) {
        debug_assert_eq!(self.item, dst.item);
        let ticks = self.ticks.as_ptr();
        let (dst_data, dst_ticks) = (dst.data.as_ptr(), dst.ticks.as_ptr());
        // SAFETY: `row` is in bounds here; `&mut self` makes this the only access.
        let mut moving = unsafe { *ticks.add(row) };
        if self.changed_floor.get_mut().is_some() | dst.changed_floor.get_mut().is_some() {
            // SAFETY: `row` is in bounds here, rows `0..dst_row` are live in `dst` (the
            // caller's contract). It rewrites ticks only, so the pointers read above stay valid.
            moving.changed = unsafe { self.apply_floors(row, dst, dst_row, now) };
        }
        // SAFETY: in-bounds tick slots of two different columns; for `row == last` the refill
        // copies a slot onto itself.
        unsafe {
            dst_ticks.add(dst_row).write(moving);
            *ticks.add(row) = *ticks.add(last);
        }
        let (size, data) = (self.item.size(), self.data.as_ptr());
        // SAFETY: rows in bounds (the caller's contract); `dst_data` is another column's array,
        // so its slot overlaps neither of this column's slots.
        unsafe { move_sized(data, size, row, last, Some((dst_data, dst_row))) };
    }

    /// Moves row `last` (value and ticks) into `row`, whose value the caller has moved out
    /// already, leaving `last` logically empty: [`move_out`](Self::move_out) for a column the
    /// destination lacks. `row == last` is allowed, as there. The general path, for what
    /// [`refill_inline`](Self::refill_inline) cannot take.
    ///
    /// # Safety
    /// `row <= last < capacity`, `last` initialised, and the value at `row` is owned by nobody
    /// (it is overwritten).
    #[inline(always)]
    pub(crate) unsafe fn refill(&mut self, row: usize, last: usize) {
        // SAFETY: the caller's contract, which covers both halves.
        unsafe {
            self.refill_ticks(row, last);
            self.refill_values(row, last);
        }
    }

    /// The ticks half of [`refill`](Self::refill): copies `last`'s ticks onto `row`'s.
    ///
    /// # Safety
    /// `row <= last < capacity`, and `last`'s ticks are written.
    #[inline(always)]
    pub(crate) unsafe fn refill_ticks(&mut self, row: usize, last: usize) {
        let ticks = self.ticks.as_ptr();
        // SAFETY: in-bounds rows of this column's tick array (the caller's contract); for
        // `row == last` the same slot.
        unsafe { *ticks.add(row) = *ticks.add(last) };
    }

    /// The values half of [`refill`](Self::refill), by the column's run-time size.
    ///
    /// # Safety
    /// As for `refill`.
    #[inline(always)]
    pub(crate) unsafe fn refill_values(&mut self, row: usize, last: usize) {
        let (size, data) = (self.item.size(), self.data.as_ptr());
        // SAFETY: in-bounds rows (the caller's contract); `move_sized` allows `row == last`.
        unsafe { move_sized(data, size, row, last, None) };
    }

    /// The floor half of [`move_out`](Self::move_out), for when either column has a floor:
    /// returns `row`'s effective changed tick, settling `dst`'s floor first if it is newer.
    /// Out of line, so that the common case (no floor) keeps its registers for the moves.
    ///
    /// # Safety
    /// `row < capacity` holds a written tick; rows `0..dst_row` are live in `dst`.
    #[cold]
    #[inline(never)]
    unsafe fn apply_floors(&mut self, row: usize, dst: &mut Column, dst_row: usize, now: Tick) -> Tick {
        // SAFETY: `row` is in bounds here; `&mut self` makes this the only access.
        let changed = unsafe { self.changed_of(row, now) };
        if dst
            .changed_floor
            .get_mut()
            .is_some_and(|floor| floor.is_newer_than(changed, now))
        {
            // SAFETY: rows `0..dst_row` are live in `dst` (the caller's contract).
            unsafe { dst.settle_floor(dst_row, now) };
        }
        changed
    }

    /// Copies rows `0..n` (values and ticks, the floor applied) to rows `at..at + n` of `dst`,
    /// in bulk; the values here are logically moved out.
    ///
    /// # Safety
    /// `dst` stores the same component type; rows `0..n` are initialised here; rows
    /// `at..at + n` are within `dst`'s capacity and uninitialised, and rows `0..at` are live
    /// there.
    pub(crate) unsafe fn copy_rows_to(&mut self, n: usize, dst: &mut Column, at: usize, now: Tick) {
        debug_assert_eq!(self.item, dst.item);
        // Make every row's own tick its effective one on both sides, so the ticks copy as
        // they are (a floor here would not apply to the rows' new home; one there could be
        // newer than the rows arriving).
        // SAFETY: `n` live rows here, `at` live rows there (the caller's contract).
        unsafe {
            self.settle_floor(n, now);
            dst.settle_floor(at, now);
        }
        // SAFETY: in-bounds ranges of two different columns of the same type.
        unsafe {
            ptr::copy_nonoverlapping(self.data.as_ptr(), dst.ptr(at), self.item.size() * n);
            ptr::copy_nonoverlapping(self.ticks.as_ptr(), dst.ticks.as_ptr().add(at), n);
        }
    }

    /// The changed tick of `row`: its own, or the floor if that is newer.
    ///
    /// # Safety
    /// `row < capacity` holds a written tick; nothing writes this column's ticks meanwhile.
    #[inline]
    pub(crate) unsafe fn changed_of(&self, row: usize, now: Tick) -> Tick {
        // SAFETY: the caller's contract.
        let (own, floor) = unsafe {
            (
                *ComponentTicks::changed_at(self.ticks.as_ptr(), row),
                *self.changed_floor.get(),
            )
        };
        match floor {
            Some(floor) => own.newest(floor, now),
            None => own,
        }
    }

    /// The changed floor, or the oldest tick there is when the column has none, so that it
    /// can always be compared.
    ///
    /// # Safety
    /// Nothing writes this column's floor meanwhile: the caller holds a read or write access to
    /// the column, and is not running beside a whole-archetype pass of its own query (row
    /// ticks written by other threads do not matter; only the floor cell is read).
    #[inline]
    pub(crate) unsafe fn changed_floor(&self, now: Tick) -> Tick {
        // SAFETY: no concurrent write (the caller's contract).
        unsafe { *self.changed_floor.get() }.unwrap_or(Tick::ancient(now))
    }

    /// Marks every row of the column changed at `tick`, in O(1).
    ///
    /// # Safety
    /// The caller has exclusive access to the column's ticks (a write access to the column)
    /// and `tick` is the current run's tick, not older than any row's changed tick.
    #[inline]
    pub(crate) unsafe fn set_changed_floor(&self, tick: Tick) {
        // SAFETY: exclusive access (the caller's contract).
        unsafe { *self.changed_floor.get() = Some(tick) }
    }

    /// Writes the floor into every live row older than it and clears it.
    ///
    /// # Safety
    /// `len <= capacity` and rows `0..len` hold written ticks.
    // Never inlined: inlined into `Table::move_row`, its vector loop's constants were set up
    // on every row move, not just the rare one that settles.
    #[cold]
    #[inline(never)]
    pub(crate) unsafe fn settle_floor(&mut self, len: usize, now: Tick) {
        let Some(floor) = self.changed_floor.get_mut().take() else {
            return;
        };
        // SAFETY: `len` written ticks (the caller's contract); `&mut self` is exclusive.
        let ticks = unsafe { std::slice::from_raw_parts_mut(self.ticks.as_ptr(), len) };
        for ticks in ticks {
            ticks.changed = ticks.changed.newest(floor, now);
        }
    }

    /// Drops the value at `row` in place.
    ///
    /// # Safety
    /// `row < capacity` holds an initialised value that is not used again.
    #[inline]
    pub(crate) unsafe fn drop_in_place(&mut self, row: usize) {
        if let Some(drop) = self.drop {
            // SAFETY: the slot holds a valid value of the type `drop` was made for.
            unsafe { drop(self.ptr(row)) }
        }
    }

    /// Drops rows `0..len`; if one `Drop` panics, the rest are still dropped (see
    /// [`drop_each`](super::drop_each)).
    ///
    /// # Safety
    /// Rows `0..len` are initialised and not used again.
    pub(crate) unsafe fn drop_rows(&mut self, len: usize) {
        if self.drop.is_some() {
            super::drop_each(0..len, |row| {
                // SAFETY: `row < len`, initialised (the caller's contract), and each row is
                // visited once.
                unsafe { self.drop_in_place(row) }
            });
        }
    }

    /// Clamps the ticks of rows `0..len` that are older than the maximum age.
    ///
    /// # Safety
    /// `len <= capacity`.
    pub(crate) unsafe fn check_change_ticks(&mut self, len: usize, now: Tick) {
        // SAFETY: the tick array holds `capacity >= len` initialised-or-written pairs for the
        // live rows, and `&mut self` makes these the only references.
        let ticks = unsafe { std::slice::from_raw_parts_mut(self.ticks.as_ptr(), len) };
        for ticks in ticks {
            ticks.added.clamp_age(now);
            ticks.changed.clamp_age(now);
        }
        if let Some(floor) = self.changed_floor.get_mut() {
            floor.clamp_age(now);
        }
    }

    /// Clears the floor of a column whose rows are all gone.
    pub(crate) fn clear_floor(&mut self) {
        *self.changed_floor.get_mut() = None;
    }

    /// Writes a byte into every memory page that lies wholly within `rows` of this column's
    /// two arrays, one after the other (see [`Table::prefault`](super::Table::prefault)).
    ///
    /// # Safety
    /// `rows` lie within the table's capacity and hold no value or tick anyone reads (rows
    /// past the table's length): the bytes written are garbage until the rows are filled.
    pub(crate) unsafe fn prefault(&mut self, rows: std::ops::Range<usize>) {
        // SAFETY: both arrays span the table's capacity (column invariant), which contains
        // `rows`; those rows are unused (the caller's contract).
        unsafe {
            touch_pages(self.data.as_ptr(), self.item.size(), rows.clone());
            touch_pages(self.ticks.as_ptr().cast(), size_of::<ComponentTicks>(), rows);
        }
    }

    /// Base pointer of the value buffer (row 0), for typed iteration.
    #[inline]
    pub(crate) fn data_ptr(&self) -> *mut u8 {
        self.data.as_ptr()
    }

    /// Base pointer of the tick pairs (row 0), for typed iteration.
    #[inline]
    pub(crate) fn ticks_base(&self) -> *mut ComponentTicks {
        self.ticks.as_ptr()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_inline_size_copies_exactly_its_bytes() {
        // `move_other` ends in a catch-all arm (64 bytes); a size added to `OTHER_INLINE`
        // without an arm of its own would copy past its slot. Rows of `size` bytes sit in a
        // buffer with room to spare, and everything past the slots written must stay as it
        // was, in `move_sized` (which `has_inline_move` routes) as in `move_other`.
        for size in [0, 4, 8].into_iter().chain(OTHER_INLINE) {
            let (rows, spare) = (3, 64);
            let mut src: Vec<u8> = (0..rows * size + spare).map(|i| i as u8).collect();
            let mut dst = vec![0xAA_u8; rows * size + spare];
            let expected_row = src[2 * size..3 * size].to_vec();
            let moved = src[..size].to_vec();
            // Row 0 to `dst` row 1, then row 2 into row 0.
            // SAFETY: rows 0 and 2 of `src` and row 1 of `dst` lie inside the buffers.
            unsafe { move_sized(src.as_mut_ptr(), size, 0, 2, Some((dst.as_mut_ptr(), 1))) };
            assert_eq!(&dst[size..2 * size], &moved[..], "size {size}");
            assert!(
                dst[..size].iter().all(|&b| b == 0xAA),
                "size {size}: before the slot"
            );
            assert!(
                dst[2 * size..].iter().all(|&b| b == 0xAA),
                "size {size}: past the slot"
            );
            assert_eq!(&src[..size], &expected_row[..], "size {size}");
            let untouched = (size..rows * size + spare).all(|i| src[i] == i as u8);
            assert!(untouched, "size {size}: past row 0");
        }
    }
}
