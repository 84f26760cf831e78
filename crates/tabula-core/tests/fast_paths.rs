//! The storage and query fast paths against awkward inputs: `spawn_batch` through column
//! pointers read once (lying size hints, zero-sized, over-aligned and `Drop` components,
//! panicking source and consumer), whole-table batches in row order, and `Added`/`Changed`
//! filters sharing a query with `&mut T` while items outlive `next()`. Written as a
//! soundness review's probes; Miri runs them (the `par_for_each` one under Tree Borrows).
//!
//! The two change-filter probes run with `P` in tables and in a sparse set (see
//! [`per_storage!`]); the `spawn_batch` and whole-table batch probes are about table
//! columns and stay table-only.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use tabula_core::{Added, Changed, Entity, Or, World};

mod common;
use common::{Storage, per_storage};

#[derive(Debug)]
struct D(Arc<AtomicUsize>, u32);
impl Drop for D {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
#[repr(align(64))]
struct Big(u64);

#[derive(Debug, Clone, Copy, PartialEq)]
struct Z;

#[derive(Debug, Clone, Copy, PartialEq)]
struct P(u32);

/// A world with `P` stored as `storage` says.
fn world_with(storage: Storage) -> World {
    let mut world = World::new();
    if storage == Storage::Sparse {
        world.register_component::<P>().sparse_set();
    }
    world
}

per_storage!(
    changed_filter_with_write_items_outliving_next,
    par_for_each_changed_with_write
);

/// An iterator whose lower size hint lies in both directions.
struct Liar<I> {
    inner: I,
    hint: usize,
}
impl<I: Iterator> Iterator for Liar<I> {
    type Item = I::Item;
    fn next(&mut self) -> Option<I::Item> {
        self.inner.next()
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.hint, None)
    }
}

#[test]
fn spawn_batch_fold_drop_zst_align_and_lying_hints() {
    let drops = Arc::new(AtomicUsize::new(0));
    {
        let mut world = World::new();
        world.spawn((D(drops.clone(), 999), Z, Big(7), P(1)));
        for hint in [0usize, 1, 3, 7, 100] {
            let d = drops.clone();
            let mut seen = Vec::new();
            world
                .spawn_batch(Liar {
                    inner: (0..13u32).map(move |i| (D(d.clone(), i), Z, Big(i as u64), P(i))),
                    hint,
                })
                .for_each(|e| seen.push(e));
            assert_eq!(seen.len(), 13);
            for (i, &e) in seen.iter().enumerate() {
                assert_eq!(world.get::<D>(e).unwrap().1, i as u32);
                assert_eq!(world.get::<Big>(e), Ok(&Big(i as u64)));
                assert_eq!(world.get::<P>(e), Ok(&P(i as u32)));
                assert_eq!(world.get::<Z>(e), Ok(&Z));
                assert_eq!((world.get::<Big>(e).unwrap() as *const Big as usize) % 64, 0);
            }
        }
        assert_eq!(drops.load(Ordering::SeqCst), 0);
        // count()/sum() also go through fold.
        let d = drops.clone();
        let n = world
            .spawn_batch((0..9u32).map(move |i| (D(d.clone(), i), Z, Big(0), P(i))))
            .count();
        assert_eq!(n, 9);
        assert_eq!(world.len(), 1 + 5 * 13 + 9);
    }
    assert_eq!(drops.load(Ordering::SeqCst), 1 + 5 * 13 + 9);
}

#[test]
fn spawn_batch_fold_panicking_source_and_consumer() {
    let drops = Arc::new(AtomicUsize::new(0));
    {
        let mut world = World::new();
        // Source panics at item 5 (exact hint 10: all in the room loop).
        let d = drops.clone();
        let r = catch_unwind(AssertUnwindSafe(|| {
            world
                .spawn_batch((0..10u32).map(move |i| {
                    assert!(i != 5, "source panics");
                    (D(d.clone(), i), Big(i as u64))
                }))
                .for_each(|_| {})
        }));
        assert!(r.is_err());
        assert_eq!(world.len(), 5);
        // Consumer panics at item 3; the item it was handed is whole.
        let d = drops.clone();
        let r = catch_unwind(AssertUnwindSafe(|| {
            let mut k = 0;
            world
                .spawn_batch((0..10u32).map(move |i| (D(d.clone(), 100 + i), Big(i as u64))))
                .for_each(|_| {
                    k += 1;
                    assert!(k < 4);
                })
        }));
        assert!(r.is_err());
        assert_eq!(world.len(), 9);
        let mut q = world.query::<(&D, &Big)>();
        let mut vals: Vec<u32> = q.iter(&world).map(|(d, _)| d.1).collect();
        vals.sort();
        assert_eq!(vals, [0, 1, 2, 3, 4, 100, 101, 102, 103]);
    }
    // 9 live values dropped with the world; none twice, none leaked.
    assert_eq!(drops.load(Ordering::SeqCst), 9);
}

