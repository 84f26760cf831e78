//! Events: messages sent by one part of a frame and read by any number of others.
//!
//! [`Events<E>`] is a resource holding two buffers. Senders append to the newer one;
//! [`Events::update`] (called at the end of each schedule run, through
//! [`World::update_events`], unless the schedule was told not to) drops
//! the older buffer and makes the newer one older. So an event sent during run `N` stays
//! readable through runs `N` and `N + 1`, whichever order senders and readers run in, and is
//! gone after the second update.
//!
//! Every event gets a running id. A reader keeps an [`EventCursor`]: the id of the first event
//! it has not seen. Reading yields the stored events from there on and moves the cursor past
//! them, so each reader sees each event at most once. A reader that did not look for two
//! updates simply skips what was dropped meanwhile.
//!
//! Ids count within one `Events<E>` value. Each value also has an identity of its own, and a
//! cursor remembers the one it last read: handed another value (the resource was replaced,
//! say, by `insert_resource(Events::<E>::default())`), it starts that one from its oldest
//! stored event instead of skipping events whose ids it has already passed in the old one.
//! It remembers only the last value, though: a value set aside and put back after the cursor
//! read another one is read from its oldest stored event again.
//!
//! ```
//! use tabula::{EventCursor, Events, World};
//!
//! struct Hit(u32);
//!
//! let mut world = World::new();
//! world.add_event::<Hit>();
//! let mut reader = EventCursor::<Hit>::default();
//!
//! world.send_event(Hit(5))?;
//! let events = world.resource::<Events<Hit>>()?;
//! assert_eq!(reader.read(events).map(|hit| hit.0).collect::<Vec<_>>(), [5]);
//! assert_eq!(reader.read(events).count(), 0); // already seen
//!
//! world.update_events();
//! world.update_events(); // two updates later the event is gone
//! assert!(world.resource::<Events<Hit>>()?.is_empty());
//! # Ok::<(), tabula::ResourceError>(())
//! ```

use std::any::TypeId;
use std::fmt;
use std::marker::PhantomData;
use std::num::NonZeroU64;
// Not the `sync` shim: this counter only hands out distinct numbers, and no loom model
// involves it.
use std::sync::atomic::{AtomicU64, Ordering};

use crate::resource::ResourceError;
use crate::world::World;

/// The events of one run, and the id of the first of them.
struct EventBuffer<E> {
    /// The id of `events[0]`: ids are consecutive within a buffer, and the newer buffer's
    /// ids continue the older buffer's.
    start_id: usize,
    events: Vec<E>,
}

impl<E> EventBuffer<E> {
    fn new(start_id: usize) -> Self {
        Self {
            start_id,
            events: Vec::new(),
        }
    }

    /// The events with ids from `id` on (all of them if `id` is older than the buffer).
    fn since(&self, id: usize) -> &[E] {
        let skip = id.saturating_sub(self.start_id).min(self.events.len());
        &self.events[skip..]
    }
}

/// A double-buffered queue of events of type `E`, stored as a resource.
///
/// Add it with [`World::add_event`], which also makes [`World::update_events`] update it.
/// An event stays readable until the second update after it was sent, so every reader that
/// looks once per update sees it, whatever order senders and readers run in.
///
/// ```
/// use tabula::{EventCursor, Events};
///
/// let mut events = Events::<&str>::default();
/// let mut reader = EventCursor::default();
/// events.send("a");
/// events.update();
/// events.send_batch(["b", "c"]);
/// assert_eq!(reader.read(&events).copied().collect::<Vec<_>>(), ["a", "b", "c"]);
/// events.update(); // drops "a"
/// events.update(); // drops "b" and "c"
/// assert!(events.is_empty());
/// ```
pub struct Events<E> {
    /// This value's identity, which cursors remember (ids count within one value).
    instance: NonZeroU64,
    /// Sent before the last update.
    older: EventBuffer<E>,
    /// Sent since the last update. The id of the next event is where this buffer's ids end,
    /// so a panic halfway through [`send_batch`](Self::send_batch) cannot desynchronise a
    /// separate counter.
    newer: EventBuffer<E>,
}

