//! Templates: extending and overriding, children through `Parent`/`Children`, batches,
//! `Commands` and `ParallelCommands`, hooks, observers and required components as for a
//! bundle spawn, one row move per entity, errors that name the template; spawns recorded by
//! parallel systems give the same world with 1 and 4 threads.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use tabula::prelude::*;
use tabula::{CommandError, CommandQueue, HookKind, ParallelCommandQueue, TemplateError};

mod common;

#[derive(Clone, Debug, PartialEq)]
struct Hull(u32);
#[derive(Clone, Debug, PartialEq, Default)]
struct Speed(u32);
#[derive(Clone, Debug, PartialEq)]
struct Sprite(&'static str);
#[derive(Clone, Debug, PartialEq)]
struct Turret(u8);
#[derive(Clone, Debug, PartialEq)]
struct Boss;

fn ship() -> Template {
    Template::new("ship")
        .with(Hull(100))
        .with_default::<Speed>()
        .with_shared(Arc::new(Sprite("ship")))
}

// Building, extending, overriding.

#[test]
fn a_template_spawns_its_components() {
    let mut world = World::new();
    let e = world.spawn_template(&ship());
    assert_eq!(world.get::<Hull>(e), Ok(&Hull(100)));
    assert_eq!(world.get::<Speed>(e), Ok(&Speed(0)));
    assert_eq!(world.get::<Sprite>(e), Ok(&Sprite("ship")));
    assert_eq!(world.entity(e).unwrap().archetype().component_ids().len(), 3);
}

#[test]
fn each_entity_gets_its_own_value() {
    let mut world = World::new();
    let t = ship();
    let (a, b) = (world.spawn_template(&t), world.spawn_template(&t));
    world.get_mut::<Hull>(a).unwrap().0 = 1;
    assert_eq!(world.get::<Hull>(b), Ok(&Hull(100)));
}

#[test]
fn listing_a_type_again_keeps_the_last_value() {
    let t = Template::new("t").with(Hull(1)).with(Speed(2)).with(Hull(3));
    assert_eq!(t.components().count(), 2);
    let mut world = World::new();
    let e = world.spawn_template(&t);
    assert_eq!(world.get::<Hull>(e), Ok(&Hull(3)));
}

#[test]
fn an_extending_template_inherits_and_overrides() {
    let boss = Template::extending("boss", &ship()).with(Hull(900)).with(Boss);
    assert_eq!(boss.bases().collect::<Vec<_>>(), ["ship"]);
    assert!(boss.has::<Speed>() && boss.has::<Boss>());
    let mut world = World::new();
    let e = world.spawn_template(&boss);
    assert_eq!(world.get::<Hull>(e), Ok(&Hull(900)));
    assert_eq!(world.get::<Speed>(e), Ok(&Speed(0)));
    assert_eq!(world.get::<Sprite>(e), Ok(&Sprite("ship")));
    assert!(world.has::<Boss>(e));
}

#[test]
fn own_values_win_whether_listed_before_or_after_extends() {
    let before = Template::new("before").with(Hull(7)).extends(&ship());
    let after = Template::new("after").extends(&ship()).with(Hull(7));
    let mut world = World::new();
    for t in [before, after] {
        let e = world.spawn_template(&t);
        assert_eq!(world.get::<Hull>(e), Ok(&Hull(7)), "{t:?}");
    }
}

#[test]
fn a_later_base_wins_over_an_earlier_one_and_chains_inherit() {
    let a = Template::new("a").with(Hull(1)).with(Speed(1));
    let b = Template::new("b").with(Hull(2));
    let ab = Template::new("ab").extends(&a).extends(&b);
    let abc = Template::extending("abc", &ab).with(Turret(3));
    let mut world = World::new();
    let e = world.spawn_template(&abc);
    assert_eq!(world.get::<Hull>(e), Ok(&Hull(2)));
    assert_eq!(world.get::<Speed>(e), Ok(&Speed(1)));
    assert_eq!(world.get::<Turret>(e), Ok(&Turret(3)));
}

#[test]
fn changing_a_base_later_does_not_change_a_template_that_extended_it() {
    let base = Template::new("base").with(Hull(1));
    let derived = Template::extending("derived", &base);
    let _base = base.with(Hull(2));
    let mut world = World::new();
    let e = world.spawn_template(&derived);
    assert_eq!(world.get::<Hull>(e), Ok(&Hull(1)));
}

#[test]
fn with_fn_is_called_once_per_entity() {
    let calls = Arc::new(AtomicU32::new(0));
    let counter = Arc::clone(&calls);
    let t = Template::new("t").with_fn(move || Hull(counter.fetch_add(1, Ordering::Relaxed)));
    let mut world = World::new();
    let ids = world.spawn_template_batch(&t, 5);
    let hulls: Vec<u32> = ids.iter().map(|&e| world.get::<Hull>(e).unwrap().0).collect();
    assert_eq!(hulls, [0, 1, 2, 3, 4]);
    assert_eq!(calls.load(Ordering::Relaxed), 5);
}

#[test]
fn an_empty_template_spawns_an_empty_entity() {
    let mut world = World::new();
    let e = world.spawn_template(&Template::new("nothing"));
    assert!(world.contains(e));
    assert_eq!(world.entity(e).unwrap().archetype().component_ids().len(), 0);
}

#[test]
fn a_panicking_value_leaves_the_world_unchanged() {
    let t = Template::new("t")
        .with(Hull(1))
        .with_fn(|| -> Speed { panic!("no speed") });
    let mut world = World::new();
    let spawned = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| world.spawn_template(&t)));
    assert!(spawned.is_err());
    assert!(world.is_empty());
    let e = world.spawn_template(&ship());
    assert_eq!(world.get::<Hull>(e), Ok(&Hull(100)));
}

