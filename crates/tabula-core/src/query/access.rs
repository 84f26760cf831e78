//! What a query (and later, a system) reads and writes, and when two accesses conflict.

use std::fmt;

use fixedbitset::FixedBitSet;

use crate::component::ComponentId;

/// A set of component ids, stored as a bitset over the dense id space.
#[derive(Clone, Default, PartialEq, Eq, Hash)]
pub struct ComponentSet {
    bits: FixedBitSet,
}

impl ComponentSet {
    /// Adds `id`; returns true when it was not there before.
    pub fn insert(&mut self, id: ComponentId) -> bool {
        self.bits.grow(id.index() + 1);
        !self.bits.put(id.index())
    }

    /// True when `id` is in the set.
    pub fn contains(&self, id: ComponentId) -> bool {
        self.bits.contains(id.index())
    }

    /// Adds every id of `other`.
    pub fn union_with(&mut self, other: &ComponentSet) {
        self.bits.union_with(&other.bits);
    }

    /// True when the two sets share an id.
    pub fn intersects(&self, other: &ComponentSet) -> bool {
        !self.bits.is_disjoint(&other.bits)
    }

    /// The ids both sets hold, in ascending order.
    pub fn intersection<'a>(&'a self, other: &'a ComponentSet) -> impl Iterator<Item = ComponentId> + 'a {
        self.bits.intersection(&other.bits).map(ComponentId::from_index)
    }

    /// The ids in ascending order.
    pub fn ids(&self) -> impl Iterator<Item = ComponentId> + '_ {
        self.bits.ones().map(ComponentId::from_index)
    }

    /// True when the set holds nothing.
    pub fn is_empty(&self) -> bool {
        self.bits.is_clear()
    }
}

impl fmt::Debug for ComponentSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.ids().map(|id| id.index())).finish()
    }
}

/// The component access of a query: what it reads, what it writes, and the archetype-level
/// filters (`with`, `without`, and the alternatives of `Or` filters) that can prove two
/// accesses never touch the same entity.
///
/// The scheduler builds its conflict graph from these.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Access {
    reads: ComponentSet,
    writes: ComponentSet,
    with: ComponentSet,
    without: ComponentSet,
    /// One entry per `Or` filter: every matched entity matches one of its branches.
    one_of: Vec<Vec<Branch>>,
    /// Every component a term names: the four sets above, the components of `Or` branches,
    /// and those named without being read or constrained (`Has<T>`, `Allow<T>`). A query
    /// that names a [disabling component](crate::Disabled) sees the entities that have it.
    named: ComponentSet,
}

/// What every entity matched through one branch of an `Or` has and lacks.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Branch {
    with: ComponentSet,
    without: ComponentSet,
}

impl Branch {
    /// True when no entity can both match this branch and have `with` and lack `without`.
    fn excludes(&self, with: &ComponentSet, without: &ComponentSet) -> bool {
        self.with.intersects(without) || self.without.intersects(with)
    }
}

impl Access {
    /// Components read (and not written).
    pub fn reads(&self) -> &ComponentSet {
        &self.reads
    }

    /// Components written.
    pub fn writes(&self) -> &ComponentSet {
        &self.writes
    }

    /// Components every matched entity has.
    pub fn with(&self) -> &ComponentSet {
        &self.with
    }

    /// Components no matched entity has.
    pub fn without(&self) -> &ComponentSet {
        &self.without
    }

    /// True when some term of the access names `id` (reads, writes, requires or excludes
    /// it, in an `Or` branch too, or names it through [`Has`](crate::Has) or
    /// [`Allow`](crate::Allow)). A query whose access names a
    /// [disabling component](crate::Disabled) matches the entities that have it.
    pub fn names(&self, id: ComponentId) -> bool {
        self.named.contains(id)
    }

    /// Records that a term names `id` without reading it or constraining the match
    /// ([`Has<T>`](crate::Has), [`Allow<T>`](crate::Allow)).
    pub fn add_named(&mut self, id: ComponentId) {
        self.named.insert(id);
    }

    /// Adds the components `other` names (for a term that wraps `other`'s, like `Option`).
    pub(crate) fn merge_named(&mut self, other: &Access) {
        self.named.union_with(&other.named);
    }

