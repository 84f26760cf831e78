//! Unit tests of the command queue's byte buffer: order, drop counts, panics, odd layouts.
//! They touch the queue's unsafe code, so they run under Miri (`cargo +nightly miri test -p
//! tabula-core --lib command`).

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::*;
use crate::EntityError;

/// Counts its drops in a shared counter.
struct Counted(Arc<AtomicUsize>);

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

fn counter() -> Arc<AtomicUsize> {
    Arc::new(AtomicUsize::new(0))
}

fn count(counter: &AtomicUsize) -> usize {
    counter.load(Ordering::SeqCst)
}

/// Appends `value` to the world's `Vec<u64>` log resource.
fn log(world: &mut World, value: u64) {
    if !world.contains_resource::<Vec<u64>>() {
        world.insert_resource(Vec::<u64>::new());
    }
    world.resource_mut::<Vec<u64>>().unwrap().push(value);
}

fn logged(world: &World) -> Vec<u64> {
    world.resource::<Vec<u64>>().cloned().unwrap_or_default()
}

#[test]
fn commands_apply_in_recorded_order() {
    let mut world = World::new();
    let mut queue = CommandQueue::new();
    for i in 0..10 {
        queue.push(move |world: &mut World| log(world, i));
    }
    assert_eq!(queue.len(), 10);
    assert!(queue.apply(&mut world).is_empty());
    assert!(queue.is_empty());
    assert_eq!(logged(&world), (0..10).collect::<Vec<_>>());
    // The emptied queue records and applies again.
    queue.push(|world: &mut World| log(world, 99));
    queue.apply(&mut world);
    assert_eq!(logged(&world).last(), Some(&99));
}

#[test]
fn unapplied_commands_are_dropped_once_with_the_queue() {
    let drops = counter();
    let mut queue = CommandQueue::new();
    for _ in 0..5 {
        let counted = Counted(drops.clone());
        queue.push(move |_: &mut World| drop(counted));
    }
    assert_eq!(count(&drops), 0);
    drop(queue);
    assert_eq!(count(&drops), 5);
}

#[test]
fn applied_commands_are_dropped_once() {
    let drops = counter();
    let mut queue = CommandQueue::new();
    for _ in 0..3 {
        let counted = Counted(drops.clone());
        queue.push(move |_: &mut World| {
            let _keep = &counted;
        });
    }
    queue.apply(&mut World::new());
    assert_eq!(count(&drops), 3);
    drop(queue);
    assert_eq!(count(&drops), 3);
}

#[test]
fn a_failing_command_is_reported_and_the_rest_still_run() {
    let mut world = World::new();
    let dead = world.spawn(());
    world.despawn(dead).unwrap();
    let mut queue = CommandQueue::new();
    queue.push(|world: &mut World| log(world, 1));
    queue.push(Fallible(move |world: &mut World| {
        world.despawn(dead).map_err(|error| CommandError::Entity {
            command: "despawn",
            entity: dead,
            error,
        })
    }));
    queue.push(|world: &mut World| log(world, 2));
    let errors = queue.apply(&mut world);
    assert_eq!(
        errors,
        [CommandError::Entity {
            command: "despawn",
            entity: dead,
            error: EntityError::NoSuchEntity(dead),
        }]
    );
    assert_eq!(errors[0].command(), "despawn");
    assert_eq!(logged(&world), [1, 2]);
}

#[test]
fn a_panicking_command_drops_the_rest_once_and_empties_the_queue() {
    let drops = counter();
    let mut world = World::new();
    let mut queue = CommandQueue::new();
    let first = Counted(drops.clone());
    queue.push(move |world: &mut World| {
        drop(first);
        log(world, 1);
    });
    let in_panicking = Counted(drops.clone());
    queue.push(move |_: &mut World| {
        let _held = in_panicking; // dropped once, during unwinding
        panic!("command failed");
    });
    for _ in 0..3 {
        let counted = Counted(drops.clone());
        queue.push(move |world: &mut World| {
            drop(counted);
            log(world, 2); // never runs
        });
    }

    let result = catch_unwind(AssertUnwindSafe(|| queue.apply(&mut world)));
    assert!(result.is_err());
    assert!(queue.is_empty());
    assert_eq!(queue.len(), 0);
    assert_eq!(count(&drops), 5, "every command dropped exactly once");
    assert_eq!(logged(&world), [1]);

    // The queue is usable afterwards, and dropping it drops nothing twice.
    queue.push(|world: &mut World| log(world, 3));
    queue.apply(&mut world);
    assert_eq!(logged(&world), [1, 3]);
    drop(queue);
    assert_eq!(count(&drops), 5);
}

