//! # tabula-schedule: systems and the parallel scheduler
//!
//! This crate will hold the `System` trait, system parameters, the schedule graph and the
//! executors. It depends on `tabula-core` only through the access systems declare.
//!
//! For now it re-exports nothing of its own; see the tabula issue tracker for the plan.
