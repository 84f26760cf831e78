//! A turn-based battle, hero against monsters, built from events, resources, `Local` state,
//! run conditions and ordered sets.
//!
//! One schedule run is one side's move. The systems sit in four [`Phase`]s, chained:
//!
//! 1. **Act** (only while the battle is ongoing): [`announce_turn`], then [`hero_acts`] *if
//!    it is the hero's turn* or [`monsters_act`] *if it is the monsters'* (run conditions
//!    [`heros_turn`] and [`monsters_turn`]). Acting means sending [`AttackEvent`]s.
//! 2. **Resolve**: [`apply_damage`] reads the attacks, lowers [`Health`] and sends a
//!    [`DeathEvent`] for each combatant that drops to zero.
//! 3. **Cleanup**: two independent readers of the deaths: [`bury_the_dead`] despawns them
//!    through `Commands`, [`announcer`] cheers. Each reader has its own cursor, so each sees
//!    every death exactly once.
//! 4. **Advance**: [`check_outcome`] (which sees the despawns: the schedule applies the
//!    commands at the sync point between the phases), then [`next_turn`], whose run condition
//!    [`battle_ongoing`] is checked when it is about to run, so the turn does not advance
//!    once the battle is decided.
//!
//! Resources: the [`Turn`], the [`CombatLog`], the seeded [`Rng`], the [`Outcome`] and a
//! [`Tally`] of events sent and handled. `Local`s: the hero counts its own moves (every third
//! is a whirlwind), the monsters count theirs (every fourth they are enraged), and the
//! announcer counts the fallen.
//!
//! Every random draw comes from the one `Rng` resource, in a fixed order, so a seed gives the
//! same battle every time.

use tabula::prelude::*;
use tabula::schedule::ExecutorKind;
use tabula::{With, Without};

use crate::rng::Rng;

/// A name to print.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Name(pub String);

/// Hit points.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Health {
    /// Left now; zero means dead.
    pub current: u32,
    /// At full health.
    pub max: u32,
}

/// How hard and how surely a combatant hits.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Weapon {
    /// The verb for the log ("strikes", "bites").
    pub verb: &'static str,
    /// Least damage of a hit.
    pub min: u32,
    /// Most damage of a hit.
    pub max: u32,
    /// Chance to hit, 0..1.
    pub accuracy: f32,
}

/// Marks the hero.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hero;

/// Marks a monster.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Monster;

/// Healing potions the hero carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Potions(pub u32);

/// One side of the battle.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Side {
    /// The hero.
    Hero,
    /// The monsters.
    Monsters,
}

/// Whose move it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Turn {
    /// Rounds started so far (a round is the hero's move and the monsters' reply), from 1.
    pub round: u32,
    /// Who moves now.
    pub side: Side,
}

/// How the battle stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Still fighting.
    Ongoing,
    /// One side is gone.
    Won(Side),
    /// Nobody won within [`MAX_ROUNDS`].
    Draw,
}

/// The battle's story, one line per thing that happened.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CombatLog(pub Vec<String>);

/// Events sent and handled, to check that every event is consumed exactly once.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    /// [`AttackEvent`]s sent by the acting side.
    pub attacks_sent: u32,
    /// [`AttackEvent`]s read by [`apply_damage`].
    pub attacks_resolved: u32,
    /// [`DeathEvent`]s sent by [`apply_damage`].
    pub deaths_sent: u32,
    /// [`DeathEvent`]s read by [`bury_the_dead`].
    pub buried: u32,
    /// [`DeathEvent`]s read by [`announcer`].
    pub announced: u32,
}

/// One blow aimed at one combatant.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AttackEvent {
    /// Who attacks, by name.
    pub attacker: String,
    /// Who is hit.
    pub target: Entity,
    /// Hit points it takes away.
    pub damage: u32,
    /// How it is described ("strikes", "whirls into", "bites").
    pub verb: &'static str,
    /// A critical or enraged hit, marked in the log.
    pub special: Option<&'static str>,
}

/// A combatant dropped to zero health.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeathEvent {
    /// Who died.
    pub entity: Entity,
    /// Their name.
    pub name: String,
    /// Which side they fought for.
    pub side: Side,
}

/// The phases of one move, run in this order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Phase {
    /// The side whose turn it is acts.
    Act,
    /// Attacks land.
    Resolve,
    /// The dead are removed.
    Cleanup,
    /// The outcome is checked and the turn passes.
    Advance,
}

impl SystemSet for Phase {}

/// The battle is called a draw after this many rounds.
pub const MAX_ROUNDS: u32 = 100;

