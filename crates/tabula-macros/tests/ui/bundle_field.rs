// Fields of a derived Bundle that are not components, or not bundles where `#[bundle]` says so.
use std::rc::Rc;

use tabula::prelude::*;

struct Position(f32);

#[derive(Bundle)]
struct Shared {
    position: Position,
    cache: Rc<u32>,
}

#[derive(Bundle)]
struct Nested {
    #[bundle]
    position: Position,
}

fn main() {}
