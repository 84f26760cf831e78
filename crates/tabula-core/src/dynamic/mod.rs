//! Dynamic components and access by [`ComponentId`](crate::ComponentId): for scripting
//! layers, data-driven games, loaders and inspectors, which know components by name and id
//! rather than by Rust type.
//!
//! * **Registering.** [`World::register_component_with_descriptor`](crate::World::register_component_with_descriptor)
//!   takes a [`ComponentDescriptor`] — a name, a [`Layout`](std::alloc::Layout) and an
//!   optional drop function — and returns the new component's id; the name finds it again
//!   ([`Components::id_by_name`](crate::Components::id_by_name)). Such a component has no
//!   `TypeId`, and is stored, moved and dropped like any other: the storage only ever used
//!   layouts and drop functions.
//! * **One entity.** [`World::insert_by_id`](crate::World::insert_by_id) moves a value in
//!   through an [`OwningPtr`]; [`get_by_id`](crate::World::get_by_id) returns a [`Ptr`],
//!   [`get_mut_by_id`](crate::World::get_mut_by_id) a [`MutUntyped`] that marks the value
//!   changed when written, and [`remove_by_id`](crate::World::remove_by_id) drops it. They
//!   work for every component, Rust types included, and inserts and removals take the typed
//!   path's edges, hooks and observers (one-component bundles registered by id).
//! * **Many entities.** A [`DynamicQuery`] is built from ids at run time and walks the
//!   matching entities, yielding a [`DynamicItem`] per entity.
//!
//! Where the `unsafe` is: putting a value in ([`World::insert_by_id`](crate::World::insert_by_id),
//! [`OwningPtr::new`]) and reading one as a Rust type ([`Ptr::deref`], [`PtrMut::deref_mut`],
//! [`MutUntyped::with_type`]) are `unsafe` for the caller, who alone knows the type; and a
//! [`ComponentDescriptor::new`] promises that its values may cross threads and that its drop
//! function fits them. Everything else is safe whatever the input: unknown ids, dead
//! entities and missing components are errors, and a read pointer cannot be written through.
//!
//! ```
//! use std::alloc::Layout;
//! use tabula::{ComponentDescriptor, DynamicQuery, OwningPtr, World};
//!
//! let mut world = World::new();
//! // A component a script defined: two f32s, no drop.
//! // SAFETY: plain numbers are `Send` and `Sync`; there is no drop function.
//! let wind = world.register_component_with_descriptor(unsafe {
//!     ComponentDescriptor::new(String::from("script::Wind"), Layout::new::<[f32; 2]>(), None)
//! })?;
//! let e = world.spawn(());
//! // SAFETY: `[f32; 2]` is the layout registered, and the meaning the script gives it.
//! OwningPtr::make([1.0f32, 0.5], |value| unsafe { world.insert_by_id(e, wind, value) })?;
//!
//! let mut query = DynamicQuery::builder(&mut world).read(wind).build()?;
//! for item in query.iter(&world) {
//!     // SAFETY: as above.
//!     let value = unsafe { item.get(wind).unwrap().deref::<[f32; 2]>() };
//!     assert_eq!((item.entity(), *value), (e, [1.0, 0.5]));
//! }
//! assert_eq!(world.remove_by_id(e, wind), Ok(true));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The pointers borrow what they came from, so the borrow checker keeps them from outliving
//! a value: a `Ptr` kept across a despawn does not compile,
//!
//! ```compile_fail
//! let mut world = tabula::World::new();
//! let id = world.register_component::<String>().id();
//! let e = world.spawn((String::from("gone"),));
//! let ptr = world.get_by_id(e, id).unwrap();
//! world.despawn(e).unwrap(); // error: `world` is borrowed by `ptr`
//! let _ = ptr.as_ptr();
//! ```
//!
//! and neither does a read of a query item's value kept across a write of it:
//!
//! ```compile_fail
//! let mut world = tabula::World::new();
//! let id = world.register_component::<u32>().id();
//! world.spawn((1u32,));
//! let mut query = tabula::DynamicQuery::builder(&mut world).write(id).build().unwrap();
//! query.for_each(&mut world, |mut item| {
//!     let read = item.get(id).unwrap();
//!     let write = item.get_mut(id).unwrap(); // error: `item` is borrowed by `read`
//!     let _ = (read.as_ptr(), write);
//! });
//! ```

mod descriptor;
mod ptr;
mod query;

pub use descriptor::{ComponentDescriptor, DescriptorError};
pub use ptr::{MutUntyped, OwningPtr, Ptr, PtrMut};
pub use query::{DynamicItem, DynamicIter, DynamicQuery, DynamicQueryBuilder, DynamicQueryError};
