//! The systems of Asteroids, one per rule of the game.

use tabula::prelude::*;
use tabula::schedule::{EventReader, EventWriter, Time};
use tabula::{Entity, With, Without};

use super::components::*;
use super::{HEIGHT, WIDTH};
use crate::rng::Rng;

const CENTRE: (f32, f32) = (WIDTH / 2.0, HEIGHT / 2.0);
const SHIP_RADIUS: f32 = 9.0;
const BULLET_SPEED: f32 = 150.0;

/// Something blew up; the audio system and the log hear about it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Explosion {
    /// An asteroid was hit.
    Asteroid,
    /// The ship crashed.
    Ship,
}

fn wrapped_delta(a: f32, b: f32, size: f32) -> f32 {
    let d = (b - a).rem_euclid(size);
    if d > size / 2.0 { d - size } else { d }
}

/// Distance on the wrapping playfield.
fn distance(a: &Position, b: &Position) -> f32 {
    let dx = wrapped_delta(a.x, b.x, WIDTH);
    let dy = wrapped_delta(a.y, b.y, HEIGHT);
    (dx * dx + dy * dy).sqrt()
}

fn spawn_asteroid(commands: &mut Commands, rng: &mut Rng, radius: f32, x: f32, y: f32) {
    let angle = rng.range(0.0, std::f32::consts::TAU);
    let speed = rng.range(20.0, 60.0);
    commands.spawn((
        Asteroid,
        Position { x, y, rotation: 0.0 },
        Motion {
            velocity: (angle.cos() * speed, angle.sin() * speed),
            angular_velocity: rng.range(-2.0, 2.0),
            damping: 0.0,
        },
        Collision { radius },
        Display { name: "asteroid" },
        Audio::default(),
    ));
}

/// The ship's state playing.
pub const PLAYING: &str = "playing";
/// The ship's state destroyed: a wreck playing out its death throes.
pub const DESTROYED: &str = "destroyed";
/// The ship's state respawning: off the field, waiting for a safe spot to come back at.
pub const RESPAWNING: &str = "respawning";

/// The ship's states, as in Ash's Asteroids: *playing* (controls, a gun, a collision circle,
/// drawn as a ship), *destroyed* (death throes, drawn as a wreck), and *respawning* (nothing:
/// not drawn, touching nothing, until the game manager brings it back). Each state gives
/// its components by value, so each entry gets fresh ones (a new gun, a full countdown);
/// the gun controls are the type's default in the one state that has them.
pub fn ship_states() -> EntityStateMachine {
    EntityStateMachine::new()
        .state(PLAYING, |s| {
            s.with(MotionControls {
                acceleration_rate: 100.0,
                rotation_rate: 3.0,
            })
            .with(Gun {
                shooting: false,
                offset: (8.0, 0.0),
                time_since_last_shot: 0.0,
                minimum_shot_interval: 0.3,
                bullet_lifetime: 2.0,
            })
            .with_default::<GunControls>()
            .with(Collision { radius: SHIP_RADIUS })
            .with(Display { name: "ship" })
        })
        .state(DESTROYED, |s| {
            s.with(DeathThroes { countdown: 5.0 })
                .with(Display { name: "ship death" })
        })
        .state(RESPAWNING, |s| s)
}

/// The entity templates a designer edits: a map from template name to its components,
/// by the names [`register_template_components`] gives them (`World::read_templates`'s
/// format). Built into the program; edit the file and rebuild.
pub const TEMPLATES: &str = include_str!("templates.json");

/// The template in [`TEMPLATES`] that [`ship_template`] extends: what a ship is made of.
pub const SHIP_BODY: &str = "ship body";

/// Registers the components [`TEMPLATES`] may list, under the names it lists them by.
pub fn register_template_components(world: &mut World) {
    world.register_template_component::<Spaceship>("Spaceship");
    world.register_template_component::<Motion>("Motion");
}

