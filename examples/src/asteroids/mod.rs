//! Asteroids: the classic entity-system teaching game (Richard Lord's Ash framework)
//! rebuilt on tabula, played by a scripted pilot, and drawn on request ([`view`]).
//!
//! The game is a [`World`] set up by plugins, one per feature, and run by
//! [`run_frame`](WorldFrame::run_frame) — the game's own loop decides when a frame happens
//! and how long it stands for:
//!
//! * `Startup`: the dust swarm appears ([`dust`]).
//! * `Update`: the screen clock — the title screen, then a game, then game over
//!   ([`Screen`], a state: `OnEnter(Screen::Playing)` starts a new game).
//! * `FixedUpdate`, at 60 steps a second whatever the frame rate, in three ordered steps
//!   ([`Step`]): *decide* (the game manager: ships, levels, game over; the scripted pilot),
//!   *act* (controls, the gun, bullet ageing, death throes, the dust's swirl, movement — in
//!   parallel where they do not conflict), *resolve* (collisions). The game's own rules run
//!   only while [`Screen::Playing`]; things keep drifting on the other screens.
//! * `Last`: the headless renderer and the audio queue.
//!
//! The ship is spawned from a [`Template`] the rules register by name
//! ([`systems::ship_template`]): what every ship starts with, in one place, given its
//! position at the spawn. Its body — the marker and its motion at rest — is read from a
//! data file, `src/asteroids/templates.json` ([`systems::TEMPLATES`]), which a designer
//! edits without touching Rust; the code adds what data cannot hold (its state machine). A ship or asteroid changes state by swapping components, as in
//! the original. The ship does it through an [`EntityStateMachine`]
//! ([`systems::ship_states`]): one entity all game long, *playing* (controls, gun,
//! collision circle), *destroyed* (death throes: a wreck drifting for 5 s) and *respawning*
//! (off the field until the game manager finds it a safe spot, or the safest one after a
//! few seconds). A hit asteroid swaps its components by hand
//! and is removed when its death throes end.
//!
//! The classic game is small: a handful of asteroids. To give the parallel systems rows to
//! share, a game can carry a *swarm* of dust motes ([`Settings::swarm`]) that drift and
//! swirl through the field and touch nothing, so the load grows without changing the game.

pub mod components;
pub mod systems;
pub mod view;

use std::time::Duration;

use tabula::prelude::*;
use tabula::schedule::{ExecutorKind, Schedules, Time};
use tabula::{Entity, Has};

use crate::rng::Rng;
use components::*;

/// Playfield width.
pub const WIDTH: f32 = 600.0;
/// Playfield height.
pub const HEIGHT: f32 = 450.0;
/// Seconds per fixed step, and per frame of the deterministic runs.
pub const DT: f32 = 1.0 / 60.0;
/// [`DT`] as a `Duration`: what [`Game::step`] passes to `run_frame`, and the fixed step,
/// so each such frame runs exactly one fixed update.
pub const FRAME: Duration = Duration::from_nanos(16_666_667);

/// Asteroids the first level of the classic game starts with (then one more per level).
pub const CLASSIC_ASTEROIDS: u32 = 3;

/// A running game: its world holds the entities, the resources and the schedules.
pub struct Game {
    /// The entities, resources and schedules.
    pub world: World,
}

/// The game's rules: the score, the screens, the manager and pilot, the ship's controls and
/// gun, bullets, wrecks, movement and collisions.
pub fn rules(world: &mut World) {
    use systems::*;
    world.insert_resource(GameState::new(0));
    register_debug(world);
    register_template_components(world);
    let body = (data_templates(world).into_iter())
        .find(|t| t.name() == SHIP_BODY)
        .expect("templates.json defines the ship body");
    world.register_template(ship_template(&body));
    world.init_resource::<Pilot>();
    world.init_resource::<ScreenClock>();
    world.add_event::<Explosion>();
    world
        .init_state::<Screen>()
        .add_systems(Update, screen_clock)
        .add_systems(OnEnter(Screen::Title), reset_screen_clock)
        .add_systems(OnEnter(Screen::Playing), (reset_screen_clock, new_game))
        .add_systems(OnEnter(Screen::GameOver), reset_screen_clock)
        .configure_sets(FixedUpdate, (Step::Decide, Step::Act, Step::Resolve).chain())
        .configure_sets(
            FixedUpdate,
            (Step::Decide, Step::Resolve).run_if(in_state(Screen::Playing)),
        )
        .add_systems(
            FixedUpdate,
            (game_manager, pilot.after(game_manager)).in_set(Step::Decide),
        )
        .add_systems(
            FixedUpdate,
            (
                motion_controls,
                gun_controls,
                gun.after(gun_controls).after(motion_controls),
                bullet_age,
                death_throes,
                movement.after(motion_controls),
            )
                .in_set(Step::Act),
        )
        .add_systems(FixedUpdate, collisions.in_set(Step::Resolve));
}

