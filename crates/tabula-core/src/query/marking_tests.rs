//! Change marking through `for_each`'s deferred marks and the columns' changed floors: exactly
//! the rows written count as changed, whatever the pattern of writes, and rows keep their
//! change state when they move between archetypes (Miri runs all of these).
//!
//! Every case but `ref_mut_and_get_mut_see_a_column_mark` (which writes through
//! `for_each_chunk`, table columns only) runs twice, with `Pos` and `Health` in tables and in
//! sparse sets (see [`per_storage!`]): the column marks are a table mechanism, but which rows
//! read as changed must not depend on the storage.

use std::panic::{AssertUnwindSafe, catch_unwind};

use crate::change::CHECK_TICK_THRESHOLD;
use crate::{BatchSize, Changed, Entity, Mut, QueryState, Ref, With, Without, World};

#[derive(Debug, Clone, Copy, PartialEq)]
struct Pos(u32);
#[derive(Debug, Clone, Copy, PartialEq)]
struct Health(u32);
#[derive(Debug, Clone, Copy, PartialEq)]
struct Frozen;

/// Where `Pos` and `Health` live (`Frozen` stays in tables, so that entities still move
/// between archetypes): each case below runs once per storage.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Storage {
    Table,
    /// `Pos` and `Health` in sparse sets, whose rows never move and are marked one by one.
    Sparse,
}

/// A world with `Pos` and `Health` stored as `storage` says.
fn world_with(storage: Storage) -> World {
    let mut world = World::new();
    if storage == Storage::Sparse {
        world.register_component::<Pos>().sparse_set();
        world.register_component::<Health>().sparse_set();
    }
    world
}

/// Generates, for each `fn case(storage: Storage)`, a module `case` with the tests `table`
/// and `sparse`; after `native_only:`, the sparse test is skipped under Miri (each takes over
/// a second there; the sparse path's marking runs under Miri in the cheaper cases).
macro_rules! per_storage {
    ($($case:ident),* $(,)?; native_only: $($native:ident),* $(,)?) => {
        $(
            mod $case {
                use super::Storage;

                #[test]
                fn table() {
                    super::$case(Storage::Table);
                }

                #[test]
                fn sparse() {
                    super::$case(Storage::Sparse);
                }
            }
        )*
        $(
            mod $native {
                use super::Storage;

                #[test]
                fn table() {
                    super::$native(Storage::Table);
                }

                #[test]
                #[cfg_attr(miri, ignore = "slow under Miri; the sparse path runs under Miri in the cheaper cases")]
                fn sparse() {
                    super::$native(Storage::Sparse);
                }
            }
        )*
    };
}

per_storage!(
    each_mutable_term_is_marked_on_its_own;
    native_only:
    a_panicking_for_each_still_marks_what_it_wrote,
    par_for_each_marks_exactly_the_rows_it_writes,
    par_for_each_marks_fully_written_batches_of_a_partly_written_archetype,
    a_panicking_par_for_each_still_marks_what_it_wrote,
    for_each_marks_exactly_the_rows_it_writes,
    iter_mut_marks_exactly_the_rows_it_writes,
    a_mut_marks_on_its_first_mutable_access,
    a_marked_column_keeps_old_rows_that_move_in_unchanged,
    a_mark_holds_for_every_row_that_leaves_and_ends_when_a_row_moving_in_settles_it,
    a_column_mark_never_reads_as_new_after_the_clock_wraps,
    whole_table_batches_keep_each_rows_change_state,
    automatic_par_for_each_marks_exactly_the_rows_it_writes,
    a_par_for_each_run_that_panics_in_a_later_chunk_marks_its_earlier_chunks
);

fn sorted(mut v: Vec<Entity>) -> Vec<Entity> {
    v.sort();
    v
}

/// Ten entities of (Pos) and ten of (Pos, Frozen); `Pos` holds the spawn index.
fn two_archetypes(storage: Storage) -> (World, Vec<Entity>) {
    let mut world = world_with(storage);
    let mut entities: Vec<Entity> = world.spawn_batch((0..10).map(|i| (Pos(i),))).collect();
    entities.extend(world.spawn_batch((10..20).map(|i| (Pos(i), Frozen))));
    (world, entities)
}

