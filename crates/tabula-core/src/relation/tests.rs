//! Relations: the lookups, the cleanup on every path, the markers, and a randomized run
//! against a naive model.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::{Related, Relation, Relations};
use crate::command::{CommandError, CommandQueue, Commands};
use crate::entity::Entity;
use crate::error::EntityError;
use crate::query::{QueryState, With};
use crate::world::{HookContext, HookWorld, World};

struct Likes;
impl Relation for Likes {}
struct Targets;
impl Relation for Targets {}

fn spawn_n<const N: usize>(world: &mut World) -> [Entity; N] {
    [(); N].map(|()| world.spawn(()))
}

/// The entities holding `Related<R>`, sorted.
fn marked<R: Relation>(world: &mut World) -> BTreeSet<Entity> {
    let mut query = world.query_filtered::<Entity, With<Related<R>>>();
    query.iter(world).collect()
}

fn relations<R: Relation>(world: &World) -> &Relations<R> {
    world.resource::<Relations<R>>().expect("the kind is registered")
}

#[test]
fn relate_lists_both_directions_in_order() {
    let mut world = World::new();
    let [a, b, c, d] = spawn_n(&mut world);
    assert_eq!(world.relate::<Likes>(a, c), Ok(true));
    assert_eq!(world.relate::<Likes>(a, b), Ok(true));
    assert_eq!(world.relate::<Likes>(d, b), Ok(true));
    assert_eq!(world.relate::<Likes>(b, a), Ok(true));
    assert_eq!(world.targets::<Likes>(a), &[c, b]);
    assert_eq!(world.sources::<Likes>(b), &[a, d]);
    assert_eq!(world.sources::<Likes>(a), &[b]);
    assert!(world.targets::<Likes>(c).is_empty());
    assert!(world.is_related::<Likes>(a, b) && !world.is_related::<Likes>(c, a));
    let likes = relations::<Likes>(&world);
    assert_eq!(likes.len(), 4);
    assert_eq!(likes.iter().collect::<Vec<_>>(), [(a, c), (a, b), (b, a), (d, b)]);
    assert_eq!(marked::<Likes>(&mut world), BTreeSet::from([a, b, c, d]));
}

#[test]
fn relating_twice_changes_nothing_and_a_pair_made_again_goes_last() {
    let mut world = World::new();
    let [a, b, c] = spawn_n(&mut world);
    world.relate::<Likes>(a, b).unwrap();
    world.relate::<Likes>(a, c).unwrap();
    assert_eq!(world.relate::<Likes>(a, b), Ok(false));
    assert_eq!(world.targets::<Likes>(a), &[b, c]);
    assert_eq!(relations::<Likes>(&world).len(), 2);
    assert_eq!(world.unrelate::<Likes>(a, b), Ok(true));
    assert_eq!(world.unrelate::<Likes>(a, b), Ok(false));
    world.relate::<Likes>(a, b).unwrap();
    assert_eq!(world.targets::<Likes>(a), &[c, b]);
}

#[test]
fn unrelate_drops_the_markers_of_entities_left_in_no_pair() {
    let mut world = World::new();
    let [a, b, c] = spawn_n(&mut world);
    world.relate::<Likes>(a, b).unwrap();
    world.relate::<Likes>(c, b).unwrap();
    world.unrelate::<Likes>(a, b).unwrap();
    assert_eq!(marked::<Likes>(&mut world), BTreeSet::from([b, c]));
    world.unrelate::<Likes>(c, b).unwrap();
    assert!(marked::<Likes>(&mut world).is_empty());
    assert!(relations::<Likes>(&world).is_empty());
    // An unrelated pair of live entities is not an error.
    assert_eq!(world.unrelate::<Likes>(b, c), Ok(false));
    assert_eq!(world.unrelate::<Targets>(b, c), Ok(false), "a kind never used");
}

