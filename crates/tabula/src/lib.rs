//! # tabula: an archetype-based Entity Component System
//!
//! Entities are ids, components are plain Rust values (any `Send + Sync + 'static` type),
//! and entities with the same component types share one column-major table.
//!
//! ```
//! use tabula::prelude::*;
//!
//! struct Position(f32);
//! struct Velocity(f32);
//!
//! let mut world = World::new();
//! let e = world.spawn((Position(0.0), Velocity(2.0)));
//! let v = world.get::<Velocity>(e)?.0;
//! world.get_mut::<Position>(e)?.0 += v;
//! assert_eq!(world.get::<Position>(e)?.0, 2.0);
//! # Ok::<(), EntityError>(())
//! ```

pub use tabula_core::*;
pub use tabula_schedule as schedule;

/// The README, compiled so that its example runs as a doctest and cannot drift from the code.
#[doc = include_str!("../../../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;

/// The guide, compiled so that every snippet in it runs as a doctest.
#[doc = include_str!("../../../docs/guide.md")]
#[cfg(doctest)]
pub struct GuideDoctests;

/// The names game code uses every day: `use tabula::prelude::*;`.
pub mod prelude {
    pub use tabula_core::{
        Added, Bundle, Changed, Children, Commands, Component, Entity, EntityError, Events, Has, Mut, Or,
        Parent, Ref, ResourceError, With, Without, World,
    };
    pub use tabula_schedule::prelude::*;
}
