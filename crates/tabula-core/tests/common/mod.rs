//! Shared by the model-based tests (each test file that says `mod common;`).

// Each test binary uses a different subset.
#![allow(dead_code)]

use tabula_core::{Entity, World};

/// The largest generation a handle can have (24 bits; the 8 above hold the world tag).
pub const MAX_GENERATION: u32 = (1 << 24) - 1;

/// A handle of `world`'s with this index and generation (`1..=MAX_GENERATION`), whether or not
/// the world ever handed it out.
pub fn forge(world: &World, index: u32, generation: u32) -> Entity {
    let word = (u32::from(world.tag()) << 24) | generation;
    Entity::from_bits(u64::from(index) | (u64::from(word) << 32)).expect("nonzero generation")
}

/// Random numbers: SplitMix64, so sequences reproduce from a seed on every platform.
pub struct Rng(pub u64);

impl Rng {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n`; `n > 0`.
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    pub fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }

    pub fn pick<T: Copy>(&mut self, items: &[T]) -> Option<T> {
        (!items.is_empty()).then(|| items[self.below(items.len())])
    }
}
