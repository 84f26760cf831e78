//! The one-entry bundle caches (`Bundles::last`, and the world's last move of each kind,
//! `RecentMove`) are keyed by the address of a per-type `TypeId` constant.
//! A key shared by two bundle types would follow the wrong edge and write a value into a
//! column of another type. These tests alternate bundle types of identical layout, so that a
//! merged constant (identical-code folding, `unnamed_addr` merging under LTO) would show as a
//! wrong component; run them with `cargo test --release` (and with
//! `CARGO_PROFILE_RELEASE_LTO=fat CARGO_PROFILE_RELEASE_CODEGEN_UNITS=1`).

use tabula_core::World;

#[derive(Debug, PartialEq, Clone, Copy)]
struct A(u32);
#[derive(Debug, PartialEq, Clone, Copy)]
struct B(u32);
#[derive(Debug, PartialEq, Clone, Copy)]
struct C(u32);
#[derive(Debug, PartialEq, Clone, Copy)]
struct Za;
#[derive(Debug, PartialEq, Clone, Copy)]
struct Zb;

#[inline(never)]
fn insert_a(world: &mut World, e: tabula_core::Entity, v: u32) {
    world.insert(e, (A(v),)).unwrap();
}
#[inline(never)]
fn insert_b(world: &mut World, e: tabula_core::Entity, v: u32) {
    world.insert(e, (B(v),)).unwrap();
}

#[test]
fn same_layout_bundles_follow_their_own_edges() {
    let mut world = World::new();
    let es: Vec<_> = (0..64u32).map(|i| world.spawn((C(i),))).collect();
    for round in 0..4u32 {
        for (i, &e) in es.iter().enumerate() {
            let v = round * 1000 + i as u32;
            // Alternate the two one-field bundles of identical layout on the same source
            // archetype: each lookup follows the cache of the other type's last use.
            if (i + round as usize).is_multiple_of(2) {
                insert_a(&mut world, e, v);
                insert_b(&mut world, e, v + 1);
            } else {
                insert_b(&mut world, e, v + 1);
                insert_a(&mut world, e, v);
            }
            assert_eq!(world.get::<A>(e), Ok(&A(v)));
            assert_eq!(world.get::<B>(e), Ok(&B(v + 1)));
            assert_eq!(world.get::<C>(e), Ok(&C(i as u32)));
            // Removes in alternating order, also through the cache.
            if i % 2 == 0 {
                assert_eq!(world.remove::<(A,)>(e), Ok((A(v),)));
                assert_eq!(world.remove::<(B,)>(e), Ok((B(v + 1),)));
            } else {
                assert_eq!(world.remove::<(B,)>(e), Ok((B(v + 1),)));
                assert_eq!(world.remove::<(A,)>(e), Ok((A(v),)));
            }
            assert!(!world.has::<A>(e) && !world.has::<B>(e));
            // A failed remove caches a self-edge for its type; the other type must not hit it.
            assert!(world.remove::<(A,)>(e).is_err());
            world.insert(e, (B(5),)).unwrap();
            assert_eq!(world.remove::<(B,)>(e), Ok((B(5),)));
        }
    }
    // Zero-sized bundles of identical layout, and spawns through the `Bundles` cache.
    for _ in 0..8 {
        let a = world.spawn((Za,));
        let b = world.spawn((Zb,));
        assert!(world.has::<Za>(a) && !world.has::<Zb>(a));
        assert!(world.has::<Zb>(b) && !world.has::<Za>(b));
        world.insert(a, (Zb,)).unwrap();
        assert_eq!(world.remove::<(Za,)>(a), Ok((Za,)));
        assert!(world.has::<Zb>(a) && !world.has::<Za>(a));
    }
}