/// A number no other `Events` value has had in this process.
fn fresh_instance() -> NonZeroU64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    // Relaxed: only distinctness matters, which the atomic increment gives on its own. At a
    // billion values a second, 2^64 lasts five centuries.
    NonZeroU64::new(NEXT.fetch_add(1, Ordering::Relaxed)).expect("the instance counter starts at 1")
}

impl<E> Default for Events<E> {
    fn default() -> Self {
        Self {
            instance: fresh_instance(),
            older: EventBuffer::new(0),
            newer: EventBuffer::new(0),
        }
    }
}

impl<E> Events<E> {
    /// Sends one event.
    pub fn send(&mut self, event: E) {
        self.newer.events.push(event);
    }

    /// Sends every event of `events`, in order.
    pub fn send_batch(&mut self, events: impl IntoIterator<Item = E>) {
        self.newer.events.extend(events);
    }

    /// The id the next event sent will get.
    fn next_id(&self) -> usize {
        self.newer.start_id + self.newer.events.len()
    }

    /// Drops the events sent before the previous update and starts a new buffer: events sent
    /// so far stay readable until the next update.
    pub fn update(&mut self) {
        let next_id = self.next_id();
        std::mem::swap(&mut self.older, &mut self.newer);
        // Ids first: if an event's `Drop` panics during `clear`, the buffer is still empty
        // (`Vec` forgets its elements before dropping them) and the ids still consistent.
        self.newer.start_id = next_id;
        self.newer.events.clear();
    }

    /// Every stored event, oldest first, whether or not any reader has seen it.
    ///
    /// ```
    /// let mut events = tabula::Events::default();
    /// events.send(1);
    /// events.update();
    /// events.send(2);
    /// assert_eq!(events.iter().copied().collect::<Vec<_>>(), [1, 2]);
    /// ```
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &E> {
        self.older.events.iter().chain(&self.newer.events)
    }

    /// How many events are stored (both buffers).
    pub fn len(&self) -> usize {
        self.older.events.len() + self.newer.events.len()
    }

    /// True when no event is stored.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Drops every stored event. Ids keep counting, so cursors stay valid.
    pub fn clear(&mut self) {
        let next_id = self.next_id();
        // Both buffers are emptied and renumbered before any event's `Drop` runs: if one
        // panics, no stored event is left under an id a cursor has already passed.
        let dropped = (
            std::mem::take(&mut self.older.events),
            std::mem::take(&mut self.newer.events),
        );
        self.older.start_id = next_id;
        self.newer.start_id = next_id;
        drop(dropped);
    }

    /// A cursor that has already seen every event sent so far; it reads only later ones.
    pub fn cursor_at_end(&self) -> EventCursor<E> {
        EventCursor {
            instance: Some(self.instance),
            next_id: self.next_id(),
            _event: PhantomData,
        }
    }
}

impl<E> fmt::Debug for Events<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Events")
            .field("older", &self.older.events.len())
            .field("newer", &self.newer.events.len())
            .field("next_id", &self.next_id())
            .finish()
    }
}

/// One reader's position in an [`Events<E>`]: the id of the first event it has not seen.
///
/// A default cursor starts before the first event ever sent, so it reads everything still
/// stored. A cursor handed a different `Events<E>` value than the one it last read (the
/// resource was replaced) starts that value from its oldest stored event; it remembers only
/// the last value it read, so alternating two values re-reads each one's stored events.
pub struct EventCursor<E> {
    /// The `Events` value `next_id` counts in; `None` before the first read.
    instance: Option<NonZeroU64>,
    next_id: usize,
    // `fn() -> E`: the cursor holds no `E`, so it is `Send + Sync` whatever `E` is.
    _event: PhantomData<fn() -> E>,
}

impl<E> Default for EventCursor<E> {
    fn default() -> Self {
        Self {
            instance: None,
            next_id: 0,
            _event: PhantomData,
        }
    }
}

impl<E> Clone for EventCursor<E> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<E> Copy for EventCursor<E> {}

impl<E> fmt::Debug for EventCursor<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EventCursor")
            .field("instance", &self.instance)
            .field("next_id", &self.next_id)
            .finish()
    }
}

