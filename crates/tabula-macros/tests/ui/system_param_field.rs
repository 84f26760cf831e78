// A field of a derived SystemParam that is not a system parameter.
use tabula::prelude::*;

struct Dt(f32);

#[derive(SystemParam)]
struct Clock<'w> {
    dt: Res<'w, Dt>,
    frames: u32,
}

fn main() {}
