//! [`Schedule`]: systems, their ordering, and how a run is carried out.
//!
//! Life cycle: `add_systems` / `configure_sets` record configuration (cheap). The first
//! `run` (and the first after more systems are added) initialises new systems against the
//! world, instantiates run conditions, resolves sets, inserts sync points and builds the
//! graph ([`crate::graph`]). Every run then: clamps old change ticks, executes the graph,
//! applies the command buffers still pending (in the graph's order: as added, along explicit
//! ordering), and advances the world's events.

use std::collections::HashMap;
use std::fmt::Write;
use std::sync::Arc;

use tabula_core::{World, WorldId, short_type_name};

use crate::config::{
    BoxedCondition, ConditionFactory, Graph, IntoSetConfigs, IntoSystemConfigs, SetConfigs, SystemConfigs,
};
use crate::executor::plan::Plan;
use crate::executor::protocol::RunState;
use crate::executor::set_condition::{SetCondition, SetConditionUse};
use crate::executor::ticks::{TickLayout, place_set_conditions};
use crate::executor::{
    ExecutorKind, Node, RunContext, SystemSlot, apply_pending, is_sampled_run, is_warm_up_run, parallel,
    single,
};
use crate::graph::{self, Built, ConditionWrite, EdgeKind, ScheduleBuildError};
use crate::set::{CoreSet, FunctionSet, IntoSystemSet, SetKey};
use crate::skipped::{CommandErrorPolicy, SkippedCommand};
use crate::trace::{Trace, TraceKind, TraceLog};

/// One side of an ordering constraint: a system (its slot) or a set.
#[derive(Clone, PartialEq)]
enum End {
    System(usize),
    Set(SetKey),
}

/// `before` runs before `after`, as configured or as joined through empty sets (`through`,
/// in order), which were taken out.
struct Constraint {
    before: End,
    after: End,
    through: Vec<SetKey>,
}

impl Constraint {
    fn new(before: End, after: End) -> Self {
        Self {
            before,
            after,
            through: Vec::new(),
        }
    }
}

/// A system added to the schedule: its configuration, and what its run conditions were
/// made from.
struct Added {
    config_graph: Graph,
    /// The factories of the slot's current conditions, in the same order: its own and its
    /// sets' as of the last build.
    conditions_made_from: Vec<ConditionFactory>,
}

/// The built form: nodes, graph, and the parallel executor's counters and plan.
struct BuiltSchedule {
    nodes: Vec<Node>,
    names: Vec<String>,
    /// Why each explicit edge of the node graph exists (conflict edges are explained from the
    /// two nodes' accesses when asked).
    reasons: HashMap<(usize, usize), String>,
    graph: Built,
    state: RunState,
    plan: Plan,
    /// Which tick each system starts at, within its segment.
    ticks: TickLayout,
    /// Runs since the build (wrapping), which decides the runs that sample system costs.
    runs: u32,
    /// The explicit edges between slots (constraints and chains, sets resolved).
    explicit: Vec<(usize, usize)>,
}

/// One ordering edge of a built schedule: `before` runs, and finishes, before `after`
/// starts; `reason` says why. From [`Schedule::dependencies`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dependency {
    /// The system (or sync point) that runs first.
    pub before: String,
    /// The system (or sync point) that waits for it.
    pub after: String,
    /// Why: a constraint (`a before b`, `chain`), a data conflict naming the components or
    /// resources, or the commands a sync point applies.
    pub reason: String,
}

/// How two systems of a built schedule are ordered, and why; from [`Schedule::explain`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SystemOrder {
    /// The first runs (and finishes) before the second starts: the ordering edges leading
    /// from one to the other, each with its reason — through other systems and sync points
    /// when the order is implied rather than direct.
    Before(Vec<Dependency>),
    /// The second runs before the first; the path leads from the second to the first.
    After(Vec<Dependency>),
    /// Nothing orders them: they may run at the same time.
    Parallel,
}

impl SystemOrder {
    /// The path as one line per edge: `before -> after: reason`.
    pub fn describe(&self) -> String {
        match self {
            Self::Before(path) | Self::After(path) => path
                .iter()
                .map(|edge| {
                    format!(
                        "{} -> {}: {}",
                        short_type_name(&edge.before),
                        short_type_name(&edge.after),
                        edge.reason
                    )
                })
                .collect::<Vec<_>>()
                .join("\n"),
            Self::Parallel => "not ordered: they may run at the same time".to_string(),
        }
    }
}

/// Two systems of a built schedule that never run at the same time, and the path of
/// ordering edges that serialises them; from [`Schedule::ordered_pairs`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OrderedPair {
    /// The system that runs first.
    pub before: String,
    /// The system that runs after it.
    pub after: String,
    /// The edges from `before` to `after`, each with its reason.
    pub path: Vec<Dependency>,
}

/// Two conflicting systems of a built schedule that no constraint orders, so the order they
/// were added in does; from [`Schedule::insertion_ordered_pairs`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InsertionOrderedPair {
    /// The system that runs first (added first, or placed first by other constraints).
    pub before: String,
    /// The system that runs after it.
    pub after: String,
    /// What they conflict on, in words (as in [`Dependency::reason`]).
    pub conflict: String,
}

/// Why a labelled schedule could not be run or changed, or a system not removed.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ScheduleError {
    /// No schedule has this label (nothing was added to it).
    NoSchedule(String),
    /// The schedule is running: it was asked from inside its own run.
    Running(String),
    /// No system of the schedule (named when it has a label) is in the set or function.
    NoSystem {
        /// The schedule's label, when the schedule was reached through one.
        schedule: Option<String>,
        /// The set or function that named no system.
        set: String,
    },
}

impl std::fmt::Display for ScheduleError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::NoSchedule(label) => write!(
                f,
                "no schedule is labelled `{label}`; add systems to it first (world.add_systems({label}, ...))"
            ),
            Self::Running(label) => write!(
                f,
                "schedule `{label}` is running (this was asked by one of its own systems); run or \
                 change it after its run, from another schedule"
            ),
            Self::NoSystem {
                schedule: Some(label),
                set,
            } => write!(
                f,
                "no system of schedule `{label}` is in `{set}`; nothing was removed"
            ),
            Self::NoSystem { schedule: None, set } => {
                write!(f, "no system of the schedule is in `{set}`; nothing was removed")
            }
        }
    }
}

impl std::error::Error for ScheduleError {}

/// A set of systems with ordering, run as one unit.
///
/// ```
/// use tabula::prelude::*;
///
/// struct Position(f32);
/// struct Velocity(f32);
/// struct Steps(u32);
///
/// fn movement(mut q: Query<(&mut Position, &Velocity)>) {
///     q.for_each(|(mut p, v)| p.0 += v.0);
/// }
/// fn count(mut steps: ResMut<Steps>) {
///     steps.0 += 1;
/// }
///
/// let mut world = World::new();
/// world.spawn((Position(0.0), Velocity(2.0)));
/// world.insert_resource(Steps(0));
/// let mut schedule = Schedule::new();
/// schedule.add_systems((movement, count.after(movement)));
/// schedule.run(&mut world);
/// schedule.run(&mut world);
/// assert_eq!(world.resource::<Steps>().unwrap().0, 2);
/// ```
pub struct Schedule {
    slots: Vec<SystemSlot>,
    added: Vec<Added>,
    chain_edges: Vec<(usize, usize)>,
    sets: HashMap<SetKey, Graph>,
    /// Slots initialised so far (and the world they were initialised with).
    initialized: usize,
    world: Option<WorldId>,
    built: Option<BuiltSchedule>,
    /// Set run conditions, one instance per factory, shared by the sets' systems and kept
    /// (with their state) across rebuilds; keyed by the factory's address.
    set_conditions: HashMap<usize, (ConditionFactory, Arc<SetCondition>)>,
    executor: ExecutorKind,
    tracing: bool,
    /// Ages events at the end of each run (see [`Schedule::set_update_events`]).
    update_events: bool,
    last_trace: Option<Trace>,
    command_errors: Vec<SkippedCommand>,
    /// Places sync points after command-recording systems (see [`Schedule::set_auto_sync`]).
    auto_sync: bool,
    /// What a skipped command does besides being listed (see
    /// [`Schedule::set_command_error_policy`]).
    command_error_policy: CommandErrorPolicy,
}

