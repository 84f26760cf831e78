//! One-shot systems: registered, run on demand from game code and from commands, keeping
//! their state, applying their commands, refusing unknown and recursive runs.

use tabula_core::{Commands, World};
use tabula_schedule::prelude::*;
use tabula_schedule::{RunSystemError, SystemId};

struct Enemy;
#[derive(Default)]
struct Boss(Option<SystemId<usize>>);

fn spawn_wave(mut commands: Commands, mut wave: Local<u32>) {
    *wave += 1;
    for _ in 0..*wave {
        commands.spawn((Enemy,));
    }
}

fn count(enemies: Query<&Enemy>) -> usize {
    enemies.iter().count()
}

#[test]
fn a_registered_system_keeps_its_state_and_applies_its_commands() {
    let mut world = World::new();
    let wave = world.register_system(spawn_wave);
    let counter = world.register_system(count);
    assert_eq!(world.run_system(counter), Ok(0));
    world.run_system(wave).unwrap();
    world.run_system(wave).unwrap();
    assert_eq!(world.run_system(counter), Ok(3), "1 then 2: the Local counted on");
    world.unregister_system(wave).unwrap();
    assert!(matches!(
        world.run_system(wave),
        Err(RunSystemError::NotRegistered(_))
    ));
    // The slot is reused with a new generation: the old id stays dead.
    let again = world.register_system(spawn_wave);
    assert_ne!(again, wave);
    assert!(world.run_system(wave).is_err());
    world.run_system(again).unwrap();
    assert_eq!(world.run_system(counter), Ok(4), "a fresh state: wave 1");
}

#[test]
fn systems_in_a_schedule_run_one_shot_systems_through_commands() {
    fn on_key(mut commands: Commands, wave: Res<WaveId>) {
        commands.run_system(wave.0);
    }
    struct WaveId(SystemId);
    let mut world = World::new();
    let wave = world.register_system(spawn_wave);
    world.insert_resource(WaveId(wave));
    let mut schedule = Schedule::new();
    schedule.add_systems(on_key);
    schedule.run(&mut world);
    schedule.run(&mut world);
    assert_eq!(world.query::<&Enemy>().iter(&world).count(), 3);
    assert!(schedule.command_errors().is_empty());
}

#[test]
fn a_system_cannot_run_itself_and_unknown_ids_are_reported() {
    fn recurse(world: &mut World) -> usize {
        let me = world.resource::<Boss>().unwrap().0.unwrap();
        match world.run_system(me) {
            Err(RunSystemError::Recursive(_)) => 1,
            other => panic!("{other:?}"),
        }
    }
    let mut world = World::new();
    world.init_resource::<Boss>();
    let id = world.register_system(recurse);
    world.resource_mut::<Boss>().unwrap().0 = Some(id);
    assert_eq!(world.run_system(id), Ok(1));
    let message = RunSystemError::NotRegistered(format!("{id:?}")).to_string();
    assert!(
        message.contains("register it with World::register_system"),
        "{message}"
    );
    let mut other = World::new();
    assert!(matches!(
        other.run_system(id),
        Err(RunSystemError::NotRegistered(_))
    ));
}
