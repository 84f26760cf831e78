//! Entity state machines: a change removes what the new state lacks, inserts what it adds,
//! leaves what both share through the same provider untouched (same value, no change mark,
//! no hook); hooks and the `EntityStateChanged` observer event fire; a change asked for
//! during a change waits for it; bad input is a clear error; random transitions against a
//! naive model; changes recorded by parallel systems give the same world with 1 and 4
//! threads.
//!
//! The swap and change-mark cases run with the state components in tables and in sparse sets
//! (see [`per_storage!`]); the model walks keep `B` and `C` sparse on every other seed.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use tabula::prelude::*;
use tabula::{CommandError, CommandQueue, EntityStateError, QueryState};

mod common;
use common::Rng;
use common::{Storage, per_storage};

#[derive(Clone, Debug, PartialEq, Default)]
struct Gun(u32);
#[derive(Clone, Debug, PartialEq, Default)]
struct Controls(u32);
#[derive(Clone, Debug, PartialEq)]
struct Sprite(&'static str);
#[derive(Clone, Debug, PartialEq)]
struct Wreck(u32);
#[derive(Clone, Debug, PartialEq)]
struct Position(u32);

fn ship_machine(hull: &Arc<Sprite>) -> EntityStateMachine {
    EntityStateMachine::new()
        .state("playing", |s| {
            s.with(Gun(10))
                .with_default::<Controls>()
                .with_shared(Arc::clone(hull))
        })
        .state("destroyed", |s| s.with(Wreck(3)).with_shared(Arc::clone(hull)))
        .state("respawning", |s| {
            s.with_default::<Controls>().with(Sprite("blinking"))
        })
}

/// A world with the state components stored as `storage` says.
fn world_with(storage: Storage) -> World {
    let mut world = World::new();
    if storage == Storage::Sparse {
        world.register_component::<Gun>().sparse_set();
        world.register_component::<Controls>().sparse_set();
        world.register_component::<Sprite>().sparse_set();
        world.register_component::<Wreck>().sparse_set();
    }
    world
}

per_storage!(
    a_change_swaps_components_and_leaves_shared_ones_untouched_and_unmarked,
    with_default_is_shared_and_a_different_provider_of_the_same_type_replaces,
    a_component_the_entity_lost_is_given_back_even_when_shared
);

/// Whether each query's component was marked changed since the query last looked.
fn changed<T: Component>(world: &World, q: &mut QueryState<Entity, Changed<T>>, e: Entity) -> bool {
    q.iter(world).any(|x| x == e)
}

fn a_change_swaps_components_and_leaves_shared_ones_untouched_and_unmarked(storage: Storage) {
    let hull = Arc::new(Sprite("hull"));
    let mut world = world_with(storage);
    let ship = world.spawn((ship_machine(&hull), Position(7)));
    assert_eq!(world.get::<EntityStateMachine>(ship).unwrap().current(), None);
    world.change_state(ship, "playing").unwrap();
    assert_eq!(world.get::<Gun>(ship), Ok(&Gun(10)));
    assert_eq!(world.get::<Controls>(ship), Ok(&Controls(0)));
    assert_eq!(world.get::<Sprite>(ship), Ok(&Sprite("hull")));

    world.get_mut::<Sprite>(ship).unwrap().0 = "dented hull";
    world.get_mut::<Controls>(ship).unwrap().0 = 5;
    let mut sprite_changed = world.query_filtered::<Entity, Changed<Sprite>>();
    let mut position_changed = world.query_filtered::<Entity, Changed<Position>>();
    let mut wreck_changed = world.query_filtered::<Entity, Changed<Wreck>>();
    assert!(changed(&world, &mut sprite_changed, ship));
    assert!(changed(&world, &mut position_changed, ship));
    assert!(!changed(&world, &mut wreck_changed, ship));

    world.change_state(ship, "destroyed").unwrap();
    assert!(!world.has::<Gun>(ship) && !world.has::<Controls>(ship));
    assert_eq!(world.get::<Wreck>(ship), Ok(&Wreck(3)));
    // Shared through the same Arc: the written value stays, and it is not marked changed.
    assert_eq!(world.get::<Sprite>(ship), Ok(&Sprite("dented hull")));
    assert!(
        !changed(&world, &mut sprite_changed, ship),
        "a shared component is not marked"
    );
    assert!(
        changed(&world, &mut wreck_changed, ship),
        "an added component is marked"
    );
    // Not in any state: never touched.
    assert_eq!(world.get::<Position>(ship), Ok(&Position(7)));
    assert!(!changed(&world, &mut position_changed, ship));
    let machine = world.get::<EntityStateMachine>(ship).unwrap();
    assert_eq!(machine.current(), Some("destroyed"));
    assert!(machine.is_in("destroyed"));
    assert_eq!(
        machine.states().collect::<Vec<_>>(),
        ["playing", "destroyed", "respawning"]
    );

    // Back to playing: a fresh gun and controls (they were removed), the hull still kept.
    world.change_state(ship, "playing").unwrap();
    assert_eq!(world.get::<Gun>(ship), Ok(&Gun(10)));
    assert_eq!(world.get::<Controls>(ship), Ok(&Controls(0)));
    assert!(!world.has::<Wreck>(ship));
    assert_eq!(world.get::<Sprite>(ship), Ok(&Sprite("dented hull")));
    assert!(!changed(&world, &mut sprite_changed, ship));
}

fn with_default_is_shared_and_a_different_provider_of_the_same_type_replaces(storage: Storage) {
    let hull = Arc::new(Sprite("hull"));
    let mut world = world_with(storage);
    let ship = world.spawn((ship_machine(&hull),));
    world.change_state(ship, "playing").unwrap();
    world.get_mut::<Controls>(ship).unwrap().0 = 4;
    let mut controls_changed = world.query_filtered::<Entity, Changed<Controls>>();
    let mut sprite_changed = world.query_filtered::<Entity, Changed<Sprite>>();
    assert!(changed(&world, &mut controls_changed, ship));
    assert!(changed(&world, &mut sprite_changed, ship));

    // playing -> respawning: Controls through with_default in both (kept); Sprite through
    // the shared Arc, then through `with` (another provider: replaced).
    world.change_state(ship, "respawning").unwrap();
    assert_eq!(world.get::<Controls>(ship), Ok(&Controls(4)));
    assert!(!changed(&world, &mut controls_changed, ship));
    assert_eq!(world.get::<Sprite>(ship), Ok(&Sprite("blinking")));
    assert!(changed(&world, &mut sprite_changed, ship));
    assert!(!world.has::<Gun>(ship));
}

fn a_component_the_entity_lost_is_given_back_even_when_shared(storage: Storage) {
    let hull = Arc::new(Sprite("hull"));
    let mut world = world_with(storage);
    let ship = world.spawn((ship_machine(&hull),));
    world.change_state(ship, "playing").unwrap();
    world.remove_one::<Sprite>(ship).unwrap();
    world.change_state(ship, "destroyed").unwrap();
    assert_eq!(world.get::<Sprite>(ship), Ok(&Sprite("hull")));
}

#[test]
fn hooks_fire_for_removed_added_and_replaced_components_only() {
    let log: Arc<Mutex<Vec<String>>> = Arc::default();
    let mut world = World::new();
    fn hooked<T: Component>(world: &mut World, log: &Arc<Mutex<Vec<String>>>, name: &'static str) {
        let mut registration = world.register_component::<T>();
        for (kind, label) in [
            (tabula::HookKind::Add, "add"),
            (tabula::HookKind::Insert, "insert"),
            (tabula::HookKind::Replace, "replace"),
            (tabula::HookKind::Remove, "remove"),
        ] {
            let log = Arc::clone(log);
            registration = registration.hook(kind, move |_: &mut HookWorld<'_>, _: HookContext| {
                log.lock().unwrap().push(format!("{label} {name}"));
            });
        }
    }
    hooked::<Gun>(&mut world, &log, "gun");
    hooked::<Controls>(&mut world, &log, "controls");
    hooked::<Sprite>(&mut world, &log, "sprite");
    hooked::<Wreck>(&mut world, &log, "wreck");
    let hull = Arc::new(Sprite("hull"));
    let ship = world.spawn((ship_machine(&hull),));
    let take = |log: &Arc<Mutex<Vec<String>>>| std::mem::take(&mut *log.lock().unwrap());

    world.change_state(ship, "playing").unwrap();
    assert_eq!(
        take(&log),
        [
            "add gun",
            "insert gun",
            "add controls",
            "insert controls",
            "add sprite",
            "insert sprite"
        ]
    );
    world.change_state(ship, "destroyed").unwrap();
    // Removals first (in the old state's order), then additions; the shared sprite: nothing.
    assert_eq!(
        take(&log),
        [
            "replace gun",
            "remove gun",
            "replace controls",
            "remove controls",
            "add wreck",
            "insert wreck"
        ]
    );
    world.change_state(ship, "respawning").unwrap();
    // The sprite's provider differs: replaced in place (no remove, no add).
    assert_eq!(
        take(&log),
        [
            "replace wreck",
            "remove wreck",
            "add controls",
            "insert controls",
            "replace sprite",
            "insert sprite"
        ]
    );
    // To the current state: nothing at all.
    world.change_state(ship, "respawning").unwrap();
    assert!(take(&log).is_empty());
}