// One move.

#[test]
fn a_spawn_makes_no_intermediate_archetype() {
    let mut world = World::new();
    let before = world.archetypes().count();
    world.spawn_template(&ship());
    // Only the archetype of the whole set is new: one component at a time would have made
    // one per prefix.
    assert_eq!(world.archetypes().count(), before + 1);
}

// Children.

#[test]
fn children_are_spawned_under_the_entity_in_order() {
    let t = ship()
        .with_child(Template::new("left").with(Turret(1)))
        .with_child(
            Template::new("right")
                .with(Turret(2))
                .with_child(Template::new("barrel").with(Hull(5))),
        );
    let mut world = World::new();
    let e = world.spawn_template(&t);
    let children = world.children(e).unwrap().to_vec();
    assert_eq!(children.len(), 2);
    assert_eq!(world.get::<Turret>(children[0]), Ok(&Turret(1)));
    assert_eq!(world.get::<Turret>(children[1]), Ok(&Turret(2)));
    assert_eq!(world.parent(children[0]), Ok(Some(e)));
    let barrel = world.children(children[1]).unwrap()[0];
    assert_eq!(world.get::<Hull>(barrel), Ok(&Hull(5)));
    assert_eq!(world.root(barrel), Ok(e));
    assert_eq!(world.len(), 4);
    world.despawn_recursive(e).unwrap();
    assert!(world.is_empty());
}

#[test]
fn children_are_inherited_before_the_templates_own() {
    let base = Template::new("base").with_child(Template::new("a").with(Turret(1)));
    let derived = Template::extending("derived", &base).with_child(Template::new("b").with(Turret(2)));
    assert_eq!(derived.children().len(), 2);
    let mut world = World::new();
    let e = world.spawn_template(&derived);
    let turrets: Vec<u8> = (world.children(e).unwrap().iter())
        .map(|&c| world.get::<Turret>(c).unwrap().0)
        .collect();
    assert_eq!(turrets, [1, 2]);
}

#[test]
fn a_child_template_listing_a_parent_is_attached_to_the_spawned_entity() {
    let mut world = World::new();
    let elsewhere = world.spawn(());
    let child = Template::new("child").with(Parent::new(elsewhere));
    let e = world.spawn_template(&Template::new("root").with_child(child));
    let c = world.children(e).unwrap()[0];
    assert_eq!(world.parent(c), Ok(Some(e)));
    assert!(world.children(elsewhere).is_err() || world.children(elsewhere).unwrap().is_empty());
}

