//! [`ParallelCommandQueue`]: commands recorded from many threads at once — from the closure
//! of a `par_for_each` — and applied in the order a serial run would have recorded them,
//! whichever thread ran which rows.
//!
//! The order to reproduce is that of a *serial execution*: every `par_for_each` taken as a
//! `for_each`, its rows visited in order, a pass nested in a closure running to its end
//! before the closure goes on. Each [`command_scope`](ParallelCommandQueue::command_scope)
//! gets a key, a path of numbers, and the queue applies its scopes sorted by key
//! (lexicographically):
//!
//! * Each thread records in a *context*: a path and a counter of events. A scope is an event:
//!   its key is `path ++ [event]`, and the counter moves on. A parallel pass starting is an
//!   event too, taken on the calling thread: `base = path ++ [event]`.
//! * Each run of the pass (rows `start..` of its `archetype`th matched archetype) records, on
//!   whichever thread runs it, in the context `base ++ [archetype, start]` with its counter
//!   at 0 ([`in_run`]); the thread's own context is put back afterwards, also on unwind. A
//!   pass that runs serially (small, or one thread) is one run, `base ++ [0, 0]`. A pass
//!   nested in a run's closure takes its base from that run's context, and so on down.
//! * The *root* context (no run active) is, in a schedule, one per system run: the executor
//!   starts each system in a fresh root ([`with_fresh_command_context`]) and puts the
//!   thread's context back afterwards, so a system that a waiting thread picks up never
//!   records under a run of another system. Outside a schedule a thread's root is its own:
//!   an empty path with a counter that only grows, which orders that thread's serial code.
//!
//! Why sorting keys gives serial order: within one context, events are numbered in the order
//! the context's code makes them (one thread runs it, in program order). Everything recorded
//! inside a pass has its base as a prefix, so it sorts after what the context recorded
//! before the pass and before what it recorded after, as in a serial run. Within a pass, the
//! keys go on with `(archetype, start)` and then the run's own events: runs never share a
//! row, so that pair orders the runs as a serial pass visits them, and within a run rows are
//! visited in order. A serial pass's keys, `base ++ [0, 0, n]`, sort the same against
//! everything outside the pass as the parallel runs' would. No key is a prefix of another (a
//! scope's event is never a pass's base, and a run's path always carries both `archetype`
//! and `start`), so the first place two keys differ decides, at every depth. The keys
//! themselves differ between a serial and a parallel pass; their order does not, so the
//! world comes out the same with one thread or many.
//!
//! The limit: a scope recorded from a rayon task that the closure itself starts (a
//! `rayon::join` or `rayon::scope` inside the closure, rather than a nested `par_for_each`)
//! records in whatever context the thread running the task has: the closure's run, if the
//! task stays on its thread, or the context of the other thread. Its commands still apply
//! together and in the order recorded, and the scopes of every run still apply in row order
//! (an event taken meanwhile leaves a gap in a run's numbering, never a swap), but where
//! such a scope falls among the others is not defined and may change from run to run.
//! Scopes recorded outside any schedule from root contexts of several threads into one
//! queue have no defined order between the threads either (their keys may even be equal).
//!
//! Cost: a scope that records nothing touches one thread-local counter; one that records
//! copies the context's path (a few numbers, inline) and takes the queue's lock once. A run
//! sets and restores the context once, and runs are coarse. A system's fresh root, entered
//! from a root (the usual case), saves and restores the counter alone.

use std::cell::{Cell, RefCell};

use parking_lot::Mutex;
use smallvec::SmallVec;

use super::commands::{despawn_command, insert_command, remove_command, spawn_command};
use super::{Command, CommandError, CommandQueue};
use crate::bundle::Bundle;
use crate::entity::Entity;
use crate::world::World;

/// Where a command scope stands in serial order: a path down the tree of contexts (see the
/// module docs), compared lexicographically. Eight numbers fit inline: a scope in a pass
/// nested once in a pass that a system runs has a key of seven.
type ScopeKey = SmallVec<[u64; 8]>;

thread_local! {
    /// The path of the context this thread records in: empty at a root, `base ++
    /// [archetype, start]` in a run.
    static PATH: RefCell<ScopeKey> = const { RefCell::new(SmallVec::new_const()) };
    /// The next event of this thread's context. Kept apart from the path, so that a scope
    /// that records nothing touches only this.
    static NEXT: Cell<u64> = const { Cell::new(0) };
    /// Whether `PATH` is empty, kept beside it by [`enter`] and [`Restore`] (the only
    /// writers of `PATH`), so that a system's fresh root tests it without reaching the path
    /// (a thread-local with a destructor, behind a `RefCell`).
    static AT_ROOT: Cell<bool> = const { Cell::new(true) };
}