impl<E> EventCursor<E> {
    /// The id of the first event of `events` this cursor has not seen: its own position if
    /// it last read `events`, else the start (it has seen none of them).
    fn position_in(&self, events: &Events<E>) -> usize {
        if self.instance == Some(events.instance) {
            self.next_id
        } else {
            0
        }
    }

    /// The stored events this cursor has not seen, oldest first. The cursor moves past each
    /// event as the iterator yields it; events it never yields stay unread.
    pub fn read<'a>(&mut self, events: &'a Events<E>) -> impl ExactSizeIterator<Item = &'a E> {
        // Anything older than the oldest stored event was dropped: skip it.
        self.next_id = self.position_in(events).max(events.older.start_id);
        self.instance = Some(events.instance);
        EventReader {
            older: events.older.since(self.next_id).iter(),
            newer: events.newer.since(self.next_id).iter(),
            next_id: &mut self.next_id,
        }
    }

    /// How many stored events this cursor has not seen.
    pub fn len(&self, events: &Events<E>) -> usize {
        let next_id = self.position_in(events);
        events.older.since(next_id).len() + events.newer.since(next_id).len()
    }

    /// True when this cursor has seen every stored event.
    pub fn is_empty(&self, events: &Events<E>) -> bool {
        self.len(events) == 0
    }

    /// Marks every stored event as seen without reading it.
    pub fn clear(&mut self, events: &Events<E>) {
        *self = events.cursor_at_end();
    }
}

/// The iterator of [`EventCursor::read`]: the unread part of each buffer, oldest first.
struct EventReader<'c, 'a, E> {
    older: std::slice::Iter<'a, E>,
    newer: std::slice::Iter<'a, E>,
    next_id: &'c mut usize,
}

impl<'a, E> Iterator for EventReader<'_, 'a, E> {
    type Item = &'a E;

    fn next(&mut self) -> Option<&'a E> {
        let event = self.older.next().or_else(|| self.newer.next())?;
        *self.next_id += 1;
        Some(event)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let len = self.older.len() + self.newer.len();
        (len, Some(len))
    }
}

impl<E> ExactSizeIterator for EventReader<'_, '_, E> {}

/// The event types registered with [`World::add_event`], each with the function that updates
/// its [`Events`] resource. Stored as a (crate-private) resource of its own.
#[derive(Default)]
struct EventUpdaters(Vec<(TypeId, Updater)>);

/// Updates the [`Events`] resource of one event type.
type Updater = fn(&mut World);

fn update_events_of<E: Send + Sync + 'static>(world: &mut World) {
    if let Ok(events) = world.resource_mut::<Events<E>>() {
        events.update();
    }
}