/// The templates of [`TEMPLATES`], read for `world` (whose template components are
/// registered).
///
/// # Panics
/// When the file is not a template file this game can read: it is part of the program.
pub fn data_templates(world: &World) -> Vec<Template> {
    world
        .read_templates(&mut serde_json::Deserializer::from_str(TEMPLATES))
        .unwrap_or_else(|e| panic!("src/asteroids/templates.json: {e}"))
}

/// At rest: how a ship (re)appears — the `Motion` of [`SHIP_BODY`] in [`TEMPLATES`], so the
/// respawn and the first spawn agree with the file.
fn ship_motion() -> Motion {
    static AT_REST: std::sync::OnceLock<Motion> = std::sync::OnceLock::new();
    *AT_REST.get_or_init(|| {
        let file: serde_json::Value = serde_json::from_str(TEMPLATES).expect("templates.json is JSON");
        serde_json::from_value(file[SHIP_BODY]["components"]["Motion"].clone())
            .expect("templates.json gives the ship body a Motion")
    })
}

/// The ship template's name in the world's [`Templates`]: [`rules`](super::rules)
/// registers [`ship_template`] under it.
pub const SHIP: &str = "ship";

/// What every ship starts with (Ash's `EntityCreator.createSpaceship`): the ship body read
/// from [`TEMPLATES`] (the marker and a ship at rest), then what code gives — an empty sound
/// queue and its [state machine](ship_states), not yet in a state. Where it appears is
/// given at the spawn.
pub fn ship_template(body: &Template) -> Template {
    Template::extending(SHIP, body)
        .with_default::<Audio>()
        .with(ship_states())
}

/// The game's one ship, playing at `at`: it keeps its entity all game long and changes
/// state.
fn spawn_ship(commands: &mut Commands, at: Position) {
    commands
        .spawn_template_named(SHIP)
        .insert((at,))
        .change_state(PLAYING);
}

/// How far from every asteroid's edge a spot must be for the ship to (re)appear there.
const SAFE_CLEARANCE: f32 = 50.0;
/// Seconds a life waits for a safe spot; after that the ship appears at the safest spot
/// there is, safe or not (a crowded field must not stop the game).
const RESPAWN_TIMEOUT: f32 = 3.0;

/// The spot where the ship would be safest to (re)appear, and how far it is from the nearest
/// asteroid's edge: the centre when it is clear, as in the classic game, else the clearest
/// point of a 12 × 9 grid over the field (the first of equals, so the choice is the same on
/// every run).
fn safest_spot(asteroids: &Query<(&Position, Option<&Collision>), With<Asteroid>>) -> (Position, f32) {
    let clearance = |spot: &Position| {
        asteroids
            .iter()
            .map(|(p, c)| distance(p, spot) - c.map_or(0.0, |c| c.radius))
            .fold(f32::INFINITY, f32::min)
    };
    let centre = Position {
        x: CENTRE.0,
        y: CENTRE.1,
        rotation: 0.0,
    };
    let at_centre = clearance(&centre);
    if at_centre > SAFE_CLEARANCE {
        return (centre, at_centre);
    }
    let grid = (0..9).flat_map(|row| {
        (0..12).map(move |column| Position {
            x: (column as f32 + 0.5) * WIDTH / 12.0,
            y: (row as f32 + 0.5) * HEIGHT / 9.0,
            rotation: 0.0,
        })
    });
    grid.map(|spot| {
        let c = clearance(&spot);
        (spot, c)
    })
    .fold(
        (centre, at_centre),
        |best, next| if next.1 > best.1 { next } else { best },
    )
}

