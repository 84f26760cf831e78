//! [`QueryIter`]: walks the matched archetypes, and inside each, its rows.

use std::ops::Range;

use super::fetch::QueryData;
use super::filter::QueryFilter;
use super::sparse::SparseIter;
use super::state::{Matched, StateParts, fetch_matched, non_empty};
use crate::archetype::Archetype;
use crate::change::RunTicks;
use crate::world::UnsafeWorldCell;

/// The iterator of a query's items; see [`QueryState::iter`](super::QueryState::iter) and
/// [`QueryState::iter_mut`](super::QueryState::iter_mut).
///
/// Items borrow the world for `'w`, so none can outlive the borrow it came from:
///
/// ```compile_fail
/// use tabula::World;
/// let mut world = World::new();
/// world.spawn((1u32,));
/// let mut q = world.query::<&u32>();
/// let first = q.iter(&world).next().unwrap();
/// drop(world); // error: `world` is still borrowed by `first`
/// println!("{first}");
/// ```
///
/// and two mutable iterations cannot overlap, because each holds `&mut World`:
///
/// ```compile_fail
/// use tabula::World;
/// let mut world = World::new();
/// let mut a = world.query::<&mut u32>();
/// let mut b = world.query::<&mut u32>();
/// let mut first = a.iter_mut(&mut world);
/// let mut second = b.iter_mut(&mut world); // error: second mutable borrow of `world`
/// first.next();
/// ```
pub struct QueryIter<'w, 's, D: QueryData, F: QueryFilter> {
    archetypes: &'w [Archetype],
    matched: std::slice::Iter<'s, Matched<D::Cache, F::Cache>>,
    ticks: RunTicks,
    /// The fetches of the current archetype, or (filter `None`) a sparse row's
    /// [`row_fetch`](QueryData::row_fetch), whose item is its row 0: see `next`.
    current: Option<(D::Fetch<'w>, Option<F::Fetch<'w>>)>,
    row: usize,
    len: usize,
    /// The walk of a query on the sparse path (`query/sparse.rs`); its table walk above is
    /// then empty, so the table path's row loop pays nothing for it. Boxed, so that the
    /// out-of-line step of that walk in `next` is handed a pointer to the box, not into this
    /// iterator: with a pointer into it, a `for` loop over a table query could no longer
    /// keep the iterator in registers, and stored and reloaded its state every row
    /// (`simple_iter/tabula_for_loop`: 3.8x the instructions of a build without sparse
    /// sets; boxed, and with one item site in `next`, 0.9x).
    sparse: Option<Box<SparseIter<'w, 's, D, F>>>,
}

impl<'w, 's, D: QueryData, F: QueryFilter> QueryIter<'w, 's, D, F> {
    /// The iterator over the matches of a state, which may be the state of a query whose
    /// read-only form `D` is (the states and matches are the same types).
    ///
    /// # Safety
    /// For `'w`, the caller holds the access the state reports through `world` (shared for
    /// a read-only query, exclusive for the columns it writes), `world` is the state's
    /// world, the state's archetypes are up to date, and its access covers `D`'s.
    #[inline]
    pub(crate) unsafe fn from_state(
        state: StateParts<'s, D::State, F::State, D::Cache, F::Cache>,
        world: UnsafeWorldCell<'w>,
        ticks: RunTicks,
    ) -> Self {
        // SAFETY: only the structure (archetype list, sparse sets) is read through this
        // reference.
        let world = unsafe { world.world() };
        let (matched, sparse): (&[Matched<D::Cache, F::Cache>], _) = if state.sparse {
            // SAFETY: the caller's contract; the matches are on the sparse path.
            let sparse = unsafe { SparseIter::new(world, state.data, state.filter, state.matched, ticks) };
            (&[], Some(Box::new(sparse)))
        } else {
            (state.matched, None)
        };
        Self {
            archetypes: world.archetype_list(),
            matched: matched.iter(),
            ticks,
            current: None,
            row: 0,
            len: 0,
            sparse,
        }
    }

    /// True when another item matches (moving past it: it is not yielded after this).
    pub(crate) fn has_more(&mut self) -> bool {
        self.matches_more()
            || self
                .sparse
                .as_mut()
                .is_some_and(|sparse| sparse.next_row_fetch().is_some())
    }

