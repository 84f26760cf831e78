//! Workloads shared by the bench targets and the crate's tests, so that what a bench times
//! is also checked for correctness by `cargo test`.

pub mod game_frame;
