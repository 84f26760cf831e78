//! The archetype graph's cached edges.
//!
//! An edge answers "entities of archetype S that gain (or lose) bundle B go to archetype T"
//! and carries the column mappings the move needs, so that after the first time, a structural
//! change costs one indexed load instead of a set computation and a hash of the result.

use super::{Archetype, ArchetypeId, Archetypes};
use crate::bundle::BundleInfo;
use crate::component::Components;
use crate::storage::NO_COLUMN;

/// A dense index naming one bundle type inside one world.
pub(crate) type BundleId = usize;

const NO_EDGE: u32 = u32::MAX;

/// Per-archetype edge slots, indexed by [`BundleId`]; each names an edge in [`Archetypes`].
#[derive(Default)]
pub(crate) struct Edges {
    insert: Vec<u32>,
    remove: Vec<u32>,
}

#[inline]
fn lookup(slots: &[u32], bundle: BundleId) -> Option<usize> {
    slots
        .get(bundle)
        .copied()
        .filter(|&e| e != NO_EDGE)
        .map(|e| e as usize)
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
    /// Source column `i` moves to target column `move_map[i]`.
    pub(crate) move_map: Box<[u32]>,
    /// Bundle field `i` is written to target column `bundle_columns[i]`.
    pub(crate) bundle_columns: Box<[u32]>,
    /// Bundle field `i` replaces a value the entity already had.
    pub(crate) replaced: Box<[bool]>,
}

/// Moving an entity that loses a bundle.
pub(crate) struct RemoveEdge {
    pub(crate) target: ArchetypeId,
    /// Source column `i` moves to target column `move_map[i]`, or is removed (`NO_COLUMN`).
    pub(crate) move_map: Box<[u32]>,
    /// Bundle field `i` is read from source column `bundle_columns[i]`.
    pub(crate) bundle_columns: Box<[u32]>,
    /// The first bundle component the source archetype lacks: the removal is refused, and
    /// `target` is the source itself.
    pub(crate) missing: Option<&'static str>,
}

fn column_map(from: &Archetype, to: &Archetype) -> Box<[u32]> {
    from.component_ids()
        .iter()
        .map(|&c| to.column_of(c).map_or(NO_COLUMN, |col| col as u32))
        .collect()
}

impl Archetypes {
    /// The edge for inserting `bundle` into entities of `source`, computed on first use.
    ///
    /// After the first use this is one slot lookup, inlined into every insert and spawn.
    #[inline]
    pub(crate) fn insert_edge(
        &mut self,
        registry: &Components,
        source: ArchetypeId,
        bundle: &BundleInfo,
    ) -> usize {
        match lookup(&self.archetypes[source.index()].edges.insert, bundle.id) {
            Some(edge) => edge,
            None => self.new_insert_edge(registry, source, bundle),
        }
    }

    /// The slow half of [`insert_edge`](Self::insert_edge): computes the edge and caches it.
    #[cold]
    fn new_insert_edge(&mut self, registry: &Components, source: ArchetypeId, bundle: &BundleInfo) -> usize {
        let src = &self.archetypes[source.index()];
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
        let (src, dst) = (&self.archetypes[source.index()], &self.archetypes[target.index()]);
        let edge = InsertEdge {
            target,
            move_map: column_map(src, dst),
            bundle_columns: bundle
                .fields
                .iter()
                .map(|&c| dst.column_of(c).expect("target holds the bundle") as u32)
                .collect(),
            replaced,
        };
        let index = self.insert_edges.len();
        self.insert_edges.push(edge);
        store(
            &mut self.archetypes[source.index()].edges.insert,
            bundle.id,
            index,
        );
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
        bundle: &BundleInfo,
    ) -> usize {
        match lookup(&self.archetypes[source.index()].edges.remove, bundle.id) {
            Some(edge) => edge,
            None => self.new_remove_edge(registry, source, bundle),
        }
    }

    /// The slow half of [`remove_edge`](Self::remove_edge): computes the edge and caches it.
    #[cold]
    fn new_remove_edge(&mut self, registry: &Components, source: ArchetypeId, bundle: &BundleInfo) -> usize {
        let src = &self.archetypes[source.index()];
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
        let (src, dst) = (&self.archetypes[source.index()], &self.archetypes[target.index()]);
        let edge = RemoveEdge {
            target,
            move_map: column_map(src, dst),
            bundle_columns,
            missing,
        };
        let index = self.remove_edges.len();
        self.remove_edges.push(edge);
        store(
            &mut self.archetypes[source.index()].edges.remove,
            bundle.id,
            index,
        );
        index
    }
}