#[test]
fn a_self_pair_counts_once_and_goes_with_its_entity() {
    let mut world = World::new();
    let [a, b] = spawn_n(&mut world);
    assert_eq!(world.relate::<Likes>(a, a), Ok(true));
    assert_eq!(world.relate::<Likes>(a, a), Ok(false));
    world.relate::<Likes>(a, b).unwrap();
    world.relate::<Likes>(b, a).unwrap();
    assert_eq!(world.targets::<Likes>(a), &[a, b]);
    assert_eq!(world.sources::<Likes>(a), &[a, b]);
    assert_eq!(relations::<Likes>(&world).len(), 3);
    assert_eq!(world.unrelate_all::<Likes>(a), Ok(3));
    assert!(relations::<Likes>(&world).is_empty());
    assert!(marked::<Likes>(&mut world).is_empty());

    world.relate::<Likes>(a, a).unwrap();
    world.relate::<Likes>(b, a).unwrap();
    world.despawn(a).unwrap();
    assert!(relations::<Likes>(&world).is_empty());
    assert!(world.targets::<Likes>(b).is_empty());
    assert!(marked::<Likes>(&mut world).is_empty());

    world.relate::<Likes>(b, b).unwrap();
    world.unrelate::<Likes>(b, b).unwrap();
    assert!(!world.has::<Related<Likes>>(b));
}

#[test]
fn despawning_a_source_or_a_target_cleans_both_sides() {
    let mut world = World::new();
    let [a, b, c, d] = spawn_n(&mut world);
    world.relate::<Likes>(a, b).unwrap();
    world.relate::<Likes>(a, c).unwrap();
    world.relate::<Likes>(d, c).unwrap();
    world.relate::<Likes>(c, d).unwrap();

    world.despawn(a).unwrap(); // a source: b is left in no pair, c keeps d's
    assert!(world.sources::<Likes>(b).is_empty());
    assert_eq!(world.sources::<Likes>(c), &[d]);
    assert_eq!(marked::<Likes>(&mut world), BTreeSet::from([c, d]));

    world.despawn(c).unwrap(); // a target (and source): d is left in no pair
    assert!(world.targets::<Likes>(d).is_empty() && world.sources::<Likes>(d).is_empty());
    assert!(marked::<Likes>(&mut world).is_empty());
    assert!(relations::<Likes>(&world).is_empty());
    assert!(world.targets::<Likes>(a).is_empty(), "a dead entity has no pairs");
}

#[test]
fn a_reused_slot_does_not_inherit_pairs() {
    let mut world = World::new();
    let [a, b] = spawn_n(&mut world);
    world.relate::<Likes>(a, b).unwrap();
    world.despawn(a).unwrap();
    let reused = world.spawn(());
    assert_eq!(reused.index(), a.index(), "the slot is reused");
    assert!(world.targets::<Likes>(reused).is_empty());
    world.relate::<Likes>(reused, b).unwrap();
    assert!(world.targets::<Likes>(a).is_empty());
    assert_eq!(world.sources::<Likes>(b), &[reused]);
}

#[test]
fn dead_and_foreign_entities_are_errors_that_name_them() {
    let mut world = World::new();
    let mut other = World::new();
    let [a, dead] = spawn_n(&mut world);
    world.despawn(dead).unwrap();
    let foreign = other.spawn(());
    let wrong = EntityError::WrongWorld {
        entity: foreign,
        world: world.tag(),
    };
    assert_eq!(
        world.relate::<Likes>(a, dead),
        Err(EntityError::NoSuchEntity(dead))
    );
    assert_eq!(
        world.relate::<Likes>(dead, a),
        Err(EntityError::NoSuchEntity(dead))
    );
    assert_eq!(world.relate::<Likes>(foreign, a), Err(wrong));
    assert!(
        !world.contains_resource::<Relations<Likes>>(),
        "a refused relate leaves the world unchanged"
    );
    assert!(!world.has::<Related<Likes>>(a));
    world.relate::<Likes>(a, a).unwrap();
    assert_eq!(
        world.unrelate::<Likes>(a, dead),
        Err(EntityError::NoSuchEntity(dead))
    );
    assert_eq!(world.unrelate::<Likes>(a, foreign), Err(wrong));
    assert_eq!(
        world.unrelate_all::<Likes>(dead),
        Err(EntityError::NoSuchEntity(dead))
    );
    assert_eq!(world.unrelate_all::<Likes>(foreign), Err(wrong));
    assert!(world.targets::<Likes>(foreign).is_empty());
    assert!(!world.is_related::<Likes>(foreign, a));
    let message = world.relate::<Likes>(a, dead).unwrap_err().to_string();
    assert!(message.contains(&format!("{dead:?}")), "{message}");
}

