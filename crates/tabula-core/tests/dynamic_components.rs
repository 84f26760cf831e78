//! Dynamic components and access by component id: components registered from a name, a
//! layout and a drop function; insert, get, get_mut and remove by id for dynamic and typed
//! components (zero-sized, over-aligned, padded and dropping layouts); change marks, hooks
//! and removal logs on the by-id paths as on the typed ones; errors; and `DynamicQuery`.
//! Run under Miri (no rayon threads here).

use std::alloc::Layout;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

mod common;

use tabula_core::{
    Allow, Changed, ComponentDescriptor, ComponentId, DescriptorError, Disabled, DynamicQuery,
    DynamicQueryError, Entity, EntityError, HookContext, HookKind, HookWorld, OwningPtr, World,
};

#[derive(Clone, Copy, Debug, PartialEq)]
struct Position(f32, f32);

#[derive(Debug, PartialEq)]
struct Velocity(f32);

/// A value with a heap part and a drop that counts: stored as a dynamic component.
struct Tracked {
    text: String,
    drops: Arc<AtomicUsize>,
}

impl Drop for Tracked {
    fn drop(&mut self) {
        self.drops.fetch_add(1, Ordering::SeqCst);
    }
}

/// # Safety
/// `ptr` is a valid `Tracked`, not used again.
unsafe fn drop_tracked(ptr: *mut u8) {
    // SAFETY: the caller's contract.
    unsafe { ptr.cast::<Tracked>().drop_in_place() }
}

/// Registers `Tracked` as a dynamic component named `name`.
fn register_tracked(world: &mut World, name: &str) -> ComponentId {
    // SAFETY: `Tracked` is `Send + Sync`, and `drop_tracked` drops one.
    let descriptor =
        unsafe { ComponentDescriptor::new(name.to_owned(), Layout::new::<Tracked>(), Some(drop_tracked)) };
    world.register_component_with_descriptor(descriptor).unwrap()
}

fn tracked(text: &str, drops: &Arc<AtomicUsize>) -> Tracked {
    Tracked {
        text: text.to_owned(),
        drops: Arc::clone(drops),
    }
}

/// Inserts `value` as component `id` of `entity`.
///
/// # Safety
/// Component `id` stores `T`.
unsafe fn insert_as<T>(
    world: &mut World,
    entity: Entity,
    id: ComponentId,
    value: T,
) -> Result<(), EntityError> {
    // SAFETY: the caller's contract.
    OwningPtr::make(value, |ptr| unsafe { world.insert_by_id(entity, id, ptr) })
}

/// Reads component `id` of `entity` as a `T`.
///
/// # Safety
/// Component `id` stores `T`.
unsafe fn read_as<T: Clone>(world: &World, entity: Entity, id: ComponentId) -> Result<T, EntityError> {
    // SAFETY: the caller's contract.
    world
        .get_by_id(entity, id)
        .map(|ptr| unsafe { ptr.deref::<T>() }.clone())
}

fn text_of(world: &World, entity: Entity, id: ComponentId) -> String {
    // SAFETY: `id` is the `Tracked` component in every caller.
    unsafe { world.get_by_id(entity, id).unwrap().deref::<Tracked>() }
        .text
        .clone()
}

#[test]
fn a_typed_component_is_reachable_by_id() {
    let mut world = World::new();
    let position = world.register_component::<Position>().id();
    let e = world.spawn((Position(1.0, 2.0),));
    // SAFETY: `position` stores `Position`.
    unsafe {
        assert_eq!(read_as::<Position>(&world, e, position), Ok(Position(1.0, 2.0)));
        let mut value = world.get_mut_by_id(e, position).unwrap();
        value.as_mut().deref_mut::<Position>().0 = 5.0;
        assert_eq!(world.get::<Position>(e), Ok(&Position(5.0, 2.0)));
        // Inserted by id onto an entity without it: typed access finds it.
        let f = world.spawn((Velocity(1.0),));
        insert_as(&mut world, f, position, Position(3.0, 4.0)).unwrap();
        assert_eq!(world.get::<Position>(f), Ok(&Position(3.0, 4.0)));
        assert_eq!(world.get::<Velocity>(f), Ok(&Velocity(1.0)));
        // Replaced by id.
        insert_as(&mut world, f, position, Position(0.0, 0.0)).unwrap();
        assert_eq!(world.get::<Position>(f), Ok(&Position(0.0, 0.0)));
    }
    assert_eq!(world.remove_by_id(e, position), Ok(true));
    assert!(!world.has::<Position>(e));
    assert_eq!(world.remove_by_id(e, position), Ok(false));
    assert_eq!(
        world.entity(e).unwrap().get_by_id(position).map(|p| p.as_ptr()),
        None
    );
}

