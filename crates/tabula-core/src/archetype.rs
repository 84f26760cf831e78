//! Archetypes: one table per distinct set of component types, linked by cached edges.
//!
//! Every entity lives in exactly one archetype, the one whose component set equals its own.
//! Adding or removing components moves the entity's row to another archetype; the first time a
//! given bundle is added to (or removed from) an archetype, the target is found and the column
//! mapping computed, and that [edge](Edges) is cached so every later move is a lookup.

mod edges;

use std::any::TypeId;
use std::hash::{Hash, Hasher};

use hashbrown::HashMap;

use crate::component::{ComponentId, Components, TypeIdHasher};
use crate::entity::Entity;
use crate::storage::Table;

pub(crate) use edges::{BundleId, Edges, InsertEdge, RemoveEdge};

/// Names one archetype of a [`World`](crate::World); dense, starting at
/// [`ArchetypeId::EMPTY`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ArchetypeId(u32);

impl ArchetypeId {
    /// The archetype of entities with no components; it always exists.
    pub const EMPTY: Self = Self(0);
    /// Marks "no archetype" in the location of a free slot.
    pub(crate) const NONE: Self = Self(u32::MAX);

    /// The id as an index.
    pub const fn index(self) -> usize {
        self.0 as usize
    }
}

/// The entities that share one exact set of component types, and their table.
pub struct Archetype {
    id: ArchetypeId,
    components: Box<[ComponentId]>,
    names: Box<[&'static str]>,
    /// `(TypeId, column)` sorted by `TypeId`, for typed lookups without the registry.
    by_type: Box<[(TypeId, u32)]>,
    /// For each bucket of `TypeId`s, the index in `by_type` of the first of this archetype's
    /// component types that falls in it ([`NO_ENTRY`] if none).
    buckets: [u8; BUCKETS],
    /// Which bits of a `TypeId`'s hash pick its bucket: chosen so that, when possible, every
    /// type of this archetype has a bucket of its own.
    bucket_shift: u32,
    pub(crate) table: Table,
    pub(crate) edges: Edges,
}

impl Archetype {
    fn new(id: ArchetypeId, components: Box<[ComponentId]>, registry: &Components) -> Self {
        let infos = components.iter().map(|&c| registry.info(c));
        let mut by_type: Box<[(TypeId, u32)]> = infos
            .clone()
            .enumerate()
            .map(|(column, info)| (info.type_id(), column as u32))
            .collect();
        by_type.sort_unstable_by_key(|&(type_id, _)| type_id);
        let hashes: Vec<u64> = by_type.iter().map(|&(type_id, _)| type_hash(type_id)).collect();
        let bucket_shift = (0..=64 - BUCKETS.trailing_zeros())
            .find(|&shift| all_in_own_buckets(&hashes, shift))
            .unwrap_or(0);
        let mut buckets = [NO_ENTRY; BUCKETS];
        for (entry, &hash) in hashes.iter().enumerate().take(usize::from(NO_ENTRY)) {
            let slot = &mut buckets[bucket(hash, bucket_shift)];
            if *slot == NO_ENTRY {
                *slot = entry as u8;
            }
        }
        Self {
            buckets,
            bucket_shift,
            id,
            names: infos.clone().map(|info| info.name()).collect(),
            table: Table::new(infos),
            components,
            by_type,
            edges: Edges::default(),
        }
    }

    /// This archetype's id.
    pub fn id(&self) -> ArchetypeId {
        self.id
    }

    /// How many entities live here.
    #[inline]
    pub fn len(&self) -> usize {
        self.table.len()
    }

    /// True when no entity lives here (the archetype is kept for its cached edges).
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.table.len() == 0
    }

    /// The entities stored here, in row order.
    #[inline]
    pub fn entities(&self) -> &[Entity] {
        self.table.entities()
    }

