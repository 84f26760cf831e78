//! `Scratch`: per-run bump arenas for the temporary collections a system builds every frame
//! (spatial buckets, sort buffers, neighbour lists), without a heap allocation per frame.

use std::fmt;
use std::ops::{Deref, DerefMut};

use bumpalo::Bump;
use parking_lot::Mutex;
use tabula_core::{UnsafeWorldCell, World};
use thread_local::ThreadLocal;

use super::{RunTicks, SystemMeta, SystemParam};

/// Scratch memory for one run of a system: a bump arena of the system's own, emptied at the
/// start of each of its runs, for the temporary collections it builds every frame.
///
/// Allocating is a pointer bump, and an arena keeps its memory from run to run (after a few
/// runs, its largest block holds a whole run's allocations), so a system that builds the same
/// collections every frame stops allocating from the heap at all. [`vec`](Self::vec) makes a
/// growable [`ScratchVec`] (and [`vec_from_iter`](Self::vec_from_iter) a filled one);
/// [`alloc_slice_fill_iter`](Self::alloc_slice_fill_iter),
/// [`alloc_slice_fill_copy`](Self::alloc_slice_fill_copy) and
/// [`alloc_slice_copy`](Self::alloc_slice_copy) fill a slice at once. The arena is a
/// [bumpalo](https://docs.rs/bumpalo) `Bump`, kept private so that tabula's API does not
/// depend on bumpalo's.
///
/// **Lifetime.** What a run allocates lives until the start of the system's next run, and no
/// longer: allocations borrow the arena for `'s`, the run's borrow of the system's state, so
/// the borrow checker keeps them from escaping the run (into a resource, a `Local` or a
/// command) and resetting the arena never leaves a dangling reference. Values put in the arena
/// with [`alloc`](Self::alloc) or the slice methods are never dropped (their memory is simply
/// reused); use a [`ScratchVec`], which drops its elements, for values that own heap memory.
///
/// **Threads.** The arena is not `Sync`, so a `Scratch` cannot be used from a `par_for_each`
/// closure (it does not compile). [`per_worker`](Self::per_worker) gives the closures a
/// [`ParScratch`] instead: one arena per thread, emptied at the start of the run too.
///
/// Declares no access: it touches no world data, so it never orders two systems.
///
/// ```
/// use tabula::prelude::*;
///
/// struct Position(i32);
/// #[derive(Default)]
/// struct Crowded(usize);
///
/// /// Buckets positions into cells of 10 and counts the cells holding more than one.
/// fn crowding(positions: Query<&Position>, scratch: Scratch, mut crowded: ResMut<Crowded>) {
///     let mut cells = scratch.vec_with_capacity(positions.count());
///     cells.extend(positions.iter().map(|p| p.0.div_euclid(10)));
///     cells.sort_unstable();
///     crowded.0 = cells.chunk_by(|a, b| a == b).filter(|cell| cell.len() > 1).count();
/// } // `cells` is the arena's: the next run reuses its memory
///
/// let mut world = World::new();
/// world.init_resource::<Crowded>();
/// world.spawn_batch([1, 5, 14, 31, 38, 39].map(|x| (Position(x),))).for_each(drop);
/// let mut schedule = Schedule::new();
/// schedule.add_systems(crowding);
/// schedule.run(&mut world);
/// schedule.run(&mut world);
/// assert_eq!(world.resource::<Crowded>().unwrap().0, 2); // cells 0 and 3
/// ```
///
/// Nothing allocated in the arena outlives the run:
///
/// ```compile_fail
/// use tabula::prelude::*;
///
/// #[derive(Default)]
/// struct Kept(Option<&'static u32>);
///
/// fn keep(scratch: Scratch, mut kept: ResMut<Kept>) {
///     kept.0 = Some(scratch.alloc(1)); // error: borrowed data escapes the run
/// }
/// # let mut schedule = Schedule::new();
/// # schedule.add_systems(keep);
/// ```
///
/// nor is the arena shared between threads:
///
/// ```compile_fail
/// use tabula::prelude::*;
///
/// struct Mass(f32);
///
/// fn weigh(masses: Query<&Mass>, scratch: Scratch) {
///     masses.par_for_each(|mass| {
///         scratch.alloc(mass.0); // error: `Bump` cannot be shared between threads
///     });
/// }
/// # let mut schedule = Schedule::new();
/// # schedule.add_systems(weigh);
/// ```
#[derive(Clone, Copy)]
pub struct Scratch<'s> {
    bump: &'s Bump,
    workers: &'s ThreadLocal<Bump>,
}

