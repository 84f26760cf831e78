//! The archetype graph's cached edges.
//!
//! An edge answers "entities of archetype S that gain (or lose) bundle B go to archetype T"
//! and carries the column mappings the move needs, so that after the first time, a structural
//! change costs one indexed load instead of a set computation and a hash of the result.

use super::{Archetype, ArchetypeId, Archetypes};
use crate::bundle::{Bundle, BundleId, BundleInfo, BundleKey, Bundles};
use crate::component::{ComponentId, Components};
use crate::storage::{NO_COLUMN, Table};
use crate::world::hooks::HookKind;

const NO_EDGE: u32 = u32::MAX;

/// Per-archetype edge slots, indexed by [`BundleId`]; each names an edge in [`Archetypes`].
#[derive(Default)]
pub(crate) struct Edges {
    insert: Vec<u32>,
    remove: Vec<u32>,
}

/// The last one-entity move of a kind, as [`Archetypes`] remembers it: the source archetype
/// and its edge for the bundle type the entry's key names.
///
/// Invariant: `edge` is `source`'s edge of that kind for that bundle type (set only by
/// [`Archetypes::remember`] from a lookup of that very edge); archetypes and edges are never
/// removed, so it stays valid. Or, for a bundle type of one [sparse](crate::storage::SparseSet)
/// component, which has no edges, `source` is [`ArchetypeId::ABSENT`] (no live entity's
/// archetype) and `edge` is the component's id (set by [`Archetypes::remember_sparse`]).
#[derive(Clone, Copy, Default)]
pub(crate) struct RecentMove {
    source: u32,
    edge: u32,
}

/// The edge in `bundle`'s slot, if it has one.
// One test for both misses: a slot past the end reads as `NO_EDGE`. (Chaining `get` and
// `filter` instead kept an `Option` discriminant alive, four more instructions per lookup.)
#[inline]
fn lookup(slots: &[u32], bundle: BundleId) -> Option<usize> {
    let edge = slots.get(bundle).copied().unwrap_or(NO_EDGE);
    if edge == NO_EDGE {
        None
    } else {
        Some(edge as usize)
    }
}

fn store(slots: &mut Vec<u32>, bundle: BundleId, edge: usize) {
    if slots.len() <= bundle {
        slots.resize(bundle + 1, NO_EDGE);
    }
    slots[bundle] = u32::try_from(edge).expect("too many archetype edges");
}

/// Moving an entity that gains a bundle.
pub(crate) struct InsertEdge {
    pub(crate) target: ArchetypeId,
    /// `target`, or the source archetype itself when inserting the bundle runs hooks: the
    /// target the inline insert path compares with the source, so that a self-edge and a
    /// hooked edge both leave it through the one test it already makes (hooks then cost
    /// nothing where no bundle component has one).
    pub(crate) inline_target: ArchetypeId,
    /// Some bundle component has an `on_add`, `on_insert` or `on_replace` hook.
    pub(crate) hooked: bool,
    /// The bundle's components the entity did not have, sorted by id: what `on_add` runs for.
    pub(crate) added: Box<[ComponentId]>,
    /// The bundle's components the entity had, sorted by id: what `on_replace` runs for.
    pub(crate) kept: Box<[ComponentId]>,
    /// The bundle's components, sorted by id: what `on_insert` runs for.
    pub(crate) inserted: Box<[ComponentId]>,

    /// Source column `i` moves to the target column `move_map[i]` names (see
    /// [`Table::move_entry`](crate::storage::Table::move_entry)).
    pub(crate) move_map: Box<[u32]>,
    /// Bundle field `i` is written to target column `bundle_columns[i]`.
    pub(crate) bundle_columns: Box<[u32]>,
    /// Bundle field `i` replaces a value the entity already had.
    pub(crate) replaced: Box<[bool]>,
}

