//! [`CommandQueue`]: recorded commands, packed back to back in one byte buffer.
//!
//! Layout of the buffer: for each command, a [`CommandMeta`] header followed by the command's
//! own bytes, both written *unaligned* (the buffer is a `Vec` of bytes, so nothing in it is
//! aligned). Reading a command back is a `read_unaligned` into a properly aligned local, so a
//! `#[repr(align(64))]` command costs no padding in the buffer and a zero-sized one costs only
//! its header. There is no allocation per command: the buffer grows like any `Vec`.
//!
//! Every command in the buffer is consumed exactly once — applied or dropped — by
//! [`CommandQueue::apply`] or by the queue's `Drop`. Both walk the buffer with a [`Consume`]
//! guard that advances past a command *before* running it, so a command that panics is never
//! touched again, and the guard's `Drop` drops whatever was left behind it.

use std::fmt;
use std::marker::PhantomData;
use std::mem::MaybeUninit;

use super::{Command, CommandError};
use crate::entity::Entity;
use crate::location::ArchetypeId;
use crate::world::{World, WorldId};

/// Applies (given a world) or drops (given `None`) the command at the pointer; returns the
/// command's result when applied.
///
/// # Safety
/// The pointer is the start of a command of the type this function was instantiated for,
/// written by [`CommandQueue::push`] and not consumed since; it is consumed by the call.
type ConsumeFn = unsafe fn(*mut MaybeUninit<u8>, Option<&mut World>) -> Option<Result<(), CommandError>>;

/// What precedes each command in the buffer.
#[derive(Clone, Copy)]
struct CommandMeta {
    consume: ConsumeFn,
    /// `size_of` the command: how far to skip past its bytes.
    size: usize,
}

const META_SIZE: usize = size_of::<CommandMeta>();

/// The [`ConsumeFn`] for command type `C`.
///
/// # Safety
/// See [`ConsumeFn`].
unsafe fn consume<C: Command>(
    bytes: *mut MaybeUninit<u8>,
    world: Option<&mut World>,
) -> Option<Result<(), CommandError>> {
    // SAFETY: the caller guarantees `bytes` starts a `C` written by `push` and not yet read;
    // reading it moves it out, and the caller never reads these bytes again.
    let command = unsafe { bytes.cast::<C>().read_unaligned() };
    // Without a world, the closure drops the command it owns.
    world.map(move |world| command.apply(world))
}

/// A list of deferred [`Command`]s, applied to a [`World`] in the order they were pushed.
///
/// Commands are stored compactly in one byte buffer (a small header plus the command's own
/// bytes), so pushing a command allocates nothing once the buffer has grown. Commands never
/// applied are dropped with the queue.
///
/// ```
/// use tabula::{CommandQueue, World};
///
/// let mut world = World::new();
/// let mut queue = CommandQueue::new();
/// queue.push(|world: &mut World| {
///     world.spawn((1u32,));
/// });
/// queue.push(|world: &mut World| {
///     world.insert_resource("log");
/// });
/// assert_eq!(queue.len(), 2);
/// let errors = queue.apply(&mut world);
/// assert!(errors.is_empty() && queue.is_empty());
/// assert_eq!(world.len(), 1);
/// ```
///
/// A queue that [`Commands`](crate::Commands) recorded into belongs to that `Commands`'
/// world: the entities it reserved exist only there, so applying it to another world panics
/// (a mistake in the calling code) instead of acting on that world's unrelated entities.
///
/// `CommandQueue` is `Send` because every [`Command`] is `Send`. It is also `Sync`: no `&self`
/// method reads or hands out the recorded commands, so sharing a `&CommandQueue` between
/// threads shares nothing of them.
#[derive(Default)]
pub struct CommandQueue {
    /// Headers and command bytes, back to back; every byte up to `len()` is part of a
    /// recorded, not yet consumed command (or its header).
    bytes: Vec<MaybeUninit<u8>>,
    /// How many commands are recorded.
    count: usize,
    /// The world whose [`Commands`](crate::Commands) recorded into this queue since it was
    /// last applied, if any. Meaningful only while the queue holds commands: an empty queue
    /// can be tied to any world.
    world: Option<WorldId>,
    /// The ids `Commands::spawn` / `spawn_empty` reserved into this queue since it was last
    /// applied: what [`discard`](Self::discard) frees.
    reserved: Vec<Entity>,
}

impl CommandQueue {
    /// An empty queue; allocates nothing until the first push.
    pub const fn new() -> Self {
        Self {
            bytes: Vec::new(),
            count: 0,
            world: None,
            reserved: Vec::new(),
        }
    }

    /// Notes an id a spawn recorded into this queue reserved (see [`discard`](Self::discard)).
    #[inline]
    pub(crate) fn note_reserved(&mut self, entity: Entity) {
        self.reserved.push(entity);
    }

