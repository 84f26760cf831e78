//! System sets: named groups of systems that can be ordered and conditioned together.

use std::any::{Any, TypeId};
use std::fmt::{self, Debug};
use std::hash::{Hash, Hasher};
use std::sync::Arc;

/// A named group of systems. Implement it for a small enum:
///
/// ```
/// use tabula::schedule::SystemSet;
///
/// #[derive(Debug, Clone, PartialEq, Eq, Hash)]
/// enum Phase { Input, Physics, Render }
/// impl SystemSet for Phase {}
/// ```
pub trait SystemSet: Debug + Clone + Eq + Hash + Send + Sync + 'static {}

/// The three ordered phases every [`Schedule`](crate::Schedule) starts with:
/// `PreUpdate` runs before `Update`, which runs before `PostUpdate`.
///
/// Only members are ordered: a system added without `.in_set(CoreSet::..)` (directly or
/// through one of its sets) is in none of them, so it is ordered against their systems only
/// by explicit `before`/`after` and by conflicts (in the order added). Once you use
/// `PreUpdate` or `PostUpdate`, put the main logic in `Update` explicitly:
///
/// ```
/// use tabula::prelude::*;
///
/// #[derive(Default)]
/// struct Input(u32);
/// #[derive(Default)]
/// struct Seen(Vec<u32>);
///
/// fn logic(input: Res<Input>, mut seen: ResMut<Seen>) {
///     seen.0.push(input.0);
/// }
/// fn read_input(mut input: ResMut<Input>) {
///     input.0 += 1;
/// }
///
/// let mut world = World::new();
/// world.init_resource::<Input>();
/// world.init_resource::<Seen>();
/// let mut schedule = Schedule::new();
/// schedule.add_systems((
///     logic.in_set(CoreSet::Update), // without `in_set`, it would run first (added first)
///     read_input.in_set(CoreSet::PreUpdate),
/// ));
/// schedule.run(&mut world);
/// assert_eq!(world.resource::<Seen>().unwrap().0, [1]);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CoreSet {
    /// Input, timers, spawning of the frame's new entities.
    PreUpdate,
    /// The game's main logic.
    Update,
    /// Cleanup, rendering, bookkeeping.
    PostUpdate,
}

impl SystemSet for CoreSet {}

/// The set of all systems made from one function; `.after(function)` orders against it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct FunctionSet {
    pub(crate) function: TypeId,
    pub(crate) name: &'static str,
}

impl SystemSet for FunctionSet {}

trait DynSet: Debug + Send + Sync {
    fn as_any(&self) -> &dyn Any;
    fn dyn_eq(&self, other: &dyn DynSet) -> bool;
    fn dyn_hash(&self, state: &mut dyn Hasher);
}

impl<S: SystemSet> DynSet for S {
    fn as_any(&self) -> &dyn Any {
        self
    }

    fn dyn_eq(&self, other: &dyn DynSet) -> bool {
        other.as_any().downcast_ref::<S>() == Some(self)
    }

    fn dyn_hash(&self, mut state: &mut dyn Hasher) {
        TypeId::of::<S>().hash(&mut state);
        self.hash(&mut state);
    }
}

/// A type-erased set, comparable and hashable across set types.
#[derive(Clone)]
pub struct SetKey(Arc<dyn DynSet>);

impl SetKey {
    /// Erases a set.
    pub fn of<S: SystemSet>(set: S) -> Self {
        Self(Arc::new(set))
    }

    pub(crate) fn function(&self) -> Option<&FunctionSet> {
        self.0.as_any().downcast_ref::<FunctionSet>()
    }
}

impl PartialEq for SetKey {
    fn eq(&self, other: &Self) -> bool {
        self.0.dyn_eq(&*other.0)
    }
}

impl Eq for SetKey {}

impl Hash for SetKey {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.0.dyn_hash(state);
    }
}

impl Debug for SetKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.function() {
            Some(function) => f.write_str(function.name),
            None => self.0.fmt(f),
        }
    }
}

/// Things that name a set: a [`SystemSet`] value, or a system function (the set of systems
/// made from it).
pub trait IntoSystemSet<Marker> {
    /// The erased set.
    fn into_set_key(self) -> SetKey;
}

/// Marks the [`IntoSystemSet`] implementation for sets.
pub struct IsSet;

impl<S: SystemSet> IntoSystemSet<IsSet> for S {
    fn into_set_key(self) -> SetKey {
        SetKey::of(self)
    }
}

/// Marks the [`IntoSystemSet`] implementation for system functions.
pub struct IsFunction;

impl<Out, Marker, F> IntoSystemSet<(IsFunction, Out, Marker)> for F
where
    F: crate::system::IntoSystem<Out, Marker> + 'static,
{
    fn into_set_key(self) -> SetKey {
        SetKey::of(FunctionSet {
            function: TypeId::of::<F>(),
            name: std::any::type_name::<F>(),
        })
    }
}
