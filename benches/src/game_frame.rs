//! `game_frame`: one frame of a small war game, as tabula systems and as a hand-written serial
//! loop over plain `Vec`s (the raw baseline), with a digest of the world for comparing runs.
//!
//! Units (Position, Velocity, Health, Team, Cooldown) and rocks (Position, Velocity) move on
//! a wrapping field; all state is integer (fixed point), so two runs compare exactly. One
//! frame is eight systems, added in this order:
//!
//! 1. `integrate`: `position += velocity` for every mover (units, rocks, bullets);
//! 2. `steer`: each unit turns toward its team's rally point (~50 flops, `par_for_each`);
//! 3. `regen`: units below full health regain a little;
//! 4. `fire`: a unit whose cooldown expires spawns a bullet aimed at another unit that fires
//!    in the same frame (through commands);
//! 5. `age`: bullets age by one frame;
//! 6. `expire`: bullets of age [`EXPIRE_AGE`] are despawned (through commands);
//! 7. `hit`: a bullet of age [`HIT_AGE`] damages its target through a command; a unit whose
//!    health reaches zero is despawned and a fresh one of its team spawned in its place;
//! 8. `census`: sums health per team and positions (read-only).
//!
//! Cooldowns last [`COOLDOWN`] frames and start spread over that period, health starts spread
//! over its range, so the game is at its steady state from the first frame: with 20,000
//! units, a frame makes ~660 spawns (bullets and replacement units), ~660 despawns and ~625
//! damage commands.

use tabula::prelude::*;

/// Bits of the field's side in fixed point: positions are in `0..1 << FIELD_BITS`.
pub const FIELD_BITS: u32 = 20;
const FIELD_MASK: i32 = (1 << FIELD_BITS) - 1;
/// Full health (fixed point: 32 steps per point).
pub const MAX_HEALTH: i32 = 100 * 32;
/// Health one hit takes.
pub const DAMAGE: i32 = 10 * 32;
/// Frames between two shots of a unit.
pub const COOLDOWN: i32 = 32;
/// A bullet's age when it hits its target.
pub const HIT_AGE: i32 = 10;
/// A bullet's age when it is despawned.
pub const EXPIRE_AGE: i32 = 20;
/// The fastest a unit moves per frame (fixed point).
const MAX_SPEED: f32 = 256.0;
/// Each team's rally point, as a fraction of the field.
const RALLY: [(f32, f32); 4] = [(0.25, 0.25), (0.75, 0.25), (0.25, 0.75), (0.75, 0.75)];

/// Where a mover is (fixed point, wrapping at the field's edges).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Position {
    /// Horizontal.
    pub x: i32,
    /// Vertical.
    pub y: i32,
}

/// How far a mover goes per frame (fixed point).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Velocity {
    /// Horizontal.
    pub x: i32,
    /// Vertical.
    pub y: i32,
}

/// A unit's health; the unit dies at zero.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Health(pub i32);

/// A unit's team, `0..4`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Team(pub u8);

/// Frames until a unit fires again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cooldown(pub i32);

/// A bullet's age in frames.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Age(pub i32);

/// The unit a bullet was fired at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shot {
    /// The target.
    pub target: Entity,
}

/// Running totals of the damage commands, kept by the commands themselves.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    /// Damage commands applied to a live unit.
    pub hits: u64,
    /// Units that died (each replaced by a fresh one).
    pub deaths: u64,
}

/// A seeded xorshift64* generator: the same world for the same seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A number in `0..n`.
    fn below(&mut self, n: u64) -> i32 {
        (self.next() % n) as i32
    }

    fn position(&mut self) -> Position {
        Position {
            x: self.below(1 << FIELD_BITS),
            y: self.below(1 << FIELD_BITS),
        }
    }

    fn velocity(&mut self) -> Velocity {
        Velocity {
            x: self.below(257) - 128,
            y: self.below(257) - 128,
        }
    }
}

/// The initial state of one game: the same for tabula and the raw baseline.
#[derive(Clone, Debug)]
pub struct Setup {
    /// Units: position, velocity, health, team, cooldown.
    pub units: Vec<(Position, Velocity, Health, Team, Cooldown)>,
    /// Rocks: position, velocity.
    pub rocks: Vec<(Position, Velocity)>,
}

