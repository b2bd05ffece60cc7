//! `nvmswap linux setup|restore|status`: apply a linux configuration and leave it applied, put the
//! machine back from the state file, or show the swap-related state.

use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::{Args as ClapArgs, Subcommand};

use nvmswap_linux::state::{default_state_path, MachineSnapshot, StateFile};
use nvmswap_linux::{LinuxConfig, Setup};

#[derive(ClapArgs)]
pub struct Args {
    #[command(subcommand)]
    action: Action,
}

/// The order of `nvmswap linux cpu-wake`'s wake-ups (nvmswap_linux::cpu_wake_probe::GapOrder).
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
enum WakeOrder {
    Shuffled,
    Blocks,
    AfterLong,
    AfterOneLong,
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
        /// The state file to undo; without it, every state file in /var/tmp left by a process
        /// that is no longer running.
        #[arg(long)]
        state_file: Option<PathBuf>,
    },
    /// Run the pressure test on the kernel with one configuration (the same run `nvmswap pressure
    /// --substrate linux` makes) and print its result; the machine is restored afterwards.
    Pressure {
        /// A bundled configuration (linux-zram, linux-swapfile, linux-zswap) or a TOML file.
        config: String,
        /// Shrinks tab footprints, cgroup limit and swap size together, and the workload's sleeps
        /// and scroll pauses (slept for real at scale x their length); CPU times are not scaled.
        #[arg(long, default_value_t = 0.25)]
        scale: f64,
        /// Seeds the tab page contents.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        #[arg(long, default_value_os_t = default_state_path())]
        state_file: PathBuf,
        /// Print the nvmswap.results/1 JSON object on stdout.
        #[arg(long)]
        json: bool,
    },
    /// Measure this machine: compression/decompression per page through zram (each algorithm the
    /// kernel offers of lzo, lzo-rle, lz4); the swap disk (a 4 KiB O_DIRECT request's own time on
    /// the device from a block trace, closed loops, request sizes, wake-up after idle, batches);
    /// the kernel's software paths (minor fault, swap-out and swap-in, zswap and zram, limit
    /// reclaim, TLB shootdowns) and the tab model's own costs. Writes the swap disk's device
    /// profile and the costs sim takes (docs/commands/linux.md). Stops, writing nothing, when
    /// other processes keep more than a quarter of a CPU busy: the machine must be quiet.
    Calibrate {
        /// Directory on the disk that holds the swap file (probed with a 16 MiB scratch file).
        #[arg(long, default_value = "/var/tmp")]
        swap_dir: PathBuf,
        /// Where the device profile (TOML, profiles/devices format) is written.
        #[arg(long, default_value = "profiles/linux/calibrated-disk.toml")]
        out: PathBuf,
        /// Where this machine's software costs (minor fault, compression and decompression per
        /// algorithm) are written, for sim's `costs.*` (`nvmswap validate --costs`) [default:
        /// calibrated-costs.toml beside --out, so profiles/linux/calibrated-costs.toml unless
        /// --out moves it: a calibration written elsewhere leaves the bundled pair alone].
        #[arg(long)]
        costs_out: Option<PathBuf>,
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Runs of the whole calibration, one after another; with more than one, each number
        /// written is the median of the runs' (the runs' values are listed in each file's
        /// header), except the disk's wake-up waits, whose runs are pooled (docs/commands/
        /// linux.md). One run moves with whatever else the machine does.
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=20))]
        runs: u32,
        /// Print the measurements as JSON on stdout.
        #[arg(long)]
        json: bool,
    },
    /// Measure what reclaim pays to write out a page whose owner runs on another CPU, or whose
    /// owner's CPU idles on `init_mm` (the remote TLB shootdown before the write): an owner
    /// process's pages paged out from another CPU, 2 MiB per call through a scratch swap file,
    /// while the owner in turn sleeps, sleeps elsewhere with its CPU left on `init_mm`, or
    /// spins. Prints each phase's time and TLB shootdowns per page and one flush's cost to
    /// a running and to an idle CPU. `calibrate` runs it too. Needs root and two CPUs; the
    /// machine is restored.
    Shootdown {
        /// Directory on the disk for the scratch swap file (208 MiB).
        #[arg(long, default_value = "/var/tmp")]
        swap_dir: PathBuf,
        /// Runs of the probe, one after another.
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=20))]
        repeat: u32,
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Print the runs as JSON on stdout.
        #[arg(long)]
        json: bool,
    },
    /// Measure how long a task woken onto an idle CPU waits to run, by how long that CPU had
    /// idled: a thread on CPU 0 blocked in a read, woken by a write from the last CPU after
    /// gaps of 10 µs to 20 ms (in a virtual machine a vCPU halted briefly is still in the host's
    /// halt polling). Prints each gap's measured idle time and the wait's p50/p90/p99, then
    /// the `cpu_wake_curve` line `calibrate` writes into the costs file. Needs two CPUs; changes
    /// nothing on the machine.
    CpuWake {
        /// Wake-ups per gap.
        #[arg(long, default_value_t = nvmswap_linux::cpu_wake_probe::CPU_WAKE_ROUNDS as u32, value_parser = clap::value_parser!(u32).range(1..=10_000))]
        rounds: u32,
        /// `shuffled`: one wake-up per gap each round, the gaps in a new shuffled order each
        /// round (what `calibrate` runs); `blocks`: each gap's wake-ups back to back, so the
        /// CPU has idled the same gap before each; `after-long`: as shuffled, each wake-up
        /// after five unmeasured ones that follow 2 ms of idle (a host that adapts its halt
        /// polling to a vCPU's recent halts polls for the second order's short gaps and not
        /// for the third's); `after-one-long`: as shuffled, each wake-up after eight
        /// unmeasured ones after 190 µs of idle and one after 2 ms (a host that halves its
        /// polling on a long halt, as KVM's default does, still polls for the short gaps; one
        /// that resets it does not).
        #[arg(long, value_enum, default_value_t = WakeOrder::Shuffled)]
        order: WakeOrder,
        /// Run what `calibrate` runs for the host's halt polling instead: the blocks,
        /// after-long and after-one-long orders, then the `cpu_halt_poll` line they give (or
        /// why none).
        #[arg(long, conflicts_with = "order")]
        halt_poll: bool,
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Print the measurements as JSON on stdout.
        #[arg(long)]
        json: bool,
    },
    /// Measure what a tab process holds in its memory cgroup beyond its own pages (page tables,
    /// kernel stack and structures, its fault buffer): tabs spawned as a run spawns them, 16
    /// of 256 pages and 16 of 4,096, into a cgroup with room for all; each size's charge less
    /// its pages, per tab, and the `tab_charged_*` lines `calibrate` writes into the costs
    /// file. Needs root; the machine is restored.
    TabMemory {
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Print the measurements as JSON on stdout.
        #[arg(long)]
        json: bool,
    },
    /// Check a device profile against the disk it describes: bursts like reclaim's (N requests
    /// of P pages issued together, writes to consecutive and reads to random offsets), the
    /// disk's D2C from the block tracepoints beside the profile's model of the same bursts.
    /// Nothing is fitted; the machine is restored afterwards.
    CheckDevice {
        /// The profile to check (written by `nvmswap linux calibrate`).
        #[arg(long, default_value = "profiles/linux/calibrated-vda.toml")]
        profile: PathBuf,
        /// Directory on the disk the profile describes (a 64 MiB scratch file goes there).
        #[arg(long, default_value = "/var/tmp")]
        swap_dir: PathBuf,
        /// Bursts of each kind [default: 300]; with --completion-cpu, rounds the placements take
        /// turns in [default: 6].
        #[arg(long)]
        rounds: Option<u32>,
        /// Instead of the bursts, time lone 4 KiB requests (2 ms apart) with the disk's
        /// completion interrupt's CPU idle, kept busy by a spinning thread, or running the
        /// issuer itself: what a request pays when its interrupt has to wake a halted CPU. The
        /// interrupt is found from /proc/interrupts; needs two CPUs. The profile is not used.
        #[arg(long, conflicts_with = "replay")]
        completion_cpu: bool,
        /// Instead of the bursts, replay a recorded request stream (the blk_requests.csv of
        /// `nvmswap pressure --substrate linux --blk-requests`): each request at its recorded
        /// dispatch time, on an idle disk and through the profile's model.
        #[arg(long)]
        replay: Option<PathBuf>,
        /// With --replay: also write each request's D2C on the disk and in the model to this
        /// CSV (op, offset, bytes, d_ns, disk_d2c_ns, model_d2c_ns), to study where they part.
        #[arg(long, requires = "replay")]
        replay_requests: Option<PathBuf>,
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Print the rows as JSON on stdout.
        #[arg(long)]
        json: bool,
    },
    /// Replay core's EEVDF model (what sim schedules the tabs with) on the kernel's own
    /// schedule: for every wake-up of the driver's tasks onto a CPU running another of them,
    /// the model's decision (preempt or wait, and why) beside how the kernel's running task
    /// left that CPU. The trace is tracefs text with sched_switch, sched_wakeup and
    /// sched_process_fork, e.g. `sudo scripts/tlb-init-mm-trace OUT nvmswap pressure
    /// --substrate linux ...`. Reads the file only.
    WakeupReplay {
        /// The trace (tracefs `trace` text).
        trace: PathBuf,
        /// Print the replay as JSON on stdout.
        #[arg(long)]
        json: bool,
    },
    /// Print the swap-related state (active swaps, zswap, sysctls, schedulers, zram, cgroups)
    /// and any pending state file.
    Status {
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
            tracing::info!(
                "applied {} (cgroup {}, swap device {}); undo with `nvmswap linux restore` (state file {})",
                cfg.name,
                setup.cgroup.display(),
                setup.swap_device.as_deref().unwrap_or("none"),
                state_file.display()
            );
            setup.keep();
            Ok(())
        }
        Action::Restore { state_file } => {
            let files = match state_file {
                Some(f) => vec![f],
                None => nvmswap_linux::state::orphaned_state_files(),
            };
            if files.is_empty() {
                tracing::info!("nothing to restore: no state file left by a finished process");
                return Ok(());
            }
            let mut diffs = Vec::new();
            for f in files {
                tracing::info!("restoring from {}", f.display());
                diffs.extend(
                    nvmswap_linux::state::restore_from_file(&f)
                        .with_context(|| format!("restoring from {}", f.display()))?,
                );
            }
            if diffs.is_empty() {
                tracing::info!("restored: the machine matches the state recorded before the run");
                Ok(())
            } else {
                anyhow::bail!("restored, but differences remain: {}", diffs.join("; "))
            }
        }
        Action::Pressure {
            config,
            scale,
            seed,
            state_file,
            json,
        } => {
            let opts = nvmswap_linux::PressureOptions {
                seed,
                scale,
                state_file: Some(state_file),
                ..Default::default()
            };
            let out = nvmswap_linux::run_pressure(&config, &opts, &StderrProgress)?;
            let r = &out.result;
            if json {
                let report =
                    nvmswap_core::results::RunsReport::new("linux pressure", seed, vec![r.clone()]);
                println!("{}", serde_json::to_string_pretty(&report)?);
            } else {
                println!(
                    "{}: tabs before first discard {}, discards {}, switches {}, switch ms mean {:.1} p50 {:.1} p99 {:.1}, faults {} (p50 {:.1} us, p99 {:.1} us), swap in {} MiB out {} MiB, {:.1} s",
                    r.config, r.tabs_opened, r.discards, r.switches, r.switch_latency_ms.mean,
                    r.switch_latency_ms.p50, r.switch_latency_ms.p99, r.faults, r.fault_latency_us.p50,
                    r.fault_latency_us.p99, r.swap_in_bytes >> 20, r.swap_out_bytes >> 20, r.wall_s
                );
            }
            Ok(())
        }
        Action::Calibrate {
            swap_dir,
            out,
            costs_out,
            seed,
            runs,
            json,
        } => {
            let costs_out = costs_out.unwrap_or_else(|| costs_beside(&out));
            // Before the minutes of measuring, so a missing directory does not lose them.
            for path in [&out, &costs_out] {
                if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                    std::fs::create_dir_all(dir)
                        .with_context(|| format!("creating {}", dir.display()))?;
                }
            }
            let (cals, profile, costs) = calibrate_runs(&swap_dir, seed, runs, |i, cal| {
                if !json {
                    if runs > 1 {
                        println!("run {}/{runs}", i + 1);
                    }
                    print_calibration(cal);
                }
            })?;
            std::fs::write(&out, &profile).with_context(|| format!("writing {}", out.display()))?;
            tracing::info!("wrote {}", out.display());
            std::fs::write(&costs_out, &costs)
                .with_context(|| format!("writing {}", costs_out.display()))?;
            tracing::info!("wrote {}", costs_out.display());
            if json {
                let mut v = serde_json::json!({
                    "schema": "nvmswap.calibration/1",
                    "calibration": cals[0],
                });
                if runs > 1 {
                    v["runs"] = serde_json::to_value(&cals)?;
                }
                println!("{}", serde_json::to_string_pretty(&v)?);
            }
            Ok(())
        }
        Action::Shootdown {
            swap_dir,
            repeat,
            seed,
            json,
        } => {
            nvmswap_linux::require_root()?;
            let state_path = nvmswap_linux::state::default_state_path();
            let mut runs = Vec::new();
            for r in 0..repeat {
                let p = nvmswap_linux::shootdown::probe_remote_shootdown(
                    &swap_dir,
                    seed + r as u64,
                    &state_path,
                )?;
                if !json {
                    print!("{}", nvmswap_linux::shootdown::comment(&p));
                }
                runs.push(p);
            }
            if json {
                let v = serde_json::json!({ "schema": "nvmswap.shootdown/1", "runs": runs });
                println!("{}", serde_json::to_string_pretty(&v)?);
            }
            Ok(())
        }
        Action::CpuWake {
            rounds,
            order,
            halt_poll,
            seed,
            json,
        } => {
            use nvmswap_linux::cpu_wake_probe as probe;
            if halt_poll {
                let p = probe::probe_halt_poll(rounds as usize, seed)?;
                if json {
                    let costs = p.costs();
                    let v = serde_json::json!({
                        "schema": "nvmswap.cpu_wake/1",
                        "halt_poll": p,
                        "cpu_halt_poll": costs.as_ref().ok(),
                        "cpu_halt_poll_none": costs.as_ref().err(),
                    });
                    println!("{}", serde_json::to_string_pretty(&v)?);
                    return Ok(());
                }
                for one in [&p.blocks, &p.after_long, &p.after_one_long] {
                    print_cpu_wake_gaps(one);
                }
                print!("{}", probe::halt_poll_costs_lines(&p));
                return Ok(());
            }
            let order = match order {
                WakeOrder::Shuffled => probe::GapOrder::Shuffled,
                WakeOrder::Blocks => probe::GapOrder::Blocks,
                WakeOrder::AfterLong => probe::GapOrder::AfterLong,
                WakeOrder::AfterOneLong => probe::GapOrder::AfterOneLong,
            };
            let p = probe::probe(rounds as usize, order, seed)?;
            if json {
                let v = serde_json::json!({ "schema": "nvmswap.cpu_wake/1", "probe": p });
                println!("{}", serde_json::to_string_pretty(&v)?);
                return Ok(());
            }
            print_cpu_wake_gaps(&p);
            print!("{}", probe::costs_lines(&p));
            Ok(())
        }
        Action::TabMemory { seed, json } => {
            nvmswap_linux::require_root()?;
            let state = nvmswap_linux::state::default_state_path();
            let p = nvmswap_linux::tab_memory_probe::probe(seed, &state)?;
            if json {
                let v = serde_json::json!({
                    "schema": "nvmswap.tab_memory/1",
                    "probe": p,
                    "fit": p.fit().map(|(fixed, per_page)| serde_json::json!({
                        "fixed_bytes": fixed,
                        "bytes_per_page": per_page,
                    })),
                });
                println!("{}", serde_json::to_string_pretty(&v)?);
                return Ok(());
            }
            for s in &p.points {
                println!(
                    "{} tabs of {} pages: beyond their pages {:.0} bytes a tab (anon {:.0}, file {:.0}, kernel {:.0})",
                    s.tabs,
                    s.pages,
                    s.overhead_per_tab(),
                    (s.added.anon as f64 - f64::from(s.pages) * 4096.0 * f64::from(s.tabs))
                        / f64::from(s.tabs),
                    s.added.file as f64 / f64::from(s.tabs),
                    s.added.kernel as f64 / f64::from(s.tabs),
                );
            }
            print!("{}", p.costs_toml());
            Ok(())
        }
        Action::WakeupReplay { trace, json } => {
            let text = std::fs::read_to_string(&trace)
                .with_context(|| format!("reading {}", trace.display()))?;
            let r = nvmswap_linux::wakeup_replay::replay(&text)
                .with_context(|| format!("replaying {}", trace.display()))?;
            if json {
                let v = serde_json::json!({ "schema": "nvmswap.wakeup_replay/1", "replay": r });
                println!("{}", serde_json::to_string_pretty(&v)?);
            } else {
                print_wakeup_replay(&r);
            }
            Ok(())
        }
        Action::CheckDevice {
            profile,
            swap_dir,
            rounds,
            completion_cpu,
            replay,
            replay_requests,
            seed,
            json,
        } => {
            if completion_cpu {
                use nvmswap_linux::completion_cpu_probe as probe;
                let rounds = rounds.unwrap_or(probe::COMPLETION_PROBE_ROUNDS);
                let p = probe::run(
                    &swap_dir,
                    &probe::Placement::ALL,
                    rounds,
                    probe::COMPLETION_PROBE_REQUESTS,
                    seed,
                    &default_state_path(),
                )?;
                if json {
                    let v = serde_json::json!({ "schema": "nvmswap.completion_cpu/1", "probe": p });
                    println!("{}", serde_json::to_string_pretty(&v)?);
                    return Ok(());
                }
                print_completion_probe(&p, &swap_dir);
                return Ok(());
            }
            let rounds = rounds.unwrap_or(300);
            let device = nvmswap_core::device::DeviceProfile::from_file(&profile)?;
            if let Some(csv) = replay {
                let requests = nvmswap_linux::device_check::read_recorded(&csv)?;
                let r = nvmswap_linux::device_check::replay(&swap_dir, &device, &requests, seed)?;
                if let Some(path) = &replay_requests {
                    std::fs::write(path, r.requests_csv())
                        .with_context(|| format!("writing {}", path.display()))?;
                }
                if json {
                    println!("{}", serde_json::to_string_pretty(&r)?);
                    return Ok(());
                }
                println!(
                    "{} replayed against {} and {} ({} requests in {:.1} s, {} issued over 100 us late; D2C in us, disk / model)",
                    csv.display(),
                    swap_dir.display(),
                    profile.display(),
                    requests.len(),
                    r.seconds,
                    r.late
                );
                println!("op     requests | p50 disk  model | p90 disk  model | p99 disk  model | mean disk  model");
                for row in &r.rows {
                    let op = if row.write { "write" } else { "read" };
                    let label = format!("{op:5} {:9}", row.requests);
                    println!("{}", d2c_row(&label, &row.disk_d2c_us, &row.model_d2c_us));
                }
                return Ok(());
            }
            let rows = nvmswap_linux::device_check::run(&swap_dir, &device, rounds, seed)?;
            if json {
                println!("{}", serde_json::to_string_pretty(&rows)?);
                return Ok(());
            }
            println!(
                "{} against {} ({} bursts each; D2C in us, disk traced / model)",
                profile.display(),
                swap_dir.display(),
                rounds
            );
            println!("burst                  requests | p50 disk  model | p90 disk  model | p99 disk  model | mean disk  model");
            for r in &rows {
                let b = r.burst;
                let op = if b.write { "write" } else { "read" };
                let label = format!(
                    "{op:5} {:2} x {:2} pages {:10}",
                    b.requests, b.pages, r.traced_requests
                );
                println!("{}", d2c_row(&label, &r.disk_d2c_us, &r.model_d2c_us));
            }
            Ok(())
        }
        Action::Status { json } => {
            let now = MachineSnapshot::capture()?;
            let pending: Vec<(PathBuf, StateFile)> = nvmswap_linux::state::orphaned_state_files()
                .into_iter()
                .map(|f| StateFile::load(&f).map(|s| (f, s)))
                .collect::<Result<_, _>>()?;
            if json {
                let files: Vec<String> =
                    pending.iter().map(|p| p.0.display().to_string()).collect();
                let v = serde_json::json!({ "state": now, "pending_state_files": files });
                println!("{}", serde_json::to_string_pretty(&v)?);
                return Ok(());
            }
            println!("swaps:      {:?}", now.swaps);
            println!("zswap:      {:?}", now.zswap);
            println!("sysctls:    {:?}", now.sysctls);
            println!("schedulers: {:?}", now.schedulers);
            println!("zram:       {:?}", now.zram_devices);
            println!("cgroups:    {:?}", now.memory_cgroups);
            for (f, s) in &pending {
                println!(
                    "pending state file {} from finished pid {} with {} changes: run `nvmswap linux restore`",
                    f.display(),
                    s.pid,
                    s.changes.len()
                );
            }
            if pending.is_empty() {
                println!("no pending state file");
            }
            Ok(())
        }
    }
}

