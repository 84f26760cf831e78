//! The skirmish example: the observer-kept grid and the relation stay consistent, required
//! components arrive, units die and are replaced, and the world is the same with 1 and 4
//! threads.

use tabula::schedule::ExecutorKind;
use tabula_examples::skirmish::{FULL_HP, Hp, Kills, Skirmish, Unit};

fn run(threads: usize, executor: ExecutorKind, frames: u64) -> Skirmish {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap();
    pool.install(|| {
        let mut skirmish = Skirmish::new(40, 3, executor);
        for frame in 0..frames {
            skirmish.step();
            if frame % 25 == 0 {
                skirmish.check();
            }
        }
        skirmish.check();
        skirmish
    })
}

#[test]
fn the_reactive_layer_keeps_the_skirmish_consistent() {
    let mut skirmish = run(2, ExecutorKind::Parallel, 300);
    let stats = skirmish.stats().clone();
    assert!(stats.deaths.iter().sum::<u32>() > 0, "units died: {stats:?}");
    assert!(stats.reinforcements.iter().sum::<u32>() > 0);
    assert!(stats.shots > 0);
    // Reinforcements were spawned without Hp or Kills: the requirements added them.
    let units = skirmish
        .world
        .query::<(&Unit, &Hp, &Kills)>()
        .iter(&skirmish.world)
        .count();
    assert_eq!(units, skirmish.alive().iter().sum::<usize>());
    assert!(
        skirmish
            .world
            .query::<&Hp>()
            .iter(&skirmish.world)
            .all(|hp| hp.0 > 0 && hp.0 <= FULL_HP)
    );
}

#[test]
fn the_same_world_with_one_and_four_threads() {
    let mut one = run(1, ExecutorKind::SingleThreaded, 200);
    let mut four = run(4, ExecutorKind::Parallel, 200);
    assert_eq!(one.snapshot(), four.snapshot());
    assert_eq!(one.stats(), four.stats());
    assert_eq!(one.pairs(), four.pairs());
}
