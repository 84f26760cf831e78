//! Particles: a few hundred thousand short-lived entities, created and destroyed every frame.
//!
//! What it exercises:
//!
//! * **Churn through `Commands`.** [`emit`] spawns particles from every [`Emitter`] and
//!   [`expire`] despawns the ones whose [`Lifetime`] ran out. Both only *record* commands;
//!   the schedule applies them at the end of the frame, so no system ever sees a half-built
//!   particle.
//! * **Provably disjoint systems run at once.** [`gravity`] writes the [`Velocity`] of
//!   [`Heavy`] particles and [`drag`] the `Velocity` of all others. The filters `With<Heavy>`
//!   and `Without<Heavy>` prove that no entity is touched by both, so the scheduler puts no
//!   edge between them (the test checks the DOT graph) and they run side by side.
//! * **`par_for_each` in the heaviest system.** [`integrate`] moves every particle, bounces it
//!   off the floor, ages it and fades its colour, spread over rayon's threads.
//!
//! The frame's graph: `emit`, `expire`, `gravity` and `drag` side by side (the two command
//! recorders share no data, and each reserves ids in its own lane), a sync point applying
//! `expire`'s despawns, then `integrate`, then [`census`].
//!
//! Emission is tuned so that the number of particles stays near the initial count: each
//! frame the emitters together spawn about as many particles as a frame's worth of the
//! population expires.

use tabula::prelude::*;
use tabula::schedule::ExecutorKind;
use tabula::{With, Without};

use crate::rng::Rng;

/// Fixed time step, seconds.
pub const DT: f32 = 1.0 / 60.0;
/// The shortest life of an emitted particle, seconds.
pub const MIN_LIFE: f32 = 1.0;
/// The longest life of an emitted particle, seconds.
pub const MAX_LIFE: f32 = 4.0;
/// Width of the field; emitters stand along the floor.
pub const WIDTH: f32 = 1000.0;

/// Where a particle is.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Position {
    /// Horizontal.
    pub x: f32,
    /// Vertical, up; the floor is at 0.
    pub y: f32,
}

/// How fast a particle moves, units per second.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Velocity {
    /// Horizontal.
    pub x: f32,
    /// Vertical, up.
    pub y: f32,
}

/// How long a particle has left.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Lifetime {
    /// Seconds left; the particle is despawned once this is at or below zero.
    pub remaining: f32,
    /// Seconds it lived in all, for the fade.
    pub total: f32,
}

/// A particle's colour, fading from hot white-yellow to transparent red.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Color {
    /// Red, 0..1.
    pub r: f32,
    /// Green, 0..1.
    pub g: f32,
    /// Blue, 0..1.
    pub b: f32,
    /// Opacity, 0..1.
    pub a: f32,
}

/// Marks a heavy particle (a spark): pulled by gravity, immune to drag.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Heavy;

/// A source of particles.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Emitter {
    /// Where particles appear.
    pub position: Position,
    /// Particles per frame.
    pub rate: u32,
    /// Direction of the spray, radians from the +x axis; it sweeps back and forth.
    pub angle: f32,
    /// How fast the spray sweeps, radians per second.
    pub sweep: f32,
    /// Share of particles that are [`Heavy`], 0..1.
    pub heavy_share: f32,
    /// Particles spawned so far.
    pub emitted: u64,
}

/// The fixed frame clock.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Time {
    /// Seconds per frame.
    pub dt: f32,
    /// Frames simulated.
    pub frame: u64,
}

/// The forces.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Physics {
    /// Downward acceleration of heavy particles, units per second squared.
    pub gravity: f32,
    /// Fraction of velocity light particles lose per second.
    pub drag: f32,
    /// Upward drift of light particles (hot air), units per second squared.
    pub buoyancy: f32,
    /// Fraction of vertical speed kept when bouncing off the floor.
    pub bounce: f32,
}

/// Particles despawned so far, counted by [`expire`].
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Expired(pub u64);

/// What [`census`] counted at the end of the last frame.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Census {
    /// Live particles.
    pub alive: usize,
    /// Live heavy particles.
    pub heavy: usize,
}

/// How big a simulation to build.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Config {
    /// Particles at the start; emission keeps the population near this.
    pub particles: usize,
    /// How many emitters.
    pub emitters: usize,
    /// Seed of the random generator.
    pub seed: u64,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            particles: 200_000,
            emitters: 8,
            seed: 1,
        }
    }
}

/// One particle's state, bit-exact, for comparing two runs: its entity's index and
/// generation (two worlds have different [tags](World::tag), so whole ids never match across
/// worlds), then its components' bits.
pub type ParticleState = ((u32, u32), [u32; 2], [u32; 2], u32, [u32; 4], bool);

/// A running particle simulation.
pub struct Particles {
    /// The entities and resources.
    pub world: World,
    /// The systems.
    pub schedule: Schedule,
}