/// Where calibrate writes its costs when not told: beside the device profile, so that the pair
/// `validate --disk X --costs Y` takes stays together (the bundled pair is only overwritten by a
/// calibration that writes its profile there too).
fn costs_beside(profile: &Path) -> PathBuf {
    profile.with_file_name("calibrated-costs.toml")
}

/// The completion-CPU probe's table: one row per placement and direction, then the idle
/// interrupt CPU's cost.
fn print_completion_probe(p: &nvmswap_linux::completion_cpu_probe::CompletionCpuProbe, dir: &Path) {
    let i = &p.interrupt;
    println!(
        "completion interrupt {} ({}) on CPU {} ({:.1} % of {} interrupts for {} reads); scratch file in {}",
        i.irq,
        i.name,
        i.cpu,
        i.cpu_share * 100.0,
        i.counted,
        i.requests,
        dir.display()
    );
    println!(
        "lone 4 KiB requests {} us apart, {} rounds x {} per case; time in the system call, us",
        p.gap_us, p.rounds, p.requests_per_round
    );
    println!(
        "{:5} {:40} {:>3} | {:>6} {:>6} {:>6} {:>6} | rounds' p50",
        "op", "placement", "cpu", "p50", "p90", "p99", "mean"
    );
    for r in &p.rows {
        let l = &r.latency_us;
        let rounds: Vec<String> = r.round_p50_us.iter().map(|v| format!("{v:.0}")).collect();
        println!(
            "{:5} {:40} {:>3} | {:6.0} {:6.0} {:6.0} {:6.0} | {}",
            if r.write { "write" } else { "read" },
            r.placement.describe(),
            r.issuer_cpu,
            l.p50,
            l.p90,
            l.p99,
            l.mean,
            rounds.join(" ")
        );
    }
    for write in [false, true] {
        if let Some(cost) = p.idle_cost_p50_us(write) {
            println!(
                "{}: the idle interrupt CPU adds {cost:.0} us at p50 (idle less busy)",
                if write { "write" } else { "read" }
            );
        }
    }
    for r in &p.rows {
        if let Some(t) = &r.taken_from_task {
            println!(
                "{} {}: a completion takes {:.1} us from the task spinning on the interrupt's CPU \
                 ({:.1} us of gaps in a request's window, {:.1} us at the rate outside; {} of {} \
                 windows with a gap; {} host gaps over {} us left out)",
                if r.write { "write" } else { "read" },
                if r.placement
                    == nvmswap_linux::completion_cpu_probe::Placement::InterruptCpuBusyUnwaited
                {
                    "nobody waits for"
                } else {
                    "waited for"
                },
                t.per_completion_ns / 1e3,
                t.in_window_ns / 1e3,
                t.baseline_ns / 1e3,
                t.requests_with_gap,
                t.requests,
                t.host_gaps,
                nvmswap_linux::completion_cpu_probe::HOST_GAP_NS / 1_000
            );
        }
    }
}

