//! A solar system as an entity hierarchy: the sun is the root, planets are its children and
//! moons are children of planets.
//!
//! Every body has a [`LocalTransform`] (where it sits in its parent's frame) and a
//! [`GlobalTransform`] (where it ends up in the sun's frame), computed each frame by
//! [`propagate_transforms`] walking down from the roots through [`Children`]. [`orbit`]
//! turns the local transforms, and a scripted [`scenario`] changes the tree mid-run through
//! `Commands`: it moves the Moon from Earth to Mars (`set_parent`) and later destroys
//! Jupiter with all its moons (`despawn_recursive`).
//!
//! The frame: `scenario` in `PreUpdate` (its commands are applied at the sync point the
//! schedule inserts before `Update`, so the same frame already sees the new tree), `orbit`
//! in `Update`, then `propagate_transforms` and the clock in `PostUpdate`.
//!
//! ## Why propagation is a plain system, not an exclusive one
//!
//! An exclusive system (`fn(&mut World)`) could walk the tree with `world.children(e)` and
//! `world.get_mut`, but it would stop every other system while it runs. Instead
//! [`propagate_transforms`] declares exactly what it touches: it *reads* `LocalTransform` and
//! `Children` through one query and *writes* `GlobalTransform` through another. The two
//! queries share no component, so they may be used together in one system; and any system
//! that touches none of those (here [`count_frames`]'s clock) runs beside it. The walk is an
//! explicit depth-first stack carrying each parent's global transform, so the cost is one
//! lookup per body and no recursion.

use std::fmt::Write;

use tabula::prelude::*;
use tabula::schedule::ExecutorKind;
use tabula::{Children, Parent, With, Without};

/// Fixed time step, seconds.
pub const DT: f32 = 1.0 / 60.0;

/// A rigid 2D transform: rotate by `angle`, then move by `offset`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Transform2 {
    /// Translation.
    pub offset: (f32, f32),
    /// Rotation, radians, counter-clockwise.
    pub angle: f32,
}

impl Transform2 {
    /// The transform that changes nothing.
    pub const IDENTITY: Self = Self {
        offset: (0.0, 0.0),
        angle: 0.0,
    };

    /// A point mapped by this transform.
    pub fn apply(&self, (x, y): (f32, f32)) -> (f32, f32) {
        let (s, c) = self.angle.sin_cos();
        (c * x - s * y + self.offset.0, s * x + c * y + self.offset.1)
    }

    /// `self` after `child`: maps the child's space straight to the space `self` maps into.
    /// A body's global transform is its parent's global transform `then` its local one.
    pub fn then(&self, child: &Transform2) -> Transform2 {
        Transform2 {
            offset: self.apply(child.offset),
            angle: self.angle + child.angle,
        }
    }

    /// This transform turned by `angle` around the parent's origin.
    pub fn rotated(&self, angle: f32) -> Transform2 {
        Transform2 {
            angle,
            offset: (0.0, 0.0),
        }
        .then(self)
    }
}

/// Where a body sits in its parent's frame (for a root: in the world).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LocalTransform(pub Transform2);

/// Where a body ends up in the world; written only by [`propagate_transforms`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GlobalTransform(pub Transform2);

/// What a body is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// The root.
    Star,
    /// A child of the star.
    Planet,
    /// A child of a planet.
    Moon,
}

/// A named body.
#[derive(Clone, Debug, PartialEq)]
pub struct Body {
    /// Its name.
    pub name: &'static str,
    /// Star, planet or moon.
    pub kind: Kind,
}

/// A body that circles its parent.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Orbit {
    /// Radians per second.
    pub speed: f32,
}

/// The frame clock.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Clock {
    /// Frames simulated.
    pub frame: u64,
}

/// When the scripted changes to the tree happen.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Scenario {
    /// The frame at which the Moon is moved from Earth to Mars.
    pub reparent_at: Option<u64>,
    /// The frame at which Jupiter and its moons are destroyed.
    pub destroy_at: Option<u64>,
}

