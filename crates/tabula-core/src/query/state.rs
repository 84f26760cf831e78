//! [`QueryState`]: a query's cached knowledge of the world, and its entry points.

use std::any::type_name;
use std::sync::atomic::AtomicU64;

use super::access::Access;
use super::error::{AccessConflict, QueryError};
use super::fetch::QueryData;
use super::filter::{ArchetypeFilter, QueryFilter};
use super::iter::QueryIter;
use super::par::BatchSize;
use super::plan::RunPlan;
use crate::archetype::Archetype;
use crate::change::LastRun;
use crate::change::RunTicks;
use crate::entity::Entity;
use crate::location::ArchetypeId;
use crate::location::EntityLocation;
use crate::world::{UnsafeWorldCell, World, WorldId};

/// An archetype the query matched, with what it needs to read it.
pub(crate) struct Matched<DC, FC> {
    pub(crate) archetype: ArchetypeId,
    pub(crate) data: DC,
    pub(crate) filter: FC,
}

/// A `matched_index` entry for an archetype the query does not match.
const NOT_MATCHED: u32 = u32::MAX;

/// Set in the `matched_index` entries of a query on the sparse path. `NOT_MATCHED` has it
/// too, so a lookup sends both off the table path with one test, rather than testing the
/// state's `sparse` flag as well (see `QueryState::get_as`).
const OFF_TABLE: u32 = 1 << 31;

/// A query over one world: the data `D` it fetches, for entities that pass filter `F`.
///
/// Built once with [`World::query`] or [`World::query_filtered`], it remembers which
/// archetypes match and where each fetched component's column is in them. Each use first
/// tests only the archetypes created since the last use, so keeping a `QueryState` around
/// makes every later iteration a walk over plain column slices.
///
/// Each iteration is a *run*: `Added<T>` / `Changed<T>` pass the rows changed since this
/// state's previous run.
///
/// Entities with a [`Disabled`](crate::Disabled) component (or another disabling component)
/// are skipped unless the query names it, e.g. with [`Allow<Disabled>`](crate::Allow).
///
/// ```
/// use tabula::{With, Without, World};
///
/// struct Position(f32);
/// struct Velocity(f32);
/// struct Frozen;
///
/// let mut world = World::new();
/// world.spawn((Position(0.0), Velocity(1.0)));
/// world.spawn((Position(0.0), Velocity(1.0), Frozen));
///
/// let mut movement = world.query_filtered::<(&mut Position, &Velocity), Without<Frozen>>();
/// movement.for_each(&mut world, |(mut pos, vel)| pos.0 += vel.0);
///
/// let mut positions: Vec<f32> = world.query::<&Position>().iter(&world).map(|p| p.0).collect();
/// positions.sort_by(f32::total_cmp);
/// assert_eq!(positions, [0.0, 1.0]);
/// ```
pub struct QueryState<D: QueryData, F: QueryFilter = ()> {
    world: WorldId,
    pub(crate) data_state: D::State,
    pub(crate) filter_state: F::State,
    pub(crate) matched: Vec<Matched<D::Cache, F::Cache>>,
    /// Archetype index -> index into `matched` (with `OFF_TABLE` set on the sparse path), or
    /// `NOT_MATCHED`.
    matched_index: Vec<u32>,
    archetypes_seen: usize,
    /// The disabling components this query skips (bits of each archetype's `disabling`
    /// mask): those its access does not name (see [`crate::disabled`]).
    skip: u64,
    last_run: LastRun,
    access: Access,
    pub(crate) par_batch_size: BatchSize,
    /// What a row cost the previous automatic `par_for_each`, in picoseconds; 0 before the
    /// first (see `query/par.rs`).
    pub(crate) par_row_cost: AtomicU64,
    /// The matched archetypes' column pointers for whole passes (see `query/plan.rs`).
    pub(crate) plan: RunPlan<D::Prepared, F::Prepared>,
    /// True when the query names a sparse-set component: its passes take the sparse path
    /// (`query/sparse.rs`), and `matched` was matched with `match_sparse`.
    pub(crate) sparse: bool,
    /// How many components the world stored sparse when `sparse` was decided.
    sparse_seen: usize,
    /// The world's match epoch when both were last brought up to date (`usize::MAX` before
    /// the first update): a lookup learns that nothing is new from one comparison.
    epoch_seen: usize,
}

impl<D: QueryData, F: QueryFilter> std::fmt::Debug for QueryState<D, F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QueryState")
            .field("query", &type_name::<(D, F)>())
            .field("matched_archetypes", &self.matched.len())
            .field("access", &self.access)
            .finish()
    }
}

impl World {
    /// A query fetching `D` from every entity that has it.
    ///
    /// # Panics
    /// When `D` would alias itself, e.g. `(&mut A, &A)`; the message names the component.
    /// Use [`QueryState::try_new`] to get the error as a value. Also when `D` writes an
    /// [immutable](crate::ComponentRegistration::immutable) component.
    pub fn query<D: QueryData>(&mut self) -> QueryState<D, ()> {
        QueryState::new(self)
    }