/// Progress as plain lines on stderr (the pressure command owns the bars).
struct StderrProgress;

impl nvmswap_core::progress::Progress for StderrProgress {
    fn stage(&self, name: &str, _total: u64) {
        tracing::info!("{name}");
    }
    fn message(&self, msg: &str) {
        tracing::info!("  {msg}");
    }
}

/// `runs` calibrations of this machine, one after another, each handed to `each` as it ends:
/// the runs, and the device profile and software costs to write (with more than one run, every
/// number the median of the runs' or pooled over them, [`nvmswap_linux::calibration_median`]).
/// `nvmswap linux calibrate` and `nvmswap validate --calibrate` share it.
pub fn calibrate_runs(
    swap_dir: &std::path::Path,
    seed: u64,
    runs: u32,
    mut each: impl FnMut(u32, &nvmswap_linux::calibrate::Calibration),
) -> anyhow::Result<(Vec<nvmswap_linux::calibrate::Calibration>, String, String)> {
    let mut cals = Vec::new();
    let mut profiles = Vec::new();
    let mut costs = Vec::new();
    for i in 0..runs {
        if runs > 1 {
            tracing::info!("calibration run {}/{runs}", i + 1);
        }
        let cal = nvmswap_linux::calibrate::run(swap_dir, seed)?;
        // The machine this calibration describes, in the figure every linux run reports at
        // both ends (`extra.host_speed`): the host under this VM slows on its own. The costs
        // file keeps the two's mean for validate (`host_lz4_ns_per_page`).
        tracing::info!(
            "calibration run {}: host speed, lz4 {:.0} ns per page before the probes, {:.0} as \
             they ended (nvmswap_linux::host_speed)",
            i + 1,
            cal.host_lz4_ns_per_page[0],
            cal.host_lz4_ns_per_page[1]
        );
        let profile = nvmswap_linux::calibrate::device_profile_toml(&cal);
        nvmswap_core::device::DeviceProfile::from_toml_str(&profile, "calibration")
            .context("the calibrated profile does not validate")?;
        each(i, &cal);
        if let Some(v) = nvmswap_linux::calibrate::reclaim_scan_estimate_ns(&cal) {
            if v < 0.0 {
                tracing::warn!(
                    "calibration run {}: the limit-reclaim probe's reclaim_scan_page_ns came out \
                     negative ({v:.0} ns: without the vmscan trace it is estimated from the \
                     touches, whose time per reclaimed page fell below the page-out path's) and \
                     is written as 0; a drifting machine does this to some runs: calibrate with \
                     --runs 3 or more and read each run's value in the costs file's header",
                    i + 1
                );
            }
        }
        profiles.push(profile);
        costs.push(nvmswap_linux::calibrate::costs_toml(&cal));
        cals.push(cal);
    }
    if runs == 1 {
        let (profile, costs) = (profiles.remove(0), costs.remove(0));
        return Ok((cals, profile, costs));
    }
    let profile =
        nvmswap_linux::calibration_median::merge_disk(&profiles).map_err(anyhow::Error::msg)?;
    nvmswap_core::device::DeviceProfile::from_toml_str(&profile, "calibration")
        .context("the merged profile does not validate")?;
    // A host's slow spell reaches every probe of a run; the merged file's header records the
    // runs' pace, and a slow run is worth a word where the user reads.
    if let Some(pace) =
        nvmswap_linux::calibration_median::RunsPace::of(&costs).map_err(anyhow::Error::msg)?
    {
        if pace.slow_runs().is_empty() {
            tracing::info!("calibration runs' pace: {}", pace.describe());
        } else {
            tracing::warn!("calibration runs' pace: {}", pace.describe());
        }
    }
    let costs =
        nvmswap_linux::calibration_median::merge_costs(&costs).map_err(anyhow::Error::msg)?;
    Ok((cals, profile, costs))
}