/// What happened to the tree, one line per change.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Chronicle(pub Vec<String>);

/// How far the Moon orbits from its new planet after the move.
pub const CAPTURED_RADIUS: f32 = 12.0;

/// The planets: name, distance from the sun, orbital period (seconds), moons.
const PLANETS: [(&str, f32, f32, &[(&str, f32, f32)]); 5] = [
    ("Mercury", 40.0, 2.4, &[]),
    ("Venus", 70.0, 6.2, &[]),
    ("Earth", 100.0, 10.0, &[("Moon", 8.0, 2.7)]),
    ("Mars", 150.0, 18.8, &[("Phobos", 5.0, 0.8), ("Deimos", 9.0, 1.6)]),
    (
        "Jupiter",
        260.0,
        40.0,
        &[
            ("Io", 10.0, 1.8),
            ("Europa", 14.0, 3.6),
            ("Ganymede", 19.0, 7.2),
            ("Callisto", 26.0, 16.7),
        ],
    ),
];

/// A running solar system.
pub struct SolarSystem {
    /// The entities and resources.
    pub world: World,
    /// The systems.
    pub schedule: Schedule,
}

fn body(name: &'static str, kind: Kind, radius: f32, period: f32, phase: f32) -> impl Bundle {
    (
        Body { name, kind },
        LocalTransform(
            Transform2 {
                offset: (radius, 0.0),
                angle: 0.0,
            }
            .rotated(phase),
        ),
        GlobalTransform(Transform2::IDENTITY),
        Orbit {
            speed: std::f32::consts::TAU / period,
        },
    )
}

impl SolarSystem {
    /// The sun, five planets and their moons, with the given script and executor.
    pub fn new(script: Scenario, executor: ExecutorKind) -> Self {
        let mut world = World::new();
        let sun = world.spawn((
            Body {
                name: "Sun",
                kind: Kind::Star,
            },
            LocalTransform(Transform2::IDENTITY),
            GlobalTransform(Transform2::IDENTITY),
        ));
        for (i, &(name, radius, period, moons)) in PLANETS.iter().enumerate() {
            let planet = world.spawn(body(name, Kind::Planet, radius, period, i as f32 * 1.3));
            world.set_parent(planet, sun).expect("both were just spawned");
            for (j, &(name, radius, period)) in moons.iter().enumerate() {
                let moon = world.spawn(body(name, Kind::Moon, radius, period, j as f32 * 2.1));
                world.set_parent(moon, planet).expect("both were just spawned");
            }
        }
        world.insert_resource(script);
        world.init_resource::<Clock>();
        world.init_resource::<Chronicle>();

        let mut schedule = Schedule::new();
        schedule.set_executor(executor);
        schedule.add_systems(scenario.in_set(CoreSet::PreUpdate));
        schedule.add_systems(orbit.in_set(CoreSet::Update));
        schedule.add_systems((propagate_transforms, count_frames).in_set(CoreSet::PostUpdate));
        Self { world, schedule }
    }

    /// Simulates one frame.
    pub fn step(&mut self) {
        self.schedule.run(&mut self.world);
    }

    /// The body called `name`, if it exists.
    pub fn find(&mut self, name: &str) -> Option<Entity> {
        let mut q = self.world.query::<(Entity, &Body)>();
        q.iter(&self.world).find(|(_, b)| b.name == name).map(|(e, _)| e)
    }

    /// The tree as indented text, one body per line with its position in the world.
    pub fn tree(&mut self) -> String {
        let mut roots: Vec<Entity> = self
            .world
            .query_filtered::<Entity, (With<Body>, Without<Parent>)>()
            .iter(&self.world)
            .collect();
        roots.sort();
        let mut out = String::new();
        for root in roots {
            self.write_subtree(&mut out, root, "", "");
        }
        out
    }