#[test]
fn a_panicking_drop_still_drops_the_commands_after_it() {
    struct PanicOnDrop;
    impl Drop for PanicOnDrop {
        fn drop(&mut self) {
            panic!("drop failed");
        }
    }
    let drops = counter();
    let mut queue = CommandQueue::new();
    let bomb = PanicOnDrop;
    queue.push(move |_: &mut World| drop(bomb));
    for _ in 0..2 {
        let counted = Counted(drops.clone());
        queue.push(move |_: &mut World| drop(counted));
    }
    assert!(catch_unwind(AssertUnwindSafe(|| drop(queue))).is_err());
    assert_eq!(count(&drops), 2);
}

#[test]
fn mixed_sizes_and_alignments_round_trip() {
    /// A zero-sized command.
    struct Unit;
    impl Command for Unit {
        fn apply(self, world: &mut World) -> Result<(), CommandError> {
            log(world, 0);
            Ok(())
        }
    }

    /// An over-aligned command: its bytes land at arbitrary offsets of the buffer.
    #[repr(align(64))]
    struct Aligned([u64; 3]);
    impl Command for Aligned {
        fn apply(self, world: &mut World) -> Result<(), CommandError> {
            assert_eq!(std::ptr::from_ref(&self).addr() % 64, 0);
            log(world, self.0.iter().sum());
            Ok(())
        }
    }

    let mut world = World::new();
    let mut queue = CommandQueue::new();
    let byte = 7u8;
    let odd = [1u8, 2, 3];
    let boxed = Box::new(40u64);
    let text = String::from("abc");
    queue.push(move |world: &mut World| log(world, u64::from(byte)));
    queue.push(Unit);
    queue.push(Aligned([1, 2, 3]));
    queue.push(move |world: &mut World| log(world, odd.iter().map(|&b| u64::from(b)).sum()));
    queue.push(Unit);
    queue.push(move |world: &mut World| log(world, *boxed));
    queue.push(Aligned([10, 20, 30]));
    queue.push(move |world: &mut World| log(world, text.len() as u64));
    queue.push(|world: &mut World| log(world, u64::MAX));
    assert_eq!(queue.len(), 9);
    assert!(queue.apply(&mut world).is_empty());
    assert_eq!(logged(&world), [7, 0, 6, 6, 0, 40, 60, 3, u64::MAX]);
}

#[test]
fn unapplied_odd_layouts_are_dropped() {
    #[repr(align(64))]
    struct Aligned(Counted);
    impl Command for Aligned {
        fn apply(self, _: &mut World) -> Result<(), CommandError> {
            drop(self.0);
            Ok(())
        }
    }
    let drops = counter();
    let mut queue = CommandQueue::new();
    queue.push(|_: &mut World| {});
    queue.push(Aligned(Counted(drops.clone())));
    let counted = Counted(drops.clone());
    queue.push(move |_: &mut World| drop(counted));
    queue.push(Aligned(Counted(drops.clone())));
    drop(queue);
    assert_eq!(count(&drops), 3);
}

#[test]
fn append_moves_commands_in_order() {
    let drops = counter();
    let mut world = World::new();
    let mut first = CommandQueue::new();
    let mut second = CommandQueue::new();
    first.push(|world: &mut World| log(world, 1));
    let counted = Counted(drops.clone());
    second.push(move |world: &mut World| {
        let _keep = &counted;
        log(world, 2);
    });
    second.push(|world: &mut World| log(world, 3));
    first.append(&mut second);
    assert_eq!((first.len(), second.len()), (3, 0));
    drop(second);
    assert_eq!(count(&drops), 0, "the emptied queue owns nothing");
    first.apply(&mut world);
    assert_eq!(logged(&world), [1, 2, 3]);
    assert_eq!(count(&drops), 1);
}

#[test]
fn queue_is_send_and_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<CommandQueue>();
}

#[test]
fn commands_spawn_returns_the_entity_before_apply() {
    let mut world = World::new();
    let mut queue = CommandQueue::new();
    let mut commands = Commands::new(&mut queue, &world);
    let e = commands.spawn((5u32,)).id();
    let empty = commands.spawn_empty().id();
    commands.entity(e).insert((1.5f32,)).remove::<(u32,)>();
    assert_eq!(queue.len(), 3);
    assert!(!world.contains(e));
    assert!(queue.apply(&mut world).is_empty());
    assert_eq!(world.get::<f32>(e), Ok(&1.5));
    assert!(!world.has::<u32>(e));
    assert!(world.contains(empty));
}

#[test]
fn command_errors_name_the_command_and_entity() {
    let mut world = World::new();
    let e = world.spawn(());
    world.despawn(e).unwrap();
    let mut queue = CommandQueue::new();
    let mut commands = Commands::new(&mut queue, &world);
    commands.despawn(e);
    commands.remove_resource::<u8>();
    let errors: Vec<String> = queue.apply(&mut world).iter().map(ToString::to_string).collect();
    assert_eq!(errors.len(), 2);
    assert_eq!(
        errors[0],
        format!("despawn {e} skipped: entity {e} does not exist (despawned or never spawned)")
    );
    assert!(errors[1].starts_with("remove_resource skipped: resource `u8` does not exist"));
}