#[test]
fn removing_the_marker_unrelates_the_entity() {
    let mut world = World::new();
    let [a, b, c] = spawn_n(&mut world);
    world.relate::<Likes>(a, b).unwrap();
    world.relate::<Likes>(c, b).unwrap();
    world.relate::<Likes>(c, a).unwrap();
    world.remove::<(Related<Likes>,)>(b).unwrap();
    assert_eq!(world.targets::<Likes>(c), &[a]);
    assert!(world.targets::<Likes>(a).is_empty());
    assert_eq!(marked::<Likes>(&mut world), BTreeSet::from([a, c]));
    assert_eq!(relations::<Likes>(&world).len(), 1);
}

#[test]
fn a_marker_moved_to_an_entity_in_no_pair_goes_again() {
    let mut world = World::new();
    let [a, b, c] = spawn_n(&mut world);
    world.relate::<Likes>(a, b).unwrap();
    let (marker,) = world.remove::<(Related<Likes>,)>(a).unwrap();
    assert!(!world.has::<Related<Likes>>(b), "b was left in no pair");
    world.insert(c, (marker,)).unwrap();
    assert!(!world.has::<Related<Likes>>(c));
    let (marker,) = {
        world.relate::<Likes>(a, b).unwrap();
        world.remove::<(Related<Likes>,)>(b).unwrap()
    };
    let spawned = world.spawn((marker, 1u8));
    assert!(!world.has::<Related<Likes>>(spawned));
    assert!(marked::<Likes>(&mut world).is_empty());
}

#[test]
fn kinds_are_independent() {
    let mut world = World::new();
    let [a, b] = spawn_n(&mut world);
    world.relate::<Likes>(a, b).unwrap();
    world.relate::<Targets>(b, a).unwrap();
    assert_eq!(world.targets::<Likes>(a), &[b]);
    assert!(world.targets::<Targets>(a).is_empty());
    world.unrelate_all::<Likes>(a).unwrap();
    assert_eq!(world.targets::<Targets>(b), &[a]);
    assert!(world.has::<Related<Targets>>(a) && !world.has::<Related<Likes>>(a));
    world.despawn(a).unwrap();
    assert!(relations::<Targets>(&world).is_empty());
    assert!(!world.has::<Related<Targets>>(b));
}

#[test]
fn clear_and_despawn_recursive_clean_up() {
    let mut world = World::new();
    let [root, child, friend] = spawn_n(&mut world);
    world.set_parent(child, root).unwrap();
    world.relate::<Likes>(friend, child).unwrap();
    world.relate::<Likes>(child, friend).unwrap();
    world.relate::<Likes>(root, friend).unwrap();
    world.despawn_recursive(root).unwrap();
    assert!(relations::<Likes>(&world).is_empty());
    assert!(!world.has::<Related<Likes>>(friend));

    let [a, b, c] = spawn_n(&mut world);
    world.relate::<Likes>(a, b).unwrap();
    world.relate::<Likes>(b, c).unwrap();
    world.relate::<Targets>(c, a).unwrap();
    world.clear();
    assert!(relations::<Likes>(&world).is_empty());
    assert!(relations::<Targets>(&world).is_empty());
    let fresh = world.spawn(());
    world.relate::<Likes>(fresh, fresh).unwrap();
    assert_eq!(world.targets::<Likes>(fresh), &[fresh]);
}

#[test]
fn relating_a_reserved_entity_flushes_it() {
    let mut world = World::new();
    let a = world.spawn(());
    let reserved = world.reserve_entity();
    assert_eq!(world.relate::<Likes>(a, reserved), Ok(true));
    assert_eq!(world.sources::<Likes>(reserved), &[a]);
    assert!(world.has::<Related<Likes>>(reserved));
}

