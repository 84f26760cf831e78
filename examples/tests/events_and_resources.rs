//! The combat example: every battle ends with a winner, a seed always tells the same story,
//! and every event is read exactly once by each of its readers.

use tabula::Events;
use tabula_examples::combat::{AttackEvent, Battle, DeathEvent, Health, MAX_ROUNDS, Outcome, Side};

#[test]
fn every_battle_ends_with_a_winner_and_the_loser_is_gone() {
    let mut winners = [0; 2];
    for seed in 0..40 {
        let mut battle = Battle::new(seed);
        let outcome = battle.fight();
        let survivors = battle.survivors();
        let hero_alive = survivors.iter().any(|(name, _)| name == "Hero");
        match outcome {
            Outcome::Won(Side::Hero) => {
                winners[0] += 1;
                assert_eq!(survivors.len(), 1, "seed {seed}: only the hero is left");
                assert!(hero_alive);
            }
            Outcome::Won(Side::Monsters) => {
                winners[1] += 1;
                assert!(!hero_alive, "seed {seed}");
                assert!(!survivors.is_empty());
            }
            other => panic!("seed {seed}: the battle ended as {other:?}"),
        }
        assert!(battle.turn().round < MAX_ROUNDS);
        assert!(survivors.iter().all(|(_, Health { current, .. })| *current > 0));
        assert!(
            battle.log().last().unwrap().contains("win"),
            "{:?}",
            battle.log().last()
        );
    }
    assert!(
        winners[0] > 0 && winners[1] > 0,
        "both sides win some battles: {winners:?}"
    );
}

#[test]
fn the_same_seed_gives_the_same_log() {
    for seed in [1, 7, 42] {
        let mut a = Battle::new(seed);
        let mut b = Battle::new(seed);
        assert_eq!(a.fight(), b.fight());
        assert_eq!(a.log(), b.log(), "seed {seed}");
        assert_eq!(a.survivors(), b.survivors());
    }
    let mut a = Battle::new(1);
    let mut b = Battle::new(2);
    a.fight();
    b.fight();
    assert_ne!(a.log(), b.log());
}

#[test]
fn every_event_is_read_once_by_each_reader_and_then_dropped() {
    for seed in 0..10 {
        let mut battle = Battle::new(seed);
        let monsters = battle.survivors().len() - 1;
        let outcome = battle.fight();
        let tally = battle.tally();
        assert!(tally.attacks_sent > 0);
        assert_eq!(
            tally.attacks_sent, tally.attacks_resolved,
            "seed {seed}: {tally:?}"
        );
        assert_eq!(tally.deaths_sent, tally.buried, "seed {seed}: {tally:?}");
        assert_eq!(tally.deaths_sent, tally.announced, "seed {seed}: {tally:?}");
        let fallen = monsters + 1 - battle.survivors().len();
        assert_eq!(
            tally.deaths_sent as usize, fallen,
            "seed {seed}: one death event per fallen"
        );
        let deaths = battle
            .log()
            .iter()
            .filter(|line| line.ends_with(" falls."))
            .count();
        assert_eq!(deaths, fallen);

        // Once decided, the acting phase no longer runs: nothing new is sent, the turn stays,
        // and after two more runs the event buffers have aged out.
        let turn = battle.turn();
        let log = battle.log().len();
        battle.step();
        battle.step();
        assert_eq!(battle.outcome(), outcome);
        assert_eq!(battle.turn(), turn);
        assert_eq!(battle.log().len(), log);
        assert_eq!(battle.tally(), tally);
        assert!(battle.world.resource::<Events<AttackEvent>>().unwrap().is_empty());
        assert!(battle.world.resource::<Events<DeathEvent>>().unwrap().is_empty());
    }
}

#[test]
fn a_move_is_one_side_and_turns_alternate() {
    let mut battle = Battle::new(3);
    assert_eq!(battle.turn().side, Side::Hero);
    battle.step();
    assert_eq!(battle.log()[0], "-- round 1, the hero --");
    assert_eq!(battle.turn().side, Side::Monsters);
    assert_eq!(battle.turn().round, 1);
    battle.step();
    assert!(
        battle
            .log()
            .iter()
            .any(|line| line == "-- round 1, the monsters --")
    );
    assert_eq!(battle.turn().side, Side::Hero);
    assert_eq!(battle.turn().round, 2);
    // Only the hero acted in the first move: every attack so far before the monsters'
    // header is the hero's.
    let header = battle
        .log()
        .iter()
        .position(|l| l == "-- round 1, the monsters --")
        .unwrap();
    assert!(
        battle.log()[1..header]
            .iter()
            .all(|l| l.starts_with("Hero") || !l.contains(" for "))
    );
}