#[test]
fn batch_whole_table_in_order_with_drop_zst_align() {
    let drops = Arc::new(AtomicUsize::new(0));
    {
        let mut world = World::new();
        let d = drops.clone();
        let es: Vec<Entity> = world
            .spawn_batch((0..20u32).map(move |i| (P(i), D(d.clone(), i))))
            .collect();
        // Target table already has rows, and a floor from for_each_chunk.
        let d = drops.clone();
        let other = world.spawn((P(500), D(d, 500), Big(500), Z));
        let mut q = world.query::<&mut P>();
        q.for_each_chunk(&mut world, |ps| ps.iter_mut().for_each(|p| p.0 += 0));
        let d = drops.clone();
        world
            .insert_batch(es.iter().map(|&e| (e, (Big(e.index() as u64), Z))))
            .unwrap();
        for (i, &e) in es.iter().enumerate() {
            assert_eq!(world.get::<P>(e), Ok(&P(i as u32)));
            assert_eq!(world.get::<Big>(e), Ok(&Big(e.index() as u64)));
        }
        assert_eq!(world.get::<Big>(other), Ok(&Big(500)));
        let view = world.view::<Big>();
        for &e in &es {
            assert_eq!(view.get(e), Ok(&Big(e.index() as u64)));
        }
        // Remove in order: whole-table fast path. `other` is in the same table but not
        // first: take only the 20, which are rows 1..21 -> general path. Remove all 21.
        let mut all = vec![other];
        all.extend(&es);
        let removed = world.remove_batch::<(Big, D)>(&all).unwrap();
        assert_eq!(removed.len(), 21);
        assert_eq!(removed[0].1.1, 500);
        drop(removed);
        assert_eq!(drops.load(Ordering::SeqCst), 21);
        for &e in &all {
            assert!(world.get::<Big>(e).is_err());
            assert_eq!(world.get::<Z>(e), Ok(&Z));
        }
        // Now both tables: re-insert in table order, then remove again.
        let order: Vec<Entity> = world.query::<Entity>().iter(&world).collect();
        world
            .insert_batch(order.iter().map(|&e| (e, (D(d.clone(), 7),))))
            .unwrap();
        let removed = world.remove_batch::<(D,)>(&order).unwrap();
        assert_eq!(removed.len(), order.len());
    }
    assert_eq!(drops.load(Ordering::SeqCst), 21 + 21);
}

fn changed_filter_with_write_items_outliving_next(storage: Storage) {
    let mut world = world_with(storage);
    let es: Vec<Entity> = world.spawn_batch((0..10u32).map(|i| (P(i),))).collect();
    let mut q = world.query_filtered::<&mut P, Changed<P>>();
    q.iter_mut(&mut world).count();
    for &e in es.iter().step_by(2) {
        world.get_mut::<P>(e).unwrap().0 += 100;
    }
    // Hold every item, write each one after later rows were filtered.
    let mut items: Vec<_> = q.iter_mut(&mut world).collect();
    assert_eq!(items.len(), 5);
    for it in items.iter_mut() {
        it.0 += 1;
    }
    drop(items);
    // Interleave: write item, then next() reads the following rows' ticks.
    world.get_mut::<P>(es[3]).unwrap().0 += 1;
    world.get_mut::<P>(es[4]).unwrap().0 += 1;
    {
        let mut it = q.iter_mut(&mut world);
        let mut a = it.next().unwrap();
        a.0 += 1;
        let mut b = it.next().unwrap();
        b.0 += 1;
        a.0 += 1;
        assert!(it.next().is_none());
    }

    // get_many_mut on adjacent rows: the second locate reads row 5's tick while row 4's
    // `Mut` exists.
    world.get_mut::<P>(es[4]).unwrap().0 += 1;
    world.get_mut::<P>(es[5]).unwrap().0 += 1;
    let [mut x, mut y] = q.get_many_mut(&mut world, [es[4], es[5]]).unwrap();
    x.0 += 1;
    y.0 += 1;
    x.0 += 1;
    // single_mut keeps scanning with its item alive.
    q.iter_mut(&mut world).count();
    world.get_mut::<P>(es[9]).unwrap().0 += 1;
    let mut s = q.single_mut(&mut world).unwrap();
    s.0 += 1;
    // for_each and Or.
    let mut q2 = world.query_filtered::<&mut P, Or<(Changed<P>, Added<P>)>>();
    q2.for_each(&mut world, |mut p| p.0 += 1);
    q2.for_each(&mut world, |mut p| p.0 += 1);
}

fn par_for_each_changed_with_write(storage: Storage) {
    if cfg!(miri) && storage == Storage::Sparse {
        // Slow under Miri; the sparse path runs under Miri in tests/sparse_query.rs.
        return;
    }
    use tabula_core::BatchSize;
    let mut world = world_with(storage);
    let es: Vec<Entity> = world.spawn_batch((0..64u32).map(|i| (P(i),))).collect();
    let mut q = world.query_filtered::<&mut P, Changed<P>>();
    q.set_batch_size(BatchSize::Fixed(8));
    q.par_for_each(&mut world, |mut p| p.0 += 1);
    for &e in es.iter().step_by(3) {
        world.get_mut::<P>(e).unwrap().0 += 1;
    }
    let n = std::sync::atomic::AtomicUsize::new(0);
    q.par_for_each(&mut world, |mut p| {
        n.fetch_add(1, Ordering::Relaxed);
        p.0 += 1;
    });
    assert_eq!(n.load(Ordering::Relaxed), es.iter().step_by(3).count());
    let mut all = world.query::<&mut P>();
    all.set_batch_size(BatchSize::Fixed(8));
    all.par_for_each(&mut world, |mut p| p.0 += 1);
    let n = std::sync::atomic::AtomicUsize::new(0);
    q.par_for_each(&mut world, |_| {
        n.fetch_add(1, Ordering::Relaxed);
    });
    assert_eq!(n.load(Ordering::Relaxed), 64);
}