/// Brings the ship back when it is respawning (or makes it, at the start of a game) and lives
/// remain — at a safe spot (the centre when it is clear), or after `RESPAWN_TIMEOUT` at the
/// safest spot there is — ends the game when none remain, and starts the next level when
/// every asteroid and bullet is gone. Runs while a game is on.
#[allow(clippy::too_many_arguments)]
pub fn game_manager(
    mut commands: Commands,
    settings: Res<Settings>,
    time: Res<Time>,
    mut state: ResMut<GameState>,
    mut screen: ResMut<NextState<Screen>>,
    mut rng: ResMut<Rng>,
    ships: Query<(Entity, &Position, &EntityStateMachine), With<Spaceship>>,
    asteroids: Query<(&Position, Option<&Collision>), With<Asteroid>>,
    bullets: Query<(), With<Bullet>>,
) {
    let found = ships.iter().next();
    let mut ship = found
        .filter(|(_, _, states)| !states.is_in(RESPAWNING))
        .map(|(_, position, _)| *position);
    if ship.is_none() {
        if state.lives == 0 {
            screen.set(Screen::GameOver);
            return;
        }
        let (spot, clearance) = safest_spot(&asteroids);
        if clearance > SAFE_CLEARANCE || state.respawn_wait >= RESPAWN_TIMEOUT {
            match found {
                Some((entity, _, _)) => {
                    commands
                        .entity(entity)
                        .insert((spot, ship_motion()))
                        .change_state(PLAYING);
                }
                None => spawn_ship(&mut commands, spot),
            }
            ship = Some(spot);
            state.respawn_wait = 0.0;
        } else {
            state.respawn_wait += time.delta_secs();
        }
    }
    if asteroids.is_empty() && bullets.is_empty() {
        state.level += 1;
        let avoid = ship.unwrap_or(Position {
            x: CENTRE.0,
            y: CENTRE.1,
            rotation: 0.0,
        });
        for _ in 0..settings.asteroids + state.level - 1 {
            // Place each new asteroid well away from the ship.
            loop {
                let p = Position {
                    x: rng.range(0.0, WIDTH),
                    y: rng.range(0.0, HEIGHT),
                    rotation: 0.0,
                };
                if distance(&p, &avoid) > 80.0 {
                    spawn_asteroid(&mut commands, &mut rng, 30.0, p.x, p.y);
                    break;
                }
            }
        }
    }
}

/// Spawns the dust swarm ([`Settings::swarm`] motes), at startup.
pub fn spawn_swarm(mut commands: Commands, settings: Res<Settings>, mut rng: ResMut<Rng>) {
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
    commands.spawn_batch(motes);
}

/// Turns each dust mote's heading by its swirl; in parallel.
pub fn swirl(time: Res<Time>, mut q: Query<(&Dust, &mut Motion)>) {
    let dt = time.delta_secs();
    q.par_for_each_mut(|(dust, mut motion)| {
        let (s, c) = (dust.swirl * dt).sin_cos();
        let (vx, vy) = motion.velocity;
        motion.velocity = (vx * c - vy * s, vx * s + vy * c);
    });
}

/// The scripted pilot: turn toward the nearest live asteroid, thrust when it is far, fire
/// when it is roughly ahead.
pub fn pilot(
    ships: Query<&Position, (With<Spaceship>, With<MotionControls>)>,
    asteroids: Query<&Position, (With<Asteroid>, With<Collision>)>,
    mut pilot: ResMut<Pilot>,
) {
    *pilot = Pilot::default();
    let Some(ship) = ships.iter().next() else {
        return;
    };
    let nearest = asteroids
        .iter()
        .map(|a| (distance(ship, a), a))
        .min_by(|x, y| x.0.total_cmp(&y.0));
    let Some((dist, target)) = nearest else {
        return;
    };
    let dx = wrapped_delta(ship.x, target.x, WIDTH);
    let dy = wrapped_delta(ship.y, target.y, HEIGHT);
    let wanted = dy.atan2(dx);
    let diff = (wanted - ship.rotation + std::f32::consts::PI).rem_euclid(std::f32::consts::TAU)
        - std::f32::consts::PI;
    pilot.turn = diff.clamp(-1.0, 1.0);
    pilot.thrust = dist > 180.0 && diff.abs() < 0.5;
    pilot.trigger = diff.abs() < 0.25;
}