    /// A query fetching `D` from the entities that pass filter `F`.
    ///
    /// # Panics
    /// As for [`query`](Self::query).
    pub fn query_filtered<D: QueryData, F: QueryFilter>(&mut self) -> QueryState<D, F> {
        QueryState::new(self)
    }
}

impl<D: QueryData, F: QueryFilter> QueryState<D, F> {
    /// Builds the state, matching every archetype that exists now.
    ///
    /// # Panics
    /// When the query aliases its own data; see [`try_new`](Self::try_new).
    pub fn new(world: &mut World) -> Self {
        Self::try_new(world).unwrap_or_else(|conflict| panic!("{conflict}"))
    }

    /// Builds the state, or reports the component a query like `(&mut A, &A)` would alias.
    ///
    /// # Panics
    /// When `D` writes an [immutable](crate::ComponentRegistration::immutable) component.
    pub fn try_new(world: &mut World) -> Result<Self, AccessConflict> {
        let data_state = D::init_state(world);
        let filter_state = F::init_state(world);
        let mut access = Access::default();
        D::update_access(&data_state, &mut access)
            .and_then(|()| F::update_access(&filter_state, &mut access))
            .map_err(|id| AccessConflict {
                query: type_name::<(D, F)>(),
                component: world.components().info(id).name(),
            })?;
        let sparse = names_sparse(world, &access);
        if sparse && !(D::SPARSE_AWARE && F::SPARSE_AWARE) {
            refuse_sparse_terms(world, &access, type_name::<(D, F)>());
        }
        let skip = world.default_query_skip(&access);
        let mut state = Self {
            world: world.id(),
            data_state,
            filter_state,
            matched: Vec::new(),
            matched_index: Vec::new(),
            archetypes_seen: 0,
            skip,
            last_run: LastRun::NEVER,
            access,
            par_batch_size: BatchSize::Automatic,
            par_row_cost: AtomicU64::new(0),
            plan: RunPlan::default(),
            sparse,
            sparse_seen: world.sparse.count(),
            epoch_seen: usize::MAX,
        };
        state.update_archetypes(world);
        Ok(state)
    }

    /// What the query reads and writes, with its filters; the scheduler's input.
    pub fn access(&self) -> &Access {
        &self.access
    }

    /// Matches the archetypes created since the last update (only those are tested).
    ///
    /// # Panics
    /// When `world` is not the world the state was built for.
    #[inline]
    pub fn update_archetypes(&mut self, world: &World) {
        assert!(
            self.world == world.id(),
            "QueryState<{}> was built for another World; build one per world",
            type_name::<(D, F)>()
        );
        // Inline, so that a lookup (`get`) pays one comparison when nothing is new (two
        // made `QueryState::get` 3 instructions dearer, of 34; callgrind).
        if self.epoch_seen != world.match_epoch() {
            self.catch_up(world);
        }
    }

    /// Matches new archetypes and takes in new sparse registrations.
    #[cold]
    #[inline(never)]
    fn catch_up(&mut self, world: &World) {
        if self.archetypes_seen != world.archetype_list().len() {
            self.match_new_archetypes(world);
        }
        if self.sparse_seen != world.sparse.count() {
            self.sparse_registered(world);
        }
        self.epoch_seen = world.match_epoch();
    }

    /// A component was made sparse since the state decided its path (it was registered by
    /// this query, and stored nowhere yet): if the query names it, rematch on the sparse path.
    fn sparse_registered(&mut self, world: &World) {
        self.sparse_seen = world.sparse.count();
        if self.sparse || !names_sparse(world, &self.access) {
            return;
        }
        if !(D::SPARSE_AWARE && F::SPARSE_AWARE) {
            refuse_sparse_terms(world, &self.access, type_name::<(D, F)>());
        }
        self.sparse = true;
        self.matched.clear();
        self.matched_index.clear();
        self.archetypes_seen = 0;
        self.plan = RunPlan::default();
        self.match_new_archetypes(world);
    }

    #[inline(never)]
    fn match_new_archetypes(&mut self, world: &World) {
        let archetypes = world.archetype_list();
        for archetype in &archetypes[self.archetypes_seen..] {
            self.matched_index.push(NOT_MATCHED);
            // Disabled entities: skipped unless the query names their disabling component.
            if archetype.disabling & self.skip != 0 {
                continue;
            }
            let (data, filter) = if self.sparse {
                (
                    D::match_sparse(&self.data_state, archetype, world),
                    F::match_sparse(&self.filter_state, archetype, world),
                )
            } else {
                (
                    D::match_archetype(&self.data_state, archetype),
                    F::match_archetype(&self.filter_state, archetype),
                )
            };
            let (Some(data), Some(filter)) = (data, filter) else {
                continue;
            };
            // Below `OFF_TABLE - 1`, so that no entry with `OFF_TABLE` set reads `NOT_MATCHED`.
            let index = u32::try_from(self.matched.len())
                .ok()
                .filter(|&index| index < OFF_TABLE - 1)
                .expect("a query matches fewer than 2^31 - 1 archetypes");
            self.matched_index[archetype.id().index()] = if self.sparse { index | OFF_TABLE } else { index };
            self.matched.push(Matched {
                archetype: archetype.id(),
                data,
                filter,
            });
        }
        self.archetypes_seen = archetypes.len();
    }

