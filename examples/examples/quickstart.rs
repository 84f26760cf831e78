//! The README example: spawn, insert, remove, get.
fn main() {}