    /// Records a read. Returns `Err(id)` when the same access already writes `id`.
    pub fn add_read(&mut self, id: ComponentId) -> Result<(), ComponentId> {
        if self.writes.contains(id) {
            return Err(id);
        }
        self.named.insert(id);
        self.reads.insert(id);
        Ok(())
    }

    /// Records a write. Returns `Err(id)` when the same access already reads or writes `id`.
    pub fn add_write(&mut self, id: ComponentId) -> Result<(), ComponentId> {
        if self.reads.contains(id) || !self.writes.insert(id) {
            return Err(id);
        }
        self.named.insert(id);
        Ok(())
    }

    /// Records that every matched entity has `id`.
    pub fn add_with(&mut self, id: ComponentId) {
        self.named.insert(id);
        self.with.insert(id);
    }

    /// Records that no matched entity has `id`.
    pub fn add_without(&mut self, id: ComponentId) {
        self.named.insert(id);
        self.without.insert(id);
    }

    /// Records that every matched entity matches one of `branches` (an `Or` filter, one
    /// access per member): only their `with` and `without` count (the branches' own `Or`s
    /// are left out, which can only make disjointness harder to prove, never wrong).
    pub fn add_one_of(&mut self, branches: &[Access]) {
        for branch in branches {
            self.named.union_with(&branch.named);
        }
        self.one_of.push(
            branches
                .iter()
                .map(|branch| Branch {
                    with: branch.with.clone(),
                    without: branch.without.clone(),
                })
                .collect(),
        );
    }

    /// True when the filters prove the two never match the same entity: one requires a
    /// component the other excludes, or one has an `Or` each of whose branches does.
    pub fn is_disjoint(&self, other: &Access) -> bool {
        self.with.intersects(&other.without)
            || self.without.intersects(&other.with)
            || self.one_of_excludes(other)
            || other.one_of_excludes(self)
    }

    /// True when one of this access's `Or`s has only branches that `other` rules out.
    fn one_of_excludes(&self, other: &Access) -> bool {
        self.one_of
            .iter()
            .any(|branches| branches.iter().all(|branch| other.rules_out(branch)))
    }

    /// True when no entity this access matches can match `branch`: its `with` and `without`
    /// say so, or every branch of one of its `Or`s does.
    fn rules_out(&self, branch: &Branch) -> bool {
        branch.excludes(&self.with, &self.without)
            || self
                .one_of
                .iter()
                .any(|ours| ours.iter().all(|our| branch.excludes(&our.with, &our.without)))
    }

    /// True when a `With`, `Without` or `Or` filter narrows the access beyond what its data
    /// terms require (`&C` and `&mut C` require `C` too, so `(&C, With<C>)` does not count).
    pub fn has_archetype_filter(&self) -> bool {
        !self.without.is_empty() || !self.one_of.is_empty() || self.with.ids().any(|id| !self.is_data(id))
    }

    /// A component `C` such that adding `Without<C>` to `other` would prove the two
    /// disjoint, for advice when they conflict. Candidates, most likely meant first: what
    /// this access requires through a `With` filter, then through its data, then what a
    /// branch of one of its `Or`s requires. A component `other` requires, reads or writes is
    /// never offered: excluding it would leave `other` matching nothing it can use.
    pub fn separating_without(&self, other: &Access) -> Option<ComponentId> {
        let filters = self.with.ids().filter(|&id| !self.is_data(id));
        let data = self.with.ids().filter(|&id| self.is_data(id));
        let branches = self.one_of.iter().flatten().flat_map(|branch| branch.with.ids());
        filters
            .chain(data)
            .chain(branches)
            .filter(|&id| !other.with.contains(id) && !other.is_data(id))
            .find(|&id| {
                let mut narrowed = other.clone();
                narrowed.add_without(id);
                self.is_disjoint(&narrowed)
            })
    }

    /// True when the access reads or writes `id` (through a data term or a tick filter).
    fn is_data(&self, id: ComponentId) -> bool {
        self.reads.contains(id) || self.writes.contains(id)
    }

