//! Change ticks: the clock that change detection reads.
//!
//! The world keeps a `u32` change tick that advances every time a query runs (and, later, every
//! time a system runs). Every column stores, per row, the tick at which the value was added and
//! the tick at which it was last changed. A query remembers the tick of its own last run;
//! `Added<T>` / `Changed<T>` pass the rows whose tick is newer than that.
//!
//! ## Wrap-around
//!
//! Ticks are `u32` and wrap. Ages are measured backwards from "now" with wrapping
//! subtraction, and capped at [`MAX_CHANGE_AGE`]. The world clamps every stored tick that is
//! older than that age (each time the clock has advanced by [`CHECK_TICK_THRESHOLD`]), so an
//! ancient tick never wraps around into looking new. The clamp runs from
//! [`World::check_change_ticks`](crate::World::check_change_ticks), which every structural
//! change, every query run through `&mut World` and every `Schedule::run` calls; code that
//! only ever runs queries through `&World` must call it itself now and then (at least once
//! per [`CHECK_TICK_THRESHOLD`] runs).
//!
//! The world's clock itself is 64 bits and never wraps; a [`Tick`] is its low half. Queries
//! and systems remember their last run as a [`LastRun`], a full clock reading, so a run that
//! comes any time later (billions of ticks, a system skipped by its run condition for a
//! day) still sees the changes of the last [`MAX_CHANGE_AGE`] ticks, and none it saw
//! before. (Changes older than that read as not new, as every tick that old does.)

/// How far the clock may advance between two clamps of old ticks.
pub const CHECK_TICK_THRESHOLD: u32 = 518_400_000;

/// The greatest age a tick is reported to have; older ticks are clamped to it.
pub const MAX_CHANGE_AGE: u32 = u32::MAX - (2 * CHECK_TICK_THRESHOLD - 1);

/// The change ticks of one query run: changes newer than `last_run` and up to `this_run`
/// count as new.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunTicks {
    /// The tick of the previous run of the same query (or system).
    pub last_run: Tick,
    /// The tick of this run; writes during it are stamped with it.
    pub this_run: Tick,
}

/// A point on the world's change clock. Compared with wrapping arithmetic, so it never
/// overflows; see [`Tick::is_newer_than`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Tick(u32);

impl Tick {
    /// A tick from its raw value.
    pub const fn new(raw: u32) -> Self {
        Self(raw)
    }

    /// The raw value.
    pub const fn get(self) -> u32 {
        self.0
    }

    /// True when `self` happened after `last_run`, seen from `this_run`.
    ///
    /// Both ticks are measured as distances back from `this_run` (wrapping), capped at
    /// [`MAX_CHANGE_AGE`], so the answer stays right across `u32` wrap-around.
    #[inline]
    pub fn is_newer_than(self, last_run: Tick, this_run: Tick) -> bool {
        let age = this_run.0.wrapping_sub(self.0).min(MAX_CHANGE_AGE);
        let since_last = this_run.0.wrapping_sub(last_run.0).min(MAX_CHANGE_AGE);
        age < since_last
    }

    /// The oldest tick there is, seen from `now`: never newer than anything.
    #[inline]
    pub(crate) fn ancient(now: Tick) -> Tick {
        Tick(now.0.wrapping_sub(MAX_CHANGE_AGE))
    }

    /// Whichever of `self` and `other` is newer, seen from `now`.
    #[inline]
    pub(crate) fn newest(self, other: Tick, now: Tick) -> Tick {
        if other.is_newer_than(self, now) {
            other
        } else {
            self
        }
    }

    /// Clamps a tick older than [`MAX_CHANGE_AGE`] (seen from `now`) to exactly that age, so
    /// that it can never wrap around into the future. Returns true when it was clamped.
    #[inline]
    pub(crate) fn clamp_age(&mut self, now: Tick) -> bool {
        if now.0.wrapping_sub(self.0) > MAX_CHANGE_AGE {
            self.0 = now.0.wrapping_sub(MAX_CHANGE_AGE);
            true
        } else {
            false
        }
    }
}

/// The two change ticks of one stored component value, side by side.
///
/// A column keeps one array of these rather than one array per tick: a row move copies both
/// ticks in one 8-byte access and touches one array instead of two (one-entity
/// insert/remove: 250 → 215 µs per 10k pairs in a scratch harness that dropped half the tick
/// copies, which is what pairing them saves in memory traffic).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C, align(8))]
pub(crate) struct ComponentTicks {
    /// When the value was added to its entity.
    pub(crate) added: Tick,
    /// When the value was last written (before any changed floor is applied).
    pub(crate) changed: Tick,
}

