//! System parameters: what a system function asks for, and how it is fetched each run.
//!
//! A [`SystemParam`] is initialised once (`init_state`: register types, declare access) and
//! fetched every run (`get_param`) from an [`UnsafeWorldCell`]. The access each parameter
//! declares is checked against the system's other parameters when the system is
//! initialised, and against other systems when the schedule is built, so fetching never
//! aliases.

use std::any::type_name;
use std::borrow::Cow;
use std::ops::{Deref, DerefMut};

use tabula_core::query::{ArchetypeFilter, QueryData, QueryFilter, QueryIter, ReadOnlyQueryData};
use tabula_core::{
    Access, CommandError, Component, ComponentId, Entity, EventKey, LastRun, Mut, QueryError, QueryState,
    Ref, Tick, UnsafeWorldCell, World, short_type_name,
};

use crate::access::SystemAccess;

mod deferred;
mod param_set;
mod removed;
mod scratch;
mod trigger;

pub use deferred::{EventReader, EventWriter, ParallelCommands};
pub use param_set::ParamSet;
pub use removed::RemovedComponents;
pub use scratch::{ParScratch, Scratch, ScratchArenas, ScratchVec};
pub use trigger::Trigger;

pub use tabula_core::query::RunTicks;

/// What a system knows about itself while its parameters are set up and fetched.
#[derive(Debug, Clone)]
pub struct SystemMeta {
    name: Cow<'static, str>,
    /// For a run condition: what it guards (``system `name` `` or ``set `Name` ``), which
    /// messages name too.
    condition_of: Option<String>,
    access: SystemAccess,
    last_run: LastRun,
    /// The system runs as an observer (`World::observe`): its `Commands` use the world's
    /// shared entity lane instead of a lane of their own.
    observer: bool,
    /// The event its `Trigger` parameter watches, if it has one.
    event_key: Option<EventKey>,
}

impl SystemMeta {
    pub(crate) fn new(name: Cow<'static, str>) -> Self {
        Self {
            name,
            condition_of: None,
            access: SystemAccess::default(),
            last_run: LastRun::NEVER,
            observer: false,
            event_key: None,
        }
    }

    /// True when the system runs as an observer.
    pub fn is_observer(&self) -> bool {
        self.observer
    }

    pub(crate) fn set_observer(&mut self, observer: bool) {
        self.observer = observer;
    }

    /// The event the system's `Trigger` parameter watches.
    pub fn event_key(&self) -> Option<EventKey> {
        self.event_key
    }

    /// Records the event a `Trigger` parameter watches.
    ///
    /// # Panics
    /// When another `Trigger` parameter of the system watches another event.
    pub fn set_event_key(&mut self, key: EventKey) {
        if let Some(earlier) = self.event_key
            && earlier != key
        {
            panic!(
                "{}: two Trigger parameters watch different events; an observer watches one event",
                self.describe()
            );
        }
        self.event_key = Some(key);
    }

    /// The system's name (its function's path).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Who this is in messages: ``system `name` `` or, for a run condition,
    /// ``run condition `name` of system `guarded` ``.
    pub fn describe(&self) -> Described<'_> {
        Described(self)
    }

    /// Marks the system as a run condition of `guard` (``system `name` `` or
    /// ``set `Name` ``), so messages name both.
    pub(crate) fn set_condition_of(&mut self, guard: Option<String>) {
        self.condition_of = guard;
    }

    /// What this system is a run condition of, if it is one.
    pub(crate) fn condition_of(&self) -> Option<&str> {
        self.condition_of.as_deref()
    }

    /// The access declared so far.
    pub fn access(&self) -> &SystemAccess {
        &self.access
    }

    /// Declares that the system records deferred work (commands), so the schedule places
    /// a sync point after it where an ordering edge leaves it.
    pub fn set_deferred(&mut self) {
        self.access.set_deferred();
    }

    /// When the system's last completed run started.
    pub(crate) fn last_run(&self) -> LastRun {
        self.last_run
    }

    pub(crate) fn set_last_run(&mut self, last_run: LastRun) {
        self.last_run = last_run;
    }

    /// Declares a parameter's access.
    ///
    /// # Panics
    /// When it aliases an earlier parameter of the same system; the message names the
    /// system, both parameters and the component, and says how to fix it.
    pub fn add_param_access(&mut self, world: &World, param: &str, access: Access) {
        // Messages name types without their module paths: `Query<&mut Position>`.
        let names = |ids: &mut dyn Iterator<Item = tabula_core::ComponentId>| {
            ids.map(|id| short_type_name(world.components().info(id).name()))
                .collect::<Vec<_>>()
                .join("`, `")
        };
        if self.access.reads_all() && !access.writes().is_empty() {
            panic!(
                "{}: parameter `{}` writes `{}`, but parameter `&World` reads the whole \
                 world. Take `&mut World` (an exclusive system) or drop the `&World` parameter.",
                self.describe(),
                short_type_name(param),
                names(&mut access.writes().ids()),
            );
        }
        if let Err((other, ids)) = self.access.add_param(param.to_string(), access.clone()) {
            let is_query = |name: &str| name.starts_with("Query<") || name.contains("::Query<");
            let advice = if is_query(param) && is_query(&other) {
                let earlier = self
                    .access
                    .params()
                    .iter()
                    .find(|(name, earlier)| *name == other && !earlier.conflicts(&access).is_empty())
                    .map(|(_, earlier)| earlier)
                    .expect("add_param names the parameter it conflicts with");
                let name = |id| short_type_name(world.components().info(id).name());
                query_advice(
                    &short_type_name(param),
                    &access,
                    &short_type_name(&other),
                    earlier,
                    name,
                )
            } else {
                "Merge them into one parameter (one `ResMut` instead of a `Res` and a `ResMut`, say), \
                 or put both in a `ParamSet` to use them one at a time."
                    .into()
            };
            panic!(
                "{}: parameter `{}` conflicts with parameter `{}` on `{}`: one of them \
                 writes what the other reads or writes. {advice}",
                self.describe(),
                short_type_name(param),
                short_type_name(&other),
                names(&mut ids.into_iter()),
            );
        }
    }

    /// Declares an access that only orders the system against other systems, never against
    /// its own parameters (an access that stands for no data the system's parameters reach).
    pub fn add_ordering_access(&mut self, param: &str, access: Access) {
        self.access.add_ordering(param.to_string(), access);
    }

    /// Declares that the system reads the whole world (`&World`).
    ///
    /// # Panics
    /// When an earlier parameter writes anything.
    pub fn add_reads_all(&mut self, param: &str) {
        if let Some((other, _)) = self.access.params().iter().find(|(_, a)| !a.writes().is_empty()) {
            panic!(
                "{}: parameter `{}` reads the whole world, but parameter `{}` writes part \
                 of it. Take `&mut World` (an exclusive system) or drop the `&World` parameter.",
                self.describe(),
                short_type_name(param),
                short_type_name(other),
            );
        }
        self.access.set_reads_all();
    }
}

