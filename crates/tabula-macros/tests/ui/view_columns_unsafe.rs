// A multi-component view's per-archetype columns read the columns' changed floors, which
// only a view made from `&mut World` may do: `ViewData::columns` is an `unsafe fn`.
use tabula::query::RunTicks;
use tabula::{ViewData, World};

struct Hp(u32);

fn main() {
    let mut world = World::new();
    world.spawn((Hp(1),));
    let ticks = RunTicks {
        last_run: Default::default(),
        this_run: Default::default(),
    };
    for archetype in world.archetypes() {
        let _ = <(&mut Hp,) as ViewData>::columns(archetype, Some(ticks));
    }
}
