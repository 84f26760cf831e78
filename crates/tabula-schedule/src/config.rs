//! How systems and sets are added to a schedule: ordering (`before`, `after`, `chain`),
//! membership (`in_set`) and run conditions (`run_if`).

use std::sync::Arc;

use crate::set::{IntoSystemSet, SetKey, SystemSet};
use crate::system::{BoxedSystem, IntoSystem};

/// A boxed run condition: a read-only system returning `bool`.
pub type BoxedCondition = Box<dyn crate::System<In = (), Out = bool>>;

/// Makes a fresh instance of a run condition (each system gets its own state).
pub(crate) type ConditionFactory = Arc<dyn Fn() -> BoxedCondition + Send + Sync>;

fn factory<M, C>(condition: C) -> ConditionFactory
where
    C: IntoSystem<bool, M> + Clone + Send + Sync + 'static,
{
    Arc::new(move || Box::new(condition.clone().into_system()))
}

/// Ordering, membership and conditions shared by system and set configs.
#[derive(Clone, Default)]
pub(crate) struct Graph {
    pub(crate) sets: Vec<SetKey>,
    pub(crate) before: Vec<SetKey>,
    pub(crate) after: Vec<SetKey>,
    pub(crate) conditions: Vec<ConditionFactory>,
    /// No sync point after this system (see `IntoSystemConfigs::without_auto_sync`).
    pub(crate) no_auto_sync: bool,
    /// Systems and sets whose order against this one's members may stay the order they were
    /// added in (see `IntoSystemConfigs::ambiguous_with`).
    pub(crate) ambiguous_with: Vec<SetKey>,
}

/// One system with its configuration: what [`IntoSystemConfigs`] makes of a system, held by
/// [`SystemConfigs::One`]. Opaque; configure it through `IntoSystemConfigs`' methods.
pub struct SystemConfig {
    pub(crate) system: BoxedSystem,
    pub(crate) graph: Graph,
}

/// Systems to add to a schedule, possibly grouped and chained.
pub enum SystemConfigs {
    /// One system.
    One(SystemConfig),
    /// Several, optionally run in sequence (`chain`).
    Group {
        /// The members.
        items: Vec<SystemConfigs>,
        /// Each member runs after the previous one.
        chained: bool,
    },
}

impl SystemConfigs {
    fn for_each_graph(&mut self, f: &mut impl FnMut(&mut Graph)) {
        match self {
            Self::One(config) => f(&mut config.graph),
            Self::Group { items, .. } => items.iter_mut().for_each(|item| item.for_each_graph(f)),
        }
    }

    fn with(mut self, mut f: impl FnMut(&mut Graph)) -> Self {
        self.for_each_graph(&mut f);
        self
    }
}

/// Anything that can be added with [`Schedule::add_systems`](crate::Schedule::add_systems):
/// a system function, a configured system, or a tuple of them.
///
/// ```
/// use tabula::prelude::*;
///
/// fn input() {}
/// fn movement() {}
/// fn render() {}
///
/// let mut schedule = Schedule::new();
/// schedule.add_systems((input, movement.after(input), render.after(movement)));
/// schedule.add_systems((input, movement, render).chain().in_set(CoreSet::Update));
/// ```
pub trait IntoSystemConfigs<Marker>: Sized {
    /// The configs.
    fn into_configs(self) -> SystemConfigs;

    /// Runs before every system of `set` (or made from that function).
    fn before<M>(self, set: impl IntoSystemSet<M>) -> SystemConfigs {
        let key = set.into_set_key();
        self.into_configs().with(|g| g.before.push(key.clone()))
    }

    /// Runs after every system of `set` (or made from that function).
    fn after<M>(self, set: impl IntoSystemSet<M>) -> SystemConfigs {
        let key = set.into_set_key();
        self.into_configs().with(|g| g.after.push(key.clone()))
    }

    /// Joins `set`, taking on its ordering and conditions.
    fn in_set(self, set: impl SystemSet) -> SystemConfigs {
        let key = SetKey::of(set);
        self.into_configs().with(|g| g.sets.push(key.clone()))
    }

    /// Runs only when `condition` (a read-only system returning `bool`) says so; on a group,
    /// each member gets its own instance of the condition.
    fn run_if<M>(self, condition: impl IntoSystem<bool, M> + Clone + Send + Sync + 'static) -> SystemConfigs {
        let make = factory(condition);
        self.into_configs().with(|g| g.conditions.push(make.clone()))
    }

    /// Places no sync point after this system (or each member of a group): its commands are
    /// applied at the next [`apply_deferred`](crate::apply_deferred) system or sync point
    /// that runs after it, or at the end of the run. The schedule-wide switch is
    /// [`Schedule::set_auto_sync`](crate::Schedule::set_auto_sync).
    ///
    /// ```
    /// use tabula::prelude::*;
    ///
    /// fn plant(mut commands: Commands) {
    ///     commands.spawn((1u8,));
    /// }
    /// fn look(q: Query<&u8>) {}
    ///
    /// let mut world = World::new();
    /// let mut schedule = Schedule::new();
    /// schedule.add_systems((plant.without_auto_sync(), look).chain());
    /// assert!(!schedule.order(&mut world).unwrap().iter().any(|n| n.starts_with("sync")));
    /// ```
    fn without_auto_sync(self) -> SystemConfigs {
        self.into_configs().with(|g| g.no_auto_sync = true)
    }