/// The monster kinds: name, health, weapon.
const BESTIARY: [(&str, u32, Weapon); 4] = [
    (
        "Goblin",
        14,
        Weapon {
            verb: "stabs",
            min: 2,
            max: 5,
            accuracy: 0.75,
        },
    ),
    (
        "Orc",
        22,
        Weapon {
            verb: "cleaves",
            min: 3,
            max: 7,
            accuracy: 0.65,
        },
    ),
    (
        "Troll",
        30,
        Weapon {
            verb: "smashes",
            min: 4,
            max: 9,
            accuracy: 0.55,
        },
    ),
    (
        "Bat",
        7,
        Weapon {
            verb: "bites",
            min: 1,
            max: 3,
            accuracy: 0.9,
        },
    ),
];

/// A battle in progress.
pub struct Battle {
    /// The combatants and resources.
    pub world: World,
    /// The systems.
    pub schedule: Schedule,
}

impl Battle {
    /// A battle whose monsters and every roll come from `seed`.
    pub fn new(seed: u64) -> Self {
        let mut world = World::new();
        let mut rng = Rng::new(seed);
        world.spawn((
            Name("Hero".to_string()),
            Hero,
            Health { current: 55, max: 55 },
            Weapon {
                verb: "strikes",
                min: 6,
                max: 11,
                accuracy: 0.85,
            },
            Potions(2),
        ));
        let count = 3 + (rng.next_u64() % 2) as usize;
        let kinds: Vec<usize> = (0..count)
            .map(|_| (rng.next_u64() % BESTIARY.len() as u64) as usize)
            .collect();
        for (i, &kind) in kinds.iter().enumerate() {
            let (name, health, weapon) = BESTIARY[kind];
            // Monsters of a kind that appears twice are told apart by a letter.
            let twins = kinds.iter().filter(|&&k| k == kind).count();
            let letter = kinds[..i].iter().filter(|&&k| k == kind).count();
            let name = if twins > 1 {
                format!("{name} {}", char::from(b'A' + letter as u8))
            } else {
                name.to_string()
            };
            world.spawn((
                Name(name),
                Monster,
                Health {
                    current: health,
                    max: health,
                },
                weapon,
            ));
        }
        world.insert_resource(rng);
        world.insert_resource(Turn {
            round: 1,
            side: Side::Hero,
        });
        world.insert_resource(Outcome::Ongoing);
        world.init_resource::<CombatLog>();
        world.init_resource::<Tally>();
        world.add_event::<AttackEvent>();
        world.add_event::<DeathEvent>();

        let mut schedule = Schedule::new();
        schedule.set_executor(ExecutorKind::Parallel);
        Self::add_systems(&mut schedule);
        Self { world, schedule }
    }

    /// The battle's phases and systems.
    pub fn add_systems(schedule: &mut Schedule) {
        schedule.configure_sets((Phase::Act, Phase::Resolve, Phase::Cleanup, Phase::Advance).chain());
        schedule.configure_sets(Phase::Act.run_if(battle_ongoing));
        schedule.configure_sets(Phase::Advance.run_if(battle_ongoing));
        schedule.add_systems(
            (
                announce_turn,
                (hero_acts.run_if(heros_turn), monsters_act.run_if(monsters_turn)),
            )
                .chain()
                .in_set(Phase::Act),
        );
        schedule.add_systems(apply_damage.in_set(Phase::Resolve));
        schedule.add_systems((bury_the_dead, announcer).in_set(Phase::Cleanup));
        schedule.add_systems((check_outcome, next_turn).chain().in_set(Phase::Advance));
    }

    /// Plays one move.
    pub fn step(&mut self) {
        self.schedule.run(&mut self.world);
    }

    /// Plays until the battle is decided, at most `MAX_ROUNDS` rounds.
    pub fn fight(&mut self) -> Outcome {
        while self.outcome() == Outcome::Ongoing {
            self.step();
        }
        self.outcome()
    }

    /// How the battle stands.
    pub fn outcome(&self) -> Outcome {
        *self.world.resource::<Outcome>().expect("inserted at start")
    }

    /// The story so far.
    pub fn log(&self) -> &[String] {
        &self.world.resource::<CombatLog>().expect("inserted at start").0
    }

    /// Events sent and handled so far.
    pub fn tally(&self) -> Tally {
        *self.world.resource::<Tally>().expect("inserted at start")
    }

    /// Whose move it is.
    pub fn turn(&self) -> Turn {
        *self.world.resource::<Turn>().expect("inserted at start")
    }