impl Setup {
    /// `units` units and `rocks` rocks drawn from `seed`.
    pub fn new(units: usize, rocks: usize, seed: u64) -> Self {
        let mut rng = Rng(seed | 1);
        let units = (0..units)
            .map(|i| {
                (
                    rng.position(),
                    rng.velocity(),
                    Health(1 + rng.below(MAX_HEALTH as u64)),
                    Team((i % 4) as u8),
                    Cooldown(1 + rng.below(COOLDOWN as u64)),
                )
            })
            .collect();
        let rocks = (0..rocks).map(|_| (rng.position(), rng.velocity())).collect();
        Self { units, rocks }
    }

    /// A world holding this setup (units first, then rocks) and a [`Tally`].
    pub fn world(&self) -> World {
        let mut world = World::new();
        world.spawn_batch(self.units.iter().copied()).for_each(drop);
        world.spawn_batch(self.rocks.iter().copied()).for_each(drop);
        world.insert_resource(Tally::default());
        world
    }

    /// The raw baseline's state for this setup.
    pub fn raw(&self) -> RawGame {
        let mut raw = RawGame::default();
        for &(position, velocity, health, team, cooldown) in &self.units {
            raw.add_unit(position, velocity, health.0, team.0, cooldown.0);
        }
        raw.rocks = self.rocks.clone();
        raw
    }
}

/// The frame's systems, in their order (see the [module docs](self)).
pub fn schedule() -> Schedule {
    let mut schedule = Schedule::new();
    schedule.add_systems((integrate, steer, regen, fire, age, expire, hit, census));
    schedule
}

/// Moves `position` by `velocity`, wrapping at the field's edges.
#[inline(always)]
fn integrate_one(position: &mut Position, velocity: &Velocity) {
    position.x = (position.x + velocity.x) & FIELD_MASK;
    position.y = (position.y + velocity.y) & FIELD_MASK;
}

/// Turns a unit toward its team's rally point with a distance-dependent swirl, blends that
/// into its velocity and caps its speed: ~50 flops, a pure function of the row.
#[inline(always)]
fn steer_one(velocity: &mut Velocity, position: &Position, team: Team) {
    const TO_UNIT: f32 = 1.0 / (1 << FIELD_BITS) as f32;
    let (rx, ry) = RALLY[usize::from(team.0 & 3)];
    let dx = rx - position.x as f32 * TO_UNIT;
    let dy = ry - position.y as f32 * TO_UNIT;
    let d2 = dx * dx + dy * dy + 1e-4;
    let inv = 1.0 / d2.sqrt();
    let (mut ax, mut ay) = (dx * inv, dy * inv);
    // Rotate the heading four times by a small angle that grows with the distance (sine
    // and cosine by their Taylor polynomials).
    let s = d2 * 0.5 - d2 * d2 * d2 * (1.0 / 48.0);
    let c = 1.0 - s * s * 0.5 + s * s * s * s * (1.0 / 24.0);
    for _ in 0..4 {
        let nx = ax * c - ay * s;
        let ny = ax * s + ay * c;
        ax = nx;
        ay = ny;
    }
    let vx = velocity.x as f32 * 0.875 + ax * (MAX_SPEED * 0.25);
    let vy = velocity.y as f32 * 0.875 + ay * (MAX_SPEED * 0.25);
    let speed2 = vx * vx + vy * vy;
    let k = if speed2 > MAX_SPEED * MAX_SPEED {
        MAX_SPEED / speed2.sqrt()
    } else {
        1.0
    };
    velocity.x = (vx * k) as i32;
    velocity.y = (vy * k) as i32;
}

/// `b - a` on the wrapping field, in `-(1 << (FIELD_BITS - 1))..1 << (FIELD_BITS - 1)`.
#[inline(always)]
fn wrapped_delta(a: i32, b: i32) -> i32 {
    let shift = 32 - FIELD_BITS;
    (b - a).wrapping_shl(shift) >> shift
}

/// The velocity that takes a bullet from `from` to `to` in [`HIT_AGE`] frames.
#[inline(always)]
fn aim(from: Position, to: Position) -> Velocity {
    Velocity {
        x: wrapped_delta(from.x, to.x) / HIT_AGE,
        y: wrapped_delta(from.y, to.y) / HIT_AGE,
    }
}

