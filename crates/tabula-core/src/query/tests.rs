//! Query behaviour, checked from inside the crate (Miri runs all of these).
//!
//! Most cases run three times, with the test components in tables, in sparse sets, and mixed
//! (see [`per_storage!`]). Left table-only, as they test table internals or nothing
//! storage-dependent: `aliasing_queries_are_rejected_with_the_component_name` (access
//! checks only), `new_archetypes_are_matched_incrementally` (counts matched archetypes; a
//! sparse term matches every archetype), `for_each_chunk_gives_whole_columns_and_marks_them`
//! (chunks are table columns) and `wide_and_nested_tuples` (primitive component types).

use std::collections::HashSet;

use crate::change::CHECK_TICK_THRESHOLD;
use crate::{
    Added, BatchSize, Changed, Entity, Has, Mut, Or, QueryError, QueryState, Ref, With, Without, World,
};

#[derive(Debug, Clone, Copy, PartialEq)]
struct Pos(f32);
#[derive(Debug, Clone, Copy, PartialEq)]
struct Vel(f32);
#[derive(Debug, Clone, Copy, PartialEq)]
struct Health(u32);
#[derive(Debug, Clone, Copy, PartialEq)]
struct Frozen;

/// Where the test components live: each case below runs once per storage.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Storage {
    /// Every component in tables.
    Table,
    /// Every component in sparse sets: queries of sparse terms only.
    Sparse,
    /// `Pos` in tables, `Vel`, `Health` and `Frozen` in sparse sets: queries mixing both.
    Mixed,
}

/// A world whose test components are stored as `storage` says.
fn world_with(storage: Storage) -> World {
    let mut world = World::new();
    if storage == Storage::Sparse {
        world.register_component::<Pos>().sparse_set();
    }
    if storage != Storage::Table {
        world.register_component::<Vel>().sparse_set();
        world.register_component::<Health>().sparse_set();
        world.register_component::<Frozen>().sparse_set();
    }
    world
}

/// Generates, for each `fn case(storage: Storage)`, a module `case` with the tests `table`,
/// `sparse` and `mixed`. Miri runs the table and all-sparse cases (the sparse path's unsafe
/// code); the mixed one only natively, to keep Miri's time down, and after `native_only:` the
/// sparse one too (over a second under Miri).
macro_rules! per_storage {
    ($($case:ident),* $(,)?) => {
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

                #[test]
                #[cfg_attr(miri, ignore = "the mixed path runs under Miri in tests/sparse_query.rs")]
                fn mixed() {
                    super::$case(Storage::Mixed);
                }
            }
        )*
    };
    ($($case:ident),* $(,)?; native_only: $($native:ident),* $(,)?) => {
        per_storage!($($case),*);
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

                #[test]
                #[cfg_attr(miri, ignore = "the mixed path runs under Miri in tests/sparse_query.rs")]
                fn mixed() {
                    super::$native(Storage::Mixed);
                }
            }
        )*
    };
}

per_storage!(
    fetches_refs_options_entities_and_has,
    with_without_or_filters,
    mutation_through_for_each_and_iter_mut,
    changed_and_added_compare_against_the_states_last_run,
    ref_and_mut_report_change_information,
    option_mut_with_changed_filter,
    entities_moving_between_archetypes_mid_frame,
    get_get_mut_and_get_many_mut,
    a_query_may_write_what_its_tick_filter_reads,
    single_count_and_is_empty,
    wrapped_ticks_never_read_as_new,
    query_runs_through_mut_world_alone_clamp_old_ticks,
    a_query_idle_past_the_wrap_sees_a_fresh_write,
    contains_evaluates_filters_without_fetching,
    mutable_queries_read_through_shared_access;
    native_only: get_sees_every_structural_change,
    par_for_each_visits_every_row_once
);

fn sorted<T: Ord>(mut v: Vec<T>) -> Vec<T> {
    v.sort();
    v
}

fn world_with_three(storage: Storage) -> (World, [Entity; 3]) {
    let mut world = world_with(storage);
    let a = world.spawn((Pos(0.0), Vel(1.0)));
    let b = world.spawn((Pos(10.0), Vel(2.0), Frozen));
    let c = world.spawn((Pos(20.0), Health(5)));
    (world, [a, b, c])
}

