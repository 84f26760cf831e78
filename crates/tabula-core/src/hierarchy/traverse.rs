//! Walking the hierarchy: up to the root ([`Ancestors`], [`World::root`]) and down through
//! every descendant, depth-first ([`Descendants`]) or each parent before its children,
//! level by level ([`DescendantsBreadthFirst`]).
//!
//! The iterators borrow the world; to change it along the way, collect the entities first.
//! None of them recurses: the walks keep their pending entities in a `Vec` or a `VecDeque`,
//! so a tree of any depth is walked without growing the call stack.

use std::collections::VecDeque;
use std::iter::FusedIterator;

use super::{Children, Parent};
use crate::entity::Entity;
use crate::error::EntityError;
use crate::world::World;

/// The children of a live `entity`, in attach order; empty for a leaf.
fn children_of(world: &World, entity: Entity) -> &[Entity] {
    world.get::<Children>(entity).map_or(&[], |children| children)
}

/// The parent, grandparent, ... of an entity, up to its root: from
/// [`World::ancestors`].
#[derive(Clone, Debug)]
pub struct Ancestors<'w> {
    world: &'w World,
    next: Option<Entity>,
}

impl Iterator for Ancestors<'_> {
    type Item = Entity;

    fn next(&mut self) -> Option<Entity> {
        let current = self.next?;
        self.next = self.world.get::<Parent>(current).ok().map(Parent::get);
        Some(current)
    }
}

impl FusedIterator for Ancestors<'_> {}

/// Every descendant of an entity, depth-first, children in attach order: from
/// [`World::descendants`].
#[derive(Clone, Debug)]
pub struct Descendants<'w> {
    world: &'w World,
    /// The entities still to visit, the next one last.
    stack: Vec<Entity>,
}

impl Iterator for Descendants<'_> {
    type Item = Entity;

    fn next(&mut self) -> Option<Entity> {
        let current = self.stack.pop()?;
        // Reversed, so that the first child is the next one popped.
        self.stack.extend(children_of(self.world, current).iter().rev());
        Some(current)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.stack.len(), None)
    }
}

impl FusedIterator for Descendants<'_> {}

/// Every descendant of an entity, level by level, children in attach order: from
/// [`World::descendants_breadth_first`].
#[derive(Clone, Debug)]
pub struct DescendantsBreadthFirst<'w> {
    world: &'w World,
    /// The entities still to visit, the next one first.
    queue: VecDeque<Entity>,
}

impl Iterator for DescendantsBreadthFirst<'_> {
    type Item = Entity;

    fn next(&mut self) -> Option<Entity> {
        let current = self.queue.pop_front()?;
        self.queue.extend(children_of(self.world, current));
        Some(current)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.queue.len(), None)
    }
}

impl FusedIterator for DescendantsBreadthFirst<'_> {}