/// A `Changed<Pos>` query that has already seen the spawns.
fn changed_pos(world: &mut World) -> QueryState<Entity, Changed<Pos>> {
    let mut changed = world.query_filtered::<Entity, Changed<Pos>>();
    assert_eq!(changed.iter(world).count(), world.len() as usize);
    changed
}

/// Patterns of writes over the spawn index: the fast path (every row), the fallback at the
/// first row, in the middle and at the last row, and no writes at all.
const PATTERNS: [(&str, fn(u32) -> bool); 7] = [
    ("all", |_| true),
    ("none", |_| false),
    ("all but the first of each archetype", |i| i % 10 != 0),
    ("all but the last of each archetype", |i| i % 10 != 9),
    ("only the first", |i| i % 10 == 0),
    ("even", |i| i % 2 == 0),
    ("one archetype", |i| i >= 10),
];

/// Runs `write` (which writes the rows `writes` picks) on a fresh pair of archetypes and
/// checks that `Changed<Pos>` then sees exactly those rows, once.
fn check_marks(storage: Storage, write: impl Fn(&mut World, fn(u32) -> bool)) {
    for (name, writes) in PATTERNS {
        let (mut world, entities) = two_archetypes(storage);
        let mut changed = changed_pos(&mut world);
        write(&mut world, writes);
        let expected: Vec<Entity> = (0..20)
            .filter(|&i| writes(i))
            .map(|i| entities[i as usize])
            .collect();
        assert_eq!(sorted(changed.iter(&world).collect()), sorted(expected), "{name}");
        assert_eq!(
            changed.iter(&world).count(),
            0,
            "{name}: nothing new on the next run"
        );
    }
}

fn for_each_marks_exactly_the_rows_it_writes(storage: Storage) {
    check_marks(storage, |world, writes| {
        world.query::<&mut Pos>().for_each(world, |mut pos| {
            if writes(pos.0) {
                pos.0 += 100;
            }
        });
    });
}

fn iter_mut_marks_exactly_the_rows_it_writes(storage: Storage) {
    // A `for` loop, writing a row's value several times through one item.
    check_marks(storage, |world, writes| {
        for mut pos in world.query::<&mut Pos>().iter_mut(world) {
            if writes(pos.0) {
                pos.0 += 50;
                pos.0 += 50;
            }
        }
    });
    // Items kept past later `next` calls and written afterwards, last first.
    check_marks(storage, |world, writes| {
        let mut q = world.query::<&mut Pos>();
        let mut items: Vec<Mut<Pos>> = q.iter_mut(world).collect();
        for pos in items.iter_mut().rev() {
            if writes(pos.0) {
                pos.0 += 100;
            }
        }
    });
}

fn a_mut_marks_on_its_first_mutable_access(storage: Storage) {
    let (mut world, entities) = two_archetypes(storage);
    let mut changed = changed_pos(&mut world);
    let mut q = world.query::<(Entity, &mut Pos)>();
    // A first run, writing nothing, after which the spawns are old news to `q`.
    assert_eq!(q.iter_mut(&mut world).count(), 20);
    for (entity, mut pos) in q.iter_mut(&mut world) {
        if entity == entities[3] {
            let _: &Pos = &pos;
            assert!(!pos.is_changed(), "reading does not mark");
            pos.0 += 1;
            assert!(pos.is_changed(), "the first write marks");
            pos.0 += 1;
            assert!(pos.is_changed());
        }
    }
    assert_eq!(changed.iter(&world).collect::<Vec<_>>(), [entities[3]]);
    assert_eq!(world.get::<Pos>(entities[3]).unwrap(), &Pos(5));
}

