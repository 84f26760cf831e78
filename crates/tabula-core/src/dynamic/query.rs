//! [`DynamicQuery`]: a query whose terms are component ids chosen at run time.

use std::fmt;
use std::ptr::NonNull;

use super::ptr::{MutUntyped, Ptr, PtrMut};
use crate::archetype::Archetype;
use crate::change::{ComponentTicks, LastRun, RunTicks};
use crate::component::ComponentId;
use crate::entity::Entity;
use crate::location::ArchetypeId;
use crate::query::Access;
use crate::storage::{Column, NO_COLUMN, Table};
use crate::world::{World, WorldId};

/// One term that fetches a value.
#[derive(Clone, Copy, Debug)]
struct FetchTerm {
    id: ComponentId,
    write: bool,
    /// Matched entities may lack it ([`DynamicQueryBuilder::optional`]).
    optional: bool,
    /// The component is stored in a [sparse set](crate::ComponentRegistration::sparse_set):
    /// looked up per entity, not by archetype column.
    sparse: bool,
}

/// A filter on a row's change ticks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum TickFilter {
    /// The value was added since the query's last run.
    Added,
    /// The value was added or written since the query's last run.
    Changed,
}

/// An archetype the query matched, with the column of each fetch term there
/// ([`NO_COLUMN`] for an optional term the archetype lacks, and for a sparse term), then of
/// each tick filter (the same for a sparse one).
struct DynamicMatch {
    archetype: ArchetypeId,
    columns: Box<[u32]>,
}

/// A query built at run time from component ids: terms that read, write, optionally read,
/// require or exclude a component, for scripting layers, loaders and inspectors that know
/// components only by id. Built with [`DynamicQuery::builder`].
///
/// Like a typed [`QueryState`](crate::QueryState) it remembers the archetypes it matched and
/// tests only new ones on each use, and it skips entities with a
/// [disabling component](crate::Disabled) unless a term names it (`with`, `read`,
/// `optional`, [`allow`](DynamicQueryBuilder::allow), ...). Writing through
/// [`DynamicItem::get_mut`] marks the value changed, as a `&mut T` term does, and the
/// [`added`](DynamicQueryBuilder::added) and [`changed`](DynamicQueryBuilder::changed)
/// filters pass the rows added or changed since the query's previous run, as
/// [`Added<T>`](crate::Added) and [`Changed<T>`](crate::Changed) do.
///
/// A term may name a component stored in a
/// [sparse set](crate::ComponentRegistration::sparse_set), as in a typed query: it cannot
/// narrow the archetypes matched, so each row's entity is looked up in the set, and rows
/// that lack a required one (or have an excluded one) are skipped.
///
/// ```
/// use tabula::{DynamicQuery, World};
///
/// struct Frozen;
///
/// let mut world = World::new();
/// let speed = world.register_component::<f32>().id();
/// let frozen = world.register_component::<Frozen>().id();
/// world.spawn((1.0f32,));
/// world.spawn((2.0f32, Frozen));
/// let mut query = DynamicQuery::builder(&mut world).write(speed).without(frozen).build()?;
/// query.for_each(&mut world, |mut item| {
///     let mut value = item.get_mut(speed).unwrap();
///     // SAFETY: `speed` is the `f32` component.
///     unsafe { *value.as_mut().deref_mut::<f32>() *= 10.0 };
/// });
/// let mut speeds: Vec<f32> = world.query::<&f32>().iter(&world).copied().collect();
/// speeds.sort_by(f32::total_cmp);
/// assert_eq!(speeds, [2.0, 10.0]);
/// # Ok::<(), tabula::DynamicQueryError>(())
/// ```
pub struct DynamicQuery {
    world: WorldId,
    fetch: Box<[FetchTerm]>,
    /// The table components required and excluded, matched by archetype.
    with: Box<[ComponentId]>,
    without: Box<[ComponentId]>,
    /// The sparse components required (by a `with`, a non-optional fetch term or a tick
    /// filter) and excluded, tested per row.
    sparse_with: Box<[ComponentId]>,
    sparse_without: Box<[ComponentId]>,
    /// Each tick filter, with whether its component is sparse.
    ticks: Box<[(ComponentId, TickFilter, bool)]>,
    access: Access,
    /// The disabling components skipped (see [`crate::disabled`]).
    skip: u64,
    matched: Vec<DynamicMatch>,
    archetypes_seen: usize,
    last_run: LastRun,
}

