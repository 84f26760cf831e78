//! Fuzzes the public API: the input's bytes decode into World / Commands / Query / Schedule
//! calls (panicking components and systems included), and the world is compared with the
//! naive model after every one. See `crates/tabula-check`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    tabula_check::run_bytes(data);
});