/// How to fix two query parameters, `param` (`access`) and the earlier `other` (`earlier`),
/// that conflict: which `Without<C>` would separate them, and, when they already carry
/// filters, why those do not.
fn query_advice(
    param: &str,
    access: &Access,
    other: &str,
    earlier: &Access,
    name: impl Fn(ComponentId) -> String,
) -> String {
    let filtered = access.has_archetype_filter() || earlier.has_archetype_filter();
    // A component one query requires is the clearest advice ("one requires `C`"); one found
    // through an `Or`'s branches needs the query it goes on named.
    let fix = match (
        earlier.separating_without(access),
        access.separating_without(earlier),
    ) {
        (Some(c), _) if earlier.with().contains(c) => Some((c, None)),
        (_, Some(c)) if access.with().contains(c) => Some((c, None)),
        (Some(c), _) => Some((c, Some(param))),
        (_, Some(c)) => Some((c, Some(other))),
        (None, None) => None,
    };
    // Failing that, a component only one excludes separates them once the other requires it.
    fn only_excluded_by<'a>(one: &'a Access, other: &'a Access) -> impl Iterator<Item = ComponentId> + 'a {
        one.without().ids().filter(|&c| !other.without().contains(c))
    }
    let excluded = only_excluded_by(earlier, access)
        .chain(only_excluded_by(access, earlier))
        .next();
    let fix = match (fix, excluded) {
        (Some((c, None)), _) => {
            let c = name(c);
            format!("One requires `{c}`: add `Without<{c}>` to the other")
        }
        (Some((c, Some(target))), _) => format!("Add `Without<{}>` to `{target}`", name(c)),
        (None, Some(c)) => {
            let c = name(c);
            format!("One excludes `{c}`: add `With<{c}>` to the other")
        }
        (None, None) if filtered => "Add `With<C>` to one query and `Without<C>` to the other".to_string(),
        (None, None) => "Add a `Without<..>` filter to one query".to_string(),
    };
    if filtered {
        format!(
            "Their filters do not prove them disjoint: one must require a component (through \
             `With<C>`, `&C` or `&mut C`, or every branch of an `Or`) that the other excludes \
             with `Without<C>`. {fix}, merge them into one parameter, or put both in a \
             `ParamSet` to use them one at a time."
        )
    } else {
        format!(
            "{fix} so they cannot match the same entity, merge them into one parameter, or put \
             both in a `ParamSet` to use them one at a time."
        )
    }
}

/// A system as messages name it; see [`SystemMeta::describe`].
pub struct Described<'a>(&'a SystemMeta);

impl std::fmt::Display for Described<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0.condition_of {
            Some(guard) => write!(f, "run condition `{}` of {guard}", self.0.name),
            None => write!(f, "system `{}`", self.0.name),
        }
    }
}

/// A parameter of a system function.
///
/// # Safety
/// `init_state` must declare (through `meta`) every access `get_param` makes, and
/// `get_param` must make no other. `Item<'w, 's>` must be `Self` with other lifetimes (so the
/// same impl, declaring the same access): a `ParamSet` fetches its members as their items.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a system parameter",
    label = "not a system parameter",
    note = "parameters are `Query`, `Res`, `ResMut`, `Local`, `Commands`, `EventReader`, `EventWriter`, \
            `&World`, ..., tuples and `ParamSet`s of them, and structs with `#[derive(SystemParam)]`"
)]
pub unsafe trait SystemParam: Sized {
    /// Built once per system; lives as long as the system.
    type State: Send + Sync + 'static;
    /// The value passed to the function for one run.
    type Item<'w, 's>: SystemParam<State = Self::State>;

    /// Registers types and declares access.
    fn init_state(world: &mut World, meta: &mut SystemMeta) -> Self::State;

    /// Catches up with archetypes created since the last run (queries).
    fn update_archetypes(_state: &mut Self::State, _world: &World) {}

    /// True when the parameter recorded work to apply at a sync point (commands).
    fn has_deferred(_state: &Self::State) -> bool {
        false
    }

