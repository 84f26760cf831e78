//! Resources: typed singletons stored in the world beside the entities.
//!
//! A resource type gets a [`ComponentId`] from the same registry as components, so systems'
//! resource accesses live in the same [`Access`](crate::Access) sets as their component
//! accesses (a type used both ways is conservatively treated as one thing).
//!
//! Each resource sits in its own `UnsafeCell`, so that a scheduler can hand one system
//! `&mut R` while other systems read other resources, without ever forming a `&mut` to the
//! shared container. Beside it are its change ticks, as for a component: when it was
//! inserted, and when it was last accessed mutably (its own `UnsafeCell`, written by the one
//! holder of `&mut R`), which `Res::is_changed` and friends compare against a system's last
//! run.

use std::any::{Any, type_name};
use std::cell::UnsafeCell;

use crate::change::RunTicks;
use crate::change::{Mut, Ref, Tick};
use crate::component::{Component, ComponentId};
use crate::world::{UnsafeWorldCell, World};

type ErasedCell = UnsafeCell<dyn Any + Send + Sync>;

/// Why a resource could not be accessed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ResourceError {
    /// No resource of this type is in the world.
    Missing {
        /// The resource's type name.
        resource: &'static str,
    },
}

impl std::fmt::Display for ResourceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let Self::Missing { resource } = self;
        write!(
            f,
            "resource `{resource}` does not exist; add it with `World::insert_resource` or `init_resource`"
        )
    }
}

impl std::error::Error for ResourceError {}

#[cold]
fn missing<R>() -> ResourceError {
    ResourceError::Missing {
        resource: type_name::<R>(),
    }
}

/// One stored resource and its change ticks.
struct Slot {
    value: Box<ErasedCell>,
    /// When the resource was inserted (a replacement keeps it).
    added: Tick,
    /// When it was last inserted or accessed mutably; written through shared access only by
    /// the holder of the value's `&mut`.
    changed: UnsafeCell<Tick>,
}

impl Slot {
    /// A pointer to the value, as `R`.
    ///
    /// The slot must be `R`'s (stored under `R`'s id); it then holds an `R` because
    /// `insert_resource` is the only writer and keys each value by its own type's id.
    fn ptr<R>(&self) -> *mut R {
        self.value.get().cast::<R>()
    }
}

/// The resource slots of a world, indexed by [`ComponentId`].
#[derive(Default)]
pub(crate) struct Resources {
    slots: Vec<Option<Slot>>,
}

// SAFETY: the cells are only written through `&mut Resources`, or through an
// `UnsafeWorldCell` whose caller holds exclusive access to that one resource (the unsafe
// accessors' contract). Resource values are `Send + Sync`.
unsafe impl Sync for Resources {}

// Like the type-erased component columns, resource slots do not carry their value types'
// unwind-safety markers: a world observed after a caught panic is structurally consistent,
// and values a panicking system was mutating are as valid as any `&mut` left mid-update.
impl std::panic::UnwindSafe for Resources {}
impl std::panic::RefUnwindSafe for Resources {}

impl Resources {
    /// Clamps every resource's ticks older than the maximum change age (see
    /// [`World::check_change_ticks`]).
    pub(crate) fn check_change_ticks(&mut self, now: Tick) {
        for slot in self.slots.iter_mut().flatten() {
            slot.added.clamp_age(now);
            slot.changed.get_mut().clamp_age(now);
        }
    }
}

#[cfg(feature = "serde")]
impl Resources {
    /// Resource `id`'s `added` and `changed` ticks, when present (for a save).
    pub(crate) fn ticks_by_id(&self, id: ComponentId) -> Option<(Tick, Tick)> {
        let slot = self.slots.get(id.index())?.as_ref()?;
        // SAFETY: reading the tick through `&self`; it is written only by the holder of the
        // value's `&mut`, which a `&Resources` excludes on the safe paths, and a save
        // borrows the world shared.
        Some((slot.added, unsafe { *slot.changed.get() }))
    }

    /// Sets resource `id`'s ticks (a load restoring them); nothing when it is absent.
    pub(crate) fn set_ticks_by_id(&mut self, id: ComponentId, added: Tick, changed: Tick) {
        if let Some(Some(slot)) = self.slots.get_mut(id.index()) {
            slot.added = added;
            *slot.changed.get_mut() = changed;
        }
    }
}

impl std::fmt::Debug for Resources {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Resources")
            .field("count", &self.slots.iter().flatten().count())
            .finish()
    }
}

