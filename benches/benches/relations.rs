//! `relations`: many-to-many relations. 10,000 entities, each `Likes` 1–8 others (drawn
//! with a seeded RNG: never itself, never one entity twice; about 45,000 pairs). Groups:
//!
//! - `relations_targets_of`: look up the targets of every entity and sum their indices;
//! - `relations_sources_of`: the same for the sources;
//! - `relations_despawn_cleanup`: despawn 100 liked entities (each also likes 1–8 others),
//!   and let the cleanup remove their pairs on both sides. Untimed before each pass, the
//!   last pass's 100 are spawned again and given back their pairs, so every pass despawns
//!   the same shape (a rebuild of the whole world per pass would take a hundred times
//!   longer than the pass, and hours under criterion).
//!
//! Entries:
//!
//! - `raw` (the baseline): two hand-written `Vec<Vec<u32>>` adjacency lists, targets and
//!   sources by entity index, kept in step by hand (a despawn removes the index from each
//!   partner's list, keeping the order, as tabula does);
//! - `tabula`: `Relations<Likes>` fetched once, then `targets(e)` / `sources(e)` per entity
//!   handle; in the despawn group, `World::despawn` (the `Related<Likes>` hook does the
//!   cleanup);
//! - `tabula_world`: `world.targets::<Likes>(e)` per entity (one resource lookup per call);
//! - `tabula_query`: a query over `(Entity, With<Related<Likes>>)`, looking each one up in
//!   `Relations<Likes>`, as a system would;
//! - `tabula_despawn_only` (despawn group): the same 100 despawns in a world of the same
//!   10,000 entities without relations: what the despawns cost without the cleanup;
//! - `tabula_noop_hook` (despawn group): the same again, each entity holding a marker with
//!   an `on_remove` hook that does nothing: what running a despawn's hooks costs.
//!
//! The setup checks that the entries agree (the same sums, the same pairs left).
//!
//! ```text
//! cargo bench -p tabula-benches --bench relations -- --warm-up-time 1 --measurement-time 3
//! TABULA_BENCH_ROUNDS=300 cargo bench -p tabula-benches --bench relations   # interleaved
//! ```

use std::collections::HashMap;
use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use tabula::{Entity, HookContext, HookWorld, QueryState, Related, Relation, Relations, With, World};

// `evict_caches` is for groups that stream more than the caches hold; these do not.
#[allow(dead_code)]
#[macro_use]
mod harness;

use harness::*;

/// Entities, each the source of 1..=MAX_TARGETS pairs.
const ENTITIES: usize = 10_000;
/// The most targets an entity likes.
const MAX_TARGETS: u64 = 8;
/// Entities despawned per pass of the cleanup group.
const VICTIMS: usize = 100;

/// The relation kind.
struct Likes;
impl Relation for Likes {}

/// Each entity's one component: its index in the setup.
#[allow(dead_code)]
struct Unit(u32);

/// A marker with a hook that does nothing, for `tabula_noop_hook`.
struct Hooked;

/// The pairs, as entity indices: `pairs[i]` lists the targets of entity `i`.
fn draw_pairs(rng: &mut Rng) -> Vec<Vec<u32>> {
    (0..ENTITIES)
        .map(|source| {
            let count = 1 + rng.next() % MAX_TARGETS;
            let mut targets = Vec::new();
            while (targets.len() as u64) < count {
                let target = (rng.next() % ENTITIES as u64) as u32;
                if target as usize != source && !targets.contains(&target) {
                    targets.push(target);
                }
            }
            targets
        })
        .collect()
}

/// 100 distinct entities that have at least one source, in a drawn order.
fn draw_victims(pairs: &[Vec<u32>], rng: &mut Rng) -> Vec<u32> {
    let mut liked = vec![false; ENTITIES];
    for targets in pairs {
        for &t in targets {
            liked[t as usize] = true;
        }
    }
    let mut victims = Vec::new();
    while victims.len() < VICTIMS {
        let v = (rng.next() % ENTITIES as u64) as u32;
        if liked[v as usize] && !victims.contains(&v) {
            victims.push(v);
        }
    }
    victims
}

/// The hand-written baseline: adjacency lists both ways.
struct Raw {
    targets: Vec<Vec<u32>>,
    sources: Vec<Vec<u32>>,
    live: Vec<bool>,
}

