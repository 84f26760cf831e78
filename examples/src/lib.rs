//! Example programs for tabula, as a library so that tests can run them too.
//!
//! * [`asteroids`]: the flagship — a headless Asteroids on a parallel schedule.
//! * [`arena`]: a server hosting arena matches, one world each, all run by one schedule
//!   that moves from world to world.
//! * [`particles`]: hundreds of thousands of particles spawned and despawned through
//!   `Commands`, with disjoint systems in parallel and `par_for_each`.
//! * [`hierarchy`]: a solar system of parents and children, with transform propagation,
//!   re-parenting and recursive despawn.
//! * [`combat`]: a turn-based battle driven by events, resources, `Local` state, run
//!   conditions and ordered sets.
//! * [`skirmish`]: two squads in an arena — an observer-maintained spatial index, a
//!   many-to-many "targets" relation and required components.
//! * [`rng`]: the seeded generator the examples share.

pub mod arena;
pub mod asteroids;
pub mod cli;
pub mod combat;
pub mod hierarchy;
pub mod particles;
pub mod rng;
pub mod skirmish;