    /// How many commands the recorded work holds (for traces).
    fn deferred_len(_state: &Self::State) -> usize {
        0
    }

    /// Applies recorded work (commands) to the world.
    fn apply_deferred(_state: &mut Self::State, _world: &mut World, _errors: &mut Vec<CommandError>) {}

    /// Drops recorded work without applying it (after a run was aborted by a panic),
    /// undoing what recording it did to `world` (the ids its spawns reserved are freed).
    fn discard_deferred(_state: &mut Self::State, _world: &mut World) {}

    /// Fetches the parameter for one run.
    ///
    /// # Safety
    /// The caller holds the access declared in `init_state` for `'w`, and `world` is the
    /// world the state was built with, with archetypes updated.
    unsafe fn get_param<'w, 's>(
        state: &'s mut Self::State,
        meta: &SystemMeta,
        world: UnsafeWorldCell<'w>,
        ticks: RunTicks,
    ) -> Self::Item<'w, 's>;
}

/// The item type of a parameter: what the system function receives.
pub type SystemParamItem<'w, 's, P> = <P as SystemParam>::Item<'w, 's>;

// ---------------------------------------------------------------------------------------
// Query

/// A query as a system parameter: iterate, look up or count the entities that match `D`
/// and `F`, with the system's change ticks.
pub struct Query<'w, 's, D: QueryData, F: QueryFilter = ()> {
    world: UnsafeWorldCell<'w>,
    state: &'s QueryState<D, F>,
    ticks: RunTicks,
}

// SAFETY: declares the query's access; `get_param` only hands out the query, whose methods
// stay within that access.
unsafe impl<D: QueryData + 'static, F: QueryFilter + 'static> SystemParam for Query<'_, '_, D, F> {
    type State = QueryState<D, F>;
    type Item<'w, 's> = Query<'w, 's, D, F>;

    fn init_state(world: &mut World, meta: &mut SystemMeta) -> QueryState<D, F> {
        let state =
            QueryState::try_new(world).unwrap_or_else(|conflict| panic!("{}: {conflict}", meta.describe()));
        meta.add_param_access(world, type_name::<Self>(), state.access().clone());
        state
    }

    fn update_archetypes(state: &mut QueryState<D, F>, world: &World) {
        // The plan too, so that the system's `for_each` reads its archetypes' columns from
        // one array.
        state.update_plan(world);
    }

    unsafe fn get_param<'w, 's>(
        state: &'s mut QueryState<D, F>,
        _: &SystemMeta,
        world: UnsafeWorldCell<'w>,
        ticks: RunTicks,
    ) -> Self::Item<'w, 's> {
        Query { world, state, ticks }
    }
}

impl<'w, 's, D: QueryData, F: QueryFilter> Query<'w, 's, D, F> {
    /// Iterates the matching items through shared access. A query with mutable terms
    /// yields their read-only forms (`&T` for `&mut T`, `Ref<T>` for `Mut<T>`), so a
    /// system can read through its `Query<(&mut A, &B)>` as `(&A, &B)` without `mut`.
    ///
    /// ```
    /// use tabula::prelude::*;
    ///
    /// struct Hp(u32);
    /// #[derive(Default)]
    /// struct Weakest(u32);
    ///
    /// fn triage(mut hp: Query<&mut Hp>, mut weakest: ResMut<Weakest>) {
    ///     // Read first (items are `&Hp`), then write.
    ///     weakest.0 = hp.iter().map(|hp: &Hp| hp.0).min().unwrap_or(0);
    ///     for mut hp in &mut hp {
    ///         hp.0 += 1;
    ///     }
    /// }
    ///
    /// let mut world = World::new();
    /// world.init_resource::<Weakest>();
    /// world.spawn_batch([(Hp(5),), (Hp(2),)]).for_each(drop);
    /// let mut schedule = Schedule::new();
    /// schedule.add_systems(triage);
    /// schedule.run(&mut world);
    /// assert_eq!(world.resource::<Weakest>().unwrap().0, 2);
    /// ```
    ///
    /// The items borrow the query, so none is left when it is used mutably:
    ///
    /// ```compile_fail
    /// use tabula::prelude::*;
    /// struct Hp(u32);
    /// fn system(mut hp: Query<&mut Hp>) {
    ///     let first: &Hp = hp.iter().next().unwrap();
    ///     for mut hp in &mut hp {
    ///         hp.0 += 1; // error: `hp` is still borrowed by `first`
    ///     }
    ///     println!("{}", first.0);
    /// }
    /// ```
    pub fn iter(&self) -> QueryIter<'_, 's, D::ReadOnly, F> {
        // SAFETY: read-only items, and `&self` allows no mutable iteration or item of this
        // query meanwhile; the system holds the query's access.
        unsafe { self.state.iter_read_only_unchecked(self.world, self.ticks) }
    }

    /// Iterates the matching items with mutable access.
    pub fn iter_mut(&mut self) -> QueryIter<'_, 's, D, F> {
        // SAFETY: `&mut self` makes this the only live iteration of this query; the system
        // holds the query's access.
        unsafe { self.state.iter_unchecked(self.world, self.ticks) }
    }

