//! Untyped pointers into component storage, bound to the borrow they came from: [`Ptr`] to
//! read, [`PtrMut`] to write, [`OwningPtr`] to move a value in, and [`MutUntyped`], which
//! marks the value changed when written through.

use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::ptr::NonNull;

use crate::change::{Mut, RunTicks, Tick};

/// A read-only pointer to one component value, valid for `'a`. Reading it as a Rust type is
/// `unsafe`: the pointer does not know the type.
///
/// ```
/// let mut world = tabula::World::new();
/// let id = world.register_component::<u32>().id();
/// let e = world.spawn((7u32,));
/// let ptr = world.get_by_id(e, id)?;
/// // SAFETY: component `id` is `u32`.
/// assert_eq!(unsafe { *ptr.deref::<u32>() }, 7);
/// # Ok::<(), tabula::EntityError>(())
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Ptr<'a> {
    ptr: NonNull<u8>,
    _borrow: PhantomData<&'a u8>,
}

impl<'a> Ptr<'a> {
    /// # Safety
    /// `ptr` points at a value that stays valid and unwritten for `'a`.
    pub(crate) unsafe fn new(ptr: NonNull<u8>) -> Self {
        Self {
            ptr,
            _borrow: PhantomData,
        }
    }

    /// The address, for reading the bytes (the value is not to be written through it).
    pub fn as_ptr(self) -> *const u8 {
        self.ptr.as_ptr()
    }

    /// The value as a `T`.
    ///
    /// # Safety
    /// The component stores `T` values (its layout and meaning are `T`'s).
    pub unsafe fn deref<T>(self) -> &'a T {
        // SAFETY: the caller's contract gives the type; `new`'s contract the validity and
        // that nothing writes it for `'a`.
        unsafe { self.ptr.cast::<T>().as_ref() }
    }
}

/// A pointer to one component value that may be written, valid and exclusive for `'a`.
#[derive(Debug)]
pub struct PtrMut<'a> {
    ptr: NonNull<u8>,
    _borrow: PhantomData<&'a mut u8>,
}

impl<'a> PtrMut<'a> {
    /// # Safety
    /// `ptr` points at a value that stays valid for `'a`, and nothing else reads or writes
    /// it meanwhile.
    pub(crate) unsafe fn new(ptr: NonNull<u8>) -> Self {
        Self {
            ptr,
            _borrow: PhantomData,
        }
    }

    /// The address, for reading or writing the bytes.
    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    /// A read-only pointer for a shorter borrow.
    pub fn as_ref(&self) -> Ptr<'_> {
        // SAFETY: `&self` keeps `self` (the only access) from writing for the borrow.
        unsafe { Ptr::new(self.ptr) }
    }

    /// A mutable pointer for a shorter borrow.
    pub fn reborrow(&mut self) -> PtrMut<'_> {
        // SAFETY: `&mut self` hands over the exclusive access for the borrow.
        unsafe { PtrMut::new(self.ptr) }
    }

    /// The value as a `T`.
    ///
    /// # Safety
    /// The component stores `T` values (its layout and meaning are `T`'s).
    pub unsafe fn deref_mut<T>(self) -> &'a mut T {
        // SAFETY: the caller's contract gives the type; `new`'s contract the validity and
        // the exclusivity for `'a`.
        unsafe { self.ptr.cast::<T>().as_mut() }
    }
}

/// A value to be moved into the world by component id: a pointer to it that owns it for
/// `'a`. Whoever takes it moves the value out (or drops it); the memory itself stays the
/// giver's.
///
/// ```
/// let mut world = tabula::World::new();
/// let id = world.register_component::<String>().id();
/// let e = world.spawn(());
/// tabula::OwningPtr::make(String::from("moved in"), |value| {
///     // SAFETY: component `id` is `String`, and `value` points at one.
///     unsafe { world.insert_by_id(e, id, value) }
/// })?;
/// assert_eq!(world.get::<String>(e)?, "moved in");
/// # Ok::<(), tabula::EntityError>(())
/// ```
#[derive(Debug)]
pub struct OwningPtr<'a> {
    ptr: NonNull<u8>,
    _borrow: PhantomData<&'a mut u8>,
}

