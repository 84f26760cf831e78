//! Component hooks: every kind fires exactly once per change, from every path, in the
//! documented order (a randomized run against a naive model, and one test per path); several
//! hooks per type; hook commands applied before the call returns, their failures returned by
//! the command apply that ran them; a panicking hook leaves the world consistent.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use tabula_core::{
    CommandError, CommandQueue, Commands, Component, Entity, EntityError, HookContext, HookKind, HookWorld,
    ParallelCommandQueue, World,
};

mod common;
use common::Rng;

/// Three component types, hooked; `D` has no hook.
#[derive(Clone, Copy, Debug, PartialEq)]
struct A(u32);
#[derive(Clone, Copy, Debug, PartialEq)]
struct B(u32);
#[derive(Clone, Copy, Debug, PartialEq)]
struct C(u32);
#[derive(Clone, Copy, Debug, PartialEq)]
struct D(u32);

trait Val: Component + Copy {
    const NAME: char;
    fn val(&self) -> u32;
}
macro_rules! val {
    ($t:ident, $n:literal) => {
        impl Val for $t {
            const NAME: char = $n;
            fn val(&self) -> u32 {
                self.0
            }
        }
    };
}
val!(A, 'a');
val!(B, 'b');
val!(C, 'c');

/// One hook call: its kind, the component, the entity, and the value the entity held then.
type Event = (HookKind, char, Entity, Option<u32>);

#[derive(Default)]
struct Log(Vec<Event>);

fn log_hook<T: Val>(world: &mut HookWorld<'_>, ctx: HookContext) {
    let value = world.get::<T>(ctx.entity).ok().map(Val::val);
    world
        .resource_mut::<Log>()
        .unwrap()
        .0
        .push((ctx.kind, T::NAME, ctx.entity, value));
}

fn hook_all<T: Val>(world: &mut World) {
    world
        .register_component::<T>()
        .on_add(log_hook::<T>)
        .on_insert(log_hook::<T>)
        .on_replace(log_hook::<T>)
        .on_remove(log_hook::<T>)
        .on_despawn(log_hook::<T>);
}

/// A world with `A`, `B`, `C` registered in that order (so that is their id order) and
/// hooked, and a `Log`.
fn hooked_world() -> World {
    let mut world = World::new();
    world.init_resource::<Log>();
    hook_all::<A>(&mut world);
    hook_all::<B>(&mut world);
    hook_all::<C>(&mut world);
    world
}

fn take_log(world: &mut World) -> Vec<Event> {
    std::mem::take(&mut world.resource_mut::<Log>().unwrap().0)
}

use HookKind::{Add, Despawn, Insert, Remove, Replace};

#[test]
fn spawn_and_insert_run_add_then_insert_in_component_order() {
    let mut world = hooked_world();
    // Fields out of id order, and an unhooked one.
    let e = world.spawn((C(3), D(0), A(1)));
    assert_eq!(
        take_log(&mut world),
        [
            (Add, 'a', e, Some(1)),
            (Add, 'c', e, Some(3)),
            (Insert, 'a', e, Some(1)),
            (Insert, 'c', e, Some(3)),
        ]
    );
    // Replacing `A`, adding `B`: replace sees the old value, add and insert the new ones.
    world.insert(e, (B(2), A(10))).unwrap();
    assert_eq!(
        take_log(&mut world),
        [
            (Replace, 'a', e, Some(1)),
            (Add, 'b', e, Some(2)),
            (Insert, 'a', e, Some(10)),
            (Insert, 'b', e, Some(2)),
        ]
    );
    // Replacing in place (no move).
    world.insert(e, (C(30),)).unwrap();
    assert_eq!(
        take_log(&mut world),
        [(Replace, 'c', e, Some(3)), (Insert, 'c', e, Some(30))]
    );
    // An unhooked component only: nothing.
    world.insert(e, (D(1),)).unwrap();
    assert!(take_log(&mut world).is_empty());
}