/// Collects the terms of a [`DynamicQuery`]; from [`DynamicQuery::builder`]. Each method
/// adds one term and returns the builder; [`build`](Self::build) checks them.
pub struct DynamicQueryBuilder<'w> {
    world: &'w mut World,
    fetch: Vec<FetchTerm>,
    with: Vec<ComponentId>,
    without: Vec<ComponentId>,
    allow: Vec<ComponentId>,
    ticks: Vec<(ComponentId, TickFilter)>,
}

impl DynamicQuery {
    /// Starts a query over `world`.
    pub fn builder(world: &mut World) -> DynamicQueryBuilder<'_> {
        DynamicQueryBuilder {
            world,
            fetch: Vec::new(),
            with: Vec::new(),
            without: Vec::new(),
            allow: Vec::new(),
            ticks: Vec::new(),
        }
    }

    /// What the query reads and writes, with its filters.
    pub fn access(&self) -> &Access {
        &self.access
    }

    /// True when some term writes.
    pub fn writes(&self) -> bool {
        self.fetch.iter().any(|term| term.write)
    }

    /// Matches the archetypes created since the last use.
    ///
    /// # Panics
    /// When `world` is not the world the query was built for.
    pub fn update_archetypes(&mut self, world: &World) {
        assert!(
            self.world == world.id(),
            "a DynamicQuery was used with another World than the one it was built for; build \
             one per world (component ids are per world too)"
        );
        let archetypes = world.archetype_list();
        for archetype in &archetypes[self.archetypes_seen..] {
            if let Some(columns) = self.match_archetype(archetype) {
                self.matched.push(DynamicMatch {
                    archetype: archetype.id(),
                    columns,
                });
            }
        }
        self.archetypes_seen = archetypes.len();
    }

    /// The column of each fetch term in `archetype`, if the query matches it.
    fn match_archetype(&self, archetype: &Archetype) -> Option<Box<[u32]>> {
        // Disabled entities: skipped unless a term names their disabling component.
        if archetype.disabling & self.skip != 0 {
            return None;
        }
        let has = |id: &ComponentId| archetype.column_of(*id).is_some();
        if !self.with.iter().all(has) || self.without.iter().any(has) {
            return None;
        }
        let fetched = (self.fetch.iter()).map(|term| match archetype.column_of(term.id) {
            _ if term.sparse => Some(NO_COLUMN),
            Some(column) => Some(column as u32),
            None if term.optional => Some(NO_COLUMN),
            None => None,
        });
        let filtered = (self.ticks.iter()).map(|&(id, _, sparse)| match sparse {
            true => Some(NO_COLUMN),
            false => archetype.column_of(id).map(|c| c as u32),
        });
        fetched.chain(filtered).collect()
    }

    /// Every matched entity, with write access to the write terms. Starts a run: change
    /// marks are stamped with its tick.
    ///
    /// # Panics
    /// When `world` is not the world the query was built for.
    pub fn iter_mut<'a>(&'a mut self, world: &'a mut World) -> DynamicIter<'a> {
        self.update_archetypes(world);
        let run = world.start_run_mut(&mut self.last_run);
        DynamicIter::new(self, world, run)
    }

    /// Every matched entity, read-only, through a shared world. Starts a run.
    ///
    /// # Panics
    /// When the query has a write term (use [`iter_mut`](Self::iter_mut)), or `world` is not
    /// the world the query was built for.
    pub fn iter<'a>(&'a mut self, world: &'a World) -> DynamicIter<'a> {
        assert!(
            !self.writes(),
            "this DynamicQuery has write terms, so it cannot run through a shared World; use \
             `iter_mut` or `for_each` with `&mut World`"
        );
        self.update_archetypes(world);
        let run = world.start_run(&mut self.last_run);
        DynamicIter::new(self, world, run)
    }

    /// Calls `f` with every matched entity (see [`iter_mut`](Self::iter_mut)).
    pub fn for_each(&mut self, world: &mut World, f: impl FnMut(DynamicItem<'_>)) {
        self.iter_mut(world).for_each(f);
    }
}

