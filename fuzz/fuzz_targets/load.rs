//! Fuzzes loading a save: the input's first byte picks the format (even: postcard, odd:
//! JSON) and the rest is loaded into a fresh world (`World::load`) and, remapped, into a
//! world that already has entities, a hierarchy and a resource (`World::load_remapped`).
//! Whatever the bytes: no panic; a refused load leaves the world exactly as it was (its
//! own save is byte for byte the same); an accepted one leaves a world that saves, runs
//! hooks (every entity despawned, relationships included) and empties.
//!
//! Seeds made from real saves are in `fuzz/seeds/load`:
//! `cargo +nightly fuzz run load fuzz/corpus/load fuzz/seeds/load -- -max_total_time=120`
//! from the repository root.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde::{Deserialize, Serialize};
use tabula::{Children, Entity, EntityMapper, MapEntities, Parent, World};

#[derive(Serialize, Deserialize)]
struct Position(f32, f32);

#[derive(Serialize, Deserialize)]
struct Name(String);

#[derive(Serialize, Deserialize)]
struct Marker;

#[derive(Serialize, Deserialize)]
#[repr(align(64))]
struct Aligned(u8);

#[derive(Serialize, Deserialize)]
struct Target(Entity, Vec<Entity>);

impl MapEntities for Target {
    fn map_entities(&mut self, mapper: &mut dyn EntityMapper) {
        self.0.map_entities(mapper);
        self.1.map_entities(mapper);
    }
}

#[derive(Serialize, Deserialize)]
struct Score(u32);

/// Stored in a sparse set.
#[derive(Serialize, Deserialize)]
struct Buff(String);

fn registered() -> World {
    let mut world = World::new();
    world.register_component::<Buff>().sparse_set();
    world.register_serde::<Buff>("Buff");
    world.register_serde::<Position>("Position");
    world.register_serde::<Name>("Name");
    world.register_serde::<Marker>("Marker");
    world.register_serde::<Aligned>("Aligned");
    world.register_serde_mapped::<Target>("Target");
    world.register_serde_mapped::<Parent>("Parent");
    world.register_serde_mapped::<Children>("Children");
    world.register_serde_resource::<Score>("Score");
    world
}

/// A world with entities of its own, for the remapped load.
fn busy() -> World {
    let mut world = registered();
    let a = world.spawn((Name("a".into()), Position(1.0, 2.0)));
    let b = world.spawn((Name("b".into()), Parent::new(a), Marker));
    world.spawn((Target(a, vec![b]), Aligned(3)));
    world.insert(b, (Buff("b".into()),)).unwrap();
    world.insert_resource(Score(5));
    world
}

fn save(world: &World) -> Vec<u8> {
    postcard::to_stdvec(&world.snapshot().expect("every component is registered")).expect("saves")
}

/// An accepted load left a world that saves, and whose entities despawn (hooks included).
fn exercise(mut world: World) {
    save(&world);
    let mut query = world.query::<Entity>();
    let all: Vec<Entity> = query.iter(&world).collect();
    for entity in all {
        // A linked despawn may have taken it already.
        let _ = world.despawn(entity);
    }
    assert!(world.is_empty(), "every loaded entity despawns");
}

fuzz_target!(|data: &[u8]| {
    let Some((&format, bytes)) = data.split_first() else {
        return;
    };
    let json = format & 1 == 1;
    if json && std::str::from_utf8(bytes).is_err() {
        return;
    }
    for remapped in [false, true] {
        let mut world = if remapped { busy() } else { registered() };
        let before = save(&world);
        let result = match (json, remapped) {
            (false, false) => world.load(&mut postcard::Deserializer::from_bytes(bytes)),
            (false, true) => world
                .load_remapped(&mut postcard::Deserializer::from_bytes(bytes))
                .map(drop),
            (true, false) => world.load(&mut serde_json::Deserializer::from_slice(bytes)),
            (true, true) => world
                .load_remapped(&mut serde_json::Deserializer::from_slice(bytes))
                .map(drop),
        };
        match result {
            Ok(()) => exercise(world),
            Err(error) => {
                assert!(!error.to_string().is_empty());
                assert_eq!(save(&world), before, "a refused load changed the world: {error}");
            }
        }
    }
});