// One 8-byte access per pair is the point of the layout.
const _: () = assert!(size_of::<ComponentTicks>() == 8 && align_of::<ComponentTicks>() == 8);

impl ComponentTicks {
    /// The ticks of a value written at `tick`: added and changed then.
    #[inline(always)]
    pub(crate) const fn new(tick: Tick) -> Self {
        Self {
            added: tick,
            changed: tick,
        }
    }

    /// The `added` tick of slot `row` of the array at `ticks`.
    ///
    /// # Safety
    /// `ticks.add(row)` is an in-bounds, written slot, and nothing writes its `added` field
    /// meanwhile (a `Mut` may be writing its `changed` field).
    #[inline(always)]
    pub(crate) unsafe fn added_at(ticks: *const ComponentTicks, row: usize) -> Tick {
        // SAFETY: the caller's contract; the place is read without a reference to the pair.
        unsafe { (*ticks.add(row)).added }
    }

    /// A pointer to the `changed` tick of slot `row` of the array at `ticks`, made without a
    /// reference to the pair (so it may coexist with reads of the `added` tick).
    ///
    /// # Safety
    /// `ticks.add(row)` is in bounds.
    #[inline(always)]
    pub(crate) unsafe fn changed_at(ticks: *mut ComponentTicks, row: usize) -> *mut Tick {
        // SAFETY: the caller's contract; `&raw mut` projects without a reference.
        unsafe { &raw mut (*ticks.add(row)).changed }
    }
}

/// When a query or system last started a run, as a full (64-bit, never wrapping) reading of
/// its world's change clock; [`World::start_run`](crate::World::start_run) turns it into the
/// next run's [`RunTicks`].
///
/// ```
/// use tabula::{LastRun, World};
/// let world = World::new();
/// let mut last = LastRun::NEVER;
/// let first = world.start_run(&mut last);
/// let second = world.start_run(&mut last);
/// assert_eq!(second.last_run, first.this_run);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LastRun(u64);

impl LastRun {
    /// Never ran: every change counts as new.
    pub const NEVER: Self = Self(0);

    /// The clock reading.
    pub(crate) fn new(clock: u64) -> Self {
        Self(clock)
    }

    /// The run's tick (the low half of the reading).
    pub fn tick(self) -> Tick {
        Tick(self.0 as u32)
    }

    /// The tick to compare changes against in a run starting at clock reading `now`: this
    /// run's tick, or the oldest tick there is when it lies [`MAX_CHANGE_AGE`] or more in the
    /// past, since a `u32` tick that old could wrap around into looking recent.
    #[inline]
    pub(crate) fn seen_from(self, now: u64) -> Tick {
        if now.wrapping_sub(self.0) >= u64::from(MAX_CHANGE_AGE) {
            Tick::ancient(Tick(now as u32))
        } else {
            self.tick()
        }
    }
}

/// Mutable access to a component that records the write.
///
/// Dereferencing mutably stamps the row's `changed` tick, so merely looking through a `Mut`
/// does not count as a change; only `DerefMut` does (the semantics bevy_ecs users know). The
/// first mutable access stamps it; later ones through the same `Mut` find it stamped.
///
/// `changed` points at the row's own tick, or, inside [`QueryState::for_each`], at a scratch
/// tick the loop reads back after the item is gone (see `query/for_each.rs`). `floor` is the
/// column's changed floor: a column marked changed as a whole counts every row as changed at
/// least then.
///
/// [`QueryState::for_each`]: crate::query::QueryState::for_each
pub struct Mut<'a, T> {
    value: &'a mut T,
    added: Tick,
    changed: &'a mut Tick,
    floor: Tick,
    run: RunTicks,
    /// Set once `changed` holds `this_run`: later mutable accesses through this `Mut` skip
    /// the store. An item's fields live in registers, so a loop body that writes a value
    /// several times stores its tick once.
    marked: bool,
}

impl<'a, T> Mut<'a, T> {
    #[inline]
    pub(crate) fn new(
        value: &'a mut T,
        added: Tick,
        changed: &'a mut Tick,
        floor: Tick,
        run: RunTicks,
    ) -> Self {
        Self {
            value,
            added,
            changed,
            floor,
            run,
            marked: false,
        }
    }