/// Regains one step of health below full.
#[inline(always)]
fn regen_one(health: &mut Health) {
    if health.0 < MAX_HEALTH {
        health.0 += 1;
    }
}

/// Counts down a cooldown; true (and the cooldown restarted) when it expires.
#[inline(always)]
fn cool_down(cooldown: &mut Cooldown) -> bool {
    cooldown.0 -= 1;
    if cooldown.0 <= 0 {
        cooldown.0 = COOLDOWN;
        true
    } else {
        false
    }
}

/// The target of the `k`th of `n` units firing in a frame: the one half the list away.
#[inline(always)]
fn target_of(k: usize, n: usize) -> usize {
    (k + n / 2) % n
}

/// Where a dead unit's replacement appears: a pure function of where it died.
#[inline(always)]
fn respawn_position(died: Position) -> Position {
    Position {
        x: (died.x.wrapping_mul(5) + 12_345) & FIELD_MASK,
        y: (died.y.wrapping_mul(3) + 54_321) & FIELD_MASK,
    }
}

/// A fresh unit of `team` at `position`.
fn fresh_unit(position: Position, team: Team) -> (Position, Velocity, Health, Team, Cooldown) {
    (
        position,
        Velocity { x: 0, y: 0 },
        Health(MAX_HEALTH),
        team,
        Cooldown(COOLDOWN),
    )
}

fn integrate(mut q: Query<(&mut Position, &Velocity)>) {
    q.for_each(|(mut p, v)| integrate_one(&mut p, v));
}

fn steer(mut q: Query<(&mut Velocity, &Position, &Team)>) {
    q.par_for_each_mut(|(mut v, p, t)| steer_one(&mut v, p, *t));
}

fn regen(mut q: Query<&mut Health>) {
    q.for_each(|mut h| regen_one(&mut h));
}

fn fire(
    mut commands: Commands,
    mut q: Query<(Entity, &mut Cooldown, &Position)>,
    mut firing: Local<Vec<(Entity, Position)>>,
) {
    firing.clear();
    q.for_each(|(e, mut cooldown, p)| {
        if cool_down(&mut cooldown) {
            firing.push((e, *p));
        }
    });
    let n = firing.len();
    if n < 2 {
        return;
    }
    for (k, &(_, from)) in firing.iter().enumerate() {
        let (target, to) = firing[target_of(k, n)];
        commands.spawn((from, aim(from, to), Age(0), Shot { target }));
    }
}

fn age(mut q: Query<&mut Age>) {
    q.for_each(|mut a| a.0 += 1);
}

fn expire(mut commands: Commands, q: Query<(Entity, &Age)>) {
    for (e, a) in q.iter() {
        if a.0 >= EXPIRE_AGE {
            commands.despawn(e);
        }
    }
}

fn hit(mut commands: Commands, q: Query<(&Age, &Shot)>) {
    for (a, shot) in q.iter() {
        if a.0 == HIT_AGE {
            let target = shot.target;
            commands.add(move |world: &mut World| damage(world, target));
        }
    }
}

/// The damage command: takes [`DAMAGE`] from `target` if it still lives, and replaces it
/// with a fresh unit of its team when its health reaches zero.
fn damage(world: &mut World, target: Entity) {
    let dead = {
        let Ok(mut health) = world.get_mut::<Health>(target) else {
            return; // Died from an earlier bullet.
        };
        health.0 -= DAMAGE;
        health.0 <= 0
    };
    {
        let tally = world.resource_mut::<Tally>().expect("the world has a Tally");
        tally.hits += 1;
        tally.deaths += u64::from(dead);
    }
    if dead {
        let position = *world.get::<Position>(target).expect("a unit has a position");
        let team = *world.get::<Team>(target).expect("a unit has a team");
        world.despawn(target).expect("the unit is alive");
        world.spawn(fresh_unit(respawn_position(position), team));
    }
}

fn census(q: Query<(&Position, &Health, &Team)>, mut sums: Local<[i64; 4]>) {
    for (p, h, t) in q.iter() {
        sums[usize::from(t.0 & 3)] += i64::from(h.0) + i64::from((p.x ^ p.y) & 0xff);
    }
}

