//! The derives' and `ParamSet`'s misuse, and the messages that say what to do instead
//! (`tests/ui/*.stderr`; after a deliberate change of a message, regenerate them with
//! `TRYBUILD=overwrite cargo test -p tabula-macros --test compile_fail` and review the diff).

#[test]
fn misuse_is_refused_with_advice() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("tests/ui/*.rs");
}
