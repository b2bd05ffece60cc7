//! Builds the Python package into the project's virtual environment (`.venv`, made by
//! scripts/install-deps) with `maturin develop --profile python-test` (optimised like the other tests;
//! not `--profile test`, which builds the cdylib as a test harness) and runs its tests (tests/test_nvmswap.py),
//! among them a sweep on a local Dask cluster of two workers checked equal to the local run.
//! Skips with a message where the environment is missing (install-deps not run).

use std::path::PathBuf;
use std::process::Command;

#[test]
fn python_package_tests_pass() {
    let crate_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let root = crate_dir.join("../..");
    let venv = std::env::var_os("NVMSWAP_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join(".venv"));
    let python = venv.join("bin/python");
    let maturin = venv.join("bin/maturin");
    let ready = python.exists()
        && maturin.exists()
        && Command::new(&python)
            .args(["-c", "import pandas, distributed"])
            .status()
            .map(|s| s.success())
            .unwrap_or(false);
    if !ready {
        eprintln!(
            "SKIPPED: no Python environment with maturin, pandas and distributed at {} \
             (run scripts/install-deps)",
            venv.display()
        );
        return;
    }
    let st = Command::new(&maturin)
        .args(["develop", "--profile", "python-test"])
        .current_dir(&crate_dir)
        .env("VIRTUAL_ENV", &venv)
        .status()
        .expect("maturin runs");
    assert!(st.success(), "maturin develop failed");
    let st = Command::new(&python)
        .args(["-m", "unittest", "discover", "-v", "-s"])
        .arg(crate_dir.join("tests"))
        .status()
        .expect("python runs");
    assert!(st.success(), "Python tests failed");
}
