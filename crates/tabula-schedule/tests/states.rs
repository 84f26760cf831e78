//! States across frames: OnEnter/OnExit once per transition and in order, `in_state`
//! gating, deferred and last-wins requests, and same-state requests that do nothing.

use std::time::Duration;

use tabula_core::World;
use tabula_schedule::prelude::*;
use tabula_schedule::state_changed;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
enum Game {
    #[default]
    Menu,
    Playing,
    Over,
}
impl States for Game {}

#[derive(Default)]
struct Log(Vec<String>);

fn log(world: &World) -> Vec<String> {
    world.resource::<Log>().unwrap().0.clone()
}

fn push(name: &'static str) -> impl FnMut(ResMut<Log>) + Clone + Send + Sync + 'static {
    move |mut log: ResMut<Log>| log.0.push(name.to_string())
}

/// What the game asks for next, set by the test between frames and read by `request`.
#[derive(Default)]
struct Want(Vec<Game>);

fn request(mut want: ResMut<Want>, mut next: ResMut<NextState<Game>>) {
    for state in want.0.drain(..) {
        next.set(state);
    }
}

fn frame(world: &mut World) {
    world.run_frame(Duration::from_millis(16));
}

fn game_world() -> World {
    let mut world = World::new();
    world.init_resource::<Log>();
    world.init_resource::<Want>();
    world
        .init_state::<Game>()
        .add_systems(PreUpdate, request)
        .add_systems(OnEnter(Game::Menu), push("enter menu"))
        .add_systems(OnExit(Game::Menu), push("exit menu"))
        .add_systems(OnEnter(Game::Playing), push("enter playing"))
        .add_systems(OnExit(Game::Playing), push("exit playing"))
        .add_systems(OnEnter(Game::Over), push("enter game over"))
        .add_systems(OnExit(Game::Over), push("exit game over"))
        .add_systems(
            Update,
            (
                push("menu").run_if(in_state(Game::Menu)),
                push("play").run_if(in_state(Game::Playing)),
                push("over").run_if(in_state(Game::Over)),
            )
                .chain(),
        );
    world
}

fn want(world: &mut World, states: &[Game]) {
    world.resource_mut::<Want>().unwrap().0.extend_from_slice(states);
}

fn state(world: &World) -> Game {
    **world.resource::<State<Game>>().unwrap()
}

#[test]
fn menu_playing_game_over_and_back_across_frames() {
    let mut world = game_world();
    frame(&mut world);
    frame(&mut world);
    want(&mut world, &[Game::Playing]);
    frame(&mut world);
    frame(&mut world);
    want(&mut world, &[Game::Over]);
    frame(&mut world);
    want(&mut world, &[Game::Menu]);
    frame(&mut world);
    assert_eq!(state(&world), Game::Menu);
    assert_eq!(
        log(&world),
        [
            "enter menu",
            "menu",
            "menu",
            "exit menu",
            "enter playing",
            "play",
            "play",
            "exit playing",
            "enter game over",
            "over",
            "exit game over",
            "enter menu",
            "menu",
        ]
    );
}

#[test]
fn a_request_is_applied_after_pre_update_and_seen_by_the_whole_frame() {
    // A request made in Update waits for the next frame's transition step.
    fn ask_in_update(mut next: ResMut<NextState<Game>>, mut asked: Local<bool>) {
        if !std::mem::replace(&mut *asked, true) {
            next.set(Game::Playing);
        }
    }
    let mut world = World::new();
    world.init_resource::<Log>();
    world
        .init_state::<Game>()
        .add_systems(First, push("first"))
        .add_systems(PreUpdate, push("pre"))
        .add_systems(OnEnter(Game::Playing), push("enter playing"))
        .add_systems(Update, (ask_in_update, push("update")).chain())
        .add_systems(FixedUpdate, push("fixed").run_if(in_state(Game::Playing)));
    world.run_frame(Duration::from_millis(16)); // one fixed step, in Menu: gated
    assert_eq!(state(&world), Game::Menu, "deferred");
    assert_eq!(
        world.resource::<NextState<Game>>().unwrap().pending(),
        Some(&Game::Playing)
    );
    world.run_frame(Duration::from_millis(16));
    assert_eq!(
        log(&world),
        [
            "first",
            "pre",
            "update",
            "first",
            "pre",
            "enter playing",
            "fixed",
            "update"
        ]
    );
}

#[test]
fn the_last_request_of_a_frame_wins() {
    let mut world = game_world();
    frame(&mut world);
    // Three requests before the transition step: one from outside the frame, two from
    // `request` in PreUpdate. The last one wins.
    world.resource_mut::<NextState<Game>>().unwrap().set(Game::Over);
    want(&mut world, &[Game::Menu, Game::Playing]);
    frame(&mut world);
    assert_eq!(state(&world), Game::Playing);
    let entered: Vec<String> = log(&world)
        .into_iter()
        .filter(|l| l.starts_with("enter"))
        .collect();
    assert_eq!(entered, ["enter menu", "enter playing"]);
}

#[test]
fn asking_for_the_current_state_runs_nothing() {
    let mut world = game_world();
    frame(&mut world);
    want(&mut world, &[Game::Menu]);
    frame(&mut world);
    assert_eq!(log(&world), ["enter menu", "menu", "menu"]);
    assert_eq!(world.resource::<NextState<Game>>().unwrap().pending(), None);
}

#[test]
fn a_request_made_in_on_enter_waits_for_the_next_frame() {
    fn skip_menu(mut next: ResMut<NextState<Game>>) {
        next.set(Game::Playing);
    }
    let mut world = game_world();
    world.add_systems(OnEnter(Game::Menu), skip_menu);
    frame(&mut world);
    assert_eq!(state(&world), Game::Menu);
    frame(&mut world);
    assert_eq!(state(&world), Game::Playing);
    assert_eq!(
        log(&world),
        ["enter menu", "menu", "exit menu", "enter playing", "play"]
    );
}

#[test]
fn two_state_types_apply_in_registration_order_and_state_changed_sees_changes() {
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    enum Music {
        Calm,
        Loud,
    }
    impl States for Music {}

    let mut world = game_world();
    world
        .insert_state(Music::Calm)
        .add_systems(OnEnter(Music::Calm), push("enter calm"))
        .add_systems(OnEnter(Music::Loud), push("enter loud"))
        .add_systems(Last, push("game changed").run_if(state_changed::<Game>));
    frame(&mut world);
    frame(&mut world);
    want(&mut world, &[Game::Playing]);
    world.resource_mut::<NextState<Music>>().unwrap().set(Music::Loud);
    frame(&mut world);
    let log = log(&world);
    let order: Vec<&str> = log
        .iter()
        .map(String::as_str)
        .filter(|l| l.starts_with("enter") || l.starts_with("exit") || *l == "game changed")
        .collect();
    assert_eq!(
        order,
        [
            "enter menu",
            "enter calm",
            "game changed", // first sight of the state
            "exit menu",
            "enter playing",
            "enter loud",
            "game changed",
        ]
    );
}

#[test]
fn registering_again_keeps_the_state_and_in_state_is_false_without_it() {
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
    enum Unregistered {
        #[default]
        Only,
    }
    impl States for Unregistered {}

    let mut world = game_world();
    world.add_systems(Update, push("never").run_if(in_state(Unregistered::Only)));
    want(&mut world, &[Game::Playing]);
    frame(&mut world);
    world.insert_state(Game::Over);
    frame(&mut world);
    assert_eq!(state(&world), Game::Playing);
    assert!(!log(&world).contains(&"never".to_string()));
}
