//! "Why is this ordered?": `explain` names the constraint, data or sync point behind the
//! order of two systems, implied orderings included; `ordered_pairs` lists every serialised
//! pair; `assert_parallel` fails when two systems meant to run side by side are ordered.

use std::panic::{AssertUnwindSafe, catch_unwind};

use tabula_core::{Commands, World};
use tabula_schedule::SystemOrder;
use tabula_schedule::prelude::*;

struct Health;
struct Armor;
struct Gold;

fn regen(_: Query<&mut Health>) {}
fn harden(_: Query<(&Health, &mut Armor)>) {}
fn report(_: Query<&Armor>) {}
fn mine(_: Query<&mut Gold>) {}
fn plant(mut commands: Commands) {
    commands.spawn((Gold,));
}
fn count(_: Query<&Gold>) {}

fn schedule() -> Schedule {
    let mut schedule = Schedule::new();
    schedule.add_systems((regen, harden, report, mine, plant, count.after(plant)));
    schedule
}

#[test]
fn explain_follows_the_path_through_other_systems_and_sync_points() {
    let mut world = World::new();
    let mut schedule = schedule();
    // Data conflicts, one step and two steps.
    let SystemOrder::Before(path) = schedule.explain(&mut world, regen, harden).unwrap() else {
        panic!("regen runs before harden");
    };
    assert_eq!(path.len(), 1);
    assert_eq!(path[0].reason, "data conflict on `Health`");
    let SystemOrder::Before(path) = schedule.explain(&mut world, regen, report).unwrap() else {
        panic!("regen runs before report, through harden");
    };
    assert_eq!(
        path.iter().map(|d| d.reason.as_str()).collect::<Vec<_>>(),
        ["data conflict on `Health`", "data conflict on `Armor`"]
    );
    // The other way round is `After` with the same path.
    assert_eq!(
        schedule.explain(&mut world, report, regen).unwrap(),
        SystemOrder::After(path)
    );
    // A constraint through a sync point: `plant`'s commands are applied before `count`.
    let SystemOrder::Before(path) = schedule.explain(&mut world, plant, count).unwrap() else {
        panic!("plant runs before count");
    };
    assert_eq!(path.len(), 2, "{path:?}");
    assert!(
        path[0].after.starts_with("sync") && path[0].reason.contains("applied here"),
        "{path:?}"
    );
    assert!(path[1].reason.contains("sees their commands"), "{path:?}");
    // Unrelated systems.
    assert_eq!(
        schedule.explain(&mut world, regen, mine).unwrap(),
        SystemOrder::Parallel
    );
    schedule.assert_parallel(&mut world, regen, mine);
}

#[test]
fn assert_parallel_fails_with_the_reason_when_a_change_serialises_two_systems() {
    let mut world = World::new();
    let mut schedule = schedule();
    schedule.assert_parallel(&mut world, harden, mine);
    // A later system shares `Armor` with `harden` and `Gold` with `mine`, and sits between.
    fn refine(_: Query<(&Armor, &mut Gold)>) {}
    schedule.add_systems(refine.after(harden).before(mine));
    let failure = catch_unwind(AssertUnwindSafe(|| {
        schedule.assert_parallel(&mut world, harden, mine)
    }))
    .expect_err("they are ordered now");
    let message = failure.downcast_ref::<String>().expect("a message");
    assert!(message.contains("meant to run in parallel"), "{message}");
    assert!(
        message.contains("harden -> ") && message.contains("refine"),
        "{message}"
    );
}

#[test]
fn ordered_pairs_lists_every_serialised_pair_with_its_path() {
    let mut world = World::new();
    let mut schedule = schedule();
    let pairs = schedule.ordered_pairs(&mut world).unwrap();
    let names: Vec<(String, String)> = pairs
        .iter()
        .map(|p| (short(&p.before), short(&p.after)))
        .collect();
    for expected in [
        ("regen", "harden"),
        ("regen", "report"),
        ("harden", "report"),
        ("plant", "count"),
    ] {
        assert!(
            names.contains(&(expected.0.to_string(), expected.1.to_string())),
            "{expected:?} in {names:?}"
        );
    }
    assert!(
        !names
            .iter()
            .any(|(a, b)| (a == "regen" && b == "mine") || (a == "mine" && b == "regen"))
    );
    assert!(pairs.iter().all(|p| !p.path.is_empty()));
    assert!(
        names
            .iter()
            .all(|(a, b)| !a.starts_with("sync") && !b.starts_with("sync"))
    );
}

fn short(name: &str) -> String {
    name.rsplit("::").next().unwrap().to_string()
}