#[test]
fn a_dynamic_component_inserted_by_id_is_dropped_once_on_despawn() {
    let drops = Arc::new(AtomicUsize::new(0));
    let mut world = World::new();
    let id = register_tracked(&mut world, "Tracked");
    let e = world.spawn((Position(0.0, 0.0),));
    // SAFETY: `id` stores `Tracked`.
    unsafe { insert_as(&mut world, e, id, tracked("hello", &drops)).unwrap() };
    assert_eq!(text_of(&world, e, id), "hello");
    // Moving the row to another archetype keeps the value.
    world.insert(e, (Velocity(2.0),)).unwrap();
    world.remove::<(Position,)>(e).unwrap();
    assert_eq!(text_of(&world, e, id), "hello");
    assert_eq!(drops.load(Ordering::SeqCst), 0);
    world.despawn(e).unwrap();
    assert_eq!(drops.load(Ordering::SeqCst), 1, "dropped exactly once");
    drop(world);
    assert_eq!(drops.load(Ordering::SeqCst), 1);
}

#[test]
fn replacing_removing_and_clearing_drop_each_value_once() {
    let drops = Arc::new(AtomicUsize::new(0));
    let mut world = World::new();
    let id = register_tracked(&mut world, "Tracked");
    let e = world.spawn(());
    // SAFETY: `id` stores `Tracked`.
    unsafe {
        insert_as(&mut world, e, id, tracked("first", &drops)).unwrap();
        insert_as(&mut world, e, id, tracked("second", &drops)).unwrap();
    }
    assert_eq!(drops.load(Ordering::SeqCst), 1, "the replaced value");
    assert_eq!(text_of(&world, e, id), "second");
    assert_eq!(world.remove_by_id(e, id), Ok(true));
    assert_eq!(drops.load(Ordering::SeqCst), 2, "the removed value");
    assert_eq!(world.remove_by_id(e, id), Ok(false));

    // Many rows: clear, shrink, and the world's own drop.
    let ids: Vec<Entity> = (0..5).map(|i| world.spawn((i as u32,))).collect();
    for (i, &entity) in ids.iter().enumerate() {
        // SAFETY: as above.
        unsafe { insert_as(&mut world, entity, id, tracked(&format!("row {i}"), &drops)).unwrap() };
    }
    world.despawn(ids[1]).unwrap(); // swap-removes: the last row moves into row 1
    assert_eq!(text_of(&world, ids[4], id), "row 4");
    assert_eq!(drops.load(Ordering::SeqCst), 3);
    world.clear();
    assert_eq!(drops.load(Ordering::SeqCst), 7, "the four rows left");
    world.shrink();
    let kept = world.spawn(());
    // SAFETY: as above.
    unsafe { insert_as(&mut world, kept, id, tracked("kept", &drops)).unwrap() };
    drop(world);
    assert_eq!(drops.load(Ordering::SeqCst), 8);
}

#[test]
fn a_value_given_for_a_dead_entity_is_dropped() {
    let drops = Arc::new(AtomicUsize::new(0));
    let mut world = World::new();
    let id = register_tracked(&mut world, "Tracked");
    let e = world.spawn(());
    world.despawn(e).unwrap();
    // SAFETY: `id` stores `Tracked`.
    let result = unsafe { insert_as(&mut world, e, id, tracked("lost", &drops)) };
    assert_eq!(result, Err(EntityError::NoSuchEntity(e)));
    assert_eq!(drops.load(Ordering::SeqCst), 1);
}

#[test]
fn zero_sized_dynamic_components() {
    let mut world = World::new();
    // SAFETY: no bytes, no drop.
    let marker = world
        .register_component_with_descriptor(unsafe {
            ComponentDescriptor::new("Marker", Layout::new::<()>(), None)
        })
        .unwrap();
    let wide = Layout::from_size_align(0, 64).unwrap();
    // SAFETY: no bytes, no drop.
    let aligned_marker = world
        .register_component_with_descriptor(unsafe { ComponentDescriptor::new("AlignedMarker", wide, None) })
        .unwrap();
    let entities: Vec<Entity> = (0..4).map(|i| world.spawn((i as u8,))).collect();
    for &e in &entities {
        // SAFETY: zero-sized values of the registered layouts (a `()` and an aligned one).
        unsafe {
            insert_as(&mut world, e, marker, ()).unwrap();
            #[repr(align(64))]
            struct Wide;
            insert_as(&mut world, e, aligned_marker, Wide).unwrap();
        }
        assert!(world.has_by_id(e, marker));
        let ptr = world.get_by_id(e, aligned_marker).unwrap();
        assert_eq!(ptr.as_ptr().addr() % 64, 0);
    }
    let mut query = DynamicQuery::builder(&mut world)
        .read(marker)
        .read(aligned_marker)
        .build()
        .unwrap();
    assert_eq!(query.iter(&world).count(), 4);
    assert_eq!(world.remove_by_id(entities[0], aligned_marker), Ok(true));
    world.despawn(entities[1]).unwrap();
    assert_eq!(query.iter(&world).count(), 2);
}

