//! Probes of the query run plan (`query/plan.rs`): a `QueryState` keeps raw pointers into
//! the world's tables across runs, trusted while the world's archetype *shape* stamp reads
//! the same. Each probe keeps long-lived states across one kind of world change and checks
//! every pass against a reference read through a fresh state (which never has a plan), so a
//! stale pointer or row count shows up as a wrong result natively and as UB under Miri.
//!
//! Every change is followed by three passes: the first walks the archetypes, the second
//! makes the plan and reads it, the third reads it again.

#[cfg(not(miri))]
use std::collections::{BTreeMap as Map, BTreeSet as Set};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

#[cfg(miri)]
use by_index::{Map, Set};
use tabula_core::{
    Added, Changed, CommandQueue, Commands, Entity, Has, Or, QueryState, With, Without, World,
};

#[derive(Debug, Clone, Copy, PartialEq)]
struct Pos(u32);
#[derive(Debug, Clone, Copy, PartialEq)]
struct Vel(u32);
#[derive(Debug, Clone, Copy, PartialEq)]
struct Tag;
#[derive(Debug, Clone, Copy, PartialEq)]
#[repr(align(32))]
struct Wide([u64; 3]);

/// What one entity looks like to the probes: `Pos`, `Vel` if any, whether it has `Tag`.
type Row = (u32, Option<u32>, bool);

/// The reference: read through a fresh state, which walks the archetypes.
fn reference(world: &mut World) -> Map<Entity, Row> {
    let mut q = world.query::<(Entity, &Pos, Option<&Vel>, Has<Tag>)>();
    q.iter(world)
        .map(|(e, p, v, t)| (e, (p.0, v.map(|v| v.0), t)))
        .collect()
}

type Writer = QueryState<(Entity, &'static mut Pos, Option<&'static mut Vel>, Has<Tag>)>;
type Chunker = QueryState<(Entity, &'static mut Pos, Option<&'static mut Vel>)>;

/// Long-lived states that every probe drives through all changes.
struct Probes {
    writer: Writer,
    chunker: Chunker,
    tagged: QueryState<(Entity, &'static Pos), (With<Tag>, Without<Wide>)>,
    entities: QueryState<Entity>,
}

impl Probes {
    fn new(world: &mut World) -> Self {
        Self {
            writer: world.query(),
            chunker: world.query(),
            tagged: world.query_filtered(),
            entities: world.query(),
        }
    }

