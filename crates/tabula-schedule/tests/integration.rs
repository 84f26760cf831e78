//! tabula-schedule's integration tests, one module per file beside this one, built as one
//! test binary: 35 binaries each linked the whole crate graph (in the test step, and again
//! instrumented in CI's sanitizer steps), where one links it once. Run one file's tests
//! with its module path: `cargo test -p tabula-schedule --test integration change_ticks::`.

mod aborted_runs;
mod change_ticks;
mod command_conveniences;
mod command_error_policy;
mod condition_structure;
mod conditions;
mod disabled;
mod entity_lanes;
mod explain;
mod frame;
mod frame_determinism;
mod insertion_order;
mod observers;
mod one_shot;
mod parallel_commands;
mod parallel_order;
mod param_set;
mod pipe;
mod pipe_structure;
mod plan_probes;
mod read_only_views;
mod remove_systems;
mod removed_components;
mod resource_ticks;
mod save_replay;
mod schedule;
mod scheduler_regressions;
mod scratch;
mod set_conditions;
mod sparse_access;
mod states;
mod sync_points;
mod system_state;
mod trace;
mod wrong_world;
