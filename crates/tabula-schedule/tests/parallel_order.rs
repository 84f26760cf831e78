//! `ParallelCommands` scopes apply in the order a fully serial run would make them — every
//! `par_for_each` taken as a `for_each` in row order, nested passes included — whatever the
//! thread count: the worlds left by one thread and by four are the same, ids, values and row
//! order included.
//!
//! The systems run passes whose closures record scopes before and after a nested pass over
//! another query, whose own closure records scopes too, beside serial scopes before and after
//! the passes; several such systems run at once under the parallel executor, so a thread
//! waiting inside one system's nested pass may pick up another system's body.

use std::sync::Mutex;

use tabula_core::{BatchSize, Entity, QueryState, UnsafeWorldCell, World};
use tabula_schedule::RunTicks;
use tabula_schedule::prelude::*;

/// A component family: `V<0>` .. `V<3>` are four distinct types.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct V<const I: usize>(u32);

/// Inserted, and inserted again over an older value, by the passes: the value left is the
/// one applied last.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Mark(u32);

/// Where a spawned entity came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct From(u32);

/// A small deterministic generator (SplitMix64).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn batch_size(&mut self, small: u64) -> BatchSize {
        match self.below(3) {
            0 => BatchSize::Automatic,
            _ => BatchSize::Fixed(1 + self.below(small) as usize),
        }
    }
}