fn remove_from(list: &mut Vec<u32>, value: u32) {
    if let Some(index) = list.iter().position(|&v| v == value) {
        list.remove(index);
    }
}

impl Raw {
    fn new(pairs: &[Vec<u32>]) -> Self {
        let mut raw = Self {
            targets: vec![Vec::new(); ENTITIES],
            sources: vec![Vec::new(); ENTITIES],
            live: vec![true; ENTITIES],
        };
        for (source, targets) in pairs.iter().enumerate() {
            for &target in targets {
                raw.relate(source as u32, target);
            }
        }
        raw
    }

    fn relate(&mut self, source: u32, target: u32) {
        if !self.targets[source as usize].contains(&target) {
            self.targets[source as usize].push(target);
            self.sources[target as usize].push(source);
        }
    }

    fn despawn(&mut self, v: u32) {
        let mut targets = std::mem::take(&mut self.targets[v as usize]);
        for &t in &targets {
            remove_from(&mut self.sources[t as usize], v);
        }
        let mut sources = std::mem::take(&mut self.sources[v as usize]);
        for &s in &sources {
            remove_from(&mut self.targets[s as usize], v);
        }
        targets.clear();
        sources.clear();
        self.targets[v as usize] = targets;
        self.sources[v as usize] = sources;
        self.live[v as usize] = false;
    }

    fn sum_targets(&self) -> u64 {
        let mut sum = 0;
        for targets in &self.targets {
            for &t in targets {
                sum += u64::from(t);
            }
        }
        sum
    }

    fn sum_sources(&self) -> u64 {
        let mut sum = 0;
        for sources in &self.sources {
            for &s in sources {
                sum += u64::from(s);
            }
        }
        sum
    }
}

/// The tabula world: `entities[i]` is entity `i`.
struct Tabula {
    world: World,
    entities: Vec<Entity>,
    related: QueryState<Entity, With<Related<Likes>>>,
}

impl Tabula {
    fn new(pairs: &[Vec<u32>]) -> Self {
        let mut world = World::new();
        let entities: Vec<Entity> = world
            .spawn_batch((0..ENTITIES as u32).map(|i| (Unit(i),)))
            .collect();
        for (source, targets) in pairs.iter().enumerate() {
            for &target in targets {
                world
                    .relate::<Likes>(entities[source], entities[target as usize])
                    .expect("live entities");
            }
        }
        let related = world.query_filtered::<Entity, With<Related<Likes>>>();
        Self {
            world,
            entities,
            related,
        }
    }

    fn likes(&self) -> &Relations<Likes> {
        self.world
            .resource::<Relations<Likes>>()
            .expect("the kind is registered")
    }

    fn sum_targets(&self) -> u64 {
        let likes = self.likes();
        let mut sum = 0;
        for &e in &self.entities {
            for t in likes.targets(e) {
                sum += u64::from(t.index());
            }
        }
        sum
    }

    fn sum_sources(&self) -> u64 {
        let likes = self.likes();
        let mut sum = 0;
        for &e in &self.entities {
            for s in likes.sources(e) {
                sum += u64::from(s.index());
            }
        }
        sum
    }

    fn sum_targets_world(&self) -> u64 {
        let mut sum = 0;
        for &e in &self.entities {
            for t in self.world.targets::<Likes>(e) {
                sum += u64::from(t.index());
            }
        }
        sum
    }

    fn sum_sources_world(&self) -> u64 {
        let mut sum = 0;
        for &e in &self.entities {
            for s in self.world.sources::<Likes>(e) {
                sum += u64::from(s.index());
            }
        }
        sum
    }

    fn sum_targets_query(&mut self) -> u64 {
        let likes = self
            .world
            .resource::<Relations<Likes>>()
            .expect("the kind is registered");
        let mut sum = 0;
        for e in self.related.iter(&self.world) {
            for t in likes.targets(e) {
                sum += u64::from(t.index());
            }
        }
        sum
    }

    fn sum_sources_query(&mut self) -> u64 {
        let likes = self
            .world
            .resource::<Relations<Likes>>()
            .expect("the kind is registered");
        let mut sum = 0;
        for e in self.related.iter(&self.world) {
            for s in likes.sources(e) {
                sum += u64::from(s.index());
            }
        }
        sum
    }
}