    /// States that the order of this system (or each member of a group) against the
    /// systems of `set` does not matter: where they conflict and no constraint orders them,
    /// the order they were added in is fine. Nothing changes in how the schedule runs (they
    /// are still ordered as added, on every run); the pairs only leave
    /// [`Schedule::insertion_ordered_pairs`](crate::Schedule::insertion_ordered_pairs), so
    /// that [`Schedule::assert_no_insertion_ordered_pairs`](crate::Schedule::assert_no_insertion_ordered_pairs)
    /// passes.
    ///
    /// ```
    /// use tabula::prelude::*;
    ///
    /// struct Log(Vec<&'static str>);
    /// fn hit(mut log: ResMut<Log>) { log.0.push("hit"); }
    /// fn miss(mut log: ResMut<Log>) { log.0.push("miss"); }
    ///
    /// let mut world = World::new();
    /// world.insert_resource(Log(Vec::new()));
    /// let mut schedule = Schedule::new();
    /// schedule.add_systems((hit, miss.ambiguous_with(hit)));
    /// schedule.assert_no_insertion_ordered_pairs(&mut world);
    /// ```
    fn ambiguous_with<M>(self, set: impl IntoSystemSet<M>) -> SystemConfigs {
        let key = set.into_set_key();
        self.into_configs().with(|g| g.ambiguous_with.push(key.clone()))
    }

    /// Makes each member of a group run after the previous one.
    fn chain(self) -> SystemConfigs {
        match self.into_configs() {
            SystemConfigs::Group { items, .. } => SystemConfigs::Group { items, chained: true },
            one => one,
        }
    }
}

impl IntoSystemConfigs<()> for SystemConfigs {
    fn into_configs(self) -> SystemConfigs {
        self
    }
}

/// Marks the [`IntoSystemConfigs`] implementation for single systems.
pub struct IsSystem;

impl<Marker, F> IntoSystemConfigs<(IsSystem, Marker)> for F
where
    F: IntoSystem<(), Marker>,
{
    fn into_configs(self) -> SystemConfigs {
        SystemConfigs::One(SystemConfig {
            system: Box::new(self.into_system()),
            graph: Graph::default(),
        })
    }
}

/// Marks the [`IntoSystemConfigs`] implementation for tuples.
pub struct IsTuple;

macro_rules! tuple_configs {
    ($($name:ident $marker:ident),*) => {
        #[allow(non_snake_case)]
        impl<$($marker, $name: IntoSystemConfigs<$marker>),*> IntoSystemConfigs<(IsTuple, $($marker,)*)> for ($($name,)*) {
            fn into_configs(self) -> SystemConfigs {
                let ($($name,)*) = self;
                SystemConfigs::Group {
                    items: vec![$($name.into_configs()),*],
                    chained: false,
                }
            }
        }
    };
}

tuple_configs!(S0 M0);
tuple_configs!(S0 M0, S1 M1);
tuple_configs!(S0 M0, S1 M1, S2 M2);
tuple_configs!(S0 M0, S1 M1, S2 M2, S3 M3);
tuple_configs!(S0 M0, S1 M1, S2 M2, S3 M3, S4 M4);
tuple_configs!(S0 M0, S1 M1, S2 M2, S3 M3, S4 M4, S5 M5);
tuple_configs!(S0 M0, S1 M1, S2 M2, S3 M3, S4 M4, S5 M5, S6 M6);
tuple_configs!(S0 M0, S1 M1, S2 M2, S3 M3, S4 M4, S5 M5, S6 M6, S7 M7);
tuple_configs!(S0 M0, S1 M1, S2 M2, S3 M3, S4 M4, S5 M5, S6 M6, S7 M7, S8 M8);
tuple_configs!(S0 M0, S1 M1, S2 M2, S3 M3, S4 M4, S5 M5, S6 M6, S7 M7, S8 M8, S9 M9);
tuple_configs!(S0 M0, S1 M1, S2 M2, S3 M3, S4 M4, S5 M5, S6 M6, S7 M7, S8 M8, S9 M9, S10 M10);
tuple_configs!(S0 M0, S1 M1, S2 M2, S3 M3, S4 M4, S5 M5, S6 M6, S7 M7, S8 M8, S9 M9, S10 M10, S11 M11);
tuple_configs!(S0 M0, S1 M1, S2 M2, S3 M3, S4 M4, S5 M5, S6 M6, S7 M7, S8 M8, S9 M9, S10 M10, S11 M11, S12 M12);
tuple_configs!(S0 M0, S1 M1, S2 M2, S3 M3, S4 M4, S5 M5, S6 M6, S7 M7, S8 M8, S9 M9, S10 M10, S11 M11, S12 M12, S13 M13);
tuple_configs!(S0 M0, S1 M1, S2 M2, S3 M3, S4 M4, S5 M5, S6 M6, S7 M7, S8 M8, S9 M9, S10 M10, S11 M11, S12 M12, S13 M13, S14 M14);
tuple_configs!(S0 M0, S1 M1, S2 M2, S3 M3, S4 M4, S5 M5, S6 M6, S7 M7, S8 M8, S9 M9, S10 M10, S11 M11, S12 M12, S13 M13, S14 M14, S15 M15);

