//! Orders left to the order of `add_systems` calls: `insertion_ordered_pairs` lists the
//! conflicting pairs no constraint orders, `ambiguous_with` marks such a pair as intended, and
//! `assert_no_insertion_ordered_pairs` fails naming the pairs left. None of it changes the
//! order a run takes.

use std::panic::{AssertUnwindSafe, catch_unwind};

use tabula_core::World;
use tabula_schedule::InsertionOrderedPair;
use tabula_schedule::prelude::*;

struct Health;
struct Armor;
struct Log(Vec<&'static str>);

fn regen(_: Query<&mut Health>) {}
fn poison(_: Query<&mut Health>) {}
fn report(_: Query<&Health>) {}
fn harden(_: Query<&mut Armor>) {}
fn first(mut log: ResMut<Log>) {
    log.0.push("first");
}
fn second(mut log: ResMut<Log>) {
    log.0.push("second");
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Effects;
impl SystemSet for Effects {}

fn names(pairs: &[InsertionOrderedPair]) -> Vec<(String, String)> {
    let short = |name: &str| name.rsplit("::").next().unwrap().to_string();
    pairs
        .iter()
        .map(|pair| (short(&pair.before), short(&pair.after)))
        .collect()
}

#[test]
fn conflicting_pairs_without_a_constraint_are_listed_with_their_conflict() {
    let mut world = World::new();
    let mut schedule = Schedule::new();
    schedule.add_systems((regen, poison, report, harden));
    let pairs = schedule.insertion_ordered_pairs(&mut world).unwrap();
    assert_eq!(
        names(&pairs),
        [
            ("regen".into(), "poison".into()),
            ("regen".into(), "report".into()),
            ("poison".into(), "report".into()),
        ]
    );
    assert!(
        pairs
            .iter()
            .all(|pair| pair.conflict == "data conflict on `Health`")
    );
}

#[test]
fn constraints_direct_or_through_other_systems_take_a_pair_out() {
    let mut world = World::new();
    let mut schedule = Schedule::new();
    // regen -> harden -> poison: harden shares nothing with either, yet orders them.
    schedule.add_systems((
        regen.before(harden),
        poison.after(harden),
        harden,
        report.after(poison),
    ));
    assert_eq!(schedule.insertion_ordered_pairs(&mut world).unwrap(), []);
    schedule.assert_no_insertion_ordered_pairs(&mut world);
}

#[test]
fn ambiguous_with_marks_a_pair_on_either_side_by_system_or_set() {
    let mut world = World::new();
    let mut schedule = Schedule::new();
    schedule.add_systems((regen, poison.ambiguous_with(regen), report));
    assert_eq!(
        names(&schedule.insertion_ordered_pairs(&mut world).unwrap()),
        [
            ("regen".into(), "report".into()),
            ("poison".into(), "report".into()),
        ]
    );

    // A set on the other side, and a set's own `ambiguous_with`.
    let mut schedule = Schedule::new();
    schedule.add_systems((
        regen.in_set(Effects),
        poison.in_set(Effects),
        report.ambiguous_with(Effects),
    ));
    assert_eq!(
        names(&schedule.insertion_ordered_pairs(&mut world).unwrap()),
        [("regen".into(), "poison".into())]
    );
    schedule.configure_sets(Effects.ambiguous_with(Effects));
    schedule.assert_no_insertion_ordered_pairs(&mut world);
}

#[test]
fn the_assertion_names_every_pair_and_how_to_fix_it() {
    let mut world = World::new();
    world.insert_resource(Log(Vec::new()));
    let mut schedule = Schedule::new();
    schedule.add_systems((regen, poison, first, second));
    let panic = catch_unwind(AssertUnwindSafe(|| {
        schedule.assert_no_insertion_ordered_pairs(&mut world)
    }))
    .expect_err("two pairs are ordered by insertion alone");
    let message = panic.downcast_ref::<String>().expect("a formatted message");
    assert!(
        message.starts_with("2 pair(s) of conflicting systems"),
        "{message}"
    );
    assert!(
        message.contains("`regen` before `poison`: data conflict on `Health`"),
        "{message}"
    );
    assert!(
        message.contains("`first` before `second`: data conflict on `Log`"),
        "{message}"
    );
    assert!(message.contains("ambiguous_with"), "{message}");
}

#[test]
fn marking_a_pair_changes_no_order() {
    let run = |mark: bool| {
        let mut world = World::new();
        world.insert_resource(Log(Vec::new()));
        let mut schedule = Schedule::new();
        if mark {
            schedule.add_systems((first, second.ambiguous_with(first)));
        } else {
            schedule.add_systems((first, second));
        }
        let order = schedule.order(&mut world).unwrap();
        let edges = schedule.dependencies(&mut world).unwrap();
        schedule.run(&mut world);
        (order, edges, world.resource::<Log>().unwrap().0.clone())
    };
    let (order, edges, log) = run(true);
    assert_eq!((order.clone(), edges.clone(), log.clone()), run(false));
    assert_eq!(log, ["first", "second"]);
    assert_eq!(edges.len(), 1, "still ordered as added: {edges:?}");
    assert!(order[0].ends_with("first"));
}