#[test]
fn remove_and_despawn_run_before_the_values_go() {
    let mut world = hooked_world();
    let e = world.spawn((A(1), B(2), C(3)));
    take_log(&mut world);
    assert_eq!(world.remove::<(C, A)>(e), Ok((C(3), A(1))));
    assert_eq!(
        take_log(&mut world),
        [
            (Replace, 'a', e, Some(1)),
            (Replace, 'c', e, Some(3)),
            (Remove, 'a', e, Some(1)),
            (Remove, 'c', e, Some(3)),
        ]
    );
    // A refused removal runs nothing.
    assert!(world.remove::<(A,)>(e).is_err());
    assert!(take_log(&mut world).is_empty());
    world.insert(e, (A(5),)).unwrap();
    take_log(&mut world);
    world.despawn(e).unwrap();
    assert_eq!(
        take_log(&mut world),
        [
            (Despawn, 'a', e, Some(5)),
            (Despawn, 'b', e, Some(2)),
            (Replace, 'a', e, Some(5)),
            (Replace, 'b', e, Some(2)),
            (Remove, 'a', e, Some(5)),
            (Remove, 'b', e, Some(2)),
        ]
    );
}

/// The events a spawn of `values` (`a`, `b`, `c` present or not) gives.
fn spawned(e: Entity, a: u32, b: u32) -> Vec<Event> {
    vec![
        (Add, 'a', e, Some(a)),
        (Add, 'b', e, Some(b)),
        (Insert, 'a', e, Some(a)),
        (Insert, 'b', e, Some(b)),
    ]
}

#[test]
fn every_batch_and_deferred_path_runs_the_hooks_once() {
    let mut world = hooked_world();
    // spawn_batch, through `next` and through `fold`.
    let first: Vec<Entity> = world.spawn_batch((0..2).map(|i| (A(i), B(i)))).collect();
    let mut second = Vec::new();
    world
        .spawn_batch((2..4).map(|i| (A(i), B(i))))
        .for_each(|e| second.push(e));
    let all: Vec<Entity> = first.iter().chain(&second).copied().collect();
    let expected: Vec<Event> = (all.iter().zip(0..))
        .flat_map(|(&e, i)| spawned(e, i, i))
        .collect();
    assert_eq!(take_log(&mut world), expected);

    // spawn_at.
    let r = world.reserve_entity();
    world.spawn_at(r, (A(7), B(7))).unwrap();
    assert_eq!(take_log(&mut world), spawned(r, 7, 7));

    // insert_batch (a whole table, which has a bulk path without hooks).
    world.insert_batch(all.iter().map(|&e| (e, (C(1),)))).unwrap();
    let expected: Vec<Event> = (all.iter())
        .flat_map(|&e| [(Add, 'c', e, Some(1)), (Insert, 'c', e, Some(1))])
        .collect();
    assert_eq!(take_log(&mut world), expected);

    // remove_batch: every entity's hooks before the first removal, in batch order.
    world.remove_batch::<(C,)>(&[all[2], all[0]]).unwrap();
    assert_eq!(
        take_log(&mut world),
        [
            (Replace, 'c', all[2], Some(1)),
            (Remove, 'c', all[2], Some(1)),
            (Replace, 'c', all[0], Some(1)),
            (Remove, 'c', all[0], Some(1)),
        ]
    );

    // Commands, and `ParallelCommands`' queue.
    let mut queue = CommandQueue::new();
    let mut commands = Commands::new(&mut queue, &world);
    let spawned_by_command = commands.spawn((A(9), B(9))).id();
    commands.entity(all[1]).remove::<(C,)>();
    assert!(queue.apply(&mut world).is_empty());
    let mut expected = spawned(spawned_by_command, 9, 9);
    expected.extend([(Replace, 'c', all[1], Some(1)), (Remove, 'c', all[1], Some(1))]);
    assert_eq!(take_log(&mut world), expected);

    let mut parallel = ParallelCommandQueue::default();
    parallel.command_scope(|scoped| scoped.spawn((A(4), B(4))));
    assert!(parallel.apply(&mut world).is_empty());
    let log = take_log(&mut world);
    assert_eq!(log.len(), 4);
    let e = log[0].2;
    assert_eq!(log, spawned(e, 4, 4));

    // clear: every entity's despawn hooks, archetype by archetype, rows in order.
    let live: Vec<Entity> = world.archetypes().flat_map(|a| a.entities().to_vec()).collect();
    world.clear();
    let log = take_log(&mut world);
    // Each entity holds `A` and `B`; `all[3]` still holds `C` too.
    assert_eq!(
        log.iter().filter(|ev| ev.0 == Despawn).count(),
        2 * live.len() + 1
    );
    assert!(world.is_empty());
    let despawned: Vec<Entity> = log
        .iter()
        .filter(|ev| ev.0 == Despawn && ev.1 == 'a')
        .map(|ev| ev.2)
        .collect();
    assert_eq!(despawned, live);
}