#[derive(Default)]
struct Seen(Vec<(Entity, Option<String>, String, bool, bool)>);

fn seen(trigger: Trigger<EntityStateChanged>, ships: Query<(Has<Gun>, Has<Wreck>)>, mut seen: ResMut<Seen>) {
    let change = trigger.event();
    assert_eq!(trigger.target(), change.entity);
    let (gun, wreck) = ships.get(change.entity).unwrap();
    seen.0.push((
        change.entity,
        change.from.as_deref().map(str::to_owned),
        change.to.to_string(),
        gun,
        wreck,
    ));
}

#[test]
fn the_observer_event_fires_after_the_swap_from_world_and_commands() {
    let hull = Arc::new(Sprite("hull"));
    let mut world = World::new();
    world.init_resource::<Seen>();
    world.observe(seen);
    let ship = world.spawn((ship_machine(&hull),));
    world.change_state(ship, "playing").unwrap();
    let mut queue = CommandQueue::new();
    Commands::new(&mut queue, &world)
        .entity(ship)
        .change_state("destroyed")
        .change_state("destroyed");
    assert!(queue.apply(&mut world).is_empty());
    let seen = &world.resource::<Seen>().unwrap().0;
    assert_eq!(
        seen,
        &[
            (ship, None, "playing".to_owned(), true, false),
            (
                ship,
                Some("playing".to_owned()),
                "destroyed".to_owned(),
                false,
                true
            ),
        ],
        "one event per change (none for the change to the current state), seeing the new components"
    );
}

