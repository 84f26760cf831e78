//! # tabula-core: entities, components and archetype storage
//!
//! This crate is the data half of the tabula ECS. It knows nothing about systems or threads;
//! the scheduler in `tabula-schedule` sees it only through the access it declares.
//!
//! ## How data flows
//!
//! * An [`Entity`] is an id: a slot index and a generation. The [`Entities`] allocator maps it
//!   to an [`EntityLocation`] — an archetype and a row.
//! * A component is any `Send + Sync + 'static` value. The [`Components`] registry gives each
//!   type a dense [`ComponentId`] and records its layout and drop function.
//! * Entities with exactly the same component types share an [`Archetype`]. Its table stores
//!   one type-erased, aligned column per component plus per-row `added`/`changed` [`Tick`]s,
//!   so iterating a component is walking a plain slice.
//! * A [`Bundle`] (a tuple of components) is spawned by writing each field straight into its
//!   column. Inserting or removing a bundle moves the row to another archetype; the archetype
//!   graph caches that edge, so after the first time the move is a lookup and a few copies.
//! * The [`World`] owns all of it. Bad input — a dead entity, a missing component — is an
//!   [`EntityError`] naming what was wrong, never undefined behaviour.
//! * Around the storage: [`Commands`] record spawns, inserts and despawns into a
//!   [`CommandQueue`] (one byte buffer) to be applied later, in order; [`Events`] are
//!   double-buffered messages each reader walks with its own [`EventCursor`]; [`Parent`] and
//!   [`Children`] link entities into trees that the world keeps consistent.
//!
//! ```
//! use tabula::World;
//!
//! #[derive(Debug, PartialEq)]
//! struct Position(f32, f32);
//! #[derive(Debug, PartialEq)]
//! struct Velocity(f32, f32);
//!
//! let mut world = World::new();
//! let ship = world.spawn((Position(0.0, 0.0),));
//! world.insert(ship, (Velocity(1.0, 2.0),))?;          // moves to the (Position, Velocity) archetype
//! world.get_mut::<Position>(ship)?.0 += 1.0;
//! assert_eq!(world.get::<Position>(ship)?, &Position(1.0, 0.0));
//! let (velocity,) = world.remove::<(Velocity,)>(ship)?; // and back again
//! assert_eq!(velocity, Velocity(1.0, 2.0));
//! world.despawn(ship)?;
//! assert!(world.despawn(ship).is_err());               // a stale id is an error, not UB
//! # Ok::<(), tabula::EntityError>(())
//! ```
//!
//! ## Where the `unsafe` is
//!
//! Raw component memory is allocated, moved and freed only in `storage` (columns and
//! tables). Typed values are read and written through column pointers by the sealed
//! [`Bundle`] implementations, `World::get` / `get_mut`, views, and query fetches and
//! filters, always for a column found for that type and a live row (or one just appended
//! and still empty). `docs/safety.md` lists every file with `unsafe` code and the
//! invariants each relies on.

mod archetype;
mod bundle;
mod change;
mod command;
mod component;
pub mod disabled;
pub mod dynamic;
mod entity;
pub mod entity_state;
mod error;
mod event;
mod hierarchy;
mod inspect;
mod location;
pub mod observer;
mod provider;
pub mod query;
mod relation;
pub mod relationship;
pub mod removal;
mod resource;
#[cfg(feature = "serde")]
mod save;
mod storage;
mod sync;
pub mod template;
mod type_name;
mod world;

pub use archetype::Archetype;
pub use bundle::Bundle;
// What `#[derive(Bundle)]` implements, and the tuple plumbing its flattening of nested
// bundles uses (public only for the generated code).
pub use bundle::DerivedBundle;
#[doc(hidden)]
pub use bundle::{TupleConcat, TuplePush};
pub use change::{CHECK_TICK_THRESHOLD, LastRun, MAX_CHANGE_AGE, Mut, Ref, Tick};
#[doc(hidden)]
pub use command::parallel::with_fresh_command_context;
pub use command::{
    ChildBuilder, Command, CommandError, CommandQueue, Commands, EntityCommands, ParallelCommandQueue,
    ScopedCommands,
};
pub use component::{Component, ComponentId, ComponentInfo, Components};
pub use disabled::Disabled;
pub use dynamic::{
    ComponentDescriptor, DescriptorError, DynamicItem, DynamicIter, DynamicQuery, DynamicQueryBuilder,
    DynamicQueryError, MutUntyped, OwningPtr, Ptr, PtrMut,
};
pub use entity::{Entities, Entity, ReserveEntities};
pub use entity_state::{EntityState, EntityStateChanged, EntityStateError, EntityStateMachine};
pub use error::EntityError;
pub use event::{EventCursor, Events};
pub use hierarchy::traverse::{Ancestors, Descendants, DescendantsBreadthFirst};
pub use hierarchy::{ChildSpawner, Children, HierarchyError, Parent};
pub use inspect::Inspection;
pub use location::{ArchetypeId, EntityLocation};
pub use observer::{
    Event, EventKey, ObserverRunner, ObserverState, OnAdd, OnDespawn, OnInsert, OnRemove, OnReplace,
    TriggerState,
};
pub use query::{
    Access, AccessConflict, Added, Allow, BatchSize, Changed, Has, Or, QueryData, QueryError, QueryFilter,
    QueryIter, QueryState, ReadOnlyQueryData, With, Without,
};
pub use relation::{Related, Relation, Relations};
pub use relationship::{Relationship, RelationshipTarget};
pub use resource::ResourceError;
/// The SQLite bindings (the `sqlite` feature): [`World::export_sqlite`] and
/// [`World::import_sqlite`] take a `rusqlite::Connection`; open it through this re-export
/// so that the versions match.
#[cfg(feature = "sqlite")]
pub use rusqlite;
#[cfg(feature = "sqlite")]
pub use save::sqlite::SqliteError;
#[cfg(feature = "serde")]
pub use save::{EntityMapper, LoadError, MapEntities, SAVE_FORMAT, SaveError, WorldSnapshot};
pub use template::{Template, TemplateError, Templates};
pub use type_name::short_type_name;
pub use world::{
    ComponentRegistration, EntityLane, EntityMut, EntityRef, HookContext, HookKind, HookWorld, MultiView,
    MultiViewMut, ReadOnlyViewData, RequiredComponentError, SpawnBatch, UnsafeWorldCell, View, ViewColumn,
    ViewData, ViewMut, ViewSparse, ViewTerm, World, WorldId,
};