    /// Advances to the next row that passes the filter, leaving it at `self.row - 1`; false
    /// when no row is left.
    #[inline]
    pub(crate) fn matches_more(&mut self) -> bool {
        loop {
            if let Some((_, filter)) = &mut self.current {
                while self.row < self.len {
                    let row = self.row;
                    self.row += 1;
                    // (A sparse row's fetch, which has no filter, is never walked here: `next`
                    // leaves it with `row == len`.)
                    let passes = |filter: &mut F::Fetch<'w>| {
                        // SAFETY: `row < len`, a live row of the current archetype.
                        unsafe { F::filter_row(filter, row) }
                    };
                    if F::ARCHETYPAL || filter.as_mut().is_none_or(passes) {
                        return true;
                    }
                }
            }
            let Some(matched) = self.matched.next() else {
                return false;
            };
            let archetype = &self.archetypes[matched.archetype.index()];
            self.row = 0;
            self.len = archetype.len();
            // Empty archetypes are skipped without building a fetch.
            self.current = (self.len > 0).then(|| {
                // SAFETY: the cache came from matching this archetype; access per `new`.
                let (data, filter) = unsafe { fetch_matched::<D, F>(matched, archetype, self.ticks) };
                (data, Some(filter))
            });
        }
    }

    /// The rows left, in the current archetype and the ones after it, before filtering.
    fn rows_left(&self) -> usize {
        let archetypes = self.archetypes;
        (self.len - self.row)
            + self
                .matched
                .clone()
                .map(|m| archetypes[m.archetype.index()].len())
                .sum::<usize>()
    }

    /// How many rows remain that match.
    pub(crate) fn count_matches(mut self) -> usize {
        if let Some(mut sparse) = self.sparse {
            return std::iter::from_fn(|| sparse.next_row_fetch()).count();
        }
        if F::ARCHETYPAL {
            return self.rows_left();
        }
        std::iter::from_fn(|| self.matches_more().then_some(())).count()
    }
}

impl<'w, D: QueryData, F: QueryFilter> Iterator for QueryIter<'w, '_, D, F> {
    type Item = D::Item<'w>;

    #[inline(always)]
    fn next(&mut self) -> Option<D::Item<'w>> {
        if !self.matches_more() {
            // The end of the table walk, or a query on the sparse path: its walk steps out
            // of line (through the box, see `sparse`) to the next row's fetch, which becomes
            // the current one-row "archetype", so that the item below is made in one place
            // for both paths. (Made here too, a second item merging with the table row's
            // cost `simple_iter/tabula_for_loop` 1.35x its table-only instructions, and more
            // by time: the loop kept less of its state in registers.)
            let row_fetch = self.sparse.as_deref_mut()?.next_row_fetch_out_of_line()?;
            self.current = Some((row_fetch, None));
            self.row = 1;
            self.len = 1;
        }
        let (data, _) = self.current.as_mut()?;
        // SAFETY: `matches_more` left a live, passing row at `row - 1`, or the sparse walk a
        // fetch of one such row, read at its row 0 (`row` is 1); each row is yielded once.
        Some(unsafe { D::fetch(data, self.row - 1) })
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        if self.sparse.is_some() {
            return (0, None);
        }
        let upper = self.rows_left();
        (if F::ARCHETYPAL { upper } else { 0 }, Some(upper))
    }

    /// The hot path behind `for_each`, `sum`, `count`...: one tight loop per archetype.
    #[inline]
    fn fold<B, G>(self, init: B, mut g: G) -> B
    where
        G: FnMut(B, Self::Item) -> B,
    {
        if let Some(sparse) = self.sparse {
            return (*sparse).fold(init, g);
        }
        // SAFETY: the current archetype's rows from `row` on are live and not yet yielded;
        // the later archetypes' caches came from matching them (the state is up to date,
        // `new`'s contract), and their rows `0..len` are live and each yielded once; access
        // per `new`.
        unsafe {
            let mut acc = match self.current {
                Some((data, Some(filter))) => {
                    fold_rows::<D, F, B>(init, (data, filter), self.row..self.len, &mut g)
                }
                // No archetype, or (on the sparse path, returned above) a row already yielded.
                _ => init,
            };
            for (matched, archetype, len) in non_empty(self.matched.as_slice(), self.archetypes) {
                let fetches = fetch_matched::<D, F>(matched, archetype, self.ticks);
                acc = fold_rows::<D, F, B>(acc, fetches, 0..len, &mut g);
            }
            acc
        }
    }
}

/// Folds rows `rows` of one archetype, with its fetches, into `acc`.
///
/// # Safety
/// The rows are live rows of the archetype the fetches are of, under the access
/// [`QueryIter::new`] requires, and none of them is yielded elsewhere.
#[inline(always)]
unsafe fn fold_rows<'w, D: QueryData, F: QueryFilter, B>(
    mut acc: B,
    (mut data, mut filter): (D::Fetch<'w>, F::Fetch<'w>),
    rows: Range<usize>,
    g: &mut impl FnMut(B, D::Item<'w>) -> B,
) -> B {
    for row in rows {
        // SAFETY: the caller's contract.
        unsafe {
            if F::ARCHETYPAL || F::filter_row(&mut filter, row) {
                acc = g(acc, D::fetch(&mut data, row));
            }
        }
    }
    acc
}
