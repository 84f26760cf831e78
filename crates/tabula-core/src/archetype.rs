//! Archetypes: one table per distinct set of component types, linked by cached edges.
//!
//! Every entity lives in exactly one archetype, the one whose component set equals its own.
//! Adding or removing components moves the entity's row to another archetype; the first time a
//! given bundle is added to (or removed from) an archetype, the target is found and the column
//! mapping computed, and that [edge](Edges) is cached so every later move is a lookup.

mod edges;
mod list;
mod shrink;

use std::any::TypeId;
use std::hash::{Hash, Hasher};

use hashbrown::HashMap;

use crate::bundle::LastBundle;
use crate::component::{ComponentId, Components, TypeIdHasher};
use crate::entity::Entity;
use crate::location::ArchetypeId;
use crate::storage::TYPED_SLOTS;
use crate::storage::Table;
use crate::world::hooks::HookKind;

pub(crate) use edges::{Edges, InsertEdge, RecentMove, RemoveEdge};
pub(crate) use list::ArchetypeList;

/// The entities that share one exact set of component types, and their table.
pub struct Archetype {
    /// `TypeId` → column for typed lookups ([`column_of_type`](Self::column_of_type)): every
    /// type sits in one of its two slots ([`slots_of`]) unless it `overflowed`. First field, so
    /// that a lookup reads the slot at a constant offset from the archetype.
    slots: [TypeSlot; SLOTS],
    /// Some type found no free slot of its two and can only be found in `by_type`.
    overflowed: bool,
    id: ArchetypeId,
    components: Box<[ComponentId]>,
    names: Box<[&'static str]>,
    /// `(TypeId, column)` sorted by `TypeId`: the slow path of typed lookups.
    by_type: Box<[(TypeId, u32)]>,
    pub(crate) table: Table,
    pub(crate) edges: Edges,
    /// Some component here has its removals logged, so a despawn from this archetype records
    /// the entity ([`World::track_removals`](crate::World::track_removals)).
    pub(crate) logs_removals: bool,
    /// Some component here has a hook that a despawn runs (`on_despawn`, `on_replace` or
    /// `on_remove`), so a despawn from this archetype calls them first (see `world/hooks.rs`).
    pub(crate) hooked: bool,
    /// The immutable components here, sorted (almost always none): what `get_mut` and `&mut`
    /// query terms refuse (see [`ComponentInfo::is_immutable`](crate::ComponentInfo::is_immutable)).
    pub(crate) immutable: Box<[ComponentId]>,
    /// Bit `i` set: the archetype stores the world's `i`-th disabling component (see
    /// [`Archetypes::disabling`]), so queries that do not name it skip the archetype.
    pub(crate) disabling: u64,
}

impl Archetype {
    fn new(id: ArchetypeId, components: Box<[ComponentId]>, registry: &Components) -> Self {
        let infos = components.iter().map(|&c| registry.info(c));
        // Dynamic components have no `TypeId`: typed lookups never ask for them, and
        // lookups by id go through `column_of`.
        let mut by_type: Box<[(TypeId, u32)]> = infos
            .clone()
            .enumerate()
            .filter_map(|(column, info)| Some((info.type_id()?, column as u32)))
            .collect();
        by_type.sort_unstable_by_key(|&(type_id, _)| type_id);
        let mut slots = [TypeSlot::VACANT; SLOTS];
        let mut overflowed = false;
        for &(type_id, column) in by_type.iter() {
            overflowed |= place(&mut slots, TypeSlot { type_id, column }).is_err();
        }
        let mut table = Table::new(infos.clone());
        table.index_slots(slots.map(|slot| slot.column));
        let logs_removals = components.iter().any(|&c| registry.info(c).logs_removals());
        let hooked = components
            .iter()
            .any(|&c| registry.info(c).has_hooks(HookKind::LEAVING));
        let immutable = (components.iter().copied())
            .filter(|&c| registry.info(c).is_immutable())
            .collect();
        Self {
            slots,
            overflowed,
            id,
            names: infos.map(|info| info.name()).collect(),
            table,
            components,
            by_type,
            edges: Edges::default(),
            logs_removals,
            hooked,
            immutable,
            disabling: 0,
        }
    }

