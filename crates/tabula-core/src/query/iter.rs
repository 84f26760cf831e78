//! [`QueryIter`]: walks the matched archetypes, and inside each, its rows.

use super::fetch::QueryData;
use super::filter::QueryFilter;
use super::state::{Matched, QueryState};
use crate::archetype::Archetype;
use crate::change::RunTicks;
use crate::world::UnsafeWorldCell;

/// The iterator of a query's items; see [`QueryState::iter`] and [`QueryState::iter_mut`].
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
    current: Option<(D::Fetch<'w>, F::Fetch<'w>)>,
    row: usize,
    len: usize,
}

impl<'w, 's, D: QueryData, F: QueryFilter> QueryIter<'w, 's, D, F> {
    /// # Safety
    /// For `'w`, the caller holds the access `state` reports through `world` (shared for a
    /// read-only query, exclusive for the columns it writes), `world` is the state's world,
    /// and the state's archetypes are up to date.
    pub(crate) unsafe fn new(
        state: &'s QueryState<D, F>,
        world: UnsafeWorldCell<'w>,
        ticks: RunTicks,
    ) -> Self {
        Self {
            // SAFETY: only the archetype list (structure) is read through this reference.
            archetypes: unsafe { world.world() }.archetype_list(),
            matched: state.matched.iter(),
            ticks,
            current: None,
            row: 0,
            len: 0,
        }
    }

    /// Advances to the next row that passes the filter, leaving it at `self.row - 1`.
    #[inline]
    fn advance(&mut self) -> bool {
        loop {
            if let Some((_, filter)) = &mut self.current {
                while self.row < self.len {
                    let row = self.row;
                    self.row += 1;
                    // SAFETY: `row < len`, a live row of the current archetype.
                    if F::ARCHETYPAL || unsafe { F::filter_row(filter, row) } {
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
                unsafe {
                    (
                        D::fetch_archetype(matched.data, archetype, self.ticks),
                        F::fetch_archetype(matched.filter, archetype, self.ticks),
                    )
                }
            });
        }
    }

    /// True when another row matches (consumes up to and including it).
    pub(crate) fn matches_more(&mut self) -> bool {
        self.advance()
    }

    /// How many rows remain that match.
    pub(crate) fn count_matches(mut self) -> usize {
        if F::ARCHETYPAL {
            let here = self.len - self.row;
            let archetypes = self.archetypes;
            return here
                + self
                    .matched
                    .map(|m| archetypes[m.archetype.index()].len())
                    .sum::<usize>();
        }
        let mut n = 0;
        while self.advance() {
            n += 1;
        }
        n
    }
}

impl<'w, D: QueryData, F: QueryFilter> Iterator for QueryIter<'w, '_, D, F> {
    type Item = D::Item<'w>;

    #[inline]
    fn next(&mut self) -> Option<D::Item<'w>> {
        if !self.advance() {
            return None;
        }
        let (data, _) = self.current.as_mut()?;
        // SAFETY: `advance` left a live, passing row at `row - 1`; each row is yielded once.
        Some(unsafe { D::fetch(data, self.row - 1) })
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let archetypes = self.archetypes;
        let upper = (self.len - self.row)
            + self
                .matched
                .clone()
                .map(|m| archetypes[m.archetype.index()].len())
                .sum::<usize>();
        (if F::ARCHETYPAL { upper } else { 0 }, Some(upper))
    }

    /// The hot path behind `for_each`, `sum`, `count`...: one tight loop per archetype.
    #[inline]
    fn fold<B, G>(mut self, init: B, mut g: G) -> B
    where
        G: FnMut(B, Self::Item) -> B,
    {
        let mut acc = init;
        if let Some((data, filter)) = &mut self.current {
            for row in self.row..self.len {
                // SAFETY: live rows of the current archetype, each yielded once.
                unsafe {
                    if F::ARCHETYPAL || F::filter_row(filter, row) {
                        acc = g(acc, D::fetch(data, row));
                    }
                }
            }
        }
        for matched in self.matched {
            let archetype = &self.archetypes[matched.archetype.index()];
            let len = archetype.len();
            if len == 0 {
                continue;
            }
            // SAFETY: the caches came from matching this archetype; access per `new`; rows
            // `0..len` are live and each yielded once.
            unsafe {
                let mut data = D::fetch_archetype(matched.data, archetype, self.ticks);
                let mut filter = F::fetch_archetype(matched.filter, archetype, self.ticks);
                for row in 0..len {
                    if F::ARCHETYPAL || F::filter_row(&mut filter, row) {
                        acc = g(acc, D::fetch(&mut data, row));
                    }
                }
            }
        }
        acc
    }
}