impl fmt::Debug for DynamicQuery {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DynamicQuery")
            .field("fetch", &self.fetch)
            .field("with", &self.with)
            .field("without", &self.without)
            .field("matched_archetypes", &self.matched.len())
            .finish()
    }
}

impl DynamicQueryBuilder<'_> {
    fn fetch(mut self, id: ComponentId, write: bool, optional: bool) -> Self {
        self.fetch.push(FetchTerm {
            id,
            write,
            optional,
            sparse: false,
        });
        self
    }

    /// Reads component `id`; matched entities have it.
    pub fn read(self, id: ComponentId) -> Self {
        self.fetch(id, false, false)
    }

    /// Writes component `id`; matched entities have it.
    pub fn write(self, id: ComponentId) -> Self {
        self.fetch(id, true, false)
    }

    /// Reads component `id` where the entity has it ([`DynamicItem::get`] is `None`
    /// elsewhere); matches entities either way.
    pub fn optional(self, id: ComponentId) -> Self {
        self.fetch(id, false, true)
    }

    /// Writes component `id` where the entity has it; matches entities either way.
    pub fn optional_mut(self, id: ComponentId) -> Self {
        self.fetch(id, true, true)
    }

    /// Matches only entities that have component `id`, without fetching it.
    pub fn with(mut self, id: ComponentId) -> Self {
        self.with.push(id);
        self
    }

    /// Matches only entities that lack component `id`.
    pub fn without(mut self, id: ComponentId) -> Self {
        self.without.push(id);
        self
    }

    /// Matches only the rows whose component `id` was added since the query's previous run
    /// (every row on the first), as [`Added<T>`](crate::Added).
    pub fn added(mut self, id: ComponentId) -> Self {
        self.ticks.push((id, TickFilter::Added));
        self
    }

    /// Matches only the rows whose component `id` was added or written since the query's
    /// previous run (every row on the first), as [`Changed<T>`](crate::Changed).
    ///
    /// ```
    /// use tabula::{DynamicQuery, World};
    ///
    /// let mut world = World::new();
    /// let hp = world.register_component::<u32>().id();
    /// let a = world.spawn((10u32,));
    /// world.spawn((20u32,));
    /// let mut changed = DynamicQuery::builder(&mut world).changed(hp).build()?;
    /// assert_eq!(changed.iter(&world).count(), 2); // the first run sees every row
    /// *world.get_mut::<u32>(a)? -= 1;
    /// assert_eq!(changed.iter(&world).map(|item| item.entity()).collect::<Vec<_>>(), [a]);
    /// assert_eq!(changed.iter(&world).count(), 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn changed(mut self, id: ComponentId) -> Self {
        self.ticks.push((id, TickFilter::Changed));
        self
    }

    /// Names disabling component `id` without filtering on it, so that entities it disables
    /// are matched too (as [`Allow<T>`](crate::Allow)).
    pub fn allow(mut self, id: ComponentId) -> Self {
        self.allow.push(id);
        self
    }

    /// Checks the terms and matches the archetypes that exist now.
    ///
    /// ```
    /// use tabula::{DynamicQuery, DynamicQueryError, World};
    ///
    /// let mut world = World::new();
    /// let a = world.register_component::<u8>().id();
    /// let error = DynamicQuery::builder(&mut world).read(a).write(a).build().unwrap_err();
    /// assert_eq!(error, DynamicQueryError::Conflict { component: "u8" });
    /// ```
    ///
    /// # Errors
    /// [`DynamicQueryError::UnknownComponent`] for an id no component of the world has,
    /// [`DynamicQueryError::Conflict`] when a component is written by one term and read or
    /// written by another, [`DynamicQueryError::ImmutableComponent`] when a term writes an
    /// [immutable](crate::ComponentRegistration::immutable) component.
    pub fn build(self) -> Result<DynamicQuery, DynamicQueryError> {
        let world = self.world;
        let filters = self.with.iter().chain(&self.without).chain(&self.allow);
        let ticked = self.ticks.iter().map(|&(id, _)| id);
        let all = (self.fetch.iter().map(|t| t.id))
            .chain(filters.copied())
            .chain(ticked);
        for id in all {
            if world.components().get_info(id).is_none() {
                return Err(DynamicQueryError::UnknownComponent(id));
            }
        }
        let name = |id: ComponentId| world.components().info(id).name();
        let mut access = Access::default();
        for term in &self.fetch {
            if term.write && world.components().info(term.id).is_immutable() {
                return Err(DynamicQueryError::ImmutableComponent {
                    component: name(term.id),
                });
            }
            let added = if term.write {
                access.add_write(term.id)
            } else {
                access.add_read(term.id)
            };
            added.map_err(|id| DynamicQueryError::Conflict { component: name(id) })?;
            if !term.optional {
                access.add_with(term.id);
            }
        }
        self.with.iter().for_each(|&id| access.add_with(id));
        self.without.iter().for_each(|&id| access.add_without(id));
        self.allow.iter().for_each(|&id| access.add_named(id));
        for &(id, _) in &self.ticks {
            access.add_filter_read(id);
            access.add_with(id);
        }
        let skip = world.default_query_skip(&access);
        let is_sparse = |id: &ComponentId| world.sparse.get(*id).is_some();
        // A sparse component is in no archetype: its terms are tested per row instead.
        let mut fetch = self.fetch;
        fetch
            .iter_mut()
            .for_each(|term| term.sparse = is_sparse(&term.id));
        let (sparse_with, with): (Vec<_>, Vec<_>) = self.with.into_iter().partition(is_sparse);
        let (sparse_without, without): (Vec<_>, Vec<_>) = self.without.into_iter().partition(is_sparse);
        let ticks: Vec<_> = (self.ticks.into_iter())
            .map(|(id, filter)| (id, filter, is_sparse(&id)))
            .collect();
        let required = (fetch.iter())
            .filter(|term| term.sparse && !term.optional)
            .map(|term| term.id)
            .chain(ticks.iter().filter(|(.., sparse)| *sparse).map(|&(id, ..)| id));
        let mut sparse_with: Vec<ComponentId> = sparse_with.into_iter().chain(required).collect();
        sparse_with.sort_unstable();
        sparse_with.dedup();
        let mut query = DynamicQuery {
            world: world.id(),
            fetch: fetch.into(),
            with: with.into(),
            without: without.into(),
            sparse_with: sparse_with.into(),
            sparse_without: sparse_without.into(),
            ticks: ticks.into(),
            access,
            skip,
            matched: Vec::new(),
            archetypes_seen: 0,
            last_run: LastRun::NEVER,
        };
        query.update_archetypes(world);
        Ok(query)
    }
}

