//! Templates read from a data file: components by their registered name, `extends` in any
//! order and across files, children, each value read once and cloned per spawn, and errors
//! that name the template and the component and register nothing.

use std::sync::atomic::{AtomicUsize, Ordering};

use serde::{Deserialize, Serialize};
use tabula::TemplateError;
use tabula::prelude::*;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Hull(u32);
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Speed(f32);
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Turret {
    barrels: u8,
    arc: f32,
}
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Boss;

/// Counts its clones and deserialisations: a spawn must clone, never read again.
static CLONES: AtomicUsize = AtomicUsize::new(0);
static READS: AtomicUsize = AtomicUsize::new(0);

#[derive(Debug, PartialEq, Serialize)]
struct Loot(Vec<String>);

impl Clone for Loot {
    fn clone(&self) -> Self {
        CLONES.fetch_add(1, Ordering::Relaxed);
        Loot(self.0.clone())
    }
}

impl<'de> Deserialize<'de> for Loot {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        READS.fetch_add(1, Ordering::Relaxed);
        Vec::<String>::deserialize(deserializer).map(Loot)
    }
}

fn world() -> World {
    let mut world = World::new();
    world.register_template_component::<Hull>("Hull");
    world.register_template_component::<Speed>("Speed");
    world.register_template_component::<Turret>("Turret");
    world.register_template_component::<Boss>("Boss");
    world.register_template_component::<Loot>("Loot");
    world
}

fn load(world: &mut World, json: &str) -> Result<usize, TemplateError> {
    world.load_templates(&mut serde_json::Deserializer::from_str(json))
}

const FLEET: &str = r#"{
    "flagship": { "extends": ["ship", "armed"], "components": { "Hull": 500, "Boss": null } },
    "ship": {
        "components": { "Hull": 100, "Speed": 2.5 },
        "children": [
            { "name": "turret", "components": { "Turret": { "barrels": 2, "arc": 90.0 } } },
            { "name": "big turret", "extends": "turret base", "components": { "Turret": { "barrels": 4, "arc": 45.0 } } }
        ]
    },
    "armed": { "components": { "Speed": 1.5 } },
    "turret base": { "components": { "Hull": 7 } }
}"#;

#[test]
fn a_file_of_templates_spawns_what_it_says() {
    let mut world = world();
    assert_eq!(load(&mut world, FLEET), Ok(4));
    let names: Vec<String> = world
        .resource::<Templates>()
        .unwrap()
        .names()
        .map(str::to_owned)
        .collect();
    assert_eq!(names, ["flagship", "ship", "armed", "turret base"], "file order");

    let ship = world.spawn_template_named("ship").unwrap();
    assert_eq!(world.get::<Hull>(ship), Ok(&Hull(100)));
    assert_eq!(world.get::<Speed>(ship), Ok(&Speed(2.5)));
    assert!(!world.has::<Boss>(ship));
    let children = world.children(ship).unwrap().to_vec();
    assert_eq!(children.len(), 2);
    assert_eq!(
        world.get::<Turret>(children[0]),
        Ok(&Turret {
            barrels: 2,
            arc: 90.0
        })
    );
    assert!(!world.has::<Hull>(children[0]));
    assert_eq!(
        world.get::<Turret>(children[1]),
        Ok(&Turret {
            barrels: 4,
            arc: 45.0
        })
    );
    assert_eq!(
        world.get::<Hull>(children[1]),
        Ok(&Hull(7)),
        "a child extends a template of the file"
    );

    // Bases later in the file, the later base winning, own components over both.
    let flagship = world.spawn_template_named("flagship").unwrap();
    assert_eq!(world.get::<Hull>(flagship), Ok(&Hull(500)));
    assert_eq!(
        world.get::<Speed>(flagship),
        Ok(&Speed(1.5)),
        "\"armed\" is extended after \"ship\""
    );
    assert!(world.has::<Boss>(flagship));
    assert_eq!(
        world.children(flagship).unwrap().len(),
        2,
        "the children come with the base"
    );
}

#[test]
fn bases_may_be_templates_already_registered() {
    let mut world = world();
    world.register_template(Template::new("hulk").with(Hull(9)).with(Speed(0.5)));
    load(
        &mut world,
        r#"{ "fast hulk": { "extends": "hulk", "components": { "Speed": 4.0 } } }"#,
    )
    .unwrap();
    let e = world.spawn_template_named("fast hulk").unwrap();
    assert_eq!(
        (world.get::<Hull>(e), world.get::<Speed>(e)),
        (Ok(&Hull(9)), Ok(&Speed(4.0)))
    );
}

#[test]
fn each_value_is_read_once_and_cloned_per_spawn() {
    let mut world = world();
    let templates = world
        .read_templates(&mut serde_json::Deserializer::from_str(
            r#"{ "chest": { "components": { "Loot": ["gold", "map"] } } }"#,
        ))
        .unwrap();
    let (reads, clones) = (READS.load(Ordering::Relaxed), CLONES.load(Ordering::Relaxed));
    assert_eq!(reads, 1);
    let n = 5;
    let chests = world.spawn_template_batch(&templates[0], n);
    assert_eq!(
        READS.load(Ordering::Relaxed),
        reads,
        "spawning never reads the file again"
    );
    assert_eq!(CLONES.load(Ordering::Relaxed) - clones, n, "one clone per spawn");
    for chest in chests {
        assert_eq!(
            world.get::<Loot>(chest),
            Ok(&Loot(vec!["gold".into(), "map".into()]))
        );
    }
    assert!(
        world.resource::<Templates>().unwrap().get("chest").is_none(),
        "read, not registered"
    );
}