fn fetches_refs_options_entities_and_has(storage: Storage) {
    let (mut world, [a, b, c]) = world_with_three(storage);
    let mut q = world.query::<(Entity, &Pos, Option<&Health>, Has<Frozen>)>();
    let rows = q
        .iter(&world)
        .map(|(e, p, h, frozen)| (e, p.0 as i32, h.copied(), frozen));
    let mut rows: Vec<_> = rows.collect();
    rows.sort_by_key(|r| r.0);
    assert_eq!(
        rows,
        vec![
            (a, 0, None, false),
            (b, 10, None, true),
            (c, 20, Some(Health(5)), false)
        ]
    );
}

fn with_without_or_filters(storage: Storage) {
    fn ids<F: crate::QueryFilter>(world: &mut World, q: &mut crate::QueryState<Entity, F>) -> Vec<Entity> {
        sorted(q.iter(world).collect())
    }
    let (mut world, [a, b, c]) = world_with_three(storage);
    let mut moving = world.query_filtered::<Entity, (With<Vel>, Without<Frozen>)>();
    assert_eq!(ids(&mut world, &mut moving), vec![a]);
    let mut either = world.query_filtered::<Entity, Or<(With<Frozen>, With<Health>)>>();
    assert_eq!(ids(&mut world, &mut either), vec![b, c]);
    let mut neither = world.query_filtered::<Entity, (Without<Frozen>, Without<Health>)>();
    assert_eq!(ids(&mut world, &mut neither), vec![a]);
}

fn mutation_through_for_each_and_iter_mut(storage: Storage) {
    let (mut world, [a, b, _]) = world_with_three(storage);
    let mut q = world.query_filtered::<(&mut Pos, &Vel), Without<Frozen>>();
    q.for_each(&mut world, |(mut p, v)| p.0 += v.0);
    for (mut p, v) in q.iter_mut(&mut world) {
        p.0 += v.0;
    }
    assert_eq!(world.get::<Pos>(a), Ok(&Pos(2.0)));
    assert_eq!(world.get::<Pos>(b), Ok(&Pos(10.0)), "frozen entity untouched");
}

fn changed_and_added_compare_against_the_states_last_run(storage: Storage) {
    let (mut world, [a, b, c]) = world_with_three(storage);
    let mut changed = world.query_filtered::<Entity, Changed<Pos>>();
    let mut added = world.query_filtered::<Entity, Added<Health>>();
    assert_eq!(
        sorted(changed.iter(&world).collect()),
        vec![a, b, c],
        "first run sees all"
    );
    assert_eq!(added.iter(&world).collect::<Vec<_>>(), vec![c]);
    assert_eq!(changed.iter(&world).count(), 0, "nothing changed since");

    // Reading through Mut without writing does not mark; writing does.
    let mut writer = world.query::<(Entity, &mut Pos)>();
    writer.for_each(&mut world, |(e, mut p)| {
        if e == b {
            p.0 += 1.0;
        } else {
            let _ = p.0;
        }
    });
    assert_eq!(changed.iter(&world).collect::<Vec<_>>(), vec![b]);
    world.insert_one(a, Health(1)).unwrap();
    assert_eq!(added.iter(&world).collect::<Vec<_>>(), vec![a]);
    // Moving between archetypes keeps the ticks: `a` was not changed by the move.
    assert_eq!(changed.iter(&world).count(), 0);
    world.get_mut::<Pos>(c).unwrap().0 = 3.0;
    assert_eq!(changed.iter(&world).collect::<Vec<_>>(), vec![c]);
}

fn ref_and_mut_report_change_information(storage: Storage) {
    let (mut world, [a, ..]) = world_with_three(storage);
    let mut refs = world.query::<(Entity, Ref<Pos>)>();
    assert!(refs.iter(&world).all(|(_, p)| p.is_added() && p.is_changed()));
    world.get_mut::<Pos>(a).unwrap().0 = 9.0;
    let flags: Vec<_> = refs
        .iter(&world)
        .map(|(e, p)| (e, p.is_added(), p.is_changed()))
        .collect();
    assert!(flags.contains(&(a, false, true)));
    assert_eq!(flags.iter().filter(|f| f.2).count(), 1);
    let mut muts = world.query::<Mut<Pos>>();
    let mut seen = 0;
    muts.for_each(&mut world, |p| {
        assert!(p.is_added(), "first run of this state");
        seen += 1;
    });
    assert_eq!(seen, 3);
}

