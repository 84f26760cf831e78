//! Saves of dynamic components (registered at run time from a descriptor, no Rust type),
//! through the bytes codec (`World::register_serde_bytes`): round trips in JSON and a
//! binary format beside typed components, a value of the wrong size refused with the world
//! unchanged, and a component with a drop function refused at registration.
#![cfg(feature = "serde")]

use std::alloc::Layout;

use serde::{Deserialize, Serialize};
use tabula::{ComponentDescriptor, ComponentId, Entity, OwningPtr, World};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Name(String);

/// The world's dynamic components: `Hp` (a `u32`), `Velocity` (two `f32`s, over-aligned
/// to 16) and `Tag` (zero-sized).
struct Ids {
    hp: ComponentId,
    velocity: ComponentId,
    tag: ComponentId,
}

fn registered() -> (World, Ids) {
    let mut world = World::new();
    world.register_serde::<Name>("Name");
    let mut dynamic = |name, layout| {
        // SAFETY: plain bytes, no drop.
        let id = world
            .register_component_with_descriptor(unsafe { ComponentDescriptor::new(name, layout, None) })
            .unwrap();
        // SAFETY: each is plain bytes: no padding (a `u32`, two `f32`s filling 16-aligned
        // 16 bytes are written whole below, nothing), any bit pattern a valid value.
        unsafe { world.register_serde_bytes(id, name) };
        id
    };
    let hp = dynamic("Hp", Layout::new::<u32>());
    let velocity = dynamic("Velocity", Layout::from_size_align(16, 16).unwrap());
    let tag = dynamic("Tag", Layout::new::<()>());
    (world, Ids { hp, velocity, tag })
}

fn insert<T>(world: &mut World, e: Entity, id: ComponentId, value: T) {
    // SAFETY: every caller passes a value of `id`'s layout (below).
    OwningPtr::make(value, |ptr| unsafe { world.insert_by_id(e, id, ptr) }).unwrap();
}

fn read<T: Copy>(world: &World, e: Entity, id: ComponentId) -> Option<T> {
    // SAFETY: every caller reads `id` as the type it was written as.
    world
        .get_by_id(e, id)
        .ok()
        .map(|ptr| unsafe { *ptr.deref::<T>() })
}

#[repr(C, align(16))]
#[derive(Clone, Copy, Debug, PartialEq)]
struct V([f32; 4]);

fn sample() -> (World, Ids, Vec<Entity>) {
    let (mut world, ids) = registered();
    let n = if cfg!(miri) { 3 } else { 20 };
    let mut entities = Vec::new();
    for i in 0..n {
        let e = world.spawn((Name(format!("e{i}")),));
        insert(&mut world, e, ids.hp, 100u32 + i);
        if i % 2 == 0 {
            insert(&mut world, e, ids.velocity, V([i as f32, -1.5, 0.25, f32::MAX]));
        }
        if i % 3 == 0 {
            insert(&mut world, e, ids.tag, ());
        }
        entities.push(e);
    }
    (world, ids, entities)
}

fn json(world: &World) -> String {
    serde_json::to_string(&world.snapshot().unwrap()).unwrap()
}

#[test]
fn dynamic_components_round_trip_as_bytes_in_json_and_binary() {
    let (world, ids, entities) = sample();
    let text = json(&world);
    let bytes = postcard::to_stdvec(&world.snapshot().unwrap()).unwrap();
    let (mut from_json, loaded_ids) = registered();
    from_json
        .load(&mut serde_json::Deserializer::from_str(&text))
        .unwrap();
    let (mut from_binary, _) = registered();
    from_binary
        .load(&mut postcard::Deserializer::from_bytes(&bytes))
        .unwrap();
    for loaded in [&from_json, &from_binary] {
        for &e in &entities {
            assert_eq!(
                read::<u32>(loaded, e, loaded_ids.hp),
                read::<u32>(&world, e, ids.hp)
            );
            assert_eq!(
                read::<V>(loaded, e, loaded_ids.velocity),
                read::<V>(&world, e, ids.velocity)
            );
            assert_eq!(loaded.has_by_id(e, loaded_ids.tag), world.has_by_id(e, ids.tag));
            assert_eq!(loaded.get::<Name>(e).unwrap(), world.get::<Name>(e).unwrap());
        }
        assert_eq!(json(loaded), text);
    }
    // JSON holds the bytes as numbers: `Hp` 100 is [100, 0, 0, 0] on a little-endian machine.
    if cfg!(target_endian = "little") {
        assert!(text.contains("[100,0,0,0]"), "{text}");
    }
}

#[test]
fn a_dynamic_value_of_the_wrong_size_is_refused() {
    let (world, ..) = sample();
    let value: serde_json::Value = serde_json::from_str(&json(&world)).unwrap();
    let archetype = (value["archetypes"].as_array().unwrap().iter())
        .position(|a| a["components"] == serde_json::json!(["Name", "Hp"]))
        .expect("an archetype of Name and Hp");
    for (bad, expect) in [
        (serde_json::json!([1, 2, 3]), "invalid length 3, expected 4 bytes"),
        (
            serde_json::json!([1, 2, 3, 4, 5]),
            "invalid length 5, expected 4 bytes",
        ),
        (serde_json::json!([1, 2, 3, 300]), "300"),
        (serde_json::json!(-1), "expected 4 bytes"),
    ] {
        let mut corrupt = value.clone();
        corrupt["archetypes"][archetype]["columns"][1][0][2] = bad;
        let (mut loaded, _) = registered();
        let before = json(&loaded);
        let error = loaded
            .load(&mut serde_json::Deserializer::from_str(&corrupt.to_string()))
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("component \"Hp\", row 0") && error.contains(expect),
            "{error}"
        );
        assert_eq!(json(&loaded), before);
    }
}

#[test]
#[should_panic(expected = "has a drop function")]
fn a_dynamic_component_with_a_drop_function_is_not_plain_bytes() {
    unsafe fn drop_string(ptr: *mut u8) {
        // SAFETY: the component holds `String`s.
        unsafe { std::ptr::drop_in_place(ptr.cast::<String>()) }
    }
    let mut world = World::new();
    // SAFETY: `drop_string` drops the `String`s this component holds.
    let id = world
        .register_component_with_descriptor(unsafe {
            ComponentDescriptor::new("Label", Layout::new::<String>(), Some(drop_string))
        })
        .unwrap();
    // SAFETY: refused before anything is registered.
    unsafe { world.register_serde_bytes(id, "Label") };
}