#[repr(C, align(64))]
#[derive(Clone, Copy, Debug, PartialEq)]
struct Aligned([u32; 4]);

#[test]
fn over_aligned_dynamic_components_stay_aligned_as_tables_grow() {
    let mut world = World::new();
    let layout = Layout::new::<Aligned>();
    assert_eq!(layout.align(), 64);
    // SAFETY: plain numbers, no drop.
    let id = world
        .register_component_with_descriptor(unsafe { ComponentDescriptor::new("Aligned", layout, None) })
        .unwrap();
    let entities: Vec<Entity> = (0..20u32).map(|i| world.spawn((i,))).collect();
    for (i, &e) in entities.iter().enumerate() {
        // SAFETY: `id` stores `Aligned`.
        unsafe { insert_as(&mut world, e, id, Aligned([i as u32; 4])).unwrap() };
    }
    for (i, &e) in entities.iter().enumerate() {
        let ptr = world.get_by_id(e, id).unwrap();
        assert_eq!(ptr.as_ptr().addr() % 64, 0);
        // SAFETY: as above.
        assert_eq!(unsafe { *ptr.deref::<Aligned>() }, Aligned([i as u32; 4]));
    }
}

#[test]
fn a_layout_whose_size_is_not_a_multiple_of_its_alignment_is_padded() {
    let mut world = World::new();
    let layout = Layout::from_size_align(3, 4).unwrap();
    // SAFETY: plain bytes, no drop.
    let descriptor = unsafe { ComponentDescriptor::new("Odd", layout, None) };
    assert_eq!(descriptor.layout(), Layout::from_size_align(4, 4).unwrap());
    let id = world.register_component_with_descriptor(descriptor).unwrap();
    let entities: Vec<Entity> = (0..6).map(|_| world.spawn(())).collect();
    for (i, &e) in entities.iter().enumerate() {
        // SAFETY: four bytes aligned to four: the padded layout.
        unsafe { insert_as(&mut world, e, id, u32::from_ne_bytes([i as u8; 4])).unwrap() };
    }
    for (i, &e) in entities.iter().enumerate() {
        let ptr = world.get_by_id(e, id).unwrap();
        assert_eq!(ptr.as_ptr().addr() % 4, 0);
        // SAFETY: as above.
        let value = unsafe { read_as::<u32>(&world, e, id) };
        assert_eq!(value, Ok(u32::from_ne_bytes([i as u8; 4])));
    }
}

#[test]
fn writes_by_id_mark_changes_for_typed_queries() {
    let mut world = World::new();
    let position = world.register_component::<Position>().id();
    let a = world.spawn((Position(0.0, 0.0),));
    let b = world.spawn((Position(1.0, 1.0),));
    let mut changed = world.query_filtered::<Entity, Changed<Position>>();
    assert_eq!(changed.iter(&world).count(), 2, "added counts as changed");
    assert_eq!(changed.iter(&world).count(), 0);

    // Looking and bypassing mark nothing.
    {
        let mut value = world.get_mut_by_id(a, position).unwrap();
        let _ = value.as_ref();
        // SAFETY: `position` stores `Position`.
        unsafe { value.bypass_change_detection().deref_mut::<Position>().0 = 9.0 };
    }
    assert_eq!(changed.iter(&world).count(), 0);
    assert_eq!(world.get::<Position>(a), Ok(&Position(9.0, 0.0)));

    // A write through `get_mut_by_id` marks it.
    let mut value = world.get_mut_by_id(b, position).unwrap();
    // SAFETY: as above.
    unsafe { value.as_mut().deref_mut::<Position>().1 = 7.0 };
    assert_eq!(changed.iter(&world).collect::<Vec<_>>(), [b]);

    // A write through a dynamic query marks it.
    let mut query = DynamicQuery::builder(&mut world).write(position).build().unwrap();
    query.for_each(&mut world, |mut item| {
        if item.entity() == a {
            let value = item.get_mut(position).unwrap();
            // SAFETY: as above.
            unsafe { value.with_type::<Position>().0 += 1.0 };
        }
    });
    assert_eq!(changed.iter(&world).collect::<Vec<_>>(), [a]);
    assert_eq!(world.get::<Position>(a), Ok(&Position(10.0, 0.0)));

    // A replace by id marks it too.
    // SAFETY: as above.
    unsafe { insert_as(&mut world, b, position, Position(2.0, 2.0)).unwrap() };
    assert_eq!(changed.iter(&world).collect::<Vec<_>>(), [b]);
}