#[test]
fn bad_input_is_a_clear_error_and_changes_nothing() {
    let hull = Arc::new(Sprite("hull"));
    let mut world = World::new();
    let ship = world.spawn((ship_machine(&hull),));
    world.change_state(ship, "playing").unwrap();

    let error = world.change_state(ship, "docked").unwrap_err();
    assert!(
        matches!(&error, EntityStateError::UnknownState { entity, state, .. } if *entity == ship && state == "docked")
    );
    let text = error.to_string();
    assert!(
        text.contains(&format!("{ship:?}")) && text.contains("\"docked\""),
        "{text}"
    );
    assert!(
        text.contains("\"playing\", \"destroyed\", \"respawning\""),
        "{text}"
    );
    assert_eq!(
        world.get::<EntityStateMachine>(ship).unwrap().current(),
        Some("playing")
    );
    assert!(world.has::<Gun>(ship));

    let rock = world.spawn((Position(1),));
    let error = world.change_state(rock, "playing").unwrap_err();
    assert_eq!(error, EntityStateError::NoMachine(rock));
    assert!(error.to_string().contains(&format!("{rock:?}")));

    world.despawn(rock).unwrap();
    assert_eq!(
        world.change_state(rock, "playing"),
        Err(EntityStateError::Entity(EntityError::NoSuchEntity(rock)))
    );

    // Through commands: the same refusals, as command errors naming entity and state.
    let mut queue = CommandQueue::new();
    let mut commands = Commands::new(&mut queue, &world);
    commands.entity(ship).change_state("docked");
    commands.entity(rock).change_state("playing");
    let errors = queue.apply(&mut world);
    assert_eq!(errors.len(), 2, "{errors:?}");
    assert!(
        matches!(&errors[0], CommandError::Custom { command: "change_state", message } if message.contains("\"docked\"") && message.contains(&format!("{ship:?}"))),
        "{errors:?}"
    );
    assert_eq!(errors[1].entity(), Some(rock));
    assert_eq!(errors[1].command(), "change_state");
    assert_eq!(
        world.get::<EntityStateMachine>(ship).unwrap().current(),
        Some("playing")
    );
}

