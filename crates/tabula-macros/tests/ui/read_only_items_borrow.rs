// Read-only items of a mutable query or view borrow it (or the world), so no mutable item of
// the same data can be made while one lives: each function below must be refused by the
// borrow checker.
use tabula::prelude::*;
use tabula::schedule::SystemState;

struct Hp(u32);

// `Query::iter` on a `&mut` query, then `get_mut` inside the loop.
fn iter_then_get_mut(mut hp: Query<&'static mut Hp>, target: Entity) {
    for read in hp.iter() {
        let mut write = hp.get_mut(target).unwrap();
        write.0 = read.0;
    }
}

// `get` kept across `get_mut` of the same query.
fn get_then_get_mut(mut hp: Query<&'static mut Hp>, target: Entity) {
    let read = hp.get(target).unwrap();
    let mut write = hp.get_mut(target).unwrap();
    write.0 = read.0;
}

// `single` kept across `single_mut`.
fn single_then_single_mut(mut hp: Query<&'static mut Hp>) {
    let read = hp.single().unwrap();
    let mut write = hp.single_mut().unwrap();
    write.0 = read.0;
}

// `for x in &query` kept across `for x in &mut query`.
fn shared_loop_then_mut_loop(mut hp: Query<&'static mut Hp>) {
    let first = (&hp).into_iter().next().unwrap();
    for mut write in &mut hp {
        write.0 = first.0;
    }
}

// `QueryState::iter(&World)` items of a `&mut` query kept across `iter_mut(&mut World)`.
fn state_iter_then_iter_mut(world: &mut World) {
    let mut state = world.query::<&mut Hp>();
    let read = state.iter(world).next().unwrap();
    for mut write in state.iter_mut(world) {
        write.0 = read.0;
    }
}

// `SystemState::get(&World)` items kept across `get_mut(&mut World)` of another state.
fn system_state_get_then_get_mut(world: &mut World) {
    let mut reads = SystemState::<Query<&'static Hp>>::new(world);
    let mut writes = SystemState::<Query<&'static mut Hp>>::new(world);
    let read = reads.get(world);
    let mut write = writes.get_mut(world);
    for mut hp in write.iter_mut() {
        hp.0 = read.iter().count() as u32;
    }
}

// Two fetches of one state at once.
fn system_state_twice(world: &mut World) {
    let mut state = SystemState::<Query<&'static mut Hp>>::new(world);
    let first = state.get_mut(world);
    let second = state.get_mut(world);
    drop((first, second));
}

// A multi-component view's shared item kept across its `get_mut`.
fn multi_view_get_then_get_mut(world: &mut World, target: Entity) {
    let mut view = world.multi_view_mut::<(&mut Hp,)>();
    let (read,) = view.get(target).unwrap();
    let (mut write,) = view.get_mut(target).unwrap();
    write.0 = read.0;
}

// A multi-component view kept across a structural change.
fn multi_view_across_despawn(world: &mut World, target: Entity) {
    let view = world.multi_view::<(&Hp,)>();
    world.despawn(target).unwrap();
    let _ = view.get(target);
}

fn main() {}
