//! The scheduler through its public API, the way a game uses it.

use std::panic::{AssertUnwindSafe, catch_unwind};

use tabula_core::{Changed, Commands, Entity, With, Without, World};
use tabula_schedule::prelude::*;
use tabula_schedule::{IntoSystem, ScheduleBuildError, System, TraceKind};

#[derive(Debug, Clone, Copy, PartialEq)]
struct Position(f32);
#[derive(Debug, Clone, Copy, PartialEq)]
struct Velocity(f32);
#[derive(Debug, Clone, Copy, PartialEq)]
struct Frozen;

/// A log of which systems ran, in order.
#[derive(Default, Debug)]
struct Log(Vec<&'static str>);

fn both_executors() -> [ExecutorKind; 2] {
    [ExecutorKind::SingleThreaded, ExecutorKind::Parallel]
}

fn a(mut log: ResMut<Log>) {
    log.0.push("a");
}
fn b(mut log: ResMut<Log>) {
    log.0.push("b");
}
fn c(mut log: ResMut<Log>) {
    log.0.push("c");
}

fn run_logged(executor: ExecutorKind, build: impl FnOnce(&mut Schedule)) -> Vec<&'static str> {
    let mut world = World::new();
    world.insert_resource(Log::default());
    let mut schedule = Schedule::new();
    schedule.set_executor(executor);
    build(&mut schedule);
    schedule.run(&mut world);
    world.remove_resource::<Log>().unwrap().0
}