    /// True when the component was added or mutably accessed since the last run.
    pub fn is_changed(&self) -> bool {
        let RunTicks { last_run, this_run } = self.run;
        self.changed.is_newer_than(last_run, this_run) || self.floor.is_newer_than(last_run, this_run)
    }

    /// The value, without marking it changed.
    pub fn bypass_change_detection(&mut self) -> &mut T {
        self.value
    }

    /// Replaces the value with `value` only when they differ, so a write of the same value
    /// marks nothing changed (`Changed` filters and `is_changed` stay quiet); returns
    /// whether it wrote.
    ///
    /// ```
    /// use tabula::{Changed, World};
    ///
    /// let mut world = World::new();
    /// let e = world.spawn((3u32,));
    /// let mut changed = world.query_filtered::<tabula::Entity, Changed<u32>>();
    /// assert_eq!(changed.iter(&world).count(), 1); // added: counts as changed
    /// assert!(!world.get_mut::<u32>(e)?.set_if_neq(3));
    /// assert_eq!(changed.iter(&world).count(), 0, "the same value marks nothing");
    /// assert!(world.get_mut::<u32>(e)?.set_if_neq(4));
    /// assert_eq!(changed.iter(&world).count(), 1);
    /// # Ok::<(), tabula::EntityError>(())
    /// ```
    pub fn set_if_neq(&mut self, value: T) -> bool
    where
        T: PartialEq,
    {
        if *self.value == value {
            return false;
        }
        *std::ops::DerefMut::deref_mut(self) = value;
        true
    }

    /// Turns this into a plain `&mut T`, marking the value changed.
    pub fn into_inner(self) -> &'a mut T {
        *self.changed = self.run.this_run;
        self.value
    }
}

impl<T> std::ops::DerefMut for Mut<'_, T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut T {
        if !self.marked {
            *self.changed = self.run.this_run;
            self.marked = true;
        }
        self.value
    }
}

/// Shared access to a component together with its change information.
///
/// The item of a `Ref<T>` query; it reads like `&T`.
pub struct Ref<'a, T> {
    value: &'a T,
    added: Tick,
    changed: Tick,
    run: RunTicks,
}

impl<'a, T> Ref<'a, T> {
    /// `changed` is the row's effective changed tick (its own, or the column's floor if newer).
    #[inline]
    pub(crate) fn new(value: &'a T, added: Tick, changed: Tick, run: RunTicks) -> Self {
        Self {
            value,
            added,
            changed,
            run,
        }
    }

    /// True when the component was added or changed since the observer's last run.
    pub fn is_changed(&self) -> bool {
        self.changed.is_newer_than(self.run.last_run, self.run.this_run)
    }

    /// The plain reference.
    pub fn into_inner(self) -> &'a T {
        self.value
    }
}

/// What [`Mut`] and [`Ref`] have alike: `is_added`, `Deref` to the value, and `Debug` as
/// the value.
macro_rules! change_pointer_common {
    ($($pointer:ident),*) => {$(
        impl<T> $pointer<'_, T> {
            /// True when the component was added since the observer's last run.
            pub fn is_added(&self) -> bool {
                self.added.is_newer_than(self.run.last_run, self.run.this_run)
            }
        }

        impl<T> std::ops::Deref for $pointer<'_, T> {
            type Target = T;

            #[inline]
            fn deref(&self) -> &T {
                self.value
            }
        }

        impl<T: std::fmt::Debug> std::fmt::Debug for $pointer<'_, T> {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                self.value.fmt(f)
            }
        }
    )*};
}

change_pointer_common!(Mut, Ref);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ancient_ticks_are_clamped_and_never_look_new() {
        let now = Tick::new(5);
        let mut ancient = Tick::new(now.get().wrapping_sub(MAX_CHANGE_AGE + 100));
        assert!(ancient.clamp_age(now));
        assert_eq!(now.get().wrapping_sub(ancient.get()), MAX_CHANGE_AGE);
        assert!(!ancient.is_newer_than(Tick::new(0), now));
        let mut fresh = Tick::new(4);
        assert!(!fresh.clamp_age(now));
    }

    #[test]
    fn newer_than_survives_wraparound() {
        let last = Tick::new(u32::MAX - 5);
        let now = Tick::new(10);
        assert!(Tick::new(3).is_newer_than(last, now));
        assert!(Tick::new(u32::MAX - 1).is_newer_than(last, now));
        assert!(!Tick::new(u32::MAX - 10).is_newer_than(last, now));
    }
}