impl Default for Schedule {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for Schedule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Schedule")
            .field(
                "systems",
                &self.slots.iter().map(|s| s.system.name()).collect::<Vec<_>>(),
            )
            .field("executor", &self.executor)
            .finish()
    }
}

impl Schedule {
    /// An empty schedule using the parallel executor, with the ordered
    /// [`CoreSet`]s `PreUpdate -> Update -> PostUpdate` already configured.
    pub fn new() -> Self {
        let mut schedule = Self {
            slots: Vec::new(),
            added: Vec::new(),
            chain_edges: Vec::new(),
            sets: HashMap::new(),
            initialized: 0,
            world: None,
            built: None,
            set_conditions: HashMap::new(),
            executor: ExecutorKind::Parallel,
            tracing: false,
            update_events: true,
            last_trace: None,
            command_errors: Vec::new(),
            auto_sync: true,
            command_error_policy: CommandErrorPolicy::Warn,
        };
        schedule.configure_sets((CoreSet::PreUpdate, CoreSet::Update, CoreSet::PostUpdate).chain());
        schedule
    }

    /// Whether the schedule places sync points by itself (the default): after a
    /// command-recording system, before the systems ordered after it (explicitly, or by a
    /// data conflict), so that those see its commands applied. With `false`, commands are
    /// applied only where an [`apply_deferred`](crate::apply_deferred) system is placed and
    /// at the end of the run (bevy's `auto_insert_apply_deferred`); a single system opts out
    /// with [`without_auto_sync`](crate::IntoSystemConfigs::without_auto_sync).
    ///
    /// ```
    /// use tabula::prelude::*;
    ///
    /// struct Seed(u32);
    /// fn plant(mut commands: Commands) {
    ///     commands.spawn((Seed(1),));
    /// }
    /// fn count(seeds: Query<&Seed>, mut seen: ResMut<Vec<usize>>) {
    ///     seen.push(seeds.iter().count());
    /// }
    ///
    /// let mut world = World::new();
    /// world.insert_resource(Vec::<usize>::new());
    /// let mut schedule = Schedule::new();
    /// schedule.set_auto_sync(false);
    /// schedule.add_systems((plant, count, apply_deferred, count).chain());
    /// schedule.run(&mut world);
    /// // The first `count` ran before the seed existed, the second after `apply_deferred`.
    /// assert_eq!(world.resource::<Vec<usize>>().unwrap(), &vec![0, 1]);
    /// assert_eq!(schedule.order(&mut world).unwrap().iter().filter(|n| n.starts_with("sync")).count(), 0);
    /// ```
    pub fn set_auto_sync(&mut self, enabled: bool) -> &mut Self {
        self.auto_sync = enabled;
        self.built = None;
        self
    }

    /// What happens when a command is skipped as it is applied (aimed at a despawned
    /// entity, a missing component, ...). Every skipped command is listed by
    /// [`command_errors`](Self::command_errors) whatever the policy; by default
    /// ([`CommandErrorPolicy::Warn`]) it is also logged through `tracing` at warn level.
    pub fn set_command_error_policy(&mut self, policy: CommandErrorPolicy) -> &mut Self {
        self.command_error_policy = policy;
        self
    }

    /// Chooses the executor (parallel by default).
    pub fn set_executor(&mut self, executor: ExecutorKind) -> &mut Self {
        self.executor = executor;
        self
    }

    /// The executor in use.
    pub fn executor(&self) -> ExecutorKind {
        self.executor
    }

    /// Whether each run ends with [`World::update_events`] (on by default), which makes every
    /// event one run older: an event lives through the run it was sent in and the next.
    ///
    /// With several schedules per frame, let only the one that runs once per frame update
    /// events. A fixed-timestep schedule run several times a frame would otherwise age them
    /// at each step, and a schedule reading after it would miss events sent in the earlier
    /// steps.
    ///
    /// ```
    /// use tabula::prelude::*;
    ///
    /// struct Hit;
    /// #[derive(Default)]
    /// struct Seen(usize);
    ///
    /// fn send(mut hits: EventWriter<Hit>) {
    ///     hits.send(Hit);
    /// }
    /// fn count(mut hits: EventReader<Hit>, mut seen: ResMut<Seen>) {
    ///     seen.0 += hits.read().count();
    /// }
    ///
    /// let mut world = World::new();
    /// world.add_event::<Hit>();
    /// world.init_resource::<Seen>();
    /// let mut fixed = Schedule::new();
    /// fixed.add_systems(send).set_update_events(false);
    /// let mut frame = Schedule::new();
    /// frame.add_systems(count);
    /// for _ in 0..3 {
    ///     fixed.run(&mut world); // two fixed steps this frame
    ///     fixed.run(&mut world);
    ///     frame.run(&mut world); // reads both steps' events, then ages them
    /// }
    /// assert_eq!(world.resource::<Seen>().unwrap().0, 6);
    /// ```
    pub fn set_update_events(&mut self, enabled: bool) -> &mut Self {
        self.update_events = enabled;
        self
    }

    /// Records a trace of every following run (see [`last_trace`](Self::last_trace)): its
    /// systems, sync points, `apply_deferred` systems, end-of-run command application and
    /// `par_for_each` batches, each on its thread (see [`Trace`]). Untraced runs pay nothing
    /// for it but a branch per sync point and a thread-local load per `par_for_each` pass.
    pub fn set_tracing(&mut self, enabled: bool) -> &mut Self {
        self.tracing = enabled;
        self
    }

    /// The trace of the last run, when tracing is on.
    pub fn last_trace(&self) -> Option<&Trace> {
        self.last_trace.as_ref()
    }

    /// The commands skipped in the last run (e.g. aimed at entities that no longer existed),
    /// each with the system that recorded it. Skipping never panics; this is where it is
    /// reported.
    pub fn command_errors(&self) -> &[SkippedCommand] {
        &self.command_errors
    }

    /// Adds systems with their configuration.
    pub fn add_systems<M>(&mut self, systems: impl IntoSystemConfigs<M>) -> &mut Self {
        self.add_configs(systems.into_configs());
        self.built = None;
        self
    }

    /// Adds configs, returning the slots they created; chains become explicit edges.
    fn add_configs(&mut self, configs: SystemConfigs) -> Vec<usize> {
        match configs {
            SystemConfigs::One(config) => {
                let index = self.slots.len();
                let access = config.system.access().clone();
                self.slots
                    .push(SystemSlot::new(config.system, Vec::new(), access));
                self.added.push(Added {
                    config_graph: config.graph,
                    conditions_made_from: Vec::new(),
                });
                vec![index]
            }
            SystemConfigs::Group { items, chained } => {
                let mut all = Vec::new();
                let mut previous: Vec<usize> = Vec::new();
                for item in items {
                    let created = self.add_configs(item);
                    if chained {
                        for &from in &previous {
                            for &to in &created {
                                self.chain_edges.push((from, to));
                            }
                        }
                    }
                    all.extend_from_slice(&created);
                    previous = created;
                }
                all
            }
        }
    }

