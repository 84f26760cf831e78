//! World tags: which of the 256 tags the live worlds hold, and which one a new world takes.
//!
//! A tag is held by a [`TagLease`] that the world owns; dropping the world returns it. A new
//! world takes a tag no live world holds, the one released longest ago (tags never used
//! count as released at the start, lowest first), so the first 256 worlds get 0, 1, 2, ...
//! as before, and the same sequence of creations and drops always gives the same tags:
//! replays still work. Taking the tag least recently released also keeps a dropped world's
//! handles from matching a new world for as long as possible. With 256 worlds alive, a new
//! one shares the tag held by the fewest (the lowest of them), and `tracing` warns: handles
//! of two worlds with one tag are then told apart only by their slot and generation.
//! `World::with_tag` leases its tag too, so `World::new` avoids it while it lives.

use std::collections::VecDeque;

use parking_lot::Mutex;

/// How many tags there are: an `Entity`'s generation word keeps 8 bits for it.
const TAGS: usize = 256;

/// Which tags the live worlds hold, and the free ones in the order they are handed out.
///
/// The free tag released longest ago is found without looking at all 256: never-released
/// tags come first, lowest first (a cursor), then released ones in release order (a queue).
/// A scan of all 256 took 59% of `World::new`'s instructions in a debug build, and as much of
/// its time under Miri, where every test makes worlds.
struct TagPool {
    /// Live worlds holding each tag.
    live: [u32; TAGS],
    /// When each tag was last released (a count of releases); 0 for never.
    released_at: [u64; TAGS],
    releases: u64,
    /// The tags below it were all held once; the ones from it on that were never released
    /// and are not held are free, and older than any released tag.
    never_released: usize,
    /// The tags that were free when released, oldest release first, each with its release
    /// count. An entry whose tag was held or released again since is stale and skipped.
    released: VecDeque<(u64, u8)>,
}

impl TagPool {
    const fn new() -> Self {
        Self {
            live: [0; TAGS],
            released_at: [0; TAGS],
            releases: 0,
            never_released: 0,
            released: VecDeque::new(),
        }
    }

    /// Takes the free tag released longest ago (never-released ones first, lowest first);
    /// past 256 live worlds, shares the tag held by the fewest (the lowest of them).
    fn take(&mut self) -> usize {
        let tag = self.oldest_free().unwrap_or_else(|| {
            let tag = (0..TAGS).min_by_key(|&tag| (self.live[tag], tag)).unwrap_or(0);
            tracing::warn!(
                tag,
                "more than 256 worlds are alive: the new world shares tag {tag} with {} other(s), \
                 and an Entity of one is told apart from the other's only by its slot and \
                 generation (see World::tag)",
                self.live[tag]
            );
            tag
        });
        self.live[tag] += 1;
        tag
    }

    fn oldest_free(&mut self) -> Option<usize> {
        while self.never_released < TAGS {
            let tag = self.never_released;
            if self.live[tag] == 0 && self.released_at[tag] == 0 {
                return Some(tag);
            }
            // Held now, or released (then it is in the queue): never free in this range again.
            self.never_released += 1;
        }
        while let Some(entry) = self.released.pop_front() {
            if self.is_current(entry) {
                return Some(usize::from(entry.1));
            }
        }
        None
    }

    /// True when a queue entry is not stale: its tag is free and was last released then.
    fn is_current(&self, (at, tag): (u64, u8)) -> bool {
        self.live[usize::from(tag)] == 0 && self.released_at[usize::from(tag)] == at
    }

    /// Holds `tag` whether or not another live world does.
    fn pin(&mut self, tag: usize) {
        self.live[tag] += 1;
    }

    fn release(&mut self, tag: usize) {
        self.live[tag] -= 1;
        self.releases += 1;
        self.released_at[tag] = self.releases;
        if self.live[tag] == 0 {
            self.released.push_back((self.releases, tag as u8));
            // Stale entries come from tags pinned while free (`World::with_tag`): drop them
            // now and then, so that the queue stays within twice the tags.
            if self.released.len() > 2 * TAGS {
                let mut released = std::mem::take(&mut self.released);
                released.retain(|&entry| self.is_current(entry));
                self.released = released;
            }
        }
    }
}

static POOL: Mutex<TagPool> = Mutex::new(TagPool::new());

/// A world's hold on its tag, released when dropped.
#[derive(Debug)]
pub(crate) struct TagLease(u8);

impl TagLease {
    /// The tag no live world holds that was released longest ago; past 256 live worlds, the
    /// least shared one (with a warning).
    pub(crate) fn any() -> Self {
        Self(POOL.lock().take() as u8)
    }

    /// Holds `tag` whether or not another live world does.
    pub(crate) fn pinned(tag: u8) -> Self {
        POOL.lock().pin(usize::from(tag));
        Self(tag)
    }

    /// The tag.
    pub(crate) fn tag(&self) -> u8 {
        self.0
    }
}

impl Drop for TagLease {
    fn drop(&mut self) {
        POOL.lock().release(usize::from(self.0));
    }
}

#[cfg(test)]
mod tests {
    use super::{TAGS, TagPool};

    /// The rule the pool implements, by scanning every tag.
    struct Scan {
        live: [u32; TAGS],
        released_at: [u64; TAGS],
        releases: u64,
    }

    impl Scan {
        fn take(&mut self) -> usize {
            let free = (0..TAGS)
                .filter(|&tag| self.live[tag] == 0)
                .min_by_key(|&tag| (self.released_at[tag], tag));
            let tag = free.unwrap_or_else(|| (0..TAGS).min_by_key(|&tag| (self.live[tag], tag)).unwrap());
            self.live[tag] += 1;
            tag
        }

        fn release(&mut self, tag: usize) {
            self.live[tag] -= 1;
            self.releases += 1;
            self.released_at[tag] = self.releases;
        }
    }

    /// Takes, pins and releases in a random order (past 256 held, and with runs of pins of
    /// free tags that fill the queue with stale entries): the pool hands out the tags the
    /// scan does, every time.
    #[test]
    // Safe code under a mutex, and the scan is the slow path it replaced.
    #[cfg_attr(miri, ignore)]
    fn the_pool_hands_out_the_tags_a_scan_of_all_of_them_picks() {
        let mut pool = TagPool::new();
        let mut scan = Scan {
            live: [0; TAGS],
            released_at: [0; TAGS],
            releases: 0,
        };
        let mut held: Vec<usize> = Vec::new();
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        let mut random = move |n: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % n as u64) as usize
        };
        for step in 0..20_000 {
            // Phases: mostly takes (to past 256 held), mostly releases, then pins and
            // releases only (which fill the queue with stale entries until it is compacted).
            let phase = step / 2_000 % 3;
            let roll = random(10);
            if phase == 2 && (roll < 5 || held.is_empty()) {
                let tag = random(TAGS);
                pool.pin(tag);
                scan.live[tag] += 1;
                held.push(tag);
            } else if phase != 2 && (held.is_empty() || roll < if phase == 0 { 7 } else { 3 }) {
                let tag = pool.take();
                assert_eq!(tag, scan.take(), "step {step}");
                held.push(tag);
            } else {
                let tag = held.swap_remove(random(held.len()));
                pool.release(tag);
                scan.release(tag);
            }
            assert!(pool.released.len() <= 2 * TAGS + 1, "step {step}");
        }
        assert_eq!(pool.live, scan.live);
    }
}