    /// Starts a run with the world held exclusively: updates the archetype list, advances the
    /// world's change tick and this state's `last_run`. The clock advances without the atomic
    /// read-modify-write of `World::start_run` (which `iter` takes), which costs as much as a
    /// short query pass, and old ticks are clamped when due.
    #[inline]
    pub(crate) fn begin_run_mut(&mut self, world: &mut World) -> RunTicks {
        self.update_archetypes(world);
        world.start_run_mut(&mut self.last_run)
    }

    /// When this state's last run started.
    pub fn last_run(&self) -> LastRun {
        self.last_run
    }

    /// Sets when the last run started (schedulers keep it per system).
    pub fn set_last_run(&mut self, last_run: LastRun) {
        self.last_run = last_run;
    }

    /// Ticks for a lookup that is not a run (`get`, `single`): changes since the last run.
    fn peek_ticks(&mut self, world: &World) -> RunTicks {
        self.update_archetypes(world);
        world.peek_run(self.last_run)
    }

    /// Iterates the matching entities through shared access. A query with mutable terms
    /// yields their read-only forms ([`QueryData::ReadOnly`]): `&T` for `&mut T`.
    ///
    /// ```
    /// use tabula::World;
    /// let mut world = World::new();
    /// world.spawn((1u32, 'a'));
    /// let mut q = world.query::<(&mut u32, &char)>();
    /// let items: Vec<(&u32, &char)> = q.iter(&world).collect();
    /// assert_eq!(items, [(&1, &'a')]);
    /// ```
    pub fn iter<'w, 's>(&'s mut self, world: &'w World) -> QueryIter<'w, 's, D::ReadOnly, F> {
        self.update_archetypes(world);
        let ticks = world.start_run(&mut self.last_run);
        // SAFETY: `&World` rules out writers for `'w`, and the items are read-only.
        unsafe { self.iter_read_only_unchecked(UnsafeWorldCell::new_readonly(world), ticks) }
    }

    /// Iterates the matching entities with mutable access; `&mut T` terms yield [`Mut<T>`](crate::Mut),
    /// which marks a row changed only when written through.
    pub fn iter_mut<'w, 's>(&'s mut self, world: &'w mut World) -> QueryIter<'w, 's, D, F> {
        let ticks = self.begin_run_mut(world);
        // SAFETY: `&mut World` is exclusive for `'w`, and the state's access was checked for
        // self-aliasing when it was built.
        unsafe { QueryIter::from_state(self.parts(), UnsafeWorldCell::new_mutable(world), ticks) }
    }

    /// Iterates through an [`UnsafeWorldCell`] with explicit ticks — how a scheduler runs
    /// the queries of a system.
    ///
    /// # Safety
    /// For `'w`, the caller holds the access reported by [`access`](Self::access) (no one
    /// else writes what it reads or touches what it writes), and `world` is the state's
    /// world with archetypes already updated (see
    /// [`update_archetypes`](Self::update_archetypes)).
    pub unsafe fn iter_unchecked<'w, 's>(
        &'s self,
        world: UnsafeWorldCell<'w>,
        ticks: RunTicks,
    ) -> QueryIter<'w, 's, D, F> {
        // SAFETY: forwarded contract.
        unsafe { QueryIter::from_state(self.parts(), world, ticks) }
    }

    /// Iterates the read-only forms of the items ([`QueryData::ReadOnly`]) through an
    /// [`UnsafeWorldCell`]: `&T` for a `&mut T` term.
    ///
    /// # Safety
    /// For `'w`, the caller holds at least shared access to everything
    /// [`access`](Self::access) reports (no one writes what the query reads or writes), and
    /// `world` is the state's world with archetypes already updated.
    pub unsafe fn iter_read_only_unchecked<'w, 's>(
        &'s self,
        world: UnsafeWorldCell<'w>,
        ticks: RunTicks,
    ) -> QueryIter<'w, 's, D::ReadOnly, F> {
        // SAFETY: `D::ReadOnly` reads through `D`'s states and matches (the `QueryData`
        // contract) only what `D` reads or writes, which the caller holds shared.
        unsafe { QueryIter::from_state(self.parts(), world, ticks) }
    }