/// One calibration run's measurements, as `nvmswap linux calibrate` prints them.
fn print_calibration(cal: &nvmswap_linux::calibrate::Calibration) {
    for c in &cal.compression {
        println!(
            "{:8} compress mean {:.2} us p99 {:.2} us, decompress mean {:.2} us p99 {:.2} us, ratio {:.3}",
            c.algorithm, c.compress_us.mean, c.compress_us.p99, c.decompress_us.mean, c.decompress_us.p99, c.ratio
        );
    }
    println!(
        "disk {}: read 4k mean {:.1} us p99 {:.1} us, write 4k mean {:.1} us p99 {:.1} us (around the system call)",
        cal.disk,
        cal.disk_read_4k_us.mean,
        cal.disk_read_4k_us.p99,
        cal.disk_write_4k_us.mean,
        cal.disk_write_4k_us.p99
    );
    match (&cal.service_probe, &cal.service_probe_unavailable) {
        (Some(p), _) => println!(
            "disk {}'s own time (D2C, the profile's read_4k/write_4k): read 4k mean {:.1} us p99 {:.1} us, write 4k mean {:.1} us p99 {:.1} us",
            cal.disk, p.read_d2c_us.mean, p.read_d2c_us.p99, p.write_d2c_us.mean, p.write_d2c_us.p99
        ),
        (None, why) => println!(
            "disk {}'s own time: not traced ({}); the profile takes the times above",
            cal.disk,
            why.as_deref().unwrap_or("not run")
        ),
    }
    let bursts: Vec<String> = cal
        .minor_fault_burst_p50_us
        .iter()
        .map(|p50| format!("{p50:.2}"))
        .collect();
    println!(
        "minor fault mean {:.2} us p50 {:.2} us p99 {:.2} us; bursts' p50s {} us, median {:.0} ns (the cost)",
        cal.minor_fault_us.mean,
        cal.minor_fault_us.p50,
        cal.minor_fault_us.p99,
        bursts.join(" "),
        cal.minor_fault_ns()
    );
    println!(
        "queue depth {} ({})",
        cal.queue_depth, cal.queue_depth_source
    );
    match (&cal.queue_probe, &cal.queue_probe_unavailable) {
        (Some(q), _) => {
            print!("{}", nvmswap_linux::calibrate::queue_probe_comment(q));
            print!("{}", nvmswap_linux::calibrate::serial_probe_comment(q));
            if let Some((channels, service_us, own)) = cal.device_parallelism() {
                let time = if own {
                    "a lone read's D2C"
                } else {
                    "the depth-1 time around the system call"
                };
                println!("parallelism {channels} (profile; Little's law with {time}, {service_us:.1} us)");
            }
        }
        (None, Some(why)) => println!("queue probe did not run: {why}"),
        (None, None) => {}
    }
    match (&cal.size_probe, &cal.size_probe_unavailable) {
        (Some(q), _) => {
            print!("{}", nvmswap_linux::calibrate::size_probe_comment(q))
        }
        (None, Some(why)) => println!("request size probe did not run: {why}"),
        (None, None) => {}
    }
    match (&cal.wake_probe, &cal.wake_probe_unavailable) {
        (Some(w), _) => print!("{}", nvmswap_linux::wake_probe::comment(w)),
        (None, Some(why)) => println!("wake-up probe did not run: {why}"),
        (None, None) => {}
    }
    match (&cal.batch_probe, &cal.batch_probe_unavailable) {
        (Some(b), _) => print!("{}", nvmswap_linux::batch_probe::comment(b)),
        (None, Some(why)) => println!("batch probe did not run: {why}"),
        (None, None) => {}
    }
    match (&cal.swap_path, &cal.swap_path_unavailable) {
        (Some(sp), _) => {
            println!(
                "swap write path (MADV_PAGEOUT, 32-page batches) mean {:.2} us/page p99 {:.2} us/page; pswpout {}",
                sp.write_submit_us_per_page.mean, sp.write_submit_us_per_page.p99, sp.pswpout
            );
            println!(
                "swap-in fault (page-cluster 0) mean {:.2} us p50 {:.2} us p99 {:.2} us; pswpin {} (the cgroup's reclaim freed {} KiB first)",
                sp.swap_in_fault_us.mean, sp.swap_in_fault_us.p50, sp.swap_in_fault_us.p99, sp.pswpin, sp.evicted_bytes / 1024
            );
            if let Some(b) = &sp.breakdown {
                println!(
                    "swap-in breakdown (seed 002): total {:.1} us = swap layer + fault handling {:.1} us + block layer {:.1} us + device {:.1} us",
                    b.total_us, b.swap_layer_and_fault_us, b.block_layer_us, b.device_us
                );
            }
        }
        (None, Some(why)) => println!("swap path not probed: {why}"),
        (None, None) => {}
    }
    match (&cal.readahead_plug, &cal.readahead_plug_unavailable) {
        (Some(r), _) => print!("{}", nvmswap_linux::readahead_probe::comment(r)),
        (None, Some(why)) => println!("read-ahead plug not probed: {why}"),
        (None, None) => {}
    }
    for (name, probe, why) in [
        ("zswap", &cal.zswap_path, &cal.zswap_path_unavailable),
        ("zram", &cal.zram_path, &cal.zram_path_unavailable),
    ] {
        match (probe, why) {
            (Some(z), _) => {
                let (pool_out, pool_in) = z.pool_counts();
                println!(
                    "{name} ({}) swap-out path (MADV_PAGEOUT, 32-page batches) p50 {:.2} us/page mean {:.2} p99 {:.2}; hit fault p50 {:.2} us mean {:.2} p99 {:.2}; into/out of the pool {pool_out}/{pool_in} of {} pages (pswpout {}, pswpin {})",
                    z.compressor, z.store_us_per_page.p50, z.store_us_per_page.mean, z.store_us_per_page.p99,
                    z.hit_fault_us.p50, z.hit_fault_us.mean, z.hit_fault_us.p99, z.pages, z.pswpout, z.pswpin
                );
            }
            (None, Some(why)) => println!("{name} path not probed: {why}"),
            (None, None) => {}
        }
    }
    match (&cal.limit_reclaim, &cal.limit_reclaim_unavailable) {
        (Some(l), _) => {
            let probes = cal.zram_path.as_ref().and_then(|z| {
                l.scan_page_ns(
                    cal.minor_fault_ns(),
                    (z.store_us_per_page.p50 * 1e3).round(),
                )
            });
            let f = |v: Option<f64>| v.map_or("n/a".to_string(), |v| format!("{v:.0}"));
            println!(
                "limit reclaim ({} MiB cgroup, zram {}): {} touches ({} faulted) p50 {:.2} us mean {:.2} p99 {:.2}, {} over {:.0} us (p50 {:.2} mean {:.2}); sum {:.1} ms; pswpout {}; then page-out p50 {:.2} us/page (pswpout {}); the trace's charges outside shrink_folio_list {} ns per reclaimed page (in it {}); from the touches {} (chunk median {}; against the minor-fault and zram page-out probes: {})",
                l.limit_bytes >> 20, l.compressor, l.pages, l.faulted, l.touch_us.p50, l.touch_us.mean,
                l.touch_us.p99, l.slow_touches, nvmswap_linux::calibrate::SLOW_TOUCH_US, l.slow_touch_us.p50, l.slow_touch_us.mean,
                l.touch_sum_ns as f64 / 1e6, l.pswpout, l.page_out_us_per_page.p50, l.page_out_pswpout,
                f(l.traced_outside_list_ns()), f(l.traced_page_out_ns(0.0)),
                f(l.paired_scan_page_ns()), f(l.chunk_median_scan_page_ns()), f(probes)
            );
        }
        (None, Some(why)) => println!("limit reclaim not probed: {why}"),
        (None, None) => {}
    }
    match &cal.accessed_bit {
        Some(a) => println!(
            "accessed bit: a tab's timed touch {:.0} ns warm, {:.0} ns after a {} MiB walk of other memory, \
             {:.0} ns with the accessed bits cleared too: accessed_bit_ns {:.0}",
            a.warm_ns,
            a.cold_ns,
            (nvmswap_linux::tab::EVICT_PAGES * nvmswap_core::PAGE_SIZE as usize) >> 20,
            a.cleared_ns,
            a.accessed_bit_ns()
        ),
        None => println!("accessed-bit probe did not run (see the warning above)"),
    }
    match &cal.other_processes {
        Some(o) => println!(
            "other processes: {} runs of their tasks in {:.1} s ({:.1} a second), {:.0} us each at the mean; by process: {}",
            o.runs,
            o.window_s,
            o.runs_per_s(),
            o.run_ns_mean() / 1e3,
            o.busiest_text()
        ),
        None => println!("other-process probe did not run (see the warning above)"),
    }
    if !cal.access_by_footprint.is_empty() {
        let points: Vec<String> = cal
            .access_by_footprint
            .iter()
            .map(|f| {
                format!(
                    "{} MiB {:.0} ns ({:.1} % at {} ns or more)",
                    f.footprint_mib,
                    f.access_ns,
                    f.slow_share * 100.0,
                    nvmswap_linux::tab::ACCESS_CLASS_NS[0]
                )
            })
            .collect();
        println!(
            "a tab's access to mapped pages by the footprint it cycles over: {}",
            points.join(", ")
        );
    }
    if !cal.access_by_idle.is_empty() {
        let points: Vec<String> = cal
            .access_by_idle
            .iter()
            .map(|a| {
                format!(
                    "{} ms {:.0} ns ({:.1} % at {} ns or more)",
                    a.idle_ms,
                    a.access_ns,
                    a.slow_share * 100.0,
                    nvmswap_linux::tab::ACCESS_CLASS_NS[0]
                )
            })
            .collect();
        println!(
            "a tab's access to a {} MiB footprint by how long it idled: {}",
            (nvmswap_linux::tab::IDLE_ACCESS_PAGES * nvmswap_core::PAGE_SIZE) >> 20,
            points.join(", ")
        );
    }
    if !cal.idle_stalls.is_empty() {
        let passes: Vec<String> = cal
            .idle_stalls
            .iter()
            .map(|p| {
                format!(
                    "{} s: {} of {} ({:.2} %, mean {:.0} us; the others {:.0} ns; pass CPU {:.1} ms, {} guest faults)",
                    p.idle_s,
                    p.stalls,
                    p.accesses,
                    p.stalls as f64 * 100.0 / p.accesses.max(1) as f64,
                    p.stall_mean_us,
                    p.access_below_stall_ns,
                    p.pass_cpu_ms,
                    p.guest_faults
                )
            })
            .collect();
        println!(
            "accesses to mapped pages of {} us or more after the pages idled: {}",
            nvmswap_linux::host_speed::STALL_NS / 1_000,
            passes.join("; ")
        );
    }
    match (
        &cal.completion_interrupt,
        &cal.completion_interrupt_unavailable,
    ) {
        (Some(p), _) => {
            use nvmswap_linux::completion_cpu_probe::Placement;
            let taken: Vec<String> = [
                (Placement::InterruptCpuBusy, false, "read waited for"),
                (
                    Placement::InterruptCpuBusyUnwaited,
                    false,
                    "read nobody waits for",
                ),
                (Placement::InterruptCpuBusy, true, "write waited for"),
                (
                    Placement::InterruptCpuBusyUnwaited,
                    true,
                    "write nobody waits for",
                ),
            ]
            .iter()
            .filter_map(|&(placement, write, what)| {
                p.taken_from_task_ns(placement, write)
                    .map(|ns| format!("{what} {:.1} us", ns / 1e3))
            })
            .collect();
            println!(
                "a completion takes from the task on the interrupt's CPU {}: {}",
                p.interrupt.cpu,
                taken.join(", ")
            );
        }
        (None, Some(why)) => println!("completion-interrupt probe did not run: {why}"),
        (None, None) => {}
    }
    match (&cal.tab_second, &cal.tab_second_unavailable) {
        (Some(t), _) => {
            print!(
                "{}{}{}",
                nvmswap_linux::tab::tab_second_comment(t),
                nvmswap_linux::tab::tab_second_by_idle_toml(t),
                nvmswap_linux::tab::driver_second_comment(t)
            );
            println!(
                "tab-second probe: accesses without a fault by time class: {}",
                access_classes_line(&t.resident)
            );
        }
        (None, Some(why)) => println!("tab-second probe did not run: {why}"),
        (None, None) => {}
    }
    match (&cal.kept_pages, &cal.kept_pages_unavailable) {
        (Some(k), _) => {
            let fit = k.fit.map_or("no fit (too few charges, or reclaimed and kept moved together)".to_string(), |f| {
                format!(
                    "duration = {:.0} ns + {:.0} ns x reclaimed + {:.0} ns x kept (R² {:.4}); reclaim_keep_page_ns {:.0}",
                    f.per_charge_ns, f.per_reclaimed_ns, f.per_kept_ns, f.r_squared, f.per_kept_ns
                )
            });
            println!(
                "kept pages ({} MiB cgroup, zram {}, {}-page working set read again between bursts of fresh pages): {} charges traced, {} pages reclaimed, {} kept (widest {} in {:.0} us), {} events lost; {fit}",
                k.limit_bytes >> 20, k.compressor, k.working_set_pages, k.charges, k.pages_reclaimed,
                k.pages_kept, k.max_kept, k.max_kept_charge_us, k.events_lost
            );
        }
        (None, Some(why)) => println!("kept pages not probed: {why}"),
        (None, None) => {}
    }
}