fn spray(
    rng: &mut Rng,
    origin: Position,
    angle: f32,
    heavy_share: f32,
) -> (Position, Velocity, Lifetime, Color, bool) {
    let direction = angle + rng.range(-0.35, 0.35);
    let speed = rng.range(150.0, 400.0);
    let life = rng.range(MIN_LIFE, MAX_LIFE);
    (
        origin,
        Velocity {
            x: direction.cos() * speed,
            y: direction.sin() * speed,
        },
        Lifetime {
            remaining: life,
            total: life,
        },
        Color {
            r: 1.0,
            g: 1.0,
            b: 0.8,
            a: 1.0,
        },
        rng.unit() < heavy_share,
    )
}

impl Particles {
    /// A simulation of `config.particles` particles (already in flight, at all ages) and
    /// `config.emitters` emitters, using the given executor.
    pub fn new(config: Config, executor: ExecutorKind) -> Self {
        let mut world = World::new();
        let mut rng = Rng::new(config.seed);
        let emitters = config.emitters.max(1);
        // Steady state: spawned per frame = population / mean life in frames.
        let mean_life_frames = (MIN_LIFE + MAX_LIFE) / 2.0 / DT;
        let total_rate = (config.particles as f32 / mean_life_frames).ceil() as u32;
        let rate = total_rate.div_ceil(emitters as u32).max(1);
        let mut origins = Vec::with_capacity(emitters);
        for i in 0..emitters {
            let x = WIDTH * (i as f32 + 0.5) / emitters as f32;
            let emitter = Emitter {
                position: Position { x, y: 0.0 },
                rate,
                angle: std::f32::consts::FRAC_PI_2 + rng.range(-0.5, 0.5),
                sweep: rng.range(-0.8, 0.8),
                heavy_share: 0.3,
                emitted: 0,
            };
            origins.push(emitter);
            world.spawn((emitter,));
        }
        // The initial population: as if each emitter had been running for a while, with
        // lives uniformly used up, so they expire evenly instead of all at once.
        let mut initial = Vec::with_capacity(config.particles);
        for i in 0..config.particles {
            let emitter = origins[i % emitters];
            let (mut position, velocity, mut lifetime, mut color, heavy) =
                spray(&mut rng, emitter.position, emitter.angle, emitter.heavy_share);
            let age = rng.range(0.0, lifetime.total.min(1.5));
            lifetime.remaining = rng.range(0.0, lifetime.total);
            position.x += velocity.x * age * 0.5;
            position.y = (velocity.y * age * 0.5).max(0.0);
            color.a = lifetime.remaining / lifetime.total;
            initial.push((position, velocity, lifetime, color, heavy));
        }
        world.spawn_batch(
            initial
                .iter()
                .filter(|p| p.4)
                .map(|&(p, v, l, c, _)| (p, v, l, c, Heavy)),
        );
        world.spawn_batch(
            initial
                .iter()
                .filter(|p| !p.4)
                .map(|&(p, v, l, c, _)| (p, v, l, c)),
        );

        world.insert_resource(rng);
        world.insert_resource(Time { dt: DT, frame: 0 });
        world.insert_resource(Physics {
            gravity: 300.0,
            drag: 1.5,
            buoyancy: 40.0,
            bounce: 0.5,
        });
        world.init_resource::<Expired>();
        world.init_resource::<Census>();

        let mut schedule = Schedule::new();
        schedule.set_executor(executor);
        Self::add_systems(&mut schedule);
        Self { world, schedule }
    }

    /// The simulation's systems. Only `integrate` and what follows it are explicitly
    /// ordered; the rest is ordered only where accesses conflict (`emit` and `expire` both
    /// record commands; `expire` reads the `Lifetime` that `integrate` writes).
    ///
    /// `expire` is ordered before `integrate` by that conflict, so a sync point applies its
    /// despawns before `integrate` runs; `emit`'s spawns are applied before `tick`, which
    /// conflicts with it. `emit`, `expire`, `gravity` and `drag` may all run at once.
    pub fn add_systems(schedule: &mut Schedule) {
        schedule.add_systems((
            emit,
            expire,
            gravity,
            drag,
            integrate.after(gravity).after(drag),
            census.after(integrate),
            tick.after(census),
        ));
    }

    /// Simulates one frame.
    pub fn step(&mut self) {
        self.schedule.run(&mut self.world);
    }

    /// What the last frame's census counted.
    pub fn census(&self) -> Census {
        *self.world.resource::<Census>().expect("inserted at start")
    }

    /// Live particles now (after the last frame's commands were applied).
    pub fn alive(&mut self) -> usize {
        self.world
            .query_filtered::<(), With<Lifetime>>()
            .count(&self.world)
    }

    /// Particles despawned so far.
    pub fn expired(&self) -> u64 {
        self.world.resource::<Expired>().expect("inserted at start").0
    }