#[derive(Default)]
struct Changes(Vec<String>);

fn note_change(trigger: Trigger<EntityStateChanged>, mut changes: ResMut<Changes>) {
    let change = trigger.event();
    changes.0.push(format!(
        "{} -> {}",
        change.from.as_deref().unwrap_or("-"),
        change.to
    ));
}

/// A wreck schedules its own respawn the moment it appears: from a hook, through a command.
fn respawn_when_wrecked(world: &mut HookWorld<'_>, ctx: HookContext) {
    world.commands().entity(ctx.entity).change_state("respawning");
}

#[test]
fn a_change_asked_for_during_a_change_is_made_after_it_in_order() {
    let hull = Arc::new(Sprite("hull"));
    let mut world = World::new();
    world.init_resource::<Changes>();
    world.observe(note_change);
    world.register_component::<Wreck>().on_add(respawn_when_wrecked);
    let ship = world.spawn((ship_machine(&hull),));
    world.change_state(ship, "playing").unwrap();
    world.change_state(ship, "destroyed").unwrap();
    // The wreck's hook asked for "respawning" in the middle of the change to "destroyed":
    // that change finished first (its event too), then the queued one ran.
    assert_eq!(
        world.resource::<Changes>().unwrap().0,
        ["- -> playing", "playing -> destroyed", "destroyed -> respawning"]
    );
    assert_eq!(
        world.get::<EntityStateMachine>(ship).unwrap().current(),
        Some("respawning")
    );
    assert!(!world.has::<Wreck>(ship));
    assert_eq!(world.get::<Sprite>(ship), Ok(&Sprite("blinking")));
    assert_eq!(world.get::<Controls>(ship), Ok(&Controls(0)));
    // And the machine is free for the next change.
    world.change_state(ship, "playing").unwrap();
    assert!(world.has::<Gun>(ship));
}

#[test]
fn an_observer_that_changes_state_again_is_served_after_every_observer_saw_the_first() {
    fn bounce(trigger: Trigger<EntityStateChanged>, mut commands: Commands) {
        if &*trigger.event().to == "destroyed" {
            commands.entity(trigger.target()).change_state("respawning");
        }
    }
    let hull = Arc::new(Sprite("hull"));
    let mut world = World::new();
    world.init_resource::<Changes>();
    world.observe(bounce);
    world.observe(note_change);
    let ship = world.spawn((ship_machine(&hull),));
    world.change_state(ship, "playing").unwrap();
    world.change_state(ship, "destroyed").unwrap();
    assert_eq!(
        world.resource::<Changes>().unwrap().0,
        ["- -> playing", "playing -> destroyed", "destroyed -> respawning"]
    );
    assert!(world.get::<EntityStateMachine>(ship).unwrap().is_in("respawning"));
}

#[test]
fn a_panicking_hook_leaves_the_machine_usable() {
    let hull = Arc::new(Sprite("hull"));
    let mut world = World::new();
    world
        .register_component::<Wreck>()
        .on_add(|_: &mut HookWorld<'_>, _: HookContext| panic!("the wreck refuses"));
    let ship = world.spawn((ship_machine(&hull),));
    world.change_state(ship, "playing").unwrap();
    let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let _ = world.change_state(ship, "destroyed");
    }));
    assert!(panicked.is_err());
    // The next change is made, not queued behind the one that panicked.
    world.change_state(ship, "respawning").unwrap();
    assert!(world.get::<EntityStateMachine>(ship).unwrap().is_in("respawning"));
    assert_eq!(world.get::<Sprite>(ship), Ok(&Sprite("blinking")));
}

// ---------------------------------------------------------------------------------------
// Random transitions against a naive model.

#[derive(Clone, Debug, PartialEq)]
struct A(u32);
#[derive(Clone, Debug, PartialEq, Default)]
struct B(u32);
#[derive(Clone, Debug, PartialEq)]
struct C(u32);
#[derive(Clone, Debug, PartialEq)]
struct D(u32);

/// How the model describes a provider: (component, provider id, value on entry).
type Spec = (char, u32, u32);

