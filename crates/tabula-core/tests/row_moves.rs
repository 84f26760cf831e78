//! One-entity row moves (`Table::move_row`'s inline copies, `move_rest`, the
//! changed floor) for every inline value size, sizes without an inline copy, over-aligned and
//! zero-sized types, and types with `Drop`, each checked against a model of values and
//! `Changed` ticks. Run under Miri for the memory side (uninitialised reads, double drops,
//! leaks, misaligned accesses).

use std::collections::{HashMap, HashSet};

use tabula_core::{Changed, Entity, QueryState, World};

mod common;
use common::Rng;

/// A component whose value can be made from a number and checked.
trait Val: tabula_core::Component + PartialEq + std::fmt::Debug {
    fn make(v: u32) -> Self;
}

macro_rules! bytes {
    ($name:ident, $n:expr, $align:literal) => {
        #[derive(Debug, PartialEq)]
        #[repr(C, align($align))]
        struct $name([u8; $n]);
        impl Val for $name {
            fn make(v: u32) -> Self {
                let mut a = [0u8; $n];
                for (i, b) in a.iter_mut().enumerate() {
                    *b = (v as usize).wrapping_mul(31).wrapping_add(i) as u8;
                }
                Self(a)
            }
        }
    };
}

// Inline sizes (size = `$n` rounded up to the alignment).
bytes!(S1, 1, 1);
bytes!(S2, 2, 2);
bytes!(S4, 4, 4);
bytes!(S8, 8, 8);
bytes!(S12, 12, 4);
bytes!(S16A16, 16, 16);
bytes!(S20, 20, 4);
bytes!(S24, 24, 8);
bytes!(S28, 28, 4);
bytes!(S32A32, 32, 32);
bytes!(S36, 36, 4);
bytes!(S40, 40, 8);
bytes!(S48A16, 48, 16);
bytes!(S64A64, 64, 64);
// 33 bytes of data, padded to an inline size of 64 by the alignment (padding moves as
// uninitialised bytes).
bytes!(S33A64, 33, 64);
// Over-aligned, size a multiple of an inline size's but no inline copy of its own.
bytes!(S128A64, 128, 64);
// Sizes without an inline copy.
bytes!(S3, 3, 1);
bytes!(S6, 6, 2);
bytes!(S56, 56, 8);
bytes!(S72, 72, 8);
// 16 bytes at alignment 8 (inline size 16, alignment below the size class).
bytes!(S16A8, 16, 8);

/// Zero-sized, over-aligned.
#[derive(Debug, PartialEq)]
#[repr(align(64))]
struct Zst64;
impl Val for Zst64 {
    fn make(_: u32) -> Self {
        Zst64
    }
}

/// Heap-owning values of inline sizes (16, 24, 8): a double drop or a leak shows under Miri.
#[derive(Debug, PartialEq)]
struct Boxed(Box<[u32]>);
impl Val for Boxed {
    fn make(v: u32) -> Self {
        Boxed(vec![v, v ^ 0xFFFF].into_boxed_slice())
    }
}
#[derive(Debug, PartialEq)]
struct Owned(String);
impl Val for Owned {
    fn make(v: u32) -> Self {
        Owned(format!("value {v}"))
    }
}
#[derive(Debug, PartialEq)]
struct OneBox(Box<u64>);
impl Val for OneBox {
    fn make(v: u32) -> Self {
        OneBox(Box::new(u64::from(v) << 7))
    }
}
/// A heap-owning value without an inline size (32 + 8 = 40 is inline; 48 + 8 = 56 is not).
#[derive(Debug, PartialEq)]
struct OwnedWide(String, String, u64);
impl Val for OwnedWide {
    fn make(v: u32) -> Self {
        OwnedWide(format!("a{v}"), format!("b{v}"), u64::from(v))
    }
}

/// Extra columns around `T` so that the move loop meets `T` before and after columns of
/// other kinds (inline, general, zero-sized), and enters `move_rest` at different places.
#[derive(Debug, PartialEq, Clone, Copy)]
struct M4(u32);
#[derive(Debug, PartialEq, Clone, Copy)]
struct G3([u8; 3]);
#[derive(Debug, PartialEq, Clone, Copy)]
struct Tag;