    /// Calls `f` on every matching item; see [`QueryState::for_each`].
    pub fn for_each(&mut self, f: impl FnMut(D::Item<'_>)) {
        // SAFETY: `&mut self` makes this the only live iteration of this query; the system
        // holds the query's access.
        unsafe { self.state.for_each_unchecked(self.world, self.ticks, f) }
    }

    /// Calls `f` once per matching archetype with whole columns; see
    /// [`QueryState::for_each_chunk`].
    pub fn for_each_chunk(&mut self, f: impl FnMut(D::Chunk<'_>))
    where
        F: ArchetypeFilter,
    {
        // SAFETY: `&mut self`; the system holds the query's access.
        unsafe { self.state.for_each_chunk_unchecked(self.world, self.ticks, f) }
    }

    /// Calls `f` on every matching item, across rayon's threads, through shared access: for
    /// a query that only reads (no `&mut T` or `Mut<T>` term), so the query need not be
    /// `mut` (bevy's `par_iter`). [`par_for_each_mut`](Self::par_for_each_mut) writes.
    ///
    /// ```
    /// use tabula::prelude::*;
    ///
    /// struct Mass(f32);
    /// #[derive(Default)]
    /// struct Heaviest(std::sync::Mutex<f32>);
    ///
    /// fn weigh(masses: Query<&Mass>, heaviest: Res<Heaviest>) {
    ///     masses.par_for_each(|mass| {
    ///         let mut max = heaviest.0.lock().unwrap();
    ///         *max = max.max(mass.0);
    ///     });
    /// }
    ///
    /// let mut world = World::new();
    /// world.init_resource::<Heaviest>();
    /// world.spawn_batch((0..1000).map(|i| (Mass(i as f32),))).for_each(drop);
    /// let mut schedule = Schedule::new();
    /// schedule.add_systems(weigh);
    /// schedule.run(&mut world);
    /// assert_eq!(*world.resource::<Heaviest>().unwrap().0.lock().unwrap(), 999.0);
    /// ```
    pub fn par_for_each(&self, f: impl Fn(D::Item<'_>) + Send + Sync)
    where
        D: ReadOnlyQueryData,
    {
        // SAFETY: read-only items, so passes through `&self` may overlap; the system holds the
        // query's access.
        unsafe { self.state.par_for_each_unchecked(self.world, self.ticks, f) }
    }

    /// Calls `f` on every matching item, across rayon's threads, with mutable access.
    ///
    /// A query that writes must use this form; the shared one does not compile for it:
    ///
    /// ```compile_fail
    /// use tabula::prelude::*;
    /// struct Mass(f32);
    /// fn grow(masses: Query<&mut Mass>) {
    ///     masses.par_for_each(|mut mass| mass.0 += 1.0); // needs `mut masses` and `_mut`
    /// }
    /// ```
    pub fn par_for_each_mut(&mut self, f: impl Fn(D::Item<'_>) + Send + Sync) {
        // SAFETY: `&mut self` makes this the only live iteration of this query; the system
        // holds the query's access.
        unsafe { self.state.par_for_each_unchecked(self.world, self.ticks, f) }
    }

    /// The item of one entity, shared (read-only forms of mutable terms, as for
    /// [`iter`](Self::iter)).
    pub fn get(&self, entity: Entity) -> Result<<D::ReadOnly as QueryData>::Item<'_>, QueryError> {
        // SAFETY: read-only items, and `&self` allows no mutable item of this query
        // meanwhile; the system holds the query's access.
        unsafe { self.state.get_read_only_unchecked(self.world, entity, self.ticks) }
    }

    /// The item of one entity, mutably.
    pub fn get_mut(&mut self, entity: Entity) -> Result<D::Item<'_>, QueryError> {
        // SAFETY: `&mut self` keeps this the only live item of this query.
        unsafe { self.state.get_unchecked(self.world, entity, self.ticks) }
    }

    /// The items of several entities, shared (they may repeat); the first error if any of
    /// them does not match.
    ///
    /// ```
    /// use tabula::prelude::*;
    ///
    /// struct Pos(f32);
    /// struct Link(Entity, Entity);
    /// #[derive(Default)]
    /// struct Lengths(Vec<f32>);
    ///
    /// fn measure(links: Query<&Link>, points: Query<&Pos>, mut out: ResMut<Lengths>) {
    ///     for link in &links {
    ///         let [a, b] = points.get_many([link.0, link.1]).unwrap();
    ///         out.0.push((a.0 - b.0).abs());
    ///     }
    /// }
    ///
    /// let mut world = World::new();
    /// world.init_resource::<Lengths>();
    /// let a = world.spawn((Pos(1.0),));
    /// let b = world.spawn((Pos(4.0),));
    /// world.spawn((Link(a, b),));
    /// let mut schedule = Schedule::new();
    /// schedule.add_systems(measure);
    /// schedule.run(&mut world);
    /// assert_eq!(world.resource::<Lengths>().unwrap().0, [3.0]);
    /// ```
    pub fn get_many<const N: usize>(
        &self,
        entities: [Entity; N],
    ) -> Result<[<D::ReadOnly as QueryData>::Item<'_>; N], QueryError> {
        let items = entities.map(|entity| self.get(entity));
        if let Some(error) = items.iter().find_map(|item| item.as_ref().err()) {
            return Err(*error);
        }
        Ok(items.map(|item| item.unwrap_or_else(|_| unreachable!("every item was checked above"))))
    }

    /// The items of several distinct entities, mutably.
    pub fn get_many_mut<const N: usize>(
        &mut self,
        entities: [Entity; N],
    ) -> Result<[D::Item<'_>; N], QueryError> {
        // SAFETY: `&mut self`; distinctness is checked inside.
        unsafe { self.state.get_many_unchecked(self.world, entities, self.ticks) }
    }

    /// The only matching item, shared (read-only forms of mutable terms).
    pub fn single(&self) -> Result<<D::ReadOnly as QueryData>::Item<'_>, QueryError> {
        // SAFETY: read-only items, and `&self` allows no mutable item of this query
        // meanwhile; the system holds the query's access.
        unsafe { self.state.single_read_only_unchecked(self.world, self.ticks) }
    }

    /// The only matching item, mutably.
    pub fn single_mut(&mut self) -> Result<D::Item<'_>, QueryError> {
        // SAFETY: `&mut self` keeps this the only live item of this query.
        unsafe { self.state.single_unchecked(self.world, self.ticks) }
    }

    /// True when `entity` is alive and matches (filters only; nothing is fetched, so it
    /// works on a query with mutable data through `&self`).
    pub fn contains(&self, entity: Entity) -> bool {
        // SAFETY: filters only; the system holds at least read access to them, and its
        // archetypes were updated before the run.
        unsafe { self.state.contains_unchecked(self.world, entity, self.ticks) }
    }

    /// How many entities match.
    pub fn count(&self) -> usize {
        // SAFETY: filters only; the system holds at least read access to them.
        unsafe { self.state.count_unchecked(self.world, self.ticks) }
    }

    /// True when no entity matches.
    pub fn is_empty(&self) -> bool {
        self.count() == 0
    }

    /// The items of `entities` that match, in that order, shared (entities may repeat;
    /// those that do not match are skipped): bevy's `iter_many`.
    ///
    /// ```
    /// use tabula::prelude::*;
    ///
    /// struct Hp(u32);
    /// struct Squad(Vec<Entity>);
    /// #[derive(Default)]
    /// struct Total(u32);
    ///
    /// fn squad_health(squads: Query<&Squad>, hp: Query<&Hp>, mut total: ResMut<Total>) {
    ///     for squad in &squads {
    ///         total.0 += hp.iter_many(squad.0.iter().copied()).map(|hp| hp.0).sum::<u32>();
    ///     }
    /// }
    ///
    /// let mut world = World::new();
    /// world.init_resource::<Total>();
    /// let a = world.spawn((Hp(3),));
    /// let b = world.spawn((Hp(4),));
    /// let gone = world.spawn((Hp(100),));
    /// world.despawn(gone).unwrap();
    /// world.spawn((Squad(vec![a, b, gone]),));
    /// let mut schedule = Schedule::new();
    /// schedule.add_systems(squad_health);
    /// schedule.run(&mut world);
    /// assert_eq!(world.resource::<Total>().unwrap().0, 7);
    /// ```
    pub fn iter_many<I>(
        &self,
        entities: I,
    ) -> impl Iterator<Item = <D::ReadOnly as QueryData>::Item<'_>> + use<'_, 'w, 's, D, F, I>
    where
        I: IntoIterator<Item = Entity>,
    {
        entities.into_iter().filter_map(|entity| self.get(entity).ok())
    }

    /// Calls `f` with the item of each of `entities` that matches, in that order, mutably
    /// (entities may repeat: each call's item is gone before the next).
    pub fn for_each_many_mut(
        &mut self,
        entities: impl IntoIterator<Item = Entity>,
        mut f: impl FnMut(D::Item<'_>),
    ) {
        for entity in entities {
            if let Ok(item) = self.get_mut(entity) {
                f(item);
            }
        }
    }

    /// Every combination of `K` distinct matching items (each set once, in iteration order),
    /// shared: bevy's `iter_combinations`, for pairwise interactions.
    ///
    /// ```
    /// use tabula::prelude::*;
    ///
    /// struct Pos(f32);
    /// #[derive(Default)]
    /// struct Closest(f32);
    ///
    /// fn closest_pair(points: Query<&Pos>, mut closest: ResMut<Closest>) {
    ///     closest.0 = points
    ///         .iter_combinations::<2>()
    ///         .map(|[a, b]| (a.0 - b.0).abs())
    ///         .fold(f32::INFINITY, f32::min);
    /// }
    ///
    /// let mut world = World::new();
    /// world.init_resource::<Closest>();
    /// world.spawn_batch([(Pos(0.0),), (Pos(5.0),), (Pos(7.0),)]).for_each(drop);
    /// let mut schedule = Schedule::new();
    /// schedule.add_systems(closest_pair);
    /// schedule.run(&mut world);
    /// assert_eq!(world.resource::<Closest>().unwrap().0, 2.0);
    /// ```
    pub fn iter_combinations<const K: usize>(
        &self,
    ) -> impl Iterator<Item = [<D::ReadOnly as QueryData>::Item<'_>; K]> + use<'_, 'w, 's, D, F, K>
    where
        for<'a> <D::ReadOnly as QueryData>::Item<'a>: Clone,
    {
        let items: Vec<_> = self.iter().collect();
        Combinations::<K>::new(items.len()).map(move |indices| indices.map(|i| items[i].clone()))
    }

    /// Calls `f` with every combination of `K` distinct matching items, mutably (each set
    /// once, in iteration order): bevy's `iter_combinations_mut`.
    ///
    /// ```
    /// use tabula::prelude::*;
    ///
    /// struct Charge(i32);
    ///
    /// // Every pair of charges trades one unit from the larger to the smaller.
    /// fn balance(mut charges: Query<&mut Charge>) {
    ///     charges.for_each_combination_mut(|[a, b]| {
    ///         if a.0 > b.0 {
    ///             a.0 -= 1;
    ///             b.0 += 1;
    ///         } else if b.0 > a.0 {
    ///             b.0 -= 1;
    ///             a.0 += 1;
    ///         }
    ///     });
    /// }
    ///
    /// let mut world = World::new();
    /// world.spawn_batch([(Charge(10),), (Charge(0),), (Charge(2),)]).for_each(drop);
    /// let mut schedule = Schedule::new();
    /// schedule.add_systems(balance);
    /// schedule.run(&mut world);
    /// let total: i32 = world.query::<&Charge>().iter(&world).map(|c| c.0).sum();
    /// assert_eq!(total, 12, "charge is conserved");
    /// ```
    pub fn for_each_combination_mut<const K: usize>(&mut self, mut f: impl FnMut([&mut D::Item<'_>; K])) {
        let mut items: Vec<D::Item<'_>> = self.iter_mut().collect();
        for indices in Combinations::<K>::new(items.len()) {
            // The indices of a combination are distinct and in bounds.
            if let Ok(items) = items.get_disjoint_mut(indices) {
                f(items);
            }
        }
    }
}

/// `for item in &query`: [`Query::iter`].
/// The combinations of `K` distinct indices below `n`, each in increasing order,
/// lexicographically: what [`Query::iter_combinations`] walks.
struct Combinations<const K: usize> {
    next: Option<[usize; K]>,
    n: usize,
}

impl<const K: usize> Combinations<K> {
    fn new(n: usize) -> Self {
        let first: [usize; K] = std::array::from_fn(|i| i);
        Self {
            next: (K > 0 && K <= n).then_some(first),
            n,
        }
    }
}

impl<const K: usize> Iterator for Combinations<K> {
    type Item = [usize; K];

    fn next(&mut self) -> Option<[usize; K]> {
        let current = self.next?;
        // Advance: the rightmost index that can move right moves, the ones after it follow.
        let mut following = current;
        self.next = (0..K).rev().find(|&i| following[i] < self.n - K + i).map(|i| {
            following[i] += 1;
            for j in i + 1..K {
                following[j] = following[j - 1] + 1;
            }
            following
        });
        Some(current)
    }
}

impl<'a, 's, D: QueryData, F: QueryFilter> IntoIterator for &'a Query<'_, 's, D, F> {
    type Item = <D::ReadOnly as QueryData>::Item<'a>;
    type IntoIter = QueryIter<'a, 's, D::ReadOnly, F>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

/// `for item in &mut query`: [`Query::iter_mut`].
///
/// ```
/// use tabula::prelude::*;
///
/// struct Health(u32);
///
/// fn heal(mut patients: Query<&mut Health>) {
///     for mut health in &mut patients {
///         health.0 += 1;
///     }
/// }
///
/// fn check(everyone: Query<&Health>) {
///     for health in &everyone {
///         assert_eq!(health.0, 2);
///     }
/// }
///
/// let mut world = World::new();
/// world.spawn((Health(1),));
/// let mut schedule = Schedule::new();
/// schedule.add_systems((heal, check).chain());
/// schedule.run(&mut world);
/// ```
impl<'a, 's, D: QueryData, F: QueryFilter> IntoIterator for &'a mut Query<'_, 's, D, F> {
    type Item = D::Item<'a>;
    type IntoIter = QueryIter<'a, 's, D, F>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter_mut()
    }
}

// ---------------------------------------------------------------------------------------
// Resources

#[cold]
fn missing_resource<R>(meta: &SystemMeta) -> ! {
    panic!(
        "{} needs resource `{}`, which does not exist. Insert it with `World::insert_resource` \
         before running the schedule, or take `Option<Res<..>>` if it is optional.",
        meta.describe(),
        type_name::<R>()
    )
}

fn resource_access(
    world: &mut World,
    id_of: impl FnOnce(&mut World) -> tabula_core::ComponentId,
    write: bool,
) -> Access {
    let id = id_of(world);
    let mut access = Access::default();
    let result = if write {
        access.add_write(id)
    } else {
        access.add_read(id)
    };
    result.expect("a fresh access cannot conflict");
    access
}

/// Shared access to resource `R`, with its change information: whether it was inserted or
/// changed since the system's last run.
///
/// ```
/// use tabula::prelude::*;
///
/// #[derive(Default)]
/// struct Score(u32);
/// #[derive(Default)]
/// struct HudRedraws(u32);
///
/// fn hud(score: Res<Score>, mut redraws: ResMut<HudRedraws>) {
///     if score.is_changed() {
///         redraws.0 += 1;
///     }
/// }
///
/// let mut world = World::new();
/// world.init_resource::<Score>();
/// world.init_resource::<HudRedraws>();
/// let mut schedule = Schedule::new();
/// schedule.add_systems(hud);
/// schedule.run(&mut world); // first run: everything is new
/// schedule.run(&mut world); // unchanged
/// world.resource_mut::<Score>().unwrap().0 += 10;
/// schedule.run(&mut world); // changed
/// assert_eq!(world.resource::<HudRedraws>().unwrap().0, 2);
/// ```
pub struct Res<'w, R: Component> {
    value: Ref<'w, R>,
}

impl<R: Component> Deref for Res<'_, R> {
    type Target = R;

    fn deref(&self) -> &R {
        &self.value
    }
}

impl<'w, R: Component> Res<'w, R> {
    /// True when the resource was inserted since the system's last run.
    pub fn is_added(&self) -> bool {
        self.value.is_added()
    }

    /// True when the resource was inserted, replaced or accessed mutably since the system's
    /// last run.
    pub fn is_changed(&self) -> bool {
        self.value.is_changed()
    }

    /// The plain reference, for the whole run.
    pub fn into_inner(self) -> &'w R {
        self.value.into_inner()
    }
}

/// Exclusive access to resource `R`. Writing through it (any `&mut` access) marks the
/// resource changed, as [`Mut`](tabula_core::Mut) does for components.
pub struct ResMut<'w, R: Component> {
    value: Mut<'w, R>,
}