/// `[0, 250) ns 97.1 % (mean 61 ns), ...; writes 20.0 % of them, 3.1 % of those 250 ns or
/// more (mean 480 ns)`: the access classes of a resident tab-second split
/// (`nvmswap_linux::tab::ResidentSeconds::to_json`).
fn access_classes_line(resident: &serde_json::Value) -> String {
    let Some(classes) = resident["access_classes"].as_array() else {
        return "none".into();
    };
    let w = &resident["writes"];
    let writes = format!(
        "; writes {:.1} % of them, {:.1} % of those {} ns or more (mean {:.0} ns)",
        w["share"].as_f64().unwrap_or(0.0) * 100.0,
        w["slow_share"].as_f64().unwrap_or(0.0) * 100.0,
        nvmswap_linux::tab::ACCESS_CLASS_NS[0],
        w["slow_mean_ns"].as_f64().unwrap_or(0.0)
    );
    let classes = classes
        .iter()
        .map(|c| {
            let to = c["to_ns"]
                .as_u64()
                .map_or("inf)".to_string(), |t| format!("{t})"));
            format!(
                "[{}, {to} ns {:.1} % (mean {:.0} ns)",
                c["from_ns"].as_u64().unwrap_or(0),
                c["share"].as_f64().unwrap_or(0.0) * 100.0,
                c["mean_ns"].as_f64().unwrap_or(0.0)
            )
        })
        .collect::<Vec<_>>()
        .join(", ");
    classes + &writes
}