    /// Calls `f` once per non-empty matching archetype with whole columns, e.g.
    /// `(&mut [Position], &[Velocity])`, for loops the compiler can vectorise. `&mut T`
    /// columns are marked changed as a whole, once per call.
    ///
    /// ```
    /// use tabula::World;
    /// let mut world = World::new();
    /// world.spawn_batch((0..10).map(|i| (i as f32, 2.0f64)));
    /// let mut q = world.query::<(&mut f32, &f64)>();
    /// q.for_each_chunk(&mut world, |(xs, ys)| {
    ///     for (x, y) in xs.iter_mut().zip(ys) {
    ///         *x *= *y as f32;
    ///     }
    /// });
    /// let sum: f32 = world.query::<&f32>().iter(&world).sum();
    /// assert_eq!(sum, 90.0);
    /// ```
    pub fn for_each_chunk(&mut self, world: &mut World, f: impl FnMut(D::Chunk<'_>))
    where
        F: ArchetypeFilter,
    {
        let ticks = self.begin_run_mut(world);
        self.update_plan(world);
        // SAFETY: `&mut World` is exclusive, and the access was checked at build time.
        unsafe { self.for_each_chunk_unchecked(UnsafeWorldCell::new_mutable(world), ticks, f) }
    }

    /// [`for_each_chunk`](Self::for_each_chunk) through an [`UnsafeWorldCell`].
    ///
    /// # Safety
    /// As for [`iter_unchecked`](Self::iter_unchecked).
    pub unsafe fn for_each_chunk_unchecked(
        &self,
        world: UnsafeWorldCell<'_>,
        ticks: RunTicks,
        mut f: impl FnMut(D::Chunk<'_>),
    ) where
        F: ArchetypeFilter,
    {
        if self.sparse {
            refuse_sparse_chunks(world, &self.access, type_name::<(D, F)>());
        }
        // SAFETY: the state is up to date for this world and the caller holds the query's
        // access (the caller's contract); only the structure is read through the reference.
        unsafe {
            self.for_each_archetype(world.world(), ticks, |mut fetch, _, len| {
                // SAFETY: each archetype's chunk is handed out once.
                f(D::fetch_chunk(&mut fetch, len));
            });
        }
    }

    /// The item of one entity, through shared access (read-only forms of mutable terms:
    /// `&T` for `&mut T`).
    pub fn get<'w>(
        &mut self,
        world: &'w World,
        entity: Entity,
    ) -> Result<<D::ReadOnly as QueryData>::Item<'w>, QueryError> {
        let ticks = self.peek_ticks(world);
        // SAFETY: read-only items under `&World`.
        unsafe { self.get_read_only_unchecked(UnsafeWorldCell::new_readonly(world), entity, ticks) }
    }

    /// The item of one entity, with mutable access.
    pub fn get_mut<'w>(&mut self, world: &'w mut World, entity: Entity) -> Result<D::Item<'w>, QueryError> {
        let ticks = self.peek_ticks(world);
        // SAFETY: `&mut World` is exclusive; one item is handed out.
        unsafe { self.get_unchecked(UnsafeWorldCell::new_mutable(world), entity, ticks) }
    }

    /// The item of one entity through an [`UnsafeWorldCell`].
    ///
    /// # Safety
    /// As for [`iter_unchecked`](Self::iter_unchecked); for a mutable `D`, no other item of
    /// this entity from this query is live.
    pub unsafe fn get_unchecked<'w>(
        &self,
        world: UnsafeWorldCell<'w>,
        entity: Entity,
        ticks: RunTicks,
    ) -> Result<D::Item<'w>, QueryError> {
        // SAFETY: forwarded contract.
        unsafe { self.get_as::<D>(world, entity, ticks) }
    }

    /// The read-only item of one entity ([`QueryData::ReadOnly`]) through an
    /// [`UnsafeWorldCell`].
    ///
    /// # Safety
    /// As for [`iter_read_only_unchecked`](Self::iter_read_only_unchecked).
    pub unsafe fn get_read_only_unchecked<'w>(
        &self,
        world: UnsafeWorldCell<'w>,
        entity: Entity,
        ticks: RunTicks,
    ) -> Result<<D::ReadOnly as QueryData>::Item<'w>, QueryError> {
        // SAFETY: `D::ReadOnly` reads with `D`'s states and caches (the `QueryData`
        // contract) only what the caller holds shared.
        unsafe { self.get_as::<D::ReadOnly>(world, entity, ticks) }
    }

    /// The item of one entity as `R`, `D` itself or its read-only form.
    ///
    /// The table path stays inline and the rest (the sparse path, and no match) is a call: a
    /// lookup that carried both paths to one result made `QueryState::get` 1.47x the
    /// instructions of a table-only build (`random_get/tabula_query_get`, 50 against 34 a
    /// lookup, callgrind). One test of the archetype's entry (`OFF_TABLE`) picks the path,
    /// and one comparison with the world's match epoch tells that nothing is new: testing
    /// the `sparse` flag first and comparing with the sum of two counts made it 39 (35 now).
    ///
    /// # Safety
    /// As for [`get_unchecked`](Self::get_unchecked), and `R` is `D` or `D::ReadOnly` (so it
    /// reads with `D`'s states and caches).
    #[inline(always)]
    unsafe fn get_as<'w, R: QueryData<State = D::State, Cache = D::Cache>>(
        &self,
        world: UnsafeWorldCell<'w>,
        entity: Entity,
        ticks: RunTicks,
    ) -> Result<R::Item<'w>, QueryError> {
        // SAFETY: the state is up to date for this world (the caller's contract).
        let (location, entry) = unsafe { self.entry_of(world, entity) }?;
        if entry & OFF_TABLE != 0 {
            // SAFETY: forwarded contract.
            return unsafe { self.get_off_table_as::<R>(world, entity, ticks) };
        }
        // SAFETY: as above; the entry is the one of `location`'s archetype, on the table path.
        let found = unsafe { self.found_in_table(world, entity, location, entry, ticks) }?;
        // SAFETY: forwarded contract; `found` came from `found_in_table`, as from `locate`.
        Ok(unsafe { fetch_found::<R, F>(&self.data_state, world, found, entity, ticks) })
    }

    /// [`get_as`](Self::get_as) off the table path (on the sparse path, or no match), out of
    /// line.
    ///
    /// # Safety
    /// As for [`get_as`](Self::get_as).
    #[inline(never)]
    unsafe fn get_off_table_as<'w, R: QueryData<State = D::State, Cache = D::Cache>>(
        &self,
        world: UnsafeWorldCell<'w>,
        entity: Entity,
        ticks: RunTicks,
    ) -> Result<R::Item<'w>, QueryError> {
        // SAFETY: the state is up to date for this world (the caller's contract).
        let found = unsafe { self.locate(world, entity, ticks) }?;
        // SAFETY: forwarded contract; `found` came from `locate`.
        Ok(unsafe { fetch_found::<R, F>(&self.data_state, world, found, entity, ticks) })
    }

    /// The items of several distinct entities at once, with mutable access.
    ///
    /// ```
    /// use tabula::{QueryError, World};
    /// let mut world = World::new();
    /// let a = world.spawn((1u32,));
    /// let b = world.spawn((2u32,));
    /// let mut q = world.query::<&mut u32>();
    /// let [mut x, mut y] = q.get_many_mut(&mut world, [a, b])?;
    /// std::mem::swap(&mut *x, &mut *y);
    /// assert_eq!(q.get_many_mut(&mut world, [a, a]).err(), Some(QueryError::AliasedMutability(a)));
    /// # Ok::<(), QueryError>(())
    /// ```
    pub fn get_many_mut<'w, const N: usize>(
        &mut self,
        world: &'w mut World,
        entities: [Entity; N],
    ) -> Result<[D::Item<'w>; N], QueryError> {
        let ticks = self.peek_ticks(world);
        // SAFETY: `&mut World` is exclusive for `'w`.
        unsafe { self.get_many_unchecked(UnsafeWorldCell::new_mutable(world), entities, ticks) }
    }

    /// [`get_many_mut`](Self::get_many_mut) through an [`UnsafeWorldCell`].
    ///
    /// # Safety
    /// As for [`iter_unchecked`](Self::iter_unchecked); no other item from this query is live.
    pub unsafe fn get_many_unchecked<'w, const N: usize>(
        &self,
        world: UnsafeWorldCell<'w>,
        entities: [Entity; N],
        ticks: RunTicks,
    ) -> Result<[D::Item<'w>; N], QueryError> {
        for (i, entity) in entities.iter().enumerate() {
            if entities[..i].contains(entity) {
                return Err(QueryError::AliasedMutability(*entity));
            }
        }
        // Every entity is checked before any item is made.
        for &entity in &entities {
            // SAFETY: the state is up to date for this world (the caller's contract).
            unsafe { self.locate(world, entity, ticks) }?;
        }
        Ok(entities.map(|entity| {
            // SAFETY: as above; `locate` reads the same world again and finds the same rows.
            let found = unsafe { self.locate(world, entity, ticks) };
            let found = found.expect("located in the loop above");
            // SAFETY: the caller holds the access, and the entities (so the rows) are
            // distinct, so the items never alias.
            unsafe { fetch_found::<D, F>(&self.data_state, world, found, entity, ticks) }
        }))
    }

    /// The only matching item (read-only forms of mutable terms); an error when there are
    /// none or several.
    pub fn single<'w>(
        &mut self,
        world: &'w World,
    ) -> Result<<D::ReadOnly as QueryData>::Item<'w>, QueryError> {
        let ticks = self.peek_ticks(world);
        // SAFETY: read-only items under `&World`.
        unsafe { self.single_read_only_unchecked(UnsafeWorldCell::new_readonly(world), ticks) }
    }

    /// The only matching read-only item through an [`UnsafeWorldCell`].
    ///
    /// # Safety
    /// As for [`iter_read_only_unchecked`](Self::iter_read_only_unchecked).
    pub unsafe fn single_read_only_unchecked<'w>(
        &self,
        world: UnsafeWorldCell<'w>,
        ticks: RunTicks,
    ) -> Result<<D::ReadOnly as QueryData>::Item<'w>, QueryError> {
        // SAFETY: forwarded contract.
        self.single_of(unsafe { self.iter_read_only_unchecked(world, ticks) })
    }

    /// The only item `iter` has left, or why there is not exactly one.
    fn single_of<'w, R: QueryData>(
        &self,
        mut iter: QueryIter<'w, '_, R, F>,
    ) -> Result<R::Item<'w>, QueryError> {
        match (iter.next(), iter.has_more()) {
            (Some(item), false) => Ok(item),
            (None, _) => Err(QueryError::NoEntities {
                query: type_name::<(D, F)>(),
            }),
            (Some(_), true) => Err(QueryError::MultipleEntities {
                query: type_name::<(D, F)>(),
            }),
        }
    }

    /// The only matching item, mutably; an error when there are none or several.
    pub fn single_mut<'w>(&mut self, world: &'w mut World) -> Result<D::Item<'w>, QueryError> {
        let ticks = self.peek_ticks(world);
        // SAFETY: `&mut World` is exclusive for `'w`.
        unsafe { self.single_unchecked(UnsafeWorldCell::new_mutable(world), ticks) }
    }

    /// The only matching item through an [`UnsafeWorldCell`].
    ///
    /// # Safety
    /// As for [`get_unchecked`](Self::get_unchecked).
    pub unsafe fn single_unchecked<'w>(
        &self,
        world: UnsafeWorldCell<'w>,
        ticks: RunTicks,
    ) -> Result<D::Item<'w>, QueryError> {
        // SAFETY: forwarded contract; at most one item is kept.
        self.single_of(unsafe { QueryIter::<D, F>::from_state(self.parts(), world, ticks) })
    }

    /// How many entities match, through an [`UnsafeWorldCell`] (filters only; no item is
    /// fetched).
    ///
    /// # Safety
    /// The caller holds at least read access to what the filter reads.
    pub unsafe fn count_unchecked(&self, world: UnsafeWorldCell<'_>, ticks: RunTicks) -> usize {
        // SAFETY: forwarded contract; no item is fetched.
        unsafe { QueryIter::<D, F>::from_state(self.parts(), world, ticks) }.count_matches()
    }

    /// True when `entity` is alive and matches now (filters only; no item is fetched, so
    /// it works for queries with mutable data through `&World`).
    ///
    /// ```
    /// use tabula::{With, World};
    /// struct Pos(f32);
    /// struct Frozen;
    /// let mut world = World::new();
    /// let moving = world.spawn((Pos(0.0),));
    /// let frozen = world.spawn((Pos(0.0), Frozen));
    /// let mut query = world.query_filtered::<&mut Pos, With<Frozen>>();
    /// assert!(query.contains(&world, frozen));
    /// assert!(!query.contains(&world, moving));
    /// ```
    pub fn contains(&mut self, world: &World, entity: Entity) -> bool {
        let ticks = self.peek_ticks(world);
        // SAFETY: only filters are evaluated, under `&World`; the state was just updated.
        unsafe { self.contains_unchecked(UnsafeWorldCell::new_readonly(world), entity, ticks) }
    }

    /// [`contains`](Self::contains) through an [`UnsafeWorldCell`] (filters only).
    ///
    /// # Safety
    /// The caller holds at least read access to what the filter reads, and `world` is the
    /// state's world with archetypes already updated.
    pub unsafe fn contains_unchecked(
        &self,
        world: UnsafeWorldCell<'_>,
        entity: Entity,
        ticks: RunTicks,
    ) -> bool {
        // SAFETY: the state is up to date for this world (the caller's contract); `locate`
        // evaluates the filters, whose tick reads the caller covers, but fetches no item.
        unsafe { self.locate(world, entity, ticks) }.is_ok()
    }

    /// How many entities match now.
    pub fn count(&mut self, world: &World) -> usize {
        let ticks = self.peek_ticks(world);
        // SAFETY: only filters are evaluated, under `&World`.
        unsafe { self.count_unchecked(UnsafeWorldCell::new_readonly(world), ticks) }
    }

    /// True when no entity matches now.
    pub fn is_empty(&mut self, world: &World) -> bool {
        let ticks = self.peek_ticks(world);
        // SAFETY: only filters are evaluated; no item is fetched.
        !unsafe { QueryIter::<D, F>::from_state(self.parts(), UnsafeWorldCell::new_readonly(world), ticks) }
            .has_more()
    }

    /// Where `entity` is, if the query matches it now: its location, the archetype, the
    /// archetype's match, and whether the match is on the sparse path.
    ///
    /// # Safety
    /// The state was updated against `world` (so every live entity's archetype has an entry
    /// in `matched_index`, and matched ids index the world's archetypes); the caller holds
    /// read access to what the filter reads.
    #[inline]
    unsafe fn locate<'w>(
        &self,
        world: UnsafeWorldCell<'w>,
        entity: Entity,
        ticks: RunTicks,
    ) -> Result<Found<'w, '_, D::Cache, F::Cache>, QueryError> {
        // SAFETY: forwarded contract.
        let (location, entry) = unsafe { self.entry_of(world, entity) }?;
        if entry & OFF_TABLE == 0 {
            // SAFETY: forwarded contract; the entry is the one of `location`'s archetype.
            return unsafe { self.found_in_table(world, entity, location, entry, ticks) };
        }
        if entry == NOT_MATCHED {
            return Err(self.no_match(entity));
        }
        // SAFETY: only the structure is read through this reference (and the filters' ticks,
        // which the caller covers).
        let world = unsafe { world.world() };
        // SAFETY: the entry was recorded for a match (on the sparse path), and matches are
        // never removed; the location names one of the world's archetypes.
        let (matched, archetype) = unsafe {
            (
                self.matched.get_unchecked((entry & !OFF_TABLE) as usize),
                world.archetype_at(location),
            )
        };
        // SAFETY: the match is on the sparse path (flagged); the filter reads ticks of a live
        // row under the caller's access, the data term only the sets' structure.
        let passes = unsafe {
            let (data, mut filter) = (
                D::fetch_sparse(&self.data_state, matched.data, archetype, world, ticks),
                F::fetch_sparse(&self.filter_state, matched.filter, archetype, world, ticks),
            );
            let row = location.row as usize;
            F::filter_entity(&mut filter, row, entity) && D::row_fetch(&data, row, entity).is_some()
        };
        if !passes {
            return Err(self.no_match(entity));
        }
        Ok((location, archetype, matched, true))
    }

    /// Where `entity` is, and the `matched_index` entry of its archetype.
    ///
    /// # Safety
    /// As for [`locate`](Self::locate).
    #[inline(always)]
    unsafe fn entry_of(
        &self,
        world: UnsafeWorldCell<'_>,
        entity: Entity,
    ) -> Result<(EntityLocation, u32), QueryError> {
        // SAFETY: only the entity index is read through this reference.
        let world = unsafe { world.world() };
        let location = world.entities().get(entity).ok_or_else(|| {
            match crate::EntityError::not_found(entity, world.tag()) {
                crate::EntityError::WrongWorld { entity, world } => QueryError::WrongWorld { entity, world },
                _ => QueryError::NoSuchEntity(entity),
            }
        })?;
        // SAFETY: live entities are in archetypes the state has seen (the caller's contract),
        // and `matched_index` has an entry per archetype seen.
        let entry = unsafe { *self.matched_index.get_unchecked(location.archetype.index()) };
        Ok((location, entry))
    }

    /// [`locate`](Self::locate) for an entity whose archetype's `entry` is on the table path
    /// (`OFF_TABLE` clear).
    ///
    /// # Safety
    /// As for [`locate`](Self::locate); `entry` is the `matched_index` entry of `location`'s
    /// archetype, and `location` is `entity`'s.
    #[inline(always)]
    unsafe fn found_in_table<'w>(
        &self,
        world: UnsafeWorldCell<'w>,
        entity: Entity,
        location: EntityLocation,
        entry: u32,
        ticks: RunTicks,
    ) -> Result<Found<'w, '_, D::Cache, F::Cache>, QueryError> {
        debug_assert_eq!(entry & OFF_TABLE, 0);
        // SAFETY: only the structure is read through this reference (and the filters' ticks,
        // which the caller covers).
        let world = unsafe { world.world() };
        // SAFETY: the entry was recorded for a match, and matches are never removed; the
        // location names one of the world's archetypes.
        let (matched, archetype) = unsafe {
            (
                self.matched.get_unchecked(entry as usize),
                world.archetype_at(location),
            )
        };
        if !F::ARCHETYPAL {
            // SAFETY: the filter only reads ticks of a live row, under the caller's access.
            let passes = unsafe {
                let mut fetch = F::fetch_archetype(matched.filter, archetype, ticks);
                F::filter_row(&mut fetch, location.row as usize)
            };
            if !passes {
                return Err(self.no_match(entity));
            }
        }
        Ok((location, archetype, matched, false))
    }

    /// The error for an entity the query does not match.
    #[cold]
    fn no_match(&self, entity: Entity) -> QueryError {
        QueryError::NoMatch {
            entity,
            query: type_name::<(D, F)>(),
        }
    }

    /// The parts of the state an iterator reads.
    #[inline]
    fn parts(&self) -> StateParts<'_, D::State, F::State, D::Cache, F::Cache> {
        StateParts {
            data: &self.data_state,
            filter: &self.filter_state,
            matched: &self.matched,
            sparse: self.sparse,
        }
    }
}

