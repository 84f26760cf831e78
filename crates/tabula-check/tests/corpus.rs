//! The fuzz regression corpus: every file in `corpus/` is a fuzz input, replayed through the
//! same decoder, harness and checker as `fuzz/fuzz_targets/api.rs`, on the stable toolchain.
//! A crash the fuzzer finds is fixed and its input added here (see `corpus/README.md`).

use std::path::Path;

use tabula_check::{Bytes, Op, decode_all, encode_all, run_bytes};

fn corpus() -> Vec<(String, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus");
    let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|err| panic!("{}: {err}", dir.display()))
        .map(|entry| entry.expect("a readable corpus entry").path())
        .filter(|path| path.extension().is_none())
        .map(|path| {
            let name = path
                .file_name()
                .expect("a file name")
                .to_string_lossy()
                .into_owned();
            let bytes = std::fs::read(&path).unwrap_or_else(|err| panic!("{}: {err}", path.display()));
            (name, bytes)
        })
        .collect();
    files.sort();
    files
}

#[test]
fn every_corpus_input_replays_cleanly() {
    let files = corpus();
    assert!(
        files.len() >= 10,
        "the corpus went missing: {} files",
        files.len()
    );
    for (name, bytes) in files {
        eprintln!("replaying {name} ({} bytes)", bytes.len());
        run_bytes(&bytes);
    }
}

#[test]
fn decoding_then_encoding_gives_back_the_ops() {
    // The hand-written inputs were written with `encode_all`; decoding any input and
    // encoding the ops again must decode to the same ops, so corpus files stay meaningful.
    for (name, bytes) in corpus() {
        let ops: Vec<Op> = decode_all(&mut Bytes::new(&bytes));
        let again = decode_all(&mut Bytes::new(&encode_all(&ops)));
        assert_eq!(again, ops, "{name}");
    }
}
