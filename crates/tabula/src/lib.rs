//! # tabula: an archetype-based Entity Component System
//!
//! Entities are ids, components are plain Rust values (any `Send + Sync + 'static` type),
//! and entities with the same component types share one column-major table. Game code
//! reaches everything through `use tabula::prelude::*;`. The [`guide`] walks through all of
//! it; this page is the data flow in one pass.
//!
//! 1. **The [`World`]** owns entities, components and resources. `spawn` gives an
//!    [`Entity`] id; `insert`, `remove`, `get` and `get_mut` work on one entity; bad ids are
//!    errors ([`EntityError`]), never undefined behaviour.
//! 2. **Queries** ([`QueryState`], from `world.query::<D>()`) visit every entity that has
//!    the components `D` names, table by table: `&T` reads, `&mut T` writes (and marks the
//!    row changed), `Option<&T>`, `Entity`, filters like [`With`], [`Without`] and
//!    [`Changed`].
//! 3. **Systems** are plain functions whose parameters say what they touch: `Query`, `Res`,
//!    `ResMut`, `Local`, `Commands`, events. A **[`Schedule`](schedule::Schedule)** builds a
//!    graph from those declarations and explicit ordering (`before`, `after`, `chain`), and
//!    runs the systems that do not conflict in parallel on rayon. The world after a run is
//!    the same with one thread or many.
//! 4. **Commands** are how systems change structure while others run: spawns, despawns,
//!    inserts and removals are recorded and applied at sync points, in a fixed order; the
//!    id of a spawned entity is known at once.
//!
//! ```
//! use tabula::prelude::*;
//!
//! struct Position(f32);
//! struct Velocity(f32);
//! struct Bullet;
//!
//! // A system: moves everything that has a position and a velocity.
//! fn movement(mut q: Query<(&mut Position, &Velocity)>) {
//!     q.for_each(|(mut p, v)| p.0 += v.0);
//! }
//!
//! // Another: fires a bullet from every mover past 10, through commands.
//! fn fire(mut commands: Commands, q: Query<&Position, Without<Bullet>>) {
//!     for p in q.iter() {
//!         if p.0 > 10.0 {
//!             commands.spawn((Bullet, Position(p.0), Velocity(5.0)));
//!         }
//!     }
//! }
//!
//! let mut world = World::new();
//! let ship = world.spawn((Position(0.0), Velocity(6.0)));
//! let mut schedule = Schedule::new();
//! schedule.add_systems((movement, fire.after(movement)));
//! schedule.run(&mut world); // ship at 6: no bullet
//! schedule.run(&mut world); // ship at 12: one bullet, spawned when the run ends
//! assert_eq!(world.get::<Position>(ship)?.0, 12.0);
//! assert_eq!(world.query::<&Bullet>().iter(&world).count(), 1);
//! # Ok::<(), EntityError>(())
//! ```

pub use tabula_core::*;
// The derives: `#[derive(SystemParam)]` (the trait is `schedule::SystemParam`) and
// `#[derive(Bundle)]` (implementing `DerivedBundle`, through which the struct is a `Bundle`).
// Each shares its trait's name, in the macro namespace only.
pub use tabula_macros::{Bundle, SystemParam};

/// Systems and the parallel scheduler: [`Schedule`](schedule::Schedule), the system
/// parameters ([`Query`](schedule::Query), [`Res`](schedule::Res), ...), ordering and sets.
///
/// Each system parameter declares what it reads and writes
/// ([`SystemParam`](schedule::SystemParam)); the schedule builds a dependency graph from those
/// declarations plus explicit ordering (`before`, `after`, `chain`,
/// [sets](schedule::SystemSet)), and runs systems that do not conflict at the same time. Every
/// two conflicting systems are ordered the same way on every run, so the world after a run is
/// the same with one thread or many. The names used every day are also in the
/// [`prelude`].
pub mod schedule {
    pub use tabula_schedule::*;
}

/// The README, compiled so that its example runs as a doctest and cannot drift from the code.
#[doc = include_str!("../../../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;

/// The tabula guide (`docs/guide.md`), from entities and queries to a parallel game loop.
/// Every snippet in it is compiled and run as a doctest of this crate.
#[doc = include_str!("../../../docs/guide.md")]
pub mod guide {}

/// The names game code uses every day: `use tabula::prelude::*;`.
pub mod prelude {
    pub use tabula_core::{
        Added, Bundle, Changed, Children, Commands, Component, Entity, EntityError, EntityStateChanged,
        EntityStateMachine, Event, Events, Has, HookContext, HookWorld, Mut, OnAdd, OnDespawn, OnInsert,
        OnRemove, OnReplace, Or, Parent, Ref, Relation, Relations, ResourceError, With, Without, World,
    };
    pub use tabula_core::{Allow, Disabled};
    pub use tabula_core::{Template, Templates};
    pub use tabula_schedule::prelude::*;
    // The derives (`Bundle` also names the trait above, in the macro namespace only).
    pub use tabula_macros::{Bundle, SystemParam};
}
