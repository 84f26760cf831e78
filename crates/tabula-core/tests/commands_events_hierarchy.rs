//! Commands, events and the hierarchy, used through the public API the way a game would.

use std::panic::{AssertUnwindSafe, catch_unwind};

use tabula_core::{
    Children, CommandError, CommandQueue, Commands, EntityError, EventCursor, Events, HierarchyError, Parent,
    World,
};

#[derive(Debug, PartialEq)]
struct Name(&'static str);

#[derive(Debug, PartialEq)]
struct Health(u32);

// ---------------------------------------------------------------------------------------------
// Commands

#[test]
fn deferred_spawn_returns_the_entity_at_once_and_it_exists_after_apply() {
    let mut world = World::new();
    let mut queue = CommandQueue::new();
    let mut commands = Commands::new(&mut queue, &world);
    let hero = commands.spawn((Name("hero"), Health(10))).id();
    let sidekick = commands.spawn((Name("sidekick"),)).id();
    assert_ne!(hero, sidekick);
    assert!(!world.contains(hero), "nothing happens before apply");

    assert!(queue.apply(&mut world).is_empty());
    assert_eq!(world.get::<Name>(hero), Ok(&Name("hero")));
    assert_eq!(world.get::<Health>(hero), Ok(&Health(10)));
    assert_eq!(world.get::<Name>(sidekick), Ok(&Name("sidekick")));
    assert_eq!(world.len(), 2);
}

#[test]
fn deferred_spawns_do_not_collide_with_direct_spawns() {
    let mut world = World::new();
    let mut queue = CommandQueue::new();
    let deferred = Commands::new(&mut queue, &world).spawn((Name("deferred"),)).id();
    let direct = world.spawn((Name("direct"),));
    assert_ne!(deferred, direct);
    assert!(queue.apply(&mut world).is_empty());
    assert_eq!(world.get::<Name>(deferred), Ok(&Name("deferred")));
    assert_eq!(world.get::<Name>(direct), Ok(&Name("direct")));
}

#[test]
fn commands_on_a_despawned_entity_are_skipped_and_reported() {
    let mut world = World::new();
    let doomed = world.spawn((Health(1),));
    let survivor = world.spawn((Health(2),));
    let mut queue = CommandQueue::new();
    let mut commands = Commands::new(&mut queue, &world);
    commands.despawn(doomed);
    commands.insert(doomed, (Name("too late"),));
    commands.entity(doomed).remove::<(Health,)>();
    commands.insert(survivor, (Name("fine"),));
    commands.despawn(doomed);

    let errors = queue.apply(&mut world);
    let missing = EntityError::NoSuchEntity(doomed);
    assert_eq!(
        errors,
        [
            CommandError::Entity {
                command: "insert",
                entity: doomed,
                error: missing
            },
            CommandError::Entity {
                command: "remove",
                entity: doomed,
                error: missing
            },
            CommandError::Entity {
                command: "despawn",
                entity: doomed,
                error: missing
            },
        ]
    );
    assert_eq!(
        errors[0].to_string(),
        format!("insert {doomed} skipped: entity {doomed} does not exist (despawned or never spawned)")
    );
    // The commands after the failures still ran.
    assert_eq!(world.get::<Name>(survivor), Ok(&Name("fine")));
    assert_eq!(world.len(), 1);
}

#[test]
fn removing_a_missing_component_is_reported_and_changes_nothing() {
    let mut world = World::new();
    let e = world.spawn((Health(3),));
    let mut queue = CommandQueue::new();
    Commands::new(&mut queue, &world).remove::<(Health, Name)>(e);
    let errors = queue.apply(&mut world);
    assert_eq!(errors.len(), 1);
    assert!(matches!(
        errors[0],
        CommandError::Entity {
            command: "remove",
            error: EntityError::MissingComponent { .. },
            ..
        }
    ));
    assert_eq!(world.get::<Health>(e), Ok(&Health(3)));
}

#[test]
fn resource_commands_and_custom_closures() {
    let mut world = World::new();
    let mut queue = CommandQueue::new();
    let mut commands = Commands::new(&mut queue, &world);
    commands.insert_resource(Health(50));
    commands.add(|world: &mut World| world.resource_mut::<Health>().unwrap().0 += 1);
    commands.remove_resource::<Name>();
    let errors = queue.apply(&mut world);
    assert_eq!(world.resource::<Health>(), Ok(&Health(51)));
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0].command(), "remove_resource");

    Commands::new(&mut queue, &world).remove_resource::<Health>();
    assert!(queue.apply(&mut world).is_empty());
    assert!(!world.contains_resource::<Health>());
}