/// The cleanup group's states: each entry's world, and what a pass takes away.
struct Cleanup {
    raw: Raw,
    tabula: Tabula,
    /// A world of `Unit`s only, for `tabula_despawn_only`.
    plain: Plain,
    /// A world of `(Unit, Hooked)`s, for `tabula_noop_hook`.
    hooked: Plain,
    victims: Vec<u32>,
    /// Every pair with a victim at either end, as indices, in setup order.
    victim_pairs: Vec<(u32, u32)>,
}

impl Cleanup {
    fn new(pairs: &[Vec<u32>], victims: Vec<u32>, copy: usize) -> Self {
        let (tabula, raw) = in_turn(copy, || Tabula::new(pairs), || Raw::new(pairs));
        let victim_pairs = (pairs.iter().enumerate())
            .flat_map(|(s, targets)| targets.iter().map(move |&t| (s as u32, t)))
            .filter(|(s, t)| victims.contains(s) || victims.contains(t))
            .collect();
        Self {
            raw,
            tabula,
            plain: Plain::new(false),
            hooked: Plain::new(true),
            victims,
            victim_pairs,
        }
    }

    /// Untimed: the victims back, with their pairs.
    fn restore_raw(&mut self) {
        if self.raw.live[self.victims[0] as usize] {
            return;
        }
        for &v in &self.victims {
            self.raw.live[v as usize] = true;
        }
        for &(s, t) in &self.victim_pairs {
            self.raw.relate(s, t);
        }
    }

    fn despawn_raw(&mut self) {
        for &v in &self.victims {
            self.raw.despawn(v);
        }
    }

    /// Untimed: the victims spawned again, with their pairs.
    fn restore_tabula(&mut self) {
        let t = &mut self.tabula;
        if t.world.contains(t.entities[self.victims[0] as usize]) {
            return;
        }
        for &v in &self.victims {
            t.entities[v as usize] = t.world.spawn((Unit(v),));
        }
        for &(s, target) in &self.victim_pairs {
            let (s, target) = (t.entities[s as usize], t.entities[target as usize]);
            t.world.relate::<Likes>(s, target).expect("live entities");
        }
    }

    fn despawn_tabula(&mut self) {
        for &v in &self.victims {
            let e = self.tabula.entities[v as usize];
            self.tabula.world.despawn(e).expect("a live victim");
        }
    }

    fn restore_plain(&mut self) {
        self.plain.restore(&self.victims);
    }

    fn despawn_plain(&mut self) {
        self.plain.despawn(&self.victims);
    }

    fn restore_hooked(&mut self) {
        self.hooked.restore(&self.victims);
    }

    fn despawn_hooked(&mut self) {
        self.hooked.despawn(&self.victims);
    }

    /// Both sides' pairs, as index pairs (tabula's through the current handles), sorted.
    fn pairs(&self) -> (Vec<(u32, u32)>, Vec<(u32, u32)>) {
        let t = &self.tabula;
        let indices: HashMap<Entity, u32> = (t.entities.iter().enumerate())
            .map(|(i, &e)| (e, i as u32))
            .collect();
        let index_of = |e: Entity| indices[&e];
        let mut tabula: Vec<(u32, u32)> = (t.likes().iter())
            .map(|(s, target)| (index_of(s), index_of(target)))
            .collect();
        let mut raw: Vec<(u32, u32)> = (self.raw.targets.iter().enumerate())
            .flat_map(|(s, targets)| targets.iter().map(move |&target| (s as u32, target)))
            .collect();
        tabula.sort_unstable();
        raw.sort_unstable();
        (tabula, raw)
    }
}

/// A world of the same entities without relations, with or without a hooked marker.
struct Plain {
    world: World,
    entities: Vec<Entity>,
    hooked: bool,
}