impl World {
    /// Inserts (or replaces) the resource of type `R`, returning the old value if any.
    ///
    /// ```
    /// struct Score(u32);
    /// let mut world = tabula::World::new();
    /// world.insert_resource(Score(1));
    /// world.resource_mut::<Score>()?.0 += 1;
    /// assert_eq!(world.resource::<Score>()?.0, 2);
    /// assert_eq!(world.remove_resource::<Score>()?.0, 2);
    /// assert!(world.resource::<Score>().is_err());
    /// # Ok::<(), tabula::ResourceError>(())
    /// ```
    pub fn insert_resource<R: Component>(&mut self, value: R) -> Option<R> {
        let now = self.change_tick();
        let id = self.component_id_or_register::<R>();
        let slots = &mut self.resources_mut().slots;
        if slots.len() <= id.index() {
            slots.resize_with(id.index() + 1, || None);
        }
        let value: Box<ErasedCell> = Box::new(UnsafeCell::new(value));
        match &mut slots[id.index()] {
            // A replacement is a change, not an addition.
            Some(slot) => {
                *slot.changed.get_mut() = now;
                let old = std::mem::replace(&mut slot.value, value);
                // SAFETY: the slot under `R`'s id only ever holds an `R`.
                Some(unsafe { unbox::<R>(old) })
            }
            empty @ None => {
                *empty = Some(Slot {
                    value,
                    added: now,
                    changed: UnsafeCell::new(now),
                });
                None
            }
        }
    }

    /// Inserts `R::default()` unless an `R` is already present.
    pub fn init_resource<R: Component + Default>(&mut self) {
        if !self.contains_resource::<R>() {
            self.insert_resource(R::default());
        }
    }

    /// Removes the resource of type `R` and returns it.
    pub fn remove_resource<R: Component>(&mut self) -> Result<R, ResourceError> {
        self.take_resource::<R>().map(|(value, _)| value)
    }

    /// The slot of resource type `R`, if one is stored.
    fn resource_slot<R: Component>(&self) -> Option<&Slot> {
        let id = self.components().id::<R>()?;
        self.resources().slots.get(id.index())?.as_ref()
    }

    /// The slot entry of resource type `R` (`None` when the type has no slot yet).
    fn resource_entry<R: Component>(&mut self) -> Option<&mut Option<Slot>> {
        let id = self.components().id::<R>()?;
        self.resources_mut().slots.get_mut(id.index())
    }

    /// Removes resource `R`, with its `added` tick.
    fn take_resource<R: Component>(&mut self) -> Result<(R, Tick), ResourceError> {
        let slot = self
            .resource_entry::<R>()
            .and_then(Option::take)
            .ok_or_else(missing::<R>)?;
        // SAFETY: the slot under `R`'s id only ever holds an `R`.
        Ok((unsafe { unbox::<R>(slot.value) }, slot.added))
    }

    /// True when a resource of type `R` is present.
    pub fn contains_resource<R: Component>(&self) -> bool {
        self.resource_slot::<R>().is_some()
    }

    /// The resource of type `R`.
    pub fn resource<R: Component>(&self) -> Result<&R, ResourceError> {
        let slot = self.resource_slot::<R>().ok_or_else(missing::<R>)?;
        // SAFETY: the slot holds an `R`; `&self` rules out any writer.
        Ok(unsafe { &*slot.ptr::<R>() })
    }

    /// The resource of type `R`, mutably.
    ///
    /// The access counts as a change (`Res::is_changed` in systems sees it), whether or not
    /// the value is written.
    pub fn resource_mut<R: Component>(&mut self) -> Result<&mut R, ResourceError> {
        let now = self.change_tick();
        let slot = self
            .resource_entry::<R>()
            .and_then(Option::as_mut)
            .ok_or_else(missing::<R>)?;
        *slot.changed.get_mut() = now;
        // SAFETY: the slot holds an `R`; `&mut self` makes this the only reference.
        Ok(unsafe { &mut *slot.ptr::<R>() })
    }