fn option_mut_with_changed_filter(storage: Storage) {
    let (mut world, [a, _, c]) = world_with_three(storage);
    let mut q = world.query_filtered::<(Entity, Option<&mut Health>), Changed<Pos>>();
    q.for_each(&mut world, |_| {});
    world.get_mut::<Pos>(c).unwrap().0 += 1.0;
    world.get_mut::<Pos>(a).unwrap().0 += 1.0;
    q.for_each(&mut world, |(e, health)| {
        if let Some(mut h) = health {
            h.0 *= 10;
        } else {
            assert_eq!(e, a);
        }
    });
    assert_eq!(world.get::<Health>(c), Ok(&Health(50)));
}

#[test]
fn aliasing_queries_are_rejected_with_the_component_name() {
    let mut world = World::new();
    let err = crate::QueryState::<(&mut Pos, &Pos)>::try_new(&mut world).unwrap_err();
    assert!(err.component.ends_with("Pos"), "{err}");
    assert!(err.to_string().contains("Pos"));
    assert_eq!(
        err.to_string(),
        "query `((&mut Pos, &Pos), ())` accesses component `Pos` mutably together with another \
         access to it; fetch it once (as `&mut Pos` if it must be written)",
        "the message names types without their paths"
    );
    assert!(crate::QueryState::<(&mut Pos, &mut Pos)>::try_new(&mut world).is_err());
    assert!(crate::QueryState::<(&Pos, Option<&mut Pos>)>::try_new(&mut world).is_err());
    assert!(crate::QueryState::<(&Pos, &Pos, Has<Pos>)>::try_new(&mut world).is_ok());
    let panic = std::panic::catch_unwind(move || {
        world.query::<(Mut<Vel>, Ref<Vel>)>();
    });
    let message = panic.unwrap_err();
    let message = message.downcast_ref::<String>().unwrap();
    assert!(message.contains("Vel"), "{message}");
}

#[test]
fn new_archetypes_are_matched_incrementally() {
    let mut world = World::new();
    let mut q = world.query::<&Pos>();
    assert_eq!(q.iter(&world).count(), 0);
    world.spawn((Pos(1.0),));
    world.spawn((Pos(2.0), Vel(0.0)));
    let before = q.matched.len();
    assert_eq!(q.iter(&world).count(), 2);
    assert_eq!(q.matched.len(), before + 2);
    world.spawn((Vel(0.0),));
    assert_eq!(q.iter(&world).map(|p| p.0).sum::<f32>(), 3.0);
    assert_eq!(q.matched.len(), before + 2, "non-matching archetype not added");
}

fn entities_moving_between_archetypes_mid_frame(storage: Storage) {
    let mut world = world_with(storage);
    let ids: Vec<_> = (0..6).map(|i| world.spawn((Pos(i as f32),))).collect();
    let mut q = world.query::<(Entity, &Pos)>();
    // Collect first, then move half of them: the next pass sees each exactly once.
    let seen: Vec<Entity> = q.iter(&world).map(|(e, _)| e).collect();
    for e in seen.iter().step_by(2) {
        world.insert_one(*e, Vel(1.0)).unwrap();
    }
    let after: HashSet<_> = q.iter(&world).map(|(e, p)| (e, p.0 as i32)).collect();
    assert_eq!(after.len(), 6);
    assert_eq!(
        after,
        ids.iter().enumerate().map(|(i, &e)| (e, i as i32)).collect()
    );
}