impl Plain {
    fn new(hooked: bool) -> Self {
        let mut world = World::new();
        if hooked {
            world
                .register_component::<Hooked>()
                .on_remove(|_: &mut HookWorld<'_>, _: HookContext| {});
        }
        let entities = (0..ENTITIES as u32)
            .map(|i| Self::spawn(&mut world, hooked, i))
            .collect();
        Self {
            world,
            entities,
            hooked,
        }
    }

    fn spawn(world: &mut World, hooked: bool, i: u32) -> Entity {
        if hooked {
            world.spawn((Unit(i), Hooked))
        } else {
            world.spawn((Unit(i),))
        }
    }

    fn restore(&mut self, victims: &[u32]) {
        if self.world.contains(self.entities[victims[0] as usize]) {
            return;
        }
        for &v in victims {
            self.entities[v as usize] = Self::spawn(&mut self.world, self.hooked, v);
        }
    }

    fn despawn(&mut self, victims: &[u32]) {
        for &v in victims {
            let e = self.entities[v as usize];
            self.world.despawn(e).expect("a live victim");
        }
    }
}

/// The lookup groups' state.
struct Lookups {
    raw: Raw,
    tabula: Tabula,
}

impl Rounds for Lookups {}
impl Rounds for Cleanup {}

fn relations(c: &mut Criterion) {
    let mut rng = Rng(0x5eed_1e55_0f11_e5ed);
    let pairs = draw_pairs(&mut rng);
    let victims = draw_victims(&pairs, &mut rng);
    let count: usize = pairs.iter().map(Vec::len).sum();
    println!("relations: {ENTITIES} entities, {count} pairs, {VICTIMS} despawned per pass");

    let mut lookups = placements(|copy| {
        let (tabula, raw) = in_turn(copy, || Tabula::new(&pairs), || Raw::new(&pairs));
        Lookups { raw, tabula }
    });
    // Not timed: every entry finds the same pairs.
    for state in &mut lookups {
        let targets = state.raw.sum_targets();
        let sources = state.raw.sum_sources();
        assert_eq!(state.tabula.likes().len(), count);
        assert_eq!(
            [
                state.tabula.sum_targets(),
                state.tabula.sum_targets_world(),
                state.tabula.sum_targets_query()
            ],
            [targets; 3]
        );
        assert_eq!(
            [
                state.tabula.sum_sources(),
                state.tabula.sum_sources_world(),
                state.tabula.sum_sources_query()
            ],
            [sources; 3]
        );
    }
    bench_group!(c, "relations_targets_of", &mut lookups, [
        "raw" => |s: &mut Lookups| { black_box(s.raw.sum_targets()); };
        "tabula" => |s: &mut Lookups| { black_box(s.tabula.sum_targets()); };
        "tabula_world" => |s: &mut Lookups| { black_box(s.tabula.sum_targets_world()); };
        "tabula_query" => |s: &mut Lookups| { black_box(s.tabula.sum_targets_query()); };
    ]);
    bench_group!(c, "relations_sources_of", &mut lookups, [
        "raw" => |s: &mut Lookups| { black_box(s.raw.sum_sources()); };
        "tabula" => |s: &mut Lookups| { black_box(s.tabula.sum_sources()); };
        "tabula_world" => |s: &mut Lookups| { black_box(s.tabula.sum_sources_world()); };
        "tabula_query" => |s: &mut Lookups| { black_box(s.tabula.sum_sources_query()); };
    ]);
    drop(lookups);

    let mut cleanup = placements(|copy| Cleanup::new(&pairs, victims.clone(), copy));
    // Not timed: a pass leaves both sides with the same pairs, and a restore brings them all back.
    for state in &mut cleanup {
        state.despawn_raw();
        state.despawn_tabula();
        let (tabula, raw) = state.pairs();
        assert_eq!(tabula, raw, "the same pairs are left");
        assert!(tabula.len() < count);
        state.restore_raw();
        state.restore_tabula();
        let (tabula, raw) = state.pairs();
        assert_eq!((tabula.len(), raw.len()), (count, count));
        assert_eq!(tabula, raw);
    }
    bench_group!(c, "relations_despawn_cleanup", &mut cleanup, [
        "raw" => Cleanup::despawn_raw, prepare Cleanup::restore_raw;
        "tabula" => Cleanup::despawn_tabula, prepare Cleanup::restore_tabula;
        "tabula_despawn_only" => Cleanup::despawn_plain, prepare Cleanup::restore_plain;
        "tabula_noop_hook" => Cleanup::despawn_hooked, prepare Cleanup::restore_hooked;
    ]);
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    targets = relations
}
criterion_main!(benches);