// Batches.

#[test]
fn a_batch_spawns_count_entities_with_their_children() {
    let t = ship().with_child(Template::new("turret").with(Turret(0)));
    let mut world = World::new();
    let ids = world.spawn_template_batch(&t, 50);
    assert_eq!(ids.len(), 50);
    assert_eq!(world.len(), 100);
    for &e in &ids {
        assert_eq!(world.get::<Hull>(e), Ok(&Hull(100)));
        assert_eq!(world.children(e).unwrap().len(), 1);
    }
    assert!(world.spawn_template_batch(&t, 0).is_empty());
}

// Registry and errors.

#[test]
fn registered_templates_spawn_by_name() {
    let mut world = World::new();
    assert!(world.register_template(ship()).is_none());
    let e = world.spawn_template_named("ship").unwrap();
    assert_eq!(world.get::<Hull>(e), Ok(&Hull(100)));
    let replaced = world.register_template(Template::new("ship").with(Hull(1)));
    assert_eq!(replaced.map(|t| t.components().count()), Some(3));
    let e = world.spawn_template_named("ship").unwrap();
    assert_eq!(world.get::<Hull>(e), Ok(&Hull(1)));
    assert!(!world.has::<Speed>(e));
}

#[test]
fn an_unknown_name_is_an_error_listing_the_known_ones() {
    let mut world = World::new();
    let error = world.spawn_template_named("ship").unwrap_err();
    assert!(matches!(&error, TemplateError::Unknown { name, known } if name == "ship" && known.is_empty()));
    assert!(error.to_string().contains("none is registered"), "{error}");
    world.register_template(ship());
    world.register_template(Template::new("rock"));
    let error = world.spawn_template_named("shp").unwrap_err();
    assert_eq!(
        error.to_string(),
        r#"no template named "shp"; the templates registered are ["ship", "rock"]"#
    );
    assert_eq!(world.len(), 0, "nothing spawned");
}

// Commands.

#[test]
fn commands_spawn_a_template_at_the_reserved_id() {
    let mut world = World::new();
    let t = ship().with_child(Template::new("turret").with(Turret(1)));
    let mut queue = CommandQueue::new();
    let mut commands = Commands::new(&mut queue, &world);
    let e = commands.spawn_template(&t).insert((Boss,)).id();
    assert!(!world.contains(e));
    assert!(queue.apply(&mut world).is_empty());
    assert_eq!(world.get::<Hull>(e), Ok(&Hull(100)));
    assert!(world.has::<Boss>(e));
    assert_eq!(world.children(e).unwrap().len(), 1);
}

#[test]
fn commands_spawn_by_name_and_report_an_unknown_one() {
    let mut world = World::new();
    world.register_template(ship());
    let mut queue = CommandQueue::new();
    let mut commands = Commands::new(&mut queue, &world);
    let known = commands.spawn_template_named("ship").id();
    let unknown = commands.spawn_template_named("frigate").id();
    let errors = queue.apply(&mut world);
    assert_eq!(world.get::<Hull>(known), Ok(&Hull(100)));
    assert!(
        !world.contains(unknown),
        "the reservation does not outlive the error"
    );
    assert_eq!(errors.len(), 1);
    assert!(matches!(
        &errors[0],
        CommandError::Custom {
            command: "spawn_template",
            ..
        }
    ));
    assert!(errors[0].to_string().contains("\"frigate\""), "{}", errors[0]);
}

#[test]
fn a_command_spawn_of_a_despawned_reservation_is_an_error() {
    let mut world = World::new();
    let mut queue = CommandQueue::new();
    let e = Commands::new(&mut queue, &world).spawn_template(&ship()).id();
    world.flush();
    world.despawn(e).unwrap();
    let errors = queue.apply(&mut world);
    assert!(
        matches!(&errors[..], [CommandError::Entity { command: "spawn_template", entity, .. }] if *entity == e),
        "{errors:?}"
    );
    assert!(world.is_empty());
}