    /// Configures sets: their order, nesting and run conditions.
    ///
    /// ```
    /// use tabula::prelude::*;
    ///
    /// #[derive(Debug, Clone, PartialEq, Eq, Hash)]
    /// enum Phase { Input, Physics }
    /// impl SystemSet for Phase {}
    ///
    /// let mut schedule = Schedule::new();
    /// schedule.configure_sets((Phase::Input, Phase::Physics).chain().in_set(CoreSet::Update));
    /// ```
    pub fn configure_sets<M>(&mut self, sets: impl IntoSetConfigs<M>) -> &mut Self {
        self.add_set_configs(sets.into_set_configs());
        self.built = None;
        self
    }

    fn add_set_configs(&mut self, configs: SetConfigs) -> Vec<SetKey> {
        match configs {
            SetConfigs::One(config) => {
                let entry = self.sets.entry(config.set.clone()).or_default();
                entry.sets.extend(config.graph.sets);
                entry.before.extend(config.graph.before);
                entry.after.extend(config.graph.after);
                entry.conditions.extend(config.graph.conditions);
                entry.ambiguous_with.extend(config.graph.ambiguous_with);
                vec![config.set]
            }
            SetConfigs::Group { items, chained } => {
                let mut all = Vec::new();
                let mut previous: Vec<SetKey> = Vec::new();
                for item in items {
                    let created = self.add_set_configs(item);
                    if chained {
                        for from in &previous {
                            let entry = self.sets.get_mut(from).expect("set was just configured");
                            entry.before.extend(created.iter().cloned());
                        }
                    }
                    all.extend(created.iter().cloned());
                    previous = created;
                }
                all
            }
        }
    }

    /// The sets a slot belongs to, directly, through nesting, and by its function.
    fn membership(&self, index: usize) -> Vec<SetKey> {
        let system = &self.slots[index].system;
        let mut sets = vec![SetKey::of(FunctionSet {
            function: system.function_type(),
            name: "",
        })];
        let mut queue: Vec<SetKey> = self.added[index].config_graph.sets.clone();
        while let Some(set) = queue.pop() {
            if sets.contains(&set) {
                continue;
            }
            if let Some(config) = self.sets.get(&set) {
                queue.extend(config.sets.iter().cloned());
            }
            sets.push(set);
        }
        sets
    }

    /// Initialises new systems and (re)builds the graph when needed.
    ///
    /// Called by [`run`](Self::run); call it yourself to get build errors as a value.
    pub fn initialize(&mut self, world: &mut World) -> Result<(), ScheduleBuildError> {
        if self.world != Some(world.id()) {
            self.world = Some(world.id());
            self.initialized = 0;
            self.built = None;
            self.set_conditions.clear();
        }
        if self.built.is_some() {
            return Ok(());
        }
        // A system runs under its own conditions and those of every set it is in. Sets can
        // gain conditions and members after the first run, so every slot is checked, not only
        // new ones; a condition whose factory the slot already had is kept, with its state.
        // A set's condition has one instance, shared by its systems (`set_condition.rs`).
        for index in 0..self.slots.len() {
            let fresh = index >= self.initialized;
            let own = self.added[index].config_graph.conditions.clone();
            let mut from_sets: Vec<(&SetKey, ConditionFactory)> = Vec::new();
            let membership = self.membership(index);
            for set in &membership {
                if let Some(config) = self.sets.get(set) {
                    from_sets.extend(config.conditions.iter().map(|make| (set, make.clone())));
                }
            }
            let factories: Vec<ConditionFactory> = own
                .iter()
                .chain(from_sets.iter().map(|(_, make)| make))
                .cloned()
                .collect();
            let added = &mut self.added[index];
            if !fresh && same_factories(&added.conditions_made_from, &factories) {
                continue;
            }
            let slot = &mut self.slots[index];
            if fresh {
                slot.system.initialize(world);
            }
            // Conditions of a fresh slot were made for another world (or none yet).
            let mut kept: Vec<_> = added
                .conditions_made_from
                .drain(..)
                .zip(slot.conditions.drain(..))
                .collect();
            if fresh {
                kept.clear();
            }
            let mut access = slot.system.access().clone();
            for make in &own {
                let condition = match kept.iter().position(|(from, _)| same_factory(from, make)) {
                    Some(at) => kept.swap_remove(at).1,
                    None => {
                        let guard = format!("system `{}`", slot.system.name());
                        made_condition(make, &guard, slot.system.name(), world)?
                    }
                };
                access.absorb(condition.access());
                slot.conditions.push(condition);
            }
            slot.set_conditions.clear();
            for (set, make) in &from_sets {
                let key = Arc::as_ptr(make) as *const () as usize;
                let shared = match self.set_conditions.get(&key) {
                    Some((_, shared)) => shared.clone(),
                    None => {
                        let guard = format!("set `{set:?}`");
                        let condition = made_condition(make, &guard, slot.system.name(), world)?;
                        let shared = Arc::new(SetCondition::new(condition));
                        self.set_conditions.insert(key, (make.clone(), shared.clone()));
                        shared
                    }
                };
                access.absorb(shared.access());
                slot.set_conditions.push(SetConditionUse::new(shared));
            }
            added.conditions_made_from = factories;
            slot.access = access;
        }
        self.initialized = self.slots.len();
        let built = self.build()?;
        place_set_conditions(&mut self.slots, &built.nodes, &built.graph.order, &built.ticks);
        self.built = Some(built);
        Ok(())
    }

