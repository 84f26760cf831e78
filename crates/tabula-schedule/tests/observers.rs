//! Observers: lifecycle observers run once per change from every path, where the hooks of
//! that kind run; user events reach the observers watching every entity or the target, and
//! propagate up the hierarchy until stopped; observers are entities, take run conditions,
//! record commands in the shared lane (the same world with 1 and 4 threads), and refuse
//! what they cannot do.

use std::panic::{AssertUnwindSafe, catch_unwind};

use tabula::prelude::*;
use tabula::schedule::Observer;
use tabula::{CommandQueue, HookKind, ParallelCommandQueue};

#[derive(Debug, PartialEq, Clone, Copy)]
struct A(u32);
#[derive(Debug, PartialEq, Clone, Copy)]
struct B(u32);

#[derive(Default)]
struct Log(Vec<(&'static str, Entity, Option<u32>)>);

/// Stands for "no target" in the logs.
const NONE: Entity = match Entity::from_bits(u64::MAX) {
    Some(e) => e,
    None => panic!("a valid id"),
};

fn take(world: &mut World) -> Vec<(&'static str, Entity, Option<u32>)> {
    std::mem::take(&mut world.resource_mut::<Log>().unwrap().0)
}

macro_rules! logger {
    ($name:ident, $event:ident, $label:literal) => {
        fn $name(trigger: Trigger<$event<A>>, a: Query<&A>, mut log: ResMut<Log>) {
            let e = trigger.target();
            log.0.push(($label, e, a.get(e).ok().map(|a| a.0)));
        }
    };
}
logger!(log_add, OnAdd, "add");
logger!(log_insert, OnInsert, "insert");
logger!(log_replace, OnReplace, "replace");
logger!(log_remove, OnRemove, "remove");
logger!(log_despawn, OnDespawn, "despawn");

fn observed_world() -> World {
    let mut world = World::new();
    world.init_resource::<Log>();
    world.observe(log_add);
    world.observe(log_insert);
    world.observe(log_replace);
    world.observe(log_remove);
    world.observe(log_despawn);
    world
}

#[test]
fn lifecycle_observers_run_once_per_change_on_every_path() {
    let mut world = observed_world();
    let e = world.spawn((A(1), B(0)));
    assert_eq!(take(&mut world), [("add", e, Some(1)), ("insert", e, Some(1))]);
    world.insert(e, (A(2),)).unwrap();
    assert_eq!(
        take(&mut world),
        [("replace", e, Some(1)), ("insert", e, Some(2))]
    );
    world.remove::<(A,)>(e).unwrap();
    assert_eq!(
        take(&mut world),
        [("replace", e, Some(2)), ("remove", e, Some(2))]
    );
    world.insert(e, (A(3),)).unwrap();
    take(&mut world);
    world.despawn(e).unwrap();
    assert_eq!(
        take(&mut world),
        [
            ("despawn", e, Some(3)),
            ("replace", e, Some(3)),
            ("remove", e, Some(3))
        ]
    );

    // Batches, commands and the parallel queue.
    let batch: Vec<Entity> = world.spawn_batch((0..2).map(|i| (A(i),))).collect();
    let expected: Vec<_> = (batch.iter().zip(0..))
        .flat_map(|(&e, i)| [("add", e, Some(i)), ("insert", e, Some(i))])
        .collect();
    assert_eq!(take(&mut world), expected);
    world.remove_batch::<(A,)>(&batch).unwrap();
    assert_eq!(take(&mut world).len(), 4);
    let mut queue = CommandQueue::new();
    let by_command = Commands::new(&mut queue, &world).spawn((A(7),)).id();
    assert!(queue.apply(&mut world).is_empty());
    assert_eq!(
        take(&mut world),
        [("add", by_command, Some(7)), ("insert", by_command, Some(7))]
    );
    let mut parallel = ParallelCommandQueue::new();
    parallel.command_scope(|scoped| scoped.despawn(by_command));
    assert!(parallel.apply(&mut world).is_empty());
    assert_eq!(take(&mut world)[0], ("despawn", by_command, Some(7)));
    world.spawn((A(8),));
    take(&mut world);
    world.clear();
    // `clear` despawns the observers too (they are entities): the log shows the `A`
    // holder's despawn, and nothing after the observers are gone.
    assert!(
        take(&mut world)
            .iter()
            .any(|&(kind, _, v)| kind == "despawn" && v == Some(8))
    );
    world.spawn((A(9),));
    assert!(take(&mut world).is_empty());
}

#[test]
fn observers_are_entities_and_run_in_registration_order() {
    let mut world = World::new();
    world.init_resource::<Log>();
    fn first(trigger: Trigger<OnAdd<A>>, mut log: ResMut<Log>) {
        log.0.push(("first", trigger.target(), None));
    }
    fn second(trigger: Trigger<OnAdd<A>>, mut log: ResMut<Log>) {
        log.0.push(("second", trigger.target(), None));
    }
    let one = world.observe(first);
    world.observe(second);
    let key = tabula::EventKey::Lifecycle(HookKind::Add, world.components().id::<A>().unwrap());
    assert_eq!(world.observer_count(key), 2);
    let e = world.spawn((A(0),));
    assert_eq!(take(&mut world), [("first", e, None), ("second", e, None)]);
    world.despawn(one).unwrap();
    assert_eq!(world.observer_count(key), 1);
    let f = world.spawn((A(0),));
    assert_eq!(take(&mut world), [("second", f, None)]);
}

struct Ping(u32);
impl Event for Ping {}

struct Bubble;
impl Event for Bubble {
    const AUTO_PROPAGATE: bool = true;
}

#[test]
fn user_events_reach_watchers_and_propagate_until_stopped() {
    let mut world = World::new();
    world.init_resource::<Log>();
    fn anyone(trigger: Trigger<Ping>, mut log: ResMut<Log>) {
        log.0
            .push(("anyone", trigger.try_target().unwrap_or(NONE), Some(trigger.0)));
    }
    fn watcher(trigger: Trigger<Ping>, mut log: ResMut<Log>) {
        log.0.push(("watcher", trigger.target(), Some(trigger.0)));
    }
    let [root, mid, leaf, other] = [(); 4].map(|()| world.spawn(()));
    world.set_parent(mid, root).unwrap();
    world.set_parent(leaf, mid).unwrap();
    world.observe(anyone);
    world.add_observer(Observer::new(watcher).watch(leaf));
    world.trigger(Ping(1));
    assert_eq!(take(&mut world), [("anyone", NONE, Some(1))]);
    world.trigger_targets(Ping(2), [leaf, other]);
    assert_eq!(
        take(&mut world),
        [
            ("anyone", leaf, Some(2)),
            ("watcher", leaf, Some(2)),
            ("anyone", other, Some(2))
        ]
    );

    // Bubbling: leaf, mid, root — unless an observer stops it at `mid`.
    fn bubble(trigger: Trigger<Bubble>, stop: Res<StopAt>, mut log: ResMut<Log>) {
        log.0.push(("bubble", trigger.target(), None));
        assert_eq!(trigger.original_target(), Some(stop.1));
        if Some(trigger.target()) == stop.0 {
            trigger.propagate(false);
        }
    }
    struct StopAt(Option<Entity>, Entity);
    world.insert_resource(StopAt(None, leaf));
    world.observe(bubble);
    world.trigger_targets(Bubble, [leaf]);
    assert_eq!(
        take(&mut world),
        [
            ("bubble", leaf, None),
            ("bubble", mid, None),
            ("bubble", root, None)
        ]
    );
    world.insert_resource(StopAt(Some(mid), leaf));
    world.trigger_targets(Bubble, [leaf]);
    assert_eq!(take(&mut world), [("bubble", leaf, None), ("bubble", mid, None)]);
}

#[test]
fn run_conditions_and_commands() {
    struct Open(bool);
    let mut world = World::new();
    world.init_resource::<Log>();
    world.insert_resource(Open(false));
    // An observer spawning a `B` for every `A` added, through commands.
    fn shadow(trigger: Trigger<OnAdd<A>>, a: Query<&A>, mut commands: Commands) {
        let value = a.get(trigger.target()).unwrap().0;
        commands.spawn((B(value),));
    }
    world.add_observer(Observer::new(shadow).run_if(|open: Res<Open>| open.0));
    world.spawn((A(1),));
    assert_eq!(world.query::<&B>().iter(&world).count(), 0, "condition false");
    world.insert_resource(Open(true));
    world.spawn((A(2),));
    let bs: Vec<u32> = world.query::<&B>().iter(&world).map(|b| b.0).collect();
    assert_eq!(bs, [2], "applied before spawn returned");
    // Observers add no entity lane of their own.
    assert_eq!(world.entity_lane_count(), 1);

    // From commands: observe and trigger.
    fn count_pings(_: Trigger<Ping>, mut log: ResMut<Log>) {
        log.0.push(("ping", NONE, None));
    }
    let mut queue = CommandQueue::new();
    let mut commands = Commands::new(&mut queue, &world);
    commands.observe(count_pings);
    commands.trigger(Ping(0));
    assert!(queue.apply(&mut world).is_empty());
    assert_eq!(take(&mut world).len(), 1);
}

#[test]
fn a_failing_observer_command_is_an_error_of_the_apply_that_triggered_it() {
    let mut world = World::new();
    fn despawn_twice(trigger: Trigger<OnAdd<A>>, mut commands: Commands) {
        commands.entity(trigger.target()).despawn();
        commands.entity(trigger.target()).despawn();
    }
    world.observe(despawn_twice);
    let mut queue = CommandQueue::new();
    let e = Commands::new(&mut queue, &world).spawn((A(1),)).id();
    let errors = queue.apply(&mut world);
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(errors[0].entity(), Some(e));
    assert!(!world.contains(e));
}

#[test]
fn what_an_observer_cannot_be_is_refused() {
    let mut world = World::new();
    fn exclusive(_: &mut World) {}
    let message = |f: Box<dyn FnOnce(&mut World)>, world: &mut World| {
        let err = catch_unwind(AssertUnwindSafe(|| f(world))).unwrap_err();
        err.downcast_ref::<String>().cloned().unwrap_or_default()
    };
    let no_trigger = message(
        Box::new(|w| {
            w.observe(|_: Res<Log>| {});
        }),
        &mut world,
    );
    assert!(no_trigger.contains("no `Trigger<E>` parameter"), "{no_trigger}");
    let exclusive = message(
        Box::new(|w| {
            w.observe(exclusive);
        }),
        &mut world,
    );
    assert!(exclusive.contains("takes `&mut World`"), "{exclusive}");
    fn needs_trigger(_: Trigger<Ping>) {}
    let mut schedule = Schedule::new();
    schedule.add_systems(needs_trigger);
    let in_schedule = catch_unwind(AssertUnwindSafe(|| schedule.run(&mut world))).unwrap_err();
    let text = in_schedule.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(text.contains("only given to an observer"), "{text}");
}

#[test]
fn a_panicking_observer_leaves_the_world_usable() {
    let mut world = World::new();
    world.init_resource::<Log>();
    fn fragile(trigger: Trigger<OnAdd<A>>, a: Query<&A>, mut log: ResMut<Log>) {
        let value = a.get(trigger.target()).unwrap().0;
        if value == 0 {
            panic!("observer panics");
        }
        log.0.push(("ok", trigger.target(), Some(value)));
    }
    world.observe(fragile);
    assert!(catch_unwind(AssertUnwindSafe(|| world.spawn((A(0),)))).is_err());
    assert_eq!(world.len(), 2, "the observer and the entity, whole");
    let e = world.spawn((A(5),));
    assert_eq!(take(&mut world), [("ok", e, Some(5))], "the observer still runs");
}

/// The world after a few frames in which parallel systems insert components whose observer
/// spawns entities through commands, under `threads` threads.
fn frames_with(threads: usize) -> Vec<(Entity, Option<u32>, Option<u32>)> {
    #[derive(Clone, Copy)]
    struct Seed(u32);
    fn grow(trigger: Trigger<OnAdd<A>>, a: Query<&A>, mut commands: Commands) {
        let value = a.get(trigger.target()).unwrap().0;
        if value.is_multiple_of(3) {
            commands.spawn((B(value),));
        }
    }
    fn insert_a(mut commands: Commands, seeds: Query<(Entity, &Seed), Without<A>>) {
        for (e, seed) in seeds.iter() {
            commands.entity(e).insert((A(seed.0),));
        }
    }
    fn more_seeds(mut commands: Commands, count: Query<&B>) {
        let n = count.iter().count() as u32;
        for i in 0..4 {
            commands.spawn((Seed(n * 10 + i),));
        }
    }
    let mut world = World::with_tag(3);
    world.observe(grow);
    world.spawn_batch((0..12).map(|i| (Seed(i),))).for_each(drop);
    let mut schedule = Schedule::new();
    schedule.add_systems((insert_a, more_seeds));
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap();
    pool.install(|| {
        for _ in 0..6 {
            schedule.run(&mut world);
        }
    });
    let mut rows: Vec<_> = world
        .query::<(Entity, Option<&A>, Option<&B>)>()
        .iter(&world)
        .map(|(e, a, b)| (e, a.map(|a| a.0), b.map(|b| b.0)))
        .collect();
    rows.sort_by_key(|r| r.0.to_bits());
    rows
}

#[test]
// Two thread pools and six frames each: minutes under Miri, whose pass covers the observer
// paths through the other tests.
#[cfg_attr(miri, ignore)]
fn observer_commands_give_the_same_world_with_one_and_four_threads() {
    let one = frames_with(1);
    assert!(
        one.iter().filter(|r| r.2.is_some()).count() > 4,
        "the observer spawned"
    );
    assert_eq!(one, frames_with(4));
}