/// Applies the pilot's steering and thrust to ships with motion controls.
pub fn motion_controls(
    pilot: Res<Pilot>,
    time: Res<Time>,
    mut q: Query<(&MotionControls, &mut Position, &mut Motion)>,
) {
    q.for_each(|(controls, mut position, mut motion)| {
        position.rotation += pilot.turn * controls.rotation_rate * time.delta_secs();
        if pilot.thrust {
            let (s, c) = position.rotation.sin_cos();
            motion.velocity.0 += c * controls.acceleration_rate * time.delta_secs();
            motion.velocity.1 += s * controls.acceleration_rate * time.delta_secs();
        }
    });
}

/// Holds the trigger of guns with gun controls while the pilot does.
pub fn gun_controls(pilot: Res<Pilot>, mut q: Query<&mut Gun, With<GunControls>>) {
    q.for_each(|mut gun| gun.shooting = pilot.trigger);
}

/// Fires bullets from guns whose trigger is held, no faster than their interval.
pub fn gun(mut commands: Commands, time: Res<Time>, mut q: Query<(&Position, &mut Gun, &mut Audio)>) {
    q.for_each(|(position, mut gun, mut audio)| {
        gun.time_since_last_shot += time.delta_secs();
        if gun.shooting && gun.time_since_last_shot >= gun.minimum_shot_interval {
            let (s, c) = position.rotation.sin_cos();
            let (ox, oy) = gun.offset;
            commands.spawn((
                Bullet {
                    life_remaining: gun.bullet_lifetime,
                },
                Position {
                    x: (position.x + c * ox - s * oy).rem_euclid(WIDTH),
                    y: (position.y + s * ox + c * oy).rem_euclid(HEIGHT),
                    rotation: position.rotation,
                },
                Motion {
                    velocity: (c * BULLET_SPEED, s * BULLET_SPEED),
                    angular_velocity: 0.0,
                    damping: 0.0,
                },
                Display { name: "bullet" },
            ));
            gun.time_since_last_shot = 0.0;
            audio.queue.push("shoot");
        }
    });
}

/// Ages bullets and removes the expired ones.
pub fn bullet_age(mut commands: Commands, time: Res<Time>, mut q: Query<(Entity, &mut Bullet)>) {
    q.for_each(|(entity, mut bullet)| {
        bullet.life_remaining -= time.delta_secs();
        if bullet.life_remaining <= 0.0 {
            commands.despawn(entity);
        }
    });
}

/// Counts down destroyed things; when done, removes them, or sends one with a state
/// machine (the ship) to its respawning state.
pub fn death_throes(
    mut commands: Commands,
    time: Res<Time>,
    mut q: Query<(Entity, &mut DeathThroes, Has<EntityStateMachine>)>,
) {
    q.for_each(|(entity, mut throes, has_states)| {
        throes.countdown -= time.delta_secs();
        if throes.countdown <= 0.0 {
            if has_states {
                commands.entity(entity).change_state(RESPAWNING);
            } else {
                commands.despawn(entity);
            }
        }
    });
}

/// Moves everything, wrapping at the edges and applying damping; in parallel.
pub fn movement(time: Res<Time>, mut q: Query<(&mut Position, &mut Motion)>) {
    let dt = time.delta_secs();
    q.par_for_each_mut(|(mut position, mut motion)| {
        position.x = (position.x + motion.velocity.0 * dt).rem_euclid(WIDTH);
        position.y = (position.y + motion.velocity.1 * dt).rem_euclid(HEIGHT);
        position.rotation += motion.angular_velocity * dt;
        if motion.damping > 0.0 {
            let keep = 1.0 - motion.damping * dt;
            motion.velocity.0 *= keep;
            motion.velocity.1 *= keep;
        }
    });
}

