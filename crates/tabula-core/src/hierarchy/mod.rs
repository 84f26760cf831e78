//! Parent/child relations between entities: the [`Parent`] and [`Children`] components.
//!
//! The two sides are kept consistent by component [hooks](crate::HookKind) this module
//! registers in every world: `child` has `Parent(parent)` exactly when `parent`'s `Children`
//! lists `child`. Both components are [immutable](crate::ComponentRegistration::immutable):
//! they change by insert and remove (whose hooks update the other side), never in place.
//!
//! * Insert (or spawn with) [`Parent::new(parent)`](Parent::new), or call
//!   [`World::set_parent`], to attach a child; it leaves its old parent first.
//!   `set_parent` refuses a cycle (an entity as its own ancestor) with
//!   [`HierarchyError::Cycle`]; an inserted `Parent` that would make one, or that names a dead
//!   entity, is taken off again (and `tracing` warns).
//! * Remove the `Parent`, or call [`World::remove_parent`], to make a child a root again.
//! * [`World::despawn_recursive`] despawns an entity with all its descendants.
//! * Plain [`World::despawn`] keeps the relation consistent too: a despawned child leaves its
//!   parent's `Children`, and the children of a despawned parent become roots.
//! * Removing `Children` makes every listed child a root; inserting a `Children` (a list
//!   copied from another entity) makes every listed entity a child of the new holder.
//! * [`World::ancestors`], [`World::descendants`] (depth-first),
//!   [`World::descendants_breadth_first`] (each parent before its children, the order
//!   transform propagation needs) and [`World::root`] walk the tree.
//!
//! `get_mut` of either returns [`EntityError::ImmutableComponent`], and a query term
//! `&mut Parent` (or `Mut<Children>`, ...) or a `view_mut` of either panics when it is built,
//! since each is a mistake in the calling code.
//!
//! An entity with no children has no `Children` component (an emptied list is removed), so
//! `With<Children>` means "has at least one child".
//!
//! ```
//! use tabula::{Parent, World};
//!
//! let mut world = World::new();
//! let ship = world.spawn(("ship",));
//! let turret = world.spawn(("turret", Parent::new(ship))); // spawned attached
//! let barrel = world.spawn(("barrel",));
//! world.set_parent(barrel, turret)?;
//! assert!(world.set_parent(ship, barrel).is_err()); // would be a cycle
//! assert_eq!(world.children(ship)?, &[turret]);
//!
//! world.despawn_recursive(ship)?;
//! assert!(world.is_empty());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

// `pub(crate)` so that the crate root can re-export the walks' iterator types
// (`Ancestors`, `Descendants`, `DescendantsBreadthFirst`).
pub(crate) mod traverse;

use std::fmt;
use std::ops::Deref;

use crate::bundle::{Bundle, TuplePush};
use crate::entity::Entity;
use crate::error::EntityError;
use crate::relationship::{Relationship, RelationshipTarget};
use crate::world::World;

/// Registers the hierarchy's relationship (`Parent` / `Children`, immutable, with the hooks
/// of [`crate::relationship`]): every world does this when it is made.
pub(crate) fn register(world: &mut World) {
    world.register_relationship::<Parent>();
}

/// The component pointing from a child to its parent: insert it (or spawn with it), or call
/// [`World::set_parent`]; the parent's [`Children`] follows. A `Parent` naming a dead entity
/// or one that would make the hierarchy loop is taken off again (and `tracing` warns).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Parent(Entity);

impl Parent {
    /// A `Parent` naming `parent`, to insert or spawn with.
    ///
    /// ```
    /// use tabula::{Parent, World};
    ///
    /// let mut world = World::new();
    /// let ship = world.spawn(());
    /// let crew: Vec<_> = world.spawn_batch((0..3).map(|_| (Parent::new(ship),))).collect();
    /// assert_eq!(world.children(ship)?, &crew[..]);
    /// # Ok::<(), tabula::EntityError>(())
    /// ```
    pub fn new(parent: Entity) -> Self {
        Self(parent)
    }

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
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
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

impl Relationship for Parent {
    type Target = Children;
    const ACYCLIC: bool = true;

    fn target(&self) -> Entity {
        self.0
    }

    fn from_target(target: Entity) -> Self {
        Self(target)
    }
}

impl RelationshipTarget for Children {
    type Relationship = Parent;
    // Despawning a parent makes its children roots; `despawn_recursive` takes them along.
    const LINKED_SPAWN: bool = false;

    fn sources(&self) -> &[Entity] {
        &self.0
    }

    fn sources_mut(&mut self) -> &mut Vec<Entity> {
        &mut self.0
    }

    fn from_sources(sources: Vec<Entity>) -> Self {
        Self(sources)
    }
}

/// Spawns children of one entity on a [`World`]; see [`World::with_children`].
pub struct ChildSpawner<'w> {
    world: &'w mut World,
    parent: Entity,
}