    /// Drops every command unapplied and frees the ids its spawns reserved: after the
    /// world's reservations are flushed, each of those entities that is still empty (no
    /// command gave it components) is despawned, its generation bumped, instead of staying
    /// behind as an entity with nothing in it. A schedule discards the queues of a run a panic
    /// aborted this way. (Dropping a queue instead leaves its reservations to become empty
    /// entities at the next flush.)
    ///
    /// ```
    /// use tabula::{Commands, CommandQueue, World};
    ///
    /// let mut world = World::new();
    /// let mut queue = CommandQueue::new();
    /// let ship = Commands::new(&mut queue, &world).spawn(("ship",)).id();
    /// queue.discard(&mut world);
    /// assert!(queue.is_empty() && !world.contains(ship));
    /// assert_eq!(world.len(), 0);
    /// ```
    pub fn discard(&mut self, world: &mut World) {
        let reserved = std::mem::take(&mut self.reserved);
        // Dropping the commands cannot touch the world; a panicking `Drop` of a recorded
        // value leaves the reservations to become empty entities, as a dropped queue does.
        *self = Self::new();
        world.flush();
        for entity in reserved {
            if world
                .location(entity)
                .is_ok_and(|location| location.archetype == ArchetypeId::EMPTY)
            {
                world
                    .despawn(entity)
                    .expect("an empty entity just found alive despawns");
            }
        }
    }

    /// Ties the queue to `world` until it is applied, for [`Commands`](crate::Commands).
    ///
    /// # Panics
    /// When it already holds commands recorded for another world.
    pub(crate) fn bind(&mut self, world: WorldId) {
        match self.bound() {
            Some(bound) if bound != world => mixed_worlds(bound, world),
            _ => self.world = Some(world),
        }
    }

    /// The world the queue's commands were recorded for, if it holds any and `Commands`
    /// recorded them.
    fn bound(&self) -> Option<WorldId> {
        if self.is_empty() { None } else { self.world }
    }

    /// Records `command` at the end of the queue.
    pub fn push<C: Command>(&mut self, command: C) {
        let meta = CommandMeta {
            consume: consume::<C>,
            size: size_of::<C>(),
        };
        let start = self.bytes.len();
        let end = start + META_SIZE + meta.size;
        self.bytes.reserve(META_SIZE + meta.size);
        // SAFETY: `reserve` made room for `end - start` bytes after `start`, so both writes are
        // in bounds of the allocation; they are unaligned writes, so the buffer's byte
        // alignment is enough. Once both are written, bytes `..end` hold a header and its
        // command, which is the invariant `set_len` must keep.
        unsafe {
            let at = self.bytes.as_mut_ptr().add(start);
            at.cast::<CommandMeta>().write_unaligned(meta);
            at.add(META_SIZE).cast::<C>().write_unaligned(command);
            self.bytes.set_len(end);
        }
        self.count += 1;
    }

    /// How many commands are recorded.
    pub fn len(&self) -> usize {
        self.count
    }

    /// True when no command is recorded.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Moves every command of `other` to the end of this queue, keeping their order; `other`
    /// is left empty.
    ///
    /// ```
    /// use tabula::{CommandQueue, World};
    ///
    /// let mut first = CommandQueue::new();
    /// let mut second = CommandQueue::new();
    /// first.push(|w: &mut World| {
    ///     w.insert_resource(vec![1]);
    /// });
    /// second.push(|w: &mut World| w.resource_mut::<Vec<i32>>().unwrap().push(2));
    /// first.append(&mut second);
    /// assert_eq!((first.len(), second.len()), (2, 0));
    /// let mut world = World::new();
    /// first.apply(&mut world);
    /// assert_eq!(world.resource::<Vec<i32>>(), Ok(&vec![1, 2]));
    /// ```
    ///
    /// # Panics
    /// When the two queues hold commands recorded for different worlds.
    pub fn append(&mut self, other: &mut CommandQueue) {
        // Checked before anything changes, so a refused append leaves both queues as they
        // were (still bound to their worlds).
        let world = match (self.bound(), other.bound()) {
            (Some(ours), Some(theirs)) if ours != theirs => mixed_worlds(ours, theirs),
            (ours, theirs) => ours.or(theirs),
        };
        self.world = world;
        other.world = None;
        // Commands are only ever read unaligned, and moving a value is copying its bytes, so
        // the byte range can move as it is. `other` forgets the bytes without consuming them:
        // they now belong to `self` alone.
        self.bytes.append(&mut other.bytes);
        self.count += other.count;
        other.count = 0;
        self.reserved.append(&mut other.reserved);
    }

