//! Entity handles: what a game holds on to instead of a pointer.
//!
//! An [`Entity`] is a 32-bit slot index plus a 32-bit generation. The slot is reused after a
//! despawn, but its generation is bumped first, so an old handle never reaches the new
//! occupant: it simply reports [`NoSuchEntity`](crate::EntityError::NoSuchEntity).

mod allocator;
mod lanes;

use std::fmt;
use std::num::NonZeroU32;

pub use allocator::{Entities, ReserveEntities};
pub(crate) use allocator::{Locations, SHARED_LANE};

/// A handle to an entity in a [`World`](crate::World).
///
/// Cheap to copy, compare and hash; 8 bytes, and `Option<Entity>` is 8 bytes too because the
/// generation is never zero. Its `Debug` form is `index v generation`, e.g. `7v2`.
///
/// ```
/// use tabula::World;
///
/// let mut world = World::new();
/// let e = world.spawn((1u32,));
/// assert_eq!(format!("{e:?}"), "0v1");
/// assert_eq!(tabula::Entity::from_bits(e.to_bits()), Some(e));
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
// Aligned as one 64-bit word: a handle is then loaded, kept, spilled and stored (into a
// table's id list) as one value instead of two 32-bit halves (callgrind, 10k entities: 3.5
// instructions fewer per insert or remove). `repr(C)` keeps the index in the low half.
#[repr(C, align(8))]
pub struct Entity {
    // Field order gives the derived `Ord`: by index, then by generation.
    index: u32,
    generation: NonZeroU32,
}

impl Entity {
    pub(crate) const fn new(index: u32, generation: NonZeroU32) -> Self {
        Self { index, generation }
    }

    /// The slot this entity occupies; reused (with a new generation) after a despawn.
    pub const fn index(self) -> u32 {
        self.index
    }

    /// How many times the slot had been reused when this handle was made; starts at 1.
    pub const fn generation(self) -> u32 {
        self.generation.get()
    }

    /// Packs the handle into 64 bits: generation in the high half, index in the low half.
    pub const fn to_bits(self) -> u64 {
        ((self.generation.get() as u64) << 32) | self.index as u64
    }

    /// Unpacks [`to_bits`](Self::to_bits); `None` when the generation half is zero, which no
    /// real handle has.
    pub const fn from_bits(bits: u64) -> Option<Self> {
        match NonZeroU32::new((bits >> 32) as u32) {
            Some(generation) => Some(Self {
                index: bits as u32,
                generation,
            }),
            None => None,
        }
    }
}

impl fmt::Debug for Entity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}v{}", self.index, self.generation)
    }
}

impl fmt::Display for Entity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

/// Where an entity's components live: which archetype, and which row of its table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EntityLocation {
    /// The archetype holding the entity.
    pub archetype: crate::ArchetypeId,
    /// The row of the archetype's table.
    pub row: u32,
}

impl EntityLocation {
    /// The location of a slot that holds no live entity (free, or reserved and not yet flushed).
    pub(crate) const NOWHERE: Self = Self {
        archetype: crate::ArchetypeId::NONE,
        row: u32::MAX,
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn option_entity_is_eight_bytes() {
        assert_eq!(size_of::<Entity>(), 8);
        assert_eq!(size_of::<Option<Entity>>(), 8);
    }

    #[test]
    fn bits_round_trip_and_debug_form() {
        let e = Entity::new(7, NonZeroU32::new(2).unwrap());
        assert_eq!(format!("{e:?}"), "7v2");
        assert_eq!(e.to_bits(), (2u64 << 32) | 7);
        assert_eq!(Entity::from_bits(e.to_bits()), Some(e));
        assert_eq!(Entity::from_bits(7), None);
    }

    #[test]
    fn ordered_by_index_then_generation() {
        let g = |n| NonZeroU32::new(n).unwrap();
        assert!(Entity::new(1, g(9)) < Entity::new(2, g(1)));
        assert!(Entity::new(2, g(1)) < Entity::new(2, g(2)));
    }
}
