//! `ParamSet`: parameters that would conflict with each other, used one at a time.

use std::any::type_name;

use tabula_core::{CommandError, UnsafeWorldCell, World};

use super::{RunTicks, SystemMeta, SystemParam, SystemParamItem};

/// Up to 8 parameters that may conflict with each other (two queries writing the same
/// component, say), used one at a time: `p0()`, `p1()`, ... each borrow the set mutably, so
/// only one member is live at once.
///
/// The set's access is its members' together: the schedule orders the system against others
/// as if it had every member as a parameter, and the members are checked against the
/// system's other parameters as usual (only not against each other).
///
/// Members spell the lifetimes of their query data out as `'static`:
/// `Query<&'static mut Health>`. In a function's signature an elided `&mut Health` inside the
/// set gets a lifetime of its own, which the compiler cannot prove `'static` (it refuses it
/// with "the type `&mut Health` does not fulfill the required lifetime"); a query that is a
/// parameter by itself needs no such spelling.
///
/// ```
/// use tabula::prelude::*;
///
/// struct Health(i32);
/// struct Poisoned;
///
/// // Both queries reach `Health`; one writes it, so they could not be two parameters.
/// fn poison(
///     mut set: ParamSet<(Query<&'static mut Health, With<Poisoned>>, Query<&'static Health>)>,
/// ) {
///     for mut health in set.p0().iter_mut() {
///         health.0 -= 1;
///     }
///     let total: i32 = set.p1().iter().map(|h| h.0).sum();
///     assert_eq!(total, 9 + 10);
/// }
///
/// let mut world = World::new();
/// world.spawn((Health(10), Poisoned));
/// world.spawn((Health(10),));
/// let mut schedule = Schedule::new();
/// schedule.add_systems(poison);
/// schedule.run(&mut world);
/// ```
///
/// Members are fetched when their accessor is called, so a missing resource of a `Res`
/// member panics there rather than when the run starts.
pub struct ParamSet<'w, 's, T: SystemParam> {
    members: &'s mut T::State,
    meta: &'s SystemMeta,
    world: UnsafeWorldCell<'w>,
    ticks: RunTicks,
}

/// Initialises one member of a set: its own access built in a scratch meta (checked against
/// the member's own parameters only), then checked against the system's parameters declared
/// before the set, with the usual messages. Returns the member's state and its access, which
/// the caller adds to the system once every member has passed.
fn init_member<P: SystemParam>(world: &mut World, meta: &SystemMeta) -> (P::State, SystemMeta) {
    let mut scratch = SystemMeta::new(meta.name.clone());
    scratch.condition_of = meta.condition_of.clone();
    scratch.last_run = meta.last_run;
    let state = P::init_state(world, &mut scratch);
    let mut check = meta.clone();
    if scratch.access.reads_all() {
        check.add_reads_all(type_name::<P>());
    }
    for (name, access) in scratch.access.params() {
        check.add_param_access(world, name, access.clone());
    }
    (state, scratch)
}

/// The meta the members see when fetched: the system's name and last run, refreshed from
/// `meta` (a run condition learns its system after it is initialised).
fn refresh(stored: &mut SystemMeta, meta: &SystemMeta) {
    if stored.name != meta.name {
        stored.name = meta.name.clone();
    }
    if stored.condition_of != meta.condition_of {
        stored.condition_of = meta.condition_of.clone();
    }
    stored.last_run = meta.last_run;
}

