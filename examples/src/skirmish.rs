//! Two squads skirmish in a wrapping 200 x 200 arena: the reactive layer at work.
//!
//! * **An observer-maintained spatial index.** Each unit's grid [`Cell`] is an immutable
//!   component: a unit that crosses into another cell gets a new `Cell` inserted. Two
//!   observers keep the [`Grid`] resource (cell → units) in step: [`index_cell`] on
//!   `OnInsert<Cell>` files the unit under its new cell, [`unindex_cell`] on
//!   `OnReplace<Cell>` takes it out of the old one — including when the unit is despawned,
//!   from whatever path. No system polls `Changed` or `RemovedComponents` for it.
//! * **A many-to-many relation.** A unit `Targets` up to [`MAX_TARGETS`] enemies at once
//!   (`Relations<Targets>`), found through the grid; [`fire`] reads each unit's targets and
//!   the number of units targeting it. When a unit dies, every pair it was in, on either
//!   side, goes with it.
//! * **Required components.** A [`Unit`] requires its [`Hp`] (full health when spawned
//!   without one) and its [`Kills`] count.
//!
//! The frame: [`movement`], then [`recell`] (new `Cell`s, by commands), [`acquire`] (new
//! pairs), [`fire`] (damage), [`reap`] (despawns), and [`reinforce`] (a new unit for the
//! squad behind, every 10 frames). Each system's commands apply at the sync points the
//! schedule places after it, where the observers run; the world (entity ids included) is the
//! same with any number of threads.

use std::collections::BTreeMap;

use tabula::prelude::*;
use tabula::schedule::ExecutorKind;
use tabula::{OnInsert, OnReplace, Relations};

use crate::rng::Rng;

/// The arena's side, in world units (it wraps around).
pub const ARENA: f32 = 200.0;
/// A grid cell's side, in world units.
pub const CELL: f32 = 20.0;
/// How far a unit shoots, in world units.
pub const RANGE: f32 = 25.0;
/// The most enemies a unit targets at once.
pub const MAX_TARGETS: usize = 2;
/// A unit's full health.
pub const FULL_HP: i32 = 30;

/// A position in the arena.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Pos(pub f32, pub f32);

/// A velocity, units per frame.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Vel(pub f32, pub f32);

/// A squad member; requires [`Hp`] and [`Kills`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Unit {
    /// Squad 0 or 1.
    pub squad: u8,
}

/// Health; the unit dies at 0.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Hp(pub i32);

impl Default for Hp {
    fn default() -> Self {
        Hp(FULL_HP)
    }
}

/// Enemies this unit finished off.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Kills(pub u32);

/// The grid cell a unit is in: immutable, so every change is an insert the observers see.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Cell(pub i32, pub i32);

impl Cell {
    /// The cell holding `pos`.
    pub fn of(pos: Pos) -> Cell {
        Cell((pos.0 / CELL) as i32, (pos.1 / CELL) as i32)
    }
}

/// The relation kind: a unit targets an enemy.
pub struct Targets;

impl tabula::Relation for Targets {}

/// The spatial index the observers keep: cell → units in it, in the order they entered.
#[derive(Default, Debug)]
pub struct Grid(pub BTreeMap<Cell, Vec<Entity>>);

impl Grid {
    /// How many units the grid holds.
    pub fn len(&self) -> usize {
        self.0.values().map(Vec::len).sum()
    }

