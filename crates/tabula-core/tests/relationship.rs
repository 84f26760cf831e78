//! Generic one-to-many relationships: linked despawn through chains, detaching policies,
//! cycles allowed or refused, copied collections, a relationship given in a spawn bundle
//! (one move), `World::with_children`, and consistency under random operations against a
//! naive model.

use std::collections::BTreeMap;

use tabula_core::{Entity, Parent, Relationship, RelationshipTarget, World};

mod common;
use common::Rng;

/// Docked in a carrier: despawning the carrier despawns what is docked (linked).
#[derive(Clone, Copy, Debug, PartialEq)]
struct DockedIn(Entity);
#[derive(Debug)]
struct Hangar(Vec<Entity>);

impl Relationship for DockedIn {
    type Target = Hangar;
    fn target(&self) -> Entity {
        self.0
    }
    fn from_target(target: Entity) -> Self {
        DockedIn(target)
    }
}
impl RelationshipTarget for Hangar {
    type Relationship = DockedIn;
    const LINKED_SPAWN: bool = true;
    fn sources(&self) -> &[Entity] {
        &self.0
    }
    fn sources_mut(&mut self) -> &mut Vec<Entity> {
        &mut self.0
    }
    fn from_sources(sources: Vec<Entity>) -> Self {
        Hangar(sources)
    }
}

/// Following a leader: cycles allowed, despawning the leader detaches the followers.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Follows(Entity);
#[derive(Debug, Clone)]
struct Followers(Vec<Entity>);

impl Relationship for Follows {
    type Target = Followers;
    fn target(&self) -> Entity {
        self.0
    }
    fn from_target(target: Entity) -> Self {
        Follows(target)
    }
}
impl RelationshipTarget for Followers {
    type Relationship = Follows;
    const LINKED_SPAWN: bool = false;
    fn sources(&self) -> &[Entity] {
        &self.0
    }
    fn sources_mut(&mut self) -> &mut Vec<Entity> {
        &mut self.0
    }
    fn from_sources(sources: Vec<Entity>) -> Self {
        Followers(sources)
    }
}

fn world() -> World {
    let mut world = World::new();
    world.register_relationship::<DockedIn>();
    world.register_relationship::<Follows>();
    world.register_relationship::<Follows>(); // again: nothing changes
    world
}

#[test]
fn linked_despawn_follows_chains() {
    let mut world = world();
    let carrier = world.spawn(());
    let fighter = world.spawn((DockedIn(carrier),));
    let drone = world.spawn((DockedIn(fighter),));
    let other = world.spawn((DockedIn(carrier),));
    assert_eq!(world.related_sources::<DockedIn>(carrier), [fighter, other]);
    // Undocking by removal: the hangar loses it, the entity lives.
    world.remove::<(DockedIn,)>(other).unwrap();
    assert_eq!(world.related_sources::<DockedIn>(carrier), [fighter]);
    world.despawn(carrier).unwrap();
    assert!(!world.contains(fighter) && !world.contains(drone));
    assert!(world.contains(other));
}

#[test]
fn detached_sources_survive_and_cycles_are_allowed_when_not_acyclic() {
    let mut world = world();
    let [a, b, c] = [(); 3].map(|()| world.spawn(()));
    world.insert(a, (Follows(b),)).unwrap();
    world.insert(b, (Follows(a),)).unwrap(); // a loop: allowed for Follows
    world.insert(c, (Follows(a),)).unwrap();
    assert_eq!(world.related_sources::<Follows>(a), [b, c]);
    assert_eq!(world.related_sources::<Follows>(b), [a]);
    world.despawn(a).unwrap();
    assert!(world.contains(b) && world.contains(c));
    assert!(!world.has::<Follows>(b) && !world.has::<Follows>(c));
    assert!(!world.has::<Followers>(b), "b's only follower is gone");
    // Following oneself is refused: the relationship is taken off again.
    world.insert(b, (Follows(b),)).unwrap();
    assert!(!world.has::<Follows>(b));
}

#[test]
fn a_copied_collection_adopts_its_sources() {
    let mut world = world();
    let [leader, x, y, other] = [(); 4].map(|()| world.spawn(()));
    world.insert(x, (Follows(leader),)).unwrap();
    world.insert(y, (Follows(leader),)).unwrap();
    let copied = world.get::<Followers>(leader).unwrap().clone();
    world.insert(other, (copied,)).unwrap();
    assert_eq!(world.get::<Follows>(x), Ok(&Follows(other)));
    assert_eq!(world.related_sources::<Follows>(other), [x, y]);
    assert!(!world.has::<Followers>(leader));
}

