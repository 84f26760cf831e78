//! Queries: cached, typed, change-aware iteration over the entities that match.
//!
//! ## How a query finds and walks its archetypes
//!
//! A [`QueryState<D, F>`] is built once. `D` (the data, e.g. `(&mut Position, &Velocity)`)
//! and `F` (the filter, e.g. `Without<Frozen>`) resolve their component ids, and their
//! [`Access`] is checked so that a query can never alias itself. The state then tests every
//! archetype once and remembers the matching ones with the column index of each fetched
//! component. Later uses test only archetypes created since.
//!
//! Iterating walks the matched list; for each non-empty archetype it turns the cached column
//! indices into raw column pointers (one `fetch_archetype` call) and then loops over rows,
//! where fetching an item is one pointer offset per term. Whole passes (`for_each`,
//! `for_each_chunk`) skip even that walk once the world has settled: the state keeps a *run
//! plan*, the pointers of every non-empty archetype in one array, valid while the world's
//! tables keep their shape (`plan.rs`). Filters made only of `With` /
//! `Without` are decided per archetype and cost nothing per row; `Added` / `Changed` read one
//! tick per row.
//! Entities with a [`Disabled`](crate::Disabled) component are left out by that same
//! matching unless the query names the component ([`Allow`], `With<Disabled>`, ...), so the
//! default filter costs nothing per row either (see [`crate::disabled`]).
//!
//! A query naming a [sparse-set](crate::ComponentRegistration::sparse_set) component takes
//! another path, chosen once when its state is built: its sparse terms match every archetype
//! and are decided per row by looking the row's entity up in the component's set (see
//! `sparse.rs`). The table path described above is untouched by it.
//!
//! ## Borrowing
//!
//! Read-only queries iterate through `&World`; queries that write need `&mut World`, so two
//! mutable iterations can never overlap and no item outlives its borrow (see [`QueryIter`]).
//! Schedulers that run several queries of one system at once go through
//! [`UnsafeWorldCell`](crate::UnsafeWorldCell) after checking the queries' accesses.

mod access;
mod error;
mod fetch;
mod filter;
mod for_each;
mod iter;
mod par;
mod plan;
mod sparse;
mod state;

pub use crate::change::RunTicks;
pub use access::{Access, ComponentSet};
pub use error::{AccessConflict, QueryError};
pub use fetch::{Has, QueryData, ReadOnlyQueryData, WorldQuery};
// The built-in terms' fetch internals: public only because their `WorldQuery` impls name them.
#[doc(hidden)]
pub use fetch::{PreparedColumn, PreparedEntities, ReadFetch, SparseLookup, WriteFetch};
#[doc(hidden)]
pub use filter::TickFetch;
pub use filter::{Added, Allow, ArchetypeFilter, Changed, Or, QueryFilter, With, Without};
pub use iter::QueryIter;
pub use par::BatchSize;
#[doc(hidden)]
pub use par::{with_batch_sink, with_serial_passes};
pub use state::QueryState;

#[cfg(test)]
mod marking_tests;
#[cfg(test)]
mod plan_tests;
#[cfg(test)]
mod tests;