#[test]
fn a_queue_recorded_for_one_world_refuses_another() {
    #[derive(Debug, PartialEq)]
    struct Tag(&'static str);
    // The same tag, so that ids collide (with distinct tags, B would refuse A's ids anyway).
    let world_a = World::with_tag(0);
    let mut world_b = World::with_tag(0);
    // An entity of B whose id equals the one A reserves next.
    let victim = world_b.spawn(());
    let mut queue = CommandQueue::new();
    let meant_for_a = Commands::new(&mut queue, &world_a).spawn((Tag("a"),)).id();
    assert_eq!(meant_for_a, victim, "the ids collide, as they would in practice");
    let result = catch_unwind(AssertUnwindSafe(|| queue.apply(&mut world_b)));
    let message = *result.unwrap_err().downcast::<String>().unwrap();
    assert!(message.contains("applied to world"), "{message}");
    assert_eq!(
        world_b.get::<Tag>(victim),
        Err(EntityError::MissingComponent {
            entity: victim,
            component: std::any::type_name::<Tag>(),
        })
    );
    // Mixing worlds in one queue is refused as well, and a refused append leaves both
    // queues bound: the other one still refuses world A.
    let mut other = CommandQueue::new();
    let x = world_a_entity_id(&world_a);
    Commands::new(&mut other, &world_b).despawn(x);
    assert!(catch_unwind(AssertUnwindSafe(|| queue.append(&mut other))).is_err());
    let mut world_a = world_a;
    assert!(catch_unwind(AssertUnwindSafe(|| other.apply(&mut world_a))).is_err());
    assert_eq!(other.len(), 1, "the refused apply left the command queued");
    let bind_other = catch_unwind(AssertUnwindSafe(|| {
        Commands::new(&mut queue, &world_b).spawn_empty();
    }));
    assert!(bind_other.is_err());
}

/// The id world A hands out first.
fn world_a_entity_id(world: &World) -> Entity {
    world.entities().reserve_entity()
}

#[test]
fn an_empty_queue_belongs_to_no_world() {
    let world_a = World::new();
    let mut world_b = World::new();
    let mut queue = CommandQueue::new();
    // Commands of A that record nothing leave the queue free for B.
    Commands::new(&mut queue, &world_a).spawn_empty();
    let e = Commands::new(&mut queue, &world_b).spawn((1u8,)).id();
    assert!(queue.apply(&mut world_b).is_empty());
    assert_eq!(world_b.get::<u8>(e), Ok(&1));
    // Appending an empty queue of A to a queue of B is fine, and the reverse too.
    let mut empty_a = CommandQueue::new();
    let _ = Commands::new(&mut empty_a, &world_a);
    let mut of_b = CommandQueue::new();
    Commands::new(&mut of_b, &world_b).spawn((2u8,));
    of_b.append(&mut empty_a);
    empty_a.append(&mut of_b);
    assert_eq!((empty_a.len(), of_b.len()), (1, 0));
    assert!(empty_a.apply(&mut world_b).is_empty());
}

#[test]
fn an_applied_queue_can_be_used_for_another_world() {
    let mut world_a = World::new();
    let mut world_b = World::new();
    let mut queue = CommandQueue::new();
    Commands::new(&mut queue, &world_a).spawn((1u8,));
    assert!(queue.apply(&mut world_a).is_empty());
    let e = Commands::new(&mut queue, &world_b).spawn((2u8,)).id();
    assert!(queue.apply(&mut world_b).is_empty());
    assert_eq!(world_b.get::<u8>(e), Ok(&2));
    // Commands pushed without `Commands` belong to no world in particular.
    queue.push(|world: &mut World| {
        world.spawn((3u8,));
    });
    assert!(queue.apply(&mut world_a).is_empty());
    assert_eq!(world_a.len(), 2);
}

#[test]
fn with_children_spawns_nested_children_in_order() {
    let mut world = World::new();
    let mut queue = CommandQueue::new();
    let mut commands = Commands::new(&mut queue, &world);
    let mut ids = Vec::new();
    let root = commands.spawn((0u32,)).id();
    commands.entity(root).with_children(|builder| {
        assert_eq!(builder.parent_entity(), root);
        ids.push(builder.spawn((1u32,)).id());
        let inner = builder
            .spawn((2u32,))
            .with_children(|inner| {
                ids.push(inner.spawn((3u32,)).id());
            })
            .id();
        ids.push(inner);
        // Other commands from inside the builder.
        builder.commands().insert_resource(7u8);
    });
    assert!(queue.apply(&mut world).is_empty());
    let [first, grandchild, inner] = ids[..] else {
        panic!("three ids: {ids:?}")
    };
    assert_eq!(world.children(root).unwrap(), &[first, inner]);
    assert_eq!(world.children(inner).unwrap(), &[grandchild]);
    assert_eq!(world.get::<u32>(grandchild), Ok(&3));
    assert_eq!(world.resource::<u8>(), Ok(&7));
}
