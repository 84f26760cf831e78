//! System parameters outside a schedule: [`SystemState`] (bevy's `SystemState`).

use std::any::type_name;
use std::borrow::Cow;

use tabula_core::query::{QueryFilter, ReadOnlyQueryData};
use tabula_core::{CommandError, Component, UnsafeWorldCell, World, WorldId, short_type_name};

use crate::param::{
    EventReader, Local, Query, RemovedComponents, Res, SystemMeta, SystemParam, SystemParamItem,
};

/// The state of system parameters `P` used outside a schedule: build it once per world with
/// [`new`](Self::new), then fetch the parameters with [`get_mut`](Self::get_mut) (or
/// [`get`](Self::get), when they only read) as often as needed, and [`apply`](Self::apply)
/// the commands they recorded.
///
/// Like a system, it keeps its state between fetches: query caches, `Local`s, event
/// cursors, and the change ticks of its last fetch (so `Changed<T>` and `Res::is_changed`
/// see what changed since then).
///
/// Game code that holds a `&mut World` — a setup function, a test, an exclusive system —
/// sometimes needs what a system gets: two queries at once, say, one reading the parents of
/// a tree while the other writes its children's transforms. `World::query` borrows the world
/// for each query, so two of them cannot be live together; a `SystemState` builds the
/// parameters as a system would (checking that they do not alias, once) and hands them out
/// together.
///
/// ```
/// use tabula::prelude::*;
/// use tabula::schedule::SystemState;
///
/// struct Offset(f32);
/// struct Position(f32);
///
/// let mut world = World::new();
/// let root = world.spawn((Offset(10.0), Position(10.0)));
/// let child = world.spawn((Offset(2.5), Position(0.0), Parent::new(root)));
///
/// // Read each child's offset and parent while writing positions.
/// let mut state =
///     SystemState::<(Query<(Entity, &Offset, &Parent)>, Query<&mut Position>)>::new(&mut world);
/// let (children, mut positions) = state.get_mut(&mut world);
/// for (entity, offset, parent) in &children {
///     let base = positions.get(parent.get()).unwrap().0; // read through the `&mut` query
///     positions.get_mut(entity).unwrap().0 = base + offset.0;
/// }
/// assert_eq!(world.get::<Position>(child).unwrap().0, 12.5);
/// ```
///
/// Commands recorded through a `SystemState`'s `Commands` wait for
/// [`SystemState::apply`]:
///
/// ```
/// use tabula::prelude::*;
/// use tabula::schedule::SystemState;
///
/// struct Bullet;
///
/// let mut world = World::new();
/// let mut state = SystemState::<Commands>::new(&mut world);
/// state.get_mut(&mut world).spawn((Bullet,));
/// assert_eq!(world.query::<&Bullet>().iter(&world).count(), 0, "recorded, not applied");
/// assert!(state.apply(&mut world).is_empty());
/// assert_eq!(world.query::<&Bullet>().iter(&world).count(), 1);
/// ```
pub struct SystemState<P: SystemParam + 'static> {
    meta: SystemMeta,
    state: P::State,
    world: WorldId,
}

impl<P: SystemParam + 'static> SystemState<P> {
    /// Builds the parameters' state against `world`.
    ///
    /// # Panics
    /// When two of the parameters would alias, as a system with them would; the message
    /// names both parameters and the component, and says how to fix it.
    ///
    /// ```should_panic
    /// use tabula::prelude::*;
    /// use tabula::schedule::SystemState;
    ///
    /// struct Health(u32);
    /// let mut world = World::new();
    /// // Panics: "parameter `Query<&Health>` conflicts with parameter `Query<&mut Health>`".
    /// SystemState::<(Query<&mut Health>, Query<&Health>)>::new(&mut world);
    /// ```
    pub fn new(world: &mut World) -> Self {
        let name = format!("SystemState<{}>", short_type_name(type_name::<P>()));
        let mut meta = SystemMeta::new(Cow::Owned(name));
        let state = P::init_state(world, &mut meta);
        Self {
            meta,
            state,
            world: world.id(),
        }
    }

    /// The parameters, fetched from `world` with full access.
    ///
    /// Commands they record wait for [`apply`](Self::apply).
    ///
    /// # Panics
    /// When `world` is not the world the state was built with.
    pub fn get_mut<'w, 's>(&'s mut self, world: &'w mut World) -> SystemParamItem<'w, 's, P> {
        self.check_world(world);
        P::update_archetypes(&mut self.state, world);
        // SAFETY: `&'w mut World` grants every access for `'w`, and the returned items borrow
        // the state mutably for `'s`, so no other fetch from this state overlaps them; the
        // parameters' accesses were checked against each other in `new` (so the items do not
        // alias each other); the state was built with this world (checked above) and its
        // archetypes are updated.
        unsafe { self.fetch(UnsafeWorldCell::new_mutable(world)) }
    }

    /// The parameters, fetched from a shared `world`: for parameters that only read
    /// ([`ReadOnlySystemParam`]: `Query` of read-only data, `Res`, `Local`, `&World`,
    /// `EventReader`, `RemovedComponents` and tuples of them).
    ///
    /// ```
    /// use tabula::prelude::*;
    /// use tabula::schedule::SystemState;
    ///
    /// struct Score(u32);
    /// struct Player;
    ///
    /// let mut world = World::new();
    /// world.insert_resource(Score(7));
    /// world.spawn((Player,));
    /// let mut state = SystemState::<(Res<Score>, Query<&Player>)>::new(&mut world);
    /// let world = &world; // shared from here on
    /// let (score, players) = state.get(world);
    /// assert_eq!((score.0, players.count()), (7, 1));
    /// ```
    ///
    /// A parameter that may write needs [`get_mut`](Self::get_mut):
    ///
    /// ```compile_fail
    /// use tabula::prelude::*;
    /// use tabula::schedule::SystemState;
    ///
    /// struct Health(u32);
    /// let mut world = World::new();
    /// let mut state = SystemState::<Query<&mut Health>>::new(&mut world);
    /// state.get(&world); // `Query<&mut Health>` may write to the world
    /// ```
    ///
    /// # Panics
    /// When `world` is not the world the state was built with.
    pub fn get<'w, 's>(&'s mut self, world: &'w World) -> SystemParamItem<'w, 's, P>
    where
        P: ReadOnlySystemParam,
    {
        self.check_world(world);
        P::update_archetypes(&mut self.state, world);
        // SAFETY: `P` only reads (`ReadOnlySystemParam`), and `&'w World` keeps writers away
        // for `'w`; the returned items borrow the state mutably for `'s`; the state was built
        // with this world (checked above) and its archetypes are updated.
        unsafe { self.fetch(UnsafeWorldCell::new_readonly(world)) }
    }

    /// Applies the commands the parameters recorded since the last `apply`, returning those
    /// that were skipped (a despawned entity, say) with why.
    ///
    /// # Panics
    /// When `world` is not the world the state was built with.
    pub fn apply(&mut self, world: &mut World) -> Vec<CommandError> {
        self.check_world(world);
        let mut errors = Vec::new();
        P::apply_deferred(&mut self.state, world, &mut errors);
        errors
    }

    /// Fetches the parameters, starting a run (the change ticks move on).
    ///
    /// # Safety
    /// The caller holds the access `P` declared for `'w` through `world`, which is the
    /// world the state was built with, with archetypes updated.
    unsafe fn fetch<'w, 's>(&'s mut self, world: UnsafeWorldCell<'w>) -> SystemParamItem<'w, 's, P> {
        let mut this_run = self.meta.last_run();
        let ticks = world.start_run(&mut this_run);
        self.meta.set_last_run(this_run);
        // SAFETY: forwarded contract.
        unsafe { P::get_param(&mut self.state, &self.meta, world, ticks) }
    }

    fn check_world(&self, world: &World) {
        assert!(
            self.world == world.id(),
            "{} was built with another World; build one per world with SystemState::new",
            self.meta.name()
        );
    }
}