impl World {
    /// Registers event type `E`: inserts an empty [`Events<E>`] resource unless one is
    /// present, and makes [`update_events`](Self::update_events) update it. Calling it again
    /// is harmless.
    pub fn add_event<E: Send + Sync + 'static>(&mut self) {
        self.init_resource::<Events<E>>();
        self.init_resource::<EventUpdaters>();
        let updaters = &mut self
            .resource_mut::<EventUpdaters>()
            .expect("inserted just above")
            .0;
        let type_id = TypeId::of::<E>();
        if !updaters.iter().any(|&(t, _)| t == type_id) {
            updaters.push((type_id, update_events_of::<E>));
        }
    }

    /// Updates every event type registered with [`add_event`](Self::add_event) (see
    /// [`Events::update`]). A schedule calls this at the end of each run, unless told not to
    /// (with several schedules per frame, only the once-per-frame one should).
    pub fn update_events(&mut self) {
        self.update_removal_logs();
        let mut index = 0;
        // Look the registry up afresh for each updater: the updater needs `&mut World`.
        while let Some(update) = self
            .resource::<EventUpdaters>()
            .ok()
            .and_then(|updaters| updaters.0.get(index))
            .map(|&(_, update)| update)
        {
            update(self);
            index += 1;
        }
    }

    /// Sends one event of type `E`; fails if `E` was never added with
    /// [`add_event`](Self::add_event) (or its [`Events<E>`] inserted by hand).
    pub fn send_event<E: Send + Sync + 'static>(&mut self, event: E) -> Result<(), ResourceError> {
        self.resource_mut::<Events<E>>()?.send(event);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_all(cursor: &mut EventCursor<u32>, events: &Events<u32>) -> Vec<u32> {
        cursor.read(events).copied().collect()
    }

    #[test]
    fn events_live_two_updates() {
        let mut events = Events::default();
        let mut late = EventCursor::default();
        events.send(1);
        events.update();
        assert_eq!(events.len(), 1);
        events.update();
        assert!(events.is_empty());
        // The late reader never saw 1; it is gone, so it is skipped.
        events.send(2);
        assert_eq!(read_all(&mut late, &events), [2]);
    }

    #[test]
    fn partial_read_leaves_the_rest_unread() {
        let mut events = Events::default();
        events.send_batch([1, 2, 3]);
        let mut cursor = EventCursor::default();
        let mut iter = cursor.read(&events);
        assert_eq!(iter.len(), 3);
        assert_eq!(iter.next(), Some(&1));
        drop(iter);
        assert_eq!(cursor.len(&events), 2);
        assert_eq!(read_all(&mut cursor, &events), [2, 3]);
        assert!(cursor.is_empty(&events));
    }

    #[test]
    fn clear_and_cursor_at_end_skip_old_events() {
        let mut events = Events::default();
        events.send(1);
        let mut at_end = events.cursor_at_end();
        let mut from_start = EventCursor::default();
        events.send(2);
        assert_eq!(read_all(&mut at_end, &events), [2]);
        events.clear();
        events.send(3);
        assert_eq!(read_all(&mut from_start, &events), [3]);
        assert_eq!(read_all(&mut at_end, &events), [3]);
        let mut skipper = EventCursor::default();
        skipper.clear(&events);
        assert_eq!(skipper.len(&events), 0);
    }

    #[test]
    fn a_cursor_starts_a_replaced_events_value_from_its_oldest_event() {
        let mut world = World::new();
        world.add_event::<u32>();
        let mut cursor = EventCursor::default();
        for i in 0..5u32 {
            world.send_event(i).unwrap();
        }
        assert_eq!(read_all(&mut cursor, world.resource().unwrap()), [0, 1, 2, 3, 4]);
        // A fresh value counts ids from 0 again; the cursor, 5 events in, still reads it.
        world.insert_resource(Events::<u32>::default());
        world.send_event(10u32).unwrap();
        let events = world.resource::<Events<u32>>().unwrap();
        assert_eq!(cursor.len(events), 1);
        assert_eq!(read_all(&mut cursor, events), [10]);
        assert_eq!(read_all(&mut cursor, events), Vec::<u32>::new());
        // Each value also has its own identity from `cursor_at_end` and `clear`.
        let mut other = Events::default();
        other.send_batch([7, 8]);
        let mut at_end = other.cursor_at_end();
        assert!(at_end.is_empty(&other));
        assert_eq!(read_all(&mut at_end, events), [10]);
        let mut cleared = EventCursor::default();
        cleared.clear(&other);
        assert_eq!(cleared.len(events), 1);
        // Only the last value is remembered: back to `other` after `events`, the cursor
        // starts `other` afresh (documented).
        assert_eq!(read_all(&mut cleared, events), [10]);
        assert_eq!(read_all(&mut cleared, &other), [7, 8]);
    }

    #[test]
    fn a_panicking_batch_keeps_ids_consistent() {
        let mut events = Events::default();
        let mut cursor = EventCursor::default();
        let batch = (1..10).map(|i| if i < 3 { i } else { panic!("source failed") });
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| events.send_batch(batch)));
        assert!(result.is_err());
        events.update();
        events.send(3);
        assert_eq!(read_all(&mut cursor, &events), [1, 2, 3]);
        events.send(4);
        assert_eq!(read_all(&mut cursor, &events), [4]);
    }

    #[test]
    fn add_event_twice_registers_one_updater() {
        let mut world = World::new();
        world.add_event::<u32>();
        world.add_event::<u32>();
        world.add_event::<u64>();
        assert_eq!(world.resource::<EventUpdaters>().map(|u| u.0.len()), Ok(2));
        world.send_event(7u32).unwrap();
        world.update_events();
        world.update_events();
        assert!(world.resource::<Events<u32>>().unwrap().is_empty());
        assert!(world.send_event("unregistered").is_err());
    }
}