/// The hook calls made, as (kind, entity).
#[derive(Default)]
struct HookLog(Vec<(&'static str, Entity)>);

fn hooked_world() -> (World, ComponentId, Arc<Mutex<HookLog>>) {
    let mut world = World::new();
    let log = Arc::new(Mutex::new(HookLog::default()));
    let hook = |name: &'static str, log: &Arc<Mutex<HookLog>>| {
        let log = Arc::clone(log);
        move |_: &mut HookWorld<'_>, ctx: HookContext| log.lock().unwrap().0.push((name, ctx.entity))
    };
    let id = world
        .register_component::<Position>()
        .on_add(hook("add", &log))
        .on_insert(hook("insert", &log))
        .on_replace(hook("replace", &log))
        .on_remove(hook("remove", &log))
        .id();
    (world, id, log)
}

#[test]
fn hooks_fire_for_by_id_inserts_and_removals_as_for_typed_ones() {
    let (mut typed, _, typed_log) = hooked_world();
    let e = typed.spawn((Velocity(0.0),));
    typed.insert(e, (Position(0.0, 0.0),)).unwrap();
    typed.insert(e, (Position(1.0, 0.0),)).unwrap();
    typed.remove::<(Position,)>(e).unwrap();

    let (mut by_id, position, by_id_log) = hooked_world();
    let f = by_id.spawn((Velocity(0.0),));
    // SAFETY: `position` stores `Position`.
    unsafe {
        insert_as(&mut by_id, f, position, Position(0.0, 0.0)).unwrap();
        insert_as(&mut by_id, f, position, Position(1.0, 0.0)).unwrap();
    }
    assert_eq!(by_id.remove_by_id(f, position), Ok(true));

    let expected = ["add", "insert", "replace", "insert", "replace", "remove"];
    let calls = |log: &Arc<Mutex<HookLog>>, entity| {
        let log = log.lock().unwrap();
        assert!(log.0.iter().all(|&(_, e)| e == entity));
        log.0.iter().map(|&(name, _)| name).collect::<Vec<_>>()
    };
    assert_eq!(calls(&typed_log, e), expected);
    assert_eq!(calls(&by_id_log, f), expected);
}

#[test]
fn observers_fire_for_by_id_inserts_and_removals() {
    use tabula::prelude::{OnAdd, OnRemove, ResMut, Trigger, WorldObserve};

    #[derive(Default)]
    struct Seen(Vec<(&'static str, Entity)>);
    fn added(trigger: Trigger<OnAdd<Position>>, mut seen: ResMut<Seen>) {
        seen.0.push(("add", trigger.target()));
    }
    fn removed(trigger: Trigger<OnRemove<Position>>, mut seen: ResMut<Seen>) {
        seen.0.push(("remove", trigger.target()));
    }
    let mut world = World::new();
    world.init_resource::<Seen>();
    world.observe(added);
    world.observe(removed);
    let position = world.register_component::<Position>().id();
    let e = world.spawn(());
    // SAFETY: `position` stores `Position`.
    unsafe { insert_as(&mut world, e, position, Position(0.0, 0.0)).unwrap() };
    assert_eq!(world.remove_by_id(e, position), Ok(true));
    assert_eq!(world.resource::<Seen>().unwrap().0, [("add", e), ("remove", e)]);
}

#[test]
fn hooks_added_by_id_fire_for_dynamic_components_on_every_path() {
    let mut world = World::new();
    let drops = Arc::new(AtomicUsize::new(0));
    let id = register_tracked(&mut world, "Hooked");
    let log = Arc::new(Mutex::new(HookLog::default()));
    for (kind, name) in [
        (HookKind::Add, "add"),
        (HookKind::Insert, "insert"),
        (HookKind::Replace, "replace"),
        (HookKind::Remove, "remove"),
        (HookKind::Despawn, "despawn"),
    ] {
        let log = Arc::clone(&log);
        world.add_hook_by_id(id, kind, move |world: &mut HookWorld<'_>, ctx: HookContext| {
            // The hook sees the value while the entity holds it.
            let held = world.world().get_by_id(ctx.entity, ctx.component).is_ok();
            assert!(held, "{name} runs while the entity holds the value");
            log.lock().unwrap().0.push((name, ctx.entity));
        });
    }
    let e = world.spawn(());
    // SAFETY: `id` stores `Tracked`.
    unsafe {
        insert_as(&mut world, e, id, tracked("a", &drops)).unwrap();
        insert_as(&mut world, e, id, tracked("b", &drops)).unwrap();
    }
    assert_eq!(world.remove_by_id(e, id), Ok(true));
    // SAFETY: as above.
    unsafe { insert_as(&mut world, e, id, tracked("c", &drops)).unwrap() };
    world.despawn(e).unwrap();
    let names: Vec<&str> = log.lock().unwrap().0.iter().map(|&(name, _)| name).collect();
    let expected = [
        "add", "insert", "replace", "insert", "replace", "remove", "add", "insert", "despawn", "replace",
        "remove",
    ];
    assert_eq!(names, expected);
    assert_eq!(drops.load(Ordering::SeqCst), 3);
}

#[test]
#[should_panic(expected = "no component has id 77")]
fn a_hook_for_an_unknown_id_is_refused() {
    World::new().add_hook_by_id(ComponentId::from_index(77), HookKind::Add, |_, _| {});
}

#[test]
fn required_components_and_removal_logs_follow_the_by_id_paths() {
    #[derive(Default, Debug, PartialEq)]
    struct Health(u32);
    let mut world = World::new();
    let position = world.register_component::<Position>().requires::<Health>().id();
    world.track_removals::<Position>();
    let e = world.spawn(());
    // SAFETY: `position` stores `Position`.
    unsafe { insert_as(&mut world, e, position, Position(0.0, 0.0)).unwrap() };
    assert_eq!(world.get::<Health>(e), Ok(&Health(0)), "the requirement followed");
    assert_eq!(world.remove_by_id(e, position), Ok(true));
    assert_eq!(world.removed::<Position>().collect::<Vec<_>>(), [e]);
}

#[test]
fn errors_name_the_entity_and_the_component() {
    let mut world = World::new();
    let drops = Arc::new(AtomicUsize::new(0));
    let id = register_tracked(&mut world, "game::Shield");
    let position = world.register_component::<Position>().id();
    let e = world.spawn((Velocity(0.0),));

    let missing = world.get_by_id(e, id).unwrap_err();
    assert_eq!(
        missing,
        EntityError::MissingComponent {
            entity: e,
            component: "game::Shield"
        }
    );
    assert!(missing.to_string().contains("game::Shield"), "{missing}");
    assert!(world.get_mut_by_id(e, position).is_err());

    let unknown = ComponentId::from_index(10_000);
    let error = world.get_by_id(e, unknown).unwrap_err();
    assert_eq!(
        error,
        EntityError::UnknownComponent {
            entity: e,
            component: unknown
        }
    );
    assert!(error.to_string().contains("10000"), "{error}");
    assert_eq!(
        world.remove_by_id(e, unknown),
        Err(EntityError::UnknownComponent {
            entity: e,
            component: unknown
        })
    );
    assert!(!world.has_by_id(e, unknown));

    // An unknown id leaves the value alone (the caller still owns it).
    let mut value = std::mem::ManuallyDrop::new(tracked("kept", &drops));
    // SAFETY: the pointer owns `value` for the call; it is not consumed for an unknown id.
    let result = unsafe {
        world.insert_by_id(
            e,
            unknown,
            OwningPtr::new(std::ptr::NonNull::from(&mut *value).cast()),
        )
    };
    assert!(matches!(result, Err(EntityError::UnknownComponent { .. })));
    // SAFETY: not moved out above.
    unsafe { std::mem::ManuallyDrop::drop(&mut value) };
    assert_eq!(drops.load(Ordering::SeqCst), 1);

    world.despawn(e).unwrap();
    assert_eq!(
        world.get_by_id(e, position).unwrap_err(),
        EntityError::NoSuchEntity(e)
    );
    assert_eq!(world.remove_by_id(e, position), Err(EntityError::NoSuchEntity(e)));
    assert!(world.get_mut_by_id(e, position).is_err());

    let mut other = World::new();
    let stranger = other.spawn((Position(0.0, 0.0),));
    assert!(matches!(
        world.get_by_id(stranger, position),
        Err(EntityError::WrongWorld { .. } | EntityError::NoSuchEntity(_))
    ));
}

#[test]
fn immutable_components_are_refused_in_place_but_replaced_by_id() {
    let mut world = World::new();
    let position = world.register_component::<Position>().immutable().id();
    let e = world.spawn((Position(0.0, 0.0),));
    assert!(matches!(
        world.get_mut_by_id(e, position),
        Err(EntityError::ImmutableComponent { entity, .. }) if entity == e
    ));
    // SAFETY: `position` stores `Position`.
    unsafe { insert_as(&mut world, e, position, Position(1.0, 1.0)).unwrap() };
    assert_eq!(world.get::<Position>(e), Ok(&Position(1.0, 1.0)));
    let error = DynamicQuery::builder(&mut world)
        .write(position)
        .build()
        .unwrap_err();
    assert!(matches!(error, DynamicQueryError::ImmutableComponent { .. }));
}

#[test]
fn registration_refuses_duplicate_names_and_types() {
    let mut world = World::new();
    let shield = register_tracked(&mut world, "Shield");
    // SAFETY: no drop.
    let again = unsafe { ComponentDescriptor::new("Shield", Layout::new::<u8>(), None) };
    let error = world.register_component_with_descriptor(again).unwrap_err();
    assert_eq!(error, DescriptorError::DuplicateName { name: "Shield" });
    assert!(error.to_string().contains("`Shield`"), "{error}");

    let position = world
        .register_component_with_descriptor(ComponentDescriptor::of::<Position>())
        .unwrap();
    assert_eq!(world.components().id::<Position>(), Some(position));
    assert!(
        world
            .register_component_with_descriptor(ComponentDescriptor::of::<Position>())
            .is_err()
    );
    assert_eq!(world.register_component::<Position>().id(), position);

    // Lookups and introspection know dynamic components by name.
    assert_eq!(world.components().id_by_name("Shield"), Some(shield));
    let info = world.components().info(shield);
    assert_eq!(
        (info.name(), info.type_id(), info.layout()),
        ("Shield", None, Layout::new::<Tracked>())
    );
    assert!(world.components().iter().any(|info| info.name() == "Shield"));
    let drops = Arc::new(AtomicUsize::new(0));
    let e = world.spawn((Position(0.0, 0.0),));
    // SAFETY: `shield` stores `Tracked`.
    unsafe { insert_as(&mut world, e, shield, tracked("on", &drops)).unwrap() };
    let mut names: Vec<&str> = world.entity(e).unwrap().component_names().collect();
    names.sort_unstable();
    assert!(names.contains(&"Shield"), "{names:?}");
    assert!(format!("{:?}", world.entity(e).unwrap()).contains("Shield"));
}

#[test]
fn dynamic_queries_read_write_filter_and_take_optional_terms() {
    let mut world = World::new();
    let position = world.register_component::<Position>().id();
    let velocity = world.register_component::<Velocity>().id();
    let frozen = world.register_component::<u8>().id();
    let label = register_tracked(&mut world, "Label");
    let drops = Arc::new(AtomicUsize::new(0));
    let moving = world.spawn((Position(0.0, 0.0), Velocity(1.0)));
    let still = world.spawn((Position(5.0, 0.0),));
    let stuck = world.spawn((Position(9.0, 0.0), Velocity(3.0), 0u8));
    // SAFETY: `label` stores `Tracked`.
    unsafe { insert_as(&mut world, moving, label, tracked("mover", &drops)).unwrap() };

    let mut query = DynamicQuery::builder(&mut world)
        .write(position)
        .read(velocity)
        .without(frozen)
        .optional(label)
        .build()
        .unwrap();
    let mut seen = Vec::new();
    query.for_each(&mut world, |mut item| {
        // SAFETY: the ids store the types they are read as.
        unsafe {
            let speed = item.get(velocity).unwrap().deref::<Velocity>().0;
            let text = item.get(label).map(|p| p.deref::<Tracked>().text.clone());
            assert!(
                item.get_mut(velocity).is_none(),
                "a read term gives no write access"
            );
            item.get_mut(position).unwrap().as_mut().deref_mut::<Position>().0 += speed;
            seen.push((item.entity(), text));
        }
    });
    assert_eq!(seen, [(moving, Some("mover".to_owned()))]);
    assert_eq!(world.get::<Position>(moving), Ok(&Position(1.0, 0.0)));
    assert_eq!(world.get::<Position>(stuck), Ok(&Position(9.0, 0.0)));

    // An archetype made after the query was built is matched on the next run.
    world.insert(still, (Velocity(2.0),)).unwrap();
    let mut entities: Vec<Entity> = query.iter_mut(&mut world).map(|item| item.entity()).collect();
    entities.sort_unstable();
    let mut expected = vec![moving, still];
    expected.sort_unstable();
    assert_eq!(entities, expected);

    // `with` filters without fetching; items of a read-only query come through `&World`.
    let mut with = DynamicQuery::builder(&mut world).with(frozen).build().unwrap();
    assert_eq!(
        with.iter(&world).map(|item| item.entity()).collect::<Vec<_>>(),
        [stuck]
    );
    assert!(with.iter(&world).all(|item| item.get(frozen).is_none()));
}

#[test]
fn dynamic_queries_skip_disabled_entities_unless_they_name_them() {
    let mut world = World::new();
    let position = world.register_component::<Position>().id();
    let disabled = world.register_component::<Disabled>().id();
    let live = world.spawn((Position(0.0, 0.0),));
    let pooled = world.spawn((Position(1.0, 0.0), Disabled));
    let count = |world: &mut World, query: &mut DynamicQuery| query.iter(world).count();

    let mut plain = DynamicQuery::builder(&mut world).read(position).build().unwrap();
    assert_eq!(
        plain.iter(&world).map(|item| item.entity()).collect::<Vec<_>>(),
        [live]
    );
    let mut allowing = DynamicQuery::builder(&mut world)
        .read(position)
        .allow(disabled)
        .build()
        .unwrap();
    assert_eq!(count(&mut world, &mut allowing), 2);
    let mut pool = DynamicQuery::builder(&mut world).with(disabled).build().unwrap();
    assert_eq!(
        pool.iter(&world).map(|item| item.entity()).collect::<Vec<_>>(),
        [pooled]
    );

    // Typed and dynamic queries agree on the default filter.
    let typed = world.query::<&Position>().iter(&world).count();
    let typed_allow = world
        .query_filtered::<&Position, Allow<Disabled>>()
        .iter(&world)
        .count();
    assert_eq!((typed, typed_allow), (1, 2));

    world.remove::<(Disabled,)>(pooled).unwrap();
    assert_eq!(count(&mut world, &mut plain), 2);
}

#[test]
fn dynamic_added_and_changed_filters_follow_writes_by_id_and_by_type() {
    let mut world = World::new();
    let position = world.register_component::<Position>().id();
    let drops = Arc::new(AtomicUsize::new(0));
    let label = register_tracked(&mut world, "Label");
    let a = world.spawn((Position(0.0, 0.0),));
    let b = world.spawn((Position(1.0, 0.0),));
    let mut changed = DynamicQuery::builder(&mut world)
        .read(position)
        .changed(position)
        .build()
        .unwrap();
    let mut added = DynamicQuery::builder(&mut world).added(label).build().unwrap();
    let entities = |query: &mut DynamicQuery, world: &World| {
        let mut seen: Vec<Entity> = query.iter(world).map(|item| item.entity()).collect();
        seen.sort_unstable();
        seen
    };
    assert_eq!(
        entities(&mut changed, &world).len(),
        2,
        "the first run sees every row"
    );
    assert_eq!(entities(&mut changed, &world), []);
    assert_eq!(entities(&mut added, &world), []);

    world.get_mut::<Position>(a).unwrap().0 = 3.0;
    assert_eq!(entities(&mut changed, &world), [a]);
    let mut value = world.get_mut_by_id(b, position).unwrap();
    // SAFETY: `position` stores `Position`.
    unsafe { value.as_mut().deref_mut::<Position>().1 = 3.0 };
    assert_eq!(entities(&mut changed, &world), [b]);

    // SAFETY: `label` stores `Tracked`.
    unsafe { insert_as(&mut world, b, label, tracked("new", &drops)).unwrap() };
    assert_eq!(entities(&mut added, &world), [b]);
    assert_eq!(entities(&mut added, &world), []);
    // SAFETY: as above.
    unsafe { insert_as(&mut world, b, label, tracked("replaced", &drops)).unwrap() };
    assert_eq!(
        entities(&mut added, &world),
        [],
        "a replacement is not an addition"
    );

    // A writing query with a change filter on the component it writes sees what changed
    // since its previous run but not its own writes, as a typed one does.
    let mut bump = DynamicQuery::builder(&mut world)
        .write(position)
        .changed(position)
        .build()
        .unwrap();
    let mut dynamic_runs = Vec::new();
    for step in 0..3 {
        if step == 2 {
            world.get_mut::<Position>(a).unwrap().1 = 9.0;
        }
        let mut seen = Vec::new();
        bump.for_each(&mut world, |mut item| {
            // SAFETY: as above.
            unsafe { item.get_mut(position).unwrap().as_mut().deref_mut::<Position>().0 += 1.0 };
            seen.push(item.entity());
        });
        dynamic_runs.push(seen.len());
    }
    let mut typed = world.query_filtered::<&mut Position, Changed<Position>>();
    let mut typed_runs = Vec::new();
    for step in 0..3 {
        if step == 2 {
            world.get_mut::<Position>(b).unwrap().1 = 9.0;
        }
        let mut count = 0;
        typed.for_each(&mut world, |mut p| {
            p.0 += 1.0;
            count += 1;
        });
        typed_runs.push(count);
    }
    assert_eq!(dynamic_runs, [2, 0, 1]);
    assert_eq!(typed_runs, dynamic_runs);
}

#[test]
fn dynamic_query_terms_are_checked() {
    let mut world = World::new();
    let a = world.register_component::<Position>().id();
    let unknown = ComponentId::from_index(999);
    assert_eq!(
        DynamicQuery::builder(&mut world)
            .read(unknown)
            .build()
            .unwrap_err(),
        DynamicQueryError::UnknownComponent(unknown)
    );
    assert_eq!(
        DynamicQuery::builder(&mut world)
            .with(a)
            .without(unknown)
            .build()
            .unwrap_err(),
        DynamicQueryError::UnknownComponent(unknown)
    );
    let conflict = DynamicQuery::builder(&mut world)
        .write(a)
        .write(a)
        .build()
        .unwrap_err();
    assert!(matches!(conflict, DynamicQueryError::Conflict { component } if component.ends_with("Position")));
    assert!(conflict.to_string().contains("Position"));
    assert!(DynamicQuery::builder(&mut world).read(a).read(a).build().is_ok());
}

#[test]
#[should_panic(expected = "write terms")]
fn a_writing_dynamic_query_cannot_run_through_a_shared_world() {
    let mut world = World::new();
    let a = world.register_component::<Position>().id();
    let mut query = DynamicQuery::builder(&mut world).write(a).build().unwrap();
    let _ = query.iter(&world).count();
}

#[test]
#[should_panic(expected = "another World")]
fn a_dynamic_query_is_for_its_own_world() {
    let mut world = World::new();
    let a = world.register_component::<Position>().id();
    let mut query = DynamicQuery::builder(&mut world).read(a).build().unwrap();
    let other = World::new();
    let _ = query.iter(&other).count();
}

/// What the model expects of one entity: its `Tracked` text, its `Aligned` value, its `u32`.
type Expected = (Option<String>, Option<Aligned>, Option<u32>);

/// Random inserts, replacements, removals and despawns by id and by type, over a dropping
/// and an over-aligned dynamic component and a typed one (which moves rows between
/// archetypes), against a map: every value reads back, each `Tracked` value is dropped
/// exactly once, and a dynamic query sees the entities the map says.
#[test]
fn random_by_id_operations_match_a_model() {
    let (seeds, steps) = if cfg!(miri) { (2, 60) } else { (20, 400) };
    for seed in 0..seeds {
        let mut rng = common::Rng(seed);
        let drops = Arc::new(AtomicUsize::new(0));
        let mut made = 0;
        let mut world = World::new();
        let text = register_tracked(&mut world, "Text");
        // SAFETY: plain numbers, no drop.
        let aligned = world
            .register_component_with_descriptor(unsafe {
                ComponentDescriptor::new("Aligned", Layout::new::<Aligned>(), None)
            })
            .unwrap();
        let number = world.register_component::<u32>().id();
        let mut query = DynamicQuery::builder(&mut world)
            .read(text)
            .optional(aligned)
            .build()
            .unwrap();
        let mut model: Vec<(Entity, Expected)> = Vec::new();
        for step in 0..steps {
            let pick = |rng: &mut common::Rng, len: usize| (len > 0).then(|| rng.below(len));
            match rng.below(8) {
                0 => model.push((world.spawn(()), (None, None, None))),
                1 | 2 => {
                    if let Some(i) = pick(&mut rng, model.len()) {
                        let value = format!("{seed}/{step}");
                        made += 1;
                        // SAFETY: `text` stores `Tracked`.
                        unsafe { insert_as(&mut world, model[i].0, text, tracked(&value, &drops)).unwrap() };
                        model[i].1.0 = Some(value);
                    }
                }
                3 => {
                    if let Some(i) = pick(&mut rng, model.len()) {
                        let value = Aligned([step as u32; 4]);
                        // SAFETY: `aligned` stores `Aligned`.
                        unsafe { insert_as(&mut world, model[i].0, aligned, value).unwrap() };
                        model[i].1.1 = Some(value);
                    }
                }
                4 => {
                    if let Some(i) = pick(&mut rng, model.len()) {
                        let (id, had) = match rng.below(3) {
                            0 => (text, model[i].1.0.take().is_some()),
                            1 => (aligned, model[i].1.1.take().is_some()),
                            _ => (number, model[i].1.2.take().is_some()),
                        };
                        assert_eq!(world.remove_by_id(model[i].0, id), Ok(had));
                    }
                }
                5 => {
                    if let Some(i) = pick(&mut rng, model.len()) {
                        world.insert(model[i].0, (step as u32,)).unwrap();
                        model[i].1.2 = Some(step as u32);
                    }
                }
                6 => {
                    if let Some(i) = pick(&mut rng, model.len()) {
                        world.despawn(model.swap_remove(i).0).unwrap();
                    }
                }
                _ => {
                    if rng.chance(5) {
                        world.clear();
                        model.clear();
                    }
                }
            }
            let alive = model.iter().filter(|(_, e)| e.0.is_some()).count();
            assert_eq!(
                made - drops.load(Ordering::SeqCst),
                alive,
                "seed {seed} step {step}"
            );
            for (entity, (t, a, n)) in &model {
                assert_eq!(
                    world
                        .get_by_id(*entity, text)
                        .ok()
                        .map(|_| text_of(&world, *entity, text)),
                    *t
                );
                // SAFETY: the ids store the types read.
                unsafe {
                    assert_eq!(read_as::<Aligned>(&world, *entity, aligned).ok(), *a);
                    assert_eq!(read_as::<u32>(&world, *entity, number).ok(), *n);
                }
            }
            let mut seen: Vec<(Entity, bool)> = query
                .iter(&world)
                .map(|item| (item.entity(), item.get(aligned).is_some()))
                .collect();
            let mut expected: Vec<(Entity, bool)> = (model.iter())
                .filter(|(_, e)| e.0.is_some())
                .map(|(entity, e)| (*entity, e.1.is_some()))
                .collect();
            seen.sort_unstable();
            expected.sort_unstable();
            assert_eq!(seen, expected, "seed {seed} step {step}");
        }
        drop(world);
        assert_eq!(made, drops.load(Ordering::SeqCst), "every value dropped once");
    }
}
