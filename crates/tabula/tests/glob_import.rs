//! `use tabula::*;` brings tabula-core's items without shadowing the language's `core`.

#![allow(unused_imports)]

use tabula::*;

#[test]
fn a_glob_import_leaves_core_to_the_language() {
    let mut world = World::new();
    let e = world.spawn((7_u32,));
    assert_eq!(core::mem::size_of_val(world.get::<u32>(e).unwrap()), 4);
    assert_eq!(::core::mem::size_of::<u64>(), 8);
}