impl<R: Component> Deref for ResMut<'_, R> {
    type Target = R;

    fn deref(&self) -> &R {
        &self.value
    }
}

impl<R: Component> DerefMut for ResMut<'_, R> {
    fn deref_mut(&mut self) -> &mut R {
        &mut self.value
    }
}

impl<'w, R: Component> ResMut<'w, R> {
    /// True when the resource was inserted since the system's last run.
    pub fn is_added(&self) -> bool {
        self.value.is_added()
    }

    /// True when the resource was inserted, replaced or accessed mutably since the system's
    /// last run (by another system, or by this one in this run).
    pub fn is_changed(&self) -> bool {
        self.value.is_changed()
    }

    /// The value, without marking it changed.
    pub fn bypass_change_detection(&mut self) -> &mut R {
        self.value.bypass_change_detection()
    }

    /// Replaces the resource with `value` only when they differ, so that writing the same
    /// value does not mark it changed; returns whether it wrote (see `Mut::set_if_neq`).
    pub fn set_if_neq(&mut self, value: R) -> bool
    where
        R: PartialEq,
    {
        self.value.set_if_neq(value)
    }

    /// The plain reference, for the whole run (the resource counts as changed).
    pub fn into_inner(self) -> &'w mut R {
        self.value.into_inner()
    }
}