impl World {
    /// The parent of `entity`, then its parent, and so on up to the root; empty for a
    /// root. `entity` itself is not included.
    ///
    /// Fails with [`EntityError::NoSuchEntity`] if `entity` is dead.
    ///
    /// ```
    /// use tabula::{Parent, World};
    ///
    /// let mut world = World::new();
    /// let ship = world.spawn(());
    /// let turret = world.spawn((Parent::new(ship),));
    /// let barrel = world.spawn((Parent::new(turret),));
    /// let up: Vec<_> = world.ancestors(barrel)?.collect();
    /// assert_eq!(up, [turret, ship]);
    /// assert_eq!(world.ancestors(ship)?.next(), None);
    /// # Ok::<(), tabula::EntityError>(())
    /// ```
    pub fn ancestors(&self, entity: Entity) -> Result<Ancestors<'_>, EntityError> {
        Ok(Ancestors {
            world: self,
            next: self.parent(entity)?,
        })
    }

    /// Every descendant of `entity`, depth-first in pre-order: each entity is followed by
    /// its whole subtree before its next sibling, and siblings come in the order they were
    /// attached. `entity` itself is not included; a leaf has none.
    ///
    /// Fails with [`EntityError::NoSuchEntity`] if `entity` is dead. The walk borrows the
    /// world: collect it to change the entities it visits.
    ///
    /// ```
    /// use tabula::{Parent, World};
    ///
    /// let mut world = World::new();
    /// let ship = world.spawn(());
    /// let turret = world.spawn((Parent::new(ship),));
    /// let barrel = world.spawn((Parent::new(turret),));
    /// let engine = world.spawn((Parent::new(ship),));
    /// let down: Vec<_> = world.descendants(ship)?.collect();
    /// assert_eq!(down, [turret, barrel, engine]);
    ///
    /// for part in down {
    ///     world.insert(part, ("damaged",))?;
    /// }
    /// # Ok::<(), tabula::EntityError>(())
    /// ```
    pub fn descendants(&self, entity: Entity) -> Result<Descendants<'_>, EntityError> {
        self.location(entity)?;
        Ok(Descendants {
            world: self,
            stack: children_of(self, entity).iter().rev().copied().collect(),
        })
    }

    /// Every descendant of `entity`, breadth-first: its children, then all its
    /// grandchildren, and so on, siblings in the order they were attached. A parent always
    /// comes before its children, which is the order transform propagation needs (a child's
    /// global transform is computed from its parent's). `entity` itself is not included.
    ///
    /// Fails with [`EntityError::NoSuchEntity`] if `entity` is dead. The walk borrows the
    /// world: collect it to write to the entities it visits.
    ///
    /// ```
    /// use tabula::{Parent, World};
    ///
    /// struct Local(f32);
    /// struct Global(f32);
    ///
    /// let mut world = World::new();
    /// let ship = world.spawn((Local(10.0), Global(10.0)));
    /// let turret = world.spawn((Local(1.0), Global(0.0), Parent::new(ship)));
    /// let barrel = world.spawn((Local(0.5), Global(0.0), Parent::new(turret)));
    /// let engine = world.spawn((Local(-2.0), Global(0.0), Parent::new(ship)));
    /// let order: Vec<_> = world.descendants_breadth_first(ship)?.collect();
    /// assert_eq!(order, [turret, engine, barrel]);
    ///
    /// // Each parent's global position is final before its children read it.
    /// for entity in order {
    ///     let parent = world.parent(entity)?.expect("a descendant has a parent");
    ///     let global = world.get::<Global>(parent)?.0 + world.get::<Local>(entity)?.0;
    ///     world.get_mut::<Global>(entity)?.0 = global;
    /// }
    /// assert_eq!(world.get::<Global>(barrel)?.0, 11.5);
    /// # Ok::<(), tabula::EntityError>(())
    /// ```
    pub fn descendants_breadth_first(
        &self,
        entity: Entity,
    ) -> Result<DescendantsBreadthFirst<'_>, EntityError> {
        self.location(entity)?;
        Ok(DescendantsBreadthFirst {
            world: self,
            queue: children_of(self, entity).iter().copied().collect(),
        })
    }

    /// The topmost ancestor of `entity`: the root of its tree, which is `entity` itself
    /// when it has no parent.
    ///
    /// Fails with [`EntityError::NoSuchEntity`] if `entity` is dead.
    ///
    /// ```
    /// use tabula::{Parent, World};
    ///
    /// let mut world = World::new();
    /// let ship = world.spawn(());
    /// let turret = world.spawn((Parent::new(ship),));
    /// let barrel = world.spawn((Parent::new(turret),));
    /// assert_eq!(world.root(barrel)?, ship);
    /// assert_eq!(world.root(ship)?, ship);
    /// # Ok::<(), tabula::EntityError>(())
    /// ```
    pub fn root(&self, entity: Entity) -> Result<Entity, EntityError> {
        Ok(self.ancestors(entity)?.last().unwrap_or(entity))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A root with two children, `a` (which has `a1` and `a2`) and `b` (which has `b1`),
    /// each attached in that order: `[root, a, a1, a2, b, b1]`.
    fn small_tree(world: &mut World) -> [Entity; 6] {
        let root = world.spawn(());
        let a = world.spawn((Parent::new(root),));
        let b = world.spawn((Parent::new(root),));
        let a1 = world.spawn((Parent::new(a),));
        let b1 = world.spawn((Parent::new(b),));
        let a2 = world.spawn((Parent::new(a),));
        [root, a, a1, a2, b, b1]
    }

    /// A chain `[0] <- [1] <- ... <- [n - 1]`, each the parent of the next.
    fn chain(world: &mut World, n: usize) -> Vec<Entity> {
        let mut chain = vec![world.spawn(())];
        for i in 1..n {
            let parent = chain[i - 1];
            chain.push(world.spawn((Parent::new(parent),)));
        }
        chain
    }

    #[test]
    fn ancestors_run_from_the_parent_up_to_the_root() {
        let mut world = World::new();
        let [root, a, a1, _, b, b1] = small_tree(&mut world);
        assert_eq!(world.ancestors(a1).unwrap().collect::<Vec<_>>(), [a, root]);
        assert_eq!(world.ancestors(b1).unwrap().collect::<Vec<_>>(), [b, root]);
        assert_eq!(world.ancestors(a).unwrap().collect::<Vec<_>>(), [root]);
        let mut none = world.ancestors(root).unwrap();
        assert_eq!(none.next(), None);
        assert_eq!(none.next(), None, "fused");
    }

    #[test]
    fn descendants_are_depth_first_pre_order_in_attach_order() {
        let mut world = World::new();
        let [root, a, a1, a2, b, b1] = small_tree(&mut world);
        let all: Vec<_> = world.descendants(root).unwrap().collect();
        assert_eq!(all, [a, a1, a2, b, b1]);
        assert_eq!(world.descendants(a).unwrap().collect::<Vec<_>>(), [a1, a2]);
        // Re-attaching `a` moves it to the end of the root's children.
        world.set_parent(a, b).unwrap();
        world.set_parent(a, root).unwrap();
        let all: Vec<_> = world.descendants(root).unwrap().collect();
        assert_eq!(all, [b, b1, a, a1, a2]);
    }

    #[test]
    fn breadth_first_yields_each_level_before_the_next() {
        let mut world = World::new();
        let [root, a, a1, a2, b, b1] = small_tree(&mut world);
        let all: Vec<_> = world.descendants_breadth_first(root).unwrap().collect();
        assert_eq!(all, [a, b, a1, a2, b1]);
        // Every entity's parent is the walk's root or comes earlier in the walk.
        for (i, &entity) in all.iter().enumerate() {
            let parent = world.parent(entity).unwrap().unwrap();
            assert!(parent == root || all[..i].contains(&parent), "{entity:?}");
        }
        assert_eq!(
            world.descendants_breadth_first(b).unwrap().collect::<Vec<_>>(),
            [b1]
        );
    }

    #[test]
    fn a_leaf_has_no_descendants_and_a_root_is_its_own_root() {
        let mut world = World::new();
        let [root, _, a1, _, _, b1] = small_tree(&mut world);
        let loner = world.spawn(());
        for leaf in [a1, b1, loner] {
            assert_eq!(world.descendants(leaf).unwrap().next(), None);
            assert_eq!(world.descendants_breadth_first(leaf).unwrap().next(), None);
        }
        assert_eq!(world.root(root), Ok(root));
        assert_eq!(world.root(loner), Ok(loner));
        assert_eq!(world.root(b1), Ok(root));
        assert_eq!(world.ancestors(loner).unwrap().count(), 0);
    }

    #[test]
    fn a_dead_entity_is_an_error_for_every_walk() {
        let mut world = World::new();
        let [root, a, ..] = small_tree(&mut world);
        world.despawn_recursive(a).unwrap();
        let error = Err(EntityError::NoSuchEntity(a));
        assert_eq!(world.ancestors(a).map(|_| ()), error);
        assert_eq!(world.descendants(a).map(|_| ()), error);
        assert_eq!(world.descendants_breadth_first(a).map(|_| ()), error);
        assert_eq!(world.root(a), Err(EntityError::NoSuchEntity(a)));
        // The walks from the survivors no longer reach it.
        let rest: Vec<_> = world.descendants(root).unwrap().collect();
        assert_eq!(rest.len(), 2);
        assert!(!rest.contains(&a));
    }

    #[test]
    fn a_deep_chain_is_walked_without_recursion() {
        // Attaching each link walks up to the root to refuse loops: quadratic, so Miri gets
        // a shorter chain (the walks keep one entity pending at a time, whatever the depth).
        let n = if cfg!(miri) { 20 } else { 2_000 };
        let mut world = World::new();
        let chain = chain(&mut world, n);
        let top = chain[0];
        let bottom = chain[n - 1];
        let up: Vec<_> = world.ancestors(bottom).unwrap().collect();
        assert!(up.iter().eq(chain[..n - 1].iter().rev()));
        let down: Vec<_> = world.descendants(top).unwrap().collect();
        assert_eq!(down, chain[1..]);
        let down: Vec<_> = world.descendants_breadth_first(top).unwrap().collect();
        assert_eq!(down, chain[1..]);
        assert_eq!(world.root(bottom), Ok(top));
        assert_eq!(world.root(chain[n / 2]), Ok(top));
    }

    #[test]
    fn walks_report_pending_entities_as_a_lower_bound() {
        let mut world = World::new();
        let [root, ..] = small_tree(&mut world);
        let mut depth_first = world.descendants(root).unwrap();
        let mut breadth_first = world.descendants_breadth_first(root).unwrap();
        assert_eq!(depth_first.size_hint(), (2, None));
        assert_eq!(breadth_first.size_hint(), (2, None));
        depth_first.next(); // `a`, whose two children join `b`
        breadth_first.next();
        assert_eq!(depth_first.size_hint(), (3, None));
        assert_eq!(breadth_first.size_hint(), (3, None));
        assert_eq!(depth_first.count(), 4);
        assert_eq!(breadth_first.count(), 4);
    }
}
