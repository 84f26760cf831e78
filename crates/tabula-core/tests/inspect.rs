//! `World::inspect`: every component of an entity by name, values for those registered with
//! `register_debug` (or, with `serde`, `register_serde`), sparse-set components too, and an
//! error naming a dead entity.

use tabula::{ComponentDescriptor, EntityError, World};

#[derive(Debug, Clone, PartialEq)]
struct Position(f32, f32);

#[derive(Debug)]
#[allow(dead_code, reason = "read through Debug only")]
struct Name(String);

struct Opaque;

#[derive(Debug)]
#[repr(align(64))]
#[allow(dead_code, reason = "read through Debug only")]
struct Aligned(u8);

#[derive(Debug)]
struct Marker;

#[test]
fn lists_every_component_with_the_values_it_can_print() {
    let mut world = World::new();
    world.register_debug::<Position>();
    world.register_debug::<Name>();
    world.register_debug::<Aligned>();
    world.register_debug::<Marker>();
    let e = world.spawn((
        Position(1.0, 2.5),
        Name("ship".into()),
        Opaque,
        Aligned(9),
        Marker,
    ));
    let dump = world.inspect(e).unwrap().to_string();
    let lines: Vec<&str> = dump.lines().collect();
    assert_eq!(lines[0], format!("entity {e}"));
    let mut components: Vec<&str> = lines[1..].iter().map(|l| l.trim()).collect();
    components.sort_unstable();
    assert_eq!(
        components,
        [
            "Aligned: Aligned(9)",
            "Marker: Marker",
            "Name: Name(\"ship\")",
            "Opaque",
            "Position: Position(1.0, 2.5)",
        ]
    );
}

#[test]
fn debug_form_is_a_map_and_shows_current_values() {
    let mut world = World::new();
    world.register_debug::<Position>();
    let e = world.spawn((Position(0.0, 0.0), Opaque));
    world.get_mut::<Position>(e).unwrap().0 = 4.0;
    let debug = format!("{:?}", world.inspect(e).unwrap());
    assert!(
        debug.starts_with(&format!("Inspection {{ entity: {e:?}, components: {{")),
        "{debug}"
    );
    assert!(debug.contains("\"Position\": Position(4.0, 0.0)"), "{debug}");
    assert!(debug.contains("\"Opaque\": .."), "{debug}");
    let pretty = format!("{:#?}", world.inspect(e).unwrap());
    assert!(pretty.lines().count() > 3, "{pretty}");
}

#[test]
fn registering_before_or_after_spawning_is_the_same() {
    let mut world = World::new();
    let e = world.spawn((Position(3.0, 4.0),));
    assert_eq!(
        world.inspect(e).unwrap().to_string().lines().nth(1),
        Some("  Position")
    );
    world.register_debug::<Position>();
    assert_eq!(
        world.inspect(e).unwrap().to_string().lines().nth(1),
        Some("  Position: Position(3.0, 4.0)")
    );
    assert!(
        world
            .components()
            .info(world.components().id::<Position>().unwrap())
            .has_debug()
    );
}

#[test]
fn an_entity_without_components_is_one_line() {
    let mut world = World::new();
    let e = world.spawn(());
    let inspection = world.inspect(e).unwrap();
    assert_eq!(inspection.entity(), e);
    assert_eq!(inspection.component_names().count(), 0);
    assert_eq!(inspection.to_string(), format!("entity {e}\n"));
}

#[test]
fn a_dead_entity_is_an_error_naming_it() {
    let mut world = World::new();
    let e = world.spawn((Position(0.0, 0.0),));
    world.despawn(e).unwrap();
    let error = world.inspect(e).unwrap_err();
    assert_eq!(error, EntityError::NoSuchEntity(e));
    assert!(error.to_string().contains(&e.to_string()), "{error}");
    let other = World::with_tag(world.tag().wrapping_add(1));
    assert!(matches!(other.inspect(e), Err(EntityError::WrongWorld { .. })));
}

#[test]
fn a_dynamic_component_is_listed_by_its_name() {
    let mut world = World::new();
    // SAFETY: the values inserted are `u64`s, which are `Send + Sync` and need no drop.
    let descriptor =
        unsafe { ComponentDescriptor::new("script.Score", std::alloc::Layout::new::<u64>(), None) };
    let id = world.register_component_with_descriptor(descriptor).unwrap();
    let e = world.spawn((Position(0.0, 0.0),));
    tabula::OwningPtr::make(5u64, |ptr| {
        // SAFETY: component `id` has `u64`'s layout and no drop.
        unsafe { world.insert_by_id(e, id, ptr) }
    })
    .unwrap();
    let names: Vec<_> = world.inspect(e).unwrap().component_names().collect();
    assert!(names.contains(&"script.Score"), "{names:?}");
}

/// With the `serde` feature, a component registered for save and load shows its value
/// through `Serialize`, in `Debug`'s form; `Debug` wins when both are registered.
#[cfg(feature = "serde")]
#[test]
fn values_of_serde_registered_components_are_printed() {
    use serde::Serialize;
    #[derive(Serialize, serde::Deserialize)]
    struct Ship {
        name: String,
        crew: Vec<u8>,
        home: Option<(i32, i32)>,
        class: Class,
    }
    #[derive(Serialize, serde::Deserialize)]
    enum Class {
        Frigate,
        Carrier { hangars: u8 },
    }
    #[derive(Serialize, serde::Deserialize)]
    struct Hp(u32);
    #[derive(Serialize, serde::Deserialize)]
    struct Docked;
    #[derive(Debug, Serialize, serde::Deserialize)]
    struct Both(u8);
    #[derive(Serialize, serde::Deserialize)]
    struct Shield(f32);

    let mut world = World::new();
    world.register_component::<Shield>().sparse_set();
    world.register_serde::<Ship>("Ship");
    world.register_serde::<Hp>("Hp");
    world.register_serde::<Docked>("Docked");
    world.register_serde::<Shield>("Shield");
    world.register_serde::<Both>("Both");
    world.register_debug::<Both>();
    let ship = Ship {
        name: "Sulaco \"II\"".into(),
        crew: vec![1, 2],
        home: Some((3, -4)),
        class: Class::Carrier { hangars: 2 },
    };
    let e = world.spawn((ship, Hp(7), Docked, Both(9)));
    world.insert(e, (Shield(0.5),)).unwrap();
    let dump = world.inspect(e).unwrap().to_string();
    for line in [
        "Ship: Ship { name: \"Sulaco \\\"II\\\"\", crew: [1, 2], home: Some((3, -4)), class: Carrier { hangars: 2 } }",
        "Hp: Hp(7)",
        "Docked: Docked",
        "Both: Both(9)",
        "Shield: Shield(0.5)",
    ] {
        assert!(dump.lines().any(|l| l.trim() == line), "{line:?} not in\n{dump}");
    }
    let frigate = world.spawn((Ship {
        name: "x".into(),
        crew: vec![],
        home: None,
        class: Class::Frigate,
    },));
    let dump = format!("{:#?}", world.inspect(frigate).unwrap());
    assert!(
        dump.contains("home: None,\n") && dump.contains("class: Frigate,\n"),
        "{dump}"
    );
}
