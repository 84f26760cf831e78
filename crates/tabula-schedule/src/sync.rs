//! The atomics the executor's protocol is written against: loom's under `--cfg loom` (so the
//! shipped protocol is the model-checked one), `std`'s otherwise.

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