/// Mixes a row's value with a system's salt.
fn mix(value: u32, salt: u32) -> u32 {
    let z = (u64::from(value) << 32 | u64::from(salt)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    (z >> 35) as u32
}

/// The setup of one nesting system, number `K`: an outer pass over `V<I>` whose closure
/// sometimes runs an inner pass over `V<J>`. The query states are kept here, rather than as
/// `Query` parameters, to set their batch sizes and to run the inner pass from the outer
/// closure (a `Query` runs passes through `&mut self`).
struct Nest<const K: usize, const I: usize, const J: usize> {
    outer: Mutex<QueryState<(Entity, &'static V<I>)>>,
    inner: Mutex<QueryState<(Entity, &'static V<J>)>>,
    salt: u32,
    /// One outer row in about this many runs the inner pass.
    nest: u32,
}

impl<const K: usize, const I: usize, const J: usize> Nest<K, I, J> {
    fn install(world: &mut World, rng: &mut Rng) {
        let mut outer = QueryState::new(world);
        outer.set_batch_size(rng.batch_size(16));
        let mut inner = QueryState::new(world);
        inner.set_batch_size(rng.batch_size(40));
        world.insert_resource(Self {
            outer: Mutex::new(outer),
            inner: Mutex::new(inner),
            salt: rng.next() as u32,
            nest: 4 + rng.below(10) as u32,
        });
    }
}

/// Serial scopes around a pass over `V<I>` whose closure records scopes before and after an
/// inner pass over `V<J>` (on some rows), the inner closure spawning and inserting.
fn nested<const K: usize, const I: usize, const J: usize>(
    world: &World,
    commands: ParallelCommands,
    setup: Res<Nest<K, I, J>>,
) {
    let mut outer = setup.outer.lock().unwrap();
    let mut inner = setup.inner.lock().unwrap();
    outer.update_archetypes(world);
    inner.update_archetypes(world);
    let (outer, inner) = (&*outer, &*inner);
    let (salt, nest) = (setup.salt, setup.nest);
    let cell = UnsafeWorldCell::new_readonly(world);
    let tick = world.change_tick();
    let ticks = RunTicks {
        last_run: tick,
        this_run: tick,
    };
    let commands = &commands;
    commands.command_scope(|c| c.spawn((V::<J>(salt % 1000), Mark(K as u32))));
    let row = |(entity, v): (Entity, &V<I>)| {
        let h = mix(v.0, salt);
        if h.is_multiple_of(3) {
            commands.command_scope(|c| c.insert(entity, (Mark(h % 1000),)));
        }
        if h % nest == 1 {
            commands.command_scope(|c| c.spawn((V::<I>(h % 997), From(v.0))));
            let inner_row = |(other, w): (Entity, &V<J>)| {
                let g = mix(w.0 ^ v.0.rotate_left(11), salt);
                match g % 48 {
                    0 => commands.command_scope(|c| c.spawn((V::<J>((g >> 8) % 1000), From(w.0)))),
                    1..=3 => commands.command_scope(|c| c.insert(other, (Mark(v.0 + w.0),))),
                    _ => {}
                }
            };
            // SAFETY: both queries only read, and the system reads the whole world (`&World`),
            // so no one writes it meanwhile; the states are this world's and up to date.
            unsafe { inner.par_for_each_unchecked(cell, ticks, inner_row) };
            commands.command_scope(|c| c.insert(entity, (From(h % 100),)));
        }
    };
    // SAFETY: as for the inner pass.
    unsafe { outer.par_for_each_unchecked(cell, ticks, row) };
    commands.command_scope(|c| c.spawn((Mark(salt % 1000 + 1),)));
}

/// A pass through a `Query` parameter (automatic batches) with serial scopes around it, the
/// last one recording a closure.
fn flat<const I: usize>(q: Query<(Entity, &V<I>)>, commands: ParallelCommands) {
    commands.command_scope(|c| c.spawn((V::<I>(7),)));
    q.par_for_each(|(entity, v)| match v.0 % 11 {
        0 => commands.command_scope(|c| c.spawn((V::<I>((v.0 * 3 + 1) % 1000), From(v.0)))),
        5 => commands.command_scope(|c| c.insert(entity, (Mark(v.0 / 2),))),
        _ => {}
    });
    commands.command_scope(|c| {
        c.add(|world: &mut World| {
            world.spawn((Mark(999),));
        })
    });
}

type Palette = fn(&mut Schedule, &mut World, &mut Rng);

/// The systems a schedule is drawn from, each installing what it needs into the world.
const PALETTE: [Palette; 7] = [
    |s, w, r| {
        Nest::<0, 0, 1>::install(w, r);
        s.add_systems(nested::<0, 0, 1>);
    },
    |s, w, r| {
        Nest::<1, 1, 2>::install(w, r);
        s.add_systems(nested::<1, 1, 2>);
    },
    |s, w, r| {
        Nest::<2, 2, 0>::install(w, r);
        s.add_systems(nested::<2, 2, 0>);
    },
    |s, w, r| {
        Nest::<3, 3, 3>::install(w, r);
        s.add_systems(nested::<3, 3, 3>);
    },
    |s, w, r| {
        Nest::<4, 0, 3>::install(w, r);
        s.add_systems(nested::<4, 0, 3>);
    },
    |s, _, _| {
        s.add_systems(flat::<1>);
    },
    |s, _, _| {
        s.add_systems(flat::<2>);
    },
];

/// Everything observable about a world, in the order a query visits its rows.
type Snapshot = Vec<(u64, [Option<u32>; 4], Option<u32>, Option<u32>)>;

/// An entity's index and generation: what two worlds built alike share (their tags differ).
fn id(e: Entity) -> u64 {
    u64::from(e.index()) | (u64::from(e.generation()) << 32)
}

fn snapshot(world: &mut World) -> Snapshot {
    let mut q = world.query::<(
        Entity,
        Option<&V<0>>,
        Option<&V<1>>,
        Option<&V<2>>,
        Option<&V<3>>,
        Option<&Mark>,
        Option<&From>,
    )>();
    q.iter(world)
        .map(|(e, a, b, c, d, mark, from)| {
            (
                id(e),
                [a.map(|v| v.0), b.map(|v| v.0), c.map(|v| v.0), d.map(|v| v.0)],
                mark.map(|m| m.0),
                from.map(|f| f.0),
            )
        })
        .collect()
}

/// Builds world and schedule number `seed` and runs the schedule `frames` times inside a
/// rayon pool of `threads` threads.
fn run(seed: u64, threads: usize, frames: usize) -> Snapshot {
    let mut rng = Rng(seed);
    let mut world = World::new();
    let rows = 150 + rng.below(250) as u32;
    for i in 0..rows {
        match i % 6 {
            0 => world.spawn((V::<0>(i),)),
            1 => world.spawn((V::<1>(i), V::<0>(i + 1))),
            2 => world.spawn((V::<2>(i),)),
            3 => world.spawn((V::<3>(i), V::<2>(i * 3 % 1000))),
            4 => world.spawn((V::<1>(i), Mark(i))),
            _ => world.spawn((V::<3>(i), V::<0>(i / 2), V::<1>(i % 7))),
        };
    }
    let mut schedule = Schedule::new();
    let count = 2 + rng.below(4);
    let mut picked = [false; PALETTE.len()];
    for _ in 0..count {
        let pick = rng.below(PALETTE.len() as u64) as usize;
        if !std::mem::replace(&mut picked[pick], true) {
            PALETTE[pick](&mut schedule, &mut world, &mut rng);
        }
    }
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap();
    pool.install(|| {
        for _ in 0..frames {
            schedule.run(&mut world);
            assert!(schedule.command_errors().is_empty(), "no command fails");
        }
    });
    snapshot(&mut world)
}

#[test]
fn nested_parallel_passes_apply_scopes_in_serial_order_with_any_thread_count() {
    let mut recorded = 0;
    for seed in 0..12 {
        let one = run(seed, 1, 3);
        let four = run(seed, 4, 3);
        assert!(
            one == four,
            "schedule {seed}: one thread and four threads differ ({} and {} entities)",
            one.len(),
            four.len()
        );
        recorded += usize::from(one.iter().any(|row| row.3.is_some()));
    }
    assert!(
        recorded > 6,
        "most schedules recorded from their passes: {recorded} of 12"
    );
}