    /// The components through which the two accesses conflict (one writes what the other
    /// reads or writes), unless their filters prove them disjoint.
    pub fn conflicts(&self, other: &Access) -> Vec<ComponentId> {
        if self.is_disjoint(other) {
            return Vec::new();
        }
        let mut ids: Vec<ComponentId> = self.writes.intersection(&other.writes).collect();
        ids.extend(self.writes.intersection(&other.reads));
        ids.extend(self.reads.intersection(&other.writes));
        ids.sort_unstable();
        ids.dedup();
        ids
    }

    /// Records a read by a filter (`Added<T>`, `Changed<T>` read `T`'s ticks). It never
    /// conflicts within one query: the filter reads a row's ticks before that row's item
    /// exists, so `(&mut T, Changed<T>)` is fine, as in bevy. For the scheduler a write of
    /// `id` already covers the read, so nothing is recorded then.
    ///
    /// Call it after the data terms' [`add_write`](Self::add_write)s (as `QueryState` does:
    /// data first, then filters): a write added after a filter's read is refused, which is
    /// safe but needlessly strict.
    pub fn add_filter_read(&mut self, id: ComponentId) {
        self.named.insert(id);
        if !self.writes.contains(id) {
            self.reads.insert(id);
        }
    }

    /// Adds the reads of `other`, the access of a filter, as [`add_filter_read`](Self::add_filter_read) does.
    pub fn merge_filter_reads(&mut self, other: &Access) {
        for id in other.reads.ids() {
            self.add_filter_read(id);
        }
    }

    /// Adds `other`'s reads and writes (not its filters), checking each against what is
    /// already recorded, as `add_read` / `add_write` do.
    pub fn merge_data(&mut self, other: &Access) -> Result<(), ComponentId> {
        for id in other.reads.ids() {
            self.add_read(id)?;
        }
        for id in other.writes.ids() {
            self.add_write(id)?;
        }
        Ok(())
    }

