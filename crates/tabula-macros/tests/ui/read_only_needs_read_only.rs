// Shared-access entry points refuse terms and parameters that write.
use tabula::prelude::*;
use tabula::schedule::SystemState;

struct Hp(u32);

fn main() {
    let mut world = World::new();
    // `SystemState::get` takes `&World`: only read-only parameters.
    let mut state = SystemState::<Query<&'static mut Hp>>::new(&mut world);
    let _ = state.get(&world);
    // `World::multi_view` takes `&World`: only `&T` terms.
    let _ = world.multi_view::<(&Hp, &mut Hp)>();
}
