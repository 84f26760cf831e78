//! `for_each`: the query loop that marks changes per column instead of per row.
//!
//! A `&mut T` item marks its row changed when it is written through (`DerefMut`). Storing a
//! tick per written row costs a store per entity, which in a loop like `pos += vel` is a
//! quarter of the work. `for_each` owns its loop, so it can do better without changing what
//! gets marked:
//!
//! 1. Each item marks a *scratch* tick in the fetch instead of the row's tick
//!    ([`QueryData::fetch_deferred`]). After the closure returns, the loop reads the scratch
//!    back ([`QueryData::row_marked`]).
//! 2. While every row so far was marked, nothing is stored. When the closure writes every row
//!    of an archetype (the common case: after inlining, the compiler sees the scratch is always
//!    marked and drops the check), the whole column is marked at once at the end: its
//!    *changed floor* is set, O(1) ([`QueryData::mark_rows`] with `whole`).
//! 3. At the first row the closure did not write, the rows before it are marked with a fill,
//!    that row's scratch is stored, and the rest of the archetype runs the plain per-row way.
//!
//! The result is exactly the per-row marking: a row counts as changed iff it was written.
//! If the closure panics, an unwind guard marks the rows written so far, so no write goes
//! unrecorded.
//!
//! The scratch tick lives inside the fetch, which stays in place for the whole loop, and the
//! closure is higher-ranked over the item's lifetime, so an item (and its pointer to the
//! scratch) cannot outlive the call it was passed to.

use std::ops::Range;

use super::fetch::QueryData;
use super::filter::QueryFilter;
use super::state::QueryState;
use crate::change::RunTicks;
use crate::world::{UnsafeWorldCell, World};