#[test]
fn a_relationship_in_a_spawn_bundle_and_with_children_move_once() {
    let mut world = world();
    let root = world.spawn(("root",));
    let mut kids = Vec::new();
    world
        .with_children(root, |root| {
            kids.push(root.spawn(("kid", 1u8)));
            kids.push(root.spawn(("kid", 2u8)));
        })
        .unwrap();
    assert_eq!(world.children(root).unwrap(), &kids[..]);
    // Each kid went straight to the (&str, u8, Parent) archetype: no archetype holds a kid
    // without its Parent.
    let without_parent = world
        .archetypes()
        .filter(|a| a.has::<u8>() && !a.has::<Parent>())
        .count();
    assert_eq!(without_parent, 0);
    let dead = world.spawn(());
    world.despawn(dead).unwrap();
    assert!(world.with_children(dead, |_| unreachable!()).is_err());
}

#[test]
#[should_panic(expected = "made immutable after entities of this world held it")]
fn registering_after_use_panics() {
    let mut world = World::new();
    let a = world.spawn(());
    world.spawn((Follows(a),));
    world.register_relationship::<Follows>();
}

/// Random links, unlinks, copies and despawns of a linked and a detaching relationship,
/// checked after every step against a naive model: each live entity's target per relationship.
#[test]
fn random_operations_keep_both_sides_in_step() {
    // Under the sanitizers (`--cfg tabula_sanitizer`), a quarter: they look for memory
    // errors, which every kind of step meets.
    let steps = common::by_checker(80, 500, 2_000);
    let mut rng = Rng(17);
    let mut world = world();
    let mut docked: BTreeMap<Entity, Entity> = BTreeMap::new();
    let mut follows: BTreeMap<Entity, Entity> = BTreeMap::new();
    let mut alive: Vec<Entity> = (0..6).map(|_| world.spawn(())).collect();
    for step in 0..steps {
        if alive.len() < 2 {
            alive.push(world.spawn(()));
            continue;
        }
        let pick = |rng: &mut Rng, alive: &[Entity]| alive[rng.below(alive.len())];
        let (a, b) = (pick(&mut rng, &alive), pick(&mut rng, &alive));
        match rng.below(7) {
            0 => alive.push(world.spawn(())),
            1 => {
                world.insert(a, (Follows(b),)).unwrap();
                if a == b {
                    follows.remove(&a);
                } else {
                    follows.insert(a, b);
                }
            }
            2 => {
                // Docking that would close a loop is still accepted (not acyclic): only the
                // entity itself is refused.
                world.insert(a, (DockedIn(b),)).unwrap();
                if a == b {
                    docked.remove(&a);
                } else {
                    docked.insert(a, b);
                }
            }
            3 => {
                let removed = world.remove::<(Follows,)>(a).is_ok();
                assert_eq!(removed, follows.remove(&a).is_some(), "step {step}");
            }
            4 | 5 if alive.len() > 2 => {
                // Despawn: linked sources go too (transitively), followers are detached.
                let mut gone = vec![a];
                let mut i = 0;
                while i < gone.len() {
                    let g = gone[i];
                    for (&s, &t) in &docked {
                        if t == g && !gone.contains(&s) {
                            gone.push(s);
                        }
                    }
                    i += 1;
                }
                world.despawn(a).unwrap();
                for g in &gone {
                    docked.remove(g);
                    follows.remove(g);
                    alive.retain(|e| e != g);
                }
                docked.retain(|_, t| !gone.contains(t));
                follows.retain(|_, t| !gone.contains(t));
            }
            _ => {}
        }
        for &e in &alive {
            assert!(world.contains(e), "step {step}: {e:?} should live");
            assert_eq!(
                world.get::<Follows>(e).ok().map(|f| f.0),
                follows.get(&e).copied(),
                "step {step}"
            );
            assert_eq!(
                world.get::<DockedIn>(e).ok().map(|d| d.0),
                docked.get(&e).copied(),
                "step {step}"
            );
            let mut followers: Vec<Entity> = follows
                .iter()
                .filter(|(_, t)| **t == e)
                .map(|(s, _)| *s)
                .collect();
            let mut listed = world.related_sources::<Follows>(e).to_vec();
            followers.sort();
            listed.sort();
            assert_eq!(listed, followers, "step {step}: followers of {e:?}");
            assert_eq!(world.has::<Followers>(e), !followers.is_empty(), "step {step}");
            let mut dockers: Vec<Entity> = docked.iter().filter(|(_, t)| **t == e).map(|(s, _)| *s).collect();
            let mut listed = world.related_sources::<DockedIn>(e).to_vec();
            dockers.sort();
            listed.sort();
            assert_eq!(listed, dockers, "step {step}: hangar of {e:?}");
        }
        assert_eq!(world.len() as usize, alive.len(), "step {step}");
    }
}