    /// True when the grid holds no unit.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Running totals.
#[derive(Default, Debug, Clone, PartialEq)]
pub struct Stats {
    /// Frames run.
    pub frames: u64,
    /// Units that died, per squad.
    pub deaths: [u32; 2],
    /// Shots fired.
    pub shots: u64,
    /// Units spawned by reinforcement, per squad.
    pub reinforcements: [u32; 2],
}

/// The observer on `OnInsert<Cell>`: files the unit under its (new) cell.
pub fn index_cell(trigger: Trigger<OnInsert<Cell>>, cells: Query<&Cell>, mut grid: ResMut<Grid>) {
    let unit = trigger.target();
    let cell = *cells.get(unit).expect("the cell was just inserted");
    grid.0.entry(cell).or_default().push(unit);
}

/// The observer on `OnReplace<Cell>`: takes the unit out of its old cell (a move to another
/// cell, or a despawn).
pub fn unindex_cell(trigger: Trigger<OnReplace<Cell>>, cells: Query<&Cell>, mut grid: ResMut<Grid>) {
    let unit = trigger.target();
    let cell = *cells.get(unit).expect("the old cell is still there");
    let units = grid.0.get_mut(&cell).expect("every cell is indexed");
    units.retain(|&u| u != unit);
    if units.is_empty() {
        grid.0.remove(&cell);
    }
}

/// Moves every unit, wrapping around the arena.
pub fn movement(mut units: Query<(&mut Pos, &Vel)>) {
    for (mut pos, vel) in units.iter_mut() {
        pos.0 = (pos.0 + vel.0).rem_euclid(ARENA);
        pos.1 = (pos.1 + vel.1).rem_euclid(ARENA);
    }
}

/// Gives a new `Cell` to every unit that crossed into another one (the observers update the
/// grid when the commands apply).
pub fn recell(mut commands: Commands, units: Query<(Entity, &Pos, &Cell)>) {
    for (unit, &pos, &cell) in units.iter() {
        let now = Cell::of(pos);
        if now != cell {
            commands.entity(unit).insert((now,));
        }
    }
}

/// The shortest distance between two positions in the wrapping arena.
fn distance(a: Pos, b: Pos) -> f32 {
    let d = |x: f32, y: f32| {
        let d = (x - y).abs();
        d.min(ARENA - d)
    };
    d(a.0, b.0).hypot(d(a.1, b.1))
}

/// Each unit with room for more targets looks at its cell and the eight around it (through
/// the grid) and targets the nearest enemies in range it does not target yet.
pub fn acquire(
    mut commands: Commands,
    grid: Res<Grid>,
    relations: Res<Relations<Targets>>,
    units: Query<(Entity, &Unit, &Pos, &Cell)>,
) {
    let cells = (ARENA / CELL) as i32;
    for (unit, squad, &pos, cell) in units.iter() {
        let current = relations.targets(unit);
        if current.len() >= MAX_TARGETS {
            continue;
        }
        let mut candidates: Vec<(f32, Entity)> = Vec::new();
        for dx in -1..=1 {
            for dy in -1..=1 {
                let near = Cell((cell.0 + dx).rem_euclid(cells), (cell.1 + dy).rem_euclid(cells));
                for &other in grid.0.get(&near).map_or(&[][..], Vec::as_slice) {
                    let Ok((_, other_squad, &other_pos, _)) = units.get(other) else {
                        continue;
                    };
                    let d = distance(pos, other_pos);
                    if other_squad.squad != squad.squad && d <= RANGE && !current.contains(&other) {
                        candidates.push((d, other));
                    }
                }
            }
        }
        // Nearest first; ties by id, so the choice never depends on iteration order.
        candidates.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.to_bits().cmp(&b.1.to_bits())));
        for &(_, enemy) in candidates.iter().take(MAX_TARGETS - current.len()) {
            commands.entity(unit).relate::<Targets>(enemy);
        }
    }
}

/// Each unit shoots each target still in range (one damage, one more when several units
/// target the same enemy); targets out of range are dropped.
pub fn fire(
    mut commands: Commands,
    relations: Res<Relations<Targets>>,
    positions: Query<(Entity, &Pos), With<Unit>>,
    mut health: Query<&mut Hp>,
    mut stats: ResMut<Stats>,
) {
    let mut damage: BTreeMap<Entity, i32> = BTreeMap::new();
    for (unit, &pos) in positions.iter() {
        for &target in relations.targets(unit) {
            let Ok((_, &target_pos)) = positions.get(target) else {
                continue;
            };
            if distance(pos, target_pos) > RANGE {
                commands.entity(unit).unrelate::<Targets>(target);
                continue;
            }
            // Focus fire: a target of several units takes more from each.
            let focus = i32::from(relations.sources(target).len() > 1);
            *damage.entry(target).or_default() += 1 + focus;
            stats.shots += 1;
        }
    }
    for (target, amount) in damage {
        if let Ok(mut hp) = health.get_mut(target) {
            hp.0 -= amount;
        }
    }
}

/// Despawns the dead (their cells leave the grid and their pairs the relation through the
/// observers and hooks) and credits their last attackers.
pub fn reap(
    mut commands: Commands,
    relations: Res<Relations<Targets>>,
    units: Query<(Entity, &Unit, &Hp)>,
    mut kills: Query<&mut Kills>,
    mut stats: ResMut<Stats>,
) {
    for (unit, squad, hp) in units.iter() {
        if hp.0 <= 0 {
            for &attacker in relations.sources(unit) {
                if let Ok(mut k) = kills.get_mut(attacker) {
                    k.0 += 1;
                }
            }
            stats.deaths[usize::from(squad.squad)] += 1;
            commands.entity(unit).despawn();
        }
    }
}

/// The seeded generator the scenario draws from.
pub struct Dice(pub Rng);