    fn build(&self) -> Result<BuiltSchedule, ScheduleBuildError> {
        let n = self.slots.len();
        // Members of every set, in slot order.
        let mut members: HashMap<SetKey, Vec<usize>> = HashMap::new();
        for index in 0..n {
            for set in self.membership(index) {
                members.entry(set).or_default().push(index);
            }
        }
        let members_of = |set: &SetKey| -> &[usize] {
            let key = match set.function() {
                Some(function) => SetKey::of(FunctionSet {
                    function: function.function,
                    name: "",
                }),
                None => set.clone(),
            };
            members.get(&key).map_or(&[], Vec::as_slice)
        };

        // Ordering constraints between systems and sets, as configured.
        let mut constraints: Vec<Constraint> = Vec::new();
        for (index, added) in self.added.iter().enumerate() {
            for set in &added.config_graph.before {
                constraints.push(Constraint::new(End::System(index), End::Set(set.clone())));
            }
            for set in &added.config_graph.after {
                constraints.push(Constraint::new(End::Set(set.clone()), End::System(index)));
            }
        }
        for (set, config) in &self.sets {
            for other in &config.before {
                constraints.push(Constraint::new(End::Set(set.clone()), End::Set(other.clone())));
            }
            for other in &config.after {
                constraints.push(Constraint::new(End::Set(other.clone()), End::Set(set.clone())));
            }
        }
        let name = |end: &End| match end {
            End::System(index) => self.slots[*index].system.name().to_string(),
            End::Set(set) => format!("{set:?}"),
        };
        // A set without systems still passes its order on: `A before B` and `B before C`
        // order A before C while B is empty (the core sets stay ordered with nothing in
        // `Update`). Each empty set is taken out, joining what comes before it to what
        // comes after it. A join that comes back to where it started closes a cycle
        // through the sets taken out on the way: the cycle is named with them.
        while let Some(empty) = constraints.iter().find_map(|constraint| {
            [&constraint.before, &constraint.after]
                .into_iter()
                .find(|end| matches!(end, End::Set(set) if members_of(set).is_empty()))
                .cloned()
        }) {
            let End::Set(empty_set) = &empty else {
                unreachable!("only sets are taken out")
            };
            let (touching, rest): (Vec<_>, Vec<_>) = constraints
                .into_iter()
                .partition(|c| c.before == empty || c.after == empty);
            constraints = rest;
            for into in touching.iter().filter(|c| c.after == empty && c.before != empty) {
                for out in touching.iter().filter(|c| c.before == empty && c.after != empty) {
                    let mut through = into.through.clone();
                    through.push(empty_set.clone());
                    through.extend(out.through.iter().cloned());
                    if into.before == out.after {
                        let mut names = vec![name(&into.before)];
                        names.extend(through.iter().map(|set| format!("{set:?}")));
                        return Err(ScheduleBuildError::Cycle(names));
                    }
                    constraints.push(Constraint {
                        before: into.before.clone(),
                        after: out.after.clone(),
                        through,
                    });
                }
            }
        }

        // Explicit edges, each with the constraint that asked for it (the first one named).
        let mut reasons: HashMap<(usize, usize), String> = HashMap::new();
        for &edge in &self.chain_edges {
            reasons.entry(edge).or_insert_with(|| "chain".to_string());
        }
        let systems_of = |end: &End| -> Vec<usize> {
            match end {
                End::System(index) => vec![*index],
                End::Set(set) => members_of(set).to_vec(),
            }
        };
        for Constraint {
            before,
            after,
            through,
        } in &constraints
        {
            let froms = systems_of(before);
            let tos = systems_of(after);
            if let Some(&system) = froms.iter().find(|from| tos.contains(from)) {
                return Err(ScheduleBuildError::OrderedBeforeItself {
                    system: self.slots[system].system.name().to_string(),
                    before: name(before),
                    after: name(after),
                });
            }
            let mut why = format!(
                "{} before {}",
                short_type_name(&name(before)),
                short_type_name(&name(after))
            );
            if !through.is_empty() {
                let sets: Vec<String> = through.iter().map(|set| format!("{set:?}")).collect();
                why.push_str(&format!(" (through empty {})", sets.join(", ")));
            }
            for &from in &froms {
                for &to in &tos {
                    reasons.entry((from, to)).or_insert_with(|| why.clone());
                }
            }
        }
        let mut edges: Vec<(usize, usize)> = reasons.keys().copied().collect();
        edges.sort_unstable();

        // Sync points. A command-recording system needs its commands applied before the
        // systems ordered after it run: ordered explicitly, or by a data conflict (which the
        // graph orders as the systems were added). So the systems' own graph is built first,
        // and each reduced edge leaving a command-recording system goes through a sync point
        // (unless the schedule or the system opted out: then only `apply_deferred` systems and
        // the end of the run apply its commands). Systems with exactly the same successors
        // share one sync point, placed just before the earliest of those successors (not
        // right after the system): sync points are exclusive, so each is a barrier, and a
        // late barrier leaves the systems added in between free to run in parallel.
        let system_names: Vec<String> = self.slots.iter().map(|s| s.system.name().to_string()).collect();
        let system_access: Vec<&crate::access::SystemAccess> = self.slots.iter().map(|s| &s.access).collect();
        let systems = graph::build(&system_names, &system_access, &edges)?;
        let mut successors: Vec<Vec<usize>> = vec![Vec::new(); n];
        for &(from, to, _) in &systems.edges {
            if self.auto_sync
                && self.slots[from].access.is_deferred()
                && !self.added[from].config_graph.no_auto_sync
            {
                successors[from].push(to);
            }
        }
        for list in &mut successors {
            list.sort_unstable();
        }
        let mut syncs: Vec<(Vec<usize>, Vec<usize>)> = Vec::new(); // (successors, members)
        for (index, after) in successors.iter().enumerate() {
            if after.is_empty() {
                continue;
            }
            match syncs.iter_mut().find(|(s, _)| s == after) {
                Some((_, members)) => members.push(index),
                None => syncs.push((after.clone(), vec![index])),
            }
        }
        self.merge_syncs(&mut syncs, &mut successors);
        let mut nodes = Vec::new();
        let mut names = Vec::new();
        let mut node_of = Vec::with_capacity(n);
        let mut sync_node = vec![0; syncs.len()];
        for (index, slot) in self.slots.iter().enumerate() {
            for (sync, (after, members)) in syncs.iter().enumerate() {
                if after[0] == index {
                    sync_node[sync] = nodes.len();
                    nodes.push(Node::Sync);
                    let members: Vec<String> = members
                        .iter()
                        .map(|&m| short_type_name(self.slots[m].system.name()))
                        .collect();
                    names.push(format!("sync after {}", members.join(", ")));
                }
            }
            node_of.push(nodes.len());
            nodes.push(Node::System(index));
            names.push(slot.system.name().to_string());
        }
        let mut node_reasons: HashMap<(usize, usize), String> = HashMap::new();
        for (&(from, to), why) in &reasons {
            if successors[from].is_empty() {
                node_reasons.insert((node_of[from], node_of[to]), why.clone());
            }
        }
        for (sync, (after, members)) in syncs.iter().enumerate() {
            let member_names: Vec<String> = members
                .iter()
                .map(|&m| format!("`{}`", short_type_name(self.slots[m].system.name())))
                .collect();
            for &m in members {
                node_reasons.insert(
                    (node_of[m], sync_node[sync]),
                    format!(
                        "the commands of `{}` are applied here",
                        short_type_name(self.slots[m].system.name())
                    ),
                );
            }
            for &t in after {
                node_reasons.insert(
                    (sync_node[sync], node_of[t]),
                    format!(
                        "`{}` runs after {} and sees their commands",
                        short_type_name(self.slots[t].system.name()),
                        member_names.join(", ")
                    ),
                );
            }
        }
        let mut node_edges: Vec<(usize, usize)> = node_reasons.keys().copied().collect();
        node_edges.sort_unstable();
        let exclusive = crate::access::SystemAccess::exclusive();
        let accesses: Vec<&crate::access::SystemAccess> = nodes
            .iter()
            .map(|node| match *node {
                Node::System(index) => &self.slots[index].access,
                Node::Sync => &exclusive,
            })
            .collect();
        let mut graph = graph::build(&names, &accesses, &node_edges)?;
        // Only systems that declared deferred work can have any to apply.
        graph.apply_order = graph
            .order
            .iter()
            .filter_map(|&node| match nodes[node] {
                Node::System(slot) if self.slots[slot].access.is_deferred() => Some(slot),
                _ => None,
            })
            .collect();
        let state = RunState::new(&graph.deps);
        let ticks = TickLayout::new(&self.slots, &nodes, &graph.order);
        Ok(BuiltSchedule {
            nodes,
            names,
            reasons: node_reasons,
            graph,
            state,
            plan: Plan::new(),
            ticks,
            runs: 0,
            explicit: edges,
        })
    }