impl<'s> Scratch<'s> {
    /// An empty growable vector in the arena.
    pub fn vec<T>(&self) -> ScratchVec<'s, T> {
        ScratchVec(bumpalo::collections::Vec::new_in(self.bump))
    }

    /// An empty growable vector in the arena, with room for `capacity` elements.
    pub fn vec_with_capacity<T>(&self, capacity: usize) -> ScratchVec<'s, T> {
        ScratchVec(bumpalo::collections::Vec::with_capacity_in(capacity, self.bump))
    }

    /// A growable vector in the arena holding `iter`'s items (for any iterator; a query's,
    /// say, whose length is not known up front).
    pub fn vec_from_iter<T>(&self, iter: impl IntoIterator<Item = T>) -> ScratchVec<'s, T> {
        ScratchVec(bumpalo::collections::Vec::from_iter_in(iter, self.bump))
    }

    /// Moves `value` into the arena; it is never dropped.
    pub fn alloc<T>(&self, value: T) -> &'s mut T {
        self.bump.alloc(value)
    }

    /// A slice of `iter`'s items, in one allocation; they are never dropped.
    ///
    /// # Panics
    /// When `iter` yields fewer items than its `len` says.
    pub fn alloc_slice_fill_iter<T, I>(&self, iter: I) -> &'s mut [T]
    where
        I: IntoIterator<Item = T>,
        I::IntoIter: ExactSizeIterator,
    {
        self.bump.alloc_slice_fill_iter(iter)
    }

    /// A slice of `len` copies of `value` (zeroed counters, say).
    pub fn alloc_slice_fill_copy<T: Copy>(&self, len: usize, value: T) -> &'s mut [T] {
        self.bump.alloc_slice_fill_copy(len, value)
    }

    /// A copy of `items` in the arena.
    pub fn alloc_slice_copy<T: Copy>(&self, items: &[T]) -> &'s mut [T] {
        self.bump.alloc_slice_copy(items)
    }

    /// A copy of `text` in the arena.
    pub fn alloc_str(&self, text: &str) -> &'s mut str {
        self.bump.alloc_str(text)
    }

    /// The bytes the arena holds from the heap, used or not: after the first runs, the same
    /// from run to run.
    pub fn allocated_bytes(&self) -> usize {
        self.bump.allocated_bytes()
    }

    /// One arena per thread, for `par_for_each` closures (see [`ParScratch`]).
    pub fn per_worker(&self) -> ParScratch<'s> {
        ParScratch {
            workers: self.workers,
        }
    }
}

impl fmt::Debug for Scratch<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Scratch")
            .field("allocated_bytes", &self.allocated_bytes())
            .finish_non_exhaustive()
    }
}

/// A growable vector in a [`Scratch`] arena, made by [`Scratch::vec`],
/// [`vec_with_capacity`](Scratch::vec_with_capacity) and
/// [`vec_from_iter`](Scratch::vec_from_iter): `Vec`'s everyday methods, and a slice through
/// `Deref` (`len`, `iter`, `sort_unstable`, `chunk_by`, ...). Its elements are dropped with
/// it; its memory goes back to the arena when the system next runs. Growing the arena's most
/// recent allocation extends it in place.
pub struct ScratchVec<'s, T>(bumpalo::collections::Vec<'s, T>);

impl<'s, T> ScratchVec<'s, T> {
    /// Appends `value`.
    pub fn push(&mut self, value: T) {
        self.0.push(value);
    }

    /// Removes the last element and returns it.
    pub fn pop(&mut self) -> Option<T> {
        self.0.pop()
    }

    /// Inserts `value` at `index`, shifting the elements after it.
    ///
    /// # Panics
    /// When `index > len`.
    pub fn insert(&mut self, index: usize, value: T) {
        self.0.insert(index, value);
    }

    /// Removes the element at `index`, shifting the elements after it.
    ///
    /// # Panics
    /// When `index >= len`.
    pub fn remove(&mut self, index: usize) -> T {
        self.0.remove(index)
    }

    /// Removes the element at `index`, moving the last element into its place.
    ///
    /// # Panics
    /// When `index >= len`.
    pub fn swap_remove(&mut self, index: usize) -> T {
        self.0.swap_remove(index)
    }

    /// Keeps the first `len` elements, dropping the rest.
    pub fn truncate(&mut self, len: usize) {
        self.0.truncate(len);
    }

    /// Drops every element, keeping the capacity.
    pub fn clear(&mut self) {
        self.0.clear();
    }

    /// Keeps the elements for which `keep` returns true, in order.
    pub fn retain(&mut self, keep: impl FnMut(&T) -> bool) {
        self.0.retain(keep);
    }

    /// Makes room for at least `additional` more elements.
    pub fn reserve(&mut self, additional: usize) {
        self.0.reserve(additional);
    }

    /// How many elements fit without growing.
    pub fn capacity(&self) -> usize {
        self.0.capacity()
    }

    /// Appends clones of `items`.
    pub fn extend_from_slice(&mut self, items: &[T])
    where
        T: Clone,
    {
        self.0.extend_from_slice(items);
    }

    /// Grows to `len` elements with clones of `value`, or truncates to `len`.
    pub fn resize(&mut self, len: usize, value: T)
    where
        T: Clone,
    {
        self.0.resize(len, value);
    }

    /// The elements as a slice.
    pub fn as_slice(&self) -> &[T] {
        &self.0
    }

    /// The elements as a mutable slice.
    pub fn as_mut_slice(&mut self) -> &mut [T] {
        &mut self.0
    }

