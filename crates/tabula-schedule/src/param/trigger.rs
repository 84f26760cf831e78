//! `Trigger<E>`: the event an observer runs for (see [`crate::observer`]).

use std::any::type_name;
use std::marker::PhantomData;
use std::ops::Deref;
use std::sync::Arc;

use tabula_core::{Entity, Event, TriggerState, UnsafeWorldCell, World};

use super::{RunTicks, SystemMeta, SystemParam};

/// The event an observer runs for, its target, and control over its propagation. The
/// parameter that makes a system an observer of `E` (see
/// [`WorldObserve::observe`](crate::WorldObserve::observe)); it dereferences to the event.
///
/// ```
/// use tabula::prelude::*;
///
/// struct Hit(u32);
/// impl tabula::Event for Hit {}
/// struct Hp(u32);
///
/// fn take_hit(trigger: Trigger<Hit>, mut hp: Query<&mut Hp>) {
///     if let Ok(mut hp) = hp.get_mut(trigger.target()) {
///         hp.0 = hp.0.saturating_sub(trigger.0);
///     }
/// }
///
/// let mut world = World::new();
/// let ship = world.spawn((Hp(10),));
/// world.observe(take_hit);
/// world.trigger_targets(Hit(4), [ship]);
/// assert_eq!(world.get::<Hp>(ship).unwrap().0, 6);
/// ```
pub struct Trigger<E: Event> {
    state: Arc<TriggerState>,
    _event: PhantomData<fn() -> E>,
}

impl<E: Event> Trigger<E> {
    /// The event.
    pub fn event(&self) -> &E {
        self.state
            .event::<E>()
            .expect("checked when the parameter was fetched")
    }

    /// The entity the event targets now: for a lifecycle event, the entity whose component
    /// changed; for a propagating event, the ancestor it has reached.
    ///
    /// # Panics
    /// For an event triggered without a target ([`World::trigger`]); use
    /// [`try_target`](Self::try_target) when both can happen.
    #[track_caller]
    pub fn target(&self) -> Entity {
        self.state.target().unwrap_or_else(|| {
            panic!(
                "Trigger<{}>::target: the event was triggered without a target (World::trigger); \
                 use try_target, or trigger it with trigger_targets",
                type_name::<E>()
            )
        })
    }

    /// The entity the event targets now, if it has one.
    pub fn try_target(&self) -> Option<Entity> {
        self.state.target()
    }

    /// The entity the event was triggered for (where a propagating event started).
    pub fn original_target(&self) -> Option<Entity> {
        self.state.original_target()
    }

    /// Sets whether the event goes on to the target's parent once this target's observers
    /// ran (`false` stops a propagating event; see [`Event::AUTO_PROPAGATE`]).
    pub fn propagate(&self, propagate: bool) {
        self.state.propagate(propagate);
    }
}

impl<E: Event> Deref for Trigger<E> {
    type Target = E;

    fn deref(&self) -> &E {
        self.event()
    }
}

// SAFETY: declares no access: the parameter reads only the world's trigger stack, which the
// world changes only around an observer's run, never during it (observers run one at a
// time, with the world exclusively borrowed by the trigger).
unsafe impl<E: Event> SystemParam for Trigger<E> {
    type State = ();
    type Item<'w, 's> = Trigger<E>;

    fn init_state(world: &mut World, meta: &mut SystemMeta) {
        meta.set_event_key(E::observer_key(world));
    }

    unsafe fn get_param<'w, 's>(
        _: &'s mut (),
        meta: &SystemMeta,
        world: UnsafeWorldCell<'w>,
        _: RunTicks,
    ) -> Trigger<E> {
        // SAFETY: only the trigger stack is read (see above).
        let current = unsafe { world.world() }.current_trigger();
        match current.filter(|state| state.event::<E>().is_some()) {
            Some(state) => Trigger {
                state: Arc::clone(state),
                _event: PhantomData,
            },
            None => panic!(
                "{}: Trigger<{}> is only given to an observer of that event; register the system \
                 with World::observe instead of adding it to a schedule",
                meta.describe(),
                type_name::<E>()
            ),
        }
    }
}
