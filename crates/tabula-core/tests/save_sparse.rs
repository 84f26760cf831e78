//! Saves of sparse-set components (`register_component::<T>().sparse_set()`): the values,
//! their ticks and each set's dense order round trip; a replay continues identically after
//! a load; subset and remapped loads carry them; bad input (a value for a dead id, of the
//! wrong type, twice, a storage this world does not use) is refused with the world
//! unchanged.
#![cfg(feature = "serde")]

use serde::{Deserialize, Serialize};
use tabula::{Entity, EntityMapper, LoadError, MapEntities, World};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Name(String);

/// Sparse, with a heap value (a leak or a double drop shows under Miri).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Buff(String);

/// Sparse and zero-sized.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
struct Stunned;

/// Sparse, holding an entity (mapped on a remapped load).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
struct Targets(Entity);

impl MapEntities for Targets {
    fn map_entities(&mut self, mapper: &mut dyn EntityMapper) {
        self.0.map_entities(mapper);
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
struct SaveMe;

fn registered() -> World {
    let mut world = World::new();
    world.register_component::<Buff>().sparse_set();
    world.register_component::<Stunned>().sparse_set();
    world.register_component::<Targets>().sparse_set();
    world.register_serde::<Name>("Name");
    world.register_serde::<Buff>("Buff");
    world.register_serde::<Stunned>("Stunned");
    world.register_serde_mapped::<Targets>("Targets");
    world.register_serde::<SaveMe>("SaveMe");
    world
}

fn json(world: &World) -> String {
    serde_json::to_string(&world.snapshot().unwrap()).unwrap()
}

/// A world whose sparse sets' dense order is not the spawn order: values removed from the
/// middle (a swap-remove moves the last one in), an entity despawned, ticks moved on.
fn shuffled() -> (World, Vec<Entity>) {
    let mut world = registered();
    let n = if cfg!(miri) { 6 } else { 24 };
    let entities: Vec<Entity> = (0..n)
        .map(|i| world.spawn((Name(format!("e{i}")), SaveMe)))
        .collect();
    for (i, &e) in entities.iter().enumerate() {
        // Each value added at its own tick.
        world.increment_change_tick();
        world.insert(e, (Buff(format!("buff{i}")),)).unwrap();
        if i % 2 == 0 {
            world.insert(e, (Stunned,)).unwrap();
        }
        world.insert(e, (Targets(entities[(i + 1) % n]),)).unwrap();
    }
    world.remove::<(Buff,)>(entities[1]).unwrap();
    world.remove::<(Stunned,)>(entities[0]).unwrap();
    world.despawn(entities[2]).unwrap();
    world.increment_change_tick();
    world.get_mut::<Buff>(entities[3]).unwrap().0.push('!');
    let alive = entities.into_iter().filter(|&e| world.contains(e)).collect();
    (world, alive)
}

/// The holders of `T`, in the order `World::get` finds them over `entities`, with values.
fn values<T: tabula::Component + Clone>(world: &World, entities: &[Entity]) -> Vec<(Entity, T)> {
    (entities.iter())
        .filter_map(|&e| Some((e, world.get::<T>(e).ok()?.clone())))
        .collect()
}

#[test]
fn sparse_values_round_trip_with_ticks_and_dense_order_in_json_and_binary() {
    let (world, alive) = shuffled();
    let text = json(&world);
    // The set's dense order is not the spawn order (a swap-remove moved the last in), so
    // the checks below see the order restored, not rebuilt.
    let value: serde_json::Value = serde_json::from_str(&text).unwrap();
    let buff = (value["sparse"].as_array().unwrap().iter())
        .find(|set| set["component"] == "Buff")
        .unwrap();
    let order: Vec<u64> = serde_json::from_value(buff["entities"].clone()).unwrap();
    assert!(!order.is_sorted(), "{order:?}");
    let bytes = postcard::to_stdvec(&world.snapshot().unwrap()).unwrap();

    let mut from_json = registered();
    from_json
        .load(&mut serde_json::Deserializer::from_str(&text))
        .unwrap();
    let mut from_binary = registered();
    from_binary
        .load(&mut postcard::Deserializer::from_bytes(&bytes))
        .unwrap();
    for loaded in [&from_json, &from_binary] {
        assert_eq!(values::<Buff>(loaded, &alive), values::<Buff>(&world, &alive));
        assert_eq!(
            values::<Stunned>(loaded, &alive),
            values::<Stunned>(&world, &alive)
        );
        assert_eq!(
            values::<Targets>(loaded, &alive),
            values::<Targets>(&world, &alive)
        );
        // The save of the loaded world is the same text: every set's holders in the same
        // dense order, every value's `added` and `changed` ticks the same.
        assert_eq!(json(loaded), text);
    }
    // Ticks are saved: the edited value was changed after it was added.
    let edited = (buff["rows"].as_array().unwrap().iter())
        .find(|row| row[2] == "buff3!")
        .unwrap();
    assert!(edited[1].as_u64() > edited[0].as_u64(), "{edited}");
}

#[test]
fn a_loaded_world_continues_as_the_saved_one_with_sparse_components() {
    let (mut world, alive) = shuffled();
    let mut loaded = registered();
    loaded
        .load(&mut serde_json::Deserializer::from_str(&json(&world)))
        .unwrap();
    // The same steps on both: swap-removes depend on the dense order, new ids on the
    // allocator; the saves after must agree byte for byte.
    for w in [&mut world, &mut loaded] {
        w.remove::<(Buff,)>(alive[0]).unwrap();
        w.despawn(alive[3]).unwrap();
        let e = w.spawn((Name("new".into()),));
        w.insert(e, (Buff("fresh".into()), Stunned)).unwrap();
        w.insert(alive[1], (Buff("again".into()),)).unwrap();
    }
    assert_eq!(json(&loaded), json(&world));
}

#[test]
fn a_subset_save_keeps_the_sparse_values_of_the_saved_entities_only() {
    let mut world = registered();
    let kept = world.spawn((Name("kept".into()), SaveMe));
    let left = world.spawn((Name("left".into()),));
    world.insert(left, (Buff("left".into()),)).unwrap();
    world.insert(kept, (Buff("kept".into()), Stunned)).unwrap();
    let text = serde_json::to_string(&world.snapshot_with::<SaveMe>().unwrap()).unwrap();
    assert!(!text.contains("\"left\""), "{text}");
    let mut loaded = registered();
    loaded
        .load(&mut serde_json::Deserializer::from_str(&text))
        .unwrap();
    assert_eq!(loaded.get::<Buff>(kept).unwrap(), &Buff("kept".into()));
    assert!(loaded.has::<Stunned>(kept));
    assert!(!loaded.contains(left));
    assert_eq!(loaded.len(), 1);
}

#[test]
fn a_remapped_load_maps_sparse_holders_and_the_entities_they_hold() {
    let mut saved = registered();
    let a = saved.spawn((Name("a".into()),));
    let b = saved.spawn((Name("b".into()),));
    saved.insert(a, (Buff("a".into()), Targets(b))).unwrap();
    let text = json(&saved);

    let mut world = registered();
    let mine = world.spawn((Name("mine".into()),));
    world.insert(mine, (Buff("mine".into()),)).unwrap();
    let map = world
        .load_remapped(&mut serde_json::Deserializer::from_str(&text))
        .unwrap();
    let (new_a, new_b) = (map[&a], map[&b]);
    assert_eq!(world.get::<Buff>(new_a).unwrap(), &Buff("a".into()));
    assert_eq!(world.get::<Targets>(new_a).unwrap(), &Targets(new_b));
    assert_eq!(world.get::<Buff>(mine).unwrap(), &Buff("mine".into()));
    assert!(!world.has::<Buff>(new_b));
    // The set is consistent after: removing and re-adding works for both holders.
    world.remove::<(Buff,)>(mine).unwrap();
    assert_eq!(world.get::<Buff>(new_a).unwrap(), &Buff("a".into()));

    // A sparse value holding an entity the save lacks cannot be mapped.
    let mut saved = registered();
    let gone = saved.spawn(());
    let holder = saved.spawn((Targets(gone),));
    saved.despawn(gone).unwrap();
    let text = json(&saved);
    let mut world = registered();
    let error = world
        .load_remapped(&mut serde_json::Deserializer::from_str(&text))
        .unwrap_err();
    let message = error.to_string();
    assert!(
        message.contains("Targets")
            && message.contains(&holder.to_string())
            && message.contains(&gone.to_string()),
        "{message}"
    );
    assert!(world.is_empty());
}

/// The save of a small world, as a JSON value to corrupt.
fn small() -> (serde_json::Value, Entity, Entity) {
    let mut world = registered();
    let a = world.spawn((Name("a".into()),));
    let b = world.spawn((Name("b".into()),));
    world.insert(a, (Buff("a".into()),)).unwrap();
    world.insert(b, (Buff("b".into()),)).unwrap();
    (serde_json::from_str(&json(&world)).unwrap(), a, b)
}

/// Loads `value` into a fresh registered world: the error, and the world unchanged.
fn refused(value: &serde_json::Value, needle: &str) -> LoadError {
    let mut world = registered();
    let before = json(&world);
    let error = world
        .load(&mut serde_json::Deserializer::from_str(&value.to_string()))
        .unwrap_err();
    assert!(error.to_string().contains(needle), "{error} lacks {needle:?}");
    assert_eq!(json(&world), before, "the world is unchanged");
    error
}

#[test]
fn bad_sparse_sets_are_refused_naming_what_is_wrong() {
    let (value, a, b) = small();
    let set = |v: &mut serde_json::Value| -> serde_json::Value { v["sparse"][0].clone() };

    // A value held by a dead id (a generation the slot does not have).
    let mut bad = value.clone();
    let dead = Entity::from_bits(a.to_bits() + (1 << 32)).unwrap();
    bad["sparse"][0]["entities"][0] = dead.to_bits().into();
    let error = refused(
        &bad,
        &format!("held by {dead}, which is not a live entity of the save"),
    );
    assert!(matches!(error, LoadError::Invalid(_)));

    // An id that is no entity at all, and one beyond the allocator.
    let mut bad = value.clone();
    bad["sparse"][0]["entities"][0] = 0u64.into();
    refused(&bad, "not a live entity of the save");
    let mut bad = value.clone();
    bad["sparse"][0]["entities"][0] = Entity::from_bits((1 << 32) | 500).unwrap().to_bits().into();
    refused(&bad, "not a live entity of the save");

    // The same holder twice.
    let mut bad = value.clone();
    bad["sparse"][0]["entities"][1] = a.to_bits().into();
    refused(&bad, &format!("\"Buff\" is held twice by entity {a}"));

    // A value of the wrong type (the values are strings).
    let mut bad = value.clone();
    bad["sparse"][0]["rows"][1][2] = 5.into();
    refused(&bad, "component \"Buff\", row 1");

    // Fewer values than holders, and more.
    let mut bad = value.clone();
    bad["sparse"][0]["rows"].as_array_mut().unwrap().pop();
    refused(&bad, "\"Buff\" has 1 rows");
    let mut bad = value.clone();
    let extra = bad["sparse"][0]["rows"][0].clone();
    bad["sparse"][0]["rows"].as_array_mut().unwrap().push(extra);
    refused(&bad, "more rows");

    // A set twice, and an unknown component name.
    let mut bad = value.clone();
    let again = set(&mut bad);
    bad["sparse"].as_array_mut().unwrap().push(again);
    refused(&bad, "sparse component \"Buff\" is saved twice");
    let mut bad = value.clone();
    bad["sparse"][0]["component"] = "Nerf".into();
    refused(&bad, "unknown component name \"Nerf\"");
    let _ = b;
}

#[test]
fn a_component_loads_into_the_storage_it_was_saved_from_or_is_refused() {
    // Saved sparse, stored in tables here.
    let (value, ..) = small();
    let mut tables = World::new();
    tables.register_serde::<Name>("Name");
    tables.register_serde::<Buff>("Buff");
    let error = tables
        .load(&mut serde_json::Deserializer::from_str(&value.to_string()))
        .unwrap_err();
    assert!(
        error
            .to_string()
            .contains("\"Buff\" is saved in a sparse set, but this world stores it in archetype tables"),
        "{error}"
    );
    assert!(tables.is_empty() && tables.archetypes().count() == 1);

    // Saved in tables, stored sparse here.
    let mut saved = World::new();
    saved.register_serde::<Name>("Name");
    saved.register_serde::<Buff>("Buff");
    saved.spawn((Name("a".into()), Buff("a".into())));
    let text = json(&saved);
    let mut sparse = registered();
    let error = sparse
        .load(&mut serde_json::Deserializer::from_str(&text))
        .unwrap_err();
    assert!(error.to_string().contains("holds `"), "{error}");
    assert!(error.to_string().contains("Buff"), "{error}");
    assert!(sparse.is_empty());
}

#[test]
fn an_unregistered_sparse_component_is_refused_not_left_out() {
    #[derive(Clone, Copy)]
    struct Scratch;
    let mut world = registered();
    world.register_component::<Scratch>().sparse_set();
    let e = world.spawn((Name("a".into()),));
    world.spawn((Name("b".into()), SaveMe));
    world.insert(e, (Scratch,)).unwrap();
    let error = world.snapshot().unwrap_err();
    assert!(
        matches!(error, tabula::SaveError::Unregistered { entities: 1, .. }),
        "{error}"
    );
    assert!(error.to_string().contains("Scratch"), "{error}");
    // A subset save that leaves the holder out is fine.
    assert!(world.snapshot_with::<SaveMe>().is_ok());
}