    /// Removes the barriers that would stand back to back (each sync point is exclusive, so
    /// two in a row cost a second barrier for nothing):
    ///
    /// * a sync point whose earliest successor is an `apply_deferred` system with no run
    ///   condition: that system applies the same commands at the same place, and every other
    ///   successor, added after it, runs after it (it is exclusive). Its members' commands
    ///   are then applied by it, so they keep no sync point (`successors` is emptied);
    /// * sync points placed before the same system are merged into one, unless a member of
    ///   one is a successor of the other (merged, that member would wait for itself).
    fn merge_syncs(&self, syncs: &mut Vec<(Vec<usize>, Vec<usize>)>, successors: &mut [Vec<usize>]) {
        syncs.retain(|(after, members)| {
            let first = &self.slots[after[0]];
            let explicit = first.is_apply_deferred && first.conditions.is_empty();
            if explicit {
                for &member in members {
                    successors[member].clear();
                }
            }
            !explicit
        });
        let mut merged: Vec<(Vec<usize>, Vec<usize>)> = Vec::new();
        'next: for (after, members) in syncs.drain(..) {
            for (kept_after, kept_members) in &mut merged {
                let joinable = kept_after[0] == after[0]
                    && !members.iter().any(|m| kept_after.contains(m))
                    && !kept_members.iter().any(|m| after.contains(m));
                if joinable {
                    kept_members.extend(&members);
                    for t in after {
                        if !kept_after.contains(&t) {
                            kept_after.push(t);
                        }
                    }
                    kept_after.sort_unstable();
                    continue 'next;
                }
            }
            merged.push((after, members));
        }
        *syncs = merged;
    }

    /// Runs every system once, in parallel where their accesses allow.
    ///
    /// # Panics
    /// When the schedule cannot be built (an ordering cycle: see
    /// [`initialize`](Self::initialize)), when a system's parameters alias, or when a system
    /// panics — in which case no further system is started, the running ones finish, and the panic is
    /// resumed here; the world stays usable. A command that panics while it is applied aborts
    /// the run the same way. An aborted run's command buffers that were not applied yet are
    /// discarded, never applied by a later run, and the ids their spawns reserved are freed
    /// (their generations bumped), so no empty entity is left behind.
    pub fn run(&mut self, world: &mut World) {
        // First: a run that panics while building reports no stale errors afterwards.
        self.command_errors.clear();
        if let Err(error) = self.initialize(world) {
            panic!("{error}");
        }
        world.check_change_ticks();
        world.flush();
        for (_, condition) in self.set_conditions.values() {
            condition.start_run();
        }
        let built = self.built.as_mut().expect("initialize built the schedule");
        let sampled = is_sampled_run(built.runs);
        // The traced run's interval starts here (see `Trace`).
        let trace = self.tracing.then(TraceLog::new);
        let ctx = RunContext {
            trace: trace.as_ref(),
            timed: sampled || self.tracing,
            warming: is_warm_up_run(built.runs),
            command_errors: self.command_error_policy,
        };
        built.runs = built.runs.wrapping_add(1);
        let spread = self.executor == ExecutorKind::Parallel && {
            built.plan.refresh(&self.slots, &built.nodes, &built.graph);
            // When nothing would leave this thread, the plain walk of the order does the same
            // work without the dependency counters (see `Plan::runs_all_inline`).
            !built.plan.runs_all_inline()
        };
        let result = if spread {
            // A panic on the executor's own path (outside the systems' panic guards) aborts
            // the run like a system's.
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                parallel::run(
                    &mut self.slots,
                    &built.nodes,
                    &built.graph,
                    &built.plan,
                    &built.ticks,
                    &mut built.state,
                    world,
                    ctx,
                    &mut self.command_errors,
                )
            }))
            .and_then(|result| result)
        } else {
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                single::run(
                    &mut self.slots,
                    &built.nodes,
                    &built.graph,
                    &built.ticks,
                    world,
                    ctx,
                    &mut self.command_errors,
                )
            }))
        };
        if sampled {
            // Traced runs measure costs too, but only sampled ones remake the plan, so that
            // a traced run is planned like an untraced one.
            built.plan.mark_stale();
        }
        if let Err(payload) = result {
            // An aborted run keeps its trace, up to the panic.
            self.finish_trace(trace, None);
            abort_run(&mut self.slots, world, payload);
        }
        let end_start = trace.as_ref().map(|_| std::time::Instant::now());
        let buffers = if built.graph.apply_order.is_empty() {
            // No system records commands; ids reserved through `&World` still become real.
            world.flush();
            0
        } else {
            // A command that panics here aborts the run as well: the buffers not yet applied
            // are dropped with it, so that none of them is applied late, by the next run.
            let applied = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                apply_pending(
                    &mut self.slots,
                    &built.graph.apply_order,
                    world,
                    &mut self.command_errors,
                    self.command_error_policy,
                )
            }));
            match applied {
                Ok(buffers) => buffers,
                Err(payload) => {
                    self.finish_trace(trace, None);
                    abort_run(&mut self.slots, world, payload);
                }
            }
        };
        if self.update_events {
            crate::hooks::end_of_run(world);
        }
        self.finish_trace(trace, end_start.map(|start| (start, buffers)));
    }

    /// Makes a traced run's trace the last one: with its end-of-run application (its start
    /// and the buffers it applied) when the run got that far.
    fn finish_trace(&mut self, trace: Option<TraceLog>, end: Option<(std::time::Instant, usize)>) {
        let Some(log) = trace else { return };
        let now = std::time::Instant::now();
        if let Some((start, buffers)) = end {
            log.record(TraceKind::ApplyAtEnd, None, start, now, buffers);
        }
        let slots = &self.slots;
        self.last_trace = Some(log.finish(now, |slot| slots[slot].system.name()));
    }

    /// The built graph in Graphviz DOT: systems (boxes), sync points (diamonds), explicit
    /// ordering (solid) and conflict ordering (dashed) edges; systems on one row have no path
    /// between them, so they may run in parallel.
    ///
    /// # Errors
    /// When the schedule cannot be built.
    pub fn graph_dot(&mut self, world: &mut World) -> Result<String, ScheduleBuildError> {
        self.initialize(world)?;
        let built = self.built.as_ref().expect("initialize built the schedule");
        let mut dot = String::from(
            "digraph schedule {\n  rankdir=TB;\n  node [fontname=\"Helvetica\", fontsize=11];\n",
        );
        for (node, name) in built.names.iter().enumerate() {
            let short = short_type_name(name);
            let (shape, style) = match built.nodes[node] {
                Node::Sync => ("diamond", "filled\", fillcolor=\"#f6d365"),
                Node::System(i) if self.slots[i].access.is_exclusive() => {
                    ("box", "filled\", fillcolor=\"#f4a6a6")
                }
                Node::System(_) => ("box", "rounded,filled\", fillcolor=\"#cfe8fc"),
            };
            let label = if matches!(built.nodes[node], Node::Sync) {
                "sync"
            } else {
                &short
            };
            writeln!(
                dot,
                "  n{node} [label=\"{label}\", shape={shape}, style=\"{style}\"];"
            )
            .expect("string write");
        }
        let depth = built.graph.level.iter().copied().max().unwrap_or(0);
        for level in 0..=depth {
            let same: Vec<String> = (0..built.nodes.len())
                .filter(|&n| built.graph.level[n] == level)
                .map(|n| format!("n{n}"))
                .collect();
            if same.len() > 1 {
                writeln!(dot, "  {{ rank=same; {}; }}", same.join("; ")).expect("string write");
            }
        }
        for (&(from, to, kind), dependency) in built.graph.edges.iter().zip(self.describe_edges(world, built))
        {
            let style = match kind {
                EdgeKind::Explicit => "solid",
                EdgeKind::Conflict => "dashed",
            };
            let why = dependency.reason.replace('"', "\\\"");
            writeln!(
                dot,
                "  n{from} -> n{to} [style={style}, label=\"{why}\", fontsize=9];"
            )
            .expect("string write");
        }
        dot.push_str("}\n");
        Ok(dot)
    }

    /// Every ordering edge of the built graph (after transitive reduction), each with why it
    /// exists: the `before`/`after`/`chain`/set constraint that asked for it, the components
    /// or resources two systems conflict on, or the sync point that applies commands between
    /// them. Sync points appear by the names [`order`](Self::order) gives them.
    ///
    /// ```
    /// use tabula::prelude::*;
    ///
    /// struct Health(u32);
    /// fn regen(mut q: Query<&mut Health>) {}
    /// fn report(q: Query<&Health>) {}
    ///
    /// let mut world = World::new();
    /// let mut schedule = Schedule::new();
    /// schedule.add_systems((regen, report));
    /// let edges = schedule.dependencies(&mut world).unwrap();
    /// assert_eq!(edges.len(), 1);
    /// assert!(edges[0].before.ends_with("regen") && edges[0].after.ends_with("report"));
    /// assert_eq!(edges[0].reason, "data conflict on `Health`");
    /// ```
    ///
    /// # Errors
    /// When the schedule cannot be built.
    pub fn dependencies(&mut self, world: &mut World) -> Result<Vec<Dependency>, ScheduleBuildError> {
        self.initialize(world)?;
        let built = self.built.as_ref().expect("initialize built the schedule");
        Ok(self.describe_edges(world, built))
    }

    /// [`dependencies`](Self::dependencies) of `built`, in the order of its edges.
    fn describe_edges(&self, world: &World, built: &BuiltSchedule) -> Vec<Dependency> {
        let access = |node: usize| match built.nodes[node] {
            Node::System(index) => Some(&self.slots[index].access),
            Node::Sync => None,
        };
        let component = |id| short_type_name(world.components().info(id).name());
        built
            .graph
            .edges
            .iter()
            .map(|&(from, to, kind)| {
                let reason = match kind {
                    EdgeKind::Explicit => built.reasons.get(&(from, to)).cloned(),
                    EdgeKind::Conflict => match (access(from), access(to)) {
                        (Some(before), Some(after)) => before.conflict_reason(after, component),
                        _ => Some("a sync point is exclusive: ordered as added".to_string()),
                    },
                };
                Dependency {
                    before: built.names[from].clone(),
                    after: built.names[to].clone(),
                    reason: reason.unwrap_or_else(|| "ordering".to_string()),
                }
            })
            .collect()
    }

    /// How the first system of `a` and the first of `b` are ordered, and why — including
    /// orderings implied through other systems: the path of ordering edges from one to the
    /// other, each with its reason (a constraint, the components or resources two systems
    /// conflict on, or a sync point), or [`SystemOrder::Parallel`] when nothing orders them.
    ///
    /// ```
    /// use tabula::prelude::*;
    /// use tabula::schedule::SystemOrder;
    ///
    /// struct Health(u32);
    /// struct Armor(u32);
    /// fn regen(mut q: Query<&mut Health>) {}
    /// fn harden(mut q: Query<(&Health, &mut Armor)>) {}
    /// fn report(q: Query<&Armor>) {}
    ///
    /// let mut world = World::new();
    /// let mut schedule = Schedule::new();
    /// schedule.add_systems((regen, harden, report));
    /// // `regen` and `report` share no data, yet `report` waits for `regen`, through `harden`.
    /// let SystemOrder::Before(path) = schedule.explain(&mut world, regen, report).unwrap() else {
    ///     panic!("ordered");
    /// };
    /// assert_eq!(path.len(), 2);
    /// assert_eq!(path[0].reason, "data conflict on `Health`");
    /// assert_eq!(path[1].reason, "data conflict on `Armor`");
    /// ```
    ///
    /// # Errors
    /// When the schedule cannot be built.
    ///
    /// # Panics
    /// When `a` or `b` names no system of the schedule.
    pub fn explain<Ma, Mb>(
        &mut self,
        world: &mut World,
        a: impl IntoSystemSet<Ma>,
        b: impl IntoSystemSet<Mb>,
    ) -> Result<SystemOrder, ScheduleBuildError> {
        self.explain_sets(world, a.into_set_key(), b.into_set_key())
    }

    /// [`explain`](Self::explain) for erased sets.
    fn explain_sets(
        &mut self,
        world: &mut World,
        a: SetKey,
        b: SetKey,
    ) -> Result<SystemOrder, ScheduleBuildError> {
        self.initialize(world)?;
        let (from, to) = (self.first_node_of(&a), self.first_node_of(&b));
        let built = self.built.as_ref().expect("initialize built the schedule");
        let edges = self.explain_edges(world, built);
        Ok(if let Some(path) = path_between(built, &edges, from, to) {
            SystemOrder::Before(path)
        } else if let Some(path) = path_between(built, &edges, to, from) {
            SystemOrder::After(path)
        } else {
            SystemOrder::Parallel
        })
    }

    /// Panics, with the path that orders them, unless the first system of `a` and the first
    /// of `b` may run at the same time: a test that states two systems are meant to run in
    /// parallel fails when a later change (a new shared component, a constraint, a sync
    /// point) serialises them. tabula never leaves two conflicting systems unordered (it
    /// orders them as added, so runs are deterministic), so this is the check of intent that
    /// bevy's ambiguity detection gives the other way round.
    ///
    /// ```
    /// use tabula::prelude::*;
    ///
    /// struct Health(u32);
    /// struct Score(u32);
    /// fn regen(mut q: Query<&mut Health>) {}
    /// fn tally(mut score: ResMut<Score>) {}
    ///
    /// let mut world = World::new();
    /// world.insert_resource(Score(0));
    /// let mut schedule = Schedule::new();
    /// schedule.add_systems((regen, tally));
    /// schedule.assert_parallel(&mut world, regen, tally);
    /// ```
    ///
    /// # Panics
    /// When the two are ordered (the message lists why), when the schedule cannot be built,
    /// or when `a` or `b` names no system.
    #[track_caller]
    pub fn assert_parallel<Ma, Mb>(
        &mut self,
        world: &mut World,
        a: impl IntoSystemSet<Ma>,
        b: impl IntoSystemSet<Mb>,
    ) {
        let (a, b) = (a.into_set_key(), b.into_set_key());
        let order = match self.explain_sets(world, a.clone(), b.clone()) {
            Ok(order) => order,
            Err(error) => panic!("{error}"),
        };
        if order != SystemOrder::Parallel {
            panic!(
                "`{a:?}` and `{b:?}` were meant to run in parallel, but they are ordered:\n{}",
                order.describe()
            );
        }
    }

    /// Every two systems that never run at the same time, each with the path of ordering
    /// edges that serialises them (see [`explain`](Self::explain)): the report to read when a
    /// schedule runs less in parallel than expected. Pairs are listed by the first system's
    /// place in [`order`](Self::order), then the second's.
    ///
    /// # Errors
    /// When the schedule cannot be built.
    pub fn ordered_pairs(&mut self, world: &mut World) -> Result<Vec<OrderedPair>, ScheduleBuildError> {
        self.initialize(world)?;
        let built = self.built.as_ref().expect("initialize built the schedule");
        let edges = self.explain_edges(world, built);
        let systems: Vec<usize> = built
            .graph
            .order
            .iter()
            .copied()
            .filter(|&node| matches!(built.nodes[node], Node::System(_)))
            .collect();
        let mut pairs = Vec::new();
        for &from in &systems {
            for &to in &systems {
                if let Some(path) = (from != to)
                    .then(|| path_between(built, &edges, from, to))
                    .flatten()
                {
                    pairs.push(OrderedPair {
                        before: built.names[from].clone(),
                        after: built.names[to].clone(),
                        path,
                    });
                }
            }
        }
        Ok(pairs)
    }

    /// Every two systems that conflict and that no `before`/`after`/`chain` constraint (or
    /// set ordering) orders, directly or through other systems: the schedule runs them in the
    /// order they were added, so swapping two `add_systems` calls would swap them. Pairs
    /// marked with [`ambiguous_with`](IntoSystemConfigs::ambiguous_with) (on either side,
    /// or on a set either is in) are left out. Listed by the first system's place in
    /// [`order`](Self::order), then the second's. This only reports: the order stays as it
    /// is.
    ///
    /// ```
    /// use tabula::prelude::*;
    ///
    /// struct Health(u32);
    /// fn regen(mut q: Query<&mut Health>) {}
    /// fn poison(mut q: Query<&mut Health>) {}
    /// fn report(q: Query<&Health>) {}
    ///
    /// let mut world = World::new();
    /// let mut schedule = Schedule::new();
    /// schedule.add_systems((regen, poison, report.after(poison)));
    /// let pairs = schedule.insertion_ordered_pairs(&mut world).unwrap();
    /// // A constraint orders `report` after `poison`; nothing but the order they were added
    /// // in puts `regen` before `poison` and before `report`.
    /// assert_eq!(pairs.len(), 2);
    /// assert!(pairs[0].before.ends_with("regen") && pairs[0].after.ends_with("poison"));
    /// assert!(pairs[1].before.ends_with("regen") && pairs[1].after.ends_with("report"));
    /// assert_eq!(pairs[0].conflict, "data conflict on `Health`");
    /// ```
    ///
    /// # Errors
    /// When the schedule cannot be built.
    pub fn insertion_ordered_pairs(
        &mut self,
        world: &mut World,
    ) -> Result<Vec<InsertionOrderedPair>, ScheduleBuildError> {
        self.initialize(world)?;
        let built = self.built.as_ref().expect("initialize built the schedule");
        let n = self.slots.len();
        // The slots in the order a run takes them, which follows every explicit edge.
        let order: Vec<usize> = built
            .graph
            .order
            .iter()
            .filter_map(|&node| match built.nodes[node] {
                Node::System(index) => Some(index),
                Node::Sync => None,
            })
            .collect();
        let mut successors: Vec<Vec<usize>> = vec![Vec::new(); n];
        for &(from, to) in &built.explicit {
            successors[from].push(to);
        }
        // What each slot reaches through explicit edges alone, later slots first.
        let mut reach = vec![fixedbitset::FixedBitSet::with_capacity(n); n];
        for &slot in order.iter().rev() {
            let mut reached = fixedbitset::FixedBitSet::with_capacity(n);
            for &to in &successors[slot] {
                reached.insert(to);
                reached.union_with(&reach[to]);
            }
            reach[slot] = reached;
        }
        let membership: Vec<Vec<SetKey>> = (0..n)
            .map(|index| self.membership(index).iter().map(by_function).collect())
            .collect();
        let intended: Vec<Vec<SetKey>> = (0..n)
            .map(|index| {
                let mut keys = self.added[index].config_graph.ambiguous_with.clone();
                for set in self.membership(index) {
                    if let Some(config) = self.sets.get(&set) {
                        keys.extend(config.ambiguous_with.iter().cloned());
                    }
                }
                keys.iter().map(by_function).collect()
            })
            .collect();
        let marked = |a: usize, b: usize| intended[a].iter().any(|set| membership[b].contains(set));
        let component = |id| short_type_name(world.components().info(id).name());
        let mut pairs = Vec::new();
        for (i, &a) in order.iter().enumerate() {
            for &b in &order[i + 1..] {
                if reach[a].contains(b) || reach[b].contains(a) || marked(a, b) || marked(b, a) {
                    continue;
                }
                if let Some(conflict) = self.slots[a]
                    .access
                    .conflict_reason(&self.slots[b].access, component)
                {
                    pairs.push(InsertionOrderedPair {
                        before: self.slots[a].system.name().to_string(),
                        after: self.slots[b].system.name().to_string(),
                        conflict,
                    });
                }
            }
        }
        Ok(pairs)
    }

    /// Panics, naming each pair, when two conflicting systems are ordered only by the order
    /// they were added in ([`insertion_ordered_pairs`](Self::insertion_ordered_pairs) is not
    /// empty): a test that states every such order was meant fails when a change (a new
    /// shared component, a system added) leaves an order to the order of `add_systems`
    /// calls. Fix a pair by ordering it (`before`, `after`, `chain`) or, when either order is
    /// fine, by marking it with [`ambiguous_with`](IntoSystemConfigs::ambiguous_with).
    ///
    /// # Panics
    /// When such a pair exists, or when the schedule cannot be built.
    #[track_caller]
    pub fn assert_no_insertion_ordered_pairs(&mut self, world: &mut World) {
        let pairs = match self.insertion_ordered_pairs(world) {
            Ok(pairs) => pairs,
            Err(error) => panic!("{error}"),
        };
        if !pairs.is_empty() {
            let lines: Vec<String> = pairs
                .iter()
                .map(|pair| {
                    format!(
                        "  `{}` before `{}`: {}",
                        short_type_name(&pair.before),
                        short_type_name(&pair.after),
                        pair.conflict
                    )
                })
                .collect();
            panic!(
                "{} pair(s) of conflicting systems are ordered only by the order they were added in:\n{}\n\
                 order each with `before`/`after`/`chain`, or mark it with `ambiguous_with` when either \
                 order is fine",
                pairs.len(),
                lines.join("\n")
            );
        }
    }

    /// The node of the first system (in slot order) that is in `set`.
    fn first_node_of(&self, set: &SetKey) -> usize {
        // A function's set key is compared by its function alone (see `build`).
        let set = match set.function() {
            Some(function) => SetKey::of(FunctionSet {
                function: function.function,
                name: "",
            }),
            None => set.clone(),
        };
        let built = self.built.as_ref().expect("initialize built the schedule");
        (0..self.slots.len())
            .find(|&index| self.membership(index).contains(&set))
            .and_then(|index| built.nodes.iter().position(|node| *node == Node::System(index)))
            .unwrap_or_else(|| panic!("no system of the schedule is in `{set:?}`: add it first"))
    }

    /// [`describe_edges`](Self::describe_edges) keyed by edge, for path searches.
    fn explain_edges(&self, world: &World, built: &BuiltSchedule) -> HashMap<(usize, usize), Dependency> {
        built
            .graph
            .edges
            .iter()
            .map(|&(from, to, _)| (from, to))
            .zip(self.describe_edges(world, built))
            .collect()
    }

    /// The system names in the order a single-threaded run executes them (sync points
    /// included), after building.
    pub fn order(&mut self, world: &mut World) -> Result<Vec<String>, ScheduleBuildError> {
        self.initialize(world)?;
        let built = self.built.as_ref().expect("initialize built the schedule");
        Ok(built
            .graph
            .order
            .iter()
            .map(|&n| built.names[n].clone())
            .collect())
    }

    /// Removes every system in `set` — the systems made from a function, or the members of
    /// a [`SystemSet`](crate::SystemSet) — and returns how many were removed. Each is dropped
    /// with its state and run conditions, releasing what it held: its `Local`s, its query
    /// caches and the entity lane its `Commands` reserved ids in, so systems added and removed
    /// in a loop leave the world's [lane count](tabula_core::World::entity_lane_count) flat.
    /// The graph is rebuilt on the next run.
    ///
    /// Orderings that named a removed system follow it out: a `chain` through it stays a
    /// chain (the systems chained before it stay ordered before the ones chained after it),
    /// and `before`/`after` constraints naming its function or set act as constraints on an
    /// empty set, which pass their order on (`a.before(f)` with `b.after(f)` still orders `a`
    /// before `b`) and otherwise order nothing. Sets configured with
    /// [`configure_sets`](Self::configure_sets) stay configured.
    ///
    /// ```
    /// use tabula::prelude::*;
    ///
    /// #[derive(Default)]
    /// struct Log(Vec<&'static str>);
    /// fn tick(mut log: ResMut<Log>) {
    ///     log.0.push("tick");
    /// }
    /// fn tock(mut log: ResMut<Log>) {
    ///     log.0.push("tock");
    /// }
    ///
    /// let mut world = World::new();
    /// world.init_resource::<Log>();
    /// let mut schedule = Schedule::new();
    /// schedule.add_systems((tick, tock).chain());
    /// schedule.run(&mut world);
    /// assert_eq!(schedule.remove_systems(tick), Ok(1));
    /// schedule.run(&mut world);
    /// assert_eq!(world.resource::<Log>().unwrap().0, ["tick", "tock", "tock"]);
    /// assert!(schedule.remove_systems(tick).is_err()); // nothing left to remove
    /// ```
    ///
    /// # Errors
    /// [`ScheduleError::NoSystem`] when no system of the schedule is in `set`; nothing
    /// changes then.
    pub fn remove_systems<M>(&mut self, set: impl IntoSystemSet<M>) -> Result<usize, ScheduleError> {
        let set = set.into_set_key();
        let key = match set.function() {
            Some(function) => SetKey::of(FunctionSet {
                function: function.function,
                name: "",
            }),
            None => set.clone(),
        };
        let removed: Vec<bool> = (0..self.slots.len())
            .map(|index| self.membership(index).contains(&key))
            .collect();
        let count = removed.iter().filter(|&&r| r).count();
        if count == 0 {
            return Err(ScheduleError::NoSystem {
                schedule: None,
                set: format!("{set:?}"),
            });
        }
        // A chain through a removed system is bridged, one removed system at a time, so a
        // run of removed systems in a chain still joins its two ends.
        let mut edges = std::mem::take(&mut self.chain_edges);
        for gone in (0..removed.len()).filter(|&index| removed[index]) {
            let into: Vec<usize> = edges.iter().filter(|e| e.1 == gone).map(|e| e.0).collect();
            let out: Vec<usize> = edges.iter().filter(|e| e.0 == gone).map(|e| e.1).collect();
            edges.retain(|&(from, to)| from != gone && to != gone);
            for &from in &into {
                for &to in &out {
                    if !edges.contains(&(from, to)) {
                        edges.push((from, to));
                    }
                }
            }
        }
        // Old slot index -> new one, for the slots that stay.
        let mut new_index = vec![usize::MAX; removed.len()];
        let mut next = 0;
        for (index, &gone) in removed.iter().enumerate() {
            if !gone {
                new_index[index] = next;
                next += 1;
            }
        }
        self.chain_edges = edges
            .into_iter()
            .map(|(from, to)| (new_index[from], new_index[to]))
            .collect();
        self.initialized -= removed[..self.initialized].iter().filter(|&&r| r).count();
        let mut index = 0;
        self.added.retain(|_| {
            index += 1;
            !removed[index - 1]
        });
        let mut index = 0;
        // Dropping a slot drops its system, its conditions and what they hold.
        self.slots.retain(|_| {
            index += 1;
            !removed[index - 1]
        });
        self.built = None;
        Ok(count)
    }

    /// How many systems the schedule holds.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// True when no system was added.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }
}