/// What `locate` found: the entity's location, archetype and match, and whether the match
/// is on the sparse path.
type Found<'w, 's, DC, FC> = (EntityLocation, &'w Archetype, &'s Matched<DC, FC>, bool);

/// The parts of a [`QueryState`] that an iterator over it (or its read-only form) reads.
pub(crate) struct StateParts<'s, DS, FS, DC, FC> {
    pub(crate) data: &'s DS,
    pub(crate) filter: &'s FS,
    pub(crate) matched: &'s [Matched<DC, FC>],
    pub(crate) sparse: bool,
}

/// The item of the entity `locate` found, on the path of its match.
///
/// # Safety
/// `found` came from `locate` on this world with `data_state` the state's data state (or
/// that of the query `R` is the read-only form of); the caller holds the access to the row
/// for `'w` (shared for read-only `R`, exclusive otherwise).
#[inline]
unsafe fn fetch_found<'w, R: QueryData, F: QueryFilter>(
    data_state: &R::State,
    world: UnsafeWorldCell<'w>,
    (location, archetype, matched, sparse): Found<'w, '_, R::Cache, F::Cache>,
    entity: Entity,
    ticks: RunTicks,
) -> R::Item<'w> {
    let row = location.row as usize;
    // SAFETY: forwarded contract; on the sparse path only the structure is read through the
    // world, and `locate` checked that every required sparse component is there.
    unsafe {
        if sparse {
            let mut fetch = R::fetch_sparse(data_state, matched.data, archetype, world.world(), ticks);
            R::fetch_entity(&mut fetch, row, entity).expect("`locate` checked the sparse components")
        } else {
            let mut fetch = R::fetch_archetype(matched.data, archetype, ticks);
            R::fetch(&mut fetch, row)
        }
    }
}