fn each_mutable_term_is_marked_on_its_own(storage: Storage) {
    let mut world = world_with(storage);
    let entities: Vec<Entity> = world.spawn_batch((0..8).map(|i| (Pos(i), Health(i)))).collect();
    let mut changed_pos = world.query_filtered::<Entity, Changed<Pos>>();
    let mut changed_health = world.query_filtered::<Entity, Changed<Health>>();
    changed_pos.for_each(&mut world, |_| {});
    changed_health.for_each(&mut world, |_| {});

    // `Pos` is written on every row (the fast path for its column), `Health` on odd rows.
    let mut q = world.query::<(&mut Pos, Option<&mut Health>)>();
    q.for_each(&mut world, |(mut pos, health)| {
        pos.0 += 1;
        if let Some(mut health) = health
            && pos.0 % 2 == 0
        {
            health.0 += 1;
        }
    });
    assert_eq!(
        sorted(changed_pos.iter(&world).collect()),
        sorted(entities.clone())
    );
    let odd: Vec<Entity> = entities.iter().copied().skip(1).step_by(2).collect();
    assert_eq!(sorted(changed_health.iter(&world).collect()), odd);
}

type Unfrozen = QueryState<&'static mut Pos, Without<Frozen>>;

/// [`two_archetypes`] and [`changed_pos`], then a pass that writes every row of the (Pos)
/// archetype, so that its column is marked as a whole; the query of that pass comes back too.
fn marked_world(storage: Storage) -> (World, Vec<Entity>, QueryState<Entity, Changed<Pos>>, Unfrozen) {
    let (mut world, entities) = two_archetypes(storage);
    let changed = changed_pos(&mut world);
    let mut unfrozen = world.query_filtered::<&mut Pos, Without<Frozen>>();
    unfrozen.for_each(&mut world, |mut pos| pos.0 += 100);
    (world, entities, changed, unfrozen)
}

fn a_marked_column_keeps_old_rows_that_move_in_unchanged(storage: Storage) {
    let (mut world, entities, mut changed, mut q) = marked_world(storage);
    // An untouched entity moves in; its own change is older than the mark.
    let mover = entities[15];
    world.remove_one::<Frozen>(mover).unwrap();
    let written: Vec<Entity> = entities[..10].to_vec();
    assert_eq!(sorted(changed.iter(&world).collect()), written);

    // Rows that leave a marked column take the mark along.
    q.for_each(&mut world, |mut pos| pos.0 += 100);
    let leaver = entities[3];
    world.insert_one(leaver, Frozen).unwrap();
    let mut written: Vec<Entity> = entities[..10].to_vec();
    written.push(mover);
    assert_eq!(sorted(changed.iter(&world).collect()), sorted(written));
}

fn a_mark_holds_for_every_row_that_leaves_and_ends_when_a_row_moving_in_settles_it(storage: Storage) {
    // A marked table keeps its mark while rows leave one by one (each takes it along); a row
    // moving in with an older change settles the mark into the rows; after that, rows move
    // with their own ticks, and moves with no mark anywhere change nothing.
    let (mut world, entities, mut changed, _) = marked_world(storage);
    // Three rows leave the marked (Pos) table for the unmarked (Pos, Frozen) one.
    for &leaver in &entities[..3] {
        world.insert_one(leaver, Frozen).unwrap();
    }
    // An unwritten row moves into the marked table, settling its mark.
    world.remove_one::<Frozen>(entities[12]).unwrap();
    // Two more rows leave, with the ticks the settling wrote into them.
    for &leaver in &entities[3..5] {
        world.insert_one(leaver, Frozen).unwrap();
    }
    assert_eq!(sorted(changed.iter(&world).collect()), entities[..10].to_vec());
    for &e in &entities[..5] {
        world.remove_one::<Frozen>(e).unwrap();
    }
    assert_eq!(changed.iter(&world).count(), 0);
}

#[test]
fn ref_mut_and_get_mut_see_a_column_mark() {
    let (mut world, entities) = two_archetypes(Storage::Table);
    let mut refs = world.query_filtered::<Ref<Pos>, With<Frozen>>();
    assert!(refs.iter(&world).all(|pos| pos.is_changed()));
    assert!(refs.iter(&world).all(|pos| !pos.is_changed()));
    let before_mark = refs.last_run();

    let mut chunk = world.query_filtered::<&mut Pos, With<Frozen>>();
    chunk.for_each_chunk(&mut world, |column| column[0].0 += 1);
    assert!(refs.iter(&world).all(|pos| pos.is_changed()));

    // `Mut::is_changed` before any write, for a query whose last run predates the mark.
    let mut muts = world.query_filtered::<Mut<Pos>, With<Frozen>>();
    muts.set_last_run(before_mark);
    let mut seen = 0;
    muts.for_each(&mut world, |pos| {
        assert!(pos.is_changed());
        seen += 1;
    });
    assert_eq!(seen, 10);
    // `World::get_mut` reads against the world's last change tick, which predates the mark.
    world.clear_trackers();
    chunk.for_each_chunk(&mut world, |_| {});
    assert!(world.get_mut::<Pos>(entities[12]).unwrap().is_changed());
    assert!(!world.get_mut::<Pos>(entities[2]).unwrap().is_changed());
}