/// A hash of every entity (its index and generation) and all its game components, in query
/// order: equal digests mean equal worlds, up to the odd hash collision. The worlds' tags are
/// left out, so two worlds built alike digest alike.
pub fn digest(world: &mut World) -> u64 {
    let mut q = world.query::<(
        Entity,
        &Position,
        &Velocity,
        Option<&Health>,
        Option<&Team>,
        Option<&Cooldown>,
        Option<&Age>,
        Option<&Shot>,
    )>();
    let mut hash = 0xcbf2_9ce4_8422_2325u64;
    let mut mix = |value: u64| {
        hash = (hash ^ value).wrapping_mul(0x0000_0100_0000_01b3);
    };
    let mut count = 0;
    for (e, p, v, health, team, cooldown, age, shot) in q.iter(world) {
        count += 1;
        mix(id_bits(e));
        mix(p.x as u64);
        mix(p.y as u64);
        mix(v.x as u64);
        mix(v.y as u64);
        mix(health.map_or(u64::MAX, |h| h.0 as u64));
        mix(team.map_or(u64::MAX, |t| u64::from(t.0)));
        mix(cooldown.map_or(u64::MAX, |c| c.0 as u64));
        mix(age.map_or(u64::MAX, |a| a.0 as u64));
        mix(shot.map_or(u64::MAX, |s| id_bits(s.target)));
    }
    let tally = *world.resource::<Tally>().expect("the world has a Tally");
    mix(count);
    mix(tally.hits);
    mix(tally.deaths);
    hash
}

/// An entity's index and generation as one number, without its world's tag.
fn id_bits(e: Entity) -> u64 {
    u64::from(e.index()) | (u64::from(e.generation()) << 32)
}

/// How many live bullets a world holds.
pub fn bullets(world: &mut World) -> usize {
    world.query::<&Shot>().iter(world).count()
}

// ---------------------------------------------------------------------------------------
// The raw baseline

/// A generational handle to a raw unit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Handle {
    index: u32,
    generation: u32,
}

/// Where a handle's unit is in [`RawGame::units`], and the handle's current generation.
#[derive(Clone, Copy, Debug, Default)]
struct Slot {
    generation: u32,
    row: u32,
}

#[derive(Clone, Copy, Debug)]
struct RawUnit {
    handle: Handle,
    position: Position,
    velocity: Velocity,
    health: i32,
    team: u8,
    cooldown: i32,
}

#[derive(Clone, Copy, Debug)]
struct RawBullet {
    position: Position,
    velocity: Velocity,
    age: i32,
    target: Handle,
}

/// What the raw frames did, summed over frames.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RawCounts {
    /// Frames run.
    pub frames: u64,
    /// Entities created (bullets and replacement units).
    pub spawns: u64,
    /// Entities removed (expired bullets and dead units).
    pub despawns: u64,
    /// Damage applications recorded (whether or not the target still lived).
    pub damage: u64,
}

/// The game written by hand over plain `Vec`s, run serially: units and bullets swap-removed,
/// units behind generational handles so that bullets can aim at them.
#[derive(Clone, Debug, Default)]
pub struct RawGame {
    units: Vec<RawUnit>,
    slots: Vec<Slot>,
    free: Vec<u32>,
    rocks: Vec<(Position, Velocity)>,
    bullets: Vec<RawBullet>,
    firing: Vec<(Handle, Position)>,
    new_bullets: Vec<RawBullet>,
    damage: Vec<Handle>,
    census: [i64; 4],
    /// What the frames did so far.
    pub counts: RawCounts,
}

impl RawGame {
    fn add_unit(&mut self, position: Position, velocity: Velocity, health: i32, team: u8, cooldown: i32) {
        let row = self.units.len() as u32;
        let index = match self.free.pop() {
            Some(index) => {
                self.slots[index as usize].row = row;
                index
            }
            None => {
                self.slots.push(Slot { generation: 0, row });
                (self.slots.len() - 1) as u32
            }
        };
        let handle = Handle {
            index,
            generation: self.slots[index as usize].generation,
        };
        self.units.push(RawUnit {
            handle,
            position,
            velocity,
            health,
            team,
            cooldown,
        });
    }