macro_rules! resource_param {
    ($ty:ident, $write:expr, $fetch:ident, |$value:ident| $make:expr, |$opt:ident| $make_opt:expr) => {
        // SAFETY: declares a read (or write) of `R`, and fetches exactly `R`.
        unsafe impl<R: Component> SystemParam for $ty<'_, R> {
            type State = ();
            type Item<'w, 's> = $ty<'w, R>;

            fn init_state(world: &mut World, meta: &mut SystemMeta) {
                let access = resource_access(world, World::register_resource::<R>, $write);
                meta.add_param_access(world, type_name::<Self>(), access);
            }

            unsafe fn get_param<'w, 's>(
                _: &'s mut (),
                meta: &SystemMeta,
                world: UnsafeWorldCell<'w>,
                ticks: RunTicks,
            ) -> Self::Item<'w, 's> {
                // SAFETY: the system holds the declared access to `R`.
                match unsafe { world.$fetch::<R>(ticks) } {
                    Some($value) => $make,
                    None => missing_resource::<R>(meta),
                }
            }
        }

        // SAFETY: as above; a missing resource is `None` instead of a panic.
        unsafe impl<R: Component> SystemParam for Option<$ty<'_, R>> {
            type State = ();
            type Item<'w, 's> = Option<$ty<'w, R>>;

            fn init_state(world: &mut World, meta: &mut SystemMeta) {
                let access = resource_access(world, World::register_resource::<R>, $write);
                meta.add_param_access(world, type_name::<Self>(), access);
            }

            unsafe fn get_param<'w, 's>(
                _: &'s mut (),
                _: &SystemMeta,
                world: UnsafeWorldCell<'w>,
                ticks: RunTicks,
            ) -> Self::Item<'w, 's> {
                // SAFETY: the system holds the declared access to `R`.
                unsafe { world.$fetch::<R>(ticks) }.map(|$opt| $make_opt)
            }
        }
    };
}