/// Three states: A by value everywhere (each its own provider), B by default in 0 and 1, C
/// shared by 0 and 1 and by value in 2, D made by a function in 2.
fn model_machine() -> (EntityStateMachine, [Vec<Spec>; 3]) {
    let c = Arc::new(C(30));
    let machine = EntityStateMachine::new()
        .state("zero", |s| {
            s.with(A(10)).with_default::<B>().with_shared(Arc::clone(&c))
        })
        .state("one", |s| {
            s.with_shared(Arc::clone(&c)).with(A(11)).with_default::<B>()
        })
        .state("two", |s| s.with(C(32)).with_fn(|| D(40)).with(A(12)));
    let specs = [
        vec![('A', 1, 10), ('B', 100, 0), ('C', 200, 30)],
        vec![('C', 200, 30), ('A', 2, 11), ('B', 100, 0)],
        vec![('C', 3, 32), ('D', 4, 40), ('A', 5, 12)],
    ];
    (machine, specs)
}

fn read(world: &World, e: Entity) -> BTreeMap<char, u32> {
    let mut out = BTreeMap::new();
    if let Ok(v) = world.get::<A>(e) {
        out.insert('A', v.0);
    }
    if let Ok(v) = world.get::<B>(e) {
        out.insert('B', v.0);
    }
    if let Ok(v) = world.get::<C>(e) {
        out.insert('C', v.0);
    }
    if let Ok(v) = world.get::<D>(e) {
        out.insert('D', v.0);
    }
    out
}

#[test]
fn random_transitions_match_a_naive_model() {
    const NAMES: [&str; 3] = ["zero", "one", "two"];
    // Under Miri (which checks the structural moves' unsafe code) a few short walks: the
    // full run takes minutes there.
    let (seeds, steps) = if cfg!(miri) { (3, 40) } else { (20, 200) };
    for seed in 1..=seeds {
        let mut rng = Rng(seed);
        let (machine, specs) = model_machine();
        let mut world = World::new();
        // Every other walk keeps `B` and `C` (one by default, one shared) in sparse sets.
        if seed % 2 == 0 {
            world.register_component::<B>().sparse_set();
            world.register_component::<C>().sparse_set();
        }
        let e = world.spawn((machine,));
        let mut model: BTreeMap<char, u32> = BTreeMap::new();
        let mut current: Option<usize> = None;
        let mut marks = (
            world.query_filtered::<Entity, Changed<A>>(),
            world.query_filtered::<Entity, Changed<B>>(),
            world.query_filtered::<Entity, Changed<C>>(),
            world.query_filtered::<Entity, Changed<D>>(),
        );
        for step in 0..steps {
            match rng.below(4) {
                0 | 1 => {
                    let to = rng.below(3);
                    // Clear the marks, change, then read which components were marked.
                    let _ = (
                        changed(&world, &mut marks.0, e),
                        changed(&world, &mut marks.1, e),
                        changed(&world, &mut marks.2, e),
                        changed(&world, &mut marks.3, e),
                    );
                    world.change_state(e, NAMES[to]).unwrap();
                    let mut expected_marked = Vec::new();
                    if current != Some(to) {
                        let old: &[Spec] = current.map_or(&[], |i| &specs[i]);
                        let new = &specs[to];
                        for &(c, _, _) in old {
                            if !new.iter().any(|n| n.0 == c) {
                                model.remove(&c);
                            }
                        }
                        for &(c, provider, value) in new {
                            let shared = old.iter().any(|o| o.0 == c && o.1 == provider);
                            if !(shared && model.contains_key(&c)) {
                                model.insert(c, value);
                                expected_marked.push(c);
                            }
                        }
                        current = Some(to);
                    }
                    let mut marked = Vec::new();
                    for (c, was) in [
                        ('A', changed(&world, &mut marks.0, e)),
                        ('B', changed(&world, &mut marks.1, e)),
                        ('C', changed(&world, &mut marks.2, e)),
                        ('D', changed(&world, &mut marks.3, e)),
                    ] {
                        if was {
                            marked.push(c);
                        }
                    }
                    expected_marked.sort_unstable();
                    assert_eq!(marked, expected_marked, "seed {seed} step {step}: marks");
                }
                2 => {
                    // Write a value the entity has.
                    let value = rng.below(1000) as u32;
                    let which = ['A', 'B', 'C', 'D'][rng.below(4)];
                    if model.contains_key(&which) {
                        match which {
                            'A' => world.get_mut::<A>(e).unwrap().0 = value,
                            'B' => world.get_mut::<B>(e).unwrap().0 = value,
                            'C' => world.get_mut::<C>(e).unwrap().0 = value,
                            _ => world.get_mut::<D>(e).unwrap().0 = value,
                        }
                        model.insert(which, value);
                    }
                }
                _ => {
                    // Take a component away behind the machine's back.
                    let which = ['A', 'B', 'C', 'D'][rng.below(4)];
                    if model.remove(&which).is_some() {
                        match which {
                            'A' => drop(world.remove_one::<A>(e).unwrap()),
                            'B' => drop(world.remove_one::<B>(e).unwrap()),
                            'C' => drop(world.remove_one::<C>(e).unwrap()),
                            _ => drop(world.remove_one::<D>(e).unwrap()),
                        }
                    }
                }
            }
            assert_eq!(read(&world, e), model, "seed {seed} step {step}");
            assert_eq!(
                world.get::<EntityStateMachine>(e).unwrap().current(),
                current.map(|i| NAMES[i]),
                "seed {seed} step {step}"
            );
        }
    }
}