/// Why [`DynamicQueryBuilder::build`] refused the terms.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum DynamicQueryError {
    /// No component of the world has this id.
    UnknownComponent(ComponentId),
    /// The component is written by one term and read or written by another, so an item
    /// would alias it.
    Conflict {
        /// The component's name.
        component: &'static str,
    },
    /// A term writes a component registered as immutable.
    ImmutableComponent {
        /// The component's name.
        component: &'static str,
    },
}

impl fmt::Display for DynamicQueryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::UnknownComponent(id) => write!(
                f,
                "no component has id {} in the query's world; component ids are per world: take \
                 them from that world's `components()` or registration",
                id.index()
            ),
            Self::Conflict { component } => write!(
                f,
                "the query writes `{component}` in one term and reads or writes it in another; keep \
                 one term for it (a write term can be read through too)"
            ),
            Self::ImmutableComponent { component } => write!(
                f,
                "the query writes `{component}`, which is immutable (its values are replaced by \
                 insert, never changed in place); read it instead"
            ),
        }
    }
}

impl std::error::Error for DynamicQueryError {}

/// The entities of one run of a [`DynamicQuery`], archetype by archetype in row order.
pub struct DynamicIter<'w> {
    world: &'w World,
    archetypes: &'w [Archetype],
    matched: std::slice::Iter<'w, DynamicMatch>,
    fetch: &'w [FetchTerm],
    sparse_with: &'w [ComponentId],
    sparse_without: &'w [ComponentId],
    ticks: &'w [(ComponentId, TickFilter, bool)],
    /// The archetype being walked, its columns, and the next row.
    current: Option<(&'w Table, &'w [Entity], &'w [u32])>,
    row: usize,
    run: RunTicks,
}