    /// The elements as a slice of the arena, for the rest of the run; they are then never
    /// dropped.
    pub fn into_slice(self) -> &'s mut [T] {
        self.0.into_bump_slice_mut()
    }
}

impl<T> Deref for ScratchVec<'_, T> {
    type Target = [T];

    fn deref(&self) -> &[T] {
        &self.0
    }
}

impl<T> DerefMut for ScratchVec<'_, T> {
    fn deref_mut(&mut self) -> &mut [T] {
        &mut self.0
    }
}

impl<T> Extend<T> for ScratchVec<'_, T> {
    fn extend<I: IntoIterator<Item = T>>(&mut self, iter: I) {
        self.0.extend(iter);
    }
}

impl<'a, T> IntoIterator for &'a ScratchVec<'_, T> {
    type Item = &'a T;
    type IntoIter = std::slice::Iter<'a, T>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

impl<'a, T> IntoIterator for &'a mut ScratchVec<'_, T> {
    type Item = &'a mut T;
    type IntoIter = std::slice::IterMut<'a, T>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.iter_mut()
    }
}

impl<T: fmt::Debug> fmt::Debug for ScratchVec<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

/// One scratch arena per thread, for the closures of `par_for_each`: [`get`](Self::get)
/// returns the calling thread's arena, as a [`Scratch`] with the same lifetime rule (its
/// allocations live until the system's next run). Made by [`Scratch::per_worker`]; `Send` and
/// `Sync`, so closures can capture it.
///
/// Every thread gets its own arena the first time it asks, and keeps it (emptied at the
/// start of each run) for the life of the system; the arenas number at most the threads
/// alive at once (an exited thread's arena goes to the next new thread). The system's own
/// thread has one here too, apart from the [`Scratch`] it was handed. Which rows a thread
/// handles depends on timing, so which arena an allocation lands in does too: build results
/// that do not depend on it (per-row temporaries, as below), and the outcome is the same with
/// one thread or many.
///
/// ```
/// use tabula::prelude::*;
///
/// struct Position(i32);
/// #[derive(Default)]
/// struct Neighbours(u32);
///
/// /// For each position, the positions within 2 of it, found through a per-row list.
/// fn neighbours(mut q: Query<(&Position, &mut Neighbours)>, all: Query<&Position>, scratch: Scratch) {
///     let xs = scratch.vec_from_iter(all.iter().map(|p| p.0));
///     let xs = &xs[..]; // shared by the closures
///     let workers = scratch.per_worker();
///     q.par_for_each_mut(|(p, mut n)| {
///         let mut near = workers.get().vec();
///         near.extend(xs.iter().copied().filter(|&x| x != p.0 && (x - p.0).abs() <= 2));
///         n.0 = near.len() as u32;
///     });
/// }
///
/// let mut world = World::new();
/// let ids: Vec<_> = world.spawn_batch([0, 1, 2, 10].map(|x| (Position(x), Neighbours(0)))).collect();
/// let mut schedule = Schedule::new();
/// schedule.add_systems(neighbours);
/// schedule.run(&mut world);
/// let counts: Vec<u32> = ids.iter().map(|&e| world.get::<Neighbours>(e).unwrap().0).collect();
/// assert_eq!(counts, [2, 2, 2, 0]);
/// ```
#[derive(Clone, Copy)]
pub struct ParScratch<'s> {
    workers: &'s ThreadLocal<Bump>,
}

impl<'s> ParScratch<'s> {
    /// The calling thread's arena (made on the thread's first call). The `Scratch` it returns
    /// cannot leave the thread, but what it allocates can, if it is `Send`.
    pub fn get(&self) -> Scratch<'s> {
        Scratch {
            bump: self.workers.get_or_default(),
            workers: self.workers,
        }
    }
}

/// The state of [`Scratch`]: the system's arena and its threads' arenas.
#[derive(Default)]
pub struct ScratchArenas {
    /// Only ever reached through `get_mut` (the state is `&mut` when the parameter is
    /// fetched), so it is never locked: the mutex is there because a system's state must be
    /// `Sync`, and `Bump` is not.
    main: Mutex<Bump>,
    workers: ThreadLocal<Bump>,
}

// SAFETY: declares no access and touches no world data, only the system's own arenas.
unsafe impl SystemParam for Scratch<'_> {
    type State = ScratchArenas;
    type Item<'w, 's> = Scratch<'s>;

    fn init_state(_: &mut World, _: &mut SystemMeta) -> ScratchArenas {
        ScratchArenas::default()
    }

    unsafe fn get_param<'w, 's>(
        state: &'s mut ScratchArenas,
        _: &SystemMeta,
        _: UnsafeWorldCell<'w>,
        _: RunTicks,
    ) -> Scratch<'s> {
        // `&mut` proves the last run's allocations are gone: each arena keeps its largest
        // block and frees the others.
        let main = state.main.get_mut();
        main.reset();
        for worker in state.workers.iter_mut() {
            worker.reset();
        }
        Scratch {
            bump: main,
            workers: &state.workers,
        }
    }
}