    /// Takes resource `R` out for the length of `f`, which gets the world (without `R`) and
    /// the resource mutably at once; `R` is put back afterwards, also when `f` panics.
    ///
    /// ```
    /// use tabula::World;
    ///
    /// struct Spawner { next: u32 }
    /// struct Id(u32);
    ///
    /// let mut world = World::new();
    /// world.insert_resource(Spawner { next: 7 });
    /// let e = world.resource_scope(|world, spawner: &mut Spawner| {
    ///     spawner.next += 1;
    ///     world.spawn((Id(spawner.next),))
    /// })?;
    /// assert_eq!(world.get::<Id>(e).unwrap().0, 8);
    /// assert_eq!(world.resource::<Spawner>()?.next, 8);
    /// # Ok::<(), tabula::ResourceError>(())
    /// ```
    ///
    /// # Errors
    /// [`ResourceError::Missing`] when there is no `R`; `f` is not called.
    ///
    /// # Panics
    /// When `f` inserts another `R` (a mistake: it would replace the one in scope); the one
    /// in scope is put back first, and the one `f` inserted is dropped.
    pub fn resource_scope<R: Component, T>(
        &mut self,
        f: impl FnOnce(&mut World, &mut R) -> T,
    ) -> Result<T, ResourceError> {
        /// Puts the resource back when dropped, on return and on unwind alike.
        struct PutBack<'a, R: Component> {
            world: &'a mut World,
            value: Option<R>,
            added: Tick,
        }
        impl<R: Component> Drop for PutBack<'_, R> {
            fn drop(&mut self) {
                if let Some(value) = self.value.take() {
                    let inserted = self.world.insert_resource(value);
                    // Put back where none is, it keeps its `added` tick (and counts as
                    // changed, having been lent out mutably).
                    if inserted.is_none()
                        && let Some(Some(slot)) = self.world.resource_entry::<R>()
                    {
                        slot.added = self.added;
                    }
                    if inserted.is_some() && !std::thread::panicking() {
                        panic!(
                            "resource `{}` was inserted during `resource_scope` over it; the one in \
                             scope was put back and the inserted one dropped. Change the resource \
                             through the `&mut` the scope hands out instead",
                            type_name::<R>()
                        );
                    }
                }
            }
        }
        let (value, added) = self.take_resource::<R>()?;
        let mut scope = PutBack {
            world: self,
            value: Some(value),
            added,
        };
        let PutBack { world, value, .. } = &mut scope;
        let value = value.as_mut().expect("the value is put back only on drop");
        Ok(f(world, value))
    }

    /// The id under which resource type `R` is tracked in accesses (registering it).
    pub fn register_resource<R: Component>(&mut self) -> ComponentId {
        self.component_id_or_register::<R>()
    }
}

/// Turns an erased cell back into its value.
///
/// # Safety
/// The cell holds an `R`.
unsafe fn unbox<R>(cell: Box<ErasedCell>) -> R {
    let raw = Box::into_raw(cell).cast::<UnsafeCell<R>>();
    // SAFETY: the allocation was made as a `Box<UnsafeCell<R>>` (the caller's contract) and
    // unsized to the erased form; casting back restores the original type and layout.
    unsafe { Box::from_raw(raw) }.into_inner()
}

