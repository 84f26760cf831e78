//! The components and resources of Asteroids, after Richard Lord's Ash teaching game.
//!
//! An entity's *state* is the set of components it has: a playing ship has `MotionControls`,
//! `Gun`, `GunControls` and `Collision`; a destroyed one loses them and gains `DeathThroes`
//! (the ship's [`EntityStateMachine`](tabula::EntityStateMachine), built by
//! [`ship_states`](super::systems::ship_states), swaps them).

use serde::{Deserialize, Serialize};
use tabula::schedule::{States, SystemSet};

/// Where something is and which way it faces (radians).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Position {
    /// Horizontal, `0..WIDTH`.
    pub x: f32,
    /// Vertical, `0..HEIGHT`.
    pub y: f32,
    /// Facing, radians.
    pub rotation: f32,
}

/// How something moves.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Motion {
    /// Velocity, units per second.
    pub velocity: (f32, f32),
    /// Radians per second.
    pub angular_velocity: f32,
    /// Fraction of velocity lost per second.
    pub damping: f32,
}

/// Lets the pilot steer and thrust.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MotionControls {
    /// Thrust, units per second squared.
    pub acceleration_rate: f32,
    /// Turn rate, radians per second.
    pub rotation_rate: f32,
}

/// A gun mounted on the ship.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Gun {
    /// The trigger is held.
    pub shooting: bool,
    /// Where bullets appear, relative to the ship, before rotation.
    pub offset: (f32, f32),
    /// Seconds since the last shot.
    pub time_since_last_shot: f32,
    /// Seconds between shots.
    pub minimum_shot_interval: f32,
    /// Seconds a bullet lives.
    pub bullet_lifetime: f32,
}

/// Lets the pilot pull the gun's trigger.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct GunControls;

/// A collision circle.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Collision {
    /// Radius.
    pub radius: f32,
}

/// A bullet, and how long it has left.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bullet {
    /// Seconds of life remaining.
    pub life_remaining: f32,
}

/// Marks an asteroid.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Asteroid;

/// Marks the player's ship.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Spaceship;

/// Something destroyed, playing out its death before it disappears.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DeathThroes {
    /// Seconds left.
    pub countdown: f32,
}

/// What would be drawn for the entity.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Display {
    /// The sprite's name.
    pub name: &'static str,
}

/// Sounds the entity wants played.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Audio {
    /// Queued sound names.
    pub queue: Vec<&'static str>,
}

/// Which screen the game shows: the app-level state. The title screen lasts a moment
/// (asteroids drifting behind it), then the pilot starts a game; when the last ship is lost
/// the game-over screen shows, then the title again.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Screen {
    /// Before a game: the field drifts.
    #[default]
    Title,
    /// A game is on.
    Playing,
    /// The last ship was lost.
    GameOver,
}

impl States for Screen {}

/// Seconds the title screen shows before the pilot starts a game.
pub const TITLE_SECONDS: f32 = 1.0;
/// Seconds the game-over screen shows before the title.
pub const GAME_OVER_SECONDS: f32 = 3.0;

/// Seconds since the current screen came up.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ScreenClock(pub f32);

/// The steps of one fixed update, in order: decide (the game manager, the pilot), act
/// (controls, guns, movement, ageing), resolve (collisions).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Step {
    /// What happens this step: ships, levels, the pilot's inputs.
    Decide,
    /// Everything moves and fires.
    Act,
    /// What hit what.
    Resolve,
}

impl SystemSet for Step {}

/// The score of the game being played (or the last one).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GameState {
    /// Ships left.
    pub lives: u32,
    /// The level being played; 0 before the first.
    pub level: u32,
    /// Asteroids hit.
    pub hits: u32,
    /// Games started.
    pub games: u32,
    /// Seconds since the ship was lost, while a life is waiting to be played (0 while a
    /// ship flies).
    pub respawn_wait: f32,
}

impl GameState {
    /// Ships a game starts with.
    pub const LIVES: u32 = 3;

    /// The score at the start of a game, after `games` games were started (this one
    /// included): all lives, no level, no hits.
    pub fn new(games: u32) -> Self {
        Self {
            lives: Self::LIVES,
            level: 0,
            hits: 0,
            games,
            respawn_wait: 0.0,
        }
    }
}

/// How big a game is: fixed when it starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Settings {
    /// Asteroids the first level starts with; each later level starts with one more.
    pub asteroids: u32,
    /// Dust motes drifting through the field: scenery that collides with nothing, there to
    /// give the parallel systems rows to share (see [`Dust`]).
    pub swarm: u32,
}

/// The scripted pilot's inputs for this frame.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Pilot {
    /// -1 turn left .. 1 turn right.
    pub turn: f32,
    /// Thrust held.
    pub thrust: bool,
    /// Trigger held.
    pub trigger: bool,
}

/// A mote of the dust swarm: it drifts, swirls and is drawn, and touches nothing, so a
/// big swarm loads every frame without changing how the game plays.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Dust {
    /// Radians per second the mote's heading turns.
    pub swirl: f32,
}

/// What the headless renderer drew in the last frame.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RenderStats {
    /// Ships, asteroids, bullets and death animations drawn last frame.
    pub drawn: [u32; 4],
    /// Sprites drawn over the whole game.
    pub total: u64,
}

/// Sounds played over the whole game.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AudioLog {
    /// Sounds played, by name index: shoot, explosion, ship.
    pub played: [u64; 3],
}