/// One `check-device` table row: its label, then D2C p50, p90, p99 and mean (µs), each as the
/// disk's beside the profile model's.
fn d2c_row(
    label: &str,
    disk: &nvmswap_core::results::LatencySummary,
    model: &nvmswap_core::results::LatencySummary,
) -> String {
    format!(
        "{label} | {:8.0} {:6.0} | {:8.0} {:6.0} | {:8.0} {:6.0} | {:9.0} {:6.0}",
        disk.p50, model.p50, disk.p90, model.p90, disk.p99, model.p99, disk.mean, model.mean
    )
}

/// `nvmswap linux wakeup-replay`'s table.
fn print_wakeup_replay(r: &nvmswap_linux::wakeup_replay::WakeupReplay) {
    println!(
        "driver {} and {} tasks of its group on {} CPUs: {} wake-ups, {} onto an idle CPU, {} onto a CPU running another task, {} onto a CPU running a group task (decisions)",
        r.driver_pid,
        r.group_tasks - 1,
        r.cpus,
        r.wakeups,
        r.onto_idle,
        r.onto_other_task,
        r.onto_group_task
    );
    println!(
        "trace gaps: {} switched in unwoken, {} resyncs, {} delayed tasks woken elsewhere",
        r.switched_in_unwoken, r.resyncs, r.delayed_woken_elsewhere
    );
    println!(
        "of the decisions: the model preempts {:.1} %, the kernel's rule switches {:.1} %; the kernel's running task was switched out runnable within {} us of {:.1} % ({:.1} % for the woken task)",
        100.0 * r.model_preempt_share,
        100.0 * r.kernel_rule_switch_share,
        nvmswap_linux::wakeup_replay::AT_ONCE_NS / 1_000,
        100.0 * r.kernel_preempted_at_once_share,
        100.0 * r.kernel_preempted_at_once_for_woken_share
    );
    println!(
        "{:<14} {:<12} {:<8} {:>6} {:>6} {:>6} | kernel: R at once for woken / later woken / another / outside, R later, S at once, S later, lost | running for us p50 p90",
        "woken", "running", "pick", "model", "rule", "n"
    );
    for d in &r.decisions {
        let k = &d.kernel;
        let says = |b: bool| if b { "switch" } else { "wait" };
        println!(
            "{:<14} {:<12} {:<8} {:>6} {:>6} {:>6} | {:>6} {:>6} {:>6} {:>6} {:>6} {:>6} {:>6} {:>5} | {:>6.0} {:>6.0}",
            format!("{:?}", d.woken),
            format!("{:?}", d.standing),
            format!("{:?}", d.pick),
            says(d.model_preempts),
            says(d.kernel_rule_switches),
            k.total(),
            k.preempted_at_once_for_woken,
            k.preempted_at_once_for_later_woken,
            k.preempted_at_once_for_another,
            k.preempted_at_once_for_outside,
            k.preempted_later,
            k.slept_at_once,
            k.slept_later,
            k.unresolved,
            d.running_for_us.p50,
            d.running_for_us.p90
        );
    }
    if let Some(q) = &r.read_woken_queue {
        println!(
            "tabs woken from a block onto a busy CPU ({}): {:.2} other tasks queued there on average ({:.2} of them delayed); lag us p10/p50/p90 woken {:.0}/{:.0}/{:.0}, running {:.0}/{:.0}/{:.0}",
            q.wakeups,
            q.others_queued_mean,
            q.others_delayed_mean,
            q.woken_lag_us[0],
            q.woken_lag_us[1],
            q.woken_lag_us[2],
            q.running_lag_us[0],
            q.running_lag_us[1],
            q.running_lag_us[2]
        );
    }
    if r.picks_compared > 0 {
        println!(
            "picks: the model's pick was the kernel's in {} of {} switch-ins with two or more waiting",
            r.picks_agreeing, r.picks_compared
        );
    }
}