fn get_get_mut_and_get_many_mut(storage: Storage) {
    let (mut world, [a, b, c]) = world_with_three(storage);
    let mut q = world.query_filtered::<&mut Pos, With<Vel>>();
    q.get_mut(&mut world, a).unwrap().0 = 7.0;
    assert_eq!(
        q.get_mut(&mut world, c).err(),
        Some(QueryError::NoMatch {
            entity: c,
            query: std::any::type_name::<(&mut Pos, With<Vel>)>()
        })
    );
    let [mut pa, mut pb] = q.get_many_mut(&mut world, [a, b]).unwrap();
    std::mem::swap(&mut pa.0, &mut pb.0);
    assert_eq!(world.get::<Pos>(b), Ok(&Pos(7.0)));
    assert_eq!(
        q.get_many_mut(&mut world, [b, b]).err(),
        Some(QueryError::AliasedMutability(b))
    );
    world.despawn(a).unwrap();
    let mut read = world.query::<&Pos>();
    assert_eq!(read.get(&world, a).err(), Some(QueryError::NoSuchEntity(a)));
    assert_eq!(read.get(&world, c), Ok(&Pos(20.0)));

    // A per-row filter decides a lookup too, and `get_many_mut` checks every entity before it
    // hands out anything.
    let mut changed = world.query_filtered::<&Pos, Changed<Pos>>();
    assert_eq!(changed.iter(&world).count(), 2, "b and c count as added");
    world.get_mut::<Pos>(c).unwrap().0 = 21.0;
    assert_eq!(changed.get(&world, c), Ok(&Pos(21.0)));
    let no_match = |entity| QueryError::NoMatch {
        entity,
        query: std::any::type_name::<(&Pos, Changed<Pos>)>(),
    };
    assert_eq!(changed.get(&world, b).err(), Some(no_match(b)));
    let mut changed_mut = world.query_filtered::<&mut Pos, Changed<Pos>>();
    changed_mut.iter_mut(&mut world).count();
    world.get_mut::<Pos>(c).unwrap().0 = 22.0;
    assert_eq!(
        changed_mut.get_many_mut(&mut world, [c, b]).err(),
        Some(no_match_mut(b))
    );
    assert_eq!(world.get::<Pos>(c), Ok(&Pos(22.0)));
}

fn a_query_may_write_what_its_tick_filter_reads(storage: Storage) {
    let (mut world, [a, b, c]) = world_with_three(storage);
    // Builds, as in bevy: the filter reads a row's ticks before that row's item exists.
    let mut q = world.query_filtered::<&mut Pos, Changed<Pos>>();
    let mut either = world.query_filtered::<&mut Pos, Or<(Changed<Pos>, Added<Vel>)>>();
    assert!(
        q.access()
            .writes()
            .contains(world.components().id::<Pos>().unwrap())
    );
    assert_eq!(q.iter_mut(&mut world).count(), 3, "everything counts as added");
    assert_eq!(q.iter_mut(&mut world).count(), 0);
    world.get_mut::<Pos>(b).unwrap().0 += 1.0;
    // Writes through the filtered query mark exactly the rows written.
    q.for_each(&mut world, |mut pos| pos.0 *= 10.0);
    let mut seen = world.query_filtered::<Entity, Changed<Pos>>();
    seen.iter(&world).count();
    q.for_each(&mut world, |mut pos| pos.0 += 0.5);
    assert_eq!(
        seen.iter(&world).collect::<Vec<_>>(),
        vec![],
        "the second pass found nothing"
    );
    assert_eq!(world.get::<Pos>(a), Ok(&Pos(0.0)));
    assert_eq!(world.get::<Pos>(b), Ok(&Pos(110.0)));
    assert_eq!(either.iter_mut(&mut world).count(), 3);
    world.get_mut::<Pos>(c).unwrap().0 = 1.0;
    assert_eq!(either.iter_mut(&mut world).count(), 1, "only c changed since");
    // Fetching a component twice is still refused.
    assert!(QueryState::<(&mut Pos, &Pos)>::try_new(&mut world).is_err());
}

fn no_match_mut(entity: Entity) -> QueryError {
    QueryError::NoMatch {
        entity,
        query: std::any::type_name::<(&mut Pos, Changed<Pos>)>(),
    }
}

fn single_count_and_is_empty(storage: Storage) {
    let (mut world, [_, _, c]) = world_with_three(storage);
    let mut healthy = world.query::<(Entity, &Health)>();
    assert_eq!(healthy.single(&world).map(|(e, _)| e), Ok(c));
    let mut all = world.query::<&mut Pos>();
    assert!(matches!(
        all.single_mut(&mut world),
        Err(QueryError::MultipleEntities { .. })
    ));
    assert_eq!(all.count(&world), 3);
    let mut none = world.query::<&Frozen>();
    assert!(!none.is_empty(&world));
    let mut nobody = world.query_filtered::<&Pos, (With<Frozen>, With<Health>)>();
    assert!(nobody.is_empty(&world));
    assert!(matches!(
        nobody.single(&world),
        Err(QueryError::NoEntities { .. })
    ));
    let mut changed = world.query_filtered::<Entity, Changed<Health>>();
    assert_eq!(changed.count(&world), 1, "count evaluates row filters");
}

