//! Save and load (the `serde` feature): components opt in by a stable name.
//!
//! A save file must not depend on `TypeId`s, memory layouts or the order a program happened
//! to register its types in, so every component that is saved is registered with a name
//! chosen by the game ([`World::register_serde`](crate::World::register_serde)), and the
//! save refers to components by that name alone. The registry keeps, per component id, the
//! name and two type-erased functions made for the component's own type: one that lends a
//! value as an `erased_serde::Serialize`, and one that deserialises a value into memory laid
//! out for it. Any serde format works (JSON for people, a compact binary for speed), because
//! the erased functions take the format as a trait object. A dynamic component, which has no
//! Rust type, opts in as plain bytes
//! ([`World::register_serde_bytes`](crate::World::register_serde_bytes)).

mod load;
mod map;
mod read;
mod registry;
mod snapshot;
#[cfg(feature = "sqlite")]
pub(crate) mod sqlite;

pub use load::LoadError;
pub use map::{EntityMapper, MapEntities};
pub(crate) use registry::{SerdeEntry, SerdeRegistry};
pub use snapshot::{SAVE_FORMAT, SaveError, WorldSnapshot};
