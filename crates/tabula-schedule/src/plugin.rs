//! Plugins: one feature's systems, resources, events and states, added to a world in one
//! call.
//!
//! A plugin is anything that can set a world up — most often a plain function
//! `fn(&mut World)` that adds the feature's systems to the frame's schedules, inserts its
//! resources and registers its events. A game is then a list of plugins, each readable (and
//! removable) on its own:
//!
//! ```
//! use std::time::Duration;
//! use tabula::prelude::*;
//!
//! #[derive(Default)]
//! struct Score(u32);
//! struct Scored(u32);
//!
//! fn award(mut scored: EventWriter<Scored>) {
//!     scored.send(Scored(10));
//! }
//! fn keep_score(mut scored: EventReader<Scored>, mut score: ResMut<Score>) {
//!     for s in scored.read() {
//!         score.0 += s.0;
//!     }
//! }
//!
//! /// The scoring feature: its resource, its event and its systems.
//! fn scoring(world: &mut World) {
//!     world.init_resource::<Score>();
//!     world.add_event::<Scored>();
//!     world.add_systems(Update, (award, keep_score.after(award)));
//! }
//!
//! let mut world = World::new();
//! world.add_plugins(scoring);
//! world.run_frame(Duration::from_millis(16));
//! assert_eq!(world.resource::<Score>().unwrap().0, 10);
//! ```

use tabula_core::World;

/// Something that sets a world up: adds systems, resources, events, states. Implemented for
/// every `FnOnce(&mut World)`, and for tuples of plugins (added in order); implement it for
/// a struct when a plugin takes settings.
///
/// ```
/// use tabula::prelude::*;
///
/// struct Spawner {
///     per_frame: u32,
/// }
/// struct PerFrame(u32);
///
/// impl Plugin for Spawner {
///     fn build(self, world: &mut World) {
///         world.insert_resource(PerFrame(self.per_frame));
///     }
/// }
///
/// let mut world = World::new();
/// world.add_plugins((Spawner { per_frame: 3 }, |world: &mut World| {
///     world.insert_resource(7u8);
/// }));
/// assert_eq!(world.resource::<PerFrame>().unwrap().0, 3);
/// assert_eq!(*world.resource::<u8>().unwrap(), 7);
/// ```
pub trait Plugin {
    /// Sets `world` up.
    fn build(self, world: &mut World);
}

impl<F: FnOnce(&mut World)> Plugin for F {
    fn build(self, world: &mut World) {
        self(world)
    }
}

macro_rules! tuple_plugins {
    ($($name:ident),*) => {
        impl<$($name: Plugin),*> Plugin for ($($name,)*) {
            #[allow(non_snake_case)]
            fn build(self, world: &mut World) {
                let ($($name,)*) = self;
                $($name.build(world);)*
            }
        }
    };
}

tuple_plugins!(A);
tuple_plugins!(A, B);
tuple_plugins!(A, B, C);
tuple_plugins!(A, B, C, D);
tuple_plugins!(A, B, C, D, E);
tuple_plugins!(A, B, C, D, E, F);
tuple_plugins!(A, B, C, D, E, F, G);
tuple_plugins!(A, B, C, D, E, F, G, H);

/// [`Plugin`]s on a [`World`].
pub trait WorldPlugins {
    /// Builds `plugins` (one, or a tuple of them, in order) on this world.
    fn add_plugins(&mut self, plugins: impl Plugin) -> &mut Self;
}

impl WorldPlugins for World {
    fn add_plugins(&mut self, plugins: impl Plugin) -> &mut Self {
        plugins.build(self);
        self
    }
}