    /// The living combatants, by name, with their health.
    pub fn survivors(&mut self) -> Vec<(String, Health)> {
        let mut q = self.world.query::<(Entity, &Name, &Health)>();
        let mut all: Vec<_> = q
            .iter(&self.world)
            .map(|(e, n, h)| (e, n.0.clone(), *h))
            .collect();
        all.sort_by_key(|s| s.0);
        all.into_iter().map(|(_, n, h)| (n, h)).collect()
    }
}

/// Run condition: the battle is not decided yet.
pub fn battle_ongoing(outcome: Res<Outcome>) -> bool {
    *outcome == Outcome::Ongoing
}

/// Run condition: the hero moves now.
pub fn heros_turn(turn: Res<Turn>) -> bool {
    turn.side == Side::Hero
}

/// Run condition: the monsters move now.
pub fn monsters_turn(turn: Res<Turn>) -> bool {
    turn.side == Side::Monsters
}

/// Heads the move in the log.
pub fn announce_turn(turn: Res<Turn>, mut log: ResMut<CombatLog>) {
    let side = match turn.side {
        Side::Hero => "the hero",
        Side::Monsters => "the monsters",
    };
    log.0.push(format!("-- round {}, {side} --", turn.round));
}

fn roll(rng: &mut Rng, weapon: &Weapon) -> u32 {
    weapon.min + (rng.next_u64() % u64::from(weapon.max - weapon.min + 1)) as u32
}

/// The hero's move: a potion when badly hurt, a whirlwind against every monster on every
/// third move (counted in a `Local`), otherwise a strike at the weakest monster.
pub fn hero_acts(
    mut moves: Local<u32>,
    mut rng: ResMut<Rng>,
    mut log: ResMut<CombatLog>,
    mut tally: ResMut<Tally>,
    mut attacks: EventWriter<AttackEvent>,
    mut hero: Query<(&Name, &Weapon, &mut Health, &mut Potions), With<Hero>>,
    monsters: Query<(Entity, &Health), (With<Monster>, Without<Hero>)>,
) {
    let Ok((name, weapon, mut health, mut potions)) = hero.single_mut() else {
        return;
    };
    if health.current * 3 < health.max && potions.0 > 0 {
        potions.0 -= 1;
        let healed = 20.min(health.max - health.current);
        health.current += healed;
        log.0.push(format!(
            "{} drinks a potion and heals {healed}. {}: {}/{} HP ({} potion{} left)",
            name.0,
            name.0,
            health.current,
            health.max,
            potions.0,
            if potions.0 == 1 { "" } else { "s" }
        ));
        return;
    }
    *moves += 1;
    let mut targets: Vec<(Entity, Health)> = monsters.iter().map(|(e, h)| (e, *h)).collect();
    targets.sort_by_key(|&(e, h)| (h.current, e));
    if targets.is_empty() {
        return;
    }
    if (*moves).is_multiple_of(3) {
        log.0.push(format!("{} spins into a whirlwind!", name.0));
        for (target, _) in targets {
            let damage = roll(&mut rng, weapon).div_ceil(2);
            attacks.send(AttackEvent {
                attacker: name.0.clone(),
                target,
                damage,
                verb: "slashes",
                special: None,
            });
            tally.attacks_sent += 1;
        }
        return;
    }
    let target = targets[0].0;
    if rng.unit() >= weapon.accuracy {
        log.0.push(format!("{} swings and misses.", name.0));
        return;
    }
    let critical = rng.unit() < 0.15;
    let damage = roll(&mut rng, weapon) * if critical { 2 } else { 1 };
    attacks.send(AttackEvent {
        attacker: name.0.clone(),
        target,
        damage,
        verb: weapon.verb,
        special: critical.then_some("critical hit"),
    });
    tally.attacks_sent += 1;
}

/// The monsters' move: each attacks the hero, in spawn order; every fourth move (counted in a
/// `Local`) they are enraged and hit half again as hard.
pub fn monsters_act(
    mut moves: Local<u32>,
    mut rng: ResMut<Rng>,
    mut log: ResMut<CombatLog>,
    mut tally: ResMut<Tally>,
    mut attacks: EventWriter<AttackEvent>,
    hero: Query<Entity, With<Hero>>,
    monsters: Query<(Entity, &Name, &Weapon), With<Monster>>,
) {
    let Ok(hero) = hero.single() else {
        return;
    };
    *moves += 1;
    let enraged = (*moves).is_multiple_of(4);
    if enraged {
        log.0.push("The monsters howl with rage!".to_string());
    }
    let mut attackers: Vec<(Entity, &Name, &Weapon)> = monsters.iter().collect();
    attackers.sort_by_key(|a| a.0);
    for (_, name, weapon) in attackers {
        if rng.unit() >= weapon.accuracy {
            log.0.push(format!("{} misses.", name.0));
            continue;
        }
        let mut damage = roll(&mut rng, weapon);
        if enraged {
            damage += damage.div_ceil(2);
        }
        attacks.send(AttackEvent {
            attacker: name.0.clone(),
            target: hero,
            damage,
            verb: weapon.verb,
            special: enraged.then_some("enraged"),
        });
        tally.attacks_sent += 1;
    }
}