/// Moving an entity that loses a bundle.
///
/// Invariant: `target` is the source archetype exactly when `missing` is set or the bundle has
/// no fields; otherwise the target lacks the bundle's components, which the source has.
pub(crate) struct RemoveEdge {
    pub(crate) target: ArchetypeId,
    /// Source column `i` moves to the target column `move_map[i]` names (see
    /// [`Table::move_entry`](crate::storage::Table::move_entry)), or is removed.
    pub(crate) move_map: Box<[u32]>,
    /// Bundle field `i` is read from source column `bundle_columns[i]`.
    pub(crate) bundle_columns: Box<[u32]>,
    /// The first bundle component the source archetype lacks: the removal is refused, and
    /// `target` is the source itself.
    pub(crate) missing: Option<&'static str>,
    /// The bundle's components whose removals are logged
    /// ([`World::track_removals`](crate::World::track_removals)).
    pub(crate) logged: Box<[ComponentId]>,
    /// The bundle's components with an `on_replace` or `on_remove` hook, sorted by id (see
    /// `world/hooks.rs`).
    pub(crate) hooked: Box<[ComponentId]>,
    /// `missing` is set, or `logged` or `hooked` is not empty: the one test the hot path
    /// makes for all three, so that logging and hooks cost nothing where no component of the
    /// bundle has them.
    pub(crate) unusual: bool,
    /// The bundle, to recompute `logged` when another component starts being tracked.
    bundle: BundleId,
}

impl RemoveEdge {
    /// Recomputes `logged`, `hooked` and `unusual` from the registry's flags.
    fn set_flags(&mut self, registry: &Components, bundle: &BundleInfo) {
        self.logged = (bundle.fields.iter().copied())
            .filter(|&c| registry.info(c).logs_removals())
            .collect();
        self.hooked = (bundle.sorted.iter().copied())
            .filter(|&c| registry.info(c).has_hooks(HookKind::REMOVING))
            .collect();
        self.unusual = self.missing.is_some() || !self.logged.is_empty() || !self.hooked.is_empty();
    }
}

impl InsertEdge {
    /// Recomputes `hooked` and `inline_target` from the registry's flags.
    fn set_flags(&mut self, registry: &Components, source: ArchetypeId) {
        self.hooked = (self.inserted.iter()).any(|&c| registry.info(c).has_hooks(HookKind::INSERTING));
        self.inline_target = if self.hooked { source } else { self.target };
    }
}

fn column_map(from: &Archetype, to: &Archetype) -> Box<[u32]> {
    (from.component_ids().iter())
        .map(|&c| Table::move_entry(to.column_of(c)))
        .collect()
}

impl Archetypes {
    /// The edge for inserting (with `remove`, removing) bundle type `B` from `source`, when
    /// `B` is the bundle type `bundles` looked up last and the edge exists: the lookups of
    /// [`Bundles::id_of`] and [`insert_edge`](Self::insert_edge) without their slow halves, for
    /// the call-free fast paths of insert and remove.
    ///
    /// # Safety
    /// `source` is an existing archetype.
    #[inline(always)]
    pub(crate) unsafe fn cached_edge<B: Bundle>(
        &self,
        bundles: &Bundles,
        remove: bool,
        source: ArchetypeId,
    ) -> Option<usize> {
        let bundle = bundles.last_id::<B>()?;
        // SAFETY: `source` exists (the caller's contract).
        let edges = unsafe { &self.archetypes.all().get_unchecked(source.index()).edges };
        lookup(if remove { &edges.remove } else { &edges.insert }, bundle)
    }

    /// The world's one-entry cache of the last one-entity move of kind `remove` of bundle
    /// type `B`: its source archetype and edge, if the entry is `B`'s.
    ///
    /// A move reads this before the entity's slot and, when the slot names the same source,
    /// takes the source from here: the table addresses it derives then depend on a load from
    /// the world, not on the slot, and the processor runs each move's table work without
    /// waiting for the slot load (it predicts the comparison). A run of moves from one
    /// archetype, the common case, gains: 10k one-entity inserts 99 → 87 µs, removes 107 →
    /// 98 µs. (A hand-written two-table move showed the effect first: 98 µs per 10k inserts
    /// with the table picked by the slot's table index, 65 µs with it picked by a field.)
    #[inline(always)]
    pub(crate) fn recent<B: Bundle>(&self, remove: bool) -> Option<(ArchetypeId, usize)> {
        let recent = if remove {
            &self.recent_remove
        } else {
            &self.recent_insert
        };
        (recent.get(BundleKey::of::<B>())).map(|recent| (ArchetypeId(recent.source), recent.edge as usize))
    }

