//! The synchronisation primitives the executor's protocol is written against: loom's under
//! `--cfg loom` (so the shipped protocol is the model-checked one), `std`'s otherwise.

#[cfg(loom)]
pub(crate) use loom::sync::Arc;
#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
#[cfg(not(loom))]
pub(crate) use std::sync::Arc;
#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

#[cfg(loom)]
pub(crate) use loom::cell::UnsafeCell;

/// `std`'s `UnsafeCell` with loom's interface (`with_mut`), so that loom can check that
/// accesses through it never overlap.
#[cfg(not(loom))]
#[derive(Debug)]
pub(crate) struct UnsafeCell<T>(std::cell::UnsafeCell<T>);

#[cfg(not(loom))]
impl<T> UnsafeCell<T> {
    pub(crate) fn new(value: T) -> Self {
        Self(std::cell::UnsafeCell::new(value))
    }

    /// Calls `f` with a pointer to the value.
    #[inline]
    pub(crate) fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
        f(self.0.get())
    }
}

/// A number that tells the calling thread from every other thread alive: the address of a
/// thread-local.
pub(crate) fn thread_key() -> usize {
    #[cfg(not(loom))]
    std::thread_local! {
        static KEY: u8 = const { 0 };
    }
    #[cfg(loom)]
    loom::thread_local! {
        static KEY: u8 = 0;
    }
    KEY.with(|key| std::ptr::from_ref(key) as usize)
}

/// The steps of a busy wait: `crossbeam-utils`' exponential backoff (spins, then yields the
/// processor); under loom every step yields, so that loom explores the other threads.
#[cfg(not(loom))]
pub(crate) use crossbeam_utils::Backoff;

/// The steps of a busy wait; under loom every step yields, so that loom explores the other
/// threads.
#[cfg(loom)]
#[derive(Default)]
pub(crate) struct Backoff;

#[cfg(loom)]
impl Backoff {
    /// A fresh wait.
    pub(crate) fn new() -> Self {
        Self
    }

    /// Starts the wait over.
    pub(crate) fn reset(&self) {}

    /// One step of the wait.
    pub(crate) fn snooze(&self) {
        loom::thread::yield_now();
    }
}
