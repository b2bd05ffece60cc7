//! `nvmswap`: extend the memory of consumer devices with non-volatile memory, and measure it.

use clap::{Parser, Subcommand};

/// std's `println!`, except that a closed standard output stops the printing, not the
/// command (crate::output).
macro_rules! println {
    () => {
        $crate::output::write($crate::output::Stream::Out, format_args!(""), true)
    };
    ($($arg:tt)*) => {
        $crate::output::write($crate::output::Stream::Out, format_args!($($arg)*), true)
    };
}

/// std's `print!`, with `println!`'s care for a closed standard output.
macro_rules! print {
    ($($arg:tt)*) => {
        $crate::output::write($crate::output::Stream::Out, format_args!($($arg)*), false)
    };
}

/// std's `eprintln!`, except that a closed standard error stops the printing, not the command.
macro_rules! eprintln {
    ($($arg:tt)*) => {
        $crate::output::write($crate::output::Stream::Err, format_args!($($arg)*), true)
    };
}

/// std's `eprint!`, with `eprintln!`'s care for a closed standard error.
macro_rules! eprint {
    ($($arg:tt)*) => {
        $crate::output::write($crate::output::Stream::Err, format_args!($($arg)*), false)
    };
}

mod output;

mod args;
mod cmd;
mod longtable;
mod perfcost;
mod progress;
mod report;
mod sweep_report;
mod trace;
mod units;

#[derive(Parser)]
#[command(
    name = "nvmswap",
    version,
    about = "Extend device memory with a compressed pool and NVM swap, and measure it",
    long_about = "nvmswap models, runs and measures memory extension for consumer devices: DRAM \
                  backed by a compressed in-DRAM pool (zram/zswap style) and a non-volatile swap \
                  tier (NVM on the memory bus, or an SSD behind the block layer).\n\n\
                  Every measuring subcommand runs on one of three substrates: `sim` (a \
                  deterministic model of a whole device), `live` (a user-space pager on \
                  userfaultfd) and `linux` (the running kernel's own swap; needs root).\n\n\
                  With no subcommand, `nvmswap` runs the memory-capacity pressure test in `sim` \
                  on the bundled configurations."
)]
struct Cli {
    /// Only results and errors: no progress, no diagnostics.
    #[arg(short, long, global = true, conflicts_with = "verbose")]
    quiet: bool,
    /// More diagnostics (-v debug, -vv trace).
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    verbose: u8,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// The Chromium memory-capacity pressure test: tabs until the first discard, tab-switch latency.
    Pressure(cmd::pressure::Args),
    /// Seed 001's app relaunch: categories of apps take turns on a phone under memory pressure.
    Relaunch(cmd::relaunch::Args),
    /// Seed 001's wear-levelling experiment: writers and readers on an NVM swap area.
    Wear(cmd::wear::Args),
    /// The device profiles (latency, energy, price, endurance) and the source of every value.
    Devices(cmd::devices::Args),
    /// The linux substrate's machine set-up: apply a configuration, restore, show state (root).
    Linux(cmd::linux::Args),
    /// Random 4 KiB touches over a working set larger than the DRAM budget: fault latency.
    Microbench(cmd::microbench::Args),
    /// Run each linux configuration on the kernel and in sim (calibrated disk) and compare.
    Validate(cmd::validate::Args),
    /// Swap-like I/O through every I/O scheduler x completion mode: Q2D, D2C, Q2C, CPU time.
    Iosched(cmd::iosched::Args),
    /// Seed 004's persistent heap on NVM: PHT benchmark (vs libpmemobj), crash checker, dual use.
    Pheap(cmd::pheap::Args),
    /// A grid of configuration fields and workload parameters, several seeds per point, in
    /// parallel; resumable; long-format table and plots with 95 % intervals.
    Sweep(cmd::sweep::Args),
    /// The tab model measured on real Chromium: `nvmswap workload measure` (root).
    Workload(cmd::workload::Args),
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    progress::init(cli.quiet, cli.verbose);
    let result = match cli.command {
        None => cmd::pressure::run(cmd::pressure::Args::default_main_job()),
        Some(Command::Pressure(args)) => cmd::pressure::run(args),
        Some(Command::Relaunch(args)) => cmd::relaunch::run(args),
        Some(Command::Wear(args)) => cmd::wear::run(args),
        Some(Command::Devices(args)) => cmd::devices::run(args),
        Some(Command::Linux(args)) => cmd::linux::run(args),
        Some(Command::Microbench(args)) => cmd::microbench::run(args),
        Some(Command::Validate(args)) => cmd::validate::run(args),
        Some(Command::Iosched(args)) => cmd::iosched::run(args),
        Some(Command::Pheap(args)) => cmd::pheap::run(args),
        Some(Command::Sweep(args)) => cmd::sweep::run(args),
        Some(Command::Workload(args)) => cmd::workload::run(args),
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("nvmswap: error: {}", error_text(&err));
            std::process::ExitCode::from(2)
        }
    }
}

/// The error and its causes on one line, each said once: an error whose message already quotes
/// its cause (thiserror's `{source}`) does not have that cause printed again.
fn error_text(err: &anyhow::Error) -> String {
    let mut text = String::new();
    for cause in err.chain() {
        let c = cause.to_string();
        if text.contains(&c) {
            continue;
        }
        if !text.is_empty() {
            text.push_str(": ");
        }
        text.push_str(&c);
    }
    text
}
