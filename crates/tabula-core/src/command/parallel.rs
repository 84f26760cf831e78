//! [`ParallelCommandQueue`]: commands recorded from many threads at once — from the closure
//! of a `par_for_each` — and applied in row order, whichever thread ran which rows.
//!
//! Each [`command_scope`](ParallelCommandQueue::command_scope) gets a key, and the queue
//! applies its scopes sorted by key:
//!
//! * inside a run of a parallel pass, the key is (the pass, the matched archetype, the run's
//!   first row, the scope's number within the run). `par_for_each` numbers its pass once and
//!   tells each run where it starts ([`in_run`]); rows within a run are visited in order, so
//!   sorting by key gives row order however rayon cut the rows into runs;
//! * anywhere else (serial code, or a pass small enough to run serially), the key is a fresh
//!   pass number per scope, so scopes sort in the order the thread made them, and before or
//!   after a parallel pass as they came before or after it.
//!
//! With one thread, a pass runs serially and every scope gets its own number in row order;
//! with many, the keys above: both sort to the same order, so the world comes out the same.
//! Passes are numbered by one global counter, touched once per pass and once per serial scope.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;

use super::commands::{despawn_command, insert_command, remove_command, spawn_command};
use super::{Command, CommandError, CommandQueue};
use crate::bundle::Bundle;
use crate::entity::Entity;
use crate::world::World;

/// Where a command scope stands in row order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
struct ScopeKey {
    pass: u64,
    archetype: u32,
    start: u32,
    scope: u32,
}

/// Numbers parallel passes and serial scopes in the order they begin.
static PASSES: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// The run of rows this thread is working on, with the number of scopes it has made.
    static RUN: Cell<Option<ScopeKey>> = const { Cell::new(None) };
}

/// A number for a new parallel pass.
pub(crate) fn next_pass() -> u64 {
    PASSES.fetch_add(1, Ordering::Relaxed)
}

/// Runs `f` as the run of pass `pass` that starts at row `start` of the `archetype`th matched
/// archetype: command scopes made meanwhile on this thread are keyed by it. The previous run
/// (a pass nested in a closure) is restored afterwards, also on unwind.
#[inline]
pub(crate) fn in_run<R>(pass: u64, archetype: usize, start: usize, f: impl FnOnce() -> R) -> R {
    struct Restore(Option<ScopeKey>);
    impl Drop for Restore {
        fn drop(&mut self) {
            RUN.with(|run| run.set(self.0));
        }
    }
    let key = ScopeKey {
        pass,
        archetype: archetype as u32,
        start: start as u32,
        scope: 0,
    };
    let _restore = Restore(RUN.with(|run| run.replace(Some(key))));
    f()
}

/// The key of a new scope on this thread.
fn next_key() -> ScopeKey {
    RUN.with(|run| match run.get() {
        Some(key) => {
            run.set(Some(ScopeKey {
                scope: key.scope + 1,
                ..key
            }));
            key
        }
        None => ScopeKey {
            pass: next_pass(),
            ..ScopeKey::default()
        },
    })
}

/// Commands recorded from many threads at once and applied in row order.
///
/// A system gets one through the `ParallelCommands` parameter; its `command_scope` is this
/// queue's. Spawned entities get their ids when the queue is applied, in that order, so ids
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
        let key = next_key();
        let mut queue = CommandQueue::new();
        let result = record(&mut ScopedCommands { queue: &mut queue });
        if !queue.is_empty() {
            self.scopes.lock().push((key, queue));
        }
        result
    }

    /// True when no command was recorded.
    pub fn is_empty(&self) -> bool {
        self.scopes.lock().is_empty()
    }

    /// Applies every scope's commands in row order and returns the ones that were skipped,
    /// as [`CommandQueue::apply`] does.
    pub fn apply(&mut self, world: &mut World) -> Vec<CommandError> {
        let mut scopes = std::mem::take(self.scopes.get_mut());
        // Keys are unique: a run numbers its scopes, and other scopes take fresh passes.
        scopes.sort_unstable_by_key(|&(key, _)| key);
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
