//! Model-based test of the parent/child relation: random sequences of hierarchy operations,
//! plain removals of `Parent` / `Children`, inserts of copied `Parent`s, and despawns, applied both to a
//! [`World`] and to a reference model (each entity's parent and ordered child list), compared
//! in full after every step.
//!
//! A failure names its seed and step; rerun one sequence with
//! `TABULA_HIERARCHY_SEED=<seed> cargo test --test hierarchy_model`.

use std::collections::BTreeMap;

use tabula_core::{Children, Entity, EntityError, HierarchyError, Parent, World};

mod common;
use common::Rng;

/// The reference: every live entity with its parent and its children in attach order.
#[derive(Clone, Default, Debug, PartialEq)]
struct Model {
    nodes: BTreeMap<Entity, Node>,
}

#[derive(Clone, Default, Debug, PartialEq)]
struct Node {
    parent: Option<Entity>,
    children: Vec<Entity>,
}

impl Model {
    fn alive(&self, e: Entity) -> bool {
        self.nodes.contains_key(&e)
    }

    fn parent(&self, e: Entity) -> Option<Entity> {
        self.nodes[&e].parent
    }

    /// Cuts `child` from its parent, if it has one.
    fn detach(&mut self, child: Entity) {
        if let Some(parent) = self.nodes.get_mut(&child).and_then(|n| n.parent.take()) {
            self.nodes
                .get_mut(&parent)
                .unwrap()
                .children
                .retain(|&c| c != child);
        }
    }

    /// Makes every child of `parent` a root.
    fn orphan_all(&mut self, parent: Entity) {
        for child in std::mem::take(&mut self.nodes.get_mut(&parent).unwrap().children) {
            self.nodes.get_mut(&child).unwrap().parent = None;
        }
    }

    fn is_ancestor_or_self(&self, ancestor: Entity, mut e: Entity) -> bool {
        loop {
            if e == ancestor {
                return true;
            }
            match self.parent(e) {
                Some(p) => e = p,
                None => return false,
            }
        }
    }

    fn set_parent(&mut self, child: Entity, parent: Entity) {
        if self.parent(child) == Some(parent) {
            return;
        }
        self.detach(child);
        self.nodes.get_mut(&child).unwrap().parent = Some(parent);
        self.nodes.get_mut(&parent).unwrap().children.push(child);
    }

    fn despawn(&mut self, e: Entity) {
        self.detach(e);
        self.orphan_all(e);
        self.nodes.remove(&e);
    }

    fn despawn_recursive(&mut self, e: Entity) {
        self.detach(e);
        let mut stack = vec![e];
        while let Some(next) = stack.pop() {
            stack.extend(self.nodes.remove(&next).unwrap().children);
        }
    }
}

/// Checks the result of an operation on `e` that succeeds for a live entity; true when it
/// did, so the model should follow.
fn applied(result: Result<(), EntityError>, alive: bool, e: Entity, context: &str) -> bool {
    let expected = if alive {
        Ok(())
    } else {
        Err(EntityError::NoSuchEntity(e))
    };
    assert_eq!(result, expected, "{context}");
    alive
}

/// Compares the world's view of the hierarchy with the model's, in full.
fn assert_same(world: &World, model: &Model, context: &str) {
    assert_eq!(world.len() as usize, model.nodes.len(), "{context}: entity count");
    for (&e, node) in &model.nodes {
        assert_eq!(world.parent(e), Ok(node.parent), "{context}: parent of {e:?}");
        assert_eq!(
            world.children(e),
            Ok(&node.children[..]),
            "{context}: children of {e:?}"
        );
        assert_eq!(
            world.has::<Children>(e),
            !node.children.is_empty(),
            "{context}: `Children` of {e:?} is present exactly when it lists someone"
        );
    }
}

