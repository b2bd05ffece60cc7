//! The C ABI from C: the checked-in header is what cbindgen generates now, and the example
//! program compiles against it, links the static library, runs, and finds every page intact.

use std::path::PathBuf;

use nvmswap_capi_common::testing::{assert_header_fresh, build_and_run_c_example, c_compiler};

fn manifest_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn the_checked_in_header_is_the_generated_one() {
    assert_header_fresh(env!("OUT_DIR"), &manifest_dir(), "nvmswap.h");
}

#[test]
fn the_c_example_builds_runs_and_finds_every_page_intact() {
    let Some(cc) = c_compiler() else { return };
    let run = build_and_run_c_example(
        &cc,
        &manifest_dir(),
        "nvmswap-live-capi",
        "nvmswap",
        "examples/c/pager_demo.c",
        &[],
    );
    let stdout = String::from_utf8_lossy(&run.stdout);
    for path in ["sigbus", "handler"] {
        assert!(
            stdout.contains(&format!("{path}: pages 16384 mismatches 0")),
            "{stdout}"
        );
    }
}
