//! A game server hosting short arena matches, each in a [`World`] of its own, all driven by
//! one [`Schedule`] that moves from match to match every tick — the shape of a server with
//! one world per match, or an editor with a preview world.
//!
//! What it shows:
//!
//! * **One schedule, many worlds.** The match rules are built once; each tick the schedule
//!   runs on every live match in turn. Each command-recording system reserves entity ids in
//!   a lane of its own in the world it runs on; when the schedule moves on, the lanes are
//!   released, and when it comes back they are reused, so each match's entity slots stay near
//!   its live entities however many ticks and matches the server runs ([`MatchReport`]
//!   carries the figures).
//! * **Worlds come and go.** Matches start and end all the time; a finished match's world is
//!   dropped and its tag is reused by a later one, while no two live matches share a tag, so
//!   an `Entity` from one match is refused by every other (the reports print ids with their
//!   tag, `12v3@7`).
//! * **Commands from parallel systems**, `ParallelCommands` from a `par_for_each` (hits), a
//!   run condition (sudden death late in a match), and the same results, ids included, with
//!   one thread or many.

use tabula::prelude::*;

use crate::rng::Rng;

/// A ship of team 0 or 1.
#[derive(Clone, Copy, Debug)]
pub struct Ship {
    /// Which team it flies for.
    pub team: u8,
}

/// Hits a ship can take before it sinks.
#[derive(Clone, Copy, Debug)]
pub struct Health(pub i32);

/// Where something is, on a 100 × 100 arena that wraps around.
#[derive(Clone, Copy, Debug)]
pub struct Position(pub f32, pub f32);

/// How far something moves a tick.
#[derive(Clone, Copy, Debug)]
pub struct Velocity(pub f32, pub f32);

/// A bullet: who fired it, and how many ticks it has left.
#[derive(Clone, Copy, Debug)]
pub struct Bullet {
    /// The ship that fired it.
    pub owner: Entity,
    /// The team it hurts is the other one.
    pub team: u8,
    /// Ticks left before it fades.
    pub ttl: u8,
}

/// The match clock, in ticks since the match began.
#[derive(Clone, Copy, Debug, Default)]
pub struct Clock(pub u32);

/// Ships each team has sunk, and the ship with the most sinkings.
#[derive(Clone, Debug, Default)]
pub struct Score {
    /// Sinkings per team.
    pub sunk: [u32; 2],
    /// Sinkings per ship that ever fired a sinking shot.
    pub aces: Vec<(Entity, u32)>,
}

/// Ticks a match lasts.
pub const MATCH_TICKS: u32 = 120;
/// Ticks after which sudden death doubles bullet speed.
const SUDDEN_DEATH: u32 = 90;
/// Ships per team.
const SHIPS: u32 = 12;

fn wrap(v: f32) -> f32 {
    v.rem_euclid(100.0)
}

fn tick(mut clock: ResMut<Clock>) {
    clock.0 += 1;
}

/// Every ship fires every fourth tick (its own phase), toward where it is heading.
fn fire(mut commands: Commands, ships: Query<(Entity, &Ship, &Position, &Velocity)>, clock: Res<Clock>) {
    for (entity, ship, at, heading) in ships.iter() {
        if (clock.0 + entity.index()).is_multiple_of(4) {
            commands.spawn((
                Bullet {
                    owner: entity,
                    team: ship.team,
                    ttl: 12,
                },
                *at,
                Velocity(heading.0 * 3.0, heading.1 * 3.0),
            ));
        }
    }
}

fn movement(mut moving: Query<(&mut Position, &Velocity)>) {
    moving.par_for_each_mut(|(mut at, v)| {
        at.0 = wrap(at.0 + v.0);
        at.1 = wrap(at.1 + v.1);
    });
}

fn sudden_death(mut bullets: Query<&mut Velocity, With<Bullet>>) {
    bullets.for_each(|mut v| {
        v.0 *= 1.02;
        v.1 *= 1.02;
    });
}

fn late_in_the_match(clock: Res<Clock>) -> bool {
    clock.0 > SUDDEN_DEATH
}

/// Bullets fade: despawned when their time is up.
fn fade(mut commands: Commands, mut bullets: Query<(Entity, &mut Bullet)>) {
    bullets.for_each(|(entity, mut bullet)| {
        bullet.ttl -= 1;
        if bullet.ttl == 0 {
            commands.despawn(entity);
        }
    });
}

/// Each bullet near a ship of the other team hits it: the bullet goes, the ship loses one
/// health. Checked for every bullet in parallel; the commands apply in bullet order.
fn hits(
    bullets: Query<(Entity, &Bullet, &Position)>,
    ships: Query<(Entity, &Ship, &Position)>,
    commands: ParallelCommands,
) {
    let targets: Vec<(Entity, u8, Position)> = ships.iter().map(|(e, s, p)| (e, s.team, *p)).collect();
    bullets.par_for_each(|(bullet, shot, at)| {
        let hit = targets
            .iter()
            .find(|(_, team, p)| *team != shot.team && (p.0 - at.0).abs() < 2.0 && (p.1 - at.1).abs() < 2.0);
        if let Some(&(ship, _, _)) = hit {
            let owner = shot.owner;
            commands.command_scope(|commands| {
                commands.despawn(bullet);
                commands.add(move |world: &mut World| {
                    let Ok(&Ship { team }) = world.get::<Ship>(ship) else {
                        return; // sunk by an earlier hit this tick
                    };
                    let sunk = match world.get_mut::<Health>(ship) {
                        Ok(mut health) => {
                            health.0 -= 1;
                            health.0 == 0
                        }
                        Err(_) => false,
                    };
                    if sunk {
                        let score = world.resource_mut::<Score>().expect("every match keeps a score");
                        score.sunk[1 - usize::from(team)] += 1;
                        match score.aces.iter_mut().find(|(ace, _)| *ace == owner) {
                            Some((_, n)) => *n += 1,
                            None => score.aces.push((owner, 1)),
                        }
                    }
                });
            });
        }
    });
}