#[test]
fn before_after_and_chain_order_systems() {
    for executor in both_executors() {
        assert_eq!(
            run_logged(executor, |s| {
                s.add_systems((c, b.before(c), a.before(b)));
            }),
            ["a", "b", "c"]
        );
        assert_eq!(
            run_logged(executor, |s| {
                s.add_systems((a.after(b), b.after(c), c));
            }),
            ["c", "b", "a"]
        );
        assert_eq!(
            run_logged(executor, |s| {
                s.add_systems((c, a, b).chain());
            }),
            ["c", "a", "b"]
        );
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Phase {
    First,
    Second,
}
impl SystemSet for Phase {}

#[test]
fn sets_order_their_members_and_nest_in_core_sets() {
    for executor in both_executors() {
        let log = run_logged(executor, |s| {
            s.configure_sets((Phase::First, Phase::Second).chain());
            s.add_systems((a.in_set(Phase::Second), b.in_set(Phase::First)));
        });
        assert_eq!(log, ["b", "a"]);
        let log = run_logged(executor, |s| {
            s.add_systems((
                a.in_set(CoreSet::PostUpdate),
                b.in_set(CoreSet::Update),
                c.in_set(CoreSet::PreUpdate),
            ));
        });
        assert_eq!(log, ["c", "b", "a"]);
    }
}

#[derive(Default)]
struct Paused(bool);

fn not_paused(paused: Res<Paused>) -> bool {
    !paused.0
}

#[test]
fn run_conditions_on_systems_and_sets() {
    let mut world = World::new();
    world.insert_resource(Log::default());
    world.insert_resource(Paused(true));
    let mut schedule = Schedule::new();
    schedule.configure_sets(Phase::First.run_if(not_paused));
    schedule.add_systems((a.run_if(not_paused), b.in_set(Phase::First), c));
    schedule.run(&mut world);
    assert_eq!(world.resource::<Log>().unwrap().0, ["c"]);
    world.resource_mut::<Paused>().unwrap().0 = false;
    schedule.run(&mut world);
    let mut log = world.resource::<Log>().unwrap().0.clone();
    log[1..].sort();
    assert_eq!(log, ["c", "a", "b", "c"]);
}

#[test]
fn locals_persist_per_system_and_options_tolerate_missing_resources() {
    fn counter(mut n: Local<u32>, mut log: ResMut<Log>, missing: Option<Res<Paused>>) {
        *n += 1;
        assert!(missing.is_none());
        if *n == 3 {
            log.0.push("third");
        }
    }
    let mut world = World::new();
    world.insert_resource(Log::default());
    let mut schedule = Schedule::new();
    schedule.add_systems(counter);
    for _ in 0..3 {
        schedule.run(&mut world);
    }
    assert_eq!(world.resource::<Log>().unwrap().0, ["third"]);
}

#[test]
fn queries_with_world_reads_and_exclusive_systems() {
    fn movement(mut q: Query<(&mut Position, &Velocity), Without<Frozen>>) {
        q.for_each(|(mut p, v)| p.0 += v.0);
    }
    fn census(world: &World, mut log: Local<usize>) {
        *log = world.len() as usize;
        assert!(*log >= 2);
    }
    fn spawner(world: &mut World) {
        world.spawn((Position(100.0), Velocity(0.0)));
    }
    for executor in both_executors() {
        let mut world = World::new();
        let moving = world.spawn((Position(0.0), Velocity(1.0)));
        let frozen = world.spawn((Position(0.0), Velocity(1.0), Frozen));
        let mut schedule = Schedule::new();
        schedule.set_executor(executor);
        schedule.add_systems((movement, census, spawner.after(movement)));
        schedule.run(&mut world);
        schedule.run(&mut world);
        assert_eq!(world.get::<Position>(moving), Ok(&Position(2.0)));
        assert_eq!(world.get::<Position>(frozen), Ok(&Position(0.0)));
        assert_eq!(world.len(), 4, "the exclusive system spawned once per run");
    }
}

#[test]
fn changed_filters_see_changes_since_the_systems_last_run() {
    #[derive(Default)]
    struct Seen(Vec<usize>);
    fn writer(mut q: Query<&mut Position>, mut turn: Local<u32>) {
        *turn += 1;
        if *turn == 2 {
            for mut p in q.iter_mut() {
                p.0 += 1.0;
            }
        }
    }
    fn watcher(q: Query<Entity, Changed<Position>>, mut seen: ResMut<Seen>) {
        seen.0.push(q.iter().count());
    }
    let mut world = World::new();
    world.spawn_batch((0..3).map(|i| (Position(i as f32),)));
    world.insert_resource(Seen::default());
    let mut schedule = Schedule::new();
    schedule.add_systems((writer, watcher.after(writer)));
    for _ in 0..3 {
        schedule.run(&mut world);
    }
    assert_eq!(world.resource::<Seen>().unwrap().0, [3, 3, 0]);
}

#[test]
fn aliasing_params_panic_naming_system_params_and_component() {
    fn bad(_a: Query<&mut Position>, _b: Query<&Position>) {}
    let mut world = World::new();
    let mut schedule = Schedule::new();
    schedule.add_systems(bad);
    let err = catch_unwind(AssertUnwindSafe(|| schedule.run(&mut world))).unwrap_err();
    let message = err.downcast_ref::<String>().unwrap();
    assert!(message.contains("bad"), "{message}");
    assert!(message.contains("Position"), "{message}");
    assert!(
        message.contains("Without"),
        "the message says how to fix it: {message}"
    );

    fn bad_res(_a: Res<Log>, _b: ResMut<Log>) {}
    let mut schedule = Schedule::new();
    schedule.add_systems(bad_res);
    let err = catch_unwind(AssertUnwindSafe(|| schedule.run(&mut world))).unwrap_err();
    let message = err.downcast_ref::<String>().unwrap();
    assert!(message.contains("Log"), "{message}");
    assert!(
        !message.contains("Without"),
        "no query advice for resources: {message}"
    );

    // A write beside `&World`, in either order, is refused with advice that fits.
    fn world_then_write(_w: &World, _q: Query<&mut Position>) {}
    fn write_then_world(_q: Query<&mut Position>, _w: &World) {}
    for message in [
        system_panic(|s| s.add_systems(world_then_write)),
        system_panic(|s| s.add_systems(write_then_world)),
    ] {
        assert!(
            message.contains("&mut World") && message.contains("&World"),
            "{message}"
        );
        assert!(!message.contains("Without"), "{message}");
    }
}

/// `T`'s name as messages print it, without module paths.
fn short<T: ?Sized>() -> String {
    tabula_core::short_type_name(std::any::type_name::<T>())
}

/// The advice of a query conflict: what follows "writes what the other reads or writes. ".
fn conflict_advice(message: &str) -> &str {
    let lead = "writes what the other reads or writes. ";
    let at = message
        .find(lead)
        .unwrap_or_else(|| panic!("not a conflict: {message}"));
    &message[at + lead.len()..]
}

#[test]
fn unfiltered_conflicting_queries_are_told_which_without_to_add() {
    struct Player;
    fn bare(_a: Query<&mut Position>, _b: Query<&Position>) {}
    let message = system_panic(|s| s.add_systems(bare));
    assert!(
        message.starts_with(&format!(
            "system `{}::unfiltered_conflicting_queries_are_told_which_without_to_add::bare`: parameter `",
            module_path!()
        )),
        "{message}"
    );
    assert!(message.contains("conflicts with parameter `"), "{message}");
    assert!(message.contains("` on `Position`"), "{message}");
    assert_eq!(
        conflict_advice(&message),
        "Add a `Without<..>` filter to one query so they cannot match the same entity, merge them into one \
         parameter, or put both in a `ParamSet` to use them one at a time."
    );
    // When one query requires a component the other does not touch, the advice names it.
    fn player_and_all(_players: Query<(&mut Position, &Player)>, _all: Query<&Position>) {}
    let message = system_panic(|s| s.add_systems(player_and_all));
    let player = short::<Player>();
    assert_eq!(
        conflict_advice(&message),
        format!(
            "One requires `{player}`: add `Without<{player}>` to the other so they cannot match \
             the same entity, merge them into one parameter, or put both in a `ParamSet` to use them one at a time."
        )
    );
}

/// The advice for queries whose filters exist but do not prove them disjoint, after this
/// explanation.
const FILTERS_DO_NOT_PROVE: &str = "Their filters do not prove them disjoint: one must require a \
     component (through `With<C>`, `&C` or `&mut C`, or every branch of an `Or`) that the other \
     excludes with `Without<C>`. ";

#[test]
fn overlapping_or_filters_are_told_why_they_do_not_separate_the_queries() {
    struct Player;
    struct Enemy;
    // `Enemy` without `Player` matches both.
    fn overlapping(
        _actors: Query<&mut Position, tabula_core::Or<(With<Player>, With<Enemy>)>>,
        _others: Query<&Position, Without<Player>>,
    ) {
    }
    let message = system_panic(|s| s.add_systems(overlapping));
    let others = short::<Query<&Position, Without<Player>>>();
    assert!(
        message.contains(&format!("parameter `{others}` conflicts with parameter `")),
        "{message}"
    );
    let enemy = short::<Enemy>();
    assert_eq!(
        conflict_advice(&message),
        format!(
            "{FILTERS_DO_NOT_PROVE}Add `Without<{enemy}>` to `{others}`, merge them into one \
             parameter, or put both in a `ParamSet` to use them one at a time."
        )
    );
    // Two `Or`s whose branches overlap: the second's `Player` branch meets the first's.
    fn two_ors(
        _a: Query<&mut Position, tabula_core::Or<(With<Player>, With<Enemy>)>>,
        _b: Query<&Position, tabula_core::Or<(With<Player>, With<Frozen>)>>,
    ) {
    }
    let message = system_panic(|s| s.add_systems(two_ors));
    assert_eq!(
        conflict_advice(&message),
        format!(
            "{FILTERS_DO_NOT_PROVE}Add `With<C>` to one query and `Without<C>` to the other, \
             merge them into one parameter, or put both in a `ParamSet` to use them one at a time."
        ),
        "no single `Without` closes both `Or`s"
    );
}

#[test]
fn with_and_without_on_unrelated_components_are_told_why_they_do_not_separate_the_queries() {
    struct Player;
    struct Enemy;
    fn unrelated(_players: Query<&mut Position, With<Player>>, _friends: Query<&Position, Without<Enemy>>) {}
    let message = system_panic(|s| s.add_systems(unrelated));
    let player = short::<Player>();
    assert_eq!(
        conflict_advice(&message),
        format!(
            "{FILTERS_DO_NOT_PROVE}One requires `{player}`: add `Without<{player}>` to the other, \
             merge them into one parameter, or put both in a `ParamSet` to use them one at a time."
        )
    );
    // Only exclusions, nothing required: requiring what one excludes separates them.
    fn two_withouts(
        _moving: Query<&mut Position, Without<Frozen>>,
        _alive: Query<&Position, Without<Enemy>>,
    ) {
    }
    let message = system_panic(|s| s.add_systems(two_withouts));
    let frozen = short::<Frozen>();
    assert_eq!(
        conflict_advice(&message),
        format!(
            "{FILTERS_DO_NOT_PROVE}One excludes `{frozen}`: add `With<{frozen}>` to the other, \
             merge them into one parameter, or put both in a `ParamSet` to use them one at a time."
        )
    );
    // Both require the same marker: neither can exclude it.
    fn same_marker(_a: Query<&mut Position, With<Player>>, _b: Query<&Position, With<Player>>) {}
    let message = system_panic(|s| s.add_systems(same_marker));
    assert_eq!(
        conflict_advice(&message),
        format!(
            "{FILTERS_DO_NOT_PROVE}Add `With<C>` to one query and `Without<C>` to the other, \
             merge them into one parameter, or put both in a `ParamSet` to use them one at a time."
        )
    );
}

#[test]
fn a_condition_missing_its_resource_names_the_system_it_guards() {
    fn guarded() {}
    for executor in both_executors() {
        let mut world = World::new();
        let mut schedule = Schedule::new();
        schedule.set_executor(executor);
        schedule.add_systems(guarded.run_if(not_paused));
        let err = catch_unwind(AssertUnwindSafe(|| schedule.run(&mut world))).unwrap_err();
        let message = err.downcast_ref::<String>().expect("a formatted panic message");
        assert!(
            message.contains("run condition `") && message.contains("not_paused"),
            "{executor:?}: {message}"
        );
        assert!(
            message.contains("of system `") && message.contains("guarded"),
            "{executor:?}: {message}"
        );
        assert!(message.contains("Paused"), "{executor:?}: {message}");
    }
    // An alias inside a condition is named the same way.
    fn aliasing_condition(_a: Res<Paused>, _b: ResMut<Paused>) -> bool {
        true
    }
    let message = system_panic(|s| s.add_systems(guarded.run_if(aliasing_condition)));
    assert!(
        message.starts_with("run condition `")
            && message.contains("of system `")
            && message.contains("guarded"),
        "{message}"
    );
}

/// The panic message of running a schedule built by `build` on an empty world.
fn system_panic(build: impl FnOnce(&mut Schedule) -> &mut Schedule) -> String {
    let mut world = World::new();
    let mut schedule = Schedule::new();
    build(&mut schedule);
    let err = catch_unwind(AssertUnwindSafe(|| schedule.run(&mut world))).unwrap_err();
    err.downcast_ref::<String>()
        .cloned()
        .expect("a formatted panic message")
}

#[test]
fn commands_beside_world_or_more_commands_are_fine() {
    // `Commands` only reserves ids (atomically) and records into its own queue, so it does
    // not alias `&World` or another `Commands`; it is still ordered against other systems.
    fn spawn_from_view(world: &World, mut commands: Commands, mut more: Commands) {
        let n = world.len();
        commands.spawn((n,));
        more.spawn((n + 100,));
    }
    fn view_then_commands(_c: Commands, world: &World) {
        assert!(world.len() < 100);
    }
    let mut world = World::new();
    let mut schedule = Schedule::new();
    schedule.add_systems((spawn_from_view, view_then_commands.after(spawn_from_view)));
    schedule.run(&mut world);
    let mut values: Vec<u32> = world.query::<&u32>().iter(&world).copied().collect();
    values.sort();
    assert_eq!(values, [0, 100]);
}

#[test]
fn disjoint_filters_do_not_conflict_within_or_between_systems() {
    fn split(
        mut moving: Query<&mut Position, Without<Frozen>>,
        mut frozen: Query<&mut Position, With<Frozen>>,
    ) {
        moving.for_each(|mut p| p.0 += 1.0);
        frozen.for_each(|mut p| p.0 -= 1.0);
    }
    fn only_frozen(mut q: Query<&mut Position, With<Frozen>>) {
        q.for_each(|mut p| p.0 -= 1.0);
    }
    fn only_moving(mut q: Query<&mut Position, Without<Frozen>>) {
        q.for_each(|mut p| p.0 += 1.0);
    }
    let mut world = World::new();
    let m = world.spawn((Position(0.0),));
    let f = world.spawn((Position(0.0), Frozen));
    let mut schedule = Schedule::new();
    schedule.add_systems((split, only_frozen, only_moving));
    schedule.run(&mut world);
    assert_eq!(
        (world.get::<Position>(m), world.get::<Position>(f)),
        (Ok(&Position(2.0)), Ok(&Position(-2.0)))
    );
    // only_frozen and only_moving are disjoint: no edge between them in the DOT graph.
    let dot = schedule.graph_dot(&mut world).unwrap();
    let edges = dot.lines().filter(|l| l.contains("->")).count();
    assert_eq!(
        edges, 2,
        "split conflicts with each, the two do not conflict:\n{dot}"
    );
}

#[test]
fn an_or_filter_whose_every_branch_is_excluded_does_not_conflict() {
    struct Player;
    struct Enemy;
    fn split(
        mut actors: Query<&mut Position, tabula_core::Or<(With<Player>, With<Enemy>)>>,
        scenery: Query<&Position, (Without<Player>, Without<Enemy>)>,
    ) {
        let lowest = scenery.iter().map(|p| p.0).fold(f32::MAX, f32::min);
        actors.for_each(|mut p| p.0 += lowest);
    }
    for executor in both_executors() {
        let mut world = World::new();
        let player = world.spawn((Position(1.0), Player));
        let enemy = world.spawn((Position(2.0), Enemy));
        let both = world.spawn((Position(3.0), Player, Enemy));
        let rock = world.spawn((Position(10.0),));
        let mut schedule = Schedule::new();
        schedule.set_executor(executor);
        schedule.add_systems(split);
        schedule.run(&mut world);
        let at = |e| world.get::<Position>(e).unwrap().0;
        assert_eq!(
            [at(player), at(enemy), at(both), at(rock)],
            [11.0, 12.0, 13.0, 10.0]
        );
    }
    // One branch left open (`Enemy` without `Player` matches both): still refused.
    fn overlapping(
        _actors: Query<&mut Position, tabula_core::Or<(With<Player>, With<Enemy>)>>,
        _others: Query<&Position, Without<Player>>,
    ) {
    }
    let message = system_panic(|s| s.add_systems(overlapping));
    assert!(
        message.contains("conflicts") && message.contains("Position"),
        "{message}"
    );
}

#[test]
fn ordering_cycles_are_errors_naming_the_systems() {
    let mut world = World::new();
    world.insert_resource(Log::default());
    let mut schedule = Schedule::new();
    schedule.add_systems((a.after(c), b.after(a), c.after(b)));
    let err = schedule.initialize(&mut world).unwrap_err();
    let ScheduleBuildError::Cycle(names) = &err else {
        panic!("not a cycle: {err}");
    };
    assert_eq!(names.len(), 3);
    let text = err.to_string();
    assert!(
        text.contains("::a") && text.contains("::b") && text.contains("::c"),
        "{text}"
    );
}

#[test]
fn a_cycle_is_named_even_with_systems_waiting_on_it() {
    let mut world = World::new();
    world.insert_resource(Log::default());
    let mut schedule = Schedule::new();
    // `c` waits on the cycle and is added first.
    schedule.add_systems((c.after(a), a.after(b), b.after(a)));
    let err = schedule.initialize(&mut world).unwrap_err();
    let ScheduleBuildError::Cycle(names) = &err else {
        panic!("not a cycle: {err}");
    };
    assert_eq!(names.len(), 2, "{err}");
    assert!(names[0].ends_with("::a") && names[1].ends_with("::b"), "{err}");
}

#[test]
fn a_system_ordered_before_itself_through_its_sets_is_named_with_the_sets() {
    #[derive(Debug, Clone, PartialEq, Eq, Hash)]
    struct Early;
    impl SystemSet for Early {}
    #[derive(Debug, Clone, PartialEq, Eq, Hash)]
    struct Late;
    impl SystemSet for Late {}
    let mut world = World::new();
    world.insert_resource(Log::default());
    let mut schedule = Schedule::new();
    schedule.configure_sets(Early.before(Late));
    schedule.add_systems(a.in_set(Early).in_set(Late));
    let err = schedule.initialize(&mut world).unwrap_err();
    assert!(
        matches!(&err, ScheduleBuildError::OrderedBeforeItself { system, before, after }
            if system.ends_with("::a") && before == "Early" && after == "Late"),
        "{err}"
    );
    let text = err.to_string();
    assert!(text.contains("`Early` is ordered before `Late`"), "{text}");
}

#[test]
fn a_cycle_through_empty_sets_is_named_with_them() {
    #[derive(Debug, Clone, PartialEq, Eq, Hash)]
    enum Stage {
        Early,
        Middle,
        Late,
    }
    impl SystemSet for Stage {}
    let mut world = World::new();
    // Middle -> Late -> Middle, with only Middle holding a system.
    let mut schedule = Schedule::new();
    schedule.configure_sets((Stage::Middle, Stage::Late).chain());
    schedule.configure_sets(Stage::Late.before(Stage::Middle));
    schedule.add_systems(a.in_set(Stage::Middle));
    let err = schedule.initialize(&mut world).unwrap_err();
    assert_eq!(
        err,
        ScheduleBuildError::Cycle(vec!["Middle".into(), "Late".into()])
    );
    assert!(err.to_string().contains("Middle -> Late -> Middle"), "{err}");

    // Through two empty sets, from a system.
    let mut schedule = Schedule::new();
    schedule.configure_sets((Stage::Early, Stage::Late).chain());
    schedule.add_systems(a.before(Stage::Early).after(Stage::Late));
    let err = schedule.initialize(&mut world).unwrap_err();
    assert!(
        matches!(&err, ScheduleBuildError::Cycle(names)
            if names.len() == 3 && names[0].ends_with("::a") && names[1..] == ["Early", "Late"]),
        "{err}"
    );

    // Empty sets alone: still a contradiction, refused before any system joins them.
    let mut schedule = Schedule::new();
    schedule.configure_sets((Stage::Early, Stage::Late).chain());
    schedule.configure_sets(Stage::Late.before(Stage::Early));
    schedule.add_systems(b);
    let err = schedule.initialize(&mut world).unwrap_err();
    assert!(
        matches!(&err, ScheduleBuildError::Cycle(names) if names.len() == 2),
        "{err}"
    );
}

#[test]
fn sets_without_systems_still_pass_their_order_on() {
    #[derive(Debug, Clone, PartialEq, Eq, Hash)]
    enum Stage {
        First,
        Middle,
        Last,
    }
    impl SystemSet for Stage {}
    for executor in both_executors() {
        // The core sets, with nothing in `Update`: c (PreUpdate) before a (PostUpdate),
        // though a was added first and both write the log.
        let mut world = World::new();
        world.insert_resource(Log::default());
        let mut schedule = Schedule::new();
        schedule.set_executor(executor);
        schedule.add_systems((a.in_set(CoreSet::PostUpdate), c.in_set(CoreSet::PreUpdate)));
        schedule.run(&mut world);
        assert_eq!(world.resource::<Log>().unwrap().0, ["c", "a"], "{executor:?}");

        // Two empty sets in a row, and a system ordered against an empty set.
        let mut world = World::new();
        world.insert_resource(Log::default());
        let mut schedule = Schedule::new();
        schedule.set_executor(executor);
        schedule.configure_sets((Stage::First, Stage::Middle, Stage::Last).chain());
        schedule.add_systems((
            a.in_set(Stage::Last),
            b.after(Stage::Middle),
            c.in_set(Stage::First),
        ));
        schedule.run(&mut world);
        let log = &world.resource::<Log>().unwrap().0;
        let at = |name| log.iter().position(|&n| n == name).unwrap();
        assert!(at("c") < at("a") && at("c") < at("b"), "{executor:?}: {log:?}");
    }
}

/// Reads the `Flag` resource.
fn flag_is_set(flag: Res<Flag>) -> bool {
    flag.0
}

/// True on its first run only.
fn first_time(mut done: Local<bool>) -> bool {
    !std::mem::replace(&mut *done, true)
}

#[derive(Default)]
struct Flag(bool);

#[test]
fn a_set_condition_configured_after_the_first_run_guards_the_sets_systems() {
    #[derive(Debug, Clone, PartialEq, Eq, Hash)]
    struct Guarded;
    impl SystemSet for Guarded {}
    for executor in both_executors() {
        let mut world = World::new();
        world.insert_resource(Log::default());
        world.insert_resource(Flag(false));
        let mut schedule = Schedule::new();
        schedule.set_executor(executor);
        schedule.add_systems((a.in_set(Guarded), b.run_if(first_time)));
        schedule.run(&mut world);
        schedule.configure_sets(Guarded.run_if(flag_is_set));
        schedule.run(&mut world);
        world.resource_mut::<Flag>().unwrap().0 = true;
        schedule.run(&mut world);
        // `a` ran in the first run and the last; `b`'s own condition kept its state
        // through the rebuild, so it ran once.
        assert_eq!(
            world.resource::<Log>().unwrap().0,
            ["a", "b", "a"],
            "{executor:?}"
        );
    }
}

#[test]
fn apply_deferred_obeys_its_run_condition() {
    fn spawn(mut commands: Commands) {
        commands.spawn((Position(0.0),));
    }
    fn count(q: Query<&Position>, mut seen: ResMut<Counts>) {
        seen.0.push(q.iter().count());
    }
    #[derive(Default)]
    struct Counts(Vec<usize>);
    for executor in both_executors() {
        for flag in [false, true] {
            let mut world = World::new();
            world.insert_resource(Flag(flag));
            world.insert_resource(Counts::default());
            let mut schedule = Schedule::new();
            schedule.set_executor(executor);
            // Automatic sync points are off, so no sync point follows `spawn` (the three are
            // ordered as added, by conflict): only `apply_deferred` can apply its command
            // before `count` runs.
            schedule.set_auto_sync(false);
            schedule.add_systems((spawn, apply_deferred.run_if(flag_is_set), count));
            schedule.run(&mut world);
            let seen = &world.resource::<Counts>().unwrap().0;
            assert_eq!(seen, &[usize::from(flag)], "{executor:?}, condition {flag}");
        }
    }
}

/// A deterministic simulation with conflicting and non-conflicting systems.
mod sim {
    use super::*;

    #[derive(Debug, Clone, Copy, PartialEq)]
    pub struct Energy(pub u64);
    #[derive(Default)]
    pub struct Total(pub u64);

    pub fn integrate(mut q: Query<(&mut Position, &Velocity)>) {
        q.for_each(|(mut p, v)| p.0 = (p.0 + v.0) % 1000.0);
    }
    pub fn steer(mut q: Query<(&mut Velocity, &Position)>) {
        q.for_each(|(mut v, p)| v.0 = if p.0 > 500.0 { -v.0.abs() } else { v.0.abs() + 0.5 });
    }
    pub fn drain(mut q: Query<(&mut Energy, &Position)>) {
        q.par_for_each_mut(|(mut e, p)| e.0 = e.0.wrapping_mul(31).wrapping_add(p.0 as u64));
    }
    pub fn total(q: Query<&Energy>, mut total: ResMut<Total>) {
        total.0 = q
            .iter()
            .fold(total.0, |acc, e| acc.wrapping_mul(7).wrapping_add(e.0));
    }
    pub fn world(n: u32) -> World {
        let mut world = World::new();
        world.spawn_batch(
            (0..n).map(|i| (Position(i as f32), Velocity((i % 7) as f32), Energy(u64::from(i)))),
        );
        world.insert_resource(Total::default());
        world
    }
}

#[test]
fn single_threaded_and_parallel_executors_give_identical_worlds() {
    let runs = if cfg!(miri) { 2 } else { 50 };
    let n = if cfg!(miri) { 50 } else { 5_000 };
    let mut results = Vec::new();
    for executor in both_executors() {
        let mut world = sim::world(n);
        let mut schedule = Schedule::new();
        schedule.set_executor(executor);
        schedule.add_systems((sim::integrate, sim::steer, sim::drain, sim::total));
        for _ in 0..runs {
            schedule.run(&mut world);
        }
        let mut q = world.query::<(&Position, &Velocity, &sim::Energy)>();
        let state: Vec<(u32, u32, u64)> = q
            .iter(&world)
            .map(|(p, v, e)| (p.0.to_bits(), v.0.to_bits(), e.0))
            .collect();
        results.push((state, world.resource::<sim::Total>().unwrap().0));
    }
    assert_eq!(results[0], results[1]);
}

#[test]
fn a_panicking_system_reaches_the_caller_and_leaves_the_world_usable() {
    fn boom(_q: Query<&Position>) {
        panic!("system failed");
    }
    for executor in both_executors() {
        let mut world = World::new();
        world.insert_resource(Log::default());
        world.spawn((Position(1.0),));
        let mut schedule = Schedule::new();
        schedule.set_executor(executor);
        schedule.add_systems((a, boom, b.after(boom), c.after(b)));
        let err = catch_unwind(AssertUnwindSafe(|| schedule.run(&mut world))).unwrap_err();
        assert_eq!(err.downcast_ref::<&str>(), Some(&"system failed"));
        let log = &world.resource::<Log>().unwrap().0;
        assert!(
            !log.contains(&"b") && !log.contains(&"c"),
            "nothing after the panic starts: {log:?}"
        );
        // The world is intact and another schedule runs on it.
        let mut other = Schedule::new();
        other.set_executor(executor);
        other.add_systems(c);
        other.run(&mut world);
        assert_eq!(world.resource::<Log>().unwrap().0.last(), Some(&"c"));
        assert_eq!(world.len(), 1);
    }
}

/// Spawns one `Velocity` per run, numbered by the run.
fn spawn_numbered(mut commands: Commands, mut run: Local<u32>) {
    *run += 1;
    commands.spawn((Velocity(*run as f32),));
}

/// Records a command that panics when applied, in the first run only.
fn panicking_command_once(mut commands: Commands, mut run: Local<u32>) {
    *run += 1;
    if *run == 1 {
        commands.add(|_: &mut World| panic!("command failed"));
    }
}

#[test]
fn a_panicking_command_aborts_the_run_and_drops_the_commands_not_yet_applied() {
    // The panicking buffer is applied before a later system's buffer, at the end of the run
    // or at a sync point; either way the run is aborted, and the later buffer must be dropped
    // with it, not applied by the next run.
    for executor in both_executors() {
        for at_sync_point in [false, true] {
            let mut world = World::new();
            let mut schedule = Schedule::new();
            schedule.set_executor(executor);
            if at_sync_point {
                schedule.add_systems((
                    panicking_command_once,
                    spawn_numbered,
                    apply_deferred.after(panicking_command_once).after(spawn_numbered),
                ));
            } else {
                schedule.add_systems((panicking_command_once, spawn_numbered));
            }
            let err = catch_unwind(AssertUnwindSafe(|| schedule.run(&mut world))).unwrap_err();
            assert_eq!(err.downcast_ref::<&str>(), Some(&"command failed"));
            schedule.run(&mut world);
            let mut spawned: Vec<f32> = world.query::<&Velocity>().iter(&world).map(|v| v.0).collect();
            spawned.sort_by(f32::total_cmp);
            assert_eq!(
                spawned,
                [2.0],
                "{executor:?}, sync point {at_sync_point}: the aborted run's unapplied spawn came back"
            );
        }
    }
}

#[test]
fn dot_and_trace_describe_the_schedule() {
    let mut world = World::new();
    world.insert_resource(Log::default());
    let mut schedule = Schedule::new();
    schedule.add_systems((a, b.after(a)));
    let dot = schedule.graph_dot(&mut world).unwrap();
    assert!(dot.starts_with("digraph schedule {"));
    assert!(
        dot.contains("label=\"a\"") && dot.contains("label=\"b\""),
        "{dot}"
    );
    assert!(
        dot.contains("n0 -> n1 [style=solid, label=\"a before b\""),
        "the edge says which constraint made it: {dot}"
    );
    schedule.set_tracing(true);
    schedule.run(&mut world);
    let trace = schedule.last_trace().unwrap();
    // The two systems, then the end-of-run application (nothing to apply here).
    let kinds: Vec<_> = trace.events.iter().map(|e| (e.kind, e.count)).collect();
    assert_eq!(
        kinds,
        [
            (TraceKind::System, 0),
            (TraceKind::System, 0),
            (TraceKind::ApplyAtEnd, 0)
        ]
    );
    let json = trace.to_chrome_json();
    assert!(
        json.starts_with("{\"traceEvents\":[") && json.contains("\"ph\":\"X\""),
        "{json}"
    );
    assert!(trace.parallelism() > 0.0);
}

#[test]
fn exclusive_systems_and_apply_deferred_are_ordered_with_everything() {
    let mut world = World::new();
    world.insert_resource(Log::default());
    let mut schedule = Schedule::new();
    fn exclusive(world: &mut World) {
        world.resource_mut::<Log>().unwrap().0.push("exclusive");
    }
    schedule.add_systems((a, exclusive, b, apply_deferred, c));
    let order = schedule.order(&mut world).unwrap();
    assert_eq!(order.len(), 5);
    schedule.run(&mut world);
    assert_eq!(world.resource::<Log>().unwrap().0, ["a", "exclusive", "b", "c"]);
    let system = tabula_schedule::IntoSystem::into_system(a);
    assert!(system.name().ends_with("::a"));
}

mod deferred {
    use super::*;
    use tabula_core::Commands;
    use tabula_schedule::{EventReader, EventWriter};

    #[derive(Default)]
    struct Seen(Vec<usize>);

    fn spawn_two(mut commands: Commands) {
        commands.spawn((Position(0.0),));
        commands.spawn((Position(1.0),));
    }
    fn count(q: Query<&Position>, mut seen: ResMut<Seen>) {
        seen.0.push(q.iter().count());
    }

    /// The entity the last `spawner` / `reserver` run made.
    #[derive(Default)]
    struct Spawned(Option<Entity>);

    fn spawner(mut commands: Commands, mut spawned: ResMut<Spawned>) {
        spawned.0 = Some(commands.spawn((Position(1.0),)).id());
    }
    fn tagger(mut commands: Commands, spawned: Res<Spawned>) {
        if let Some(entity) = spawned.0 {
            commands.entity(entity).insert((Velocity(2.0),));
        }
    }
    fn reserver(mut commands: Commands, mut spawned: ResMut<Spawned>) {
        spawned.0 = Some(commands.spawn_empty().id());
    }
    fn count_entities(q: Query<Entity>, mut seen: ResMut<Seen>) {
        seen.0.push(q.iter().count());
    }
    fn noop() {}

    #[test]
    fn buffers_apply_in_the_order_their_systems_ran() {
        // `tagger` is added first but runs last (it waits on `noop`, and no sync point
        // follows `noop`): its insert on the entity `spawner` made must apply after the
        // spawn, not turn the reservation into an entity the spawn then refuses.
        for executor in both_executors() {
            let mut world = World::new();
            world.init_resource::<Spawned>();
            let mut schedule = Schedule::new();
            schedule.set_executor(executor);
            schedule.add_systems((tagger.after(noop), spawner, noop));
            schedule.run(&mut world);
            assert_eq!(schedule.command_errors(), &[], "{executor:?}");
            let entity = world.resource::<Spawned>().unwrap().0.unwrap();
            assert_eq!(world.get::<Position>(entity), Ok(&Position(1.0)), "{executor:?}");
            assert_eq!(world.get::<Velocity>(entity), Ok(&Velocity(2.0)), "{executor:?}");
        }
    }

    #[test]
    fn entities_reserved_without_commands_exist_after_the_sync_point_and_the_run() {
        for executor in both_executors() {
            let mut world = World::new();
            world.init_resource::<Spawned>();
            world.init_resource::<Seen>();
            let mut schedule = Schedule::new();
            schedule.set_executor(executor);
            schedule.add_systems((reserver, count_entities.after(reserver)));
            schedule.run(&mut world);
            assert_eq!(
                world.resource::<Seen>().unwrap().0,
                [1],
                "{executor:?}: after the sync point"
            );
            let entity = world.resource::<Spawned>().unwrap().0.unwrap();
            assert!(world.contains(entity), "{executor:?}: after the run");
        }
    }

    #[test]
    fn ordered_successors_see_commands_through_a_sync_point() {
        for executor in both_executors() {
            let mut world = World::new();
            world.init_resource::<Seen>();
            let mut schedule = Schedule::new();
            schedule.set_executor(executor);
            schedule.add_systems((spawn_two, count.after(spawn_two)));
            schedule.run(&mut world);
            schedule.run(&mut world);
            assert_eq!(world.resource::<Seen>().unwrap().0, [2, 4]);
            let order = schedule.order(&mut world).unwrap();
            assert!(order.iter().any(|n| n.starts_with("sync after")), "{order:?}");
        }
    }

    #[test]
    fn unordered_systems_see_commands_at_the_end_of_the_run() {
        let mut world = World::new();
        world.init_resource::<Seen>();
        let mut schedule = Schedule::new();
        schedule.add_systems((count, spawn_two));
        schedule.run(&mut world);
        schedule.run(&mut world);
        assert_eq!(world.resource::<Seen>().unwrap().0, [0, 2]);
        assert_eq!(world.len(), 4);
    }

    #[test]
    fn commands_on_despawned_entities_are_skipped_and_reported() {
        #[derive(Default)]
        struct Target(Option<Entity>);
        fn despawn_twice(mut commands: Commands, target: Res<Target>) {
            let e = target.0.unwrap();
            commands.despawn(e);
            commands.insert(e, (Velocity(1.0),));
        }
        let mut world = World::new();
        let e = world.spawn((Position(0.0),));
        world.insert_resource(Target(Some(e)));
        let mut schedule = Schedule::new();
        schedule.add_systems(despawn_twice);
        schedule.run(&mut world);
        assert!(!world.contains(e));
        assert_eq!(schedule.command_errors().len(), 1);
        let skipped = &schedule.command_errors()[0];
        assert!(skipped.system().ends_with("despawn_twice"), "{skipped}");
        let message = skipped.to_string();
        assert!(message.contains(&format!("{e:?}")), "{message}");
        assert!(
            message.contains("despawn_twice"),
            "the system is named: {message}"
        );
    }

    #[test]
    fn entity_ids_are_the_same_under_both_executors() {
        fn spawner_a(mut commands: Commands, mut n: Local<u32>) {
            *n += 1;
            for i in 0..3 {
                commands.spawn((Position((*n * 10 + i) as f32),));
            }
        }
        fn spawner_b(mut commands: Commands, q: Query<(Entity, &Position)>) {
            for (e, p) in q.iter() {
                if (p.0 as u32).is_multiple_of(2) {
                    commands.despawn(e);
                }
            }
            commands.spawn((Velocity(0.0),));
        }
        let mut outcomes = Vec::new();
        for executor in both_executors() {
            let mut world = World::new();
            let mut schedule = Schedule::new();
            schedule.set_executor(executor);
            schedule.add_systems((spawner_a, spawner_b));
            for _ in 0..20 {
                schedule.run(&mut world);
            }
            let mut q = world.query::<(Entity, Option<&Position>)>();
            let mut state: Vec<_> = q
                .iter(&world)
                // By index and generation: the two executors' worlds have different tags.
                .map(|(e, p)| ((e.index(), e.generation()), p.map(|p| p.0.to_bits())))
                .collect();
            state.sort();
            outcomes.push(state);
            // The two command-recording systems are not ordered (they may run at once): each
            // reserves ids in its own lane, so the ids do not depend on which runs first.
            let dot = schedule.graph_dot(&mut world).unwrap();
            assert!(!dot.contains("n0 -> n1") && !dot.contains("n1 -> n0"), "{dot}");
        }
        assert_eq!(outcomes[0], outcomes[1]);
    }

    struct Ping(u32);
    #[derive(Default)]
    struct Received(Vec<(u32, u32)>);

    #[test]
    fn events_are_seen_for_two_runs_by_each_reader() {
        fn sender(mut pings: EventWriter<Ping>, mut run: Local<u32>) {
            *run += 1;
            if *run == 1 {
                pings.send(Ping(7));
            }
        }
        // Runs before the sender: sees the event only in the next run.
        fn early(mut pings: EventReader<Ping>, mut got: ResMut<Received>, mut run: Local<u32>) {
            *run += 1;
            got.0.extend(pings.read().map(|p| (*run, p.0)));
        }
        fn late(mut pings: EventReader<Ping>, mut got: ResMut<Received>, mut run: Local<u32>) {
            *run += 1;
            got.0.extend(pings.read().map(|p| (*run * 100, p.0)));
        }
        let mut world = World::new();
        world.init_resource::<Received>();
        let mut schedule = Schedule::new();
        schedule.add_systems((early.before(sender), sender, late.after(sender)));
        for _ in 0..4 {
            schedule.run(&mut world);
        }
        assert_eq!(world.resource::<Received>().unwrap().0, [(100, 7), (2, 7)]);
        assert!(
            world.resource::<tabula_core::Events<Ping>>().unwrap().is_empty(),
            "dropped after two updates"
        );
    }
}

// --- A query that writes what its tick filter watches ----------------------------------------

#[derive(Debug, Clone, Copy, PartialEq)]
struct Watched(u32);
#[derive(Debug, Clone, Copy, PartialEq)]
struct Other(u32);

/// `Query<&mut T, Changed<T>>` through every way a system reaches its items.
fn bump_changed(mut q: Query<&mut Watched, Changed<Watched>>, all: Query<Entity>) {
    let entities: Vec<Entity> = all.iter().collect();
    let n = q.count();
    {
        let mut items: Vec<_> = q.iter_mut().collect();
        for item in items.iter_mut() {
            item.0 += 1;
        }
        assert_eq!(items.len(), n);
    }
    if let [a, b, ..] = entities[..]
        && let Ok([mut a, mut b]) = q.get_many_mut([a, b])
    {
        a.0 += 1;
        b.0 += 1;
    }
    let _ = q.single_mut().map(|mut s| s.0 += 1);
    q.for_each(|mut w| w.0 += 1);
}

fn read_changed(q: Query<&Other, Changed<Watched>>) {
    let _ = q.iter().count();
}

#[test]
fn a_system_may_write_what_its_tick_filter_watches() {
    for kind in [ExecutorKind::SingleThreaded, ExecutorKind::Parallel] {
        let mut world = World::new();
        world.spawn_batch((0..6u32).map(|i| (Watched(i), Other(i))));
        let mut schedule = Schedule::new();
        schedule.set_executor(kind);
        schedule.add_systems((bump_changed, read_changed));
        for _ in 0..3 {
            schedule.run(&mut world);
        }
    }
    // The reader's filter reads what the writer writes, so they are ordered, not parallel.
    let mut world = World::new();
    let mut writer = IntoSystem::into_system(bump_changed);
    let mut reader = IntoSystem::into_system(read_changed);
    writer.initialize(&mut world);
    reader.initialize(&mut world);
    assert!(writer.access().conflicts_with(reader.access()));
}

#[test]
fn only_schedules_that_update_events_age_them() {
    struct Hit;
    #[derive(Default)]
    struct Seen(usize);
    fn send(mut hits: EventWriter<Hit>) {
        hits.send(Hit);
    }
    fn count(mut hits: EventReader<Hit>, mut seen: ResMut<Seen>) {
        seen.0 += hits.read().count();
    }
    // Two fixed steps per frame, then a frame schedule that reads.
    let frames = |fixed_updates_events: bool| {
        let mut world = World::new();
        world.add_event::<Hit>();
        world.init_resource::<Seen>();
        let mut fixed = Schedule::new();
        fixed.add_systems(send).set_update_events(fixed_updates_events);
        let mut frame = Schedule::new();
        frame.add_systems(count);
        for _ in 0..4 {
            fixed.run(&mut world);
            fixed.run(&mut world);
            frame.run(&mut world);
        }
        let stored = world.resource::<tabula_core::Events<Hit>>().unwrap().len();
        (world.resource::<Seen>().unwrap().0, stored)
    };
    // Aged at every step (and by the frame), the first step's event is gone before the
    // frame reads, and the second step's is gone after it.
    assert_eq!(frames(true), (4, 0));
    // Aged once per frame: every event is read, and the last frame's two are still stored.
    assert_eq!(frames(false), (8, 2));
}

#[test]
fn resource_change_detection_across_systems() {
    #[derive(Default)]
    struct Score(u32);
    #[derive(Default)]
    struct Seen(Vec<(bool, bool)>);
    #[derive(Default)]
    struct Step(u32);
    // Writes on even steps only; peeks (no write) on odd ones.
    fn scorer(mut score: ResMut<Score>, mut step: ResMut<Step>) {
        step.0 += 1;
        if step.0.is_multiple_of(2) {
            score.0 += 1;
        } else {
            let _peek = score.0;
            score.bypass_change_detection();
        }
    }
    fn watcher(score: Res<Score>, mut seen: ResMut<Seen>) {
        seen.0.push((score.is_added(), score.is_changed()));
    }
    for executor in both_executors() {
        let mut world = World::new();
        world.init_resource::<Score>();
        world.init_resource::<Seen>();
        world.init_resource::<Step>();
        let mut schedule = Schedule::new();
        schedule.set_executor(executor);
        schedule.add_systems((scorer, watcher).chain());
        for _ in 0..4 {
            schedule.run(&mut world);
        }
        // Between runs, from outside: `resource_mut` counts as a change.
        world.resource_mut::<Score>().unwrap();
        schedule.run(&mut world);
        assert_eq!(
            world.resource::<Seen>().unwrap().0,
            [
                (true, true),
                (false, true),
                (false, false),
                (false, true),
                (false, true)
            ],
            "{executor:?}"
        );
    }
}

#[test]
fn read_only_get_many_returns_every_item_or_the_first_error() {
    #[derive(Default)]
    struct Out(Vec<Result<[f32; 3], String>>);
    #[derive(Default)]
    struct Targets(Vec<[Entity; 3]>);
    fn look(points: Query<&Position>, targets: Res<Targets>, mut out: ResMut<Out>) {
        for &three in &targets.0 {
            let got = points.get_many(three);
            out.0
                .push(got.map(|items| items.map(|p| p.0)).map_err(|e| e.to_string()));
        }
    }
    let mut world = World::new();
    let a = world.spawn((Position(1.0),));
    let b = world.spawn((Position(2.0),));
    let no_position = world.spawn((Velocity(0.0),));
    let gone = world.spawn((Position(9.0),));
    world.despawn(gone).unwrap();
    world.insert_resource(Targets(vec![[a, b, a], [a, no_position, gone], [gone, a, b]]));
    world.init_resource::<Out>();
    let mut schedule = Schedule::new();
    schedule.add_systems(look);
    schedule.run(&mut world);
    let out = &world.resource::<Out>().unwrap().0;
    assert_eq!(out[0], Ok([1.0, 2.0, 1.0]), "repeats are fine when shared");
    let no_match = out[1].as_ref().unwrap_err();
    assert!(
        no_match.contains(&format!("{no_position:?}")),
        "the first error: {no_match}"
    );
    let missing = out[2].as_ref().unwrap_err();
    assert!(missing.contains(&format!("{gone:?}")), "{missing}");
}

#[test]
fn query_contains_works_beside_mutable_data() {
    #[derive(Default)]
    struct Found(Vec<bool>);
    #[derive(Default)]
    struct Probe(Vec<Entity>);
    fn check(mut frozen: Query<&mut Position, With<Frozen>>, probe: Res<Probe>, mut found: ResMut<Found>) {
        found.0 = probe.0.iter().map(|&e| frozen.contains(e)).collect();
        frozen.for_each(|mut p| p.0 += 1.0);
    }
    let mut world = World::new();
    let moving = world.spawn((Position(0.0),));
    let frozen = world.spawn((Position(0.0), Frozen));
    let gone = world.spawn((Position(0.0), Frozen));
    world.despawn(gone).unwrap();
    world.insert_resource(Probe(vec![moving, frozen, gone]));
    world.init_resource::<Found>();
    let mut schedule = Schedule::new();
    schedule.add_systems(check);
    schedule.run(&mut world);
    assert_eq!(world.resource::<Found>().unwrap().0, [false, true, false]);
    assert_eq!(world.get::<Position>(frozen), Ok(&Position(1.0)));
}
