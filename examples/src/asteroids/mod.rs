//! Asteroids, headless: the classic entity-system teaching game (Richard Lord's Ash
//! framework) rebuilt on tabula and run without graphics.
//!
//! The game is a [`World`] plus a [`Schedule`] of small systems in three phases:
//!
//! * `PreUpdate`: the game manager (ship spawning, levels) and the scripted pilot;
//! * `Update`: controls, the gun, bullet ageing, death throes, the dust's swirl, movement
//!   (in parallel);
//! * `PostUpdate`: collisions, then the headless renderer and the audio queue.
//!
//! A ship or asteroid changes state by swapping components (a destroyed ship loses its
//! controls, gun and collision circle and gains `DeathThroes`), as in the original. A lost
//! ship comes back at a safe spot, or at the safest one after a few seconds.
//!
//! The classic game is small: a handful of asteroids. To give the parallel systems rows to
//! share, a game can carry a *swarm* of dust motes ([`Settings::swarm`]) that drift and
//! swirl through the field and touch nothing, so the load grows without changing the game.
//! [`view`] draws a frame, for the terminal or an animated GIF.

pub mod components;
pub mod systems;
pub mod view;

use tabula::prelude::*;
use tabula::schedule::ExecutorKind;
use tabula::{Entity, Has};

use crate::rng::Rng;
use components::*;

/// Playfield width.
pub const WIDTH: f32 = 600.0;
/// Playfield height.
pub const HEIGHT: f32 = 450.0;
/// Fixed time step.
pub const DT: f32 = 1.0 / 60.0;

/// Asteroids the first level of the classic game starts with (then one more per level).
pub const CLASSIC_ASTEROIDS: u32 = 3;

/// A running game.
pub struct Game {
    /// The entities and resources.
    pub world: World,
    /// The systems.
    pub schedule: Schedule,
}

/// One entity's state, for comparing two runs: its index and generation (two worlds have
/// different [tags](World::tag), so whole ids never match across worlds), then its
/// components' bits.
pub type EntityState = (
    (u32, u32),
    [u32; 3],
    Option<[u32; 3]>,
    bool,
    bool,
    bool,
    Option<u32>,
);

impl Game {
    /// A new classic game ([`CLASSIC_ASTEROIDS`]) with the given seed, using the given
    /// executor.
    pub fn new(seed: u64, executor: ExecutorKind) -> Self {
        Self::with_asteroids(seed, executor, CLASSIC_ASTEROIDS)
    }

    /// A new game whose first level starts with `asteroids` asteroids (each later level with
    /// one more), with the given seed, using the given executor.
    pub fn with_asteroids(seed: u64, executor: ExecutorKind, asteroids: u32) -> Self {
        Self::with_settings(seed, executor, Settings { asteroids, swarm: 0 })
    }

    /// A new game of the given size (asteroids, and the dust swarm spawned with it), with
    /// the given seed, using the given executor.
    pub fn with_settings(seed: u64, executor: ExecutorKind, settings: Settings) -> Self {
        let mut world = World::new();
        world.insert_resource(settings);
        world.insert_resource(GameState {
            lives: 3,
            level: 0,
            hits: 0,
            playing: true,
            respawn_wait: 0.0,
        });
        let mut rng = Rng::new(seed);
        let motes: Vec<_> = (0..settings.swarm)
            .map(|_| {
                let angle = rng.range(0.0, std::f32::consts::TAU);
                let speed = rng.range(5.0, 25.0);
                (
                    Dust {
                        swirl: rng.range(-0.5, 0.5),
                    },
                    Position {
                        x: rng.range(0.0, WIDTH),
                        y: rng.range(0.0, HEIGHT),
                        rotation: 0.0,
                    },
                    Motion {
                        velocity: (angle.cos() * speed, angle.sin() * speed),
                        angular_velocity: 0.0,
                        damping: 0.0,
                    },
                )
            })
            .collect();
        world.spawn_batch(motes);
        world.insert_resource(rng);
        world.insert_resource(Pilot::default());
        world.insert_resource(Time { dt: DT, frame: 0 });
        world.init_resource::<RenderStats>();
        world.init_resource::<AudioLog>();
        let mut schedule = Schedule::new();
        schedule.set_executor(executor);
        Self::add_systems(&mut schedule);
        Self { world, schedule }
    }

    /// The game's systems and their phases.
    pub fn add_systems(schedule: &mut Schedule) {
        use systems::*;
        schedule.add_systems((game_manager, pilot.after(game_manager)).in_set(CoreSet::PreUpdate));
        schedule.add_systems(
            (
                motion_controls,
                gun_controls,
                gun.after(gun_controls).after(motion_controls),
                bullet_age,
                death_throes,
                swirl,
                movement.after(motion_controls).after(swirl),
            )
                .in_set(CoreSet::Update),
        );
        schedule.add_systems(
            (
                collisions,
                render.after(collisions),
                audio.after(collisions),
                tick,
            )
                .in_set(CoreSet::PostUpdate),
        );
    }

    /// Simulates one frame.
    pub fn step(&mut self) {
        self.schedule.run(&mut self.world);
    }

    /// The game state resource.
    pub fn state(&self) -> GameState {
        *self.world.resource::<GameState>().expect("inserted at start")
    }

    /// Counts of live ships, asteroids and bullets.
    pub fn census(&mut self) -> (usize, usize, usize) {
        let mut q = self
            .world
            .query::<(Has<Spaceship>, Has<Asteroid>, Has<components::Bullet>)>();
        q.iter(&self.world)
            .fold((0, 0, 0), |(s, a, b), (is_s, is_a, is_b)| {
                (
                    s + usize::from(is_s),
                    a + usize::from(is_a),
                    b + usize::from(is_b),
                )
            })
    }

    /// Every entity's state, bit-exact, sorted by id: equal snapshots mean equal worlds.
    pub fn snapshot(&mut self) -> Vec<EntityState> {
        let mut q = self.world.query::<(
            Entity,
            &Position,
            Option<&Motion>,
            Has<Spaceship>,
            Has<Asteroid>,
            Has<DeathThroes>,
            Option<&Collision>,
        )>();
        let mut state: Vec<EntityState> = q
            .iter(&self.world)
            .map(|(e, p, m, ship, asteroid, dying, c)| {
                (
                    (e.index(), e.generation()),
                    [p.x.to_bits(), p.y.to_bits(), p.rotation.to_bits()],
                    m.map(|m| {
                        [
                            m.velocity.0.to_bits(),
                            m.velocity.1.to_bits(),
                            m.angular_velocity.to_bits(),
                        ]
                    }),
                    ship,
                    asteroid,
                    dying,
                    c.map(|c| c.radius.to_bits()),
                )
            })
            .collect();
        state.sort_by_key(|s| s.0);
        state
    }
}