/// Takes the next event of this thread's context.
#[inline]
fn next_event() -> u64 {
    NEXT.with(|next| {
        let event = next.get();
        next.set(event + 1);
        event
    })
}

/// The key of `event`, an event of this thread's current context.
fn key_of(event: u64) -> ScopeKey {
    PATH.with(|path| {
        let path = path.borrow();
        let mut key = ScopeKey::with_capacity(path.len() + 1);
        key.extend_from_slice(&path);
        key.push(event);
        key
    })
}

/// Puts a thread's context back when dropped (also on unwind).
struct Restore {
    path: ScopeKey,
    next: u64,
}

impl Drop for Restore {
    fn drop(&mut self) {
        AT_ROOT.with(|at_root| at_root.set(self.path.is_empty()));
        PATH.with(|path| *path.borrow_mut() = std::mem::take(&mut self.path));
        NEXT.with(|next| next.set(self.next));
    }
}

/// Makes `path`, with its counter at 0, this thread's context until the guard is dropped.
fn enter(path: ScopeKey) -> Restore {
    AT_ROOT.with(|at_root| at_root.set(path.is_empty()));
    Restore {
        path: PATH.with(|current| current.replace(path)),
        next: NEXT.with(|next| next.replace(0)),
    }
}

/// The base of a pass's runs: one event of the context that starts the pass.
pub(crate) struct PassBase(ScopeKey);

/// Starts a pass on this thread: takes one event of the current context as its base.
pub(crate) fn begin_pass() -> PassBase {
    PassBase(key_of(next_event()))
}

/// Runs `f` as the run of a pass with `base` that starts at row `start` of the `archetype`th
/// matched archetype: command scopes made meanwhile on this thread are keyed under
/// `base ++ [archetype, start]`. The thread's previous context (a root, or the run a nested
/// pass or a stolen task interrupted) is restored afterwards, also on unwind.
#[inline]
pub(crate) fn in_run<R>(base: &PassBase, archetype: usize, start: usize, f: impl FnOnce() -> R) -> R {
    let mut path = ScopeKey::with_capacity(base.0.len() + 2);
    path.extend_from_slice(&base.0);
    path.push(archetype as u64);
    path.push(start as u64);
    let _restore = enter(path);
    f()
}

/// Runs `f` in a fresh root command context — an empty path, events from 0 — and restores
/// the thread's context afterwards, also on unwind.
///
/// The schedule's executors run each system (its conditions, then the system) in one, so
/// that the command scopes of one system run are ordered among themselves alone (see
/// [`ParallelCommandQueue`]): a system picked up by a thread that waits inside
/// another system's parallel pass must not record under that pass's run. Not meant for other
/// callers; a queue should only hold scopes of one root context per thread.
#[doc(hidden)]
pub fn with_fresh_command_context<R>(f: impl FnOnce() -> R) -> R {
    // Fast path: a thread not inside any run (an executor thread between systems, the
    // usual case) is at a root already, whose path is the fresh one; only the counter
    // needs saving. Swapping the inline path in and out cost ~150 of the ~270 instructions
    // a trivial system took through the executor (`sched_overhead`, `frame_overhead`).
    if AT_ROOT.with(Cell::get) {
        let _restore = RestoreNext(NEXT.with(|next| next.replace(0)));
        return f();
    }
    let _restore = enter(ScopeKey::new());
    f()
}

/// Puts a root context's counter back when dropped (also on unwind): what a fresh root
/// entered from a root has to restore, the path being empty before and after.
struct RestoreNext(u64);

impl Drop for RestoreNext {
    fn drop(&mut self) {
        NEXT.with(|next| next.set(self.0));
    }
}

/// Commands recorded from many threads at once and applied in row order.
///
/// A system gets one through the `ParallelCommands` parameter; its `command_scope` is this
/// queue's. Scopes apply in the order a serial run (every `par_for_each` a `for_each`,
/// nested passes included) would have recorded them; see the module docs for how, and for
/// the one case without a defined place (scopes recorded from rayon tasks the closure starts
/// itself). Spawned entities get their ids when the queue is applied, in that order, so ids
/// too are the same with one thread or many.
///
/// ```
/// use tabula::{ParallelCommandQueue, World};
///
/// struct Fuse(u32);
/// struct Spark;
///
/// let mut world = World::new();
/// world.spawn_batch((0..1000).map(|i| (Fuse(i),))).for_each(drop);
/// let mut queue = ParallelCommandQueue::new();
/// let mut fuses = world.query::<(tabula::Entity, &Fuse)>();
/// fuses.par_for_each(&mut world, |(entity, fuse)| {
///     if fuse.0 % 10 == 0 {
///         queue.command_scope(|commands| {
///             commands.despawn(entity);
///             commands.spawn((Spark,));
///         });
///     }
/// });
/// assert!(queue.apply(&mut world).is_empty());
/// assert_eq!(world.len(), 1000);
/// assert_eq!(world.query::<&Spark>().iter(&world).count(), 100);
/// ```
#[derive(Default)]
pub struct ParallelCommandQueue {
    scopes: Mutex<Vec<(ScopeKey, CommandQueue)>>,
}

