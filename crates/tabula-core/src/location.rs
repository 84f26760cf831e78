//! Where an entity's row is: the archetype's id and the row of its table. A leaf module, so
//! that the entity allocator (which records locations) and the archetypes (which store
//! entity ids) need not know each other.

/// Names one archetype of a [`World`](crate::World); dense, starting at
/// [`ArchetypeId::EMPTY`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ArchetypeId(pub(crate) u32);

impl ArchetypeId {
    /// The archetype of entities with no components; it always exists.
    pub const EMPTY: Self = Self(0);
    /// Marks "no archetype" in the location of a free slot.
    pub(crate) const NONE: Self = Self(u32::MAX);
    /// Names no archetype and differs from [`NONE`](Self::NONE): where a lookup compares an
    /// id with a slot's location, this one matches no slot, not even a free one.
    pub(crate) const ABSENT: Self = Self(u32::MAX - 1);

    /// The id as an index.
    pub const fn index(self) -> usize {
        self.0 as usize
    }
}

/// Where an entity's components live: which archetype, and which row of its table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EntityLocation {
    /// The archetype holding the entity.
    pub archetype: ArchetypeId,
    /// The row of the archetype's table.
    pub row: u32,
}

impl EntityLocation {
    /// The location of a slot that holds no live entity (free, or reserved and not yet flushed).
    pub(crate) const NOWHERE: Self = Self {
        archetype: ArchetypeId::NONE,
        row: u32::MAX,
    };
}
