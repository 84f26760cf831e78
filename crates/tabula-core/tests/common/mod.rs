//! Shared by the model-based tests (each test file that says `mod common;`).

// Each test binary uses a different subset.
#![allow(dead_code, unused_imports, unused_macros)]

use tabula_core::{Entity, World};

/// Where a test's components live: a test written as `fn case(storage: Storage)` runs once
/// per storage (see [`per_storage!`]), each file registering its components as its
/// `world_with(storage)` says.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Storage {
    Table,
    Sparse,
}

/// Generates, for each `fn case(storage: Storage)`, a module `case` with the tests `table`
/// and `sparse`.
macro_rules! per_storage {
    ($($case:ident),* $(,)?) => {
        $(
            mod $case {
                use super::Storage;

                #[test]
                fn table() {
                    super::$case(Storage::Table);
                }

                #[test]
                fn sparse() {
                    super::$case(Storage::Sparse);
                }
            }
        )*
    };
}
pub(crate) use per_storage;

/// The largest generation a handle can have (24 bits; the 8 above hold the world tag).
pub const MAX_GENERATION: u32 = (1 << 24) - 1;

/// A handle of `world`'s with this index and generation (`1..=MAX_GENERATION`), whether or not
/// the world ever handed it out.
pub fn forge(world: &World, index: u32, generation: u32) -> Entity {
    let word = (u32::from(world.tag()) << 24) | generation;
    Entity::from_bits(u64::from(index) | (u64::from(word) << 32)).expect("nonzero generation")
}

/// Random numbers: SplitMix64, so sequences reproduce from a seed on every platform. The one
/// RNG of the model-based tests, `tabula-check`'s (which the model test, the fuzzer and the
/// soak share).
pub use tabula_check::Rng;

/// One of three sizes for a randomized test, by what runs it: `miri` under Miri (which
/// interprets, ~1000x slower), `sanitizer` under the sanitizers (`--cfg tabula_sanitizer`,
/// several times slower), `native` otherwise.
pub const fn by_checker<T: Copy>(miri: T, sanitizer: T, native: T) -> T {
    if cfg!(miri) {
        miri
    } else if cfg!(tabula_sanitizer) {
        sanitizer
    } else {
        native
    }
}