impl ParallelCommandQueue {
    /// An empty queue.
    pub fn new() -> Self {
        Self::default()
    }

    /// Runs `record` with a [`ScopedCommands`] whose commands are applied, with the queue,
    /// at this scope's place in row order (see the module docs). Call it from the closure of
    /// a `par_for_each`, once or more per row.
    pub fn command_scope<R>(&self, record: impl FnOnce(&mut ScopedCommands<'_>) -> R) -> R {
        // The event is taken before `record` runs, so that a pass `record` starts (if any)
        // sorts after this scope; the key is only built for a scope that recorded something.
        // Any context `record` entered is restored by now, so the path is the event's.
        let event = next_event();
        let mut queue = CommandQueue::new();
        let result = record(&mut ScopedCommands { queue: &mut queue });
        if !queue.is_empty() {
            let key = key_of(event);
            self.scopes.lock().push((key, queue));
        }
        result
    }

    /// True when no command was recorded.
    pub fn is_empty(&self) -> bool {
        self.scopes.lock().is_empty()
    }

    /// How many commands are recorded, over every scope.
    pub fn len(&self) -> usize {
        self.scopes.lock().iter().map(|(_, queue)| queue.len()).sum()
    }

    /// Applies every scope's commands in row order and returns the ones that were skipped,
    /// as [`CommandQueue::apply`] does.
    pub fn apply(&mut self, world: &mut World) -> Vec<CommandError> {
        let mut scopes = std::mem::take(self.scopes.get_mut());
        // Within one root context, keys are unique and none is a prefix of another (module
        // docs), so the sort is serial order.
        scopes.sort_unstable_by(|(a, _), (b, _)| a.cmp(b));
        let mut errors = Vec::new();
        for (_, mut queue) in scopes {
            errors.extend(queue.apply(world));
        }
        errors
    }
}

impl std::fmt::Debug for ParallelCommandQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ParallelCommandQueue")
            .field("scopes", &self.scopes.lock().len())
            .finish()
    }
}

/// Records commands in one scope of a [`ParallelCommandQueue`].
///
/// Spawns take their id when applied, so `spawn` returns nothing: to act on the new entity,
/// spawn it with everything it needs, or record a closure with [`add`](Self::add) that calls
/// `World::spawn` and uses the id.
#[derive(Debug)]
pub struct ScopedCommands<'a> {
    queue: &'a mut CommandQueue,
}