    /// True when component `id` is immutable and stored here (see `immutable`).
    #[inline]
    pub(crate) fn is_immutable(&self, id: ComponentId) -> bool {
        !self.immutable.is_empty() && self.immutable.contains(&id)
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
    ///
    /// For a constant `type_id` (`World::get::<T>`) both slot indices are constants, so a hit
    /// is one or two comparisons of a `TypeId` at a fixed offset from the archetype. A hit is
    /// exact because the whole `TypeId` is compared.
    #[inline]
    pub(crate) fn column_of_type(&self, type_id: TypeId) -> Option<usize> {
        let [first, second] = slots_of(type_id);
        if self.slots[first].type_id == type_id {
            return Some(self.slots[first].column as usize);
        }
        if self.slots[second].type_id == type_id {
            return Some(self.slots[second].column as usize);
        }
        // Absent, unless it was the type left without a slot.
        if self.overflowed {
            self.search_type(type_id)
        } else {
            None
        }
    }

    /// The value array of the column storing the component with this Rust type: what
    /// [`column_of_type`](Self::column_of_type) finds, without going through the column (the
    /// table keeps each slot's array at hand).
    #[inline]
    pub(crate) fn values_of_type(&self, type_id: TypeId) -> Option<*mut u8> {
        let [first, second] = slots_of(type_id);
        if self.slots[first].type_id == type_id {
            return Some(self.table.slot_values(first));
        }
        if self.slots[second].type_id == type_id {
            return Some(self.table.slot_values(second));
        }
        if self.overflowed {
            self.search_type(type_id)
                .map(|column| self.table.column(column).data_ptr())
        } else {
            None
        }
    }

    /// [`column_of_type`](Self::column_of_type) by searching `by_type`. Inlined although it
    /// is rare, so that the compiler sees a lookup never writes memory and can keep loop
    /// invariants of the caller (as in a loop of `World::get`) in registers.
    #[inline]
    fn search_type(&self, type_id: TypeId) -> Option<usize> {
        self.by_type
            .binary_search_by_key(&type_id, |&(t, _)| t)
            .ok()
            .map(|i| self.by_type[i].1 as usize)
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

/// How many `TypeId` slots an archetype has (a power of two). With two choices per type, up
/// to about half of them fill without any type left over.
const SLOTS: usize = TYPED_SLOTS;

/// How many evictions [`place`] tries before it gives up on a type.
const MAX_EVICTIONS: usize = 2 * SLOTS;

/// One entry of an archetype's `TypeId` → column table.
#[derive(Clone, Copy)]
struct TypeSlot {
    type_id: TypeId,
    column: u32,
}

/// Fills the slots no component type uses. No component can be `Vacant`: the type is private
/// to this module and has no values, so no world ever stores or asks for it.
enum Vacant {}

impl TypeSlot {
    const VACANT: Self = Self {
        type_id: TypeId::of::<Vacant>(),
        column: u32::MAX,
    };

    fn is_vacant(&self) -> bool {
        self.type_id == TypeId::of::<Vacant>()
    }
}

/// The 64 bits a `TypeId` hashes to (it is a hash already; `TypeIdHasher` passes it through).
#[inline]
fn type_hash(type_id: TypeId) -> u64 {
    let mut hasher = TypeIdHasher::default();
    type_id.hash(&mut hasher);
    hasher.finish()
}

/// The two slots a type may sit in: two independent bit ranges of its hash.
#[inline]
fn slots_of(type_id: TypeId) -> [usize; 2] {
    let hash = type_hash(type_id);
    [hash as usize % SLOTS, (hash >> 32) as usize % SLOTS]
}

/// Puts `entry` into one of its two slots, moving earlier entries to their other slot when
/// both are taken (cuckoo hashing). Gives back whichever entry is left without a slot.
fn place(slots: &mut [TypeSlot; SLOTS], mut entry: TypeSlot) -> Result<(), TypeSlot> {
    let [first, second] = slots_of(entry.type_id);
    if let Some(&free) = [first, second].iter().find(|&&s| slots[s].is_vacant()) {
        slots[free] = entry;
        return Ok(());
    }
    let mut at = first;
    for _ in 0..MAX_EVICTIONS {
        std::mem::swap(&mut entry, &mut slots[at]);
        if entry.is_vacant() {
            return Ok(());
        }
        // `entry` was evicted from `at`: it goes to its other slot.
        let [a, b] = slots_of(entry.type_id);
        at = if at == a { b } else { a };
    }
    Err(entry)
}

/// All archetypes of a world, the index from component set to archetype, and the edge cache.
pub(crate) struct Archetypes {
    pub(crate) archetypes: ArchetypeList,
    by_components: HashMap<Box<[ComponentId]>, ArchetypeId>,
    pub(crate) insert_edges: Vec<InsertEdge>,
    pub(crate) remove_edges: Vec<RemoveEdge>,
    /// The last one-entity insert and remove: bundle type, source archetype and edge (see
    /// [`recent`](Self::recent)).
    recent_insert: LastBundle<RecentMove>,
    recent_remove: LastBundle<RecentMove>,
    /// The disabling components ([`crate::Disabled`] and those registered with
    /// [`World::register_disabling_component`](crate::World::register_disabling_component)),
    /// in registration order: component `disabling[i]` is bit `i` of each archetype's
    /// `disabling` mask. At most 64.
    pub(crate) disabling: Vec<ComponentId>,
}

impl Archetypes {
    pub(crate) fn new(registry: &Components) -> Self {
        let mut archetypes = Self {
            archetypes: ArchetypeList::default(),
            by_components: HashMap::new(),
            insert_edges: Vec::new(),
            remove_edges: Vec::new(),
            recent_insert: LastBundle::default(),
            recent_remove: LastBundle::default(),
            disabling: Vec::new(),
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
        // Every real id is below the two sentinels.
        let id = u32::try_from(self.archetypes.len())
            .ok()
            .filter(|&id| id < ArchetypeId::ABSENT.0)
            .expect("too many archetypes");
        let id = ArchetypeId(id);
        let mut archetype = Archetype::new(id, components.into(), registry);
        archetype.disabling = self.disabling_mask(components);
        self.archetypes.push(archetype);
        self.by_components.insert(components.into(), id);
        id
    }

    /// The bits of the disabling components in a sorted component set.
    fn disabling_mask(&self, components: &[ComponentId]) -> u64 {
        (self.disabling.iter().enumerate())
            .filter(|(_, id)| components.binary_search(id).is_ok())
            .fold(0, |mask, (bit, _)| mask | 1 << bit)
    }

    /// Makes `id` a disabling component (nothing when it is one already) and marks the
    /// archetypes that store it. Returns its bit.
    ///
    /// # Panics
    /// When 64 components are disabling already.
    pub(crate) fn add_disabling(&mut self, id: ComponentId) -> u32 {
        if let Some(bit) = self.disabling.iter().position(|&d| d == id) {
            return bit as u32;
        }
        assert!(
            self.disabling.len() < 64,
            "a world has at most 64 disabling components; mark entities with an existing one \
             (such as `Disabled`) instead of registering more"
        );
        let bit = self.disabling.len() as u32;
        self.disabling.push(id);
        self.archetypes.mark_disabling(id, bit);
        bit
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
        Err(_) => panic!("pair_mut needs two distinct, existing archetypes, got {a:?} and {b:?}"),
    }
}

/// [`pair_mut`] without the checks, for the one-entity moves, whose ids are known good.
///
/// # Safety
/// `a` and `b` are distinct, existing archetypes.
#[inline]
pub(crate) unsafe fn pair_mut_unchecked(
    archetypes: &mut [Archetype],
    a: ArchetypeId,
    b: ArchetypeId,
) -> (&mut Archetype, &mut Archetype) {
    debug_assert!(a != b && a.index().max(b.index()) < archetypes.len());
    // SAFETY: both in bounds and distinct (the caller's contract).
    let [a, b] = unsafe { archetypes.get_disjoint_unchecked_mut([a.index(), b.index()]) };
    (a, b)
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Marker<const N: usize>;

    #[test]
    fn column_of_type_is_exact_with_overflowing_slots() {
        let mut registry = Components::default();
        let mut type_ids = Vec::new();
        macro_rules! register {
            ($($n:literal)*) => {$(
                registry.register::<Marker<$n>>();
                type_ids.push(TypeId::of::<Marker<$n>>());
            )*};
        }
        // Forty types over thirty-two slots: some types overflow.
        register!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19);
        register!(20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39);
        let ids: Vec<ComponentId> = registry.iter().map(|info| info.id()).collect();
        let archetype = Archetype::new(ArchetypeId(1), ids.into(), &registry);
        assert!(archetype.overflowed, "more types than slots");
        for &type_id in &type_ids {
            let column = archetype
                .column_of_type(type_id)
                .expect("every type has a column");
            let stored = registry.info(archetype.component_ids()[column]).type_id();
            assert_eq!(stored, Some(type_id));
        }
        assert_eq!(archetype.column_of_type(TypeId::of::<Marker<99>>()), None);

        // A one-type archetype: every other type is absent, whether its slots are vacant or not.
        let first = registry.iter().next().map(|info| info.id());
        let small = Archetype::new(ArchetypeId(2), first.into_iter().collect(), &registry);
        assert_eq!(small.column_of_type(type_ids[0]), Some(0));
        for &type_id in &type_ids[1..] {
            assert_eq!(small.column_of_type(type_id), None);
        }
    }

    #[test]
    fn small_archetypes_give_every_type_a_slot() {
        let mut registry = Components::default();
        let ids = [
            registry.register::<Marker<0>>(),
            registry.register::<Marker<1>>(),
            registry.register::<Marker<2>>(),
            registry.register::<Marker<3>>(),
            registry.register::<Marker<4>>(),
            registry.register::<Marker<5>>(),
            registry.register::<Marker<6>>(),
            registry.register::<Marker<7>>(),
        ];
        let archetype = Archetype::new(ArchetypeId(1), ids.into(), &registry);
        assert!(!archetype.overflowed, "each lookup is at most two probes");
        let used = archetype.slots.iter().filter(|s| !s.is_vacant()).count();
        assert_eq!(used, ids.len());
    }
}