impl<D: QueryData, F: QueryFilter> QueryState<D, F> {
    /// Calls `f` on every matching item. The loop runs per archetype over plain columns, and
    /// a pass that writes every row of an archetype marks its column changed once instead of
    /// once per row.
    ///
    /// ```
    /// use tabula::{Changed, World};
    /// let mut world = World::new();
    /// world.spawn_batch((0..4u32).map(|i| (i, 0.5f32)));
    /// let mut changed = world.query_filtered::<&u32, Changed<u32>>();
    /// assert_eq!(changed.iter(&world).count(), 4); // spawning counts as a change
    ///
    /// // Writes only the even numbers: only they count as changed afterwards.
    /// let mut q = world.query::<&mut u32>();
    /// q.for_each(&mut world, |mut n| {
    ///     if *n % 2 == 0 {
    ///         *n += 10;
    ///     }
    /// });
    /// let mut seen: Vec<u32> = changed.iter(&world).copied().collect();
    /// seen.sort();
    /// assert_eq!(seen, [10, 12]);
    /// ```
    pub fn for_each(&mut self, world: &mut World, f: impl FnMut(D::Item<'_>)) {
        let ticks = self.begin_run_mut(world);
        if !self.sparse {
            self.update_plan(world);
        }
        // SAFETY: `&mut World` is exclusive for the call, the state is this world's and up to
        // date, and its access was checked for self-aliasing when built.
        unsafe { self.for_each_unchecked(UnsafeWorldCell::new_mutable(world), ticks, f) }
    }

    /// [`for_each`](Self::for_each) through an [`UnsafeWorldCell`], for schedulers.
    ///
    /// # Safety
    /// As for [`iter_unchecked`](Self::iter_unchecked).
    pub unsafe fn for_each_unchecked(
        &self,
        world: UnsafeWorldCell<'_>,
        ticks: RunTicks,
        mut f: impl FnMut(D::Item<'_>),
    ) {
        if self.sparse {
            // SAFETY: the caller's contract; only the structure is read through the world.
            unsafe {
                super::sparse::for_each_sparse::<D, F>(
                    world.world(),
                    &self.data_state,
                    &self.filter_state,
                    &self.matched,
                    ticks,
                    &mut f,
                );
            }
            return;
        }
        let mut plain = false;
        // SAFETY: the state is up to date for this world and the caller holds the query's
        // access (the caller's contract); only the structure is read through the reference.
        unsafe {
            self.for_each_archetype(
                world.world(),
                ticks,
                // Inlined where each walk calls it. As a function of its own it takes the
                // fetch through memory the column writes might alias, so the row loop reloads
                // it every row and does not vectorise: a swap through `(&mut A, &mut B)` ran
                // 10x slower (the `schedule` bench, from b00495e to this fix).
                #[inline(always)]
                |mut data, mut filter, len| {
                    // SAFETY: rows `0..len` are all of the archetype's live rows, visited once, by
                    // this thread alone.
                    run_rows::<D, F>(&mut data, &mut filter, 0..len, Marks::Whole, &mut plain, &mut f);
                },
            );
        }
    }
}

/// Runs of at most this many rows take the four-rows-per-step loop in [`run_rows`].
const SHORT_RUN: usize = 64;

/// What [`run_rows`] does with the marks of a run whose every row was written.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Marks {
    /// Set the column's floor: the run is the whole archetype, and no other thread works on
    /// it.
    Whole,
    /// Store nothing and report the run as pending: the caller marks it later with
    /// [`QueryData::mark_rows`], once it knows whether every run of the archetype was fully
    /// written (then one floor covers them all).
    Defer,
}

/// Calls `f` on the items of `rows` of one archetype that pass the filter, deferring change
/// marks as the module explains. Returns true when the marks of the run are still to be made
/// (`Marks::Defer`, and every row was written); otherwise every written row is marked.
///
/// `plain` carries what earlier runs of the same pass learned: once the closure has left the
/// first row of a short run unwritten (a closure that writes through
/// `bypass_change_detection`, or only some rows), later short runs skip the deferred attempt
/// and take the per-row loop at once. Over short archetypes that attempt and the switch out
/// of it cost more than the rows; long runs always try, as the floor saves a store per row.
///
/// # Safety
/// The fetches come from one archetype whose rows `rows` are live; the caller holds the
/// query's access to them, and no item of these rows is live elsewhere; `Marks::Whole` as
/// it says.
#[inline(always)]
pub(super) unsafe fn run_rows<'w, D: QueryData, F: QueryFilter>(
    data: &mut D::Fetch<'w>,
    filter: &mut F::Fetch<'w>,
    rows: Range<usize>,
    marks: Marks,
    plain: &mut bool,
    f: &mut impl FnMut(D::Item<'_>),
) -> bool {
    let short = rows.end - rows.start <= SHORT_RUN;
    if D::DEFERS_MARKS && F::ARCHETYPAL && short && *plain {
        // SAFETY: the caller's contract.
        unsafe { plain_rows::<D>(data, rows, f) };
        return false;
    }
    if !D::DEFERS_MARKS || !F::ARCHETYPAL {
        // Nothing to defer, or rows the filter skips would break the all-marked run: the
        // plain loop, each item marking its own row.
        for row in rows {
            // SAFETY: live rows, each visited once (the caller's contract).
            unsafe {
                if F::ARCHETYPAL || F::filter_row(filter, row) {
                    f(D::fetch(data, row));
                }
            }
        }
        return false;
    }

    // Every access to `data` below goes through this one pointer, which the unwind guard
    // shares; `data` itself is not used again.
    let data: *mut D::Fetch<'w> = data;
    let mut guard = MarkOnUnwind::<D> {
        data,
        start: rows.start,
        row: rows.start,
    };
    // One row: hand out its item, then check its mark; at the first unmarked row, switch to
    // the plain loop for the rest and return.
    macro_rules! step {
        ($row:expr) => {{
            let row = $row;
            guard.row = row;
            // SAFETY: `row` is live and visited once; the item is consumed by `f` before
            // `data` is touched again, and `f` is higher-ranked, so the item cannot outlive
            // the call.
            unsafe { f(D::fetch_deferred(&mut *data, row)) };
            // SAFETY: `data` is valid and no item borrows it any more.
            if !D::row_marked(unsafe { &*data }) {
                std::mem::forget(guard);
                *plain |= short && row == rows.start;
                // SAFETY: rows `start..row` were all marked and `row`'s scratch is the last
                // one taken; the rest are live rows not yet visited.
                unsafe { finish_unmarked::<D>(&mut *data, rows.start, row, rows.end, f) };
                return false;
            }
        }};
    }
    if short {
        // Short runs, four rows per step: the straight-line bodies of adjacent rows combine
        // into vector instructions where the compiler can prove they do not alias (one
        // written column), and there is no scalar tail to pay per archetype.
        for _ in 0..(rows.end - rows.start) / 4 {
            let row = guard.row;
            step!(row);
            step!(row + 1);
            step!(row + 2);
            step!(row + 3);
            guard.row = row + 4;
        }
    }
    // Long runs, one row per step: the loop vectoriser handles this shape, with run-time
    // checks that the columns do not overlap (which the straight-line form cannot get, so
    // e.g. a swap between two columns would stay scalar).
    while guard.row < rows.end {
        let row = guard.row;
        step!(row);
        guard.row = row + 1;
    }
    std::mem::forget(guard);
    if marks == Marks::Defer {
        return true;
    }
    // SAFETY: every row of `rows` was marked; `Marks::Whole` as the caller promises.
    unsafe { D::mark_rows(&mut *data, rows, true) };
    false
}

/// The slow end of [`run_rows`]: rows `start..row` were all marked, `row` was just visited
/// and was not; marks them, then visits `row + 1..end` with per-row stamps.
///
/// # Safety
/// As for `run_rows`, for the fetch and these rows; no item of them is live.
#[cold]
#[inline(never)]
unsafe fn finish_unmarked<D: QueryData>(
    data: &mut D::Fetch<'_>,
    start: usize,
    row: usize,
    end: usize,
    f: &mut impl FnMut(D::Item<'_>),
) {
    // SAFETY: the caller's contract.
    unsafe {
        D::mark_rows(data, start..row, false);
        D::store_mark(data, row);
        plain_rows::<D>(data, row + 1..end, f);
    }
}

/// Calls `f` on the items of `rows`, each marking its own row when written. Short runs go
/// four rows per step, as in [`run_rows`], so that a closure that never marks (one that
/// writes through `bypass_change_detection`) still gets vector code over a short archetype.
///
/// # Safety
/// As for `run_rows`, for the fetch and these rows; no item of them is live.
#[inline(always)]
unsafe fn plain_rows<D: QueryData>(
    data: &mut D::Fetch<'_>,
    rows: Range<usize>,
    f: &mut impl FnMut(D::Item<'_>),
) {
    let mut row = rows.start;
    if rows.end - row <= SHORT_RUN {
        for _ in 0..(rows.end - row) / 4 {
            // SAFETY: live rows, each visited once (the caller's contract); each item is
            // consumed by `f` before the next is made.
            unsafe {
                f(D::fetch(data, row));
                f(D::fetch(data, row + 1));
                f(D::fetch(data, row + 2));
                f(D::fetch(data, row + 3));
            }
            row += 4;
        }
    }
    while row < rows.end {
        // SAFETY: as above.
        unsafe { f(D::fetch(data, row)) };
        row += 1;
    }
}

/// Marks the rows a panicking `for_each` closure had already been handed (rows `start..row`
/// in full, and `row` if its scratch says it was written).
struct MarkOnUnwind<'w, D: QueryData> {
    data: *mut D::Fetch<'w>,
    start: usize,
    row: usize,
}

impl<D: QueryData> Drop for MarkOnUnwind<'_, D> {
    fn drop(&mut self) {
        // SAFETY: only reached while unwinding out of `f` inside `run_rows`, whose item for
        // `self.row` is already gone; `data` is still valid there and these rows are live and
        // ours, as `run_rows`'s caller guarantees.
        unsafe {
            D::mark_rows(&mut *self.data, self.start..self.row, false);
            D::store_mark(&mut *self.data, self.row);
        }
    }
}