/// Bullets break asteroids (into two smaller ones while big enough); asteroids destroy the
/// ship. A hit asteroid swaps its components by hand; the ship moves its state machine to
/// [`DESTROYED`].
pub fn collisions(
    mut commands: Commands,
    mut state: ResMut<GameState>,
    mut rng: ResMut<Rng>,
    mut explosions: EventWriter<Explosion>,
    bullets: Query<(Entity, &Position), With<Bullet>>,
    asteroids: Query<(Entity, &Position, &Collision), (With<Asteroid>, Without<DeathThroes>)>,
    ships: Query<(Entity, &Position, &Collision), (With<Spaceship>, Without<DeathThroes>)>,
) {
    let mut destroyed: Vec<Entity> = Vec::new();
    for (bullet, bullet_position) in bullets.iter() {
        let hit = asteroids
            .iter()
            .find(|(a, p, c)| !destroyed.contains(a) && distance(bullet_position, p) < c.radius);
        if let Some((asteroid, position, collision)) = hit {
            destroyed.push(asteroid);
            commands.despawn(bullet);
            if collision.radius > 10.0 {
                for _ in 0..2 {
                    spawn_asteroid(
                        &mut commands,
                        &mut rng,
                        collision.radius - 10.0,
                        position.x,
                        position.y,
                    );
                }
            }
            commands.entity(asteroid).remove::<(Collision,)>().insert((
                DeathThroes { countdown: 3.0 },
                Display {
                    name: "asteroid death",
                },
            ));
            state.hits += 1;
            explosions.send(Explosion::Asteroid);
        }
    }
    for (ship, ship_position, ship_collision) in ships.iter() {
        let crashed = asteroids.iter().any(|(a, p, c)| {
            !destroyed.contains(&a) && distance(ship_position, p) < ship_collision.radius + c.radius
        });
        if crashed {
            commands.entity(ship).change_state(DESTROYED);
            state.lives = state.lives.saturating_sub(1);
            explosions.send(Explosion::Ship);
        }
    }
}

/// The headless renderer: counts what would be drawn.
pub fn render(q: Query<&Display>, mut stats: ResMut<RenderStats>) {
    let mut drawn = [0u32; 4];
    for display in q.iter() {
        let slot = match display.name {
            "ship" => 0,
            "asteroid" => 1,
            "bullet" => 2,
            _ => 3,
        };
        drawn[slot] += 1;
    }
    stats.total += u64::from(drawn.iter().sum::<u32>());
    stats.drawn = drawn;
}

/// Plays (counts) queued sounds and explosion events, emptying the queues.
pub fn audio(mut q: Query<&mut Audio>, mut explosions: EventReader<Explosion>, mut log: ResMut<AudioLog>) {
    for mut audio in q.iter_mut() {
        if !audio.queue.is_empty() {
            log.played[0] += audio.queue.len() as u64;
            audio.queue.clear();
        }
    }
    for explosion in explosions.read() {
        match explosion {
            Explosion::Asteroid => log.played[1] += 1,
            Explosion::Ship => log.played[2] += 1,
        }
    }
}

/// Starts a game: clears what the last one left (ships, asteroids, bullets, wrecks; not the
/// dust) and resets the score. Runs on entering [`Screen::Playing`].
pub fn new_game(
    mut commands: Commands,
    mut state: ResMut<GameState>,
    leftovers: Query<Entity, (With<Position>, Without<Dust>)>,
) {
    for entity in leftovers.iter() {
        commands.despawn(entity);
    }
    *state = GameState::new(state.games + 1);
}

/// Restarts the screen clock. Runs on entering each screen.
pub fn reset_screen_clock(mut clock: ResMut<ScreenClock>) {
    clock.0 = 0.0;
}

/// Counts how long the current screen has shown; the title screen gives way to a game
/// after [`TITLE_SECONDS`] (the pilot "presses start"), the game-over screen to the title
/// after [`GAME_OVER_SECONDS`].
pub fn screen_clock(
    time: Res<Time>,
    screen: Res<State<Screen>>,
    mut clock: ResMut<ScreenClock>,
    mut next: ResMut<NextState<Screen>>,
) {
    clock.0 += time.delta_secs();
    match **screen {
        Screen::Title if clock.0 >= TITLE_SECONDS => next.set(Screen::Playing),
        Screen::GameOver if clock.0 >= GAME_OVER_SECONDS => next.set(Screen::Title),
        _ => {}
    }
}