#[test]
fn for_each_chunk_gives_whole_columns_and_marks_them() {
    let mut world = World::new();
    world.spawn_batch((0..5).map(|i| (Pos(i as f32), Vel(1.0))));
    world.spawn_batch((0..3).map(|i| (Pos(i as f32), Vel(2.0), Frozen)));
    let mut changed = world.query_filtered::<Entity, Changed<Pos>>();
    changed.for_each(&mut world, |_| {});
    let mut q = world.query::<(&mut Pos, &Vel, Has<Frozen>)>();
    let mut chunks = Vec::new();
    q.for_each_chunk(&mut world, |(pos, vel, frozen)| {
        for (p, v) in pos.iter_mut().zip(vel) {
            p.0 += v.0;
        }
        chunks.push((pos.len(), frozen));
    });
    assert_eq!(sorted(chunks), vec![(3, true), (5, false)]);
    assert_eq!(changed.iter(&world).count(), 8);
    let total: f32 = world.query::<&Pos>().iter(&world).map(|p| p.0).sum();
    assert_eq!(total, (0..5).sum::<i32>() as f32 + 5.0 + 3.0 + 6.0);
}

fn par_for_each_visits_every_row_once(storage: Storage) {
    let mut world = world_with(storage);
    let n = if cfg!(miri) { 300 } else { 20_000 };
    world.spawn_batch((0..n).map(|i| (Pos(i as f32), Vel(1.0))));
    world.spawn_batch((0..n / 3).map(|i| (Pos(i as f32), Vel(1.0), Health(0))));
    let expected: f32 = world.query::<&Pos>().iter(&world).map(|p| p.0 + 1.0).sum();
    for batch in [
        BatchSize::Automatic,
        BatchSize::Fixed(7),
        BatchSize::Fixed(1 << 20),
    ] {
        let mut q = world.query::<(&mut Pos, &Vel)>();
        q.set_batch_size(batch);
        q.par_for_each(&mut world, |(mut p, v)| p.0 += v.0);
        let total: f32 = world.query::<&Pos>().iter(&world).map(|p| p.0).sum();
        assert_eq!(total, expected, "{batch:?}");
        q.par_for_each(&mut world, |(mut p, v)| p.0 -= v.0);
    }
}

fn wrapped_ticks_never_read_as_new(storage: Storage) {
    let mut world = world_with(storage);
    let e = world.spawn((Pos(0.0),)); // stamped with tick 1
    let mut changed = world.query_filtered::<Entity, Changed<Pos>>();
    assert_eq!(changed.iter(&world).count(), 1);
    // Let the query run again later, so its last run is well after the write.
    world.advance_change_tick_for_tests(1000);
    assert_eq!(changed.iter(&world).count(), 0);
    // Run the clock round until "now" is tick 500 again: without clamping, the write at
    // tick 1 would be 499 ticks old while the query's last run is ~4 billion ticks old, so
    // the write would read as new. Steps stay within the clamp interval, and the world's
    // periodic check runs after each, as structural operations or a scheduler would.
    let mut remaining = u64::from(u32::MAX) + 1 - u64::from(world.change_tick().get()) + 500;
    while remaining > 0 {
        let step = remaining.min(u64::from(CHECK_TICK_THRESHOLD)) as u32;
        world.advance_change_tick_for_tests(step);
        world.check_change_ticks();
        remaining -= u64::from(step);
    }
    assert_eq!(world.change_tick().get(), 500);
    assert_eq!(
        changed.iter(&world).count(),
        0,
        "the old write must not look new after the wrap"
    );
    world.get_mut::<Pos>(e).unwrap().0 = 1.0;
    assert_eq!(changed.iter(&world).collect::<Vec<_>>(), vec![e]);
    assert_eq!(changed.iter(&world).count(), 0);
}