impl ScopedCommands<'_> {
    /// Spawns an entity with `bundle` when applied.
    pub fn spawn<B: Bundle>(&mut self, bundle: B) {
        self.queue.push(spawn_command(bundle));
    }

    /// Adds (or replaces) the components of `bundle` on `entity`.
    pub fn insert<B: Bundle>(&mut self, entity: Entity, bundle: B) {
        self.queue.push(insert_command(entity, bundle));
    }

    /// Removes the components of `B` from `entity` and drops them; fails, removing nothing,
    /// if it lacks any of them.
    pub fn remove<B: Bundle>(&mut self, entity: Entity) {
        self.queue.push(remove_command::<B>(entity));
    }

    /// Despawns `entity`; its children, if any, become roots.
    pub fn despawn(&mut self, entity: Entity) {
        self.queue.push(despawn_command(entity));
    }

    /// Records any command, e.g. a closure taking `&mut World`.
    pub fn add<C: Command>(&mut self, command: C) {
        self.queue.push(command);
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::change::{RunTicks, Tick};
    use crate::query::{BatchSize, QueryState};
    use crate::world::UnsafeWorldCell;

    /// Records a scope that appends `label` to the world's `Vec<u64>` log when applied.
    fn scope(queue: &ParallelCommandQueue, label: u64) {
        queue.command_scope(|commands| {
            commands.add(move |world: &mut World| {
                if !world.contains_resource::<Vec<u64>>() {
                    world.insert_resource(Vec::<u64>::new());
                }
                world.resource_mut::<Vec<u64>>().unwrap().push(label);
            });
        });
    }

    /// The labels `queue`'s scopes log, in the order it applies them.
    fn applied(mut queue: ParallelCommandQueue) -> Vec<u64> {
        let mut world = World::new();
        assert!(queue.apply(&mut world).is_empty());
        world.resource::<Vec<u64>>().cloned().unwrap_or_default()
    }

    /// One program, recorded twice: as a serial run makes it (each pass one run, `[0, 0]`)
    /// and as threads might (runs out of order, a run taken up by a thread waiting inside a
    /// nested pass, a system body in a fresh root inside a run). Both apply in label order.
    #[test]
    fn scope_keys_sort_in_serial_order() {
        // Serial: labels in program order.
        let serial = ParallelCommandQueue::new();
        scope(&serial, 0);
        let pass = begin_pass();
        in_run(&pass, 0, 0, || {
            // Archetype 0, rows 0..4, then archetype 1, rows 0..2: one label per row, and a
            // nested pass (two rows) with scopes before and after it on row 2.
            scope(&serial, 1);
            scope(&serial, 2);
            scope(&serial, 3);
            let nested = begin_pass();
            in_run(&nested, 0, 0, || {
                scope(&serial, 4);
                scope(&serial, 5);
            });
            scope(&serial, 6);
            scope(&serial, 7);
            scope(&serial, 8);
            scope(&serial, 9);
        });
        scope(&serial, 10);
        assert_eq!(applied(serial), (0..=10).collect::<Vec<_>>());

        // Parallel: the same rows cut into runs (0, 0..2), (0, 2..4), (1, 0..2), run last to
        // first; the nested pass cut into runs of one row, the second first, and the outer
        // run (1, 0..2) taken up while the nested pass waits.
        let parallel = ParallelCommandQueue::new();
        let other = ParallelCommandQueue::new();
        scope(&parallel, 0);
        let pass = begin_pass();
        let late_run = || {
            in_run(&pass, 1, 0, || {
                scope(&parallel, 8);
                // A system body taken up here records from a root of its own, and takes
                // nothing from this run.
                with_fresh_command_context(|| {
                    scope(&other, 100);
                    let pass = begin_pass();
                    in_run(&pass, 0, 3, || scope(&other, 102));
                    in_run(&pass, 0, 0, || scope(&other, 101));
                    scope(&other, 103);
                });
                scope(&parallel, 9);
            })
        };
        in_run(&pass, 0, 2, || {
            scope(&parallel, 3);
            let nested = begin_pass();
            in_run(&nested, 0, 1, || scope(&parallel, 5));
            late_run();
            in_run(&nested, 0, 0, || scope(&parallel, 4));
            scope(&parallel, 6);
            scope(&parallel, 7);
        });
        in_run(&pass, 0, 0, || {
            scope(&parallel, 1);
            scope(&parallel, 2);
        });
        scope(&parallel, 10);
        assert_eq!(applied(parallel), (0..=10).collect::<Vec<_>>());
        assert_eq!(applied(other), vec![100, 101, 102, 103]);
    }

    #[test]
    fn a_fresh_root_entered_from_a_root_restores_the_counter_also_on_unwind() {
        next_event();
        next_event();
        let first = next_event();
        // The fresh root numbers its events from 0.
        with_fresh_command_context(|| {
            assert_eq!(next_event(), 0);
            assert_eq!(next_event(), 1);
        });
        let unwound = std::panic::catch_unwind(|| {
            with_fresh_command_context(|| {
                assert_eq!(next_event(), 0);
                panic!("out of the system");
            })
        });
        assert!(unwound.is_err());
        // The root's counter goes on where it was.
        assert_eq!(next_event(), first + 1);
        assert!(AT_ROOT.with(Cell::get));
        // Inside a run (not a root), a fresh root still starts from 0 with an empty path.
        let pass = begin_pass();
        in_run(&pass, 0, 0, || {
            assert!(!AT_ROOT.with(Cell::get));
            with_fresh_command_context(|| {
                assert!(AT_ROOT.with(Cell::get));
                assert_eq!(key_of(next_event()).as_slice(), [0]);
            });
            assert!(!AT_ROOT.with(Cell::get));
        });
        assert!(AT_ROOT.with(Cell::get));
    }

    #[test]
    fn contexts_are_restored_on_unwind() {
        let queue = ParallelCommandQueue::new();
        let other = ParallelCommandQueue::new();
        scope(&queue, 0);
        let pass = begin_pass();
        let unwound = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            in_run(&pass, 0, 0, || {
                with_fresh_command_context(|| {
                    scope(&other, 10);
                    panic!("out of the closure");
                })
            })
        }));
        assert!(unwound.is_err());
        // Back at this thread's root, after the pass: sorts after everything in it.
        scope(&queue, 2);
        in_run(&pass, 0, 1, || scope(&queue, 1));
        assert_eq!(applied(queue), vec![0, 1, 2]);
        assert_eq!(applied(other), vec![10]);
        assert!(PATH.with(|path| path.borrow().is_empty()));
        assert!(AT_ROOT.with(Cell::get));
    }

    #[derive(Clone, Copy)]
    struct Outer(u64);
    #[derive(Clone, Copy)]
    struct Extra;
    #[derive(Clone, Copy)]
    struct Inner(u64);

    /// Real passes on rayon's threads: scopes around a nested pass, whose own closure records
    /// on some rows, and a body run from inside a run (as a thread waiting in a pass takes up
    /// a system) that records into a queue of its own. Both apply in the order a serial run
    /// (`iter` in place of every pass) records them, with one thread and four.
    #[test]
    fn par_for_each_nested_passes_apply_in_serial_order() {
        let (outer_rows, inner_rows): (u64, u64) = if cfg!(miri) { (24, 9) } else { (300, 40) };
        let mut world = World::new();
        for i in 0..outer_rows {
            if i.is_multiple_of(3) {
                world.spawn((Outer(i), Extra));
            } else {
                world.spawn((Outer(i),));
            }
        }
        for i in 0..inner_rows {
            world.spawn((Inner(i),));
        }
        let mut outer = QueryState::<&Outer>::new(&mut world);
        outer.set_batch_size(BatchSize::Fixed(3));
        let mut inner = QueryState::<&Inner>::new(&mut world);
        inner.set_batch_size(BatchSize::Fixed(2));
        outer.update_archetypes(&world);
        inner.update_archetypes(&world);

        // What a serial run records: the labels in order.
        let inner_values: Vec<u64> = inner.iter(&world).map(|c| c.0).collect();
        let mut expected = vec![0];
        let mut expected_body = Vec::new();
        for a in outer.iter(&world).map(|a| a.0) {
            expected.push(a * 1000);
            if a % 4 == 1 {
                expected.extend(
                    inner_values
                        .iter()
                        .filter(|&c| c.is_multiple_of(3))
                        .map(|c| a * 1000 + c + 1),
                );
                expected.push(a * 1000 + 999);
            }
            if a == 5 {
                expected_body.push(1);
                expected_body.extend(inner_values.iter().map(|c| c + 10));
                expected_body.push(2);
            }
        }
        expected.push(1);

        let world = &world;
        let cell = UnsafeWorldCell::new_readonly(world);
        let ticks = RunTicks {
            last_run: Tick::new(0),
            this_run: world.change_tick(),
        };
        let (outer, inner) = (&outer, &inner);
        for threads in [1, 4] {
            for fresh in [false, true] {
                let queue = ParallelCommandQueue::new();
                let body_queue = ParallelCommandQueue::new();
                let (queue_ref, body_ref) = (&queue, &body_queue);
                // A system body: scopes around a pass.
                let body = || {
                    scope(body_ref, 1);
                    // SAFETY: read-only queries of `world`, which nobody writes meanwhile;
                    // the states are its own and up to date.
                    unsafe { inner.par_for_each_unchecked(cell, ticks, |c| scope(body_ref, c.0 + 10)) };
                    scope(body_ref, 2);
                };
                let pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .build()
                    .unwrap();
                pool.install(|| {
                    scope(queue_ref, 0);
                    let row = |a: &Outer| {
                        let a = a.0;
                        scope(queue_ref, a * 1000);
                        if a % 4 == 1 {
                            let inner_row = |c: &Inner| {
                                if c.0.is_multiple_of(3) {
                                    scope(queue_ref, a * 1000 + c.0 + 1);
                                }
                            };
                            // SAFETY: as for the body's pass.
                            unsafe { inner.par_for_each_unchecked(cell, ticks, inner_row) };
                            scope(queue_ref, a * 1000 + 999);
                        }
                        if a == 5 {
                            if fresh {
                                with_fresh_command_context(body);
                            } else {
                                body();
                            }
                        }
                    };
                    // SAFETY: as for the body's pass.
                    unsafe { outer.par_for_each_unchecked(cell, ticks, row) };
                    scope(queue_ref, 1);
                });
                assert_eq!(applied(queue), expected, "{threads} threads");
                assert_eq!(
                    applied(body_queue),
                    expected_body,
                    "{threads} threads, fresh {fresh}"
                );
            }
        }
    }
}