/// The matched archetypes that have rows, with their row counts: what every loop over the
/// whole query walks.
///
/// # Safety
/// `archetypes` is the archetype list of the world the state owning `matched` was last
/// updated against (archetypes are never removed, so every matched id indexes it).
#[inline]
pub(crate) unsafe fn non_empty<'s, 'w, DC, FC>(
    matched: &'s [Matched<DC, FC>],
    archetypes: &'w [Archetype],
) -> impl Iterator<Item = (&'s Matched<DC, FC>, &'w Archetype, usize)> {
    matched.iter().filter_map(move |matched| {
        // SAFETY: matched ids index `archetypes` (the caller's contract).
        let archetype = unsafe { archetypes.get_unchecked(matched.archetype.index()) };
        let len = archetype.len();
        (len > 0).then_some((matched, archetype, len))
    })
}

/// The fetches of one matched archetype, data and filter.
///
/// # Safety
/// As for [`WorldQuery::fetch_archetype`](super::WorldQuery::fetch_archetype): `matched`
/// came from matching `archetype`, and the caller holds the query's access to its rows for
/// `'w`.
#[inline(always)]
pub(crate) unsafe fn fetch_matched<'w, D: QueryData, F: QueryFilter>(
    matched: &Matched<D::Cache, F::Cache>,
    archetype: &'w Archetype,
    ticks: RunTicks,
) -> (D::Fetch<'w>, F::Fetch<'w>) {
    // SAFETY: the caller's contract.
    unsafe {
        (
            D::fetch_archetype(matched.data, archetype, ticks),
            F::fetch_archetype(matched.filter, archetype, ticks),
        )
    }
}