#[test]
fn queues_from_several_systems_apply_in_append_order() {
    let mut world = World::new();
    world.insert_resource(Vec::<&'static str>::new());
    let mut system_a = CommandQueue::new();
    let mut system_b = CommandQueue::new();
    system_a.push(|w: &mut World| w.resource_mut::<Vec<&str>>().unwrap().push("a1"));
    system_b.push(|w: &mut World| w.resource_mut::<Vec<&str>>().unwrap().push("b1"));
    system_a.push(|w: &mut World| w.resource_mut::<Vec<&str>>().unwrap().push("a2"));
    let mut sync_point = CommandQueue::new();
    sync_point.append(&mut system_a);
    sync_point.append(&mut system_b);
    sync_point.apply(&mut world);
    assert_eq!(world.resource::<Vec<&str>>().unwrap(), &["a1", "a2", "b1"]);
}

// ---------------------------------------------------------------------------------------------
// Events

#[derive(Debug, Clone, Copy, PartialEq)]
struct Damage(u32);

/// What a reader sees when it reads now.
fn read(world: &World, cursor: &mut EventCursor<Damage>) -> Vec<u32> {
    let events = world.resource::<Events<Damage>>().unwrap();
    cursor.read(events).map(|d| d.0).collect()
}

#[test]
fn an_event_is_seen_once_by_every_reader_within_two_updates() {
    let mut world = World::new();
    world.add_event::<Damage>();
    let mut early = EventCursor::default(); // reads before the senders each run
    let mut late = EventCursor::default(); // reads after them

    // Run 1: `early` reads first (nothing yet), a sender sends 1, `late` reads.
    assert_eq!(read(&world, &mut early), Vec::<u32>::new());
    world.send_event(Damage(1)).unwrap();
    assert_eq!(read(&world, &mut late), [1]);
    world.update_events();

    // Run 2: both see exactly what they have not seen; 1 is still stored.
    assert_eq!(read(&world, &mut early), [1]);
    world.send_event(Damage(2)).unwrap();
    assert_eq!(read(&world, &mut late), [2]);
    assert_eq!(world.resource::<Events<Damage>>().unwrap().len(), 2);
    world.update_events();

    // Run 3: 1 has been dropped (two updates), 2 is still there.
    assert_eq!(world.resource::<Events<Damage>>().unwrap().len(), 1);
    assert_eq!(read(&world, &mut early), [2]);
    assert_eq!(read(&world, &mut late), Vec::<u32>::new());
    world.update_events();

    // Run 4: everything is gone, nothing is read twice.
    assert!(world.resource::<Events<Damage>>().unwrap().is_empty());
    assert_eq!(read(&world, &mut early), Vec::<u32>::new());
    assert_eq!(read(&world, &mut late), Vec::<u32>::new());
}

#[test]
fn a_reader_that_misses_two_updates_skips_the_dropped_events() {
    let mut world = World::new();
    world.add_event::<Damage>();
    let mut sleepy = EventCursor::default();
    world.send_event(Damage(1)).unwrap();
    world.update_events();
    world.send_event(Damage(2)).unwrap();
    world.update_events();
    world.send_event(Damage(3)).unwrap();
    let events = world.resource::<Events<Damage>>().unwrap();
    assert_eq!(sleepy.len(events), 2);
    assert_eq!(read(&world, &mut sleepy), [2, 3]);
}

/// An event whose `Drop` panics when armed.
struct Armed(bool);

impl Drop for Armed {
    fn drop(&mut self) {
        if self.0 {
            panic!("event drop");
        }
    }
}

#[test]
fn a_panicking_event_drop_never_makes_read_events_unread() {
    for interrupted in ["update", "clear"] {
        let mut events = Events::default();
        events.send(Armed(true));
        events.update();
        events.send(Armed(false));
        let mut reader = EventCursor::default();
        assert_eq!(reader.read(&events).count(), 2);
        let result = catch_unwind(AssertUnwindSafe(|| match interrupted {
            "update" => events.update(),
            _ => events.clear(),
        }));
        assert!(result.is_err(), "{interrupted}: the armed event's drop panics");
        assert_eq!(reader.len(&events), 0, "{interrupted}: a read event came back");
        events.send(Armed(false));
        assert_eq!(reader.read(&events).count(), 1, "{interrupted}: the new event");
    }
}

#[test]
fn sending_an_unregistered_event_is_an_error() {
    let mut world = World::new();
    assert!(world.send_event(Damage(1)).is_err());
    world.add_event::<Damage>();
    world
        .resource_mut::<Events<Damage>>()
        .unwrap()
        .send_batch([Damage(1), Damage(2)]);
    let mut cursor = EventCursor::default();
    assert_eq!(read(&world, &mut cursor), [1, 2]);
}

// ---------------------------------------------------------------------------------------------
// Hierarchy

fn children(world: &World, entity: tabula_core::Entity) -> Vec<tabula_core::Entity> {
    world.children(entity).unwrap().to_vec()
}

#[test]
fn reparenting_moves_the_child_between_children_lists() {
    let mut world = World::new();
    let a = world.spawn((Name("a"),));
    let b = world.spawn((Name("b"),));
    let x = world.spawn((Name("x"),));
    let y = world.spawn((Name("y"),));
    world.set_parent(x, a).unwrap();
    world.set_parent(y, a).unwrap();
    assert_eq!(children(&world, a), [x, y]);
    assert_eq!(world.get::<Parent>(x).map(Parent::get), Ok(a));

    world.set_parent(x, b).unwrap();
    assert_eq!(children(&world, a), [y]);
    assert_eq!(children(&world, b), [x]);
    assert_eq!(world.parent(x), Ok(Some(b)));

    world.set_parent(y, b).unwrap();
    assert!(!world.has::<Children>(a), "an emptied list is removed");
    assert_eq!(world.get::<Children>(b).map(|c| c.len()), Ok(2));

    world.remove_parent(x).unwrap();
    assert_eq!(world.parent(x), Ok(None));
    assert_eq!(children(&world, b), [y]);
}

#[test]
fn cycles_are_rejected_and_change_nothing() {
    let mut world = World::new();
    let root = world.spawn(());
    let mid = world.spawn(());
    let leaf = world.spawn(());
    world.set_parent(mid, root).unwrap();
    world.set_parent(leaf, mid).unwrap();

    for (child, parent) in [(root, leaf), (root, mid), (mid, leaf), (leaf, leaf)] {
        assert_eq!(
            world.set_parent(child, parent),
            Err(HierarchyError::Cycle { child, parent })
        );
    }
    let message = world.set_parent(root, leaf).unwrap_err().to_string();
    assert!(message.contains("would loop"), "{message}");
    assert_eq!(world.parent(root), Ok(None));
    assert_eq!(children(&world, root), [mid]);
    assert_eq!(children(&world, mid), [leaf]);
    assert_eq!(children(&world, leaf), []);
}

#[test]
fn despawn_recursive_removes_a_three_level_tree() {
    let mut world = World::new();
    let bystander_parent = world.spawn((Name("bystander parent"),));
    let root = world.spawn((Name("root"),));
    let kids: Vec<_> = (0..3).map(|_| world.spawn((Name("kid"),))).collect();
    let grandkids: Vec<_> = (0..4)
        .map(|_| world.spawn((Name("grandkid"), Health(1))))
        .collect();
    let bystander = world.spawn((Name("bystander"),));
    world.set_parent(root, bystander_parent).unwrap();
    world.set_parent(bystander, bystander_parent).unwrap();
    for &kid in &kids {
        world.set_parent(kid, root).unwrap();
    }
    for (i, &grandkid) in grandkids.iter().enumerate() {
        world.set_parent(grandkid, kids[i % 2]).unwrap();
    }
    assert_eq!(world.len(), 10);

    world.despawn_recursive(root).unwrap();
    assert!(!world.contains(root));
    assert!(kids.iter().chain(&grandkids).all(|&e| !world.contains(e)));
    assert_eq!(world.len(), 2);
    assert_eq!(children(&world, bystander_parent), [bystander]);
    assert_eq!(world.get::<Name>(bystander), Ok(&Name("bystander")));
    assert_eq!(
        world.despawn_recursive(root),
        Err(EntityError::NoSuchEntity(root))
    );
}

/// A component whose `Drop` panics.
struct Bomb;

impl Drop for Bomb {
    fn drop(&mut self) {
        panic!("bomb");
    }
}

#[test]
fn despawn_recursive_finishes_the_subtree_when_a_drop_panics() {
    let mut world = World::new();
    let bystander_parent = world.spawn((Name("bystander parent"),));
    let root = world.spawn((Name("root"),));
    let kid = world.spawn((Name("kid"), Bomb));
    let grandkids: Vec<_> = (0..3).map(|_| world.spawn((Name("grandkid"),))).collect();
    let other_kid = world.spawn((Name("other kid"),));
    world.set_parent(root, bystander_parent).unwrap();
    world.set_parent(kid, root).unwrap();
    world.set_parent(other_kid, root).unwrap();
    for &grandkid in &grandkids {
        world.set_parent(grandkid, kid).unwrap();
    }

    let result = catch_unwind(AssertUnwindSafe(|| world.despawn_recursive(root)));
    assert!(result.is_err(), "the bomb's panic reaches the caller");
    // The whole subtree is gone, including the panicking entity's children, and no live
    // entity names a dead parent.
    let subtree = [root, kid, other_kid].into_iter().chain(grandkids);
    assert!(subtree.into_iter().all(|e| !world.contains(e)));
    assert_eq!(world.len(), 1);
    assert_eq!(world.children(bystander_parent), Ok(&[][..]));
    assert!(!world.has::<Children>(bystander_parent));
}

#[test]
fn plain_despawn_keeps_both_sides_consistent() {
    let mut world = World::new();
    let parent = world.spawn((Name("parent"),));
    let first = world.spawn((Name("first"),));
    let second = world.spawn((Name("second"),));
    let grandchild = world.spawn((Name("grandchild"),));
    world.set_parent(first, parent).unwrap();
    world.set_parent(second, parent).unwrap();
    world.set_parent(grandchild, second).unwrap();

    // A despawned child leaves its parent's list.
    world.despawn(first).unwrap();
    assert_eq!(children(&world, parent), [second]);

    // A despawned parent leaves its children as roots; grandchildren are untouched.
    world.despawn(parent).unwrap();
    assert_eq!(world.parent(second), Ok(None));
    assert!(!world.has::<Parent>(second));
    assert_eq!(world.parent(grandchild), Ok(Some(second)));
    assert_eq!(world.get::<Name>(second), Ok(&Name("second")));

    // Despawning the last child removes the list.
    world.despawn(grandchild).unwrap();
    assert!(!world.has::<Children>(second));
}

#[test]
fn hierarchy_commands_apply_in_order_and_report_cycles() {
    let mut world = World::new();
    let mut queue = CommandQueue::new();
    let mut commands = Commands::new(&mut queue, &world);
    let root = commands.spawn((Name("root"),)).id();
    let child = commands.spawn((Name("child"),)).set_parent(root).id();
    let other = commands.spawn_empty().id();
    commands.entity(root).add_child(other);
    commands.entity(root).set_parent(child); // a cycle: reported, skipped
    let errors = queue.apply(&mut world);
    assert_eq!(
        errors,
        [CommandError::Hierarchy {
            command: "set_parent",
            entity: root,
            error: HierarchyError::Cycle {
                child: root,
                parent: child
            },
        }]
    );
    assert_eq!(children(&world, root), [child, other]);

    let mut commands = Commands::new(&mut queue, &world);
    commands.entity(other).remove_parent();
    commands.despawn_recursive(root);
    assert!(queue.apply(&mut world).is_empty());
    assert_eq!(world.len(), 1);
    assert_eq!(world.parent(other), Ok(None));
}

#[test]
fn remove_commands_keep_the_hierarchy_and_inserted_parents_attach() {
    let mut world = World::new();
    let root = world.spawn((Name("root"),));
    let a = world.spawn((Name("a"),));
    let b = world.spawn((Name("b"),));
    world.set_parent(a, root).unwrap();
    world.set_parent(b, root).unwrap();
    let copied = *world.get::<Parent>(a).unwrap();

    let mut queue = CommandQueue::new();
    let mut commands = Commands::new(&mut queue, &world);
    commands.remove::<(Parent,)>(a);
    let stray = commands.spawn((Name("stray"),)).id();
    commands.insert(stray, (copied,));
    let spawned = commands.spawn((Name("spawned"), Parent::new(root))).id();
    assert!(queue.apply(&mut world).is_empty());
    assert_eq!(children(&world, root), [b, stray, spawned]);
    assert_eq!(world.parent(a), Ok(None));
    assert_eq!(world.parent(stray), Ok(Some(root)));

    // A `Parent` naming a dead entity is taken off again.
    let gone = world.spawn(());
    world.despawn(gone).unwrap();
    let mut commands = Commands::new(&mut queue, &world);
    commands.insert(stray, (Parent::new(gone),));
    assert!(queue.apply(&mut world).is_empty());
    assert_eq!(world.parent(stray), Ok(None));
    assert_eq!(children(&world, root), [b, spawned]);

    // Removing the list by command makes the remaining child a root.
    let mut commands = Commands::new(&mut queue, &world);
    commands.remove::<(Children,)>(root);
    assert!(queue.apply(&mut world).is_empty());
    assert_eq!(world.parent(b), Ok(None));
    assert!(!world.has::<Children>(root));
}