#[test]
fn parallel_commands_spawn_templates_in_row_order() {
    let mut world = World::new();
    world.register_template(ship());
    let t = Template::new("numbered").with_fn(|| Turret(0));
    let queue = ParallelCommandQueue::new();
    for i in 0..3u8 {
        queue.command_scope(|commands| {
            commands.spawn_template(&t);
            commands.spawn_template_named("ship");
            commands.add(move |world: &mut World| {
                world.spawn((Turret(i + 10),));
            });
        });
    }
    queue.command_scope(|commands| commands.spawn_template_named("nope"));
    let mut queue = queue;
    let errors = queue.apply(&mut world);
    assert_eq!(errors.len(), 1);
    assert_eq!(world.len(), 9);
    // Applied in the order recorded: ids are taken one after the other.
    let mut turrets: Vec<(u32, u8)> = (world.query::<(Entity, &Turret)>().iter(&world))
        .map(|(e, t)| (e.index(), t.0))
        .collect();
    turrets.sort_unstable();
    let turrets: Vec<u8> = turrets.into_iter().map(|(_, t)| t).collect();
    assert_eq!(turrets, [0, 10, 0, 11, 0, 12]);
}

// Hooks, observers, required components.

#[derive(Default)]
struct Log(Vec<String>);

#[test]
fn hooks_run_as_for_a_bundle_spawn() {
    fn log_of(world: &mut World, spawn: impl FnOnce(&mut World) -> Entity) -> Vec<String> {
        world.insert_resource(Log::default());
        let e = spawn(world);
        let log = std::mem::take(&mut world.resource_mut::<Log>().unwrap().0);
        assert!(world.contains(e));
        log
    }
    fn hook(
        kind: HookKind,
        name: &'static str,
    ) -> impl Fn(&mut HookWorld, HookContext) + Send + Sync + 'static {
        move |world: &mut HookWorld, ctx: HookContext| {
            let seen = (world.has::<Hull>(ctx.entity), world.has::<Speed>(ctx.entity));
            let line = format!("{kind:?} {name} {seen:?}");
            world.resource_mut::<Log>().unwrap().0.push(line);
        }
    }
    let make = || {
        let mut world = World::new();
        (world.register_component::<Hull>())
            .on_add(hook(HookKind::Add, "hull"))
            .on_insert(hook(HookKind::Insert, "hull"));
        (world.register_component::<Speed>())
            .on_add(hook(HookKind::Add, "speed"))
            .on_insert(hook(HookKind::Insert, "speed"));
        world
    };
    let bundle = log_of(&mut make(), |w| w.spawn((Speed(0), Hull(1))));
    let template = log_of(&mut make(), |w| {
        w.spawn_template(&Template::new("t").with_default::<Speed>().with(Hull(1)))
    });
    assert_eq!(bundle.len(), 4);
    assert!(
        bundle.iter().all(|line| line.ends_with("(true, true)")),
        "{bundle:?}"
    );
    assert_eq!(template, bundle);
}

#[test]
fn hook_commands_are_applied_before_the_spawn_returns() {
    let mut world = World::new();
    world
        .register_component::<Boss>()
        .on_add(|world: &mut HookWorld, ctx: HookContext| {
            world.commands().entity(ctx.entity).insert((Turret(9),));
        });
    let e = world.spawn_template(&Template::new("boss").with(Boss));
    assert_eq!(world.get::<Turret>(e), Ok(&Turret(9)));
}

#[test]
fn observers_see_the_whole_entity() {
    fn on_hull(trigger: Trigger<OnAdd<Hull>>, ships: Query<(&Hull, &Speed)>, mut log: ResMut<Log>) {
        let (hull, speed) = ships.get(trigger.target()).unwrap();
        log.0.push(format!("{} {}", hull.0, speed.0));
    }
    let mut world = World::new();
    world.init_resource::<Log>();
    world.observe(on_hull);
    world.spawn_template(&ship());
    world.spawn_template_batch(&Template::extending("fast", &ship()).with(Speed(4)), 2);
    assert_eq!(world.resource::<Log>().unwrap().0, ["100 0", "100 4", "100 4"]);
}