/// Every 10 frames, a new unit for the squad with fewer (spawned without `Hp` or `Kills`:
/// the requirements add them).
pub fn reinforce(
    mut commands: Commands,
    units: Query<&Unit>,
    mut dice: ResMut<Dice>,
    mut stats: ResMut<Stats>,
) {
    stats.frames += 1;
    if !stats.frames.is_multiple_of(10) {
        return;
    }
    let mut counts = [0usize; 2];
    for unit in units.iter() {
        counts[usize::from(unit.squad)] += 1;
    }
    let squad = u8::from(counts[1] < counts[0]);
    let rng = &mut dice.0;
    let pos = Pos(rng.range(0.0, ARENA), rng.range(0.0, ARENA));
    let vel = Vel(rng.range(-1.0, 1.0), rng.range(-1.0, 1.0));
    commands.spawn((Unit { squad }, pos, vel, Cell::of(pos)));
    stats.reinforcements[usize::from(squad)] += 1;
}

/// The skirmish: its world and frame schedule.
pub struct Skirmish {
    /// The world.
    pub world: World,
    schedule: Schedule,
}

impl Skirmish {
    /// Two squads of `per_squad` units, placed from `seed`, run by `executor`.
    pub fn new(per_squad: usize, seed: u64, executor: ExecutorKind) -> Self {
        // A fixed tag: the same seed gives the same ids, whatever other worlds exist.
        let mut world = World::with_tag(1);
        world.register_component::<Cell>().immutable();
        world
            .register_component::<Unit>()
            .requires::<Hp>()
            .requires::<Kills>();
        world.register_relation::<Targets>();
        world.init_resource::<Grid>();
        world.init_resource::<Stats>();
        world.observe(index_cell);
        world.observe(unindex_cell);
        let mut rng = Rng::new(seed);
        for squad in 0..2u8 {
            // Each squad starts on its own half, heading for the other.
            let heading = if squad == 0 { 0.6 } else { -0.6 };
            for _ in 0..per_squad {
                let x = rng.range(0.0, ARENA / 2.0) + f32::from(squad) * ARENA / 2.0;
                let pos = Pos(x, rng.range(0.0, ARENA));
                let vel = Vel(heading + rng.range(-0.2, 0.2), rng.range(-0.5, 0.5));
                world.spawn((Unit { squad }, pos, vel, Cell::of(pos)));
            }
        }
        world.insert_resource(Dice(rng));
        let mut schedule = Schedule::new();
        schedule.set_executor(executor);
        schedule.add_systems((movement, recell, acquire, fire, reap, reinforce).chain());
        Self { world, schedule }
    }

    /// Runs one frame.
    pub fn step(&mut self) {
        self.schedule.run(&mut self.world);
    }

    /// The running totals.
    pub fn stats(&self) -> &Stats {
        self.world.resource::<Stats>().expect("inserted in new")
    }

    /// Units alive, per squad.
    pub fn alive(&mut self) -> [usize; 2] {
        let mut counts = [0; 2];
        for unit in self.world.query::<&Unit>().iter(&self.world) {
            counts[usize::from(unit.squad)] += 1;
        }
        counts
    }

    /// Pairs of the `Targets` relation.
    pub fn pairs(&self) -> usize {
        self.world
            .resource::<Relations<Targets>>()
            .map_or(0, Relations::len)
    }

    /// Checks what the observers and hooks promise: the grid files every unit exactly once,
    /// under its current cell; every pair joins two live units of different squads.
    ///
    /// # Panics
    /// When either does not hold.
    pub fn check(&mut self) {
        let mut expected: BTreeMap<Cell, Vec<Entity>> = BTreeMap::new();
        for (unit, &cell) in self.world.query::<(Entity, &Cell)>().iter(&self.world) {
            expected.entry(cell).or_default().push(unit);
        }
        let grid = self.world.resource::<Grid>().expect("inserted in new");
        let mut filed = grid.0.clone();
        for units in filed.values_mut() {
            units.sort_by_key(|e| e.to_bits());
        }
        for units in expected.values_mut() {
            units.sort_by_key(|e| e.to_bits());
        }
        assert_eq!(filed, expected, "the grid files every unit under its cell");
        let relations = self.world.resource::<Relations<Targets>>().expect("registered");
        for (source, target) in relations.iter() {
            let squad = |e| self.world.get::<Unit>(e).map(|u| u.squad);
            assert!(
                squad(source).is_ok() && squad(target).is_ok(),
                "a pair joins live units"
            );
            assert_ne!(squad(source), squad(target), "a pair joins enemies");
        }
    }

    /// Every unit's id and state, sorted by id: what two runs compare.
    pub fn snapshot(&mut self) -> Vec<(u64, u8, i32, u32, Cell)> {
        let mut rows: Vec<_> = self
            .world
            .query::<(Entity, &Unit, &Hp, &Kills, &Cell)>()
            .iter(&self.world)
            .map(|(e, u, hp, k, c)| (e.to_bits(), u.squad, hp.0, k.0, *c))
            .collect();
        rows.sort();
        rows
    }
}