impl<'a> OwningPtr<'a> {
    /// Moves `value` behind an `OwningPtr` for the call of `f`. `f` owns the value: it must
    /// move it out or drop it (the world's by-id inserts always do, on error too); a value
    /// `f` leaves is leaked, never dropped twice.
    pub fn make<T, R>(value: T, f: impl FnOnce(OwningPtr<'_>) -> R) -> R {
        let mut value = ManuallyDrop::new(value);
        // SAFETY: `value` is a valid `T` that nothing else reads or drops (`ManuallyDrop`)
        // while `f` runs, and its place outlives the call.
        f(unsafe { OwningPtr::new(NonNull::from(&mut *value).cast()) })
    }

    /// An owning pointer to the value at `ptr`.
    ///
    /// # Safety
    /// `ptr` points at a valid value that the new pointer owns for `'a`: nothing else reads,
    /// writes or drops it, and whoever consumes the pointer moves it out or drops it.
    /// `ptr` is aligned for the value.
    pub unsafe fn new(ptr: NonNull<u8>) -> Self {
        Self {
            ptr,
            _borrow: PhantomData,
        }
    }

    /// The address of the value.
    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    /// Moves the value out as a `T`.
    ///
    /// # Safety
    /// The value is a `T`.
    pub unsafe fn read<T>(self) -> T {
        // SAFETY: the caller's contract gives the type; `new`'s the validity and ownership.
        unsafe { self.ptr.cast::<T>().read() }
    }
}

/// Mutable access to a component value by id that records the write, like [`Mut`]: only
/// [`as_mut`](Self::as_mut) and [`into_inner`](Self::into_inner) mark it changed, reading
/// through [`as_ref`](Self::as_ref) does not.
///
/// ```
/// use tabula::{Changed, Entity, World};
///
/// let mut world = World::new();
/// let id = world.register_component::<u32>().id();
/// let e = world.spawn((1u32,));
/// let mut changed = world.query_filtered::<Entity, Changed<u32>>();
/// assert_eq!(changed.iter(&world).count(), 1); // just added
/// let mut value = world.get_mut_by_id(e, id)?;
/// // SAFETY: component `id` is `u32`.
/// unsafe { *value.as_mut().deref_mut::<u32>() += 1 };
/// assert_eq!(changed.iter(&world).count(), 1, "the write is seen");
/// assert_eq!(world.get::<u32>(e)?, &2);
/// # Ok::<(), tabula::EntityError>(())
/// ```
pub struct MutUntyped<'a> {
    value: PtrMut<'a>,
    added: Tick,
    changed: &'a mut Tick,
    floor: Tick,
    run: RunTicks,
}

impl<'a> MutUntyped<'a> {
    pub(crate) fn new(
        value: PtrMut<'a>,
        added: Tick,
        changed: &'a mut Tick,
        floor: Tick,
        run: RunTicks,
    ) -> Self {
        Self {
            value,
            added,
            changed,
            floor,
            run,
        }
    }

    /// True when the value was added or written since the last run (as [`Mut::is_changed`]).
    pub fn is_changed(&self) -> bool {
        let RunTicks { last_run, this_run } = self.run;
        self.changed.is_newer_than(last_run, this_run) || self.floor.is_newer_than(last_run, this_run)
    }

    /// True when the value was added since the last run.
    pub fn is_added(&self) -> bool {
        self.added.is_newer_than(self.run.last_run, self.run.this_run)
    }

    /// Marks the value changed without writing it.
    pub fn set_changed(&mut self) {
        *self.changed = self.run.this_run;
    }

    /// The value, read-only; marks nothing.
    pub fn as_ref(&self) -> Ptr<'_> {
        self.value.as_ref()
    }

    /// The value, writable; marks it changed.
    pub fn as_mut(&mut self) -> PtrMut<'_> {
        self.set_changed();
        self.value.reborrow()
    }

    /// The value, writable, without marking it changed.
    pub fn bypass_change_detection(&mut self) -> PtrMut<'_> {
        self.value.reborrow()
    }

    /// The writable pointer for the whole borrow; marks the value changed.
    pub fn into_inner(mut self) -> PtrMut<'a> {
        self.set_changed();
        self.value
    }

    /// This access typed as a [`Mut<T>`], with the same change marking.
    ///
    /// # Safety
    /// The component stores `T` values.
    pub unsafe fn with_type<T>(self) -> Mut<'a, T> {
        // SAFETY: the caller's contract gives the type; `PtrMut` the validity and exclusivity.
        let value = unsafe { self.value.deref_mut::<T>() };
        Mut::new(value, self.added, self.changed, self.floor, self.run)
    }
}

impl std::fmt::Debug for MutUntyped<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MutUntyped")
            .field("ptr", &self.value.as_ptr())
            .field("changed", &self.is_changed())
            .finish()
    }
}
