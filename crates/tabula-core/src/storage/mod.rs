//! Type-erased, column-major storage: the only place that allocates, moves and frees raw
//! component memory.
//!
//! A [`Table`] holds the rows of one archetype: an `entities` vector plus one [`Column`] per
//! component type. Row `r` of every column belongs to `entities[r]`. The table owns the length
//! and capacity; the columns are raw buffers sized by it. Everything outside this module works
//! with safe methods on `Table`, or with `unsafe` ones whose preconditions are row bounds and
//! the column's type.

mod column;
mod drop_each;
mod sparse;
mod table;

pub(crate) use column::Column;
pub(crate) use drop_each::drop_each;
pub(crate) use sparse::{SparseSet, SparseSets};
pub(crate) use table::{NO_COLUMN, TYPED_SLOTS, Table};