impl<'w> UnsafeWorldCell<'w> {
    /// The resource of type `R`, shared.
    ///
    /// # Safety
    /// For `'w`, nobody writes this resource (the caller holds a read access to it).
    pub unsafe fn get_resource<R: Component>(self) -> Option<&'w R> {
        // SAFETY: only the registry and the slot list (structure) are read here.
        let slot = unsafe { self.world() }.resource_slot::<R>()?;
        // SAFETY: the slot holds an `R`; the caller guarantees no writer.
        Some(unsafe { &*slot.ptr::<R>() })
    }

    /// The resource of type `R`, exclusively.
    ///
    /// # Safety
    /// The cell allows mutation, and for `'w` nobody else reads or writes this resource (the
    /// caller holds a write access to it).
    pub unsafe fn get_resource_mut<R: Component>(self) -> Option<&'w mut R> {
        debug_assert!(
            self.allows_mutation(),
            "get_resource_mut on a read-only UnsafeWorldCell"
        );
        // SAFETY: only the registry and the slot list (structure) are read here.
        let slot = unsafe { self.world() }.resource_slot::<R>()?;
        // SAFETY: the slot holds an `R` inside an `UnsafeCell`; the caller guarantees this is
        // the only access.
        Some(unsafe { &mut *slot.ptr::<R>() })
    }

    /// The resource of type `R`, shared, with its change ticks seen from `run`.
    ///
    /// # Safety
    /// As [`get_resource`](Self::get_resource).
    pub unsafe fn get_resource_ref<R: Component>(self, run: RunTicks) -> Option<Ref<'w, R>> {
        // SAFETY: only the registry and the slot list (structure) are read here.
        let slot = unsafe { self.world() }.resource_slot::<R>()?;
        // SAFETY: the slot holds an `R`, and its `changed` tick is written only by a holder of
        // `&mut R`; the caller guarantees there is none for `'w`.
        unsafe { Some(Ref::new(&*slot.ptr::<R>(), slot.added, *slot.changed.get(), run)) }
    }

    /// The resource of type `R`, exclusively, as a [`Mut`] that stamps it changed at `run`'s
    /// tick when written.
    ///
    /// # Safety
    /// As [`get_resource_mut`](Self::get_resource_mut).
    pub unsafe fn get_resource_mut_ticked<R: Component>(self, run: RunTicks) -> Option<Mut<'w, R>> {
        debug_assert!(
            self.allows_mutation(),
            "get_resource_mut_ticked on a read-only UnsafeWorldCell"
        );
        // SAFETY: only the registry and the slot list (structure) are read here.
        let slot = unsafe { self.world() }.resource_slot::<R>()?;
        // SAFETY: the slot holds an `R`; the caller guarantees this is the only access to the
        // resource for `'w`, which covers its `changed` tick (a separate `UnsafeCell`).
        unsafe {
            Some(Mut::new(
                &mut *slot.ptr::<R>(),
                slot.added,
                &mut *slot.changed.get(),
                Tick::ancient(run.this_run),
                run,
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    struct Counted(Arc<AtomicUsize>);
    impl Drop for Counted {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn resource_scope_puts_the_resource_back_whatever_happens() {
        use std::panic::{AssertUnwindSafe, catch_unwind};
        #[derive(Debug, PartialEq)]
        struct Score(u32);
        let mut world = World::new();
        // Missing: an error, and `f` never runs.
        let mut called = false;
        assert!(matches!(
            world.resource_scope(|_, _: &mut Score| called = true),
            Err(ResourceError::Missing { .. })
        ));
        assert!(!called);
        // The world in scope lacks the resource; the change sticks.
        world.insert_resource(Score(1));
        let seen = world
            .resource_scope(|world, score: &mut Score| {
                score.0 += 1;
                world.contains_resource::<Score>()
            })
            .unwrap();
        assert!(!seen);
        assert_eq!(world.resource::<Score>(), Ok(&Score(2)));
        // A panic inside: put back, with what was done before the panic.
        let caught = catch_unwind(AssertUnwindSafe(|| {
            world.resource_scope(|_, score: &mut Score| {
                score.0 = 10;
                panic!("inside the scope");
            })
        }));
        assert!(caught.is_err());
        assert_eq!(world.resource::<Score>(), Ok(&Score(10)));
        // Inserting the same type inside is refused, keeping the one in scope.
        let caught = catch_unwind(AssertUnwindSafe(|| {
            world.resource_scope(|world, score: &mut Score| {
                score.0 = 11;
                world.insert_resource(Score(99));
            })
        }));
        let message = caught.unwrap_err().downcast_ref::<String>().cloned().unwrap();
        assert!(
            message.contains("resource_scope") && message.contains("Score"),
            "{message}"
        );
        assert_eq!(world.resource::<Score>(), Ok(&Score(11)));
    }

    /// Whether resource `R` reads as (added, changed) to an observer whose last run is
    /// `last`, which this call advances, as a system run would.
    fn seen<R: Component>(world: &World, last: &mut crate::LastRun) -> (bool, bool) {
        let run = world.start_run(last);
        // SAFETY: nothing writes the resource while the shared `Ref` lives.
        let value = unsafe { UnsafeWorldCell::new_readonly(world).get_resource_ref::<R>(run) }.unwrap();
        (value.is_added(), value.is_changed())
    }

    #[test]
    fn resources_carry_added_and_changed_ticks() {
        struct Score(u32);
        let mut world = World::new();
        let mut last = crate::LastRun::NEVER;
        world.insert_resource(Score(0));
        assert_eq!(seen::<Score>(&world, &mut last), (true, true));
        assert_eq!(seen::<Score>(&world, &mut last), (false, false));
        // Shared access changes nothing; `resource_mut` counts as a change.
        let _ = world.resource::<Score>().unwrap().0;
        assert_eq!(seen::<Score>(&world, &mut last), (false, false));
        world.resource_mut::<Score>().unwrap().0 = 1;
        assert_eq!(seen::<Score>(&world, &mut last), (false, true));
        // A replacement is a change, not an addition.
        world.insert_resource(Score(2));
        assert_eq!(seen::<Score>(&world, &mut last), (false, true));
        // A `Mut` from the cell marks the change only when written through, with the tick
        // of the writer's run.
        let mut writer = crate::LastRun::NEVER;
        {
            let run = world.start_run(&mut writer);
            let cell = UnsafeWorldCell::new_mutable(&mut world);
            // SAFETY: the only access to `Score` while the `Mut` lives.
            let mut score = unsafe { cell.get_resource_mut_ticked::<Score>(run) }.unwrap();
            let _ = score.0;
            score.bypass_change_detection().0 = 3;
        }
        assert_eq!(seen::<Score>(&world, &mut last), (false, false));
        {
            let run = world.start_run(&mut writer);
            let cell = UnsafeWorldCell::new_mutable(&mut world);
            // SAFETY: as above.
            let mut score = unsafe { cell.get_resource_mut_ticked::<Score>(run) }.unwrap();
            score.0 = 4;
        }
        assert_eq!(seen::<Score>(&world, &mut last), (false, true));
        // `resource_scope` keeps the added tick and counts as a change.
        world.resource_scope(|_, score: &mut Score| score.0 = 5).unwrap();
        assert_eq!(seen::<Score>(&world, &mut last), (false, true));
        // Removed and inserted again: added anew.
        world.remove_resource::<Score>().unwrap();
        world.insert_resource(Score(6));
        assert_eq!(seen::<Score>(&world, &mut last), (true, true));
    }

    #[test]
    fn old_resource_ticks_never_read_as_new_after_the_clock_wraps() {
        struct Score;
        let mut world = World::new();
        world.insert_resource(Score);
        let mut last = crate::LastRun::NEVER;
        assert_eq!(seen::<Score>(&world, &mut last), (true, true));
        // Round the clock until it is just past the insert's tick again, checking ticks
        // as a scheduler does; the observer never runs meanwhile (its `LastRun` is 64-bit).
        let mut remaining = u64::from(u32::MAX) + 10;
        while remaining > 0 {
            let step = remaining.min(u64::from(crate::CHECK_TICK_THRESHOLD)) as u32;
            world.advance_change_tick_for_tests(step);
            world.check_change_ticks();
            remaining -= u64::from(step);
        }
        assert_eq!(seen::<Score>(&world, &mut last), (false, false));
    }

    #[test]
    fn insert_replace_remove_and_drop() {
        let drops = Arc::new(AtomicUsize::new(0));
        let mut world = World::new();
        assert!(world.insert_resource(Counted(drops.clone())).is_none());
        let old = world.insert_resource(Counted(drops.clone()));
        assert!(old.is_some());
        drop(old);
        assert_eq!(drops.load(Ordering::SeqCst), 1);
        let err = world.resource::<String>().unwrap_err();
        assert!(err.to_string().contains("alloc::string::String"));
        world.insert_resource(String::from("hi"));
        world.resource_mut::<String>().unwrap().push('!');
        assert_eq!(world.resource::<String>().map(String::as_str), Ok("hi!"));
        assert_eq!(world.remove_resource::<String>().as_deref(), Ok("hi!"));
        assert!(world.remove_resource::<String>().is_err());
        drop(world);
        assert_eq!(drops.load(Ordering::SeqCst), 2, "the world drops its resources");
    }

    #[test]
    fn over_aligned_and_zero_sized_resources() {
        #[repr(align(64))]
        struct Big(u8);
        struct Unit;
        let mut world = World::new();
        world.insert_resource(Big(7));
        world.insert_resource(Unit);
        let big = world.resource::<Big>().unwrap();
        assert_eq!((big.0, std::ptr::from_ref(big).addr() % 64), (7, 0));
        assert!(world.contains_resource::<Unit>());
        world.init_resource::<u64>();
        assert_eq!(world.resource::<u64>(), Ok(&0));
    }

    #[test]
    fn cell_access_to_distinct_resources_at_once() {
        let mut world = World::new();
        world.insert_resource(1u32);
        world.insert_resource(2u64);
        let cell = UnsafeWorldCell::new_mutable(&mut world);
        // SAFETY: one writer of `u32`, one reader of `u64`: disjoint accesses.
        let (a, b) = unsafe {
            (
                cell.get_resource_mut::<u32>().unwrap(),
                cell.get_resource::<u64>().unwrap(),
            )
        };
        *a += *b as u32;
        assert_eq!(world.resource::<u32>(), Ok(&3));
    }
}