/// Lands every attack sent this move, and sends a [`DeathEvent`] for each combatant that
/// drops to zero. Blows aimed at someone already dead are wasted.
pub fn apply_damage(
    mut attacks: EventReader<AttackEvent>,
    mut deaths: EventWriter<DeathEvent>,
    mut targets: Query<(&Name, &mut Health, Option<&Hero>)>,
    mut log: ResMut<CombatLog>,
    mut tally: ResMut<Tally>,
) {
    for attack in attacks.read() {
        tally.attacks_resolved += 1;
        let Ok((name, mut health, hero)) = targets.get_mut(attack.target) else {
            continue;
        };
        if health.current == 0 {
            continue;
        }
        health.current = health.current.saturating_sub(attack.damage);
        let special = attack.special.map_or(String::new(), |s| format!(" ({s})"));
        log.0.push(format!(
            "{} {} {} for {}{special}. {}: {}/{} HP",
            attack.attacker, attack.verb, name.0, attack.damage, name.0, health.current, health.max
        ));
        if health.current == 0 {
            deaths.send(DeathEvent {
                entity: attack.target,
                name: name.0.clone(),
                side: if hero.is_some() {
                    Side::Hero
                } else {
                    Side::Monsters
                },
            });
            tally.deaths_sent += 1;
        }
    }
}

/// Despawns the fallen.
pub fn bury_the_dead(
    mut commands: Commands,
    mut deaths: EventReader<DeathEvent>,
    mut log: ResMut<CombatLog>,
    mut tally: ResMut<Tally>,
) {
    for death in deaths.read() {
        commands.despawn(death.entity);
        log.0.push(format!("{} falls.", death.name));
        tally.buried += 1;
    }
}

/// Cheers the fallen monsters, counting them in a `Local`.
pub fn announcer(
    mut fallen: Local<u32>,
    mut deaths: EventReader<DeathEvent>,
    mut log: ResMut<CombatLog>,
    mut tally: ResMut<Tally>,
) {
    let this_move = deaths.len();
    for death in deaths.read() {
        tally.announced += 1;
        if death.side == Side::Monsters {
            *fallen += 1;
            if *fallen == 1 {
                log.0.push("First blood!".to_string());
            }
        }
    }
    if this_move >= 2 {
        log.0.push(format!("{this_move} down in one move!"));
    }
}

/// Decides the battle once a side has no one left standing (or after [`MAX_ROUNDS`]).
pub fn check_outcome(
    hero: Query<&Health, With<Hero>>,
    monsters: Query<(), With<Monster>>,
    turn: Res<Turn>,
    mut outcome: ResMut<Outcome>,
    mut log: ResMut<CombatLog>,
) {
    *outcome = match (hero.single(), monsters.is_empty()) {
        (Err(_), _) => Outcome::Won(Side::Monsters),
        (Ok(_), true) => Outcome::Won(Side::Hero),
        _ if turn.round >= MAX_ROUNDS && turn.side == Side::Monsters => Outcome::Draw,
        _ => Outcome::Ongoing,
    };
    match *outcome {
        Outcome::Ongoing => {}
        Outcome::Won(Side::Hero) => {
            let health = hero.single().expect("the hero won");
            log.0.push(format!(
                "The hero wins in round {} with {}/{} HP left.",
                turn.round, health.current, health.max
            ));
        }
        Outcome::Won(Side::Monsters) => log.0.push(format!(
            "The hero has fallen in round {}; the monsters win.",
            turn.round
        )),
        Outcome::Draw => log
            .0
            .push(format!("After {MAX_ROUNDS} rounds both sides withdraw: a draw.")),
    }
}

/// Passes the turn to the other side, starting a new round after the monsters' move.
pub fn next_turn(mut turn: ResMut<Turn>) {
    turn.side = match turn.side {
        Side::Hero => Side::Monsters,
        Side::Monsters => {
            turn.round += 1;
            Side::Hero
        }
    };
}