impl ChildSpawner<'_> {
    /// Spawns a child with `bundle` (a tuple of components) and a `Parent`, in one move.
    pub fn spawn<B>(&mut self, bundle: B) -> Entity
    where
        B: TuplePush<Parent>,
        B::Output: Bundle,
    {
        self.world.spawn(bundle.push(Parent(self.parent)))
    }

    /// The entity whose children are being spawned.
    pub fn parent_entity(&self) -> Entity {
        self.parent
    }

    /// The world, for anything other than spawning children.
    pub fn world(&mut self) -> &mut World {
        self.world
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
        if self.get::<Parent>(child).is_ok_and(|p| p.0 == parent) {
            return Ok(());
        }
        // The hooks take the child off its old parent's list and onto the new one.
        self.insert(child, (Parent(parent),))?;
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

    /// Spawns children of `parent` through `build`: each [`ChildSpawner::spawn`] spawns an
    /// entity with its bundle and a [`Parent`] naming `parent`, in one archetype move.
    ///
    /// ```
    /// let mut world = tabula::World::new();
    /// let ship = world.spawn(("ship",));
    /// let mut turrets = Vec::new();
    /// world.with_children(ship, |ship| {
    ///     turrets.push(ship.spawn(("turret", 1u8)));
    ///     turrets.push(ship.spawn(("turret", 2u8)));
    /// })?;
    /// assert_eq!(world.children(ship)?, &turrets[..]);
    /// # Ok::<(), tabula::EntityError>(())
    /// ```
    ///
    /// # Errors
    /// [`EntityError::NoSuchEntity`] when `parent` is dead; `build` is not called.
    pub fn with_children(
        &mut self,
        parent: Entity,
        build: impl FnOnce(&mut ChildSpawner<'_>),
    ) -> Result<(), EntityError> {
        self.flush();
        self.location(parent)?;
        build(&mut ChildSpawner { world: self, parent });
        Ok(())
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
            // hooks find no parent to update (the root's leaves its parent's list). Every
            // listed child is alive (the relation is kept consistent), so this cannot fail;
            // if it did, there is nothing left to undo.
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

    /// True when `ancestor` is `entity` or one of its ancestors.
    fn is_ancestor_or_self(&self, ancestor: Entity, entity: Entity) -> bool {
        self.reaches_along::<Parent>(entity, ancestor)
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
    fn inserting_a_copied_parent_or_children_keeps_both_sides() {
        let mut world = World::new();
        let parent = world.spawn(());
        let child = world.spawn(());
        let other = world.spawn((1u8,));
        world.set_parent(child, parent).unwrap();
        let copied = *world.get::<Parent>(child).unwrap();
        // A copied `Parent` attaches `other` too.
        world.insert(other, (2u8, copied)).unwrap();
        assert_eq!(world.children(parent), Ok(&[child, other][..]));
        assert_consistent(&mut world);
        // A copied `Children` adopts the listed entities: they leave their old parent.
        let list = world.get::<Children>(parent).unwrap().clone();
        let adopter = world.spawn(());
        world.insert_batch([(adopter, (list,))]).unwrap();
        assert_eq!(world.children(adopter), Ok(&[child, other][..]));
        assert_eq!(world.parent(child), Ok(Some(adopter)));
        assert!(!world.has::<Children>(parent));
        assert_consistent(&mut world);
        // A list naming the holder's own ancestor drops it instead of making a loop.
        let list = world.get::<Children>(adopter).unwrap().clone();
        world.insert(child, (list,)).unwrap();
        assert_eq!(world.parent(other), Ok(Some(child)));
        assert_eq!(world.children(child), Ok(&[other][..]));
        assert_consistent(&mut world);
    }

    #[test]
    fn a_parent_naming_a_dead_entity_or_making_a_loop_is_taken_off() {
        let mut world = World::new();
        let [a, b, dead] = [(); 3].map(|()| world.spawn(()));
        world.despawn(dead).unwrap();
        world.insert(a, (Parent::new(dead),)).unwrap();
        assert_eq!(world.parent(a), Ok(None));
        world.set_parent(b, a).unwrap();
        world.insert(a, (Parent::new(b),)).unwrap();
        assert_eq!(world.parent(a), Ok(None), "a loop is refused");
        assert_eq!(world.parent(b), Ok(Some(a)));
        world.insert(a, (Parent::new(a),)).unwrap();
        assert_eq!(world.parent(a), Ok(None));
        assert_consistent(&mut world);
    }

    #[test]
    fn spawning_with_a_parent_attaches_in_one_move() {
        let mut world = World::new();
        let root = world.spawn(());
        let kids: Vec<Entity> = world
            .spawn_batch((0..4u8).map(|i| (i, Parent::new(root))))
            .collect();
        assert_eq!(world.children(root), Ok(&kids[..]));
        let archetypes = world.archetypes().filter(|a| !a.is_empty()).count();
        // The root's (Children) and the kids' (u8, Parent): no intermediate archetype holds
        // an entity.
        assert_eq!(archetypes, 2);
        assert_consistent(&mut world);
    }

    #[test]
    fn parent_and_children_are_immutable() {
        let mut world = World::new();
        let [parent, a, b] = [(); 3].map(|()| world.spawn(()));
        world.set_parent(a, parent).unwrap();
        world.set_parent(b, parent).unwrap();
        let error = world.get_mut::<Parent>(a).err().unwrap();
        assert!(matches!(error, EntityError::ImmutableComponent { entity, .. } if entity == a));
        assert!(error.to_string().contains("immutable"), "{error}");
        assert!(matches!(
            world.get_mut::<Children>(parent).err(),
            Some(EntityError::ImmutableComponent { entity, .. }) if entity == parent
        ));
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
    fn setting_the_same_parent_twice_lists_the_child_once() {
        let mut world = World::new();
        let parent = world.spawn(());
        let child = world.spawn(());
        world.set_parent(child, parent).unwrap();
        world.set_parent(child, parent).unwrap();
        assert_eq!(world.children(parent), Ok(&[child][..]));
    }
}