#[test]
fn commands_relate_unrelate_and_report_dead_entities() {
    let mut world = World::new();
    let [a, b, dead] = spawn_n(&mut world);
    world.despawn(dead).unwrap();
    let mut queue = CommandQueue::new();
    let mut commands = Commands::new(&mut queue, &world);
    let spawned = commands.spawn(()).relate::<Likes>(a).relate::<Likes>(b).id();
    commands.relate::<Likes>(a, spawned);
    commands.relate::<Likes>(a, dead);
    commands.entity(spawned).unrelate::<Likes>(a);
    commands.unrelate::<Likes>(dead, a);
    commands.relate::<Targets>(b, a);
    commands.unrelate_all::<Targets>(a);
    commands.unrelate_all::<Targets>(dead);
    let errors = queue.apply(&mut world);
    assert_eq!(
        errors,
        [
            CommandError::Entity {
                command: "relate",
                entity: a,
                error: EntityError::NoSuchEntity(dead),
            },
            CommandError::Entity {
                command: "unrelate",
                entity: dead,
                error: EntityError::NoSuchEntity(dead),
            },
            CommandError::Entity {
                command: "unrelate_all",
                entity: dead,
                error: EntityError::NoSuchEntity(dead),
            },
        ]
    );
    assert_eq!(world.targets::<Likes>(spawned), &[b]);
    assert_eq!(world.targets::<Likes>(a), &[spawned]);
    assert!(relations::<Targets>(&world).is_empty());
    let mut queue = CommandQueue::new();
    Commands::new(&mut queue, &world).despawn(spawned);
    assert!(queue.apply(&mut world).is_empty());
    assert!(relations::<Likes>(&world).is_empty());
    assert!(marked::<Likes>(&mut world).is_empty());
}

#[test]
fn despawn_hooks_see_the_pairs_and_hook_commands_can_relate() {
    struct Unit;
    struct Enemy;
    #[derive(Default)]
    struct Seen(Vec<Entity>);

    let mut world = World::new();
    world.init_resource::<Seen>();
    let player = world.spawn(());
    world
        .register_component::<Unit>()
        .on_despawn(|world: &mut HookWorld<'_>, ctx: HookContext| {
            let targets = world.world().targets::<Targets>(ctx.entity).to_vec();
            world.resource_mut::<Seen>().unwrap().0.extend(targets);
        });
    world
        .register_component::<Enemy>()
        .on_add(move |world: &mut HookWorld<'_>, ctx: HookContext| {
            world.commands().relate::<Targets>(ctx.entity, player);
        });
    let enemy = world.spawn((Unit, Enemy));
    assert_eq!(
        world.targets::<Targets>(enemy),
        &[player],
        "the hook's command was applied"
    );
    world.despawn(enemy).unwrap();
    assert_eq!(world.resource::<Seen>().unwrap().0, [player]);
    assert!(relations::<Targets>(&world).is_empty());
}

#[test]
fn registering_twice_or_losing_the_resource_keeps_one_set_of_hooks() {
    let calls = Arc::new(AtomicUsize::new(0));
    let mut world = World::new();
    world.register_relation::<Likes>();
    world.register_relation::<Likes>();
    let counted = Arc::clone(&calls);
    world
        .register_component::<Related<Likes>>()
        .on_remove(move |_: &mut HookWorld<'_>, _: HookContext| {
            counted.fetch_add(1, Ordering::SeqCst);
        });
    let [a, b] = spawn_n(&mut world);
    world.relate::<Likes>(a, b).unwrap();
    world.remove_resource::<Relations<Likes>>().unwrap();
    world.relate::<Likes>(b, a).unwrap();
    assert_eq!(world.targets::<Likes>(b), &[a]);
    world.despawn(a).unwrap();
    assert!(relations::<Likes>(&world).is_empty());
    assert!(marked::<Likes>(&mut world).is_empty());
    assert_eq!(
        calls.load(Ordering::SeqCst),
        2,
        "a user's hook beside the relation's"
    );
}

#[test]
fn debug_lists_each_source_with_its_targets() {
    let mut world = World::with_tag(3);
    let [a, b] = spawn_n(&mut world);
    world.relate::<Likes>(a, b).unwrap();
    assert_eq!(
        format!("{:?}", relations::<Likes>(&world)),
        "Relations<Likes> {0v1@3: [1v1@3]}"
    );
    assert_eq!(
        format!("{:?}", world.get::<Related<Likes>>(a).unwrap()),
        "Related<Likes>"
    );
}

/// A seeded xorshift64* generator.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick(&mut self, from: &[Entity]) -> Entity {
        from[self.below(from.len())]
    }
}

/// The naive model of one kind: the pairs, in the order they were made.
#[derive(Default)]
struct Model {
    pairs: Vec<(Entity, Entity)>,
}