    /// Makes `edge` the [`recent`](Self::recent) move of its kind.
    ///
    /// # Safety
    /// `edge` is `source`'s edge of kind `remove` for `B` (the [`RecentMove`] invariant, which
    /// the moves' `unsafe` code relies on when they take the edge for the entry's source).
    #[inline(always)]
    pub(crate) unsafe fn remember<B: Bundle>(&mut self, remove: bool, source: ArchetypeId, edge: usize) {
        self.set_recent::<B>(remove, source, edge as u32);
    }

    /// Makes bundle type `B`, one sparse `component`, the [`recent`](Self::recent) move of
    /// its kind: its entry's source is [`ArchetypeId::ABSENT`], which no live entity's
    /// location names, so no move takes `component` for an edge; a one-entity insert or
    /// removal of `B` whose table entry misses finds the entry and goes to the set without
    /// the general path's lookups (see `World::cached_move`).
    #[inline]
    pub(crate) fn remember_sparse<B: Bundle>(&mut self, remove: bool, component: ComponentId) {
        self.set_recent::<B>(remove, ArchetypeId::ABSENT, component.index() as u32);
    }

    /// Sets the [`recent`](Self::recent) entry of kind `remove` to `B`, `source`, `edge`
    /// (the callers keep the [`RecentMove`] invariant).
    #[inline(always)]
    fn set_recent<B: Bundle>(&mut self, remove: bool, source: ArchetypeId, edge: u32) {
        let recent = if remove {
            &mut self.recent_remove
        } else {
            &mut self.recent_insert
        };
        recent.set(
            BundleKey::of::<B>(),
            RecentMove {
                source: source.0,
                edge,
            },
        );
    }

    /// The edge for inserting `bundle` into entities of `source`, computed on first use.
    ///
    /// After the first use this is one slot lookup, inlined into every insert and spawn.
    #[inline]
    pub(crate) fn insert_edge(
        &mut self,
        registry: &Components,
        source: ArchetypeId,
        bundles: &Bundles,
        bundle: BundleId,
    ) -> usize {
        match lookup(&self.archetypes.all()[source.index()].edges.insert, bundle) {
            Some(edge) => edge,
            None => self.new_insert_edge(registry, source, &bundles.infos[bundle]),
        }
    }

    /// `bundle`'s edge out of the empty archetype, the edge a spawn takes, or `None` when the
    /// bundle has a [sparse](crate::storage::SparseSet) field (such a bundle has no edges).
    /// A bundle with an edge has no sparse field (and none of its components can become
    /// sparse later: `World::make_sparse` refuses a component a bundle lists), so the sparse
    /// flag is only read when the lookup misses (6 instructions less per spawn than reading
    /// it first).
    #[inline]
    pub(crate) fn spawn_edge(
        &mut self,
        registry: &Components,
        bundles: &Bundles,
        bundle: BundleId,
    ) -> Option<usize> {
        match lookup(
            &self.archetypes.all()[ArchetypeId::EMPTY.index()].edges.insert,
            bundle,
        ) {
            Some(edge) => Some(edge),
            None if bundles.infos[bundle].sparse => None,
            None => Some(self.new_insert_edge(registry, ArchetypeId::EMPTY, &bundles.infos[bundle])),
        }
    }

    /// The slow half of [`insert_edge`](Self::insert_edge): computes the edge and caches it.
    #[cold]
    fn new_insert_edge(&mut self, registry: &Components, source: ArchetypeId, bundle: &BundleInfo) -> usize {
        assert_not_sparse(registry, bundle);
        let src = &self.archetypes.all()[source.index()];
        let mut ids: Vec<_> = src.component_ids().to_vec();
        ids.extend_from_slice(&bundle.sorted);
        ids.sort_unstable();
        ids.dedup();
        let replaced = bundle
            .fields
            .iter()
            .map(|&c| src.column_of(c).is_some())
            .collect();
        let target = self.get_or_create(registry, &ids);
        let (src, dst) = (
            &self.archetypes.all()[source.index()],
            &self.archetypes.all()[target.index()],
        );
        let inserted = bundle.sorted.to_vec();
        let (kept, added): (Vec<ComponentId>, Vec<ComponentId>) =
            inserted.iter().partition(|&&c| src.column_of(c).is_some());
        let mut edge = InsertEdge {
            target,
            inline_target: target,
            hooked: false,
            added: added.into(),
            kept: kept.into(),
            inserted: inserted.into(),
            move_map: column_map(src, dst),
            bundle_columns: bundle
                .fields
                .iter()
                .map(|&c| dst.column_of(c).expect("target holds the bundle") as u32)
                .collect(),
            replaced,
        };
        edge.set_flags(registry, source);
        let index = self.insert_edges.len();
        self.insert_edges.push(edge);
        store(&mut self.archetypes.edges_mut(source).insert, bundle.id, index);
        index
    }