impl<'w> DynamicIter<'w> {
    /// The iterator of `query`'s run `run` over `world`, whose archetypes it has matched.
    /// Handing out write access is sound because both are borrowed for `'w` and the items'
    /// rows are distinct: a `&mut World` for `iter_mut`; `iter` has no write terms.
    fn new(query: &'w DynamicQuery, world: &'w World, run: RunTicks) -> Self {
        Self {
            world,
            archetypes: world.archetype_list(),
            matched: query.matched.iter(),
            fetch: &query.fetch,
            sparse_with: &query.sparse_with,
            sparse_without: &query.sparse_without,
            ticks: &query.ticks,
            current: None,
            row: 0,
            run,
        }
    }
}

impl DynamicIter<'_> {
    /// True when `entity` has every required sparse component and no excluded one.
    fn passes_sparse(&self, entity: Entity) -> bool {
        let has = |id: &ComponentId| self.world.sparse_contains(*id, entity);
        self.sparse_with.iter().all(has) && !self.sparse_without.iter().any(has)
    }

    /// True when `entity`, at `row` of `table`, passes every tick filter; `columns` are the
    /// filters' columns (a sparse filter's component is looked up in its set, which
    /// [`passes_sparse`](Self::passes_sparse) found it in).
    fn passes_ticks(&self, table: &Table, columns: &[u32], entity: Entity, row: usize) -> bool {
        let RunTicks { last_run, this_run } = self.run;
        (self.ticks.iter().zip(columns)).all(|(&(id, filter, sparse), &column)| {
            let (column, row) = match sparse {
                true => match sparse_value(self.world, id, entity) {
                    Some(found) => found,
                    None => return false,
                },
                false => (table.column(column as usize), row),
            };
            // SAFETY: `row` is a live row, so its tick pair is written. Only this row's ticks
            // and the column's floor are read; the one write access that could touch them is
            // an item of this very row, which is made only after the test, and no pass
            // writes the floor while the world is borrowed for the iteration.
            let tick = unsafe {
                match filter {
                    TickFilter::Added => ComponentTicks::added_at(column.ticks_base(), row),
                    TickFilter::Changed => column.changed_of(row, this_run),
                }
            };
            tick.is_newer_than(last_run, this_run)
        })
    }
}

impl<'w> Iterator for DynamicIter<'w> {
    type Item = DynamicItem<'w>;