    /// Applies every command to `world`, in the order they were recorded, and empties the
    /// queue. The world's reserved entities are flushed first.
    ///
    /// A command that fails is skipped and its error returned; the rest still run. If a
    /// command panics, the commands after it are dropped (each exactly once) and the queue
    /// is left empty before the panic continues.
    ///
    /// ```
    /// use tabula::{Commands, CommandQueue, World};
    ///
    /// let mut world = World::new();
    /// let gone = world.spawn((1u8,));
    /// world.despawn(gone)?;
    /// let mut queue = CommandQueue::new();
    /// Commands::new(&mut queue, &world).despawn(gone);
    /// let errors = queue.apply(&mut world);
    /// assert_eq!(errors.len(), 1);
    /// assert!(errors[0].to_string().starts_with(&format!("despawn 0v1@{} skipped", world.tag())));
    /// # Ok::<(), tabula::EntityError>(())
    /// ```
    ///
    /// # Panics
    /// When [`Commands`](crate::Commands) recorded into the queue for another world (its
    /// commands stay queued, and are dropped with it).
    pub fn apply(&mut self, world: &mut World) -> Vec<CommandError> {
        if let Some(bound) = self.bound()
            && bound != world.id()
        {
            applied_elsewhere(bound, world.id());
        }
        self.world = None;
        self.reserved.clear();
        world.flush();
        let mut errors = Vec::new();
        let mut consume = Consume::new(self);
        // Commands that component hooks record fail into this apply's errors, after the
        // command whose change ran the hooks.
        world.begin_collecting_hook_errors();
        while let Some(result) = consume.next(Some(&mut *world)) {
            if let Some(Err(error)) = result {
                errors.push(error);
            }
            world.take_hook_errors(&mut errors);
        }
        world.end_collecting_hook_errors();
        errors
    }
}

#[cold]
#[track_caller]
fn mixed_worlds(bound: WorldId, other: WorldId) -> ! {
    panic!(
        "a CommandQueue holding commands for world {bound:?} was given commands for world \
         {other:?}; use one queue per world"
    )
}

#[cold]
#[track_caller]
fn applied_elsewhere(bound: WorldId, other: WorldId) -> ! {
    panic!(
        "a CommandQueue recorded by Commands of world {bound:?} was applied to world \
         {other:?}; its reserved entities exist only in the first, so apply it there"
    )
}

impl Drop for CommandQueue {
    fn drop(&mut self) {
        // The guard's own `Drop` drops every command.
        drop(Consume::new(self));
    }
}

impl fmt::Debug for CommandQueue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CommandQueue")
            .field("len", &self.count)
            .field("bytes", &self.bytes.len())
            .finish()
    }
}

/// Walks a queue's buffer front to back, consuming each command once.
///
/// Creating the guard empties the queue at once (its `Vec` keeps the allocation, with length
/// zero), so from then on the guard alone owns the recorded commands: whatever happens, the
/// queue can never consume them a second time. Dropping the guard drops every command it has
/// not consumed — on the normal path after `apply` consumed them all (nothing left), and
/// during unwinding after a command panicked.
struct Consume<'q> {
    /// Start of the queue's buffer; valid for `end` bytes while the queue is borrowed.
    bytes: *mut MaybeUninit<u8>,
    /// Offset of the first byte not yet consumed; always at a header or at `end`.
    cursor: usize,
    /// Where the recorded commands end.
    end: usize,
    _queue: PhantomData<&'q mut CommandQueue>,
}

impl<'q> Consume<'q> {
    fn new(queue: &'q mut CommandQueue) -> Self {
        let end = queue.bytes.len();
        let bytes = queue.bytes.as_mut_ptr();
        // SAFETY: shrinking the length only forgets the bytes (`MaybeUninit<u8>` needs no
        // drop); the allocation stays put because the queue stays borrowed by the guard and
        // so cannot grow or shrink it. The commands are now owned by the guard.
        unsafe { queue.bytes.set_len(0) };
        queue.count = 0;
        Self {
            bytes,
            cursor: 0,
            end,
            _queue: PhantomData,
        }
    }

    /// Consumes the next command: applies it when given a world, drops it otherwise.
    /// `None` when every command has been consumed.
    fn next(&mut self, world: Option<&mut World>) -> Option<Option<Result<(), CommandError>>> {
        if self.cursor >= self.end {
            return None;
        }
        // SAFETY: `cursor < end` and the cursor only moves from one header to the next (see
        // below), so it points at a header written by `push`, inside the allocation; reading
        // it unaligned is how it was written.
        let (meta, command) = unsafe {
            let at = self.bytes.add(self.cursor);
            (at.cast::<CommandMeta>().read_unaligned(), at.add(META_SIZE))
        };
        // Step past the command *before* running it: if it panics, it has been moved out
        // already and must not be dropped again.
        self.cursor += META_SIZE + meta.size;
        // SAFETY: `command` is the start of the command this header describes, and `consume`
        // was instantiated for that command's type by `push`. The cursor has moved past it,
        // so it is consumed exactly once. The world is borrowed separately from the buffer.
        Some(unsafe { (meta.consume)(command, world) })
    }
}

impl Drop for Consume<'_> {
    fn drop(&mut self) {
        if self.cursor >= self.end {
            return;
        }
        // The rest is handed to a second guard before any command's `Drop` runs: if one of
        // them panics, that guard drops the commands after it while unwinding (a second
        // panic there aborts, as any panic during unwinding does).
        let mut rest = Consume { ..*self };
        self.cursor = self.end;
        while rest.next(None).is_some() {}
    }
}