    /// The component set, sorted by id; column `i` stores `component_ids()[i]`.
    pub fn component_ids(&self) -> &[ComponentId] {
        &self.components
    }

    /// The Rust type names of the components, in column order.
    pub fn component_names(&self) -> impl ExactSizeIterator<Item = &'static str> + '_ {
        self.names.iter().copied()
    }

    /// True when entities here have component `T`.
    pub fn has<T: 'static>(&self) -> bool {
        self.column_of_type(TypeId::of::<T>()).is_some()
    }

    /// The column storing the component with this id.
    #[inline]
    pub(crate) fn column_of(&self, id: ComponentId) -> Option<usize> {
        self.components.binary_search(&id).ok()
    }

    /// The column storing the component with this Rust type.
    #[inline]
    pub(crate) fn column_of_type(&self, type_id: TypeId) -> Option<usize> {
        // For a constant `type_id` (`World::get::<T>`) the hash is a constant too, so this is
        // a shift, one byte load and one comparison. A hit is exact because the `TypeId` is
        // compared.
        let entry = self.buckets[bucket(type_hash(type_id), self.bucket_shift)];
        match self.by_type.get(usize::from(entry)) {
            Some(&(t, column)) if t == type_id => Some(column as usize),
            // `NO_ENTRY` past the end: the bucket is empty and every type was bucketed (there
            // are fewer than 256), so the type is absent.
            None => None,
            // Another type holds the bucket: this one is absent or shares it.
            Some(_) => self.search_type(type_id),
        }
    }

    /// [`column_of_type`](Self::column_of_type) by searching `by_type`.
    fn search_type(&self, type_id: TypeId) -> Option<usize> {
        // Archetypes are small: a linear scan beats hashing for the common sizes.
        if self.by_type.len() <= 8 {
            self.by_type
                .iter()
                .find(|&&(t, _)| t == type_id)
                .map(|&(_, column)| column as usize)
        } else {
            self.by_type
                .binary_search_by_key(&type_id, |&(t, _)| t)
                .ok()
                .map(|i| self.by_type[i].1 as usize)
        }
    }
}

impl std::fmt::Debug for Archetype {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Archetype")
            .field("id", &self.id)
            .field("components", &self.names)
            .field("len", &self.len())
            .finish()
    }
}

/// How many buckets [`Archetype::column_of_type`]'s fast path spreads `TypeId`s over (a power
/// of two, at most 64).
const BUCKETS: usize = 32;

/// Marks an empty bucket. Used as an index it is past the end of `by_type` for every archetype
/// of fewer than 256 types, and a hit is checked against the `TypeId` in any case.
const NO_ENTRY: u8 = u8::MAX;

/// The 64 bits a `TypeId` hashes to (it is a hash already; `TypeIdHasher` passes it through).
#[inline]
fn type_hash(type_id: TypeId) -> u64 {
    let mut hasher = TypeIdHasher::default();
    type_id.hash(&mut hasher);
    hasher.finish()
}

/// The bucket of a type hash: the bits at `shift`.
#[inline]
fn bucket(hash: u64, shift: u32) -> usize {
    (hash >> shift) as usize % BUCKETS
}

/// True when no two of `hashes` share a bucket at `shift`.
fn all_in_own_buckets(hashes: &[u64], shift: u32) -> bool {
    let mut taken = 0u64;
    hashes.iter().all(|&hash| {
        let bit = 1u64 << bucket(hash, shift);
        let free = taken & bit == 0;
        taken |= bit;
        free
    })
}

/// All archetypes of a world, the index from component set to archetype, and the edge cache.
pub(crate) struct Archetypes {
    pub(crate) archetypes: Vec<Archetype>,
    by_components: HashMap<Box<[ComponentId]>, ArchetypeId>,
    pub(crate) insert_edges: Vec<InsertEdge>,
    pub(crate) remove_edges: Vec<RemoveEdge>,
}

