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
    mutable: bool,
    _marker: PhantomData<&'w World>,
}

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
            mutable: true,
            _marker: PhantomData,
        }
    }

    /// A cell with read-only access.
    pub fn new_readonly(world: &'w World) -> Self {
        Self {
            world: std::ptr::from_ref(world).cast_mut(),
            mutable: false,
            _marker: PhantomData,
        }
    }

    /// True when this cell came from a `&mut World`, so component data may be written.
    pub fn allows_mutation(self) -> bool {
        self.mutable
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
        debug_assert!(self.mutable, "world_mut on a read-only UnsafeWorldCell");
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

    /// [`World::start_run`]: advances the change clock and returns the ticks of a run whose
    /// previous run is `last_run`, recording the new one there.
    #[inline]
    pub fn start_run(self, last_run: &mut LastRun) -> RunTicks {
        // SAFETY: as in `increment_change_tick`.
        unsafe { &*self.world }.start_run(last_run)
    }

    /// The world's current change tick.
    #[inline]
    pub fn change_tick(self) -> Tick {
        // SAFETY: as in `increment_change_tick`.
        unsafe { &*self.world }.change_tick()
    }
}