/// A sparse component's values are not laid out along an archetype's rows, so no slice of
/// them can stand for an archetype's chunk.
#[cold]
#[track_caller]
fn refuse_sparse_chunks(world: UnsafeWorldCell<'_>, access: &Access, query: &str) -> ! {
    // SAFETY: only the component registry and the sparse sets' ids are read.
    let world = unsafe { world.world() };
    let name = (world.sparse.iter())
        .find(|&(id, _)| access.names(id))
        .map_or("?", |(id, _)| world.components().info(id).name());
    panic!(
        "`for_each_chunk` on query `{query}`: component `{name}` is stored in a sparse set, \
         whose values are not laid out along the archetypes' rows, so there is no column slice \
         to hand out. Use `for_each` (or `iter`/`iter_mut`), or keep the component in tables"
    );
}

/// True when `access` names a component `world` stores in a sparse set.
fn names_sparse(world: &World, access: &Access) -> bool {
    world.sparse.any() && world.sparse.iter().any(|(id, _)| access.names(id))
}

/// A query term that is not one of the built-in ones (a hand-written [`WorldQuery`]) names
/// a sparse component: it would match archetypes only, where the component is in none.
#[cold]
#[track_caller]
fn refuse_sparse_terms(world: &World, access: &Access, query: &str) {
    if let Some((id, _)) = world.sparse.iter().find(|&(id, _)| access.names(id)) {
        panic!(
            "query `{query}` names component `{}`, which is stored in a sparse set, through a \
             term that only reads archetype tables (a hand-written `WorldQuery`). Use the \
             built-in terms (`&T`, `&mut T`, `Option`, `Has`, `With`, `Without`, `Added`, \
             `Changed`) for sparse components, or keep the component in tables (the default)",
            world.components().info(id).name()
        );
    }
}
