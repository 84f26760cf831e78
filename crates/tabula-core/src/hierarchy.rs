//! Parent/child relations between entities: the [`Parent`] and [`Children`] components.
//!
//! The two sides are kept consistent by the world: `child` has `Parent(parent)` exactly when
//! `parent`'s `Children` lists `child`. Both components have private fields, so they change
//! only through the world's hierarchy methods (or the matching deferred commands):
//!
//! * [`World::set_parent`] attaches a child, leaving its old parent first; it refuses a
//!   cycle (an entity as its own ancestor) with [`HierarchyError::Cycle`].
//! * [`World::remove_parent`] makes a child a root again.
//! * [`World::despawn_recursive`] despawns an entity with all its descendants.
//! * Plain [`World::despawn`] keeps the relation consistent too: a despawned child leaves its
//!   parent's `Children`, and the children of a despawned parent become roots. (This module
//!   gives both components remove hooks; for entities with neither component a despawn
//!   tests one archetype flag.)
//!
//! * [`World::remove`] of either component keeps the relation too: a removed `Parent`
//!   leaves its parent's `Children`, and the children of a removed `Children` become roots.
//!
//! Both are read-only outside the hierarchy methods. Inserting or spawning either (a value
//! copied from another entity) is refused: `insert` returns
//! [`EntityError::HierarchyComponent`] and `spawn` panics. So is mutable access: `get_mut`
//! returns the same error, and a query term `&mut Parent` (or `Mut<Children>`, ...) or a
//! `view_mut` of either panics when it is built, since each is a mistake in the calling code.
//!
//! An entity with no children has no `Children` component (an emptied list is removed), so
//! `With<Children>` means "has at least one child".
//!
//! ```
//! use tabula::World;
//!
//! let mut world = World::new();
//! let ship = world.spawn(("ship",));
//! let turret = world.spawn(("turret",));
//! let barrel = world.spawn(("barrel",));
//! world.set_parent(turret, ship)?;
//! world.set_parent(barrel, turret)?;
//! assert!(world.set_parent(ship, barrel).is_err()); // would be a cycle
//! assert_eq!(world.children(ship)?, &[turret]);
//!
//! world.despawn_recursive(ship)?;
//! assert!(world.is_empty());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::fmt;
use std::ops::Deref;

use crate::command::CommandQueue;
use crate::entity::Entity;
use crate::error::EntityError;
use crate::world::World;

/// Gives `Parent` and `Children` the remove hooks that keep the two sides in step (see
/// `world/hooks.rs`): every world does this when it is made.
pub(crate) fn install_hooks(world: &mut World) {
    world.set_remove_hook::<Parent>(parent_removed);
    world.set_remove_hook::<Children>(children_removed);
}

/// `Parent`'s remove hook: the entity leaves its parent's `Children` (emptied, it goes).
fn parent_removed(world: &World, entity: Entity, deferred: &mut CommandQueue) {
    if let Ok(&Parent(parent)) = world.get::<Parent>(entity) {
        deferred.push(move |world: &mut World| world.remove_from_children(parent, entity));
    }
}

/// `Children`'s remove hook: each listed child whose `Parent` is still the entity becomes a
/// root.
fn children_removed(world: &World, entity: Entity, deferred: &mut CommandQueue) {
    if let Ok(children) = world.get::<Children>(entity)
        && !children.is_empty()
    {
        let children = children.0.clone();
        deferred.push(move |world: &mut World| world.orphan(entity, &children));
    }
}

/// The component pointing from a child to its parent. Set with [`World::set_parent`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Parent(Entity);

impl Parent {
    /// The parent entity.
    pub fn get(&self) -> Entity {
        self.0
    }
}

/// The component listing an entity's children, in the order they were attached.
///
/// Dereferences to `[Entity]`. Never empty: an entity whose last child leaves loses the
/// component.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Children(Vec<Entity>);

