//! `#[derive(SystemParam)]`: a struct of parameters is one parameter, whose access is its
//! fields' together.

use std::panic::{AssertUnwindSafe, catch_unwind};

use tabula::prelude::*;
use tabula::schedule::{EventReader, EventWriter, IntoSystem, System};

#[derive(Debug, Clone, Copy, PartialEq)]
struct Pos(f32);
#[derive(Debug, Clone, Copy, PartialEq)]
struct Vel(f32);
struct Dt(f32);
#[derive(Default)]
struct Moves(u32);
#[derive(Debug, Clone, Copy, PartialEq)]
struct Bump(u32);

#[derive(SystemParam)]
struct Movement<'w, 's> {
    movers: Query<'w, 's, (&'static mut Pos, &'static Vel)>,
    dt: Res<'w, Dt>,
    moves: ResMut<'w, Moves>,
    runs: Local<'s, u32>,
}

impl Movement<'_, '_> {
    fn step(&mut self) {
        let dt = self.dt.0;
        self.movers.for_each(|(mut p, v)| p.0 += v.0 * dt);
        *self.runs += 1;
        self.moves.0 = *self.runs;
    }
}

fn movement(mut m: Movement) {
    m.step();
}

fn world() -> World {
    let mut world = World::new();
    world.insert_resource(Dt(0.5));
    world.init_resource::<Moves>();
    world.add_event::<Bump>();
    world
}

#[test]
fn a_derived_param_fetches_its_fields_and_keeps_its_locals() {
    for executor in [ExecutorKind::SingleThreaded, ExecutorKind::Parallel] {
        let mut world = world();
        let e = world.spawn((Pos(0.0), Vel(4.0)));
        let mut schedule = Schedule::new();
        schedule.set_executor(executor);
        schedule.add_systems(movement);
        schedule.run(&mut world);
        schedule.run(&mut world);
        assert_eq!(world.get::<Pos>(e).unwrap().0, 4.0);
        assert_eq!(world.resource::<Moves>().unwrap().0, 2);
    }
}

/// Lifetimes may be left out when unused; tuple structs, unit structs, generic parameters
/// and deferred fields (commands, events) work too.
#[derive(SystemParam)]
struct Clock<'w>(Res<'w, Dt>);

#[derive(SystemParam)]
struct Nothing;

#[derive(SystemParam)]
struct Spawner<'w, 's, T: Send + Sync + 'static + Clone> {
    commands: Commands<'w, 's>,
    template: Res<'w, Template<T>>,
    bumps: EventWriter<'w, Bump>,
}

struct Template<T>(T);

#[derive(SystemParam)]
struct Bumps<'w, 's> {
    reader: EventReader<'w, 's, Bump>,
}

#[test]
fn tuple_unit_generic_and_deferred_params() {
    fn spawn(clock: Clock, _nothing: Nothing, mut spawner: Spawner<Pos>) {
        let pos = spawner.template.0;
        spawner.commands.spawn((Pos(pos.0 + clock.0.0), Vel(0.0)));
        spawner.bumps.send(Bump(1));
    }
    fn count(mut bumps: Bumps, mut moves: ResMut<Moves>) {
        moves.0 += bumps.reader.read().map(|b| b.0).sum::<u32>();
    }
    let mut world = world();
    world.insert_resource(Template(Pos(10.0)));
    let mut schedule = Schedule::new();
    schedule.add_systems((spawn, count.after(spawn)));
    schedule.run(&mut world);
    let mut q = world.query::<&Pos>();
    assert_eq!(q.iter(&world).map(|p| p.0).collect::<Vec<_>>(), [10.5]);
    assert_eq!(world.resource::<Moves>().unwrap().0, 1);
}

#[test]
fn the_schedule_orders_by_every_fields_access() {
    fn reads_pos(_q: Query<&Pos>) {}
    fn writes_dt(_dt: ResMut<Dt>) {}
    fn reads_vel(_q: Query<&Vel>) {}
    let mut world = world();
    let mut schedule = Schedule::new();
    schedule.add_systems((movement, reads_pos, writes_dt, reads_vel));
    let edges = schedule.dependencies(&mut world).unwrap();
    let reason = |after: &str| {
        edges
            .iter()
            .find(|d| d.before.ends_with("::movement") && d.after.ends_with(after))
            .map(|d| d.reason.as_str())
    };
    assert_eq!(reason("reads_pos"), Some("data conflict on `Pos`"));
    assert_eq!(reason("writes_dt"), Some("data conflict on `Dt`"));
    assert_eq!(reason("reads_vel"), None, "both only read `Vel`: {edges:?}");
    assert_eq!(edges.len(), 2, "{edges:?}");
}

#[test]
fn fields_are_checked_against_each_other_and_the_systems_other_parameters() {
    #[derive(SystemParam)]
    struct Aliasing<'w, 's> {
        _write: Query<'w, 's, &'static mut Pos>,
        _read: Query<'w, 's, &'static Pos>,
    }
    fn inner(_a: Aliasing) {}
    fn outer(_m: Movement, _pos: Query<&Pos>) {}
    for message in [init_panic(inner), init_panic(outer)] {
        assert!(message.starts_with("system `"), "{message}");
        assert!(message.contains("conflicts with parameter `"), "{message}");
        assert!(message.contains("` on `Pos`"), "{message}");
    }
}

/// A derived param holding a `ParamSet`: members spell their query data out as `'static`.
#[derive(SystemParam)]
struct Healing<'w, 's> {
    set: ParamSet<'w, 's, (Query<'w, 's, &'static mut Pos>, Query<'w, 's, &'static Pos>)>,
}

#[test]
fn a_derived_param_may_hold_a_param_set() {
    fn heal(mut h: Healing, mut moves: ResMut<Moves>) {
        h.set.p0().for_each(|mut p| p.0 += 1.0);
        moves.0 = h.set.p1().iter().map(|p| p.0 as u32).sum();
    }
    let mut world = world();
    world.spawn((Pos(1.0),));
    let mut schedule = Schedule::new();
    schedule.add_systems(heal);
    schedule.run(&mut world);
    assert_eq!(world.resource::<Moves>().unwrap().0, 2);
}

fn init_panic<M>(system: impl IntoSystem<(), M>) -> String {
    let mut system = system.into_system();
    let mut world = world();
    let err = catch_unwind(AssertUnwindSafe(|| system.initialize(&mut world))).unwrap_err();
    err.downcast_ref::<String>().cloned().unwrap()
}