/// A [`SystemParam`] that only reads the world, so [`SystemState::get`] can fetch it from
/// a shared `&World`.
///
/// # Safety
/// `init_state` declares no write, and `get_param` writes nothing in the world (its own
/// state it may) and works through a read-only [`UnsafeWorldCell`].
#[diagnostic::on_unimplemented(
    message = "`{Self}` may write to the world, so it cannot be fetched from a shared `&World`",
    label = "not a read-only parameter",
    note = "use `SystemState::get_mut` with a `&mut World`"
)]
pub unsafe trait ReadOnlySystemParam: SystemParam {}

// SAFETY: read-only data; the query's access records no writes.
unsafe impl<D: ReadOnlyQueryData + 'static, F: QueryFilter + 'static> ReadOnlySystemParam
    for Query<'_, '_, D, F>
{
}
// SAFETY: declares and makes a read of `R`.
unsafe impl<R: Component> ReadOnlySystemParam for Res<'_, R> {}
// SAFETY: as above.
unsafe impl<R: Component> ReadOnlySystemParam for Option<Res<'_, R>> {}
// SAFETY: touches only its own state.
unsafe impl<T: Default + Send + Sync + 'static> ReadOnlySystemParam for Local<'_, T> {}
// SAFETY: reads nothing of the world.
unsafe impl ReadOnlySystemParam for crate::SystemChangeTick {}
// SAFETY: reads the whole world, writes nothing.
unsafe impl ReadOnlySystemParam for &World {}
// SAFETY: reads the event queue; only its own cursor moves.
unsafe impl<E: Send + Sync + 'static> ReadOnlySystemParam for EventReader<'_, '_, E> {}
// SAFETY: reads the removal log; only its own cursor moves.
unsafe impl<T: Component> ReadOnlySystemParam for RemovedComponents<'_, '_, T> {}

macro_rules! read_only_tuple {
    ($($name:ident),*) => {
        // SAFETY: every member only reads.
        unsafe impl<$($name: ReadOnlySystemParam),*> ReadOnlySystemParam for ($($name,)*) {}
    };
}

read_only_tuple!();
read_only_tuple!(P0);
read_only_tuple!(P0, P1);
read_only_tuple!(P0, P1, P2);
read_only_tuple!(P0, P1, P2, P3);
read_only_tuple!(P0, P1, P2, P3, P4);
read_only_tuple!(P0, P1, P2, P3, P4, P5);
read_only_tuple!(P0, P1, P2, P3, P4, P5, P6);
read_only_tuple!(P0, P1, P2, P3, P4, P5, P6, P7);
read_only_tuple!(P0, P1, P2, P3, P4, P5, P6, P7, P8);
read_only_tuple!(P0, P1, P2, P3, P4, P5, P6, P7, P8, P9);
read_only_tuple!(P0, P1, P2, P3, P4, P5, P6, P7, P8, P9, P10);
read_only_tuple!(P0, P1, P2, P3, P4, P5, P6, P7, P8, P9, P10, P11);
read_only_tuple!(P0, P1, P2, P3, P4, P5, P6, P7, P8, P9, P10, P11, P12);
read_only_tuple!(P0, P1, P2, P3, P4, P5, P6, P7, P8, P9, P10, P11, P12, P13);
read_only_tuple!(P0, P1, P2, P3, P4, P5, P6, P7, P8, P9, P10, P11, P12, P13, P14);
read_only_tuple!(
    P0, P1, P2, P3, P4, P5, P6, P7, P8, P9, P10, P11, P12, P13, P14, P15
);