#[test]
fn despawn_recursive_runs_every_descendants_hooks() {
    let mut world = hooked_world();
    let root = world.spawn((A(0),));
    let child = world.spawn((A(1), tabula_core::Parent::new(root)));
    let grandchild = world.spawn((A(2), tabula_core::Parent::new(child)));
    take_log(&mut world);
    world.despawn_recursive(root).unwrap();
    let despawned: Vec<Entity> = take_log(&mut world)
        .into_iter()
        .filter(|ev| ev.0 == Despawn)
        .map(|ev| ev.2)
        .collect();
    assert_eq!(despawned, [root, child, grandchild]);
}

#[test]
fn several_hooks_per_type_run_in_registration_order() {
    let mut world = World::new();
    world.init_resource::<Log>();
    let order = Arc::new(std::sync::Mutex::new(Vec::new()));
    for tag in 0..3 {
        let order = Arc::clone(&order);
        world
            .register_component::<A>()
            .on_add(move |_: &mut HookWorld, _| order.lock().unwrap().push(tag));
    }
    world.spawn((A(1),));
    assert_eq!(*order.lock().unwrap(), [0, 1, 2]);
    // A hook added later reaches archetypes and edges made before it.
    let e = world.spawn((B(1),));
    world.insert(e, (A(2),)).unwrap();
    hook_all::<B>(&mut world);
    world.remove::<(B,)>(e).unwrap();
    assert_eq!(
        take_log(&mut world),
        [(Replace, 'b', e, Some(1)), (Remove, 'b', e, Some(1))]
    );
}

#[test]
fn hook_commands_run_before_the_call_returns_and_their_failures_reach_the_apply() {
    #[derive(Debug, PartialEq)]
    struct Shadow(u32);
    let mut world = World::new();
    world
        .register_component::<A>()
        .on_insert(|world: &mut HookWorld, ctx: HookContext| {
            let value = world.get::<A>(ctx.entity).unwrap().0;
            world.commands().entity(ctx.entity).insert((Shadow(value),));
        })
        .on_remove(|world: &mut HookWorld, ctx: HookContext| {
            world.commands().entity(ctx.entity).remove::<(Shadow,)>();
        });
    let e = world.spawn((A(3),));
    assert_eq!(
        world.get::<Shadow>(e),
        Ok(&Shadow(3)),
        "applied before spawn returned"
    );
    world.insert(e, (A(4),)).unwrap();
    assert_eq!(world.get::<Shadow>(e), Ok(&Shadow(4)));
    world.remove::<(A,)>(e).unwrap();
    assert!(!world.has::<Shadow>(e));

    // A hook command that fails inside a command apply is one of its errors.
    let f = world.spawn((A(1),));
    world.remove::<(Shadow,)>(f).unwrap();
    let mut queue = CommandQueue::new();
    Commands::new(&mut queue, &world).entity(f).remove::<(A,)>();
    let errors = queue.apply(&mut world);
    assert_eq!(
        errors,
        [CommandError::Entity {
            command: "remove",
            entity: f,
            error: EntityError::MissingComponent {
                entity: f,
                component: std::any::type_name::<Shadow>()
            }
        }]
    );
}

#[test]
fn a_hook_writes_values_and_resources_but_not_immutable_components() {
    #[derive(Debug, PartialEq)]
    struct Fixed(u32);
    let mut world = World::new();
    world.register_component::<Fixed>().immutable();
    world.init_resource::<Log>();
    let other = world.spawn((B(0), Fixed(0)));
    world
        .register_component::<A>()
        .on_add(move |world: &mut HookWorld, ctx: HookContext| {
            world.get_mut::<B>(other).unwrap().0 += 1;
            assert!(matches!(
                world.get_mut::<Fixed>(other),
                Err(EntityError::ImmutableComponent { .. })
            ));
            world
                .resource_mut::<Log>()
                .unwrap()
                .0
                .push((Add, 'a', ctx.entity, None));
        });
    let e = world.spawn((A(1),));
    assert_eq!(world.get::<B>(other), Ok(&B(1)));
    assert_eq!(take_log(&mut world), [(Add, 'a', e, None)]);
}

#[test]
#[should_panic(expected = "made immutable after entities of this world held it")]
fn making_a_held_component_immutable_panics() {
    let mut world = World::new();
    world.spawn((A(1),));
    world.register_component::<A>().immutable();
}

#[test]
#[should_panic(expected = "a query term asks to write `A`")]
fn a_query_built_before_immutability_panics_when_it_meets_the_component() {
    let mut world = World::new();
    let mut query = world.query::<&mut A>();
    world.register_component::<A>().immutable();
    world.spawn((A(1),));
    query.iter_mut(&mut world).for_each(drop);
}

