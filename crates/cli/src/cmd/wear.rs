//! `nvmswap wear`: seed 001 §4.2's wear-levelling experiment.

use anyhow::bail;

#[derive(clap::Args, Debug, Clone)]
pub struct Args {}

pub fn run(_args: Args) -> anyhow::Result<()> {
    bail!("the wear experiment is not built yet (issue #2)")
}
