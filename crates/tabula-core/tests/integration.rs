//! tabula-core's integration tests, one module per file beside this one (with `common`,
//! their shared helpers), built as one test binary. Under Miri each test binary took about
//! 30 s to build, 33 of them about a quarter of CI's Miri step; one builds once per Miri
//! worker, and links once natively and under the sanitizers. Run one file's tests with its
//! module path: `cargo test -p tabula-core --test integration row_moves::` (a path filter
//! matches anywhere, so `model::` also picks `change_model::`; add `--skip change_model::`).
//! Two files are binaries of their own: `loom_entities.rs` compiles to nothing without
//! `--cfg loom`, and to loom's atomics with it; `world_tags.rs` counts the tags of every
//! live world, so no other test may make worlds in its process meanwhile.

mod common;

mod bundle_keys;
mod change_model;
mod commands_events_hierarchy;
mod disabled;
mod dynamic_components;
mod dynamic_query_storage;
mod entity_state;
mod fast_paths;
mod hierarchy_model;
mod hooks;
mod index_exhaustion;
mod inspect;
mod model;
mod plan_probes;
mod relationship;
mod removals;
mod required;
mod row_moves;
mod save_dynamic;
mod save_load;
mod save_remap;
mod save_sparse;
mod slots_and_resource_scope;
mod sparse;
mod sparse_query;
mod sparse_views;
mod sqlite;
mod template_file;
mod templates;
mod world_api;
mod wrong_world;