/// `nvmswap linux cpu-wake`'s table of one probe's gaps.
fn print_cpu_wake_gaps(p: &nvmswap_linux::cpu_wake_probe::CpuWakeProbe) {
    println!(
            "A thread on CPU {} woken from CPU {}, {} wake-ups per gap, {:?} (µs from the write to its running)",
            p.sleeper_cpu, p.waker_cpu, p.rounds, p.order
        );
    println!(
        "{:>8} {:>10} {:>8} {:>8} {:>8}",
        "gap", "idle p50", "p50", "p90", "p99"
    );
    for g in &p.gaps {
        println!(
            "{:>8} {:>10.1} {:>8.1} {:>8.1} {:>8.1}",
            g.gap_us, g.idle_us_p50, g.wait_us.p50, g.wait_us.p90, g.wait_us.p99
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calibration_costs_go_beside_the_profile_so_the_bundled_pair_moves_together() {
        let beside = |p: &str| costs_beside(Path::new(p));
        assert_eq!(
            beside("profiles/linux/calibrated-disk.toml"),
            Path::new("profiles/linux/calibrated-costs.toml")
        );
        assert_eq!(
            beside("/work/cal/disk.toml"),
            Path::new("/work/cal/calibrated-costs.toml")
        );
        assert_eq!(beside("disk.toml"), Path::new("calibrated-costs.toml"));
    }
}
