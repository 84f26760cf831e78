//! `#[derive(Bundle)]`: a struct of components is spawned, inserted and removed as the tuple
//! of its fields, nested `#[bundle]` fields flattened.

use tabula::prelude::*;
use tabula::{DerivedBundle, EntityError};

#[derive(Debug, Clone, PartialEq)]
struct Pos(f32);
#[derive(Debug, Clone, PartialEq)]
struct Vel(f32);
#[derive(Debug, Clone, PartialEq)]
struct Health(u32);
#[derive(Debug, Clone, PartialEq)]
struct Name(String);
#[derive(Debug, Clone, PartialEq)]
struct Enemy;

#[derive(Bundle, Debug, Clone, PartialEq)]
struct Body {
    pos: Pos,
    vel: Vel,
}

#[derive(Bundle, Debug, Clone, PartialEq)]
struct EnemyBundle {
    name: Name,
    #[bundle]
    body: Body,
    health: Health,
    #[bundle]
    tags: (Enemy,),
}

fn enemy() -> EnemyBundle {
    EnemyBundle {
        name: Name("orc".into()),
        body: Body {
            pos: Pos(1.0),
            vel: Vel(2.0),
        },
        health: Health(3),
        tags: (Enemy,),
    }
}

#[test]
fn a_derived_bundle_is_its_fields_in_order_nested_ones_flattened() {
    // The tuple it is stored as, and the conversions both ways.
    let tuple: <EnemyBundle as DerivedBundle>::Tuple = enemy().into_tuple();
    assert_eq!(tuple, (Name("orc".into()), Pos(1.0), Vel(2.0), Health(3), Enemy));
    assert_eq!(EnemyBundle::from_tuple(tuple), enemy());
}

#[test]
fn spawn_insert_and_remove_a_derived_bundle() -> Result<(), EntityError> {
    let mut world = World::new();
    let e = world.spawn(enemy());
    assert_eq!(world.get::<Pos>(e)?, &Pos(1.0));
    assert_eq!(world.get::<Health>(e)?, &Health(3));
    assert!(world.get::<Enemy>(e).is_ok());
    // The struct itself is not a component of the entity.
    assert!(world.get::<EnemyBundle>(e).is_err());
    assert!(world.get::<Body>(e).is_err());

    // Removing the nested bundle by type takes just its components.
    let body = world.remove::<Body>(e)?;
    assert_eq!(
        body,
        Body {
            pos: Pos(1.0),
            vel: Vel(2.0)
        }
    );
    assert!(world.get::<Pos>(e).is_err());
    assert_eq!(world.get::<Health>(e)?, &Health(3));

    // Inserting adds, and replaces components the entity has.
    world.insert(
        e,
        Body {
            pos: Pos(5.0),
            vel: Vel(6.0),
        },
    )?;
    world.insert(
        e,
        Body {
            pos: Pos(7.0),
            vel: Vel(8.0),
        },
    )?;
    assert_eq!(world.get::<Pos>(e)?, &Pos(7.0));
    let mut q = world.query::<(&Name, &Pos, &Vel, &Health, &Enemy)>();
    assert_eq!(q.iter(&world).count(), 1);

    // The whole bundle back out.
    let removed = world.remove::<EnemyBundle>(e)?;
    assert_eq!(removed.body.pos, Pos(7.0));
    assert_eq!(removed.name, Name("orc".into()));
    assert!(world.get::<Name>(e).is_err());
    Ok(())
}

#[test]
fn derived_bundles_through_commands_and_batches() {
    fn spawner(mut commands: Commands) {
        commands.spawn(enemy());
    }
    let mut world = World::new();
    let mut schedule = Schedule::new();
    schedule.add_systems(spawner);
    schedule.run(&mut world);
    schedule.run(&mut world);
    world.spawn_batch((0..3).map(|i| Body {
        pos: Pos(i as f32),
        vel: Vel(0.0),
    }));
    let mut q = world.query::<&Pos>();
    assert_eq!(q.iter(&world).count(), 5);
    let mut enemies = world.query::<(&Name, &Health)>();
    assert_eq!(enemies.iter(&world).count(), 2);
}

/// Generic components, an empty bundle, and a component whose type is a generic parameter.
#[derive(Bundle)]
struct Tagged<T: Send + Sync + 'static> {
    tag: T,
    pos: Pos,
}

#[derive(Bundle)]
struct Empty {}

#[test]
fn generic_and_empty_bundles() -> Result<(), EntityError> {
    let mut world = World::new();
    let e = world.spawn(Tagged {
        tag: 7u64,
        pos: Pos(0.0),
    });
    assert_eq!(world.get::<u64>(e)?, &7);
    let Tagged { tag, pos } = world.remove::<Tagged<u64>>(e)?;
    assert_eq!((tag, pos), (7, Pos(0.0)));
    let e = world.spawn(Empty {});
    world.insert(e, Empty {})?;
    assert!(world.remove::<Empty>(e).is_ok());
    Ok(())
}
