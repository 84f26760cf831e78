//! Access by [`ComponentId`]: registering a component from a [`ComponentDescriptor`], and
//! inserting, reading, writing and removing any component (typed or dynamic) by id.
//!
//! Inserts and removals go through the same structural path as typed bundles
//! (`insert_bundle_at`, `remove_bundle` in `structural.rs`), with a one-component bundle
//! registered per id: the same edges, hooks, observers and removal logs, in the same order.

use std::alloc::Layout;
use std::ptr::{self, NonNull};
use std::sync::Arc;

use super::World;
use super::hooks::{HookContext, HookKind, HookWorld};
use super::structural::{InsertValues, RemoveValues};
use crate::change::{ComponentTicks, RunTicks, Tick};
use crate::component::{ComponentId, ComponentInfo};
use crate::dynamic::{ComponentDescriptor, DescriptorError, MutUntyped, OwningPtr, Ptr, PtrMut};
use crate::entity::Entity;
use crate::error::EntityError;
use crate::location::EntityLocation;
use crate::storage::Table;

impl World {
    /// Registers a component from its description and returns its id: a component with no
    /// Rust type (made by [`ComponentDescriptor::new`]), or a Rust type's
    /// ([`ComponentDescriptor::of`]).
    ///
    /// ```
    /// use std::alloc::Layout;
    /// use tabula::{ComponentDescriptor, DescriptorError, World};
    ///
    /// let mut world = World::new();
    /// // SAFETY: plain bytes, no drop.
    /// let make = || unsafe { ComponentDescriptor::new("Speed", Layout::new::<f32>(), None) };
    /// let speed = world.register_component_with_descriptor(make())?;
    /// assert_eq!(world.components().info(speed).name(), "Speed");
    /// let again = world.register_component_with_descriptor(make()).unwrap_err();
    /// assert_eq!(again, DescriptorError::DuplicateName { name: "Speed" });
    /// assert!(again.to_string().contains("`Speed`"));
    /// # Ok::<(), DescriptorError>(())
    /// ```
    ///
    /// # Errors
    /// [`DescriptorError::DuplicateName`] when a component of the same name is registered
    /// (for [`ComponentDescriptor::of`], also when the Rust type is).
    pub fn register_component_with_descriptor(
        &mut self,
        descriptor: ComponentDescriptor,
    ) -> Result<ComponentId, DescriptorError> {
        let ComponentDescriptor {
            name,
            layout,
            drop,
            type_id,
        } = descriptor;
        let typed_taken = type_id.is_some_and(|t| self.components.id_of_type(t).is_some());
        if typed_taken || self.components.id_by_name(name).is_some() {
            return Err(DescriptorError::DuplicateName { name });
        }
        Ok(self.components.push(name, layout, drop, type_id))
    }

