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