impl Model {
    fn contains(&self, source: Entity, target: Entity) -> bool {
        self.pairs.contains(&(source, target))
    }

    fn remove_entity(&mut self, entity: Entity) -> usize {
        let before = self.pairs.len();
        self.pairs.retain(|&(s, t)| s != entity && t != entity);
        before - self.pairs.len()
    }

    fn participants(&self) -> BTreeSet<Entity> {
        self.pairs.iter().flat_map(|&(s, t)| [s, t]).collect()
    }
}

/// What the world says about kind `R`, for every entity in `all`: each one's targets and
/// sources, then every pair.
fn snapshot<R: Relation>(world: &World, all: &[Entity]) -> Vec<Vec<Entity>> {
    let mut lists: Vec<Vec<Entity>> = (all.iter())
        .flat_map(|&e| [world.targets::<R>(e).to_vec(), world.sources::<R>(e).to_vec()])
        .collect();
    if let Ok(relations) = world.resource::<Relations<R>>() {
        lists.push(relations.iter().flat_map(|(s, t)| [s, t]).collect());
    }
    lists
}

/// Checks the world's kind `R` against `model`: the lists of each of `entities`, every
/// pair (both ends alive), and the markers.
fn check<R: Relation>(
    world: &World,
    markers: &mut QueryState<Entity, With<Related<R>>>,
    model: &Model,
    entities: &[Entity],
    step: usize,
) {
    let mut targets: HashMap<Entity, Vec<Entity>> = HashMap::new();
    let mut sources: HashMap<Entity, Vec<Entity>> = HashMap::new();
    for &(s, t) in &model.pairs {
        targets.entry(s).or_default().push(t);
        sources.entry(t).or_default().push(s);
    }
    for &e in entities {
        let expected = |lists: &HashMap<Entity, Vec<Entity>>| lists.get(&e).cloned().unwrap_or_default();
        assert_eq!(
            world.targets::<R>(e),
            expected(&targets),
            "step {step}: targets of {e:?}"
        );
        assert_eq!(
            world.sources::<R>(e),
            expected(&sources),
            "step {step}: sources of {e:?}"
        );
    }
    let relations = relations::<R>(world);
    assert_eq!(relations.len(), model.pairs.len(), "step {step}: pair count");
    let pairs: BTreeSet<_> = relations.iter().collect();
    assert_eq!(pairs, model.pairs.iter().copied().collect(), "step {step}: pairs");
    for (s, t) in pairs {
        assert!(
            world.contains(s) && world.contains(t),
            "step {step}: dead entity in ({s:?}, {t:?})"
        );
    }
    let markers: BTreeSet<Entity> = markers.iter(world).collect();
    assert_eq!(markers, model.participants(), "step {step}: markers");
}