    fn write_subtree(&self, out: &mut String, entity: Entity, lead: &str, rest: &str) {
        let name = self.world.get::<Body>(entity).map_or("?", |b| b.name);
        let at = self
            .world
            .get::<GlobalTransform>(entity)
            .map_or((f32::NAN, f32::NAN), |g| g.0.offset);
        let label = format!("{lead}{name}");
        writeln!(out, "{label:<22} at ({:>7.1}, {:>7.1})", at.0, at.1).expect("string write");
        let children = self.world.children(entity).unwrap_or(&[]);
        for (i, &child) in children.iter().enumerate() {
            let last = i + 1 == children.len();
            let (branch, next) = if last {
                ("└─ ", "   ")
            } else {
                ("├─ ", "│  ")
            };
            self.write_subtree(out, child, &format!("{rest}{branch}"), &format!("{rest}{next}"));
        }
    }

    /// The changes the scenario made so far.
    pub fn chronicle(&self) -> &[String] {
        &self.world.resource::<Chronicle>().expect("inserted at start").0
    }
}

/// The script: at its frames, moves the Moon from Earth to Mars and destroys Jupiter with
/// its moons, through `Commands`.
pub fn scenario(
    mut commands: Commands,
    clock: Res<Clock>,
    script: Res<Scenario>,
    bodies: Query<(Entity, &Body, Option<&Parent>)>,
    mut chronicle: ResMut<Chronicle>,
) {
    let find = |name: &str| bodies.iter().find(|(_, b, _)| b.name == name);
    let name_of = |entity: Entity| {
        bodies
            .iter()
            .find(|(e, _, _)| *e == entity)
            .map_or("?", |(_, b, _)| b.name)
    };
    if script.reparent_at == Some(clock.frame)
        && let (Some((moon, _, parent)), Some((mars, _, _))) = (find("Moon"), find("Mars"))
    {
        let from = parent.map_or("nothing", |p| name_of(p.get()));
        // A fresh, closer orbit around the new planet.
        commands
            .entity(moon)
            .set_parent(mars)
            .insert((LocalTransform(Transform2 {
                offset: (CAPTURED_RADIUS, 0.0),
                angle: 0.0,
            }),));
        chronicle.0.push(format!(
            "frame {}: the Moon leaves {from} and is captured by Mars",
            clock.frame
        ));
    }
    if script.destroy_at == Some(clock.frame)
        && let Some((jupiter, _, _)) = find("Jupiter")
    {
        commands.entity(jupiter).despawn_recursive();
        chronicle.0.push(format!(
            "frame {}: Jupiter is destroyed, with all its moons",
            clock.frame
        ));
    }
}

/// Turns every orbiting body's local transform around its parent.
pub fn orbit(mut bodies: Query<(&Orbit, &mut LocalTransform)>) {
    bodies.for_each(|(orbit, mut local)| local.0 = local.0.rotated(orbit.speed * DT));
}

/// Computes every [`GlobalTransform`] from the roots down: a body's global transform is its
/// parent's global transform `then` its own local one. Bodies without a `LocalTransform`
/// (and everything below them) are left alone.
pub fn propagate_transforms(
    roots: Query<Entity, (With<LocalTransform>, Without<Parent>)>,
    locals: Query<(&LocalTransform, Option<&Children>)>,
    mut globals: Query<&mut GlobalTransform>,
) {
    let mut stack: Vec<(Entity, Transform2)> =
        roots.iter().map(|root| (root, Transform2::IDENTITY)).collect();
    while let Some((entity, parent)) = stack.pop() {
        let Ok((local, children)) = locals.get(entity) else {
            continue;
        };
        let global = parent.then(&local.0);
        if let Ok(mut slot) = globals.get_mut(entity) {
            slot.0 = global;
        }
        if let Some(children) = children {
            stack.extend(children.iter().map(|&child| (child, global)));
        }
    }
}

/// Advances the clock. Touches nothing `propagate_transforms` does, so they run side by side.
pub fn count_frames(mut clock: ResMut<Clock>) {
    clock.frame += 1;
}
