//! The command conveniences a bevy user reaches for: `try_insert` / `try_despawn` for races
//! the game expects, `insert_one` / `remove_one`, `Commands::spawn_batch`, `set_if_neq`.

use tabula_core::{CommandError, Commands, Entity, EntityError, World};
use tabula_schedule::prelude::*;

struct Fuse(u32);
struct Burning;
struct Spark;

/// Despawns every fuse that ran out.
fn explode(mut commands: Commands, fuses: Query<(Entity, &Fuse)>) {
    for (entity, fuse) in fuses.iter() {
        if fuse.0 == 0 {
            commands.entity(entity).despawn();
        }
    }
}

/// Burns every fuse down and sets fire to the short ones — including those `explode`
/// removes this very frame.
fn ignite<const TRY: bool>(mut commands: Commands, mut fuses: Query<(Entity, &mut Fuse)>) {
    fuses.for_each(|(entity, mut fuse)| {
        fuse.0 = fuse.0.saturating_sub(1);
        if fuse.0 < 3 {
            if TRY {
                commands.entity(entity).try_insert((Burning,));
            } else {
                commands.entity(entity).insert((Burning,));
            }
        }
    });
}

fn reload(mut commands: Commands, fuses: Query<&Fuse>) {
    if fuses.iter().count() < 50 {
        commands.spawn_batch((0..50).map(|i| (Fuse(i % 7 + 1),)));
    }
}

fn race(try_insert: bool) -> usize {
    let mut world = World::new();
    let mut schedule = Schedule::new();
    if try_insert {
        schedule.add_systems((reload, explode, ignite::<true>).chain().without_auto_sync());
    } else {
        schedule.add_systems((reload, explode, ignite::<false>).chain().without_auto_sync());
    }
    let mut skipped = 0;
    for _ in 0..300 {
        schedule.run(&mut world);
        skipped += schedule.command_errors().len();
        assert!(schedule.command_errors().iter().all(|s| matches!(
            s.error(),
            CommandError::Entity {
                error: EntityError::NoSuchEntity(_),
                ..
            }
        )));
    }
    skipped
}

#[test]
fn try_insert_skips_the_expected_race_silently() {
    assert!(race(false) > 20, "a plain insert reports the race");
    assert_eq!(race(true), 0, "try_insert does not");
}

#[test]
fn try_commands_still_report_other_failures() {
    let mut other = World::new();
    let foreign = other.spawn((Spark,));
    let mut world = World::new();
    let mut queue = tabula_core::CommandQueue::new();
    let mut commands = Commands::new(&mut queue, &world);
    commands.entity(foreign).try_insert((Burning,));
    commands.entity(foreign).try_despawn();
    let errors = queue.apply(&mut world);
    assert_eq!(
        errors.len(),
        2,
        "another world's entity is a mistake, not a race: {errors:?}"
    );
    assert!(errors.iter().all(|e| matches!(
        e,
        CommandError::Entity {
            error: EntityError::WrongWorld { .. },
            ..
        }
    )));
}

#[test]
fn insert_one_remove_one_and_spawn_batch() {
    let mut world = World::new();
    let mut queue = tabula_core::CommandQueue::new();
    let mut commands = Commands::new(&mut queue, &world);
    let e = commands.spawn((Fuse(1),)).insert_one(Spark).id();
    commands.spawn_batch((0..10).map(|i| (Fuse(i),)));
    assert!(queue.apply(&mut world).is_empty());
    assert!(world.has::<Spark>(e));
    assert_eq!(world.len(), 11);
    let mut commands = Commands::new(&mut queue, &world);
    commands.entity(e).remove_one::<Spark>().try_despawn();
    assert!(queue.apply(&mut world).is_empty());
    assert!(!world.contains(e));
}
