//! `nvmswap pressure`: the memory-capacity pressure test on one or more substrates.

use anyhow::bail;

#[derive(clap::Args, Debug, Clone)]
pub struct Args {}

impl Args {
    /// What `nvmswap` with no subcommand runs: sim, bundled configurations.
    pub fn default_main_job() -> Self {
        Args {}
    }
}

pub fn run(_args: Args) -> anyhow::Result<()> {
    bail!("the pressure test is not built yet (issue #3)")
}