/// One random step on kind `R`.
fn step<R: Relation>(
    world: &mut World,
    model: &mut Model,
    other: &mut Model,
    rng: &mut Rng,
    alive: &mut Vec<Entity>,
    all: &mut Vec<Entity>,
) {
    // Mostly live entities; now and then a dead one.
    let pick = |rng: &mut Rng, alive: &[Entity]| {
        if alive.is_empty() || rng.below(10) == 0 {
            rng.pick(all)
        } else {
            rng.pick(alive)
        }
    };
    let error = |world: &World, e: Entity| (!world.contains(e)).then_some(EntityError::NoSuchEntity(e));
    match rng.below(32) {
        0..=3 if alive.len() < 24 => {
            let e = world.spawn(());
            alive.push(e);
            all.push(e);
        }
        0..=19 => {
            let (s, t) = (pick(rng, alive), pick(rng, alive));
            let expected = match error(world, s).or(error(world, t)) {
                Some(error) => Err(error),
                None => Ok(!model.contains(s, t)),
            };
            if rng.below(4) == 0 {
                let mut queue = CommandQueue::new();
                Commands::new(&mut queue, world).relate::<R>(s, t);
                let errors = queue.apply(world);
                assert_eq!(errors.is_empty(), expected.is_ok(), "{errors:?}");
            } else {
                assert_eq!(world.relate::<R>(s, t), expected);
            }
            if expected == Ok(true) {
                model.pairs.push((s, t));
            }
        }
        20..=23 => {
            // Mostly a pair that exists.
            let (s, t) = match model.pairs.len() {
                n if n > 0 && rng.below(4) != 0 => model.pairs[rng.below(n)],
                _ => (pick(rng, alive), pick(rng, alive)),
            };
            let expected = match error(world, s).or(error(world, t)) {
                Some(error) => Err(error),
                None => Ok(model.contains(s, t)),
            };
            assert_eq!(world.unrelate::<R>(s, t), expected);
            model.pairs.retain(|&p| p != (s, t));
        }
        24 => {
            let e = pick(rng, alive);
            let expected = match error(world, e) {
                Some(error) => Err(error),
                None => Ok(model.remove_entity(e)),
            };
            assert_eq!(world.unrelate_all::<R>(e), expected);
        }
        25..=26 if alive.len() > 4 => {
            let e = alive.swap_remove(rng.below(alive.len()));
            match rng.below(3) {
                0 => {
                    let mut queue = CommandQueue::new();
                    Commands::new(&mut queue, world).despawn(e);
                    assert!(queue.apply(world).is_empty());
                }
                _ => world.despawn(e).unwrap(),
            }
            model.remove_entity(e);
            other.remove_entity(e);
        }
        27 if !alive.is_empty() => {
            let e = rng.pick(alive);
            let removed = world.remove::<(Related<R>,)>(e);
            assert_eq!(removed.is_ok(), model.participants().contains(&e));
            model.remove_entity(e);
        }
        28 if rng.below(50) == 0 => {
            world.clear();
            alive.clear();
            model.pairs.clear();
            other.pairs.clear();
        }
        _ => {}
    }
}

/// `steps` random steps over two kinds from `seed`, checked against the model after each;
/// returns the final lists.
fn random_run(seed: u64, steps: usize) -> (Vec<Entity>, Vec<Vec<Entity>>) {
    let mut world = World::with_tag(9);
    world.register_relation::<Likes>();
    world.register_relation::<Targets>();
    let mut likes_markers = world.query_filtered::<Entity, With<Related<Likes>>>();
    let mut targets_markers = world.query_filtered::<Entity, With<Related<Targets>>>();
    let mut rng = Rng(seed);
    let (mut likes, mut targets) = (Model::default(), Model::default());
    let mut alive: Vec<Entity> = (0..8).map(|_| world.spawn(())).collect();
    let mut all = alive.clone();
    for i in 0..steps {
        if rng.below(2) == 0 {
            step::<Likes>(
                &mut world,
                &mut likes,
                &mut targets,
                &mut rng,
                &mut alive,
                &mut all,
            );
        } else {
            step::<Targets>(
                &mut world,
                &mut targets,
                &mut likes,
                &mut rng,
                &mut alive,
                &mut all,
            );
        }
        // The live entities, and the last spawned (dead ones among them: no pairs).
        let checked: Vec<Entity> = (alive.iter().chain(all.iter().rev().take(8))).copied().collect();
        check::<Likes>(&world, &mut likes_markers, &likes, &checked, i);
        check::<Targets>(&world, &mut targets_markers, &targets, &checked, i);
    }
    let mut lists = snapshot::<Likes>(&world, &all);
    lists.extend(snapshot::<Targets>(&world, &all));
    (all, lists)
}

/// Steps of each random run. Each step is checked in full, which dominates (0.7 s a step
/// under Miri): Miri runs a short sequence of one seed. The sanitizers (`.ci/run` sets
/// `--cfg tabula_sanitizer`), which look for memory errors that every kind of step meets,
/// run a quarter of the steps.
const STEPS: usize = if cfg!(miri) {
    12
} else if cfg!(tabula_sanitizer) {
    500
} else {
    2_000
};
const SEEDS: &[u64] = if cfg!(miri) {
    &[1]
} else {
    &[1, 0x9e37_79b9_7f4a_7c15, 42]
};

#[test]
fn random_ops_match_a_naive_model() {
    for &seed in SEEDS {
        random_run(seed, STEPS);
    }
}

#[test]
#[cfg_attr(miri, ignore = "safe code; the random run above covers the paths under Miri")]
fn the_same_ops_give_the_same_lists() {
    let seed = 0xdead_beef;
    assert_eq!(random_run(seed, STEPS), random_run(seed, STEPS));
}