resource_param!(Res, false, get_resource_ref, |value| Res { value }, |value| Res {
    value
});
resource_param!(
    ResMut,
    true,
    get_resource_mut_ticked,
    |value| ResMut { value },
    |value| ResMut { value }
);

// ---------------------------------------------------------------------------------------
// Local

/// State private to one system, kept between its runs; starts as `T::default()`.
pub struct Local<'s, T: Default + Send + Sync + 'static>(&'s mut T);

impl<T: Default + Send + Sync + 'static> Deref for Local<'_, T> {
    type Target = T;

    fn deref(&self) -> &T {
        self.0
    }
}

impl<T: Default + Send + Sync + 'static> DerefMut for Local<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        self.0
    }
}

// SAFETY: touches only its own state, never the world.
unsafe impl<T: Default + Send + Sync + 'static> SystemParam for Local<'_, T> {
    type State = T;
    type Item<'w, 's> = Local<'s, T>;

    fn init_state(_: &mut World, _: &mut SystemMeta) -> T {
        T::default()
    }

    unsafe fn get_param<'w, 's>(
        state: &'s mut T,
        _: &SystemMeta,
        _: UnsafeWorldCell<'w>,
        _: RunTicks,
    ) -> Self::Item<'w, 's> {
        Local(state)
    }
}

// ---------------------------------------------------------------------------------------
// SystemChangeTick

