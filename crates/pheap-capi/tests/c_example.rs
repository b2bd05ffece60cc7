//! The C ABI from C: the checked-in header is what cbindgen generates now, and the example
//! program compiles against it, links the static library, runs, and finds every value intact
//! across close and reopen.

use std::path::{Path, PathBuf};
use std::process::Command;

fn manifest_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn the_checked_in_header_is_the_generated_one() {
    let generated =
        std::fs::read_to_string(Path::new(env!("OUT_DIR")).join("nvmswap_pheap.h")).unwrap();
    let checked_in =
        std::fs::read_to_string(manifest_dir().join("include/nvmswap_pheap.h")).unwrap_or_default();
    assert!(
        generated == checked_in,
        "include/nvmswap_pheap.h is stale: copy {}/nvmswap_pheap.h over it",
        env!("OUT_DIR")
    );
}

/// The directory cargo put this test's profile artefacts in (target/<profile>), where
/// libnvmswap_pheap_capi.a is.
fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    exe.parent() // deps
        .and_then(Path::parent)
        .expect("test binary lives in target/<profile>/deps")
        .to_path_buf()
}

#[test]
fn the_c_example_builds_runs_and_finds_every_value_intact() {
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    if Command::new(&cc).arg("--version").output().is_err() {
        eprintln!("skipping: no C compiler ({cc})");
        return;
    }
    // `cargo test` builds this crate as an rlib only; build the static library a C program
    // links with the same cargo, profile and target directory.
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let built = Command::new(&cargo)
        .args([
            "build",
            "--profile",
            "test",
            "-p",
            "nvmswap-pheap-capi",
            "--lib",
        ])
        .current_dir(manifest_dir())
        .output()
        .unwrap();
    assert!(
        built.status.success(),
        "cargo build of the static library failed: {}",
        String::from_utf8_lossy(&built.stderr)
    );
    let lib = profile_dir().join("libnvmswap_pheap_capi.a");
    assert!(lib.exists(), "{} was not built", lib.display());
    let out = std::env::temp_dir().join(format!("nvmswap-pheap-demo-{}", std::process::id()));
    let build = Command::new(&cc)
        .arg("-std=c11")
        .arg("-Wall")
        .arg("-Werror")
        .arg("-I")
        .arg(manifest_dir().join("include"))
        .arg(manifest_dir().join("examples/c/pheap_demo.c"))
        .arg(&lib)
        .args(["-lpthread", "-ldl", "-lm", "-o"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(
        build.status.success(),
        "cc failed: {}",
        String::from_utf8_lossy(&build.stderr)
    );
    let pool = std::env::temp_dir().join(format!("nvmswap-pheap-demo-{}.pool", std::process::id()));
    let _ = std::fs::remove_file(&pool);
    let run = Command::new(&out).arg(&pool).output().unwrap();
    let _ = std::fs::remove_file(&out);
    let _ = std::fs::remove_file(&pool);
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(
        run.status.success(),
        "demo failed: {stdout} {}",
        String::from_utf8_lossy(&run.stderr)
    );
    assert!(
        stdout.contains("pheap: keys 2000 found 2000 mismatches 0 left 1000"),
        "{stdout}"
    );
}