#[test]
fn required_components_are_added() {
    #[derive(Debug, PartialEq)]
    struct Mass(u32);
    let mut world = World::new();
    world.register_component::<Hull>().requires_with(|| Mass(5));
    let e = world.spawn_template(&ship());
    assert_eq!(world.get::<Mass>(e), Ok(&Mass(5)));
    let given = world.spawn_template(&ship().with_fn(|| Mass(1)));
    assert_eq!(world.get::<Mass>(given), Ok(&Mass(1)), "a listed value is kept");
}

#[test]
fn the_hierarchy_hooks_keep_children_consistent_across_commands() {
    let mut world = World::new();
    let t = Template::new("fleet").with_child(ship()).with_child(ship());
    let mut queue = CommandQueue::new();
    let fleet = Commands::new(&mut queue, &world).spawn_template(&t).id();
    assert!(queue.apply(&mut world).is_empty());
    let children = world.children(fleet).unwrap().to_vec();
    assert_eq!(children.len(), 2);
    for c in children {
        assert_eq!(world.parent(c), Ok(Some(fleet)));
        assert_eq!(world.get::<Hull>(c), Ok(&Hull(100)));
    }
}

// Model: random templates, extended and nested, against a naive reference.

#[derive(Clone, Debug, PartialEq)]
struct Slot<const N: usize>(u32);

/// The reference: what an entity of a template has, computed the plain way.
#[derive(Clone, Default)]
struct ModelTemplate {
    inherited: std::collections::BTreeMap<usize, u32>,
    own: std::collections::BTreeMap<usize, u32>,
    inherited_children: Vec<ModelTemplate>,
    own_children: Vec<ModelTemplate>,
}

impl ModelTemplate {
    fn components(&self) -> std::collections::BTreeMap<usize, u32> {
        let mut all = self.inherited.clone();
        all.extend(self.own.iter().map(|(&k, &v)| (k, v)));
        all
    }
    fn children(&self) -> Vec<ModelTemplate> {
        self.inherited_children
            .iter()
            .chain(&self.own_children)
            .cloned()
            .collect()
    }
}

fn with_slot(t: Template, slot: usize, value: u32) -> Template {
    match slot {
        0 => t.with(Slot::<0>(value)),
        1 => t.with(Slot::<1>(value)),
        2 => t.with_fn(move || Slot::<2>(value)),
        3 => t.with_shared(Arc::new(Slot::<3>(value))),
        4 => t.with(Slot::<4>(value)),
        _ => t.with(Slot::<5>(value)),
    }
}

fn slots_of(world: &World, e: Entity) -> std::collections::BTreeMap<usize, u32> {
    let slots = [
        world.get::<Slot<0>>(e).ok().map(|s| s.0),
        world.get::<Slot<1>>(e).ok().map(|s| s.0),
        world.get::<Slot<2>>(e).ok().map(|s| s.0),
        world.get::<Slot<3>>(e).ok().map(|s| s.0),
        world.get::<Slot<4>>(e).ok().map(|s| s.0),
        world.get::<Slot<5>>(e).ok().map(|s| s.0),
    ];
    (slots.into_iter().enumerate())
        .filter_map(|(k, v)| Some((k, v?)))
        .collect()
}

/// Checks `e` and its descendants against `model`; returns how many entities that is.
fn check(world: &World, e: Entity, model: &ModelTemplate) -> usize {
    assert_eq!(slots_of(world, e), model.components(), "entity {e:?}");
    let children = world.children(e).map(<[Entity]>::to_vec).unwrap_or_default();
    let expected = model.children();
    assert_eq!(children.len(), expected.len(), "children of {e:?}");
    1 + (children.iter().zip(&expected))
        .map(|(&c, m)| check(world, c, m))
        .sum::<usize>()
}