/// The change ticks of the system's current run: changes newer than
/// [`last_run`](Self::last_run) and up to [`this_run`](Self::this_run) read as new to it,
/// and its own writes are stamped with `this_run`. A schedule gives every system the same
/// ticks whatever the thread count (see
/// [`World::reserve_change_ticks`](tabula_core::World::reserve_change_ticks)).
///
/// ```
/// use tabula::prelude::*;
/// use tabula::schedule::SystemChangeTick;
///
/// #[derive(Default)]
/// struct Seen(Vec<u32>);
///
/// fn record(ticks: SystemChangeTick, mut seen: ResMut<Seen>) {
///     seen.0.push(ticks.this_run().get());
/// }
///
/// let mut world = World::new();
/// world.insert_resource(Seen::default());
/// let mut schedule = Schedule::new();
/// schedule.add_systems(record);
/// schedule.run(&mut world);
/// schedule.run(&mut world);
/// let seen = &world.resource::<Seen>().unwrap().0;
/// assert!(seen[0] < seen[1]);
/// ```
#[derive(Clone, Copy, Debug)]
pub struct SystemChangeTick {
    ticks: RunTicks,
}

impl SystemChangeTick {
    /// The tick of the system's previous run.
    pub fn last_run(&self) -> Tick {
        self.ticks.last_run
    }

    /// The tick of this run.
    pub fn this_run(&self) -> Tick {
        self.ticks.this_run
    }
}

// SAFETY: touches neither the world nor any state.
unsafe impl SystemParam for SystemChangeTick {
    type State = ();
    type Item<'w, 's> = SystemChangeTick;

    fn init_state(_: &mut World, _: &mut SystemMeta) {}

    unsafe fn get_param<'w, 's>(
        _: &'s mut (),
        _: &SystemMeta,
        _: UnsafeWorldCell<'w>,
        ticks: RunTicks,
    ) -> Self::Item<'w, 's> {
        SystemChangeTick { ticks }
    }
}

// ---------------------------------------------------------------------------------------
// &World

// SAFETY: declares a read of everything; hands out `&World`, through which no component
// value can be written.
unsafe impl SystemParam for &World {
    type State = ();
    type Item<'w, 's> = &'w World;

    fn init_state(_: &mut World, meta: &mut SystemMeta) {
        meta.add_reads_all("&World");
    }

    unsafe fn get_param<'w, 's>(
        _: &'s mut (),
        _: &SystemMeta,
        world: UnsafeWorldCell<'w>,
        _: RunTicks,
    ) -> Self::Item<'w, 's> {
        // SAFETY: the system holds read access to everything, so nobody writes meanwhile.
        unsafe { world.world() }
    }
}

// ---------------------------------------------------------------------------------------
// Tuples

macro_rules! tuple_param {
    ($($name:ident $index:tt),*) => {
        // SAFETY: each member declares and keeps to its own access.
        #[allow(unused_variables, clippy::unused_unit)]
        unsafe impl<$($name: SystemParam),*> SystemParam for ($($name,)*) {
            type State = ($($name::State,)*);
            type Item<'w, 's> = ($($name::Item<'w, 's>,)*);

            fn init_state(world: &mut World, meta: &mut SystemMeta) -> Self::State {
                ($($name::init_state(world, meta),)*)
            }

            fn update_archetypes(state: &mut Self::State, world: &World) {
                $($name::update_archetypes(&mut state.$index, world);)*
            }

            fn has_deferred(state: &Self::State) -> bool {
                false $(|| $name::has_deferred(&state.$index))*
            }

            fn deferred_len(state: &Self::State) -> usize {
                0 $(+ $name::deferred_len(&state.$index))*
            }

            fn apply_deferred(state: &mut Self::State, world: &mut World, errors: &mut Vec<CommandError>) {
                $($name::apply_deferred(&mut state.$index, world, errors);)*
            }

            fn discard_deferred(state: &mut Self::State, world: &mut World) {
                $($name::discard_deferred(&mut state.$index, world);)*
            }

            unsafe fn get_param<'w, 's>(
                state: &'s mut Self::State,
                meta: &SystemMeta,
                world: UnsafeWorldCell<'w>,
                ticks: RunTicks,
            ) -> Self::Item<'w, 's> {
                // SAFETY: forwarded contract, member by member (members' states are disjoint
                // fields of the tuple).
                #[allow(unused_unsafe)]
                unsafe { ($($name::get_param(&mut state.$index, meta, world, ticks),)*) }
            }
        }
    };
}

tuple_param!();
tuple_param!(A 0);
tuple_param!(A 0, B 1);
tuple_param!(A 0, B 1, C 2);
tuple_param!(A 0, B 1, C 2, D 3);
tuple_param!(A 0, B 1, C 2, D 3, E 4);
tuple_param!(A 0, B 1, C 2, D 3, E 4, F 5);
tuple_param!(A 0, B 1, C 2, D 3, E 4, F 5, G 6);
tuple_param!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7);
tuple_param!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8);
tuple_param!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9);
tuple_param!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10);
tuple_param!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11);
tuple_param!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11, M 12);
tuple_param!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11, M 12, N 13);
tuple_param!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11, M 12, N 13, O 14);
tuple_param!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11, M 12, N 13, O 14, P 15);

#[cfg(all(test, not(loom)))]
mod combination_tests {
    use super::Combinations;

    #[test]
    fn combinations_are_each_set_once_in_order() {
        let pairs: Vec<[usize; 2]> = Combinations::<2>::new(4).collect();
        assert_eq!(pairs, [[0, 1], [0, 2], [0, 3], [1, 2], [1, 3], [2, 3]]);
        assert_eq!(Combinations::<3>::new(6).count(), 20);
        assert_eq!(Combinations::<1>::new(3).count(), 3);
        assert_eq!(Combinations::<3>::new(2).count(), 0, "fewer items than K");
        assert_eq!(Combinations::<0>::new(5).count(), 0);
        assert_eq!(Combinations::<4>::new(4).collect::<Vec<_>>(), [[0, 1, 2, 3]]);
    }
}
