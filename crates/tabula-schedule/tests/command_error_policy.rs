//! A skipped command is reported through `tracing` at warn level under the default policy,
//! not at all under `Ignore`, and as a panic under `Panic` — and listed in
//! `command_errors()` under every policy.

use std::sync::{Arc, Mutex};

use tabula_core::{Commands, Entity, World};
use tabula_schedule::CommandErrorPolicy;
use tabula_schedule::prelude::*;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Level, Metadata, Subscriber};

/// Records every event's level and fields as `name=value` strings.
#[derive(Clone, Default)]
struct Recorder(Arc<Mutex<Vec<(Level, Vec<String>)>>>);

struct Fields(Vec<String>);

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.push(format!("{}={value:?}", field.name()));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.push(format!("{}={value}", field.name()));
    }
}

impl Subscriber for Recorder {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        let mut fields = Fields(Vec::new());
        event.record(&mut fields);
        self.0.lock().unwrap().push((*event.metadata().level(), fields.0));
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

struct Gone(Entity);

fn poke_the_dead(mut commands: Commands, gone: Res<Gone>) {
    commands.entity(gone.0).insert((1u8,));
}

fn world_with_a_dead_entity() -> (World, Entity) {
    let mut world = World::new();
    let dead = world.spawn((0u8,));
    world.despawn(dead).unwrap();
    world.insert_resource(Gone(dead));
    (world, dead)
}

fn run_under(policy: Option<CommandErrorPolicy>) -> (Vec<(Level, Vec<String>)>, usize, Entity) {
    let (mut world, dead) = world_with_a_dead_entity();
    let mut schedule = Schedule::new();
    schedule.add_systems(poke_the_dead);
    if let Some(policy) = policy {
        schedule.set_command_error_policy(policy);
    }
    let recorder = Recorder::default();
    tracing::subscriber::with_default(recorder.clone(), || schedule.run(&mut world));
    let events = recorder.0.lock().unwrap().clone();
    (events, schedule.command_errors().len(), dead)
}

#[test]
fn the_default_policy_warns_with_system_command_entity_and_reason() {
    let (events, listed, dead) = run_under(None);
    assert_eq!(listed, 1);
    assert_eq!(events.len(), 1, "{events:?}");
    let (level, fields) = &events[0];
    assert_eq!(*level, Level::WARN);
    let has = |prefix: &str| fields.iter().any(|f| f.starts_with(prefix));
    assert!(
        has("system=") && fields.iter().any(|f| f.contains("poke_the_dead")),
        "{fields:?}"
    );
    assert!(fields.contains(&"command=insert".to_string()), "{fields:?}");
    assert!(fields.contains(&format!("entity={dead:?}")), "{fields:?}");
    assert!(has("reason="), "{fields:?}");
}

#[test]
fn ignore_lists_without_logging() {
    let (events, listed, _) = run_under(Some(CommandErrorPolicy::Ignore));
    assert_eq!(listed, 1);
    assert!(events.is_empty(), "{events:?}");
}

#[test]
fn panic_aborts_the_run_naming_the_command() {
    let (mut world, dead) = world_with_a_dead_entity();
    let mut schedule = Schedule::new();
    schedule.add_systems(poke_the_dead);
    schedule.set_command_error_policy(CommandErrorPolicy::Panic);
    let panic = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| schedule.run(&mut world)))
        .expect_err("the skipped command panics");
    let message = panic.downcast_ref::<String>().expect("a formatted message");
    assert!(
        message.contains("poke_the_dead") && message.contains(&format!("{dead:?}")),
        "{message}"
    );
    assert!(message.contains("CommandErrorPolicy::Panic"), "{message}");
    // The aborted run left the world consistent: the dead entity stays dead.
    assert!(!world.contains(dead));
}
