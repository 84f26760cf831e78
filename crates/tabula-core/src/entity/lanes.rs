//! Where each reservation lane's ids come from: a map from (lane, reservation number) to a
//! position of the allocator's sequence (see `allocator.rs`) that depends only on the
//! layout, never on other lanes' reservations.
//!
//! The layout is fixed between flushes. Each lane `k` has a *block* of `blocks[k]`
//! consecutive positions starting at `offsets[k]`; the blocks sit side by side and fill
//! positions `0..round`. A lane's reservations take its block first; past it, the lane takes
//! every `lanes`-th position after the blocks (the overflow, striped by lane):
//!
//! ```text
//! position(k, i) = offsets[k] + i                          if i < blocks[k]
//!                = round + (i - blocks[k]) * lanes + k      otherwise
//! ```
//!
//! No two (lane, number) pairs share a position, so no id is handed out twice, and each
//! lane's ids are a function of the layout and its own count alone; with one lane,
//! `position(0, i) = i`.
//!
//! At each flush the blocks of the lanes that were *active* since the last one (they
//! reserved, or their owner began a run) are resized to what they used (`max(used, block /
//! 2)`); the others keep theirs. So a steady workload stays inside its blocks, leaves few
//! holes and never reaches the striped overflow, however many flushes happen between two
//! runs of a lane's owner (a sync point applying thousands of commands flushes often, and
//! other lanes' systems run at other sync points). A released lane, waiting for its next
//! owner, counts as active with nothing used, so its block halves at every flush.
//!
//! A lane whose block is empty (new, or long idle) spreads its reservations `lanes`
//! positions apart: one lane's first run of `n` spawns beside `L - 1` quiet lanes claims
//! positions up to `n * L`, and the flush returns the `n * (L - 1)` holes between them to the
//! free list, where the next reservations and spawns take them before any fresh slot.

/// The position layout of every lane until the next flush.
#[derive(Clone, Debug)]
pub(crate) struct LaneLayout {
    blocks: Vec<u64>,
    offsets: Vec<u64>,
    round: u64,
}

impl LaneLayout {
    /// The layout of the shared lane alone, with no block: `position(0, i) = i`.
    pub(crate) fn new() -> Self {
        Self {
            blocks: vec![0],
            offsets: vec![0],
            round: 0,
        }
    }

    /// Adds a lane with an empty block; returns its index.
    pub(crate) fn add_lane(&mut self) -> u32 {
        let index = u32::try_from(self.blocks.len()).expect("more than u32::MAX entity lanes");
        self.blocks.push(0);
        self.offsets.push(self.round);
        index
    }

    /// A layout with these blocks side by side, in lane order (for a load).
    #[cfg(feature = "serde")]
    pub(crate) fn from_blocks(blocks: Vec<u64>) -> Self {
        let mut layout = Self {
            offsets: vec![0; blocks.len()],
            blocks,
            round: 0,
        };
        layout.resize(&[], |_| false);
        layout
    }

    /// Lane `k`'s block (for a save).
    #[cfg(feature = "serde")]
    pub(crate) fn block(&self, k: usize) -> u64 {
        self.blocks[k]
    }

    /// The position of lane `lane`'s reservation number `number`.
    #[inline]
    pub(crate) fn position(&self, lane: u32, number: u64) -> u64 {
        let k = lane as usize;
        let block = self.blocks[k];
        if number < block {
            self.offsets[k] + number
        } else {
            self.round + (number - block) * self.blocks.len() as u64 + u64::from(lane)
        }
    }

    /// Which positions `counts[k]` reservations per lane claimed: `claimed[j]` for every
    /// position up to the last one claimed.
    pub(crate) fn claimed(&self, counts: &[u64]) -> Vec<bool> {
        let end = counts
            .iter()
            .enumerate()
            .filter(|&(_, &n)| n > 0)
            .map(|(k, &n)| self.position(k as u32, n - 1) + 1)
            .max()
            .unwrap_or(0);
        let mut claimed = vec![false; usize::try_from(end).expect("reservation positions fit in memory")];
        for (k, &n) in counts.iter().enumerate() {
            for number in 0..n {
                claimed[self.position(k as u32, number) as usize] = true;
            }
        }
        claimed
    }

    /// The next layout, after the lanes reserved `counts`: the block of each lane that was
    /// `active` becomes the larger of what it used and half its old size; the others keep
    /// theirs.
    pub(crate) fn resize(&mut self, counts: &[u64], active: impl Fn(usize) -> bool) {
        for (k, &used) in counts.iter().enumerate() {
            if active(k) {
                self.blocks[k] = used.max(self.blocks[k] / 2);
            }
        }
        // The blocks side by side, in lane order.
        let mut offset = 0;
        for (block, start) in self.blocks.iter().zip(&mut self.offsets) {
            *start = offset;
            offset += block;
        }
        self.round = offset;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn one_lane_takes_positions_in_order() {
        let layout = LaneLayout::new();
        assert_eq!(
            (0..5).map(|i| layout.position(0, i)).collect::<Vec<_>>(),
            [0, 1, 2, 3, 4]
        );
    }

    #[test]
    fn lanes_never_share_a_position_and_blocks_follow_use() {
        let mut layout = LaneLayout::new();
        for _ in 0..3 {
            layout.add_lane();
        }
        for counts in [[0, 5, 0, 2], [3, 5, 1, 0], [0, 7, 1, 1], [0, 0, 0, 0]] {
            let mut seen = HashSet::new();
            for (k, &n) in counts.iter().enumerate() {
                for i in 0..n {
                    assert!(
                        seen.insert(layout.position(k as u32, i)),
                        "{counts:?}: lane {k} #{i}"
                    );
                }
            }
            let claimed = layout.claimed(&counts);
            assert_eq!(claimed.iter().filter(|&&c| c).count(), seen.len());
            assert!(seen.iter().all(|&p| claimed[p as usize]));
            layout.resize(&counts, |_| true);
        }
        // After [0, 7, 1, 1] the blocks are [0, 7, 1, 1] (halving [1, 5, 1, 1] where larger),
        // so the same counts again fill positions 0..9 with no hole.
        layout.resize(&[0, 7, 1, 1], |_| true);
        let claimed = layout.claimed(&[0, 7, 1, 1]);
        assert_eq!(claimed, vec![true; 9]);
    }

    #[test]
    fn idle_lanes_keep_their_blocks_and_active_ones_follow_use() {
        let mut layout = LaneLayout::new();
        for _ in 0..2 {
            layout.add_lane();
        }
        layout.resize(&[0, 40, 30], |_| true);
        // Many flushes in which only the shared lane was active: the others keep their blocks.
        for _ in 0..100 {
            layout.resize(&[1, 0, 0], |k| k == 0);
        }
        assert_eq!(layout.blocks, [1, 40, 30]);
        assert_eq!(layout.position(2, 0), 41, "lane 2's block follows lanes 0 and 1");
        // An active lane that used nothing halves; one that used more grows to it.
        layout.resize(&[0, 0, 50], |k| k != 0);
        assert_eq!(layout.blocks, [1, 20, 50]);
        assert_eq!(layout.round, 71);
        assert_eq!(layout.position(1, 20), 71 + 1, "past the blocks, striped by lane");
    }
}
