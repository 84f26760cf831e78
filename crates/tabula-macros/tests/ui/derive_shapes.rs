// Shapes the derives refuse, each with what to write instead.
use tabula::prelude::*;

struct Dt(f32);

#[derive(SystemParam)]
enum Either<'w> {
    Time(Res<'w, Dt>),
}

#[derive(SystemParam)]
struct Misnamed<'a> {
    dt: Res<'a, Dt>,
}

#[derive(Bundle)]
struct Position(f32, f32);

#[derive(Bundle)]
struct Ship {
    position: (f32, f32),
}

fn main() {}