    /// Three rounds (two under Miri: the first after a change refreshes the plan, the second
    /// runs on the refreshed one) of: a `for_each` pass adding 1 to `Pos` and 10 to `Vel`, a
    /// `for_each_chunk` pass adding 100 to `Pos`, and read-only passes; each checked against
    /// the reference before and after.
    fn check(&mut self, world: &mut World, after: &str) {
        let passes = if cfg!(miri) { 2 } else { 3 };
        for pass in 0..passes {
            let before = reference(world);
            let mut seen = Map::new();
            self.writer.for_each(world, |(e, mut p, v, t)| {
                let old = (p.0, v.as_ref().map(|v| v.0), t);
                assert!(seen.insert(e, old).is_none(), "{e:?} twice");
                p.0 += 1;
                if let Some(mut v) = v {
                    v.0 += 10;
                }
            });
            assert_eq!(seen, before, "for_each pass {pass} after {after}");

            let mut chunk_seen = Map::new();
            self.chunker.for_each_chunk(world, |(es, ps, vs)| {
                assert_eq!(es.len(), ps.len(), "chunk lengths after {after}");
                if let Some(vs) = &vs {
                    assert_eq!(vs.len(), ps.len());
                }
                for (i, (e, p)) in es.iter().zip(ps.iter_mut()).enumerate() {
                    let v = vs.as_ref().map(|vs| vs[i].0);
                    assert!(chunk_seen.insert(*e, (p.0, v)).is_none(), "{e:?} twice in chunks");
                    p.0 += 100;
                }
            });
            let expected: Map<Entity, (u32, Option<u32>)> = before
                .iter()
                .map(|(&e, &(p, v, _))| (e, (p + 1, v.map(|v| v + 10))))
                .collect();
            assert_eq!(chunk_seen, expected, "for_each_chunk pass {pass} after {after}");

            let after_pass = reference(world);
            let expected: Map<Entity, Row> = before
                .iter()
                .map(|(&e, &(p, v, t))| (e, (p + 101, v.map(|v| v + 10), t)))
                .collect();
            assert_eq!(after_pass, expected, "world after pass {pass} after {after}");

            let mut tagged = Set::new();
            self.tagged.for_each(world, |(e, p)| {
                assert_eq!(after_pass[&e].0, p.0);
                tagged.insert(e);
            });
            let mut fresh = world.query_filtered::<Entity, (With<Tag>, Without<Wide>)>();
            let want: Set<Entity> = fresh.iter(world).collect();
            assert_eq!(tagged, want, "tagged pass {pass} after {after}");

            let mut all = Set::new();
            self.entities
                .for_each(world, |e| assert!(all.insert(e), "{e:?} twice"));
            let mut fresh = world.query::<Entity>();
            let want: Set<Entity> = fresh.iter(world).collect();
            assert_eq!(all, want, "entities pass {pass} after {after}");
            assert_eq!(all.len(), world.len() as usize);
        }
    }
}

fn populated() -> (World, Vec<Entity>) {
    let mut world = World::new();
    let mut entities = Vec::new();
    for i in 0..6u32 {
        entities.push(world.spawn((Pos(i),)));
        entities.push(world.spawn((Pos(i), Vel(i))));
        entities.push(world.spawn((Pos(i), Tag)));
        entities.push(world.spawn((Pos(i), Vel(i), Tag, Wide([i as u64; 3]))));
    }
    (world, entities)
}

#[test]
fn plan_survives_every_structural_change() {
    let (mut world, es) = populated();
    let mut p = Probes::new(&mut world);
    p.check(&mut world, "spawn");

    world.despawn(es[0]).unwrap();
    world.despawn(es[5]).unwrap();
    p.check(&mut world, "despawn");

    world.insert(es[1], (Tag,)).unwrap();
    p.check(&mut world, "insert moving");

    world.insert(es[2], (Pos(77),)).unwrap();
    p.check(&mut world, "insert replacing in place");

    world.remove::<(Vel,)>(es[9]).unwrap();
    p.check(&mut world, "remove");

    world.remove_one::<Tag>(es[3]).unwrap();
    p.check(&mut world, "remove_one");

    let batch: Vec<(Entity, (Vel,))> = [es[8], es[12], es[16]].iter().map(|&e| (e, (Vel(5),))).collect();
    world.insert_batch(batch).unwrap();
    p.check(&mut world, "insert_batch");

    let removed = world.remove_batch::<(Vel,)>(&[es[8], es[12]]).unwrap();
    assert_eq!(removed.len(), 2);
    p.check(&mut world, "remove_batch");

    let spawned: Vec<Entity> = world.spawn_batch((0..9u32).map(|i| (Pos(i), Vel(i)))).collect();
    assert_eq!(spawned.len(), 9);
    p.check(&mut world, "spawn_batch");

    // Without a size hint: the batch grows the table on the way.
    let n = world
        .spawn_batch((0..20u32).filter(|i| i % 2 == 0).map(|i| (Pos(i), Vel(i))))
        .count();
    assert_eq!(n, 10);
    p.check(&mut world, "spawn_batch past its size hint");

    // A new archetype the states have not seen.
    world.spawn((Pos(1), Wide([1; 3])));
    p.check(&mut world, "new archetype");

    world.clear();
    p.check(&mut world, "clear");

    world.spawn((Pos(3), Vel(3)));
    world.spawn((Pos(4), Tag));
    p.check(&mut world, "spawn after clear");
}

#[test]
fn plan_survives_entity_mut_views_and_get_mut() {
    let (mut world, es) = populated();
    let mut p = Probes::new(&mut world);
    p.check(&mut world, "spawn");

    world.get_mut::<Pos>(es[1]).unwrap().0 += 1000;
    p.check(&mut world, "get_mut");

    {
        let mut view = world.view_mut::<Vel>();
        view.get_mut(es[1]).unwrap().0 += 1000;
    }
    p.check(&mut world, "view_mut");

    {
        let mut e = world.entity_mut(es[2]).unwrap();
        e.get_mut::<Pos>().unwrap().0 += 5;
        e.insert((Vel(1),));
        e.remove::<(Tag,)>().unwrap();
    }
    p.check(&mut world, "entity_mut insert/remove");

    world.entity_mut(es[3]).unwrap().despawn();
    p.check(&mut world, "entity_mut despawn");

    world.insert_resource(7u64);
    *world.resource_mut::<u64>().unwrap() += 1;
    p.check(&mut world, "resources");

    world.check_change_ticks();
    p.check(&mut world, "check_change_ticks");
}

#[test]
fn plan_survives_reservations_commands_and_hierarchy() {
    let (mut world, es) = populated();
    let mut p = Probes::new(&mut world);
    p.check(&mut world, "spawn");

    let reserved = world.reserve_entity();
    // Not flushed yet: no table holds it, and no pass may see it.
    p.check(&mut world, "reserve");
    world.flush();
    assert!(world.contains(reserved));
    p.check(&mut world, "flush");

    let mut queue = CommandQueue::default();
    {
        let mut commands = Commands::new(&mut queue, &world);
        commands.spawn((Pos(50), Vel(50)));
        commands.insert(es[4], (Tag,));
        commands.remove::<(Pos,)>(es[7]);
        commands.despawn(es[9]);
        let child = commands.spawn((Pos(60),)).id();
        commands.entity(es[10]).add_child(child);
    }
    assert!(queue.apply(&mut world).is_empty());
    p.check(&mut world, "commands");

    world.set_parent(es[11], es[13]).unwrap();
    world.set_parent(es[14], es[13]).unwrap();
    p.check(&mut world, "set_parent");
    world.remove_parent(es[11]).unwrap();
    p.check(&mut world, "remove_parent");
    world.despawn_recursive(es[13]).unwrap();
    p.check(&mut world, "despawn_recursive");
}

#[test]
fn plan_after_a_panicking_spawn_batch_source() {
    let (mut world, _) = populated();
    let mut p = Probes::new(&mut world);
    p.check(&mut world, "spawn");
    let before = world.len();

    let result = catch_unwind(AssertUnwindSafe(|| {
        world
            .spawn_batch((0..10u32).map(|i| {
                assert!(i != 6, "source panics");
                (Pos(i), Vel(i))
            }))
            .count()
    }));
    assert!(result.is_err());
    assert_eq!(world.len(), before + 6);
    p.check(&mut world, "panicking spawn_batch (fold)");

    let result = catch_unwind(AssertUnwindSafe(|| {
        let mut batch = world.spawn_batch((0..10u32).map(|i| {
            assert!(i != 3, "source panics");
            (Pos(i), Tag)
        }));
        while batch.next().is_some() {}
    }));
    assert!(result.is_err());
    assert_eq!(world.len(), before + 9);
    p.check(&mut world, "panicking spawn_batch (next)");
}

/// Panics in `Drop` once the flag is set (and clears it: one panic per arming).
struct Bomb(u32, &'static AtomicBool);

impl Drop for Bomb {
    fn drop(&mut self) {
        if self.1.swap(false, Ordering::SeqCst) {
            panic!("Bomb {} goes off", self.0);
        }
    }
}

#[test]
fn plan_after_panicking_drops_in_structural_changes() {
    static ARMED: AtomicBool = AtomicBool::new(false);
    let (mut world, es) = populated();
    let bombs: Vec<Entity> = (0..6u32)
        .map(|i| world.spawn((Pos(i), Bomb(i, &ARMED))))
        .collect();
    let mut p = Probes::new(&mut world);
    p.check(&mut world, "spawn");

    ARMED.store(true, Ordering::SeqCst);
    assert!(catch_unwind(AssertUnwindSafe(|| world.despawn(bombs[0]))).is_err());
    ARMED.store(false, Ordering::SeqCst);
    p.check(&mut world, "panicking drop in despawn");

    ARMED.store(true, Ordering::SeqCst);
    assert!(catch_unwind(AssertUnwindSafe(|| world.insert(bombs[1], (Bomb(99, &ARMED),)))).is_err());
    ARMED.store(false, Ordering::SeqCst);
    p.check(&mut world, "panicking drop replacing in place");

    ARMED.store(true, Ordering::SeqCst);
    assert!(
        catch_unwind(AssertUnwindSafe(|| world
            .insert(es[0], (Vel(1),))
            .and(world.despawn(bombs[2]))))
        .is_err()
    );
    ARMED.store(false, Ordering::SeqCst);
    p.check(&mut world, "insert then panicking despawn");

    ARMED.store(true, Ordering::SeqCst);
    assert!(catch_unwind(AssertUnwindSafe(|| world.clear())).is_err());
    ARMED.store(false, Ordering::SeqCst);
    assert_eq!(world.len(), 0);
    p.check(&mut world, "panicking drop in clear");
    world.spawn((Pos(1), Bomb(7, &ARMED)));
    p.check(&mut world, "spawn after clear");
}

#[test]
fn plan_after_a_closure_panics_in_a_planned_pass() {
    let (mut world, _) = populated();
    let mut q = world.query::<(Entity, &mut Pos)>();
    let calls = AtomicUsize::new(0);
    // Pass 1 walks; pass 2 makes the plan and panics part-way; later passes must see every
    // row once and keep what the panicking pass wrote.
    q.for_each(&mut world, |(_, mut p)| p.0 += 1);
    for panic_at in [0usize, 3, 7, 23] {
        calls.store(0, Ordering::SeqCst);
        let before = reference(&mut world);
        let result = catch_unwind(AssertUnwindSafe(|| {
            q.for_each(&mut world, |(_, mut p)| {
                let n = calls.fetch_add(1, Ordering::SeqCst);
                assert!(n != panic_at, "closure panics");
                p.0 += 1;
            });
        }));
        assert!(result.is_err());
        let after = reference(&mut world);
        let bumped = before.iter().filter(|(e, r)| after[*e].0 == r.0 + 1).count();
        assert_eq!(bumped, panic_at, "rows written before the panic");
        // Reuse: a change in between, or not.
        if panic_at % 2 == 1 {
            world.spawn((Pos(0), Vel(0)));
        }
        for pass in 0..3 {
            let before = reference(&mut world);
            let mut seen = Map::new();
            q.for_each(&mut world, |(e, mut p)| {
                assert!(seen.insert(e, p.0).is_none());
                p.0 += 1;
            });
            let want: Map<Entity, u32> = before.iter().map(|(&e, r)| (e, r.0)).collect();
            assert_eq!(seen, want, "pass {pass} after a panic at {panic_at}");
        }
    }
}

/// Change filters read their ticks and floors per run, not from the plan.
#[test]
fn change_filters_through_the_plan() {
    let (mut world, es) = populated();
    let mut changed = world.query_filtered::<Entity, Changed<Pos>>();
    let mut added = world.query_filtered::<Entity, Added<Vel>>();
    let mut either = world.query_filtered::<Entity, Or<(Changed<Pos>, Added<Vel>)>>();
    let mut changed_ref = world.query_filtered::<Entity, Changed<Pos>>();
    let mut added_ref = world.query_filtered::<Entity, Added<Vel>>();
    let mut either_ref = world.query_filtered::<Entity, Or<(Changed<Pos>, Added<Vel>)>>();
    let mut writer = world.query::<(Entity, &mut Pos)>();
    let mut opt = world.query::<(Entity, Option<&mut Vel>)>();

    let mut round = |world: &mut World, label: &str| {
        let mut a = Set::new();
        changed.for_each(world, |e| {
            a.insert(e);
        });
        let b: Set<Entity> = changed_ref.iter(world).collect();
        assert_eq!(a, b, "Changed after {label}");
        let mut a = Set::new();
        added.for_each(world, |e| {
            a.insert(e);
        });
        let b: Set<Entity> = added_ref.iter(world).collect();
        assert_eq!(a, b, "Added after {label}");
        let mut a = Set::new();
        either.for_each(world, |e| {
            a.insert(e);
        });
        let b: Set<Entity> = either_ref.iter(world).collect();
        assert_eq!(a, b, "Or after {label}");
        a
    };

    for i in 0..4 {
        round(&mut world, &format!("settling {i}"));
    }
    assert!(round(&mut world, "nothing").is_empty());

    // Shape-neutral writes between passes: the plans stay, the filters must still see them.
    world.get_mut::<Pos>(es[3]).unwrap().0 += 1;
    assert_eq!(round(&mut world, "get_mut"), Set::from([es[3]]));
    assert!(round(&mut world, "nothing").is_empty());

    // A whole-archetype pass sets the floor; a later partial pass stores rows.
    writer.for_each(&mut world, |(_, mut p)| p.0 += 1);
    assert_eq!(round(&mut world, "whole pass").len(), es.len());
    writer.for_each(&mut world, |(e, mut p)| {
        if e == es[5] {
            p.0 += 1;
        }
    });
    assert_eq!(round(&mut world, "partial pass"), Set::from([es[5]]));
    opt.for_each(&mut world, |(e, v)| {
        if let Some(mut v) = v
            && e == es[1]
        {
            v.0 += 1;
        }
    });
    assert!(round(&mut world, "Vel write").is_empty());

    world.insert(es[0], (Vel(1),)).unwrap();
    assert_eq!(round(&mut world, "insert Vel"), Set::from([es[0]]));
    for _ in 0..3 {
        assert!(round(&mut world, "nothing").is_empty());
    }
    world.check_change_ticks();
    assert!(round(&mut world, "check_change_ticks").is_empty());
}

#[test]
fn swapped_worlds_with_equal_shapes_keep_their_plans() {
    // The same steps on both worlds: equal shape stamps, different values.
    let build = |base: u32| {
        let mut world = World::new();
        for i in 0..8u32 {
            world.spawn((Pos(base + i),));
            world.spawn((Pos(base + i), Vel(i)));
        }
        world
    };
    let mut a = build(0);
    let mut b = build(1000);
    let mut qa = a.query::<&mut Pos>();
    let mut qb = b.query::<&mut Pos>();
    let sum = |q: &mut QueryState<&mut Pos>, w: &mut World| {
        let mut s = 0;
        q.for_each(w, |p| s += p.0);
        s
    };
    let (sa, sb) = (sum(&mut qa, &mut a), sum(&mut qb, &mut b));
    for _ in 0..3 {
        assert_eq!(sum(&mut qa, &mut a), sa);
        assert_eq!(sum(&mut qb, &mut b), sb);
    }
    std::mem::swap(&mut a, &mut b);
    // The states follow their worlds.
    assert_eq!(sum(&mut qa, &mut b), sa);
    assert_eq!(sum(&mut qb, &mut a), sb);
    // And refuse the other one, whatever its shape.
    assert!(catch_unwind(AssertUnwindSafe(|| sum(&mut qa, &mut a))).is_err());
    assert!(catch_unwind(AssertUnwindSafe(|| sum(&mut qb, &mut b))).is_err());
    let mut qa2 = QueryState::<&mut Pos>::new(&mut b);
    assert_eq!(sum(&mut qa2, &mut b), sa);

    // A world dropped and rebuilt the same way (same shape) is another world.
    drop(b);
    let mut c = build(0);
    assert!(catch_unwind(AssertUnwindSafe(|| sum(&mut qa, &mut c))).is_err());
    assert!(catch_unwind(AssertUnwindSafe(|| qa.update_plan(&c))).is_err());
}

#[test]
fn update_plan_then_unchecked_passes_across_changes() {
    use tabula_core::{LastRun, UnsafeWorldCell};
    let (mut world, es) = populated();
    let mut q = world.query::<(Entity, &mut Pos, Option<&Vel>)>();
    let mut last = LastRun::NEVER;
    for (step, &victim) in es.iter().enumerate().take(6) {
        q.update_plan(&world);
        q.update_plan(&world);
        let before = reference(&mut world);
        let ticks = world.start_run(&mut last);
        let mut seen = Map::new();
        // SAFETY: `&mut world` is exclusive for the call and the state was updated for it.
        unsafe {
            q.for_each_unchecked(
                UnsafeWorldCell::new_mutable(&mut world),
                ticks,
                |(e, mut p, v)| {
                    assert!(seen.insert(e, (p.0, v.map(|v| v.0))).is_none());
                    p.0 += 1;
                },
            );
        }
        let want: Map<Entity, (u32, Option<u32>)> = before.iter().map(|(&e, r)| (e, (r.0, r.1))).collect();
        assert_eq!(seen, want, "step {step}");
        match step % 3 {
            0 => {
                world.spawn((Pos(9), Vel(9)));
            }
            1 => {
                world.despawn(victim).unwrap();
            }
            _ => {}
        }
    }
}

/// Operations that cache a new archetype edge (writing the archetype list's edge caches
/// directly, without moving the shape) but move no row: the plan stays, and under Miri its
/// pointers must still be valid after the list was borrowed mutably for the edge cache.
#[test]
fn plan_survives_edge_caching_that_moves_nothing() {
    #[derive(Debug)]
    struct Absent;
    #[derive(Debug)]
    struct AlsoAbsent(#[allow(dead_code)] u8);
    let (mut world, es) = populated();
    let mut p = Probes::new(&mut world);
    p.check(&mut world, "spawn");

    // Failing removes: each caches a remove edge back to the source.
    assert!(world.remove::<(Absent,)>(es[0]).is_err());
    p.check(&mut world, "a failing remove");
    assert!(world.remove::<(Vel, Absent)>(es[1]).is_err());
    assert!(world.remove_one::<AlsoAbsent>(es[2]).is_err());
    assert!(
        world
            .entity_mut(es[3])
            .unwrap()
            .remove::<(AlsoAbsent,)>()
            .is_err()
    );
    p.check(&mut world, "more failing removes");
    assert!(world.remove_batch::<(Absent, Pos)>(&[es[4], es[5]]).is_err());
    p.check(&mut world, "a failing remove_batch");

    // The empty bundle: removing it caches an edge to the source and moves nothing.
    world.remove::<()>(es[6]).unwrap();
    world.insert(es[7], ()).unwrap();
    p.check(&mut world, "empty bundles");
}

/// Under Miri, the probes' maps and sets of entities are vectors indexed by the entity's
/// index (the probes' worlds use a few dozen slots), with `BTreeMap`'s and `BTreeSet`'s
/// methods that the probes call and the same iteration order (by index; one generation
/// of an index at a time): there a `BTreeMap` insert costs as much as a query pass over
/// two dozen rows, and building and comparing them took most of each probe's time.
#[cfg(miri)]
mod by_index {
    use std::fmt;
    use std::ops::Index;

    use tabula_core::Entity;

    pub struct Map<K, V>(Vec<Option<(K, V)>>);

    impl<V> Map<Entity, V> {
        pub fn new() -> Self {
            Self(Vec::new())
        }

        pub fn insert(&mut self, entity: Entity, value: V) -> Option<V> {
            let i = entity.index() as usize;
            if self.0.len() <= i {
                self.0.resize_with(i + 1, || None);
            }
            let old = self.0[i].replace((entity, value));
            old.map(|(e, v)| {
                assert_eq!(e, entity, "two generations of one index in one map");
                v
            })
        }

        pub fn iter(&self) -> impl Iterator<Item = (&Entity, &V)> {
            self.0.iter().flatten().map(|(e, v)| (e, v))
        }

        pub fn len(&self) -> usize {
            self.iter().count()
        }
    }

    impl<V> Index<&Entity> for Map<Entity, V> {
        type Output = V;

        fn index(&self, entity: &Entity) -> &V {
            match self.0.get(entity.index() as usize) {
                Some(Some((e, v))) if e == entity => v,
                _ => panic!("{entity:?} not in the map"),
            }
        }
    }

    impl<V> FromIterator<(Entity, V)> for Map<Entity, V> {
        fn from_iter<I: IntoIterator<Item = (Entity, V)>>(iter: I) -> Self {
            let mut map = Self::new();
            for (e, v) in iter {
                map.insert(e, v);
            }
            map
        }
    }

    impl<V: PartialEq> PartialEq for Map<Entity, V> {
        fn eq(&self, other: &Self) -> bool {
            self.iter().eq(other.iter())
        }
    }

    impl<V: fmt::Debug> fmt::Debug for Map<Entity, V> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.debug_map().entries(self.iter()).finish()
        }
    }

    pub struct Set<K>(Map<K, ()>);

    impl Set<Entity> {
        pub fn new() -> Self {
            Self(Map::new())
        }

        pub fn insert(&mut self, entity: Entity) -> bool {
            self.0.insert(entity, ()).is_none()
        }

        pub fn len(&self) -> usize {
            self.0.len()
        }

        pub fn is_empty(&self) -> bool {
            self.0.len() == 0
        }
    }

    impl PartialEq for Set<Entity> {
        fn eq(&self, other: &Self) -> bool {
            self.0 == other.0
        }
    }

    impl FromIterator<Entity> for Set<Entity> {
        fn from_iter<I: IntoIterator<Item = Entity>>(iter: I) -> Self {
            Self(iter.into_iter().map(|e| (e, ())).collect())
        }
    }

    impl<const N: usize> From<[Entity; N]> for Set<Entity> {
        fn from(entities: [Entity; N]) -> Self {
            entities.into_iter().collect()
        }
    }

    impl fmt::Debug for Set<Entity> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.debug_set().entries(self.0.iter().map(|(e, ())| e)).finish()
        }
    }
}