impl Children {
    /// The children, in the order they were attached.
    pub fn iter(&self) -> std::slice::Iter<'_, Entity> {
        self.0.iter()
    }

    /// How many children there are.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// True when there are none (only seen on a list being emptied).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl Deref for Children {
    type Target = [Entity];

    fn deref(&self) -> &[Entity] {
        &self.0
    }
}

impl<'a> IntoIterator for &'a Children {
    type Item = &'a Entity;
    type IntoIter = std::slice::Iter<'a, Entity>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

/// Why a hierarchy change was refused. The world is unchanged when one is returned.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HierarchyError {
    /// One of the entities is dead.
    Entity(EntityError),
    /// `parent` is `child` itself or one of its descendants, so the change would make a loop.
    Cycle {
        /// The entity that was to get a parent.
        child: Entity,
        /// The proposed parent.
        parent: Entity,
    },
}

impl From<EntityError> for HierarchyError {
    fn from(error: EntityError) -> Self {
        Self::Entity(error)
    }
}

impl fmt::Display for HierarchyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Entity(error) => fmt::Display::fmt(error, f),
            Self::Cycle { child, parent } if child == parent => {
                write!(f, "entity {child} cannot be its own parent")
            }
            Self::Cycle { child, parent } => write!(
                f,
                "cannot make {parent} the parent of {child}: {child} is an ancestor of {parent}, \
                 so the hierarchy would loop"
            ),
        }
    }
}

impl std::error::Error for HierarchyError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Entity(error) => Some(error),
            Self::Cycle { .. } => None,
        }
    }
}

