//! `ParamSet`: members that conflict with each other, used one at a time; the set's access is
//! its members' together, for the system's other parameters and for the schedule.

use std::panic::{AssertUnwindSafe, catch_unwind};

use tabula_core::{Commands, Entity, With, Without, World};
use tabula_schedule::prelude::*;
use tabula_schedule::{EventWriter, IntoSystem, System};

#[derive(Debug, Clone, Copy, PartialEq)]
struct Health(i32);
#[derive(Debug, Clone, Copy, PartialEq)]
struct Armor(i32);
struct Poisoned;
#[derive(Default)]
struct Total(i32);
#[derive(Debug, Clone, Copy, PartialEq)]
struct Hit(i32);

fn both_executors() -> [ExecutorKind; 2] {
    [ExecutorKind::SingleThreaded, ExecutorKind::Parallel]
}

/// The panic message of initialising `system` on `world`.
fn init_panic<M>(world: &mut World, system: impl IntoSystem<(), M>) -> String {
    let mut system = system.into_system();
    let err = catch_unwind(AssertUnwindSafe(|| system.initialize(world))).unwrap_err();
    err.downcast_ref::<String>()
        .cloned()
        .or_else(|| err.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap()
}

/// `T`'s name as messages print it, without module paths.
fn short<T: ?Sized>() -> String {
    tabula_core::short_type_name(std::any::type_name::<T>())
}

#[test]
fn conflicting_members_are_used_one_at_a_time() {
    fn poison(
        mut set: ParamSet<(
            Query<&'static mut Health, With<Poisoned>>,
            Query<&'static Health>,
            ResMut<Total>,
        )>,
        armor: Query<&Armor>,
    ) {
        for mut health in set.p0().iter_mut() {
            health.0 -= 1;
        }
        let total: i32 = set.p1().iter().map(|h| h.0).sum();
        set.p2().0 = total + armor.iter().map(|a| a.0).sum::<i32>();
    }
    for executor in both_executors() {
        let mut world = World::new();
        world.init_resource::<Total>();
        let a = world.spawn((Health(10), Poisoned, Armor(100)));
        world.spawn((Health(10),));
        let mut schedule = Schedule::new();
        schedule.set_executor(executor);
        schedule.add_systems(poison);
        schedule.run(&mut world);
        schedule.run(&mut world);
        assert_eq!(world.get::<Health>(a).unwrap().0, 8);
        assert_eq!(world.resource::<Total>().unwrap().0, 8 + 10 + 100);
    }
}

#[test]
fn a_member_may_read_the_whole_world_beside_a_writer() {
    // Outside the set, `ResMut<Total>` would conflict with the `&World` member.
    fn census(mut set: ParamSet<(&World, Query<&'static mut Health>, ResMut<Total>)>) {
        let count = set.p0().len() as i32;
        set.p1().for_each(|mut h| h.0 += 1);
        set.p2().0 = count;
    }
    let mut world = World::new();
    world.init_resource::<Total>();
    let e = world.spawn((Health(1),));
    let mut schedule = Schedule::new();
    schedule.add_systems(census);
    schedule.run(&mut world);
    assert_eq!(world.resource::<Total>().unwrap().0, 1);
    assert_eq!(world.get::<Health>(e).unwrap().0, 2);
}

#[test]
fn a_conflict_with_the_systems_other_parameters_is_refused_naming_both() {
    let mut world = World::new();
    // The set before the other parameter, and after it.
    fn set_first(
        _set: ParamSet<(Query<&'static mut Health>, Query<&'static Armor>)>,
        _other: Query<&Health>,
    ) {
    }
    fn set_last(_other: Query<&Health>, _set: ParamSet<(Query<&'static Armor>, Query<&'static mut Health>)>) {
    }
    let query_mut = short::<Query<&mut Health>>();
    let query = short::<Query<&Health>>();
    for (message, param, other) in [
        (init_panic(&mut world, set_first), &query, &query_mut),
        (init_panic(&mut world, set_last), &query_mut, &query),
    ] {
        assert!(
            message.starts_with(&format!("system `{}::", module_path!())),
            "{message}"
        );
        assert!(
            message.contains(&format!(
                "parameter `{param}` conflicts with parameter `{other}` on `Health`"
            )),
            "{message}"
        );
        assert!(message.contains("Without"), "query advice: {message}");
    }

    // Resources too, and `&World` against a member that writes.
    fn resources(_total: Res<Total>, _set: ParamSet<(ResMut<Total>, Query<&'static Health>)>) {}
    let message = init_panic(&mut world, resources);
    assert!(message.contains("conflicts with parameter"), "{message}");
    assert!(message.contains("Total"), "{message}");
    fn whole_world(_world: &World, _set: ParamSet<(Query<&'static Health>, Query<&'static mut Armor>)>) {}
    let message = init_panic(&mut world, whole_world);
    assert!(message.contains("`&World` reads the whole world"), "{message}");

    // Disjoint filters separate a member from another parameter as usual.
    fn separated(
        mut set: ParamSet<(
            Query<&'static mut Health, With<Poisoned>>,
            Query<&'static Health, With<Poisoned>>,
        )>,
        others: Query<&mut Health, Without<Poisoned>>,
    ) {
        set.p0().for_each(|mut h| h.0 = 0);
        assert_eq!(others.count(), 0);
    }
    let mut system = IntoSystem::into_system(separated);
    system.initialize(&mut world);
}

#[test]
fn a_members_own_parameters_must_not_conflict() {
    // A member that is a tuple is one member: its parts are used together.
    fn bad(
        _set: ParamSet<(
            (Query<&'static mut Health>, Query<&'static Health>),
            Query<&'static Armor>,
        )>,
    ) {
    }
    let message = init_panic(&mut World::new(), bad);
    assert!(message.contains("conflicts with parameter"), "{message}");
}

#[test]
fn the_schedule_sees_every_members_access() {
    fn set_system(mut set: ParamSet<(Query<&'static mut Health>, Query<&'static Armor>)>) {
        set.p0().for_each(|mut h| h.0 += 1);
        assert!(set.p1().count() <= 1);
    }
    fn reads_health(_q: Query<&Health>) {}
    fn writes_armor(_q: Query<&mut Armor>) {}
    fn reads_armor(_q: Query<&Armor>) {}
    let mut world = World::new();
    let mut schedule = Schedule::new();
    schedule.add_systems((set_system, reads_health, writes_armor, reads_armor));
    let edges = schedule.dependencies(&mut world).unwrap();
    let reason = |before: &str, after: &str| {
        edges
            .iter()
            .find(|d| d.before.ends_with(before) && d.after.ends_with(after))
            .map(|d| d.reason.clone())
    };
    assert_eq!(
        reason("set_system", "reads_health").as_deref(),
        Some("data conflict on `Health`")
    );
    assert_eq!(
        reason("set_system", "writes_armor").as_deref(),
        Some("data conflict on `Armor`")
    );
    // Both only read `Armor`, and `reads_armor` does not touch `Health`.
    assert_eq!(reason("set_system", "reads_armor"), None);
    assert_eq!(
        edges.len(),
        3,
        "{edges:?}: `writes_armor` and `reads_armor` conflict too"
    );
}

#[test]
fn deferred_members_are_applied_and_events_sent() {
    fn spawner(mut set: ParamSet<(Commands, EventWriter<Hit>, Query<&'static mut Health>)>) {
        set.p0().spawn((Health(5),));
        set.p1().send(Hit(3));
        set.p2().for_each(|mut h| h.0 -= 1);
    }
    fn count(q: Query<&Health>, mut total: ResMut<Total>) {
        total.0 = q.iter().map(|h| h.0).sum();
    }
    for executor in both_executors() {
        let mut world = World::new();
        world.init_resource::<Total>();
        world.add_event::<Hit>();
        let mut schedule = Schedule::new();
        schedule.set_executor(executor);
        schedule.add_systems((spawner, count.after(spawner)));
        schedule.run(&mut world);
        // The sync point after `spawner` applied its spawn before `count` ran.
        assert_eq!(world.resource::<Total>().unwrap().0, 5);
        schedule.run(&mut world);
        assert_eq!(world.resource::<Total>().unwrap().0, 4 + 5);
    }
}

#[test]
fn locals_keep_their_state_and_eight_members_fit() {
    fn counters(
        mut set: ParamSet<(
            Local<u32>,
            Local<i64>,
            Query<&'static mut Health>,
            Query<&'static Health>,
            Query<Entity>,
            Res<Total>,
            Query<&'static mut Armor>,
            Query<&'static Armor>,
        )>,
    ) {
        *set.p0() += 1;
        *set.p1() -= 2;
        let (count, down) = (*set.p0(), *set.p1());
        assert_eq!(count, (-down / 2) as u32);
        set.p2().for_each(|mut h| h.0 += 1);
        assert_eq!(set.p3().iter().count(), set.p4().iter().count());
        assert_eq!(set.p5().0, 0);
        set.p6().for_each(|mut a| a.0 += 1);
        assert!(set.p7().iter().all(|a| a.0 > 0));
    }
    let mut world = World::new();
    world.init_resource::<Total>();
    let e = world.spawn((Health(0), Armor(0)));
    let mut schedule = Schedule::new();
    schedule.add_systems(counters);
    for _ in 0..3 {
        schedule.run(&mut world);
    }
    assert_eq!(world.get::<Health>(e).unwrap().0, 3);
    assert_eq!(world.get::<Armor>(e).unwrap().0, 3);
}

#[test]
fn a_missing_resource_member_panics_when_fetched_naming_the_system() {
    struct Missing;
    fn lazy(mut set: ParamSet<(Query<&'static Health>, Res<Missing>)>) {
        assert_eq!(set.p0().iter().count(), 0);
        let _ = set.p1();
    }
    let mut world = World::new();
    let mut schedule = Schedule::new();
    schedule.add_systems(lazy);
    let err = catch_unwind(AssertUnwindSafe(|| schedule.run(&mut world))).unwrap_err();
    let message = err.downcast_ref::<String>().unwrap();
    assert!(
        message.contains(&format!("system `{}::", module_path!())),
        "{message}"
    );
    assert!(message.contains("lazy"), "{message}");
    assert!(message.contains("Missing"), "{message}");
}