    /// The row of the unit behind `handle`, if it lives.
    fn row(&self, handle: Handle) -> Option<usize> {
        let slot = self.slots[handle.index as usize];
        (slot.generation == handle.generation).then_some(slot.row as usize)
    }

    fn remove_unit(&mut self, row: usize) -> RawUnit {
        let unit = self.units.swap_remove(row);
        if let Some(moved) = self.units.get(row) {
            self.slots[moved.handle.index as usize].row = row as u32;
        }
        let slot = &mut self.slots[unit.handle.index as usize];
        slot.generation += 1;
        self.free.push(unit.handle.index);
        unit
    }

    /// One frame: the same eight steps as the systems, commands applied at the end.
    pub fn frame(&mut self) {
        self.frame_with(false);
    }

    /// [`frame`](Self::frame) with `steer` spread over the current rayon pool
    /// (`par_iter_mut`), the one step the tabula frame runs with `par_for_each`: the
    /// hand-written counterpart of that parallelism, for the speedup it reaches on its own.
    pub fn frame_par(&mut self) {
        self.frame_with(true);
    }

    fn frame_with(&mut self, parallel_steer: bool) {
        // integrate
        for u in &mut self.units {
            integrate_one(&mut u.position, &u.velocity);
        }
        for (p, v) in &mut self.rocks {
            integrate_one(p, v);
        }
        for b in &mut self.bullets {
            integrate_one(&mut b.position, &b.velocity);
        }
        // steer
        if parallel_steer {
            use rayon::prelude::*;
            self.units
                .par_iter_mut()
                .for_each(|u| steer_one(&mut u.velocity, &u.position, Team(u.team)));
        } else {
            for u in &mut self.units {
                steer_one(&mut u.velocity, &u.position, Team(u.team));
            }
        }
        // regen
        for u in &mut self.units {
            let mut health = Health(u.health);
            regen_one(&mut health);
            u.health = health.0;
        }
        // fire
        self.firing.clear();
        for u in &mut self.units {
            let mut cooldown = Cooldown(u.cooldown);
            if cool_down(&mut cooldown) {
                self.firing.push((u.handle, u.position));
            }
            u.cooldown = cooldown.0;
        }
        self.new_bullets.clear();
        let n = self.firing.len();
        if n >= 2 {
            for (k, &(_, from)) in self.firing.iter().enumerate() {
                let (target, to) = self.firing[target_of(k, n)];
                self.new_bullets.push(RawBullet {
                    position: from,
                    velocity: aim(from, to),
                    age: 0,
                    target,
                });
            }
        }
        // age, hit
        self.damage.clear();
        for b in &mut self.bullets {
            b.age += 1;
            if b.age == HIT_AGE {
                self.damage.push(b.target);
            }
        }
        // census
        for u in &self.units {
            self.census[usize::from(u.team & 3)] +=
                i64::from(u.health) + i64::from((u.position.x ^ u.position.y) & 0xff);
        }
        std::hint::black_box(&self.census);
        // expire (applied)
        let before = self.bullets.len();
        let mut i = 0;
        while i < self.bullets.len() {
            if self.bullets[i].age >= EXPIRE_AGE {
                self.bullets.swap_remove(i);
            } else {
                i += 1;
            }
        }
        self.counts.despawns += (before - self.bullets.len()) as u64;
        // fire (applied)
        self.counts.spawns += self.new_bullets.len() as u64;
        self.bullets.extend_from_slice(&self.new_bullets);
        // hit (applied)
        self.counts.damage += self.damage.len() as u64;
        for k in 0..self.damage.len() {
            let Some(row) = self.row(self.damage[k]) else {
                continue;
            };
            self.units[row].health -= DAMAGE;
            if self.units[row].health <= 0 {
                let dead = self.remove_unit(row);
                let (position, velocity, health, team, cooldown) =
                    fresh_unit(respawn_position(dead.position), Team(dead.team));
                self.add_unit(position, velocity, health.0, team.0, cooldown.0);
                self.counts.spawns += 1;
                self.counts.despawns += 1;
            }
        }
        self.counts.frames += 1;
    }

    /// Live units.
    pub fn units(&self) -> usize {
        self.units.len()
    }

    /// Live bullets.
    pub fn bullets(&self) -> usize {
        self.bullets.len()
    }
}
