//! `nvmswap linux setup|restore|status`: apply a linux configuration and leave it applied, put the
//! machine back from the state file, or show the swap-related state.

use std::path::PathBuf;

use anyhow::Context;
use clap::{Args as ClapArgs, Subcommand};

use nvmswap_linux::state::{default_state_path, MachineSnapshot, StateFile};
use nvmswap_linux::{LinuxConfig, Setup};

#[derive(ClapArgs)]
pub struct Args {
    #[command(subcommand)]
    action: Action,
}

#[derive(Subcommand)]
enum Action {
    /// Apply a configuration (memory cgroup, swap, zswap, scheduler, sysctls) and leave it
    /// applied; the prior state goes to the state file for `nvmswap linux restore`.
    Setup {
        /// A bundled configuration (linux-zram, linux-swapfile, linux-zswap) or a TOML file.
        config: String,
        /// Where the prior state and the journal of changes are written.
        #[arg(long, default_value_os_t = default_state_path())]
        state_file: PathBuf,
    },
    /// Undo every change recorded in the state file (after `setup`, or after a crashed run),
    /// then compare the machine with the state recorded before.
    Restore {
        #[arg(long, default_value_os_t = default_state_path())]
        state_file: PathBuf,
    },
    /// Print the swap-related state (active swaps, zswap, sysctls, schedulers, zram, cgroups)
    /// and any pending state file.
    Status {
        #[arg(long, default_value_os_t = default_state_path())]
        state_file: PathBuf,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
}

pub fn run(args: Args) -> anyhow::Result<()> {
    match args.action {
        Action::Setup { config, state_file } => {
            let cfg = LinuxConfig::load(&config)?;
            let setup = Setup::apply(&cfg, &state_file)?;
            eprintln!(
                "applied {} (cgroup {}, swap device {}); undo with `nvmswap linux restore --state-file {}`",
                cfg.name,
                setup.cgroup.display(),
                setup.swap_device.as_deref().unwrap_or("none"),
                state_file.display()
            );
            setup.keep();
            Ok(())
        }
        Action::Restore { state_file } => {
            let diffs = nvmswap_linux::state::restore_from_file(&state_file)
                .with_context(|| format!("restoring from {}", state_file.display()))?;
            if diffs.is_empty() {
                eprintln!("restored: the machine matches the state recorded before the run");
                Ok(())
            } else {
                anyhow::bail!("restored, but differences remain: {}", diffs.join("; "))
            }
        }
        Action::Status { state_file, json } => {
            let now = MachineSnapshot::capture()?;
            let pending = state_file
                .exists()
                .then(|| StateFile::load(&state_file))
                .transpose()?;
            if json {
                let v = serde_json::json!({ "state": now, "pending_state_file": pending });
                println!("{}", serde_json::to_string_pretty(&v)?);
                return Ok(());
            }
            println!("swaps:      {:?}", now.swaps);
            println!("zswap:      {:?}", now.zswap);
            println!("sysctls:    {:?}", now.sysctls);
            println!("schedulers: {:?}", now.schedulers);
            println!("zram:       {:?}", now.zram_devices);
            println!("cgroups:    {:?}", now.memory_cgroups);
            match pending {
                Some(s) => println!(
                    "pending state file {} from pid {} with {} changes: run `nvmswap linux restore`",
                    state_file.display(),
                    s.pid,
                    s.changes.len()
                ),
                None => println!("no pending state file"),
            }
            Ok(())
        }
    }
}