/// Sunk ships are despawned and a new ship of the same team joins at a random spot.
fn sink(mut commands: Commands, ships: Query<(Entity, &Ship, &Health)>, mut rng: ResMut<MatchRng>) {
    for (entity, ship, health) in ships.iter() {
        if health.0 <= 0 {
            commands.despawn(entity);
            commands.spawn(new_ship(ship.team, &mut rng.0));
        }
    }
}

/// A match's own random generator.
pub struct MatchRng(pub Rng);

fn new_ship(team: u8, rng: &mut Rng) -> (Ship, Health, Position, Velocity) {
    (
        Ship { team },
        Health(3),
        Position(rng.range(0.0, 100.0), rng.range(0.0, 100.0)),
        Velocity(rng.range(-1.0, 1.0), rng.range(-1.0, 1.0)),
    )
}

/// The match rules: one schedule for every match.
pub fn rules() -> Schedule {
    let mut schedule = Schedule::new();
    schedule.add_systems(
        (
            tick,
            fire,
            movement,
            sudden_death.run_if(late_in_the_match),
            fade,
            hits,
            sink,
        )
            .chain(),
    );
    schedule
}

/// How a finished match went, and what its world looked like at the end.
#[derive(Clone, Debug, PartialEq)]
pub struct MatchReport {
    /// The match's number on this server.
    pub number: u32,
    /// Its world's tag.
    pub tag: u8,
    /// Ships sunk per team.
    pub sunk: [u32; 2],
    /// The ship that sank the most, and how many.
    pub ace: Option<(Entity, u32)>,
    /// Entities alive at the end.
    pub live: u32,
    /// The most entities alive at once during the match.
    pub peak: u32,
    /// Entity slots the world made.
    pub slots: usize,
    /// Reservation lanes the world has (the shared one and one per command system).
    pub lanes: usize,
}

struct Match {
    number: u32,
    world: World,
    peak: u32,
}

/// The server: live matches, the rules, and the reports of finished ones.
pub struct Server {
    rules: Schedule,
    matches: Vec<Match>,
    started: u32,
    ticks: u32,
    seed: u64,
    /// Reports of finished matches, in the order they ended.
    pub reports: Vec<MatchReport>,
}

impl Server {
    /// A server that starts a match every `MATCH_TICKS / 3` ticks, seeded with `seed`.
    pub fn new(seed: u64) -> Self {
        Self {
            rules: rules(),
            matches: Vec::new(),
            started: 0,
            ticks: 0,
            seed,
            reports: Vec::new(),
        }
    }

    /// One server tick: start a match when it is time, run the rules once on every live match,
    /// and close the matches whose time is up (their worlds are dropped).
    pub fn tick(&mut self) {
        if self.ticks.is_multiple_of(MATCH_TICKS / 3) {
            self.start_match();
        }
        self.ticks += 1;
        for game in &mut self.matches {
            self.rules.run(&mut game.world);
            game.peak = game.peak.max(game.world.len());
        }
        let (done, playing): (Vec<Match>, Vec<Match>) = std::mem::take(&mut self.matches)
            .into_iter()
            .partition(|game| game.world.resource::<Clock>().map_or(0, |c| c.0) >= MATCH_TICKS);
        self.matches = playing;
        for game in done {
            self.reports.push(report(game));
        }
    }

    fn start_match(&mut self) {
        let number = self.started;
        self.started += 1;
        let mut world = World::new();
        let mut rng = Rng::new(self.seed.wrapping_add(u64::from(number) * 7919));
        for i in 0..SHIPS * 2 {
            world.spawn(new_ship((i % 2) as u8, &mut rng));
        }
        world.insert_resource(Clock::default());
        world.insert_resource(Score::default());
        world.insert_resource(MatchRng(rng));
        let peak = world.len();
        self.matches.push(Match { number, world, peak });
    }

    /// The live matches' numbers and tags.
    pub fn live(&self) -> Vec<(u32, u8)> {
        self.matches.iter().map(|m| (m.number, m.world.tag())).collect()
    }
}

fn report(game: Match) -> MatchReport {
    let Match { number, world, peak } = game;
    let score = world.resource::<Score>().expect("the score");
    let ace = score
        .aces
        .iter()
        .copied()
        .max_by_key(|&(ship, n)| (n, std::cmp::Reverse(ship)));
    MatchReport {
        number,
        tag: world.tag(),
        sunk: score.sunk,
        ace,
        live: world.len(),
        peak,
        slots: world.entity_slots(),
        lanes: world.entity_lane_count(),
    }
}