/// `set` as set membership compares it: a function's set by its function alone (see
/// `build`).
fn by_function(set: &SetKey) -> SetKey {
    match set.function() {
        Some(function) => SetKey::of(FunctionSet {
            function: function.function,
            name: "",
        }),
        None => set.clone(),
    }
}

/// The shortest path of ordering edges from node `from` to node `to` of `built`, as the
/// dependencies `edges` names; `None` when `to` does not wait for `from`.
fn path_between(
    built: &BuiltSchedule,
    edges: &HashMap<(usize, usize), Dependency>,
    from: usize,
    to: usize,
) -> Option<Vec<Dependency>> {
    let mut previous: Vec<Option<usize>> = vec![None; built.nodes.len()];
    let mut queue = std::collections::VecDeque::from([from]);
    let mut seen = vec![false; built.nodes.len()];
    seen[from] = true;
    while let Some(node) = queue.pop_front() {
        if node == to {
            let mut path = Vec::new();
            let mut at = to;
            while let Some(before) = previous[at] {
                path.push(edges[&(before, at)].clone());
                at = before;
            }
            path.reverse();
            return Some(path);
        }
        for &(a, b, _) in &built.graph.edges {
            if a == node && !seen[b] {
                seen[b] = true;
                previous[b] = Some(a);
                queue.push_back(b);
            }
        }
    }
    None
}

