//! Where operations come from: the bytes of a fuzz input, or a seeded random stream.

/// A stream of bytes that [`Op::decode`](crate::Op::decode) turns into operations.
pub trait Source {
    /// The next byte, or `None` when the input is used up.
    fn byte(&mut self) -> Option<u8>;

    /// Two bytes, little-endian, or `None` when the input is used up.
    fn u16(&mut self) -> Option<u16> {
        Some(u16::from_le_bytes([self.byte()?, self.byte()?]))
    }
}

/// The bytes of one fuzz input (or one corpus file), read front to back.
#[derive(Debug)]
pub struct Bytes<'a> {
    data: &'a [u8],
}

impl<'a> Bytes<'a> {
    /// Reads `data` from its first byte.
    pub fn new(data: &'a [u8]) -> Self {
        Self { data }
    }
}

impl Source for Bytes<'_> {
    fn byte(&mut self) -> Option<u8> {
        let (&first, rest) = self.data.split_first()?;
        self.data = rest;
        Some(first)
    }
}

/// SplitMix64: an endless, seeded byte stream (and the generator of component values), so a
/// sequence reproduces from its seed on every platform. tabula-core's model-based tests draw
/// from it too (`tests/common`).
#[derive(Clone, Debug)]
pub struct Rng(pub u64);

impl Rng {
    /// The next 64 random bits.
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

    /// True with probability `percent` / 100.
    pub fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }

    /// One of `items`, uniformly; `None` when there are none.
    pub fn pick<T: Copy>(&mut self, items: &[T]) -> Option<T> {
        (!items.is_empty()).then(|| items[self.below(items.len())])
    }
}

impl Source for Rng {
    fn byte(&mut self) -> Option<u8> {
        Some(self.next_u64() as u8)
    }
}
