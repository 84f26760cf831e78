//! Change ticks: the clock that change detection reads.
//!
//! The world keeps a `u32` change tick that advances as systems run. Every column stores, per
//! row, the tick at which the value was added and the tick at which it was last changed.

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
    /// Both ticks are measured as distances back from `this_run`, so the answer stays right
    /// across `u32` wrap-around as long as neither is more than `u32::MAX / 2` ticks old.
    #[inline]
    pub fn is_newer_than(self, last_run: Tick, this_run: Tick) -> bool {
        let age = this_run.0.wrapping_sub(self.0);
        let since_last = this_run.0.wrapping_sub(last_run.0);
        age < since_last
    }
}

/// Mutable access to a component that records the write.
///
/// Dereferencing mutably stamps the row's `changed` tick, so merely looking through a `Mut`
/// does not count as a change; only `DerefMut` does (the semantics bevy_ecs users know).
pub struct Mut<'a, T> {
    value: &'a mut T,
    added: Tick,
    changed: &'a mut Tick,
    last_run: Tick,
    this_run: Tick,
}

impl<'a, T> Mut<'a, T> {
    pub(crate) fn new(value: &'a mut T, added: Tick, changed: &'a mut Tick, last_run: Tick, this_run: Tick) -> Self {
        Self {
            value,
            added,
            changed,
            last_run,
            this_run,
        }
    }

    /// True when the component was added since the last run of the observer.
    pub fn is_added(&self) -> bool {
        self.added.is_newer_than(self.last_run, self.this_run)
    }

    /// True when the component was added or mutably accessed since the last run.
    pub fn is_changed(&self) -> bool {
        self.changed.is_newer_than(self.last_run, self.this_run)
    }

    /// The value, without marking it changed.
    pub fn bypass_change_detection(&mut self) -> &mut T {
        self.value
    }

    /// Turns this into a plain `&mut T`, marking the value changed.
    pub fn into_inner(self) -> &'a mut T {
        *self.changed = self.this_run;
        self.value
    }
}

impl<T> std::ops::Deref for Mut<'_, T> {
    type Target = T;

    #[inline]
    fn deref(&self) -> &T {
        self.value
    }
}

impl<T> std::ops::DerefMut for Mut<'_, T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut T {
        *self.changed = self.this_run;
        self.value
    }
}

impl<T: std::fmt::Debug> std::fmt::Debug for Mut<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.value.fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn newer_than_survives_wraparound() {
        let last = Tick::new(u32::MAX - 5);
        let now = Tick::new(10);
        assert!(Tick::new(3).is_newer_than(last, now));
        assert!(Tick::new(u32::MAX - 1).is_newer_than(last, now));
        assert!(!Tick::new(u32::MAX - 10).is_newer_than(last, now));
    }
}