impl Archetypes {
    pub(crate) fn new(registry: &Components) -> Self {
        let mut archetypes = Self {
            archetypes: Vec::new(),
            by_components: HashMap::new(),
            insert_edges: Vec::new(),
            remove_edges: Vec::new(),
        };
        let empty = archetypes.get_or_create(registry, &[]);
        debug_assert_eq!(empty, ArchetypeId::EMPTY);
        archetypes
    }

    /// The archetype for a sorted, duplicate-free component set, created on first use.
    pub(crate) fn get_or_create(&mut self, registry: &Components, components: &[ComponentId]) -> ArchetypeId {
        debug_assert!(
            components.windows(2).all(|w| w[0] < w[1]),
            "component set must be sorted"
        );
        if let Some(&id) = self.by_components.get(components) {
            return id;
        }
        let id = ArchetypeId(u32::try_from(self.archetypes.len()).expect("too many archetypes"));
        self.archetypes
            .push(Archetype::new(id, components.into(), registry));
        self.by_components.insert(components.into(), id);
        id
    }

    pub(crate) fn len(&self) -> usize {
        self.archetypes.len()
    }
}

/// Two distinct archetypes, both mutably (a move reads one table and writes the other).
#[inline]
pub(crate) fn pair_mut(
    archetypes: &mut [Archetype],
    a: ArchetypeId,
    b: ArchetypeId,
) -> (&mut Archetype, &mut Archetype) {
    match archetypes.get_disjoint_mut([a.index(), b.index()]) {
        Ok([a, b]) => (a, b),
        Err(_) => pair_mut_failed(a, b),
    }
}

#[cold]
#[track_caller]
fn pair_mut_failed(a: ArchetypeId, b: ArchetypeId) -> ! {
    panic!("pair_mut needs two distinct, existing archetypes, got {a:?} and {b:?}")
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Marker<const N: usize>;

    #[test]
    fn column_of_type_is_exact_with_shared_and_empty_buckets() {
        let mut registry = Components::default();
        let mut type_ids = Vec::new();
        macro_rules! register {
            ($($n:literal)*) => {$(
                registry.register::<Marker<$n>>();
                type_ids.push(TypeId::of::<Marker<$n>>());
            )*};
        }
        // Forty types over thirty-two buckets: some buckets are shared.
        register!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19);
        register!(20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39);
        let ids: Vec<ComponentId> = registry.iter().map(|info| info.id()).collect();
        let archetype = Archetype::new(ArchetypeId(1), ids.into(), &registry);
        for &type_id in &type_ids {
            let column = archetype
                .column_of_type(type_id)
                .expect("every type has a column");
            let stored = registry.info(archetype.component_ids()[column]).type_id();
            assert_eq!(stored, type_id);
        }
        assert_eq!(archetype.column_of_type(TypeId::of::<Marker<99>>()), None);

        // A one-type archetype: every other type is absent, whether its bucket is empty or not.
        let first = registry.iter().next().map(|info| info.id());
        let small = Archetype::new(ArchetypeId(2), first.into_iter().collect(), &registry);
        assert_eq!(small.column_of_type(type_ids[0]), Some(0));
        for &type_id in &type_ids[1..] {
            assert_eq!(small.column_of_type(type_id), None);
        }
    }

    #[test]
    fn small_archetypes_give_every_type_its_own_bucket() {
        let mut registry = Components::default();
        let ids = [
            registry.register::<Marker<0>>(),
            registry.register::<Marker<1>>(),
            registry.register::<Marker<2>>(),
            registry.register::<Marker<3>>(),
            registry.register::<Marker<4>>(),
            registry.register::<Marker<5>>(),
        ];
        let archetype = Archetype::new(ArchetypeId(1), ids.into(), &registry);
        let used = archetype
            .buckets
            .iter()
            .filter(|&&entry| entry != NO_ENTRY)
            .count();
        assert_eq!(used, ids.len(), "each lookup is a single probe");
    }
}