    /// Particles emitted so far, over all emitters.
    pub fn emitted(&mut self) -> u64 {
        let mut q = self.world.query::<&Emitter>();
        q.iter(&self.world).map(|e| e.emitted).sum()
    }

    /// Every particle's state, bit-exact, sorted by id: equal snapshots mean equal worlds.
    pub fn snapshot(&mut self) -> Vec<ParticleState> {
        let mut q = self
            .world
            .query::<(Entity, &Position, &Velocity, &Lifetime, &Color, Option<&Heavy>)>();
        let mut state: Vec<ParticleState> = q
            .iter(&self.world)
            .map(|(e, p, v, l, c, heavy)| {
                (
                    (e.index(), e.generation()),
                    [p.x.to_bits(), p.y.to_bits()],
                    [v.x.to_bits(), v.y.to_bits()],
                    l.remaining.to_bits(),
                    [c.r.to_bits(), c.g.to_bits(), c.b.to_bits(), c.a.to_bits()],
                    heavy.is_some(),
                )
            })
            .collect();
        state.sort_by_key(|s| s.0);
        state
    }
}

/// Every emitter sweeps its spray and records `rate` new particles.
pub fn emit(
    mut commands: Commands,
    time: Res<Time>,
    mut rng: ResMut<Rng>,
    mut emitters: Query<&mut Emitter>,
) {
    for mut emitter in emitters.iter_mut() {
        emitter.angle += emitter.sweep * time.dt;
        let (low, high) = (
            std::f32::consts::FRAC_PI_2 - 0.7,
            std::f32::consts::FRAC_PI_2 + 0.7,
        );
        if emitter.angle < low || emitter.angle > high {
            emitter.sweep = -emitter.sweep;
            emitter.angle = emitter.angle.clamp(low, high);
        }
        for _ in 0..emitter.rate {
            let (position, velocity, lifetime, color, heavy) =
                spray(&mut rng, emitter.position, emitter.angle, emitter.heavy_share);
            if heavy {
                commands.spawn((position, velocity, lifetime, color, Heavy));
            } else {
                commands.spawn((position, velocity, lifetime, color));
            }
        }
        emitter.emitted += u64::from(emitter.rate);
    }
}

/// Records the despawn of every particle whose life ran out.
pub fn expire(mut commands: Commands, particles: Query<(Entity, &Lifetime)>, mut expired: ResMut<Expired>) {
    for (entity, lifetime) in particles.iter() {
        if lifetime.remaining <= 0.0 {
            commands.despawn(entity);
            expired.0 += 1;
        }
    }
}

/// Heavy particles fall. Disjoint from [`drag`] through `With<Heavy>` / `Without<Heavy>`.
pub fn gravity(time: Res<Time>, physics: Res<Physics>, mut particles: Query<&mut Velocity, With<Heavy>>) {
    let dv = physics.gravity * time.dt;
    particles.for_each(|mut velocity| velocity.y -= dv);
}

/// Light particles slow down in the air and drift up. Disjoint from [`gravity`].
pub fn drag(time: Res<Time>, physics: Res<Physics>, mut particles: Query<&mut Velocity, Without<Heavy>>) {
    let keep = 1.0 - physics.drag * time.dt;
    let lift = physics.buoyancy * time.dt;
    particles.for_each(|mut velocity| {
        velocity.x *= keep;
        velocity.y = velocity.y * keep + lift;
    });
}

/// Moves, bounces, ages and fades every particle, on all threads: the frame's heavy lifting.
pub fn integrate(
    time: Res<Time>,
    physics: Res<Physics>,
    mut particles: Query<(&mut Position, &mut Velocity, &mut Lifetime, &mut Color)>,
) {
    let dt = time.dt;
    let bounce = physics.bounce;
    particles.par_for_each_mut(|(mut position, mut velocity, mut lifetime, mut color)| {
        position.x += velocity.x * dt;
        position.y += velocity.y * dt;
        if position.y < 0.0 {
            position.y = -position.y * bounce;
            velocity.y = -velocity.y * bounce;
        }
        lifetime.remaining -= dt;
        let life = (lifetime.remaining / lifetime.total).clamp(0.0, 1.0);
        // Hot (white-yellow) when young, red and transparent when old.
        color.r = 1.0;
        color.g = life;
        color.b = 0.8 * life * life;
        color.a = life;
    });
}

/// Counts the particles the frame simulated, i.e. before its own spawns and despawns are
/// applied (archetype sizes: no per-row work).
pub fn census(
    all: Query<(), With<Lifetime>>,
    heavy: Query<(), (With<Lifetime>, With<Heavy>)>,
    mut census: ResMut<Census>,
) {
    census.alive = all.count();
    census.heavy = heavy.count();
}

/// Advances the frame counter.
pub fn tick(mut time: ResMut<Time>) {
    time.frame += 1;
}
