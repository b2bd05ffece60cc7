//! Helpers shared by the CLI's integration tests.

use std::process::{Command, Output};

/// Runs the built `nvmswap` binary with `args`.
pub fn nvmswap(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_nvmswap"))
        .args(args)
        .output()
        .expect("binary runs")
}

/// A per-process scratch path under the temporary directory (not created).
pub fn scratch(prefix: &str, name: &str) -> String {
    std::env::temp_dir()
        .join(format!("nvmswap-{prefix}-{}-{name}", std::process::id()))
        .display()
        .to_string()
}