fn run(seed: u64, steps: usize) {
    let mut rng = Rng(seed);
    let mut world = World::new();
    let mut model = Model::default();
    // Every entity ever made, dead ones included, so operations also meet stale handles.
    let mut known: Vec<Entity> = Vec::new();
    for _ in 0..4 {
        let e = world.spawn((0u8,));
        model.nodes.insert(e, Node::default());
        known.push(e);
    }

    for step in 0..steps {
        let context = format!("seed {seed}, step {step}");
        let a = known[rng.below(known.len())];
        let b = known[rng.below(known.len())];
        match rng.below(10) {
            0 => {
                let e = world.spawn((step as u8,));
                model.nodes.insert(e, Node::default());
                known.push(e);
            }
            1 | 2 => {
                let result = world.set_parent(a, b);
                if !model.alive(a) {
                    assert_eq!(result, Err(HierarchyError::Entity(EntityError::NoSuchEntity(a))));
                } else if !model.alive(b) {
                    assert_eq!(result, Err(HierarchyError::Entity(EntityError::NoSuchEntity(b))));
                } else if model.is_ancestor_or_self(a, b) {
                    assert_eq!(result, Err(HierarchyError::Cycle { child: a, parent: b }));
                } else {
                    assert_eq!(result, Ok(()), "{context}");
                    model.set_parent(a, b);
                }
            }
            3 => {
                if applied(world.remove_parent(a), model.alive(a), a, &context) {
                    model.detach(a);
                }
            }
            4 => {
                // By hand: must keep the parent's list in step.
                let result = world.remove::<(Parent,)>(a);
                match model.nodes.get(&a).map(|n| n.parent) {
                    Some(Some(parent)) => {
                        assert_eq!(result.map(|(p,)| p.get()), Ok(parent), "{context}");
                        model.detach(a);
                    }
                    Some(None) => assert!(
                        matches!(result, Err(EntityError::MissingComponent { entity, .. }) if entity == a)
                    ),
                    None => assert_eq!(result, Err(EntityError::NoSuchEntity(a))),
                }
            }
            5 => {
                // By hand, together with another component: the children become roots.
                let result = world.remove::<(Children, u8)>(a);
                match model.nodes.get(&a) {
                    Some(node) if !node.children.is_empty() => {
                        let (children, _) = result.expect(&context);
                        assert_eq!(&*children, &node.children[..], "{context}");
                        model.orphan_all(a);
                        // Put the `u8` back, so later steps can remove it again.
                        world.insert(a, (0u8,)).unwrap();
                    }
                    Some(_) => assert!(result.is_err(), "{context}"),
                    None => assert_eq!(result, Err(EntityError::NoSuchEntity(a))),
                }
            }
            6 => {
                // A batch of two: all or nothing.
                let before = model.clone();
                let result = world.remove_batch::<(Parent,)>(&[a, b]);
                let valid = a != b
                    && [a, b]
                        .iter()
                        .all(|e| model.nodes.get(e).is_some_and(|n| n.parent.is_some()));
                if valid {
                    assert_eq!(result.map(|r| r.len()), Ok(2), "{context}");
                    model.detach(a);
                    model.detach(b);
                } else {
                    assert!(result.is_err(), "{context}: {result:?}");
                    assert_eq!(model, before);
                }
            }
            7 => {
                // A copied `Parent` inserted by hand: its hooks attach `b` to `a`'s parent,
                // or, when that would loop, take it off again (`b` is then a root).
                if model.alive(a)
                    && let Ok(&copied) = world.get::<Parent>(a)
                {
                    let result = world.insert(b, (copied,));
                    if model.alive(b) {
                        assert_eq!(result, Ok(()), "{context}");
                        let parent = copied.get();
                        // Even the same parent: the old value leaves the list and the new
                        // one joins it at the end.
                        model.detach(b);
                        if !model.is_ancestor_or_self(b, parent) {
                            model.set_parent(b, parent);
                        }
                    } else {
                        assert!(result.is_err(), "{context}");
                    }
                }
            }
            8 => {
                if applied(world.despawn(a), model.alive(a), a, &context) {
                    model.despawn(a);
                }
            }
            _ => {
                if applied(world.despawn_recursive(a), model.alive(a), a, &context) {
                    model.despawn_recursive(a);
                }
            }
        }
        assert_same(&world, &model, &context);
        if model.nodes.is_empty() {
            let e = world.spawn((0u8,));
            model.nodes.insert(e, Node::default());
            known.push(e);
        }
    }
}

#[test]
fn hierarchy_matches_reference_model() {
    if let Ok(seed) = std::env::var("TABULA_HIERARCHY_SEED") {
        run(seed.parse().expect("TABULA_HIERARCHY_SEED is a number"), 400);
        return;
    }
    // Under the sanitizers (`--cfg tabula_sanitizer`), a quarter of the sequences: they look
    // for memory errors, which every kind of step meets in any sequence.
    let (sequences, steps) = common::by_checker((4, 60), (75, 400), (300, 400));
    for seed in 0..sequences {
        run(seed, steps);
    }
}
