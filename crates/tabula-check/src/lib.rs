//! The checking machinery behind tabula's fuzzer, its model-based tests and its soak: one
//! reference model, one set of component types, one RNG and one checker, which
//! tabula-core's model test (`crates/tabula-core/tests/model.rs`, a thin driver of
//! [`Harness`] under Miri too) shares with the fuzz target, this crate's seeded sequences and
//! the soak.
//!
//! * [`Model`] is the naive reference: a map from entity to a row of optional component
//!   values, plus the events and removal logs the world should hold, the observers (which
//!   are model entities too, see [`links`]) and the runs they should log, the pairs of
//!   [`Rel`] and the parent links.
//! * [`Op`] is one call (or a few) on the public API — spawns of several bundle shapes,
//!   `spawn_at`, inserts, removes, despawns, `get_mut` writes, removal tracking, passes of
//!   queries kept across steps (`iter`, `get`, `for_each`, `for_each_chunk`,
//!   `par_for_each`), schedule runs whose systems record commands, panic or send and read
//!   events (on either of two worlds, under run conditions the op opens or closes),
//!   direct event calls, and observers, relations and the hierarchy: observers of
//!   `OnAdd` / `OnInsert` / `OnReplace` / `OnRemove` / `OnDespawn` of a model kind or of
//!   the user event [`Poke`] (global or watching one entity) that log their runs, their
//!   despawn, `trigger` / `trigger_targets` propagating up `Parent`, `set_parent` /
//!   `remove_parent` / `despawn_recursive`, and `relate` / `unrelate` / `unrelate_all` of
//!   [`Rel`] (see [`links`]). Ops decode from bytes, so a libFuzzer input and a seeded random
//!   stream ([`Rng`]) drive the same code; [`Op::encode`] writes them back, and
//!   [`direct_op`] draws a weighted mix of the direct ones for drivers that pick their own.
//! * [`Harness`] applies an op to a world and to its model, checking each result and that
//!   the op panicked exactly when it had to (components whose `Drop` panics, systems that
//!   panic). It keeps two worlds, each with its own model, and the same schedules move
//!   between them (see [`harness`]).
//! * [`Checker`] compares everything observable with the model: every live entity's
//!   components and values, dead ids, `World::view`, archetype contents, queries of every
//!   kind, the removal logs, and the drop accounting of the counting types; the harness
//!   adds each world's events, the holders of `Name` its hooks kept, its observers' log,
//!   every entity's `Rel` targets and sources, parent and children, and its reservation
//!   lanes and entity slots, which must stay
//!   bounded however often schedules move between the worlds.
//!
//! The fuzz target (`fuzz/fuzz_targets/api.rs`) calls [`run_bytes`]; the regression corpus
//! (`corpus/`) and the seeded sequences run through the same function in this crate's tests;
//! the soak (`src/bin/soak.rs`) drives a [`Harness`] for hours with sampled and full checks.

mod check;
mod components;
pub mod harness;
pub mod links;
mod mix;
mod model;
mod ops;
mod source;

pub use check::{Checker, EXTRAS, MAX_ARCHETYPES, Shape, check_dead, check_entity, extra_name, shape};
pub use components::{
    BOMB, Bomb, ExpectedPanic, Hp, KINDS, ModelBundle, ModelComponent, Name, Pos, SHAPES, Shared, Small, Tag,
    Tracked, Value, Wide, kind_name, shape_kinds,
};
pub use harness::{
    Harness, MAX_OPS_PER_INPUT, Ping, Stats, decode_all, install_panic_hook, run_bytes, run_seed,
};
pub use links::{ObserverModel, Poke, Rel, Seen, Watch};
pub use mix::{direct_op, reaction_op};
pub use model::{
    EMPTY_ROW, EXTRA_CHILDREN, EXTRA_OBSERVER, EXTRA_PARENT, EXTRA_RELATED, EventModel, Model, Row, row_mask,
};
pub use ops::{
    CmdOp, CmdTarget, MAX_DECODED_CMDS, MAX_OBSERVERS, Op, PAR_QUERY, QUERIES, Target, encode_all,
};
pub use source::{Bytes, Rng, Source};
