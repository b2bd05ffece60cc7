//! The C ABI from C: the checked-in header is what cbindgen generates now, and the example
//! program compiles against it, links the static library, runs, and finds every value intact
//! across close and reopen.

use std::path::PathBuf;

use nvmswap_capi_common::testing::{assert_header_fresh, build_and_run_c_example, c_compiler};

fn manifest_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn the_checked_in_header_is_the_generated_one() {
    assert_header_fresh(env!("OUT_DIR"), &manifest_dir(), "nvmswap_pheap.h");
}

#[test]
fn the_c_example_builds_runs_and_finds_every_value_intact() {
    let Some(cc) = c_compiler() else { return };
    let pool = std::env::temp_dir().join(format!("nvmswap-pheap-demo-{}.pool", std::process::id()));
    let _ = std::fs::remove_file(&pool);
    let run = build_and_run_c_example(
        &cc,
        &manifest_dir(),
        "nvmswap-pheap-capi",
        "nvmswap_pheap_capi",
        "examples/c/pheap_demo.c",
        &[pool.as_os_str()],
    );
    let _ = std::fs::remove_file(&pool);
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(
        stdout.contains("pheap: keys 2000 found 2000 mismatches 0 left 1000"),
        "{stdout}"
    );
}
