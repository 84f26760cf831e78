//! The atomics and locks the concurrent parts of the crate are written against.
//!
//! Under `--cfg loom` these are loom's model-checked types, so the same code that ships is
//! the code loom explores; otherwise they are `std`'s. Only protocols that must be checked by
//! loom import from here.

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicBool, AtomicU64, Ordering};
#[cfg(loom)]
pub(crate) use loom::sync::{Arc, Mutex};
#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
#[cfg(not(loom))]
pub(crate) use std::sync::{Arc, Mutex};