// ---------------------------------------------------------------------------------------
// Sets

/// One set with its configuration: what [`IntoSetConfigs`] makes of a set, held by
/// [`SetConfigs::One`]. Opaque; configure it through `IntoSetConfigs`' methods.
pub struct SetConfig {
    pub(crate) set: SetKey,
    pub(crate) graph: Graph,
}

/// Sets to configure, possibly grouped and chained.
pub enum SetConfigs {
    /// One set.
    One(SetConfig),
    /// Several, optionally ordered in sequence.
    Group {
        /// The members.
        items: Vec<SetConfigs>,
        /// Each member set runs after the previous one.
        chained: bool,
    },
}

impl SetConfigs {
    fn with(mut self, mut f: impl FnMut(&mut Graph)) -> Self {
        fn walk(configs: &mut SetConfigs, f: &mut impl FnMut(&mut Graph)) {
            match configs {
                SetConfigs::One(config) => f(&mut config.graph),
                SetConfigs::Group { items, .. } => items.iter_mut().for_each(|item| walk(item, f)),
            }
        }
        walk(&mut self, &mut f);
        self
    }
}

/// Anything [`Schedule::configure_sets`](crate::Schedule::configure_sets) accepts: a set or
/// a tuple of sets, with ordering, nesting and conditions.
pub trait IntoSetConfigs<Marker>: Sized {
    /// The configs.
    fn into_set_configs(self) -> SetConfigs;

    /// The set's systems run before those of `set`.
    fn before<M>(self, set: impl IntoSystemSet<M>) -> SetConfigs {
        let key = set.into_set_key();
        self.into_set_configs().with(|g| g.before.push(key.clone()))
    }

    /// The set's systems run after those of `set`.
    fn after<M>(self, set: impl IntoSystemSet<M>) -> SetConfigs {
        let key = set.into_set_key();
        self.into_set_configs().with(|g| g.after.push(key.clone()))
    }

    /// Nests the set inside `parent`.
    fn in_set(self, parent: impl SystemSet) -> SetConfigs {
        let key = SetKey::of(parent);
        self.into_set_configs().with(|g| g.sets.push(key.clone()))
    }

    /// Every system of the set runs only when `condition` says so.
    fn run_if<M>(self, condition: impl IntoSystem<bool, M> + Clone + Send + Sync + 'static) -> SetConfigs {
        let make = factory(condition);
        self.into_set_configs().with(|g| g.conditions.push(make.clone()))
    }

    /// States that the order of the set's systems against those of `set` does not matter,
    /// as [`IntoSystemConfigs::ambiguous_with`] does for one system.
    fn ambiguous_with<M>(self, set: impl IntoSystemSet<M>) -> SetConfigs {
        let key = set.into_set_key();
        self.into_set_configs()
            .with(|g| g.ambiguous_with.push(key.clone()))
    }

    /// Orders the sets of a group one after another.
    fn chain(self) -> SetConfigs {
        match self.into_set_configs() {
            SetConfigs::Group { items, .. } => SetConfigs::Group { items, chained: true },
            one => one,
        }
    }
}

impl IntoSetConfigs<()> for SetConfigs {
    fn into_set_configs(self) -> SetConfigs {
        self
    }
}

impl<S: SystemSet> IntoSetConfigs<IsSystem> for S {
    fn into_set_configs(self) -> SetConfigs {
        SetConfigs::One(SetConfig {
            set: SetKey::of(self),
            graph: Graph::default(),
        })
    }
}

macro_rules! tuple_set_configs {
    ($($name:ident $marker:ident),*) => {
        #[allow(non_snake_case)]
        impl<$($marker, $name: IntoSetConfigs<$marker>),*> IntoSetConfigs<(IsTuple, $($marker,)*)> for ($($name,)*) {
            fn into_set_configs(self) -> SetConfigs {
                let ($($name,)*) = self;
                SetConfigs::Group {
                    items: vec![$($name.into_set_configs()),*],
                    chained: false,
                }
            }
        }
    };
}

tuple_set_configs!(S0 M0);
tuple_set_configs!(S0 M0, S1 M1);
tuple_set_configs!(S0 M0, S1 M1, S2 M2);
tuple_set_configs!(S0 M0, S1 M1, S2 M2, S3 M3);
tuple_set_configs!(S0 M0, S1 M1, S2 M2, S3 M3, S4 M4);
tuple_set_configs!(S0 M0, S1 M1, S2 M2, S3 M3, S4 M4, S5 M5);
tuple_set_configs!(S0 M0, S1 M1, S2 M2, S3 M3, S4 M4, S5 M5, S6 M6);
tuple_set_configs!(S0 M0, S1 M1, S2 M2, S3 M3, S4 M4, S5 M5, S6 M6, S7 M7);