#[test]
fn random_templates_spawn_what_a_naive_model_says() {
    // Under the sanitizers (`--cfg tabula_sanitizer`), a quarter of the seeds: they look for
    // memory errors, which every kind of template meets in any seed.
    let seeds = common::by_checker(3, 10, 40);
    for seed in 0..seeds {
        let mut rng = common::Rng(seed);
        let mut pool: Vec<(Template, ModelTemplate)> = Vec::new();
        for i in 0..12 {
            let mut t = Template::new(format!("t{i}"));
            let mut m = ModelTemplate::default();
            for _ in 0..rng.below(7) {
                match rng.below(4) {
                    0 | 1 => {
                        let (slot, value) = (rng.below(6), rng.below(1000) as u32);
                        t = with_slot(t, slot, value);
                        m.own.insert(slot, value);
                    }
                    2 if !pool.is_empty() => {
                        let (base, base_model) = &pool[rng.below(pool.len())];
                        t = t.extends(base);
                        m.inherited.extend(base_model.components());
                        m.inherited_children.extend(base_model.children());
                    }
                    3 if !pool.is_empty() && rng.chance(50) => {
                        let (child, child_model) = &pool[rng.below(pool.len())];
                        t = t.with_child(child.clone());
                        m.own_children.push(child_model.clone());
                    }
                    _ => {}
                }
            }
            pool.push((t, m));
        }
        let mut world = World::new();
        let mut queue = CommandQueue::new();
        let mut spawned = Vec::new();
        for (t, m) in &pool {
            spawned.push((world.spawn_template(t), m));
            let deferred = Commands::new(&mut queue, &world).spawn_template(t).id();
            spawned.push((deferred, m));
        }
        assert!(queue.apply(&mut world).is_empty());
        let total: usize = spawned.iter().map(|&(e, m)| check(&world, e, m)).sum();
        assert_eq!(
            world.len() as usize,
            total,
            "seed {seed}: nothing else was spawned"
        );
    }
}

// Determinism: spawns recorded by parallel systems.

#[derive(Clone, Copy, Debug, PartialEq)]
struct Spawner(u32);

/// Each system spawns templates (with a child) through `Commands`, and through
/// `ParallelCommands` from a `par_for_each`, every few runs; all of them only read, so they
/// run side by side.
fn spawner(which: u32, t: Template) -> impl FnMut(Local<u32>, Commands, ParallelCommands, Query<&Spawner>) {
    move |mut runs: Local<u32>,
          mut commands: Commands,
          parallel: ParallelCommands,
          spawners: Query<&Spawner>| {
        *runs += 1;
        if (*runs + which).is_multiple_of(3) {
            commands.spawn_template(&t).insert((Turret(which as u8),));
        }
        spawners.par_for_each(|s| {
            if s.0 % 4 == which && (*runs + s.0).is_multiple_of(5) {
                parallel.command_scope(|c| c.spawn_template(&t));
            }
        });
    }
}

type Row = (u64, Option<u32>, Option<u8>, Option<u64>);

fn run_spawners(threads: usize) -> Vec<Row> {
    let t = ship().with_child(Template::new("turret").with(Turret(0)));
    let mut world = World::with_tag(7);
    for i in 0..64 {
        world.spawn((Spawner(i),));
    }
    let mut schedule = Schedule::new();
    schedule.add_systems((
        spawner(0, t.clone()),
        spawner(1, t.clone()),
        spawner(2, t.clone()),
        spawner(3, t),
    ));
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap();
    pool.install(|| {
        for _ in 0..20 {
            schedule.run(&mut world);
        }
    });
    let mut rows: Vec<Row> = world
        .query::<(Entity, Option<&Hull>, Option<&Turret>, Option<&Parent>)>()
        .iter(&world)
        .map(|(e, h, t, p)| {
            (
                e.to_bits(),
                h.map(|h| h.0),
                t.map(|t| t.0),
                p.map(|p| p.get().to_bits()),
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
fn template_spawns_from_parallel_systems_and_par_for_each_give_the_same_world_with_one_and_four_threads() {
    let one = run_spawners(1);
    let four = run_spawners(4);
    assert!(one.len() > 64 + 40, "templates were spawned: {}", one.len());
    assert!(one.iter().any(|r| r.3.is_some()), "with children");
    assert_eq!(one, four);
}