fn a_panicking_for_each_still_marks_what_it_wrote(storage: Storage) {
    let (mut world, entities) = two_archetypes(storage);
    let mut changed = changed_pos(&mut world);
    let mut q = world.query_filtered::<&mut Pos, Without<Frozen>>();
    let result = catch_unwind(AssertUnwindSafe(|| {
        q.for_each(&mut world, |mut pos| {
            pos.0 += 100;
            if pos.0 == 104 {
                panic!("written, then panicked");
            }
        })
    }));
    assert!(result.is_err());
    assert_eq!(sorted(changed.iter(&world).collect()), entities[..5].to_vec());
}

fn par_for_each_marks_exactly_the_rows_it_writes(storage: Storage) {
    for batch in [
        BatchSize::Fixed(3),
        BatchSize::Fixed(10),
        BatchSize::Fixed(1 << 20),
    ] {
        let (mut world, entities) = two_archetypes(storage);
        let mut changed = changed_pos(&mut world);
        let mut q = world.query::<&mut Pos>();
        q.set_batch_size(batch);
        q.par_for_each(&mut world, |mut pos| {
            if pos.0 % 3 != 1 {
                pos.0 += 100;
            }
        });
        let expected: Vec<Entity> = (0..20).filter(|i| i % 3 != 1).map(|i| entities[i]).collect();
        assert_eq!(
            sorted(changed.iter(&world).collect()),
            sorted(expected),
            "{batch:?}"
        );
        q.par_for_each(&mut world, |mut pos| pos.0 += 1);
        assert_eq!(changed.iter(&world).count(), 20, "{batch:?}");
    }
}

fn par_for_each_marks_fully_written_batches_of_a_partly_written_archetype(storage: Storage) {
    // Rows below the cut are written: with batches of 3, some batches of an archetype are
    // written in full (their marks wait until every batch is done) and others are not.
    for cut in [5, 13, 20] {
        let (mut world, entities) = two_archetypes(storage);
        let mut changed = changed_pos(&mut world);
        let mut q = world.query::<&mut Pos>();
        q.set_batch_size(BatchSize::Fixed(3));
        q.par_for_each(&mut world, |mut pos| {
            if pos.0 < cut {
                pos.0 += 100;
            }
        });
        let expected: Vec<Entity> = entities[..cut as usize].to_vec();
        assert_eq!(sorted(changed.iter(&world).collect()), expected, "cut {cut}");
    }
}

fn automatic_par_for_each_marks_exactly_the_rows_it_writes(storage: Storage) {
    // Past the serial threshold, so rayon splits the archetypes' rows as it likes: whatever
    // runs it makes, exactly the written rows count as changed.
    for (name, writes) in PATTERNS {
        let mut world = world_with(storage);
        let mut entities: Vec<Entity> = world.spawn_batch((0..150).map(|i| (Pos(i),))).collect();
        entities.extend(world.spawn_batch((150..300).map(|i| (Pos(i), Frozen))));
        let mut changed = changed_pos(&mut world);
        assert_eq!(changed.iter(&world).count(), 0);
        let mut q = world.query::<&mut Pos>();
        q.par_for_each(&mut world, |mut pos| {
            if writes(pos.0 % 150 / 15) {
                pos.0 += 1000;
            }
        });
        let expected: Vec<Entity> = (0..300)
            .filter(|&i| writes(i % 150 / 15))
            .map(|i| entities[i as usize])
            .collect();
        assert_eq!(sorted(changed.iter(&world).collect()), sorted(expected), "{name}");
    }
}