/// Runs the clock `by` ticks forward in steps inside the clamp interval, calling `each`
/// after every step.
fn advance_in_steps(world: &mut World, by: u64, mut each: impl FnMut(&mut World)) {
    let mut remaining = by;
    while remaining > 0 {
        let step = remaining.min(u64::from(CHECK_TICK_THRESHOLD) / 2) as u32;
        world.advance_change_tick_for_tests(step);
        each(world);
        remaining -= u64::from(step);
    }
}

fn query_runs_through_mut_world_alone_clamp_old_ticks(storage: Storage) {
    // Nothing but `&mut World` query runs between the write and the wrap: they must clamp.
    let mut world = world_with(storage);
    world.spawn((Pos(0.0),));
    world.spawn((Vel(0.0),));
    let mut changed = world.query_filtered::<Entity, Changed<Pos>>();
    let mut other = world.query::<&mut Vel>();
    assert_eq!(changed.iter(&world).count(), 1);
    assert_eq!(changed.iter(&world).count(), 0);
    advance_in_steps(&mut world, u64::from(u32::MAX) + 300, |world| {
        other.for_each(world, |_| {});
        assert_eq!(changed.iter_mut(world).count(), 0, "the old write reads as new");
    });
}

fn a_query_idle_past_the_wrap_sees_a_fresh_write(storage: Storage) {
    // The state's last run lies more than `u32::MAX` ticks back; as a `u32` tick it would
    // look recent and hide the write.
    let mut world = world_with(storage);
    let e = world.spawn((Pos(0.0),));
    let mut changed = world.query_filtered::<Entity, Changed<Pos>>();
    assert_eq!(changed.iter(&world).count(), 1);
    let since = u64::from(world.change_tick().get());
    advance_in_steps(&mut world, u64::from(u32::MAX) - 10, World::check_change_ticks);
    world.get_mut::<Pos>(e).unwrap().0 = 1.0;
    advance_in_steps(&mut world, 20, World::check_change_ticks);
    assert!(
        u64::from(world.change_tick().get()) < since + 20,
        "the clock wrapped"
    );
    assert_eq!(changed.get(&world, e).ok(), Some(e), "get between runs");
    assert_eq!(changed.iter(&world).collect::<Vec<_>>(), vec![e]);
    assert_eq!(changed.iter(&world).count(), 0);
}

#[test]
fn wide_and_nested_tuples() {
    let mut world = World::new();
    let e = world.spawn((
        1u8, 2u16, 3u32, 4u64, 5i8, 6i16, 7i32, 8i64, 9f32, 10f64, 'k', true,
    ));
    let mut q = world.query::<(
        &u8,
        &u16,
        &u32,
        &u64,
        &i8,
        &i16,
        &i32,
        &i64,
        &f32,
        &f64,
        &char,
        (&bool, Entity),
    )>();
    let (a, .., (flag, id)) = q.single(&world).unwrap();
    assert_eq!((*a, *flag, id), (1, true, e));
}

fn get_sees_every_structural_change(storage: Storage) {
    let mut world = world_with(storage);
    let a = world.spawn((Pos(1.0),));
    let b = world.spawn((Pos(2.0), Vel(0.0)));
    let tagged = world.spawn((Frozen,));
    let mut q = world.query_filtered::<&Pos, Changed<Pos>>();
    assert_eq!(q.get(&world, a), Ok(&Pos(1.0)));
    assert_eq!(q.get(&world, b), Ok(&Pos(2.0)));
    assert!(q.get(&world, tagged).is_err(), "not matched");
    // A run of the query: nothing changed since, so the filter refuses both.
    q.iter(&world).for_each(drop);
    assert!(q.get(&world, a).is_err() && q.get(&world, b).is_err());

    // Each of these moves or reallocates rows.
    world.get_mut::<Pos>(a).unwrap().0 = 10.0;
    assert_eq!(
        q.get(&world, a),
        Ok(&Pos(10.0)),
        "a shape-neutral write, through the plan"
    );
    world.insert(a, (Vel(1.0),)).unwrap();
    assert_eq!(q.get(&world, a), Ok(&Pos(10.0)), "after moving to b's archetype");
    assert!(q.get(&world, b).is_err(), "b is unchanged");
    let many: Vec<Entity> = world
        .spawn_batch((0..100).map(|i| (Pos(100.0 + i as f32), Vel(0.0))))
        .collect();
    for (i, &e) in many.iter().enumerate() {
        assert_eq!(
            q.get(&world, e),
            Ok(&Pos(100.0 + i as f32)),
            "after the table grew"
        );
    }
    assert_eq!(q.get(&world, a), Ok(&Pos(10.0)));
    world.despawn(a).unwrap();
    assert!(q.get(&world, a).is_err());
    world.remove::<(Vel,)>(b).unwrap();
    assert!(q.get(&world, b).is_err(), "a move is not a change");
    world.get_mut::<Pos>(b).unwrap().0 = 3.0;
    assert_eq!(q.get(&world, b), Ok(&Pos(3.0)), "after moving out again");
    world.insert(tagged, (Pos(7.0),)).unwrap();
    assert_eq!(
        q.get(&world, tagged),
        Ok(&Pos(7.0)),
        "in an archetype made after the plan"
    );
}

