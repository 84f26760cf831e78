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

/// One step of a busy wait; `step` counts the steps taken so far. Spins briefly, then yields
/// the processor (loom must be told on every step, to explore the other threads).
#[inline]
pub(crate) fn backoff(step: &mut u32) {
    #[cfg(loom)]
    loom::thread::yield_now();
    #[cfg(not(loom))]
    if *step < 64 {
        std::hint::spin_loop();
    } else {
        std::thread::yield_now();
    }
    *step = step.saturating_add(1);
}
