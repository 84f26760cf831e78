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

use parking_lot::Mutex;

/// How many tags there are: an `Entity`'s generation word keeps 8 bits for it.
const TAGS: usize = 256;

struct TagPool {
    /// Live worlds holding each tag.
    live: [u32; TAGS],
    /// When each tag was last released (a count of releases); 0 for never.
    released_at: [u64; TAGS],
    releases: u64,
}

static POOL: Mutex<TagPool> = Mutex::new(TagPool {
    live: [0; TAGS],
    released_at: [0; TAGS],
    releases: 0,
});

/// A world's hold on its tag, released when dropped.
#[derive(Debug)]
pub(crate) struct TagLease(u8);

impl TagLease {
    /// The tag no live world holds that was released longest ago; past 256 live worlds, the
    /// least shared one (with a warning).
    pub(crate) fn any() -> Self {
        let mut pool = POOL.lock();
        let free = (0..TAGS)
            .filter(|&tag| pool.live[tag] == 0)
            .min_by_key(|&tag| (pool.released_at[tag], tag));
        let tag = free.unwrap_or_else(|| {
            let tag = (0..TAGS).min_by_key(|&tag| (pool.live[tag], tag)).unwrap_or(0);
            tracing::warn!(
                tag,
                "more than 256 worlds are alive: the new world shares tag {tag} with {} other(s), \
                 and an Entity of one is told apart from the other's only by its slot and \
                 generation (see World::tag)",
                pool.live[tag]
            );
            tag
        });
        pool.live[tag] += 1;
        Self(tag as u8)
    }

    /// Holds `tag` whether or not another live world does.
    pub(crate) fn pinned(tag: u8) -> Self {
        POOL.lock().live[usize::from(tag)] += 1;
        Self(tag)
    }

    /// The tag.
    pub(crate) fn tag(&self) -> u8 {
        self.0
    }
}

impl Drop for TagLease {
    fn drop(&mut self) {
        let mut pool = POOL.lock();
        let tag = usize::from(self.0);
        pool.live[tag] -= 1;
        pool.releases += 1;
        pool.released_at[tag] = pool.releases;
    }
}