impl World {
    /// Makes `child` a child of `parent`, removing it from its old parent's [`Children`]
    /// first. Setting the parent it already has changes nothing.
    ///
    /// Fails with [`HierarchyError::Cycle`] if `parent` is `child` or one of its
    /// descendants, and with [`HierarchyError::Entity`] if either is dead.
    ///
    /// ```
    /// let mut world = tabula::World::new();
    /// let [a, b, c] = [(); 3].map(|()| world.spawn(()));
    /// world.set_parent(c, a)?;
    /// world.set_parent(c, b)?; // re-parent: `a` loses its only child
    /// assert_eq!(world.children(a)?, &[]);
    /// assert_eq!(world.children(b)?, &[c]);
    /// assert_eq!(world.parent(c)?, Some(b));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn set_parent(&mut self, child: Entity, parent: Entity) -> Result<(), HierarchyError> {
        self.flush();
        self.location(child)?;
        self.location(parent)?;
        if self.is_ancestor_or_self(child, parent) {
            return Err(HierarchyError::Cycle { child, parent });
        }
        if let Ok(&Parent(old)) = self.get::<Parent>(child) {
            if old == parent {
                return Ok(());
            }
            self.remove_from_children(old, child);
        }
        // Both entities are alive (checked above), so neither insert can fail.
        self.insert_raw(child, (Parent(parent),))?;
        if let Ok(mut children) = self.get_mut_raw::<Children>(parent) {
            children.0.push(child);
        } else {
            self.insert_raw(parent, (Children(vec![child]),))?;
        }
        Ok(())
    }

    /// Detaches `child` from its parent, making it a root. An entity without a parent is
    /// left as it is; a dead one is an error.
    pub fn remove_parent(&mut self, child: Entity) -> Result<(), EntityError> {
        self.flush();
        self.location(child)?;
        // `remove` also takes `child` out of its parent's `Children`.
        let _ = self.remove::<(Parent,)>(child);
        Ok(())
    }

    /// The children of `entity`, in the order they were attached; empty for a leaf.
    pub fn children(&self, entity: Entity) -> Result<&[Entity], EntityError> {
        let location = self.location(entity)?;
        Ok(self
            .get_at::<Children>(entity, location)
            .map_or(&[], |children| &children.0))
    }

    /// The parent of `entity`; `None` for a root.
    pub fn parent(&self, entity: Entity) -> Result<Option<Entity>, EntityError> {
        let location = self.location(entity)?;
        Ok(self.get_at::<Parent>(entity, location).ok().map(Parent::get))
    }

    /// Despawns `entity` and all its descendants, and removes `entity` from its parent's
    /// [`Children`].
    ///
    /// If a component's `Drop` panics, the rest of the subtree is still despawned before the
    /// panic reaches the caller, so the hierarchy stays consistent.
    ///
    /// ```
    /// let mut world = tabula::World::new();
    /// let root = world.spawn(());
    /// let child = world.spawn(());
    /// let grandchild = world.spawn(());
    /// world.set_parent(child, root)?;
    /// world.set_parent(grandchild, child)?;
    /// world.despawn_recursive(child)?;
    /// assert!(!world.contains(grandchild));
    /// assert_eq!(world.children(root)?, &[]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn despawn_recursive(&mut self, entity: Entity) -> Result<(), EntityError> {
        self.flush();
        self.location(entity)?;
        if let Ok(&Parent(parent)) = self.get::<Parent>(entity) {
            self.remove_from_children(parent, entity);
        }
        let mut stack = vec![entity];
        // A component's `Drop` may panic. The rest of the subtree is despawned all the same,
        // because its `Parent`s name entities already gone, and then the first panic goes
        // on: no live entity is left pointing at a dead parent.
        let mut first_panic = None;
        while let Some(next) = stack.pop() {
            // Take the list out rather than removing the component (no archetype move), so
            // the despawn below finds no children to detach.
            if let Ok(mut children) = self.get_mut_raw::<Children>(next) {
                stack.extend(std::mem::take(&mut children.0));
            }
            // Descendants' `Parent`s point at entities already despawned: `despawn`'s
            // detach step finds no parent to update. Every listed child is alive (the
            // relation is kept consistent), so this cannot fail; if it did, there is
            // nothing left to undo.
            let despawned = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                let _ = self.despawn(next);
            }));
            if let Err(payload) = despawned {
                first_panic.get_or_insert(payload);
            }
        }
        if let Some(payload) = first_panic {
            std::panic::resume_unwind(payload);
        }
        Ok(())
    }

    /// Takes the `Parent` off each of `children` that names `entity`: they become roots.
    fn orphan(&mut self, entity: Entity, children: &[Entity]) {
        for &child in children {
            if self.get::<Parent>(child).is_ok_and(|p| p.0 == entity) {
                let _ = self.remove_raw::<(Parent,)>(child);
            }
        }
    }

    /// True when `ancestor` is `entity` or one of its ancestors.
    fn is_ancestor_or_self(&self, ancestor: Entity, entity: Entity) -> bool {
        let mut current = entity;
        // The relation is acyclic (only this module writes it), so the walk ends at a root;
        // the bound is a guard against a bug here, reported as a cycle rather than a hang.
        for _ in 0..=self.len() {
            if current == ancestor {
                return true;
            }
            match self.get::<Parent>(current) {
                Ok(parent) => current = parent.0,
                Err(_) => return false,
            }
        }
        true
    }

    /// Removes `child` from `parent`'s [`Children`], dropping the component when it empties.
    /// Does nothing if `parent` is dead or does not list `child`.
    fn remove_from_children(&mut self, parent: Entity, child: Entity) {
        let Ok(mut children) = self.get_mut_raw::<Children>(parent) else {
            return;
        };
        // Searched through `Deref`, so a list without `child` is not marked changed.
        let Some(index) = children.0.iter().position(|&c| c == child) else {
            return;
        };
        children.0.remove(index);
        if children.0.is_empty() {
            let _ = self.remove_raw::<(Children,)>(parent);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn despawning_leaf_and_parent_keeps_both_sides_consistent() {
        let mut world = World::new();
        let parent = world.spawn((1u8,));
        let a = world.spawn((2u8,));
        let b = world.spawn((3u8,));
        world.set_parent(a, parent).unwrap();
        world.set_parent(b, parent).unwrap();
        world.despawn(a).unwrap();
        assert_eq!(world.children(parent), Ok(&[b][..]));
        world.despawn(parent).unwrap();
        assert_eq!(world.parent(b), Ok(None));
        assert!(!world.has::<Parent>(b));
    }

    #[test]
    fn last_child_leaving_removes_children_component() {
        let mut world = World::new();
        let parent = world.spawn(());
        let child = world.spawn(());
        world.set_parent(child, parent).unwrap();
        assert!(world.has::<Children>(parent));
        world.remove_parent(child).unwrap();
        assert!(!world.has::<Children>(parent));
        assert!(!world.has::<Parent>(child));
        // Removing a parent that is not there is not an error.
        assert_eq!(world.remove_parent(child), Ok(()));
    }

    #[test]
    fn self_parent_and_dead_entities_are_rejected() {
        let mut world = World::new();
        let a = world.spawn(());
        let dead = world.spawn(());
        world.despawn(dead).unwrap();
        assert_eq!(
            world.set_parent(a, a),
            Err(HierarchyError::Cycle { child: a, parent: a })
        );
        assert_eq!(
            world.set_parent(a, dead),
            Err(HierarchyError::Entity(EntityError::NoSuchEntity(dead)))
        );
        assert_eq!(
            world.set_parent(dead, a),
            Err(HierarchyError::Entity(EntityError::NoSuchEntity(dead)))
        );
        assert!(
            world
                .set_parent(a, a)
                .unwrap_err()
                .to_string()
                .contains("its own parent")
        );
    }

    /// Every `Parent` is listed by its parent's `Children`, and every listed child points back.
    fn assert_consistent(world: &mut World) {
        let mut parents = world.query::<(Entity, &Parent)>();
        for (child, parent) in parents.iter(world) {
            let listed = world.children(parent.get()).unwrap();
            assert!(
                listed.contains(&child),
                "{child:?} not listed by {:?}",
                parent.get()
            );
        }
        let mut lists = world.query::<(Entity, &Children)>();
        for (parent, children) in lists.iter(world) {
            assert!(!children.is_empty(), "{parent:?} keeps an empty Children");
            for &child in children {
                assert_eq!(world.parent(child), Ok(Some(parent)), "{child:?} of {parent:?}");
            }
        }
    }

    #[test]
    fn removing_parent_by_hand_leaves_the_parents_children() {
        let mut world = World::new();
        let parent = world.spawn(());
        let [a, b] = [(); 2].map(|()| world.spawn(()));
        world.set_parent(a, parent).unwrap();
        world.set_parent(b, parent).unwrap();
        assert_eq!(world.remove::<(Parent,)>(a), Ok((Parent(parent),)));
        assert_eq!(world.children(parent), Ok(&[b][..]));
        assert_consistent(&mut world);
        // The detached child is no longer a descendant: it survives its old parent.
        world.despawn_recursive(parent).unwrap();
        assert!(world.contains(a) && !world.contains(b));
        assert_consistent(&mut world);
    }

    #[test]
    fn removing_children_by_hand_makes_them_roots() {
        let mut world = World::new();
        let parent = world.spawn((0u8,));
        let [a, b] = [(); 2].map(|()| world.spawn(()));
        world.set_parent(a, parent).unwrap();
        world.set_parent(b, parent).unwrap();
        let (children, _) = world.remove::<(Children, u8)>(parent).unwrap();
        assert_eq!(&*children, &[a, b]);
        assert_eq!(world.parent(a), Ok(None));
        assert_eq!(world.parent(b), Ok(None));
        assert_consistent(&mut world);
        // A failed removal changes nothing.
        world.set_parent(a, parent).unwrap();
        assert!(world.remove::<(Children, u8)>(parent).is_err());
        assert_eq!(world.parent(a), Ok(Some(parent)));
        assert_consistent(&mut world);
    }

    #[test]
    fn batch_removals_keep_the_hierarchy() {
        let mut world = World::new();
        let [root, x, y, z] = [(); 4].map(|()| world.spawn(()));
        world.set_parent(x, root).unwrap();
        world.set_parent(y, x).unwrap();
        world.set_parent(z, y).unwrap();
        // `x` and `y` each hold both; cutting `x`'s links must not fail `y`'s removal.
        let removed = world.remove_batch::<(Parent, Children)>(&[x, y]).unwrap();
        assert_eq!(removed.len(), 2);
        assert_consistent(&mut world);
        for e in [root, x, y, z] {
            assert_eq!(world.parent(e), Ok(None));
            assert_eq!(world.children(e), Ok(&[][..]));
        }

        // A batch that is a whole table in row order (the bulk path for other bundles).
        let mut world = World::new();
        let parent = world.spawn((0u8,));
        let kids: Vec<Entity> = world.spawn_batch((0..3u16).map(|i| (i,))).collect();
        for &kid in &kids {
            world.set_parent(kid, parent).unwrap();
        }
        world.remove_batch::<(Parent,)>(&kids).unwrap();
        assert!(!world.has::<Children>(parent));
        assert_consistent(&mut world);
    }

    #[test]
    fn inserting_a_copied_parent_or_children_is_refused() {
        let mut world = World::new();
        let parent = world.spawn(());
        let child = world.spawn(());
        let other = world.spawn((1u8,));
        world.set_parent(child, parent).unwrap();
        let copied = *world.get::<Parent>(child).unwrap();
        assert_eq!(
            world.insert(other, (2u8, copied)),
            Err(EntityError::HierarchyComponent {
                entity: other,
                component: "Parent"
            })
        );
        let list = world.get::<Children>(parent).unwrap().clone();
        let error = world.insert(other, (list.clone(),)).unwrap_err();
        assert!(error.to_string().contains("set_parent"), "{error}");
        assert_eq!(
            world.insert_batch([(other, (list,))]),
            Err(EntityError::HierarchyComponent {
                entity: other,
                component: "Children"
            })
        );
        // Nothing changed.
        assert_eq!(world.get::<u8>(other), Ok(&1));
        assert!(!world.has::<Parent>(other) && !world.has::<Children>(other));
        assert_consistent(&mut world);
    }

    #[test]
    fn parent_and_children_are_read_only_outside_the_hierarchy_methods() {
        let mut world = World::new();
        let [parent, a, b] = [(); 3].map(|()| world.spawn(()));
        world.set_parent(a, parent).unwrap();
        world.set_parent(b, parent).unwrap();
        assert_eq!(
            world.get_mut::<Parent>(a).err(),
            Some(EntityError::HierarchyComponent {
                entity: a,
                component: "Parent"
            })
        );
        assert_eq!(
            world.get_mut::<Children>(parent).err(),
            Some(EntityError::HierarchyComponent {
                entity: parent,
                component: "Children"
            })
        );
        assert!(world.entity_mut(a).unwrap().get_mut::<Parent>().is_none());
        // Reading is fine, and the hierarchy methods still write.
        assert_eq!(world.get::<Parent>(a).map(|p| p.get()), Ok(parent));
        world.set_parent(a, b).unwrap();
        assert_eq!(world.children(parent), Ok(&[b][..]));
        assert_consistent(&mut world);
    }

    #[test]
    #[should_panic(expected = "a query term asks to write `Parent`")]
    fn a_query_writing_parent_panics_when_built() {
        let mut world = World::new();
        world.query::<(Entity, Option<&mut Parent>)>();
    }

    #[test]
    #[should_panic(expected = "World::view_mut asks to write `Children`")]
    fn a_view_writing_children_panics() {
        let mut world = World::new();
        world.view_mut::<Children>();
    }

    #[test]
    #[should_panic(expected = "set_parent")]
    fn spawning_a_copied_parent_panics() {
        let mut world = World::new();
        let parent = world.spawn(());
        let child = world.spawn(());
        world.set_parent(child, parent).unwrap();
        let copied = *world.get::<Parent>(child).unwrap();
        world.spawn_batch([(copied,)]).for_each(drop);
    }

    #[test]
    fn setting_the_same_parent_twice_lists_the_child_once() {
        let mut world = World::new();
        let parent = world.spawn(());
        let child = world.spawn(());
        world.set_parent(child, parent).unwrap();
        world.set_parent(child, parent).unwrap();
        assert_eq!(world.children(parent), Ok(&[child][..]));
    }
}