    /// Adds a [hook](crate::HookKind) of `kind` to component `id`, after its others of that
    /// kind: how a component without a Rust type gets the hooks that
    /// [`register_component`](Self::register_component) gives a typed one. It runs on every
    /// path, typed or by id, in the documented order.
    ///
    /// ```
    /// use std::alloc::Layout;
    /// use std::sync::atomic::{AtomicUsize, Ordering};
    /// use tabula::{ComponentDescriptor, HookKind, OwningPtr, World};
    ///
    /// static ADDED: AtomicUsize = AtomicUsize::new(0);
    /// let mut world = World::new();
    /// // SAFETY: plain bytes, no drop.
    /// let tag = world.register_component_with_descriptor(unsafe {
    ///     ComponentDescriptor::new("Tag", Layout::new::<u8>(), None)
    /// })?;
    /// world.add_hook_by_id(tag, HookKind::Add, |_, _| {
    ///     ADDED.fetch_add(1, Ordering::Relaxed);
    /// });
    /// let e = world.spawn(());
    /// // SAFETY: a `u8`, the layout registered.
    /// OwningPtr::make(1u8, |value| unsafe { world.insert_by_id(e, tag, value) })?;
    /// assert_eq!(ADDED.load(Ordering::Relaxed), 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Panics
    /// When no component has id `id` in this world.
    #[track_caller]
    pub fn add_hook_by_id(
        &mut self,
        id: ComponentId,
        kind: HookKind,
        hook: impl Fn(&mut HookWorld<'_>, HookContext) + Send + Sync + 'static,
    ) {
        assert!(
            self.components.get_info(id).is_some(),
            "add_hook_by_id: no component has id {} in this world; register it first (ids are \
             per world)",
            id.index()
        );
        self.add_hook(id, kind, Arc::new(hook));
    }

    /// The registered component `id`, or the error for asking `entity` about an unknown one.
    fn info_for(&self, entity: Entity, id: ComponentId) -> Result<&ComponentInfo, EntityError> {
        (self.components.get_info(id)).ok_or(EntityError::UnknownComponent {
            entity,
            component: id,
        })
    }

    /// True when `entity` is alive and has component `id`.
    ///
    /// ```
    /// let mut world = tabula::World::new();
    /// let id = world.register_component::<u8>().id();
    /// let e = world.spawn((1u8,));
    /// assert!(world.has_by_id(e, id));
    /// ```
    pub fn has_by_id(&self, entity: Entity, id: ComponentId) -> bool {
        (self.entities.get(entity)).is_some_and(|location| {
            self.archetype_at(location).column_of(id).is_some() || self.sparse_contains(id, entity)
        })
    }

    /// Moves `value` into `entity` as its component `id`, replacing (and dropping) a value it
    /// had, with the same hooks and observers as a typed [`insert`](Self::insert) of it.
    ///
    /// The value is consumed whatever the result: moved into the world, or dropped with the
    /// component's drop function when the entity is not alive. Only for an unknown `id` is
    /// it left untouched (leaked, unless the caller still drops it).
    ///
    /// ```
    /// use std::alloc::Layout;
    /// use tabula::{ComponentDescriptor, OwningPtr, World};
    ///
    /// let mut world = World::new();
    /// // SAFETY: plain bytes, no drop.
    /// let hp = world.register_component_with_descriptor(unsafe {
    ///     ComponentDescriptor::new("Hp", Layout::new::<u32>(), None)
    /// })?;
    /// let e = world.spawn(());
    /// // SAFETY: the value is a `u32`, of `hp`'s layout.
    /// OwningPtr::make(30u32, |value| unsafe { world.insert_by_id(e, hp, value) })?;
    /// let read = world.get_by_id(e, hp)?;
    /// // SAFETY: `hp` holds `u32`s.
    /// assert_eq!(unsafe { *read.deref::<u32>() }, 30);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`EntityError::UnknownComponent`] when no component has id `id` in this world, and
    /// [`EntityError::NoSuchEntity`] or [`EntityError::WrongWorld`] as for `insert`.
    ///
    /// # Safety
    /// `value` points at a valid value of component `id` (of its layout and meaning, as its
    /// drop function and every other reader of the id expect), owned by the pointer.
    pub unsafe fn insert_by_id(
        &mut self,
        entity: Entity,
        id: ComponentId,
        value: OwningPtr<'_>,
    ) -> Result<(), EntityError> {
        let info = self.info_for(entity, id)?;
        let (size, drop) = (info.layout().size(), info.drop_fn());
        self.flush();
        let location = match self.location(entity) {
            Ok(location) => location,
            Err(error) => {
                if let Some(drop) = drop {
                    // SAFETY: `value` is a valid value of `id`, owned (the caller's
                    // contract), and `drop` is `id`'s drop function; it is not used again.
                    unsafe { drop(value.as_ptr()) }
                }
                return Err(error);
            }
        };
        if self.components.info(id).is_sparse() {
            // SAFETY: the caller's contract, passed on.
            unsafe { self.insert_sparse_by_id(entity, id, value.as_ptr()) };
            return Ok(());
        }
        let bundle = self.bundles.id_of_components(&[id]);
        let value = ValueIn { value, size, drop };
        self.insert_bundle_at::<_, true>(entity, location, bundle, value);
        Ok(())
    }

    /// A read-only pointer to `entity`'s component `id` (typed or dynamic).
    ///
    /// A component id is only meaningful in the world that registered it: an id of another
    /// world names whatever component has that index here, or none.
    ///
    /// # Errors
    /// [`EntityError::UnknownComponent`] for an id no component has here,
    /// [`EntityError::NoSuchEntity`] or [`EntityError::WrongWorld`] for an entity not alive
    /// here, [`EntityError::MissingComponent`] when it lacks the component.
    pub fn get_by_id(&self, entity: Entity, id: ComponentId) -> Result<Ptr<'_>, EntityError> {
        let location = self.location(entity)?;
        self.get_by_id_at(entity, location, id)
    }