/// Lets `World::inspect` (`--inspect ENTITY_INDEX`) print the values of every component the
/// game defines.
fn register_debug(world: &mut World) {
    world.register_debug::<Position>();
    world.register_debug::<Motion>();
    world.register_debug::<MotionControls>();
    world.register_debug::<Gun>();
    world.register_debug::<GunControls>();
    world.register_debug::<Collision>();
    world.register_debug::<Bullet>();
    world.register_debug::<Asteroid>();
    world.register_debug::<Spaceship>();
    world.register_debug::<DeathThroes>();
    world.register_debug::<Display>();
    world.register_debug::<Audio>();
    world.register_debug::<Dust>();
}

/// The dust swarm: [`Settings::swarm`] motes spawned at startup, swirling every step.
pub fn dust(world: &mut World) {
    use systems::*;
    world
        .add_systems(Startup, spawn_swarm)
        .add_systems(FixedUpdate, swirl.in_set(Step::Act).before(movement));
}

/// What a player would see and hear, headless: counts of what is drawn and played.
pub fn presentation(world: &mut World) {
    use systems::*;
    world.init_resource::<RenderStats>();
    world.init_resource::<AudioLog>();
    world.add_systems(Last, (render, audio));
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
        world.insert_resource(Rng::new(seed));
        let mut time = Time::default();
        time.set_fixed_step(FRAME);
        world.insert_resource(time);
        world.add_plugins((rules, dust, presentation));
        let schedules = world.resource_mut::<Schedules>().expect("made by add_systems");
        schedules
            .entry(Startup)
            .expect("not running")
            .set_executor(executor);
        schedules
            .entry(FixedUpdate)
            .expect("not running")
            .set_executor(executor);
        schedules.entry(Last).expect("not running").set_executor(executor);
        Self { world }
    }

    /// Simulates one frame of [`FRAME`]: one fixed step.
    pub fn step(&mut self) {
        self.world.run_frame(FRAME);
    }

    /// Runs a frame standing for `delta` of game time (a live loop's measured frame): as
    /// many fixed steps as are due.
    pub fn step_by(&mut self, delta: Duration) {
        self.world.run_frame(delta);
    }

    /// The score resource.
    pub fn state(&self) -> GameState {
        *self.world.resource::<GameState>().expect("inserted at start")
    }

    /// The screen shown.
    pub fn screen(&self) -> Screen {
        **self
            .world
            .resource::<State<Screen>>()
            .expect("registered at start")
    }

    /// The fixed-update schedule, where the game's work happens (to trace it, draw its
    /// graph, count its systems).
    pub fn fixed_update(&mut self) -> &mut Schedule {
        self.world
            .resource_mut::<Schedules>()
            .expect("made at start")
            .entry(FixedUpdate)
            .expect("not running between frames")
    }

    /// The fixed-update schedule's graph in Graphviz DOT, each edge labelled with its reason.
    pub fn fixed_update_graph_dot(&mut self) -> String {
        fn schedules(world: &mut World) -> &mut Schedules {
            world.resource_mut::<Schedules>().expect("made at start")
        }
        let mut schedule = schedules(&mut self.world)
            .remove(FixedUpdate)
            .expect("made at start");
        let dot = schedule.graph_dot(&mut self.world);
        schedules(&mut self.world)
            .insert(FixedUpdate, schedule)
            .expect("not running between frames");
        dot.expect("the schedule builds")
    }

    /// Counts of ships on the field (playing or a wreck; not one waiting to respawn),
    /// asteroids and bullets.
    pub fn census(&mut self) -> (usize, usize, usize) {
        let mut q = self.world.query::<(
            Has<Spaceship>,
            Option<&EntityStateMachine>,
            Has<Asteroid>,
            Has<components::Bullet>,
        )>();
        q.iter(&self.world)
            .fold((0, 0, 0), |(s, a, b), (is_s, states, is_a, is_b)| {
                let on_field = !states.is_some_and(|m| m.is_in(systems::RESPAWNING));
                (
                    s + usize::from(is_s && on_field),
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