/// Loads `json`, expecting an error; checks that nothing was registered.
fn error(json: &str) -> TemplateError {
    let mut world = world();
    world.register_template(Template::new("kept"));
    let error = load(&mut world, json).unwrap_err();
    let names: Vec<&str> = world.resource::<Templates>().unwrap().names().collect();
    assert_eq!(names, ["kept"], "nothing registered after {error}");
    error
}

#[test]
fn an_unknown_component_names_the_template_and_the_component() {
    let e =
        error(r#"{ "ok": {}, "ship": { "children": [ { "name": "gun", "components": { "Laser": 3 } } ] } }"#);
    match &e {
        TemplateError::UnknownComponent {
            template,
            component,
            known,
        } => {
            assert_eq!((template.as_str(), component.as_str()), ("ship/gun", "Laser"));
            assert_eq!(known, &["Boss", "Hull", "Loot", "Speed", "Turret"]);
        }
        other => panic!("{other:?}"),
    }
    assert!(
        e.to_string()
            .contains("register_template_component::<T>(\"Laser\")"),
        "{e}"
    );
}

#[test]
fn a_bad_value_names_the_template_and_the_component() {
    let e = error(r#"{ "ship": { "components": { "Hull": 1, "Turret": { "barrels": 300, "arc": 1.0 } } } }"#);
    let TemplateError::BadValue {
        template,
        component,
        message,
    } = &e
    else {
        panic!("{e:?}")
    };
    assert_eq!((template.as_str(), component.as_str()), ("ship", "Turret"));
    assert!(message.contains("300"), "{message}");
    assert!(
        e.to_string()
            .starts_with(r#"template "ship", component "Turret": bad value"#),
        "{e}"
    );

    let e = error(r#"{ "ship": { "components": { "Hull": 1, "Hull": 2 } } }"#);
    assert!(
        matches!(&e, TemplateError::BadValue { message, .. } if message == "listed twice"),
        "{e:?}"
    );
    // A registered-for-save component that templates cannot clone is also unknown here.
    let mut world = World::new();
    world.register_serde::<Hull>("Hull");
    let e = load(&mut world, r#"{ "ship": { "components": { "Hull": 1 } } }"#).unwrap_err();
    assert!(matches!(e, TemplateError::UnknownComponent { .. }), "{e:?}");
}

#[test]
fn an_unknown_base_and_a_cycle_are_errors() {
    let e = error(r#"{ "ship": { "children": [ { "name": "gun", "extends": "cannon" } ] } }"#);
    assert_eq!(
        e,
        TemplateError::UnknownBase {
            template: "ship/gun".into(),
            base: "cannon".into()
        }
    );
    assert!(e.to_string().contains("\"cannon\""), "{e}");

    let e = error(
        r#"{ "a": { "extends": "b" }, "b": { "extends": "c" }, "c": { "extends": ["ok", "a"] }, "ok": {} }"#,
    );
    assert_eq!(
        e,
        TemplateError::Cycle {
            templates: vec!["a".into(), "b".into(), "c".into(), "a".into()]
        }
    );
    assert_eq!(
        e.to_string(),
        "templates extend each other in a cycle: a -> b -> c -> a"
    );
    let e = error(r#"{ "me": { "extends": "me" } }"#);
    assert!(matches!(e, TemplateError::Cycle { .. }), "{e:?}");
}

#[test]
fn malformed_files_are_errors() {
    for (json, needle) in [
        (r#"{ "a": {}, "a": {} }"#, "defined twice"),
        (r#"{ "a": { "parts": {} } }"#, "unknown field `parts`"),
        (
            r#"{ "a": { "children": [ { "components": {} } ] } }"#,
            "needs a `name`",
        ),
        (r#"{ "a": { "name": "b" } }"#, "\"b\""),
        (r#"[1, 2]"#, "a map from template name"),
        (r#"{ "a": { "components": { "Hull": 1 } "#, "EOF"),
    ] {
        let e = error(json);
        assert!(matches!(e, TemplateError::Malformed { .. }), "{json}: {e:?}");
        assert!(e.to_string().contains(needle), "{json}: {e}");
    }
}

#[test]
fn a_command_spawn_of_an_unknown_name_leaves_no_entity_behind() {
    // `Commands` reserve the id at once; when the name turns out unknown at the apply, the
    // reservation (by then an empty entity) is despawned, not left as an empty entity.
    let mut world = world();
    load(&mut world, r#"{ "rock": { "components": { "Hull": 1 } } }"#).unwrap();
    let mut queue = tabula::CommandQueue::new();
    let mut commands = Commands::new(&mut queue, &world);
    let rock = commands.spawn_template_named("rock").id();
    let ghost = commands.spawn_template_named("boulder").id();
    let errors = queue.apply(&mut world);
    assert_eq!(errors.len(), 1);
    assert!(errors[0].to_string().contains("\"boulder\""), "{}", errors[0]);
    assert_eq!(world.get::<Hull>(rock), Ok(&Hull(1)));
    assert!(!world.contains(ghost), "the reserved id is despawned");
    assert_eq!(world.len(), 1);
}
