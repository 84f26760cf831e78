//! [`UnsafeWorldCell`]: the one capability through which parts of the world are borrowed
//! independently (several queries of one system, or batches of one parallel query).
//!
//! Safe code gets `&World` or `&mut World` and the borrow checker does the rest. Where one
//! `&mut World` must be split — different queries touching different columns, different
//! threads touching different rows — the split goes through this type, and each place that
//! does it states, in a `SAFETY` comment, which access it was granted (usually: the
//! [`Access`](crate::Access) that was checked when the query was built).

use std::marker::PhantomData;

use crate::change::RunTicks;
use crate::change::{LastRun, Tick};

use super::World;

/// A world pointer that may be shared by code that has agreed, out of band, which parts of
/// the world each piece touches.
#[derive(Clone, Copy)]
pub struct UnsafeWorldCell<'w> {
    world: *mut World,
    /// [`MUTABLE`] when the cell came from a `&mut World`, or'ed with the tick
    /// [`start_run`](Self::start_run) gives, reserved ahead by an executor ([`NO_RUN_TICK`]
    /// when runs advance the world's clock). One word, so that the cell stays two words and
    /// is passed in registers: a third field made every system start cost ~25% more
    /// (`sched_scale` in `benches/benches/schedule.rs`).
    bits: u64,
    _marker: PhantomData<&'w World>,
}

/// The bit of `bits` that says the cell allows mutation.
const MUTABLE: u64 = 1 << 63;
/// The run tick bits when none was reserved (the clock never gets that far: 2^63 ticks).
const NO_RUN_TICK: u64 = MUTABLE - 1;

// SAFETY: the cell is a capability, not access: every use goes through an `unsafe` method
// whose caller guarantees the access is not aliased. `World` itself is `Send + Sync`.
unsafe impl Send for UnsafeWorldCell<'_> {}
// SAFETY: as above.
unsafe impl Sync for UnsafeWorldCell<'_> {}

impl<'w> UnsafeWorldCell<'w> {
    /// A cell with full (mutable) access, for the duration of the `&mut` borrow.
    pub fn new_mutable(world: &'w mut World) -> Self {
        Self {
            world,
            bits: MUTABLE | NO_RUN_TICK,
            _marker: PhantomData,
        }
    }

    /// A cell with read-only access.
    pub fn new_readonly(world: &'w World) -> Self {
        Self {
            world: std::ptr::from_ref(world).cast_mut(),
            bits: NO_RUN_TICK,
            _marker: PhantomData,
        }
    }

    /// True when this cell came from a `&mut World`, so component data may be written.
    pub fn allows_mutation(self) -> bool {
        self.bits & MUTABLE != 0
    }

    /// Shared access to the world's structure (archetypes, entity locations, registry).
    ///
    /// # Safety
    /// No `&mut World` obtained from this cell may be live. Component *values* may still be
    /// written through the column pointers of other holders of this cell; this reference
    /// must not be used to read values those holders write.
    #[inline]
    pub unsafe fn world(self) -> &'w World {
        // SAFETY: the pointer came from a live reference for `'w`; the caller guarantees no
        // `&mut World` from this cell is live.
        unsafe { &*self.world }
    }

    /// Exclusive access to the whole world.
    ///
    /// # Safety
    /// The cell was made by [`new_mutable`](Self::new_mutable), and nothing else derived
    /// from it is in use while the returned reference lives.
    #[inline]
    pub unsafe fn world_mut(self) -> &'w mut World {
        debug_assert!(self.allows_mutation(), "world_mut on a read-only UnsafeWorldCell");
        // SAFETY: the caller guarantees exclusivity, and the pointer came from `&'w mut`.
        unsafe { &mut *self.world }
    }

    /// Advances the world's change tick and returns the tick of the run that starts now.
    #[inline]
    pub fn increment_change_tick(self) -> Tick {
        // SAFETY: only the atomic change tick is touched, through a shared reference, which
        // cannot conflict with any other holder of this cell.
        unsafe { &*self.world }.increment_change_tick()
    }

    /// [`World::reserve_change_ticks`]: reserves `count` ticks and returns the first.
    #[inline]
    pub fn reserve_change_ticks(self, count: u64) -> u64 {
        // SAFETY: as in `increment_change_tick`.
        unsafe { &*self.world }.reserve_change_ticks(count)
    }

    /// [`World::start_run`]: advances the change clock and returns the ticks of a run whose
    /// previous run is `last_run`, recording the new one there. A cell given a run tick
    /// ([`with_run_tick`](Self::with_run_tick)) starts the run at that tick instead and
    /// leaves the clock alone.
    #[inline]
    pub fn start_run(self, last_run: &mut LastRun) -> RunTicks {
        let run_tick = self.bits & !MUTABLE;
        if run_tick == NO_RUN_TICK {
            // SAFETY: as in `increment_change_tick`.
            unsafe { &*self.world }.start_run(last_run)
        } else {
            World::run_ticks(last_run, run_tick)
        }
    }

    /// This cell, with runs started through it ([`start_run`](Self::start_run)) at `tick`,
    /// which the caller reserved with [`World::reserve_change_ticks`] (a tick that was not
    /// reserved breaks change detection, not memory safety: writes stamped with it may be
    /// seen twice or missed). A schedule gives each system its tick this way.
    ///
    /// ```
    /// use tabula::{LastRun, UnsafeWorldCell, World};
    /// let mut world = World::new();
    /// let first = world.reserve_change_ticks(2);
    /// let cell = UnsafeWorldCell::new_mutable(&mut world).with_run_tick(first + 1);
    /// let mut last_run = LastRun::NEVER;
    /// let ticks = cell.start_run(&mut last_run);
    /// assert_eq!(u64::from(ticks.this_run.get()), first + 1);
    /// ```
    #[inline]
    #[must_use]
    pub fn with_run_tick(self, tick: u64) -> Self {
        debug_assert!(tick < NO_RUN_TICK, "a change tick beyond 2^63 - 1");
        Self {
            bits: (self.bits & MUTABLE) | tick,
            ..self
        }
    }

    /// This cell with its run tick moved `by` ticks on, for the next of several runs that
    /// one system makes (a pipe's second part, a system after its run conditions); a cell
    /// without a run tick is returned as it is.
    #[inline]
    #[must_use]
    pub fn with_later_run_tick(self, by: u64) -> Self {
        let run_tick = self.bits & !MUTABLE;
        if run_tick == NO_RUN_TICK {
            self
        } else {
            self.with_run_tick(run_tick + by)
        }
    }

    /// This cell with its run tick moved `by` ticks back, to the tick of an earlier run
    /// of the same segment (a set's run condition, which runs once for all its systems at
    /// the tick its first system gave it); a cell without a run tick is returned as it is.
    #[inline]
    #[must_use]
    pub fn with_earlier_run_tick(self, by: u64) -> Self {
        let run_tick = self.bits & !MUTABLE;
        if run_tick == NO_RUN_TICK {
            self
        } else {
            self.with_run_tick(run_tick - by)
        }
    }

    /// The world's current change tick.
    #[inline]
    pub fn change_tick(self) -> Tick {
        // SAFETY: as in `increment_change_tick`.
        unsafe { &*self.world }.change_tick()
    }
}