    /// The edge for removing `bundle` from entities of `source`, computed on first use.
    ///
    /// After the first use this is one slot lookup, inlined into every remove.
    #[inline]
    pub(crate) fn remove_edge(
        &mut self,
        registry: &Components,
        source: ArchetypeId,
        bundles: &Bundles,
        bundle: BundleId,
    ) -> usize {
        match lookup(&self.archetypes.all()[source.index()].edges.remove, bundle) {
            Some(edge) => edge,
            None => self.new_remove_edge(registry, source, &bundles.infos[bundle]),
        }
    }

    /// The slow half of [`remove_edge`](Self::remove_edge): computes the edge and caches it.
    #[cold]
    fn new_remove_edge(&mut self, registry: &Components, source: ArchetypeId, bundle: &BundleInfo) -> usize {
        assert_not_sparse(registry, bundle);
        let src = &self.archetypes.all()[source.index()];
        let missing = bundle
            .fields
            .iter()
            .find(|&&c| src.column_of(c).is_none())
            .map(|&c| registry.info(c).name());
        let bundle_columns = bundle
            .fields
            .iter()
            .map(|&c| src.column_of(c).map_or(NO_COLUMN, |col| col as u32))
            .collect();
        // A removal that must fail (the source lacks a field) never moves the row, so its edge
        // points back at the source instead of creating an archetype no entity would reach.
        let target = if missing.is_some() {
            source
        } else {
            let ids: Vec<_> = src
                .component_ids()
                .iter()
                .copied()
                .filter(|c| bundle.sorted.binary_search(c).is_err())
                .collect();
            self.get_or_create(registry, &ids)
        };
        let (src, dst) = (
            &self.archetypes.all()[source.index()],
            &self.archetypes.all()[target.index()],
        );
        let mut edge = RemoveEdge {
            target,
            move_map: column_map(src, dst),
            bundle_columns,
            missing,
            logged: Box::new([]),
            hooked: Box::new([]),
            unusual: false,
            bundle: bundle.id,
        };
        edge.set_flags(registry, bundle);
        let index = self.remove_edges.len();
        self.remove_edges.push(edge);
        store(&mut self.archetypes.edges_mut(source).remove, bundle.id, index);
        index
    }

    /// Brings the archetypes' and remove edges' flags up to date after `component` started
    /// being tracked or got a remove hook in `registry` (see
    /// [`World::track_removals`](crate::World::track_removals) and `world/hooks.rs`).
    pub(crate) fn component_flags_changed(
        &mut self,
        registry: &Components,
        bundles: &Bundles,
        component: ComponentId,
    ) {
        let info = registry.info(component);
        for archetype in self.archetypes.all_mut() {
            if archetype.column_of(component).is_some() {
                archetype.logs_removals |= info.logs_removals();
                archetype.hooked |= info.has_hooks(HookKind::LEAVING);
            }
        }
        // An edge's source is the archetype whose slots name it.
        for archetype in self.archetypes.all() {
            for &edge in archetype.edges.insert.iter().filter(|&&e| e != NO_EDGE) {
                let edge = &mut self.insert_edges[edge as usize];
                if edge.inserted.contains(&component) {
                    edge.set_flags(registry, archetype.id());
                }
            }
        }
        for edge in &mut self.remove_edges {
            let bundle = &bundles.infos[edge.bundle];
            if bundle.fields.contains(&component) {
                edge.set_flags(registry, bundle);
            }
        }
    }
}

/// Sparse components never enter an archetype: every path that stores a bundle with one
/// leaves for `world/sparse.rs` before it asks for an edge. A path that does not would put
/// the component in a table, where no sparse lookup finds it, so it fails loudly here.
#[track_caller]
fn assert_not_sparse(registry: &Components, bundle: &BundleInfo) {
    if let Some(&sparse) = (bundle.fields.iter()).find(|&&c| registry.info(c).is_sparse()) {
        panic!(
            "component `{}` is stored in a sparse set, and this operation only stores table \
             components; insert it with `World::insert` or `Commands::insert` instead",
            registry.info(sparse).name()
        );
    }
}