    /// [`get_by_id`](Self::get_by_id) at `entity`'s current `location`.
    pub(crate) fn get_by_id_at(
        &self,
        entity: Entity,
        location: EntityLocation,
        id: ComponentId,
    ) -> Result<Ptr<'_>, EntityError> {
        let info = self.info_for(entity, id)?;
        let archetype = self.archetype_at(location);
        let Some(column) = archetype.column_of(id) else {
            let set = self.sparse.get(id);
            if let Some((set, row)) = set.and_then(|set| Some((set, set.row_of(entity)?))) {
                // SAFETY: `row` is live in the set, so the pointer is in bounds and non-null;
                // `&self` rules out writes for the borrow.
                return Ok(unsafe { Ptr::new(NonNull::new_unchecked(set.table().column(0).ptr(row))) });
            }
            return Err(missing(entity, info));
        };
        // SAFETY: `location.row` is a live row (locations are kept exact), so the pointer is
        // inside the column's array (or dangling and aligned for a zero-sized value) and
        // never null; `&self` rules out writes for the borrow.
        Ok(unsafe {
            let ptr = archetype.table.column(column).ptr(location.row as usize);
            Ptr::new(NonNull::new_unchecked(ptr))
        })
    }

    /// Mutable access to `entity`'s component `id`; writing through it marks the value
    /// changed, as [`get_mut`](Self::get_mut) does.
    ///
    /// # Errors
    /// As [`get_by_id`](Self::get_by_id), and [`EntityError::ImmutableComponent`] for a
    /// component registered as [immutable](crate::ComponentRegistration::immutable).
    pub fn get_mut_by_id(&mut self, entity: Entity, id: ComponentId) -> Result<MutUntyped<'_>, EntityError> {
        let location = self.location(entity)?;
        let info = self.info_for(entity, id)?;
        let name = info.name();
        let (last_run, this_run) = (self.last_change_tick, super::tick_now(&mut self.change_tick));
        // Shared access to the table is enough (values and ticks are written through the
        // column's own pointers), and keeps the archetype shape, as in `get_mut`.
        let archetype = self.archetype_at(location);
        let sparse = self
            .sparse
            .get(id)
            .and_then(|set| Some((set, set.row_of(entity)?)));
        let (column, row) = match (archetype.column_of(id), sparse) {
            (Some(column), _) => (archetype.table.column(column), location.row as usize),
            (None, Some((set, row))) => (set.table().column(0), row),
            (None, None) => {
                return Err(EntityError::MissingComponent {
                    entity,
                    component: name,
                });
            }
        };
        if self.components.info(id).is_immutable() {
            return Err(EntityError::ImmutableComponent {
                entity,
                component: name,
            });
        }
        let ticks = column.ticks_base();
        // SAFETY: `row` is live, so the value pointer is in bounds and non-null; `&mut self`
        // makes these the only references into the column's values and ticks for the
        // borrow; the value and the `changed` tick are disjoint (read and pointed at without
        // a reference to the row's tick pair, as in `get_mut`).
        unsafe {
            let value = PtrMut::new(NonNull::new_unchecked(column.ptr(row)));
            Ok(MutUntyped::new(
                value,
                ComponentTicks::added_at(ticks, row),
                &mut *ComponentTicks::changed_at(ticks, row),
                column.changed_floor(this_run),
                RunTicks { last_run, this_run },
            ))
        }
    }

    /// Removes `entity`'s component `id` and drops the value, with the same hooks,
    /// observers and removal log as a typed [`remove`](Self::remove). Returns whether the
    /// entity had it.
    ///
    /// ```
    /// let mut world = tabula::World::new();
    /// let id = world.register_component::<String>().id();
    /// let e = world.spawn((String::from("bye"),));
    /// assert_eq!(world.remove_by_id(e, id), Ok(true));
    /// assert_eq!(world.remove_by_id(e, id), Ok(false));
    /// assert!(!world.has::<String>(e));
    /// ```
    ///
    /// # Errors
    /// [`EntityError::UnknownComponent`], [`EntityError::NoSuchEntity`] or
    /// [`EntityError::WrongWorld`] as for [`get_by_id`](Self::get_by_id).
    pub fn remove_by_id(&mut self, entity: Entity, id: ComponentId) -> Result<bool, EntityError> {
        let info = self.info_for(entity, id)?;
        let (layout, drop) = (info.layout(), info.drop_fn());
        self.flush();
        if self.components.info(id).is_sparse() {
            self.location(entity)?;
            return Ok(self.remove_sparse_by_id(entity, id));
        }
        if self.archetype_at(self.location(entity)?).column_of(id).is_none() {
            return Ok(false);
        }
        let bundle = self.bundles.id_of_components(&[id]);
        // Room for the value outside the table before anything moves: the move must not
        // fail halfway, and the value is dropped only once the row is consistent again.
        let buffer = ValueBuffer::new(layout);
        let out = ValueOut {
            to: buffer.ptr,
            size: layout.size(),
        };
        match self.remove_bundle::<_, true>(entity, bundle, out) {
            Ok(()) => {
                if let Some(drop) = drop {
                    // SAFETY: the removal moved the entity's value of `id` into the buffer
                    // (`ValueOut::take_at`), whose memory is aligned for `id`'s layout; it is
                    // dropped once, here, and the buffer is freed without a drop.
                    unsafe { drop(buffer.ptr.as_ptr()) }
                }
                Ok(true)
            }
            // A hook removed it first (hooks make no structural change, so this is only a
            // guard): nothing was moved into the buffer.
            Err(EntityError::MissingComponent { .. }) => Ok(false),
            Err(error) => Err(error),
        }
    }
}