macro_rules! param_set {
    ($(($member:ident, $accessor:ident, $index:tt)),*) => {
        // SAFETY: `init_state` declares every member's access (each member's own, built
        // with the member's `init_state` and checked against the system's other
        // parameters; `absorb` adds them all, so the set's access covers every member's and
        // later parameters are checked against each). `get_param` fetches nothing: a member is
        // fetched only by its accessor, which borrows the set mutably for as long as the
        // member's item lives (its `'w` and `'s` are that borrow), so at most one member's
        // item exists at any time and the members' conflicts with each other never alias.
        // The item set's members are the members' items, which `SystemParam`'s contract makes
        // the members themselves with other lifetimes: the same impls, the same access.
        unsafe impl<$($member: SystemParam),*> SystemParam for ParamSet<'_, '_, ($($member,)*)> {
            /// The members' states, and the meta they are fetched with.
            type State = (($($member::State,)*), SystemMeta);
            type Item<'w, 's> = ParamSet<'w, 's, ($($member::Item<'w, 's>,)*)>;

            fn init_state(world: &mut World, meta: &mut SystemMeta) -> Self::State {
                let members = ($(init_member::<$member>(world, meta),)*);
                // Only once every member passed its checks: members may conflict with each
                // other, so none is checked against another.
                let mut stored = SystemMeta::new(meta.name.clone());
                stored.condition_of = meta.condition_of.clone();
                $(
                    meta.access.absorb(&members.$index.1.access);
                    stored.access.absorb(&members.$index.1.access);
                )*
                (($(members.$index.0,)*), stored)
            }

            fn update_archetypes((members, _): &mut Self::State, world: &World) {
                $($member::update_archetypes(&mut members.$index, world);)*
            }

            fn has_deferred((members, _): &Self::State) -> bool {
                false $(|| $member::has_deferred(&members.$index))*
            }

            fn apply_deferred(
                (members, _): &mut Self::State,
                world: &mut World,
                errors: &mut Vec<CommandError>,
            ) {
                $($member::apply_deferred(&mut members.$index, world, errors);)*
            }

            fn discard_deferred((members, _): &mut Self::State, world: &mut World) {
                $($member::discard_deferred(&mut members.$index, world);)*
            }

            unsafe fn get_param<'w, 's>(
                (members, stored): &'s mut Self::State,
                meta: &SystemMeta,
                world: UnsafeWorldCell<'w>,
                ticks: RunTicks,
            ) -> Self::Item<'w, 's> {
                refresh(stored, meta);
                ParamSet { members, meta: stored, world, ticks }
            }
        }

        impl<'w, 's, $($member: SystemParam),*> ParamSet<'w, 's, ($($member,)*)> {
            $(
                #[doc = concat!("Member ", stringify!($index), ", borrowing the set until it is dropped.")]
                pub fn $accessor(&mut self) -> SystemParamItem<'_, '_, $member> {
                    // SAFETY: the system holds every member's access for `'w` (the set's
                    // `init_state` declared it), the state is this member's, and `&mut self`
                    // keeps the returned item the only live member of the set.
                    unsafe { $member::get_param(&mut self.members.$index, self.meta, self.world, self.ticks) }
                }
            )*
        }
    };
}

param_set!((P0, p0, 0));
param_set!((P0, p0, 0), (P1, p1, 1));
param_set!((P0, p0, 0), (P1, p1, 1), (P2, p2, 2));
param_set!((P0, p0, 0), (P1, p1, 1), (P2, p2, 2), (P3, p3, 3));
param_set!((P0, p0, 0), (P1, p1, 1), (P2, p2, 2), (P3, p3, 3), (P4, p4, 4));
param_set!(
    (P0, p0, 0),
    (P1, p1, 1),
    (P2, p2, 2),
    (P3, p3, 3),
    (P4, p4, 4),
    (P5, p5, 5)
);
param_set!(
    (P0, p0, 0),
    (P1, p1, 1),
    (P2, p2, 2),
    (P3, p3, 3),
    (P4, p4, 4),
    (P5, p5, 5),
    (P6, p6, 6)
);
param_set!(
    (P0, p0, 0),
    (P1, p1, 1),
    (P2, p2, 2),
    (P3, p3, 3),
    (P4, p4, 4),
    (P5, p5, 5),
    (P6, p6, 6),
    (P7, p7, 7)
);