    /// Adds everything `other` accesses (for combining several queries of one system).
    pub fn extend(&mut self, other: &Access) {
        self.reads.union_with(&other.reads);
        self.writes.union_with(&other.writes);
        self.named.union_with(&other.named);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(n: usize) -> ComponentId {
        ComponentId::from_index(n)
    }

    #[test]
    fn write_conflicts_with_read_unless_filters_are_disjoint() {
        let mut a = Access::default();
        a.add_write(id(1)).unwrap();
        a.add_with(id(2));
        let mut b = Access::default();
        b.add_read(id(1)).unwrap();
        assert_eq!(a.conflicts(&b), vec![id(1)]);
        b.add_without(id(2));
        assert!(a.conflicts(&b).is_empty());
        let mut c = Access::default();
        c.add_read(id(1)).unwrap();
        c.add_read(id(70)).unwrap();
        assert!(b.conflicts(&c).is_empty(), "readers never conflict");
        assert_eq!(c.reads().ids().collect::<Vec<_>>(), vec![id(1), id(70)]);
    }

    #[test]
    fn a_filter_read_never_aliases_but_still_counts_for_others() {
        let mut a = Access::default();
        a.add_write(id(5)).unwrap();
        a.add_filter_read(id(5));
        a.add_filter_read(id(6));
        assert_eq!(a.writes().ids().collect::<Vec<_>>(), vec![id(5)]);
        assert_eq!(a.reads().ids().collect::<Vec<_>>(), vec![id(6)]);
        let mut writer = Access::default();
        writer.add_write(id(6)).unwrap();
        assert_eq!(
            a.conflicts(&writer),
            vec![id(6)],
            "a filter's read orders it after writers"
        );
    }

    /// An access with `with` and `without` filters only.
    fn filtered(with: &[usize], without: &[usize]) -> Access {
        let mut access = Access::default();
        with.iter().for_each(|&n| access.add_with(id(n)));
        without.iter().for_each(|&n| access.add_without(id(n)));
        access
    }

    #[test]
    fn an_or_is_disjoint_when_every_branch_is() {
        const POS: usize = 1;
        const PLAYER: usize = 2;
        const ENEMY: usize = 3;
        // `(&mut Pos, Or<(With<Player>, With<Enemy>)>)`
        let mut either = Access::default();
        either.add_write(id(POS)).unwrap();
        either.add_one_of(&[filtered(&[PLAYER], &[]), filtered(&[ENEMY], &[])]);
        // `(&Pos, Without<Player>, Without<Enemy>)`: neither branch can match.
        let mut neither = filtered(&[], &[PLAYER, ENEMY]);
        neither.add_read(id(POS)).unwrap();
        assert!(either.conflicts(&neither).is_empty());
        assert!(neither.conflicts(&either).is_empty());
        // `(&Pos, Without<Player>)`: the `Enemy` branch can match.
        let mut not_player = filtered(&[], &[PLAYER]);
        not_player.add_read(id(POS)).unwrap();
        assert_eq!(either.conflicts(&not_player), vec![id(POS)]);
        // A branch that says nothing about the other's filters proves nothing.
        let mut vague = Access::default();
        vague.add_write(id(POS)).unwrap();
        vague.add_one_of(&[filtered(&[PLAYER], &[]), Access::default()]);
        assert_eq!(vague.conflicts(&neither), vec![id(POS)]);
        // Two `Or`s, branch by branch: each branch of one excludes every branch of the other.
        let mut other_or = Access::default();
        other_or.add_read(id(POS)).unwrap();
        other_or.add_one_of(&[filtered(&[], &[PLAYER, ENEMY])]);
        assert!(
            either.conflicts(&other_or).is_empty(),
            "a one-branch Or is its branch"
        );
        assert!(other_or.conflicts(&either).is_empty());
        let mut overlapping = Access::default();
        overlapping.add_read(id(POS)).unwrap();
        overlapping.add_one_of(&[filtered(&[], &[PLAYER]), filtered(&[4], &[])]);
        assert_eq!(either.conflicts(&overlapping), vec![id(POS)]);
        assert_eq!(overlapping.conflicts(&either), vec![id(POS)]);
        // An `Or` of nothing matches nothing, so it is disjoint from anything.
        let mut nothing = Access::default();
        nothing.add_write(id(POS)).unwrap();
        nothing.add_one_of(&[]);
        assert!(nothing.conflicts(&either).is_empty());
    }

    #[test]
    fn separating_without_prefers_filters_and_proves_disjointness() {
        const POS: usize = 1;
        const VEL: usize = 2;
        const PLAYER: usize = 3;
        const ENEMY: usize = 4;
        // `(&mut Pos, &Vel), With<Player>` against `&Pos`: `Player` before `Vel`.
        let mut players = filtered(&[PLAYER], &[]);
        players.add_write(id(POS)).unwrap();
        players.add_with(id(POS));
        players.add_read(id(VEL)).unwrap();
        players.add_with(id(VEL));
        let mut all = Access::default();
        all.add_read(id(POS)).unwrap();
        all.add_with(id(POS));
        assert!(players.has_archetype_filter());
        assert!(!all.has_archetype_filter(), "data terms are not filters");
        assert_eq!(players.separating_without(&all), Some(id(PLAYER)));
        // Nothing `all` requires can be excluded from `players`, which reads it.
        assert_eq!(all.separating_without(&players), None);
        // `Or<(With<Player>, With<Enemy>)>` against `Without<Player>`: exclude `Enemy` too.
        let mut either = Access::default();
        either.add_write(id(POS)).unwrap();
        either.add_one_of(&[filtered(&[PLAYER], &[]), filtered(&[ENEMY], &[])]);
        let not_player = filtered(&[], &[PLAYER]);
        assert!(either.has_archetype_filter() && not_player.has_archetype_filter());
        assert_eq!(either.separating_without(&not_player), Some(id(ENEMY)));
        assert_eq!(not_player.separating_without(&either), None);
    }

    #[test]
    fn one_access_cannot_alias_itself() {
        let mut a = Access::default();
        a.add_write(id(3)).unwrap();
        assert_eq!(a.add_read(id(3)), Err(id(3)));
        assert_eq!(a.add_write(id(3)), Err(id(3)));
        let mut b = Access::default();
        b.add_read(id(4)).unwrap();
        b.add_read(id(4)).unwrap();
        assert_eq!(b.add_write(id(4)), Err(id(4)));
    }
}