    fn next(&mut self) -> Option<DynamicItem<'w>> {
        loop {
            if let Some((table, entities, columns)) = self.current
                && let Some(&entity) = entities.get(self.row)
            {
                let row = self.row;
                self.row += 1;
                if !self.passes_sparse(entity)
                    || !self.passes_ticks(table, &columns[self.fetch.len()..], entity, row)
                {
                    continue;
                }
                return Some(DynamicItem {
                    world: self.world,
                    entity,
                    table,
                    row,
                    fetch: self.fetch,
                    columns,
                    run: self.run,
                });
            }
            let matched = self.matched.next()?;
            let archetype = &self.archetypes[matched.archetype.index()];
            self.current = Some((&archetype.table, archetype.entities(), &matched.columns));
            self.row = 0;
        }
    }
}

/// The column holding `entity`'s value of sparse component `id` (its set's one column), and
/// the row there; `None` when `id` is not sparse or `entity` lacks it.
fn sparse_value(world: &World, id: ComponentId, entity: Entity) -> Option<(&Column, usize)> {
    let set = world.sparse.get(id)?;
    Some((set.table().column(0), set.row_of(entity)?))
}

/// One entity of a [`DynamicQuery`] run: its id and its fetched components by id.
pub struct DynamicItem<'w> {
    world: &'w World,
    entity: Entity,
    table: &'w Table,
    row: usize,
    fetch: &'w [FetchTerm],
    columns: &'w [u32],
    run: RunTicks,
}

impl DynamicItem<'_> {
    /// The entity.
    pub fn entity(&self) -> Entity {
        self.entity
    }

    /// The column and row holding the entity's value of the first fetch term of `id` (a
    /// write term when `write`), if the entity has it: its archetype's column at the item's
    /// row, or for a sparse component the set's column at the entity's dense row.
    fn column(&self, id: ComponentId, write: bool) -> Option<(&Column, usize)> {
        let term = (self.fetch.iter()).position(|t| t.id == id && (t.write || !write))?;
        if self.fetch[term].sparse {
            return sparse_value(self.world, id, self.entity);
        }
        let column = self.columns[term];
        (column != NO_COLUMN).then(|| (self.table.column(column as usize), self.row))
    }

    /// The entity's component `id`, read-only: `None` when no fetch term (read, write or
    /// optional) names `id`, or an optional term's component is absent.
    pub fn get(&self, id: ComponentId) -> Option<Ptr<'_>> {
        let (column, row) = self.column(id, false)?;
        // SAFETY: `row` is a live row of the column's table (the iterator walks `0..len` of
        // a world borrowed for the item's life; a sparse set's row was just looked up in
        // it), so the pointer is in bounds and non-null; a write through this item needs
        // `&mut self`, which the returned borrow of `self` rules out, and no other item has
        // this entity, so none has this row.
        Some(unsafe { Ptr::new(NonNull::new_unchecked(column.ptr(row))) })
    }

    /// The entity's component `id`, writable, marking it changed when written: `None` when
    /// no write term names `id`, or an optional one's component is absent.
    pub fn get_mut(&mut self, id: ComponentId) -> Option<MutUntyped<'_>> {
        let (column, row) = self.column(id, true)?;
        let (ticks, run) = (column.ticks_base(), self.run);
        // SAFETY: `row` is live (as in `get`). The term writes `id`, so the query's access
        // check left no other term naming it; the iterator gives each entity (so each
        // archetype row, and each dense row of a sparse set) to one item, and
        // holds the world exclusively for write terms (`iter_mut`; `iter` refuses them), so
        // `&mut self` makes the value and its `changed` tick this borrow's alone. The value
        // and the tick are written through the column's own pointers, and the tick without
        // a reference to its pair (as in `World::get_mut`); the floor is only read, and no
        // pass of this query writes it meanwhile.
        unsafe {
            let value = PtrMut::new(NonNull::new_unchecked(column.ptr(row)));
            Some(MutUntyped::new(
                value,
                ComponentTicks::added_at(ticks, row),
                &mut *ComponentTicks::changed_at(ticks, row),
                column.changed_floor(run.this_run),
                run,
            ))
        }
    }
}

impl fmt::Debug for DynamicItem<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DynamicItem")
            .field("entity", &self.entity)
            .finish()
    }
}