/// Counts drops, to check every value is dropped exactly once across a panicking hook.
struct Counted(Arc<AtomicUsize>);
impl Drop for Counted {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

#[test]
fn a_panicking_hook_leaves_the_world_consistent() {
    let drops = Arc::new(AtomicUsize::new(0));
    let mut world = World::new();
    world
        .register_component::<A>()
        .on_insert(|world: &mut HookWorld, _| {
            if world.resource::<u16>().is_ok() {
                panic!("hook panics");
            }
        })
        .on_remove(|world: &mut HookWorld, _| {
            if world.resource::<u8>().is_ok() {
                panic!("remove hook panics");
            }
        });
    let first = world.spawn((A(0), Counted(drops.clone())));
    world.insert_resource(0u16);
    let spawn = catch_unwind(AssertUnwindSafe(|| world.spawn((A(1), Counted(drops.clone())))));
    assert!(spawn.is_err());
    world.remove_resource::<u16>().unwrap();
    // The entity was made whole before its hooks ran.
    assert_eq!(world.len(), 2);
    let second = world
        .archetypes()
        .flat_map(|a| a.entities().to_vec())
        .find(|&e| e != first)
        .unwrap();
    assert_eq!(world.get::<A>(second), Ok(&A(1)));
    world.insert_resource(0u8);
    assert!(catch_unwind(AssertUnwindSafe(|| world.despawn(first))).is_err());
    assert!(world.contains(first), "the hook ran before anything was taken");
    world.remove_resource::<u8>().unwrap();
    world.despawn(first).unwrap();
    world.despawn(second).unwrap();
    assert!(world.is_empty());
    assert_eq!(drops.load(Ordering::Relaxed), 2);
    // The world goes on working.
    let e = world.spawn((A(2), Counted(drops.clone())));
    drop(world);
    assert_eq!(drops.load(Ordering::Relaxed), 3);
    let _ = e;
}

// ---------------------------------------------------------------------------------------
// Randomized, against a naive model.

/// The model: each live entity's `A`, `B`, `C` values (`None` when absent).
type Row = [Option<u32>; 3];
const NAMES: [char; 3] = ['a', 'b', 'c'];

/// The events an insert of `new` (per component, `Some` to insert) into `row` gives, and
/// the row after it.
fn model_insert(e: Entity, row: &mut Row, new: Row) -> Vec<Event> {
    let mut events = Vec::new();
    for i in 0..3 {
        if new[i].is_some() && row[i].is_some() {
            events.push((Replace, NAMES[i], e, row[i]));
        }
    }
    let old = *row;
    for i in 0..3 {
        if new[i].is_some() {
            row[i] = new[i];
        }
    }
    for i in 0..3 {
        if new[i].is_some() && old[i].is_none() {
            events.push((Add, NAMES[i], e, row[i]));
        }
    }
    for i in 0..3 {
        if new[i].is_some() {
            events.push((Insert, NAMES[i], e, row[i]));
        }
    }
    events
}

fn model_leave(e: Entity, row: &Row, which: [bool; 3], kinds: &[HookKind]) -> Vec<Event> {
    let mut events = Vec::new();
    for &kind in kinds {
        for i in 0..3 {
            if which[i] && row[i].is_some() {
                events.push((kind, NAMES[i], e, row[i]));
            }
        }
    }
    events
}

/// Inserts the components `new` names, as one bundle (fields in a shuffled order).
fn world_insert(world: &mut World, e: Entity, new: Row, rng: &mut Rng) -> Result<(), EntityError> {
    let v = |i: usize| new[i].unwrap();
    match (new[0].is_some(), new[1].is_some(), new[2].is_some(), rng.below(2)) {
        (true, false, false, _) => world.insert(e, (A(v(0)),)),
        (false, true, false, _) => world.insert(e, (B(v(1)),)),
        (false, false, true, _) => world.insert(e, (C(v(2)),)),
        (true, true, false, 0) => world.insert(e, (A(v(0)), B(v(1)))),
        (true, true, false, _) => world.insert(e, (B(v(1)), A(v(0)))),
        (true, false, true, _) => world.insert(e, (C(v(2)), A(v(0)))),
        (false, true, true, _) => world.insert(e, (B(v(1)), C(v(2)))),
        (true, true, true, 0) => world.insert(e, (A(v(0)), B(v(1)), C(v(2)))),
        (true, true, true, _) => world.insert(e, (C(v(2)), B(v(1)), A(v(0)))),
        (false, false, false, _) => world.insert(e, ()),
    }
}

#[test]
fn hooks_match_a_naive_model() {
    // Under the sanitizers (`--cfg tabula_sanitizer`), a quarter of the seeds: they look for
    // memory errors, which every kind of step meets in any seed.
    let seeds = common::by_checker(1, 6, 24);
    let steps = if cfg!(miri) { 60 } else { 400 };
    for seed in 0..seeds {
        let mut rng = Rng(seed + 1);
        let mut world = hooked_world();
        let mut model: Vec<(Entity, Row)> = Vec::new();
        let mut next = 1u32;
        for step in 0..steps {
            let context = format!("seed {seed}, step {step}");
            let mut fresh = || {
                next += 1;
                next
            };
            let pick: [bool; 3] = [rng.below(2) == 0, rng.below(2) == 0, rng.below(2) == 0];
            let new: Row = [0, 1, 2].map(|i| pick[i].then(&mut fresh));
            let expected: Vec<Event> = match rng.below(7) {
                0 | 1 => {
                    // Spawn: through `spawn` or `spawn_at`, as an insert into an empty row.
                    let e = if rng.below(2) == 0 {
                        let e = world.spawn(());
                        world_insert(&mut world, e, new, &mut rng).unwrap();
                        e
                    } else {
                        let e = world.reserve_entity();
                        world.flush();
                        world_insert(&mut world, e, new, &mut rng).unwrap();
                        e
                    };
                    let mut row = [None; 3];
                    let events = model_insert(e, &mut row, new);
                    model.push((e, row));
                    events
                }
                2 | 3 if !model.is_empty() => {
                    let k = rng.below(model.len());
                    let (e, row) = &mut model[k];
                    world_insert(&mut world, *e, new, &mut rng).unwrap();
                    model_insert(*e, row, new)
                }
                4 if !model.is_empty() => {
                    let k = rng.below(model.len());
                    let (e, row) = model[k];
                    let has_all = (0..3).all(|i| !pick[i] || row[i].is_some());
                    let result = match pick {
                        [true, false, false] => world.remove::<(A,)>(e).map(drop),
                        [false, true, false] => world.remove::<(B,)>(e).map(drop),
                        [false, false, true] => world.remove::<(C,)>(e).map(drop),
                        [true, true, false] => world.remove::<(B, A)>(e).map(drop),
                        [true, false, true] => world.remove::<(A, C)>(e).map(drop),
                        [false, true, true] => world.remove::<(C, B)>(e).map(drop),
                        [true, true, true] => world.remove::<(C, A, B)>(e).map(drop),
                        [false, false, false] => world.remove::<()>(e).map(drop),
                    };
                    assert_eq!(result.is_ok(), has_all, "{context}");
                    if has_all {
                        let events = model_leave(e, &row, pick, &[Replace, Remove]);
                        for (value, &picked) in model[k].1.iter_mut().zip(&pick) {
                            if picked {
                                *value = None;
                            }
                        }
                        events
                    } else {
                        Vec::new()
                    }
                }
                5 if !model.is_empty() => {
                    let k = rng.below(model.len());
                    let (e, row) = model.swap_remove(k);
                    world.despawn(e).unwrap();
                    model_leave(e, &row, [true; 3], &[Despawn, Replace, Remove])
                }
                6 if !model.is_empty() => {
                    // remove_batch of `A` from up to three entities that have it.
                    let with_a: Vec<usize> = (0..model.len())
                        .filter(|&k| model[k].1[0].is_some())
                        .take(3)
                        .collect();
                    let entities: Vec<Entity> = with_a.iter().map(|&k| model[k].0).collect();
                    world.remove_batch::<(A,)>(&entities).unwrap();
                    let mut events = Vec::new();
                    for &k in &with_a {
                        events.extend(model_leave(
                            model[k].0,
                            &model[k].1,
                            [true, false, false],
                            &[Replace, Remove],
                        ));
                        model[k].1[0] = None;
                    }
                    events
                }
                _ => Vec::new(),
            };
            assert_eq!(take_log(&mut world), expected, "{context}");
            for (e, row) in &model {
                let got = [
                    world.get::<A>(*e).ok().map(|v| v.0),
                    world.get::<B>(*e).ok().map(|v| v.0),
                    world.get::<C>(*e).ok().map(|v| v.0),
                ];
                assert_eq!(&got, row, "{context}: {e:?}");
            }
        }
    }
}