/// How the model's map hashes entities: std's SipHash natively; under Miri a multiply-rotate
/// of the entity's two halves, which took a third of a second off each sequence there (the
/// model looks up every live entity after every step).
#[cfg(not(miri))]
type Hasher = std::collections::hash_map::RandomState;
#[cfg(miri)]
type Hasher = std::hash::BuildHasherDefault<MulRotate>;

#[cfg(miri)]
#[derive(Default)]
struct MulRotate(u64);

#[cfg(miri)]
impl std::hash::Hasher for MulRotate {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }

    fn write_u32(&mut self, n: u32) {
        self.write_u64(u64::from(n));
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

fn run<T: Val>(seed: u64, steps: usize) {
    let mut rng = Rng(seed);
    let mut world = World::new();
    let mut seq: u64 = 1;
    let mut alive: Vec<Entity> = Vec::new();
    // The value number of every entity's `T` and when it last changed (operation numbers).
    let mut values: HashMap<Entity, (u32, u64), Hasher> = HashMap::default();
    let mut next_value = 1u32;
    let mut observer: QueryState<Entity, Changed<T>> = world.query_filtered::<Entity, Changed<T>>();
    let mut last_poll: u64 = 0;
    let mut writer = world.query::<(Entity, &mut T)>();
    let mut writer_m4 = world.query::<(Entity, &mut T, &M4)>();

    for _ in 0..steps {
        seq += 1;
        let pick =
            |rng: &mut Rng, alive: &Vec<Entity>| (!alive.is_empty()).then(|| alive[rng.below(alive.len())]);
        match rng.below(14) {
            0 | 1 => {
                let v = next_value;
                next_value += 1;
                let e = match rng.below(5) {
                    0 => world.spawn((T::make(v),)),
                    1 => world.spawn((M4(v), T::make(v))),
                    2 => world.spawn((T::make(v), G3([v as u8; 3]))),
                    3 => world.spawn((G3([1; 3]), Tag, T::make(v), M4(v))),
                    _ => world.spawn((M4(v),)),
                };
                if world.has::<T>(e) {
                    values.insert(e, (v, seq));
                }
                alive.push(e);
            }
            2 => {
                if let Some(e) = pick(&mut rng, &alive) {
                    world.despawn(e).unwrap();
                    alive.retain(|&x| x != e);
                    values.remove(&e);
                }
            }
            3 => {
                if let Some(e) = pick(&mut rng, &alive) {
                    if world.has::<M4>(e) {
                        world.remove_one::<M4>(e).unwrap();
                    } else {
                        world.insert_one(e, M4(7)).unwrap();
                    }
                }
            }
            4 => {
                if let Some(e) = pick(&mut rng, &alive) {
                    if world.has::<G3>(e) {
                        world.remove::<(G3,)>(e).unwrap();
                    } else {
                        world.insert(e, (G3([2; 3]), Tag)).unwrap_or(());
                    }
                }
            }
            5 => {
                if let Some(e) = pick(&mut rng, &alive) {
                    if world.has::<Tag>(e) {
                        world.remove_one::<Tag>(e).unwrap();
                    } else {
                        world.insert_one(e, Tag).unwrap();
                    }
                }
            }
            6 => {
                // Take T out (its column is unmapped in the move) or put a new one in.
                if let Some(e) = pick(&mut rng, &alive) {
                    if let Some(&(v, _)) = values.get(&e) {
                        let t = world.remove_one::<T>(e).unwrap();
                        assert_eq!(t, T::make(v));
                        values.remove(&e);
                    } else {
                        let v = next_value;
                        next_value += 1;
                        world.insert_one(e, T::make(v)).unwrap();
                        values.insert(e, (v, seq));
                    }
                }
            }
            7 => {
                // Replace in place.
                if let Some(e) = pick(&mut rng, &alive)
                    && values.contains_key(&e)
                {
                    let v = next_value;
                    next_value += 1;
                    world.insert_one(e, T::make(v)).unwrap();
                    values.insert(e, (v, seq));
                }
            }
            8 | 9 => {
                // Every row written: the pass records a changed floor.
                let mut written = Vec::new();
                writer.for_each(&mut world, |(e, mut t)| {
                    let v = next_value;
                    next_value += 1;
                    *t = T::make(v);
                    written.push((e, v));
                });
                for (e, v) in written {
                    values.insert(e, (v, seq));
                }
            }
            10 => {
                // Only the rows with M4: a floor on those archetypes only.
                let mut written = Vec::new();
                writer_m4.for_each(&mut world, |(e, mut t, _)| {
                    let v = next_value;
                    next_value += 1;
                    *t = T::make(v);
                    written.push((e, v));
                });
                for (e, v) in written {
                    values.insert(e, (v, seq));
                }
            }
            11 => {
                if let Some(e) = pick(&mut rng, &alive)
                    && values.contains_key(&e)
                {
                    let v = next_value;
                    next_value += 1;
                    *world.get_mut::<T>(e).unwrap() = T::make(v);
                    values.insert(e, (v, seq));
                }
            }
            _ => {
                let mut seen: Vec<Entity> = observer.iter(&world).collect();
                seen.sort();
                let mut expected: Vec<Entity> = values
                    .iter()
                    .filter(|&(_, &(_, at))| at > last_poll)
                    .map(|(&e, _)| e)
                    .collect();
                expected.sort();
                assert_eq!(
                    seen,
                    expected,
                    "Changed<{}> at step {seq}",
                    std::any::type_name::<T>()
                );
                last_poll = seq;
            }
        }
        // Every value where the model has it.
        for &e in &alive {
            match values.get(&e) {
                Some(&(v, _)) => assert_eq!(world.get::<T>(e), Ok(&T::make(v))),
                None => assert!(!world.has::<T>(e)),
            }
        }
    }
}

/// Steps per sequence, and the sequences' seeds: under Miri, one short sequence per type
/// (about a minute for all of them), which still moves every kind of row; under the
/// sanitizers (`--cfg tabula_sanitizer`), which look for memory errors every kind of move
/// meets, a third of the steps.
const STEPS: usize = common::by_checker(30, 500, 1500);
const SEEDS: &[u64] = if cfg!(miri) {
    &[3]
} else {
    &[3, 0x9E37_79B9_7F4A_7C15, 12345]
};

macro_rules! model_tests {
    ($($test:ident: $ty:ty,)*) => {$(
        #[test]
        fn $test() {
            for &seed in SEEDS {
                run::<$ty>(seed, STEPS);
            }
        }
    )*};
}

model_tests! {
    moves_size1: S1,
    moves_size2: S2,
    moves_size4: S4,
    moves_size8: S8,
    moves_size12: S12,
    moves_size16_align16: S16A16,
    moves_size16_align8: S16A8,
    moves_size20: S20,
    moves_size24: S24,
    moves_size28: S28,
    moves_size32_align32: S32A32,
    moves_size36: S36,
    moves_size40: S40,
    moves_size48_align16: S48A16,
    moves_size64_align64: S64A64,
    moves_size64_padded: S33A64,
    moves_size128_align64: S128A64,
    moves_size3: S3,
    moves_size6: S6,
    moves_size56: S56,
    moves_size72: S72,
    moves_zst_align64: Zst64,
    moves_boxed_slice: Boxed,
    moves_string: Owned,
    moves_box: OneBox,
    moves_owned_wide: OwnedWide,
}

/// The same for the row-is-last case, deterministically: the moved entity is always the
/// table's last row, then always its first.
#[test]
fn moves_last_and_first_row() {
    let mut world = World::new();
    let es: Vec<Entity> = (0..6u32)
        .map(|i| world.spawn((S24::make(i), OneBox::make(i), M4(i))))
        .collect();
    // Last row first.
    for (i, &e) in es.iter().enumerate().rev() {
        world.insert_one(e, Tag).unwrap();
        assert_eq!(world.get::<S24>(e), Ok(&S24::make(i as u32)));
    }
    // Then the first row each time (the last fills the hole).
    for (i, &e) in es.iter().enumerate() {
        world.remove_one::<Tag>(e).unwrap();
        assert_eq!(world.get::<OneBox>(e), Ok(&OneBox::make(i as u32)));
    }
    for (i, &e) in es.iter().enumerate() {
        assert_eq!(world.get::<S24>(e), Ok(&S24::make(i as u32)));
        assert_eq!(world.get::<M4>(e), Ok(&M4(i as u32)));
    }
    let seen: HashSet<Entity> = world.query::<Entity>().iter(&world).collect();
    assert_eq!(seen.len(), 6);
}