/// Ends a run that a system or command aborted with `payload`: every command buffer not yet
/// applied is dropped (a later run must not apply them out of order), then the panic goes on.
fn abort_run(slots: &mut [SystemSlot], world: &mut World, payload: Box<dyn std::any::Any + Send>) -> ! {
    for slot in slots {
        slot.system.discard_deferred(world);
    }
    std::panic::resume_unwind(payload)
}

/// A new run condition from `make`, initialised with `world`, whose messages say it guards
/// `guard` (``system `name` `` or ``set `Name` ``); refused when it would write, naming
/// `system`, the system being set up.
fn made_condition(
    make: &ConditionFactory,
    guard: &str,
    system: &str,
    world: &mut World,
) -> Result<BoxedCondition, ScheduleBuildError> {
    let mut condition = make();
    condition.set_condition_of(guard);
    condition.initialize(world);
    let refused = if condition.access().is_deferred() {
        Some(ConditionWrite::Commands)
    } else if condition.access().writes_anything() {
        Some(ConditionWrite::World)
    } else {
        None
    };
    match refused {
        // `built` stays `None`: the next `initialize` redoes this slot.
        Some(write) => Err(ScheduleBuildError::ConditionWrites {
            condition: condition.name().to_string(),
            system: system.to_string(),
            write,
        }),
        None => Ok(condition),
    }
}

/// True when `made` and `wanted` list the same condition factories, in order.
fn same_factories(made: &[ConditionFactory], wanted: &[ConditionFactory]) -> bool {
    made.len() == wanted.len() && made.iter().zip(wanted).all(|(a, b)| same_factory(a, b))
}

/// True when both are the one factory (a run condition given once, shared by its systems).
fn same_factory(a: &ConditionFactory, b: &ConditionFactory) -> bool {
    std::ptr::addr_eq(Arc::as_ptr(a), Arc::as_ptr(b))
}
