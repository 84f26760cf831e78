//! Inside systems, entity handles from another world are refused as such: `Query::get`
//! returns `QueryError::WrongWorld`, and commands aimed at them are skipped and reported with
//! `EntityError::WrongWorld`, whether recorded by `Commands` or by `ParallelCommands`.

use tabula_core::query::QueryError;
use tabula_core::{CommandError, Commands, Entity, EntityError, World};
use tabula_schedule::prelude::*;

#[derive(Debug, PartialEq)]
struct Hp(u32);

/// Handles of another world, for the systems to use.
struct Aliens(Vec<Entity>);

/// What `look` saw.
#[derive(Default)]
struct Seen(Vec<Result<u32, QueryError>>);

fn look(q: Query<&Hp>, aliens: Res<Aliens>, mut seen: ResMut<Seen>) {
    seen.0 = aliens.0.iter().map(|&e| q.get(e).map(|hp| hp.0)).collect();
}

fn strike(mut commands: Commands, aliens: Res<Aliens>) {
    commands.insert(aliens.0[0], (Hp(0),));
    commands.despawn(aliens.0[1]);
}

fn strike_in_parallel(commands: ParallelCommands, q: Query<&Hp>, aliens: Res<Aliens>) {
    let target = aliens.0[2];
    q.par_for_each(|hp| {
        if hp.0 == 100 {
            commands.command_scope(|c| c.despawn(target));
        }
    });
}

#[test]
fn systems_get_wrong_world_errors_and_the_world_is_untouched() {
    let mut home = World::with_tag(10);
    let aliens: Vec<Entity> = (0..3).map(|i| home.spawn((Hp(i),))).collect();
    let mut world = World::with_tag(11);
    let own: Vec<Entity> = (0..3).map(|i| world.spawn((Hp(100 + i),))).collect();
    for (a, o) in aliens.iter().zip(&own) {
        assert_eq!((a.index(), a.generation()), (o.index(), o.generation()));
    }
    world.insert_resource(Aliens(aliens.clone()));
    world.init_resource::<Seen>();
    let mut schedule = Schedule::new();
    schedule.add_systems((look, strike, strike_in_parallel));
    schedule.run(&mut world);

    let seen = &world.resource::<Seen>().unwrap().0;
    let expected: Vec<Result<u32, QueryError>> = aliens
        .iter()
        .map(|&entity| Err(QueryError::WrongWorld { entity, world: 11 }))
        .collect();
    assert_eq!(seen, &expected);

    let errors: Vec<(Entity, EntityError)> = schedule
        .command_errors()
        .iter()
        .map(|skipped| match skipped.error() {
            CommandError::Entity { entity, error, .. } => (*entity, *error),
            other => panic!("unexpected {other:?}"),
        })
        .collect();
    assert_eq!(
        errors,
        aliens
            .iter()
            .map(|&entity| (entity, EntityError::WrongWorld { entity, world: 11 }))
            .collect::<Vec<_>>()
    );
    let mut q = world.query::<(Entity, &Hp)>();
    let left: Vec<(Entity, u32)> = q.iter(&world).map(|(e, hp)| (e, hp.0)).collect();
    assert_eq!(
        left,
        own.iter().zip(100..).map(|(&e, hp)| (e, hp)).collect::<Vec<_>>()
    );
}
