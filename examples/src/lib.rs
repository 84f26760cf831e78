//! Example programs for tabula, as a library so that tests can run them too.
//!
//! * [`asteroids`]: the flagship — a headless Asteroids on a parallel schedule.
//! * [`rng`]: the seeded generator the examples share.

pub mod asteroids;
pub mod rng;
