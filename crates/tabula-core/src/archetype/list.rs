//! The list of a world's archetypes, its shape stamp and its match epoch.
//!
//! A module of its own so that the stamps' rules are the module boundary's: outside this file
//! nothing reaches the list but through its methods, every method that hands out a table
//! mutably (or adds one) moves the shape on, and every one that adds an archetype moves the
//! match epoch on.

use super::{Archetype, ArchetypeId, Edges};

/// The archetypes of a world, in id order, with the stamp that tells cached table pointers
/// whether they still hold.
///
/// The list is private, so every `&mut` into an archetype's table goes through
/// [`all_mut`](Self::all_mut), which moves the [`shape`](Self::shape) on. A
/// [run plan](crate::query::QueryState) keeps raw column pointers and row counts taken at one
/// shape, and trusts them only while the shape reads the same.
#[derive(Default)]
pub(crate) struct ArchetypeList {
    list: Vec<Archetype>,
    shape: u64,
    /// See [`match_epoch`](Self::match_epoch).
    match_epoch: usize,
}

impl ArchetypeList {
    /// Every archetype, in id order.
    #[inline]
    pub(crate) fn all(&self) -> &[Archetype] {
        &self.list
    }

    /// Every archetype, mutably. Moves the shape on: whatever the caller does to the tables,
    /// pointers and lengths read before no longer count.
    #[inline]
    pub(crate) fn all_mut(&mut self) -> &mut [Archetype] {
        self.shape += 1;
        &mut self.list
    }

    /// The shape stamp. Two equal readings mean that in between no table changed its length,
    /// block or columns and no archetype was created. It only increases (a `u64` bumped
    /// once per structural change does not wrap).
    #[inline]
    pub(crate) fn shape(&self) -> u64 {
        self.shape
    }

    pub(crate) fn len(&self) -> usize {
        self.list.len()
    }

    /// Adds `archetype`, whose id is the list's length. Moves the shape and the match epoch
    /// on.
    pub(crate) fn push(&mut self, archetype: Archetype) {
        debug_assert_eq!(archetype.id().index(), self.list.len());
        self.shape += 1;
        self.match_epoch += 1;
        self.list.push(archetype);
    }

    /// The match epoch: it moves on whenever what a cached query matches may change, that is
    /// when an archetype is added or a component is made sparse
    /// ([`sparse_registered`](Self::sparse_registered)). It only increases, so a query that
    /// kept the last reading learns that nothing is new from one comparison, the check every
    /// `QueryState::get` and every pass makes.
    #[inline]
    pub(crate) fn match_epoch(&self) -> usize {
        self.match_epoch
    }

    /// A component was made sparse: moves the match epoch on, so that cached queries naming
    /// it take the sparse path.
    pub(crate) fn sparse_registered(&mut self) {
        self.match_epoch += 1;
    }

    /// Sets bit `bit` of the disabling mask of every archetype that stores `id`. Leaves the
    /// shape alone: the mask is read only when a query matches an archetype.
    pub(crate) fn mark_disabling(&mut self, id: crate::component::ComponentId, bit: u32) {
        for archetype in &mut self.list {
            if archetype.column_of(id).is_some() {
                archetype.disabling |= 1 << bit;
            }
        }
    }

    /// The cached edges of archetype `id`, mutably. Leaves the shape alone: edges are not
    /// table state, and no run plan reads them.
    #[inline]
    pub(crate) fn edges_mut(&mut self, id: ArchetypeId) -> &mut Edges {
        &mut self.list[id.index()].edges
    }
}