// ---------------------------------------------------------------------------------------
// Determinism: changes recorded by parallel systems.

#[derive(Clone, Copy, Debug, PartialEq)]
struct Team(u32);

/// Each team's system moves its ships along playing -> destroyed -> respawning -> playing
/// every few runs, spawning a marker when one is destroyed (so entity ids depend on the
/// order commands apply in). The systems only read, so they run side by side.
fn team_system(team: u32) -> impl FnMut(Local<u32>, Commands, Query<(Entity, &Team, &EntityStateMachine)>) {
    move |mut runs: Local<u32>, mut commands: Commands, ships: Query<(Entity, &Team, &EntityStateMachine)>| {
        *runs += 1;
        for (e, t, machine) in ships.iter() {
            if t.0 != team || !(*runs + e.index()).is_multiple_of(2 + e.index() % 3) {
                continue;
            }
            let next = match machine.current() {
                Some("playing") => {
                    commands.spawn((Position(e.index()),));
                    "destroyed"
                }
                Some("destroyed") => "respawning",
                _ => "playing",
            };
            commands.entity(e).change_state(next);
        }
    }
}

type Row = (
    u64,
    Option<String>,
    Option<u32>,
    Option<u32>,
    Option<String>,
    Option<u32>,
);

fn run_teams(threads: usize) -> Vec<Row> {
    let hull = Arc::new(Sprite("hull"));
    let machine = ship_machine(&hull);
    let mut world = World::with_tag(5);
    for i in 0..40 {
        world.spawn((machine.clone(), Team(i % 4)));
    }
    let mut schedule = Schedule::new();
    schedule.add_systems((team_system(0), team_system(1), team_system(2), team_system(3)));
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap();
    pool.install(|| {
        for _ in 0..30 {
            schedule.run(&mut world);
        }
    });
    let mut rows: Vec<Row> = world
        .query::<(
            Entity,
            Option<&EntityStateMachine>,
            Option<&Gun>,
            Option<&Wreck>,
            Option<&Sprite>,
            Option<&Position>,
        )>()
        .iter(&world)
        .map(|(e, m, g, w, s, p)| {
            (
                e.to_bits(),
                m.and_then(|m| m.current().map(str::to_owned)),
                g.map(|g| g.0),
                w.map(|w| w.0),
                s.map(|s| s.0.to_owned()),
                p.map(|p| p.0),
            )
        })
        .collect();
    rows.sort_by_key(|r| r.0);
    rows
}

#[test]
#[cfg_attr(
    miri,
    ignore = "starts rayon pools (crossbeam-epoch fails Stacked Borrows); safe code over the executor, which the scheduler's Miri tests cover"
)]
fn state_changes_from_parallel_systems_give_the_same_world_with_one_and_four_threads() {
    let one = run_teams(1);
    let four = run_teams(4);
    assert!(one.iter().any(|r| r.1.as_deref() == Some("destroyed")));
    assert!(one.iter().any(|r| r.1.as_deref() == Some("respawning")));
    assert!(one.len() > 40, "wreck markers were spawned");
    assert_eq!(one, four);
}