fn a_panicking_par_for_each_still_marks_what_it_wrote(storage: Storage) {
    let (mut world, entities) = two_archetypes(storage);
    let mut changed = changed_pos(&mut world);
    let mut q = world.query::<&mut Pos>();
    q.set_batch_size(BatchSize::Fixed(3));
    let written = std::sync::Mutex::new(Vec::new());
    let result = catch_unwind(AssertUnwindSafe(|| {
        q.par_for_each(&mut world, |mut pos| {
            let index = pos.0;
            pos.0 += 100;
            written.lock().unwrap().push(entities[index as usize]);
            assert_ne!(index, 15, "written, then panicked");
        })
    }));
    assert!(result.is_err());
    let written = sorted(written.into_inner().unwrap());
    assert!(written.contains(&entities[15]));
    // Which other rows ran before the panic stopped their task depends on the schedule;
    // whichever did are exactly the ones marked.
    assert_eq!(sorted(changed.iter(&world).collect()), written);
}

fn a_par_for_each_run_that_panics_in_a_later_chunk_marks_its_earlier_chunks(storage: Storage) {
    // Runs of 3000 rows go through their rows in chunks; the panic comes in the third chunk
    // of the first run, so its first two chunks (all written, marks deferred) must still be
    // marked, as must the rows of the panicking chunk before the panic and whatever the
    // other run wrote.
    let mut world = world_with(storage);
    let entities: Vec<Entity> = world.spawn_batch((0..4000).map(|i| (Pos(i),))).collect();
    let mut changed = changed_pos(&mut world);
    let mut q = world.query::<&mut Pos>();
    q.set_batch_size(BatchSize::Fixed(3000));
    let written = std::sync::Mutex::new(Vec::new());
    let result = catch_unwind(AssertUnwindSafe(|| {
        q.par_for_each(&mut world, |mut pos| {
            let index = pos.0;
            pos.0 += 10_000;
            written.lock().unwrap().push(entities[index as usize]);
            assert_ne!(index, 2500, "written, then panicked");
        })
    }));
    assert!(result.is_err());
    let written = sorted(written.into_inner().unwrap());
    assert!(
        written.len() >= 2501,
        "the first run got to row 2500: {}",
        written.len()
    );
    assert_eq!(sorted(changed.iter(&world).collect()), written);
}

fn a_column_mark_never_reads_as_new_after_the_clock_wraps(storage: Storage) {
    let (mut world, _) = two_archetypes(storage);
    let mut changed = changed_pos(&mut world);
    let mut q = world.query::<&mut Pos>();
    q.for_each(&mut world, |mut pos| pos.0 += 1);
    assert_eq!(changed.iter(&world).count(), 20);
    world.advance_change_tick_for_tests(1000);
    assert_eq!(changed.iter(&world).count(), 0);
    // Round the clock to just past the mark's tick, clamping as a scheduler would.
    let mut remaining = u64::from(u32::MAX) + 1 + 500;
    while remaining > 0 {
        let step = remaining.min(u64::from(CHECK_TICK_THRESHOLD)) as u32;
        world.advance_change_tick_for_tests(step);
        world.check_change_ticks();
        remaining -= u64::from(step);
    }
    assert_eq!(
        changed.iter(&world).count(),
        0,
        "the old mark must not look new after the wrap"
    );
}

fn whole_table_batches_keep_each_rows_change_state(storage: Storage) {
    // Rows leaving a marked table in bulk take the mark along.
    let (mut world, entities) = two_archetypes(storage);
    let mut changed = changed_pos(&mut world);
    let mut q = world.query_filtered::<&mut Pos, Without<Frozen>>();
    q.for_each(&mut world, |mut pos| pos.0 += 100);
    world
        .insert_batch(entities[..10].iter().map(|&e| (e, (Health(1),))))
        .unwrap();
    assert_eq!(sorted(changed.iter(&world).collect()), entities[..10].to_vec());

    // Old rows arriving in bulk beside marked ones stay unchanged.
    let (mut world, entities) = two_archetypes(storage);
    let mut changed = changed_pos(&mut world);
    let mut q = world.query_filtered::<&mut Pos, Without<Frozen>>();
    q.for_each(&mut world, |mut pos| pos.0 += 100);
    world.remove_batch::<(Frozen,)>(&entities[10..]).unwrap();
    assert_eq!(sorted(changed.iter(&world).collect()), entities[..10].to_vec());
}