fn contains_evaluates_filters_without_fetching(storage: Storage) {
    let mut world = world_with(storage);
    let a = world.spawn((Pos(0.0),));
    let b = world.spawn((Pos(0.0), Vel(1.0)));
    let gone = world.spawn((Pos(0.0),));
    world.despawn(gone).unwrap();
    // Mutable data through `&World`: nothing is fetched.
    let mut with_vel = world.query_filtered::<&mut Pos, crate::With<Vel>>();
    assert!(with_vel.contains(&world, b));
    assert!(!with_vel.contains(&world, a));
    assert!(!with_vel.contains(&world, gone));
    // A row filter: `contains` sees changes since the last run, and does not start a run.
    let mut changed = world.query_filtered::<Entity, Changed<Pos>>();
    assert!(changed.contains(&world, a), "new since the state was made");
    assert_eq!(changed.iter(&world).count(), 2);
    assert!(!changed.contains(&world, a));
    world.get_mut::<Pos>(a).unwrap().0 = 2.0;
    assert!(changed.contains(&world, a) && changed.contains(&world, a));
    assert!(!changed.contains(&world, b));
}

fn mutable_queries_read_through_shared_access(storage: Storage) {
    let (mut world, [a, b, c]) = world_with_three(storage);
    let mut q = world.query_filtered::<(Entity, &mut Pos, Option<Mut<Health>>), Without<Frozen>>();
    // `iter` on `&World` yields the read-only forms: `&Pos`, `Option<Ref<Health>>`.
    let rows: Vec<(Entity, f32, Option<u32>)> = q
        .iter(&world)
        .map(|(e, p, h): (Entity, &Pos, Option<Ref<Health>>)| (e, p.0, h.map(|h| h.0)))
        .collect();
    assert_eq!(sorted_by_entity(rows), [(a, 0.0, None), (c, 20.0, Some(5))]);
    assert_eq!(q.get(&world, c).map(|(_, p, _)| p.0), Ok(20.0));
    assert!(
        matches!(q.get(&world, b), Err(QueryError::NoMatch { .. })),
        "filtered out"
    );
    assert!(matches!(
        q.single(&world),
        Err(QueryError::MultipleEntities { .. })
    ));

    // Reading marks nothing changed; writing afterwards still does.
    let mut changed = world.query_filtered::<Entity, Changed<Pos>>();
    changed.iter(&world).for_each(drop);
    q.iter(&world).for_each(drop);
    assert_eq!(
        changed.iter(&world).count(),
        0,
        "a read-only pass changes nothing"
    );
    for (_, mut p, _) in q.iter_mut(&mut world) {
        p.0 += 1.0;
    }
    assert_eq!(sorted(changed.iter(&world).collect()), [a, c]);
    let read: Vec<f32> = q.iter(&world).map(|(_, p, _)| p.0).collect();
    assert_eq!(sorted_f32(read), [1.0, 21.0]);
}

fn sorted_by_entity<T>(mut v: Vec<(Entity, T, Option<u32>)>) -> Vec<(Entity, T, Option<u32>)> {
    v.sort_by_key(|r| r.0);
    v
}

fn sorted_f32(mut v: Vec<f32>) -> Vec<f32> {
    v.sort_by(f32::total_cmp);
    v
}