/// The error for `entity` lacking component `info`.
fn missing(entity: Entity, info: &ComponentInfo) -> EntityError {
    EntityError::MissingComponent {
        entity,
        component: info.name(),
    }
}

/// One value inserted by id: [`InsertValues`] for a one-component bundle.
struct ValueIn<'a> {
    value: OwningPtr<'a>,
    size: usize,
    drop: Option<unsafe fn(*mut u8)>,
}

impl InsertValues for ValueIn<'_> {
    const FIELDS: usize = 1;

    unsafe fn write_new(self, table: &mut Table, columns: &[u32], row: usize, tick: Tick) {
        // SAFETY: `columns[0]` is the column of the bundle's one component (the caller's
        // contract), which stores values of `size` bytes; `row` is free and within capacity;
        // `value` owns a valid value of that component (`insert_by_id`'s contract), moved
        // into the row bit for bit and not used again.
        unsafe {
            let column = table.column_unchecked_mut(columns[0] as usize);
            ptr::copy_nonoverlapping(self.value.as_ptr(), column.ptr(row), self.size);
            column.ticks_base().add(row).write(ComponentTicks::new(tick));
        }
    }

    unsafe fn write_or_replace(
        self,
        table: &mut Table,
        columns: &[u32],
        replaced: &[bool],
        row: usize,
        tick: Tick,
    ) {
        if !replaced[0] {
            // SAFETY: the slot is free (the caller's contract); as above.
            return unsafe { self.write_new(table, columns, row, tick) };
        }
        let old = self.value.as_ptr();
        // SAFETY: the slot holds a value of the component (the caller's contract) and
        // `value` another, in memory the pointer owns, of the same layout and not
        // overlapping the table. Swapping puts the new value in the row and the old one in
        // the given memory, where it is dropped after the row is whole (so a panicking drop
        // leaves a consistent world), once, and never used again.
        unsafe {
            let column = table.column_unchecked_mut(columns[0] as usize);
            ptr::swap_nonoverlapping(old, column.ptr(row), self.size);
            ComponentTicks::changed_at(column.ticks_base(), row).write(tick);
            if let Some(drop) = self.drop {
                drop(old);
            }
        }
    }
}

/// Where a value removed by id goes: [`RemoveValues`] for a one-component bundle.
#[derive(Clone, Copy)]
struct ValueOut {
    to: NonNull<u8>,
    size: usize,
}

impl RemoveValues for ValueOut {
    const FIELDS: usize = 1;
    type Output = ();

    unsafe fn take_at(self, table: &Table, columns: &[u32], row: usize) {
        // SAFETY: `columns[0]` is the column of the bundle's one component and `row` holds a
        // value there (the caller's contract); `to` is a buffer of the component's layout
        // (`ValueBuffer`), outside the table. The value is moved out bit for bit, once.
        unsafe {
            let column = table.column_unchecked(columns[0] as usize);
            ptr::copy_nonoverlapping(column.ptr(row), self.to.as_ptr(), self.size);
        }
    }
}

/// Memory for one value of a layout, freed (never dropped) when this goes.
struct ValueBuffer {
    ptr: NonNull<u8>,
    layout: Layout,
}

impl ValueBuffer {
    fn new(layout: Layout) -> Self {
        let ptr = if layout.size() == 0 {
            // Aligned and non-null: all a zero-sized value needs.
            NonNull::new(ptr::without_provenance_mut(layout.align())).expect("alignment is never zero")
        } else {
            // SAFETY: the size is not zero.
            let raw = unsafe { std::alloc::alloc(layout) };
            NonNull::new(raw).unwrap_or_else(|| std::alloc::handle_alloc_error(layout))
        };
        Self { ptr, layout }
    }
}

impl Drop for ValueBuffer {
    fn drop(&mut self) {
        if self.layout.size() != 0 {
            // SAFETY: allocated in `new` with this layout, freed once.
            unsafe { std::alloc::dealloc(self.ptr.as_ptr(), self.layout) }
        }
    }
}
