//! The kernel's per-charge memcg reclaim during a linux run, from its vmscan tracepoints: how many
//! pages each charge that hit the cgroup's limit reclaimed and scanned, how long it took and how
//! low its priority went (`extra.memcg_reclaim`).
//!
//! A task whose charge would exceed the cgroup's limit reclaims from the cgroup itself
//! (`try_charge_memcg` -> `try_to_free_mem_cgroup_pages` in mm/vmscan.c). The events, all in
//! include/trace/events/vmscan.h, fire in that task's context:
//!
//! - `mm_vmscan_memcg_reclaim_begin` / `mm_vmscan_memcg_reclaim_end` (`nr_reclaimed`) around
//!   `try_to_free_mem_cgroup_pages`;
//! - `mm_vmscan_lru_shrink_inactive` (`shrink_inactive_list`: `nr_scanned`, `nr_reclaimed`,
//!   `nr_ref_keep`, `nr_activate_anon`/`_file`, `priority`) and `mm_vmscan_lru_shrink_active`
//!   (`shrink_active_list`: `nr_taken`, `nr_deactivated`, `priority`) for each LRU list that
//!   `do_try_to_free_pages`' priority loop scans (`lru_size >> priority` pages, priority 12 down).
//!
//! - `mm_vmscan_lru_isolate` (`isolate_lru_folios`' end), where a probe or a pressure run asks for
//!   it ([`Tracer::start_with_isolation`]): from an inactive list's isolation to its
//!   `mm_vmscan_lru_shrink_inactive` the task is in `shrink_folio_list` (unmap, swap slot, swap
//!   cache, the page-out itself, and the referenced check of every page it looks at) and the
//!   putback; the rest of a charge is the LRU work around it (isolation, the active list, the
//!   priority loop, the walk over the cgroup's LRUs). Counted per charge as `folio_list_ns`.
//! - `ipi_send_cpu` / `ipi_send_cpumask` (include/trace/events/ipi.h), where the kernel has them:
//!   the IPIs a charge's task sends from `on_each_cpu_cond_mask`, which is how x86 flushes other
//!   CPUs' TLBs (`native_flush_tlb_multi`). Reclaim flushes before it writes each dirty page it
//!   unmapped (`try_to_unmap_flush_dirty`), and the flush interrupts every CPU not in lazy TLB
//!   mode and waits for it ([`crate::shootdown`] measures one). Counted per charge as
//!   `remote_flushes`.
//! - `sched_switch` (include/trace/events/sched.h) and, filtered to one case, `tlb_flush`
//!   (include/trace/events/tlb.h), where the kernel has them: what the target of each flush IPI
//!   was doing when it was sent. A CPU that runs a task, or that went idle on `init_mm`, takes
//!   every flush; an idle CPU in lazy TLB mode is skipped (`should_flush_tlb`, arch/x86/mm/tlb.c).
//!   An idle CPU leaves lazy mode for `init_mm` when a flush IPI sent while its task still ran
//!   reaches it after the task went to sleep (`flush_tlb_func` switches a lazy CPU to
//!   `init_mm`), which the trace shows as a `tlb_flush` of reason "flush on task switch" in hard
//!   interrupt context on the idle CPU; it stays there, taking every flush, until it runs a
//!   task again. Counted as `remote_flushes.to_running_cpu`, `to_idle_cpu` and
//!   `idle_cpu_joined_init_mm`. The same switches give each charge's time off its CPU,
//!   preempted (switched out runnable) or asleep (`off_cpu_us`).
//! - `call_function_single_exit` / `call_function_exit` (include/trace/events/irq_vectors.h,
//!   x86), where the kernel has them: the target CPU finished the IPI's functions (the TLB
//!   flush among them; one interrupt runs every function queued for it). From a charge's flush
//!   IPI to its target's next exit is the flush's round trip, which the charging task spends
//!   waiting; by what the target was doing (`remote_flushes.round_trip_us`). In a virtual
//!   machine an idle target is a halted virtual CPU that the host must wake first.
//!
//! Events are per task: a begin and the next end of the same pid are one charge, and the shrink
//! and IPI events of that pid between them are its scans and flushes. Only the workload's
//! processes count (the tabs' pids, given at the end); other tasks' charges are counted apart.
//! Besides the summary, the run's five longest charges are listed whole (`longest_charges`, with
//! each one's flush IPIs' summed round trips as `flush_wait_us`): the longest set the tails of
//! whatever waits on them.
//!
//! The events are recorded in a tracefs instance of our own (`instances/nvmswap-reclaim-<pid>`):
//! its own buffer, `tracing_on`, event switches and clock, so the top-level trace (and the
//! swap-device trace of [`crate::blktrace`], which uses it) is neither read nor changed. Removing
//! the instance undoes everything; it is removed when the trace ends, on error and on Ctrl-C
//! (`Drop`), and is in the run's state file (`Change::TraceInstance`), so `nvmswap linux restore`
//! removes it after a crash. Events the buffer lost (the per-CPU `stats`' overruns) are reported
//! as `events_lost` and warned about, never summarised silently.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crate::blktrace::{parse_time_ns, Unavailable};
use crate::state::Change;

/// Where tracefs may be mounted; the first is where we mount it when neither is.
pub const TRACEFS_ROOTS: [&str; 2] = ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"];

/// The four events, all in the `vmscan` system.
pub const EVENTS: [&str; 4] = [
    "mm_vmscan_memcg_reclaim_begin",
    "mm_vmscan_memcg_reclaim_end",
    "mm_vmscan_lru_shrink_inactive",
    "mm_vmscan_lru_shrink_active",
];

/// The isolation event (system `vmscan`), recorded where a probe asks for it.
pub const ISOLATE_EVENT: &str = "mm_vmscan_lru_isolate";

/// The IPI events (system `ipi`), recorded where the kernel has them.
pub const IPI_EVENTS: [&str; 2] = ["ipi_send_cpu", "ipi_send_cpumask"];

/// The ends of the IPI handlers on the target (system `irq_vectors`, x86), recorded where the
/// kernel has them: a single-CPU IPI's and a mask IPI's.
pub const IPI_DONE_EVENTS: [&str; 2] = ["call_function_single_exit", "call_function_exit"];

/// `tlb_flush` kept to the one case the summary reads: reason 0 (`TLB_FLUSH_ON_TASK_SWITCH`, a
/// switch of page tables) in hard interrupt context (`TRACE_FLAG_HARDIRQ`, 0x08), i.e. a flush
/// IPI that switched a CPU to `init_mm`. Task switches' own flushes, tens of thousands a run,
/// stay out of the buffer.
const INIT_MM_FILTER: &str = "reason == 0 && common_flags & 8";

/// The call site of x86's remote TLB flush IPIs (`native_flush_tlb_multi` ->
/// `on_each_cpu_cond_mask`), as `ipi_send_*`'s `callsite=` prints it.
const FLUSH_CALLSITE: &str = "on_each_cpu_cond_mask";

/// Prefix of our instances' names (`nvmswap-reclaim-<pid>`).
pub const INSTANCE_PREFIX: &str = "nvmswap-reclaim-";

/// Per-CPU buffer for a run at `scale`: a charge is ~9 events of ~70 bytes (589 charges at scale
/// 0.1, ~0.4 MB), and the IPI events of every task add about as much (11,266 in a linux-swapfile
/// run at scale 0.1, 10-18 per charge), and their handlers' ends on the targets as many again
/// (none lost in the 54 runs of a matrix, 2026-12-01); all grow with the scale. The scheduler's
/// switches add ~22,000 events at scale 0.1 (a hand trace, 2026-11-27), ~1.5 MB; they grow with
/// the run's length. The LRU isolations ([`Tracer::start_with_isolation`]) add about one per shrink
/// event. 32 MiB per CPU at scale 1 leaves ~3x room, more in proportion above it (at most 256
/// MiB).
pub fn buffer_kb(scale: f64) -> u64 {
    ((32_768.0 * scale.max(1.0)) as u64).min(262_144)
}

/// A running trace of the vmscan events in our own tracefs instance.
pub struct Tracer {
    /// The instance's directory.
    dir: PathBuf,
    /// Its name under `instances/`.
    name: String,
    /// tracefs was not mounted and we mounted it at `TRACEFS_ROOTS[0]`.
    mounted: bool,
    /// The instance exists (not yet removed).
    created: bool,
    /// The IPI events are recorded (the kernel has them).
    ipis: bool,
    /// The scheduler's switches and the `init_mm` flushes are recorded (the kernel has them).
    cpu_states: bool,
    /// The IPI handlers' ends are recorded (the kernel has them).
    ipi_ends: bool,
    /// The inactive lists' isolations are recorded ([`Tracer::start_with_isolation`]).
    isolations: bool,
}

impl Tracer {
    /// Creates the instance, sizes its buffer and enables the four events. Where tracefs or one
    /// of the events is missing, says why.
    pub fn start(buffer_kb: u64) -> Result<Tracer, Unavailable> {
        Self::start_events(buffer_kb, false)
    }

    /// [`Tracer::start`], and the LRU lists' isolations too ([`ISOLATE_EVENT`]), so that each
    /// charge's time in `shrink_folio_list` is known ([`Charge::folio_list_ns`]). One more event
    /// per list scanned, about as many as the shrink events: a pressure run's trace takes them
    /// too (its longest charges' `folio_list_us`).
    pub fn start_with_isolation(buffer_kb: u64) -> Result<Tracer, Unavailable> {
        Self::start_events(buffer_kb, true)
    }

    fn start_events(buffer_kb: u64, isolation: bool) -> Result<Tracer, Unavailable> {
        let has_events = |root: &Path| root.join("events/vmscan").exists();
        let (root, mounted) = match TRACEFS_ROOTS
            .iter()
            .map(Path::new)
            .find(|r| r.join("instances").exists())
        {
            Some(r) => (r.to_path_buf(), false),
            None => {
                let root = Path::new(TRACEFS_ROOTS[0]);
                (root.to_path_buf(), mount_tracefs_at(root)?)
            }
        };
        let name = format!("{INSTANCE_PREFIX}{}", std::process::id());
        // From here on `Drop` undoes what was done, whatever fails.
        let mut tracer = Tracer {
            dir: root.join("instances").join(&name),
            name,
            mounted,
            created: false,
            ipis: false,
            cpu_states: false,
            ipi_ends: false,
            isolations: isolation,
        };
        if !has_events(&root) {
            return Err(format!(
                "the kernel has no vmscan tracepoints ({}/events/vmscan)",
                root.display()
            ));
        }
        if let Some(ev) = EVENTS
            .iter()
            .chain(isolation.then_some(&ISOLATE_EVENT))
            .find(|ev| !root.join("events/vmscan").join(ev).exists())
        {
            return Err(format!("the kernel has no vmscan:{ev} tracepoint"));
        }
        if tracer.dir.exists() {
            remove_instance(&tracer.dir); // left by an earlier process with our pid
        }
        std::fs::create_dir(&tracer.dir)
            .map_err(|e| format!("create {}: {e}", tracer.dir.display()))?;
        tracer.created = true;
        tracer.set("tracing_on", "0")?;
        tracer.set("buffer_size_kb", &buffer_kb.to_string())?;
        // One clock for all CPUs (a task may move between CPUs within a charge); the default
        // `local` clock is per CPU. Older kernels without `mono` keep the default.
        let _ = tracer.set("trace_clock", "mono");
        for ev in EVENTS.iter().chain(isolation.then_some(&ISOLATE_EVENT)) {
            tracer.set(&format!("events/vmscan/{ev}/enable"), "1")?;
        }
        tracer.ipis = IPI_EVENTS
            .iter()
            .all(|ev| tracer.set(&format!("events/ipi/{ev}/enable"), "1").is_ok());
        tracer.cpu_states = tracer.ipis
            && tracer
                .set("events/tlb/tlb_flush/filter", INIT_MM_FILTER)
                .is_ok()
            && ["sched/sched_switch", "tlb/tlb_flush"]
                .iter()
                .all(|ev| tracer.set(&format!("events/{ev}/enable"), "1").is_ok());
        tracer.ipi_ends = tracer.cpu_states
            && IPI_DONE_EVENTS.iter().all(|ev| {
                tracer
                    .set(&format!("events/irq_vectors/{ev}/enable"), "1")
                    .is_ok()
            });
        tracer.set("tracing_on", "1")?;
        Ok(tracer)
    }

    fn set(&self, file: &str, value: &str) -> Result<(), Unavailable> {
        let path = self.dir.join(file);
        std::fs::write(&path, value).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// What starting the trace changed, for the set-up's journal: the mount first, then the
    /// instance, so that undoing newest first removes the instance before unmounting.
    pub fn journal(&self) -> Vec<Change> {
        let mut out = Vec::new();
        if self.mounted {
            out.push(Change::Mount {
                path: TRACEFS_ROOTS[0].into(),
            });
        }
        if self.created {
            out.push(Change::TraceInstance {
                name: self.name.clone(),
            });
        }
        out
    }

    /// Stops the trace; the charges of the processes `pids` summarised (`extra.memcg_reclaim`).
    pub fn finish(self, pids: &BTreeSet<i32>) -> Result<serde_json::Value, Unavailable> {
        self.set("tracing_on", "0")?;
        let lost = self.events_lost();
        let text = std::fs::read_to_string(self.dir.join("trace"))
            .map_err(|e| format!("read {}/trace: {e}", self.dir.display()))?;
        let mut summary = summarise(&parse(&text), pids, lost);
        summary.ipis_traced = self.ipis;
        summary.cpu_states_traced = self.cpu_states;
        summary.ipi_ends_traced = self.ipi_ends;
        summary.isolations_traced = self.isolations;
        let charges = summary.charges;
        let lost = summary.events_lost;
        if lost > 0 {
            tracing::warn!(
                "memcg reclaim trace lost {lost} events (buffer overrun): extra.memcg_reclaim \
                 summarises a truncated trace ({charges} charges)"
            );
        }
        Ok(summary.to_json())
    }

    /// Stops the trace; each finished charge of the processes `pids`, in trace order, and the
    /// events the buffer lost (for a calibration probe that fits costs to single charges).
    pub fn finish_charges(self, pids: &BTreeSet<i32>) -> Result<(Vec<Charge>, u64), Unavailable> {
        self.set("tracing_on", "0")?;
        let lost = self.events_lost();
        let text = std::fs::read_to_string(self.dir.join("trace"))
            .map_err(|e| format!("read {}/trace: {e}", self.dir.display()))?;
        let parsed = parse(&text);
        let mut s = Summary::default();
        let (done, _) = charges(&parsed, pids, &mut s);
        Ok((done, lost.max(parsed.lost_marked)))
    }

    /// Events the instance's buffer lost: per CPU, `overrun` (overwritten), `commit overrun` and
    /// `dropped events`.
    fn events_lost(&self) -> u64 {
        let Ok(rd) = std::fs::read_dir(self.dir.join("per_cpu")) else {
            return 0;
        };
        rd.filter_map(|e| e.ok())
            .filter_map(|e| std::fs::read_to_string(e.path().join("stats")).ok())
            .map(|s| lost_in_stats(&s))
            .sum()
    }
}

impl Drop for Tracer {
    fn drop(&mut self) {
        if self.created {
            remove_instance(&self.dir);
            self.created = false;
        }
        if self.mounted {
            crate::tracefs::unmount(Path::new(TRACEFS_ROOTS[0]));
            self.mounted = false;
        }
    }
}

/// Mounts tracefs at `root` unless it is there with instances; whether we mounted it.
fn mount_tracefs_at(root: &Path) -> Result<bool, Unavailable> {
    crate::tracefs::mount_unless(
        "tracefs",
        root,
        |r| r.join("instances").exists(),
        "tracefs (with instances)",
    )
}

/// Stops an instance's tracing, disables its events and removes it (its buffer, switches and
/// clock go with it). Best effort: a missing instance is already removed.
fn remove_instance(dir: &Path) {
    let _ = std::fs::write(dir.join("tracing_on"), "0");
    for ev in EVENTS.iter().chain([&ISOLATE_EVENT]) {
        let _ = std::fs::write(dir.join(format!("events/vmscan/{ev}/enable")), "0");
    }
    for ev in IPI_EVENTS {
        let _ = std::fs::write(dir.join(format!("events/ipi/{ev}/enable")), "0");
    }
    let _ = std::fs::remove_dir(dir);
}

/// Undoes `Change::TraceInstance`: removes the instance `name` wherever tracefs is mounted; when
/// it is mounted nowhere, mounts it for the time it takes. Missing is not an error.
pub fn undo_instance(name: &str) -> Result<(), String> {
    let mut roots = tracefs_mounts();
    let mut mounted = false;
    if roots.is_empty() {
        let root = Path::new(TRACEFS_ROOTS[0]);
        mounted = mount_tracefs_at(root).unwrap_or(false);
        if mounted {
            roots.push(root.to_path_buf());
        }
    }
    let mut left = None;
    for root in &roots {
        let dir = root.join("instances").join(name);
        if dir.exists() {
            remove_instance(&dir);
            if dir.exists() {
                left = Some(dir);
            }
        }
    }
    if mounted {
        crate::tracefs::unmount(Path::new(TRACEFS_ROOTS[0]));
    }
    match left {
        Some(dir) => Err(format!("cannot remove trace instance {}", dir.display())),
        None => Ok(()),
    }
}

/// tracefs mount points (a debugfs mount's `tracing` too) that have instances.
fn tracefs_mounts() -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = crate::state::trace_mounts()
        .iter()
        .filter_map(|m| match m.split_once(' ') {
            Some(("tracefs", at)) => Some(PathBuf::from(at)),
            Some(("debugfs", at)) => Some(Path::new(at).join("tracing")),
            _ => None,
        })
        .filter(|p| p.join("instances").exists())
        .collect();
    out.sort();
    out.dedup();
    out
}

/// Our trace instances present (`nvmswap-reclaim-*`), for the machine snapshot.
pub fn instances() -> Vec<String> {
    let mut names: Vec<String> = tracefs_mounts()
        .iter()
        .filter_map(|r| std::fs::read_dir(r.join("instances")).ok())
        .flat_map(|rd| rd.filter_map(|e| e.ok()))
        .map(|e| e.file_name().to_string_lossy().to_string())
        .filter(|n| n.starts_with(INSTANCE_PREFIX))
        .collect();
    names.sort();
    names.dedup();
    names
}

/// `overrun: 3`, `commit overrun: 0`, `dropped events: 1` of a per-CPU `stats` file, summed.
fn lost_in_stats(stats: &str) -> u64 {
    stats
        .lines()
        .filter_map(|l| l.split_once(':'))
        .filter(|(k, _)| matches!(k.trim(), "overrun" | "commit overrun" | "dropped events"))
        .filter_map(|(_, v)| v.trim().parse::<u64>().ok())
        .sum()
}

/// One vmscan event of the trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Event {
    Begin,
    End {
        reclaimed: u64,
    },
    Inactive {
        scanned: u64,
        reclaimed: u64,
        ref_keep: u64,
        activated: u64,
        priority: i32,
    },
    Active {
        deactivated: u64,
        priority: i32,
    },
    /// An LRU list's isolation ended; `inactive`: the list was an inactive one (its
    /// `shrink_folio_list` follows).
    Isolate {
        inactive: bool,
    },
    /// An IPI sent from x86's remote TLB flush ([`FLUSH_CALLSITE`]) to the CPUs of `targets`
    /// (bit n: CPU n; CPUs above 63 are not told apart).
    FlushIpi {
        targets: u64,
    },
    /// The event's CPU switched from the event's task (still runnable: preempted; else
    /// asleep) to task `next` (0: the idle task).
    Switch {
        next: i32,
        prev_runnable: bool,
    },
    /// A flush IPI switched the event's CPU to `init_mm` ([`INIT_MM_FILTER`]).
    InitMm,
    /// The event's CPU finished the functions IPIs had queued for it ([`IPI_DONE_EVENTS`]).
    IpiDone,
}

/// An event with its task and time (ns).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Traced {
    pid: i32,
    /// The CPU the event was recorded on.
    cpu: u32,
    t_ns: u64,
    event: Event,
}

/// The trace's events in order, and the `[LOST n EVENTS]` markers' total.
#[derive(Debug, Default)]
struct Parsed {
    events: Vec<Traced>,
    lost_marked: u64,
    /// Each task's command name, as the scheduler's switches first named it (a task that
    /// renames itself later keeps its first name here).
    comms: BTreeMap<i32, String>,
}

/// The tracefs text (`comm-pid [cpu] flags secs.usecs: event: key=value ...`).
fn parse(text: &str) -> Parsed {
    let mut out = Parsed::default();
    for line in text.lines() {
        if line.starts_with('#') {
            continue;
        }
        if let Some(n) = line
            .split_once("[LOST ")
            .and_then(|(_, r)| r.split_once(" EVENTS]"))
            .and_then(|(n, _)| n.trim().parse::<u64>().ok())
        {
            out.lost_marked += n;
            continue;
        }
        if let Some(e) = parse_line(line) {
            if let Event::Switch { next, .. } = e.event {
                if let Some(comm) = switch_next_comm(line) {
                    out.comms.entry(next).or_insert_with(|| comm.to_string());
                }
            }
            out.events.push(e);
        }
    }
    out
}

/// `next_comm` of a `sched_switch` line (`... ==> next_comm=NAME next_pid=N ...`; a name may
/// hold spaces).
fn switch_next_comm(line: &str) -> Option<&str> {
    let (_, tail) = line.split_once("==> next_comm=")?;
    Some(tail.rsplit_once(" next_pid=")?.0)
}

fn parse_line(line: &str) -> Option<Traced> {
    let (head, name, args) = match line.split_once(": mm_vmscan_") {
        Some((head, tail)) => {
            let (name, args) = tail.split_once(':').unwrap_or((tail, ""));
            (head, name, args)
        }
        None => [
            (": ipi_send_cpumask:", "ipi_send"),
            (": ipi_send_cpu:", "ipi_send"),
            (": sched_switch:", "sched_switch"),
            (": tlb_flush:", "tlb_flush"),
            (": call_function_single_exit:", "ipi_done"),
            (": call_function_exit:", "ipi_done"),
        ]
        .iter()
        .find_map(|(marker, name)| {
            let (head, tail) = line.split_once(marker)?;
            Some((head, *name, tail))
        })?,
    };
    let t_ns = parse_time_ns(head.split_whitespace().last()?)?;
    // `comm-pid [cpu] flags` or, with record-tgid, `comm-pid (tgid) [cpu] flags`; comm may
    // hold '-'.
    let open = head.rfind('[')?;
    let (cpu, flags) = head[open + 1..].split_once(']')?;
    let cpu: u32 = cpu.trim().parse().ok()?;
    let task = head[..open].trim_end();
    let task = match task.strip_suffix(')') {
        Some(t) => t[..t.rfind('(')?].trim_end(),
        None => task,
    };
    let pid: i32 = task.rsplit_once('-')?.1.parse().ok()?;
    let field = |key: &str| -> Option<u64> {
        args.split_whitespace()
            .find_map(|kv| kv.strip_prefix(key)?.strip_prefix('='))
            .and_then(|v| v.parse::<i64>().ok())
            .map(|v| v.max(0) as u64)
    };
    let priority = || {
        args.split_whitespace()
            .find_map(|kv| kv.strip_prefix("priority="))
            .and_then(|v| v.parse::<i32>().ok())
    };
    let event = match name {
        "memcg_reclaim_begin" => Event::Begin,
        "memcg_reclaim_end" => Event::End {
            reclaimed: field("nr_reclaimed")?,
        },
        "lru_shrink_inactive" => Event::Inactive {
            scanned: field("nr_scanned")?,
            reclaimed: field("nr_reclaimed").unwrap_or(0),
            ref_keep: field("nr_ref_keep").unwrap_or(0),
            activated: field("nr_activate_anon").unwrap_or(0)
                + field("nr_activate_file").unwrap_or(0),
            priority: priority()?,
        },
        "lru_shrink_active" => Event::Active {
            deactivated: field("nr_deactivated").unwrap_or(0),
            priority: priority()?,
        },
        "lru_isolate" => Event::Isolate {
            inactive: args
                .split_whitespace()
                .find_map(|kv| kv.strip_prefix("lru="))?
                .starts_with("inactive"),
        },
        "ipi_send" => {
            let site = args
                .split_whitespace()
                .find_map(|kv| kv.strip_prefix("callsite="))?;
            if !site.starts_with(FLUSH_CALLSITE) {
                return None;
            }
            let targets = args.split_whitespace().find_map(|kv| {
                kv.strip_prefix("cpu=")
                    .and_then(|c| c.parse::<u32>().ok())
                    .map(cpu_bit)
                    .or_else(|| kv.strip_prefix("cpumask=").map(cpu_list_bits))
            })?;
            Event::FlushIpi { targets }
        }
        "sched_switch" => {
            let next: i32 = args
                .split_whitespace()
                .find_map(|kv| kv.strip_prefix("next_pid="))?
                .parse()
                .ok()?;
            // `R` or `R+` (preempted): the task left the CPU able to run.
            let prev_runnable = args
                .split_whitespace()
                .find_map(|kv| kv.strip_prefix("prev_state="))?
                .starts_with('R');
            Event::Switch {
                next,
                prev_runnable,
            }
        }
        // Only the filter's case is recorded; a trace without the filter is checked here too.
        "tlb_flush" => {
            let hardirq = matches!(flags.trim().chars().nth(2), Some('h' | 'H'));
            if !hardirq || !args.trim_end().ends_with("(0)") {
                return None;
            }
            Event::InitMm
        }
        "ipi_done" => Event::IpiDone,
        _ => return None,
    };
    Some(Traced {
        pid,
        cpu,
        t_ns,
        event,
    })
}

/// CPU `cpu`'s bit of a target mask (none above 63).
fn cpu_bit(cpu: u32) -> u64 {
    1u64.checked_shl(cpu).unwrap_or(0)
}

/// A cpumask as tracefs prints it (`%*pbl`: `1`, `0-3`, `0,2-5`) as bits.
fn cpu_list_bits(list: &str) -> u64 {
    list.split(',')
        .filter_map(|part| match part.split_once('-') {
            Some((a, b)) => Some((a.parse::<u32>().ok()?, b.parse::<u32>().ok()?)),
            None => part.parse::<u32>().ok().map(|c| (c, c)),
        })
        .flat_map(|(a, b)| a..=b.min(63))
        .fold(0, |bits, c| bits | cpu_bit(c))
}

/// One finished charge: begin and end of a pid, its scans between (times on the trace clock,
/// `mono`: CLOCK_MONOTONIC where the kernel has it).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Charge {
    /// Its task.
    pub pid: i32,
    pub begin_ns: u64,
    pub duration_ns: u64,
    pub reclaimed: u64,
    /// Pages its inactive-list scans looked at (`nr_scanned`).
    pub scanned: u64,
    /// Of them, kept for their references (`nr_ref_keep`) and activated (`nr_activate_*`).
    pub ref_keep: u64,
    pub activated: u64,
    pub deactivated: u64,
    /// The lowest priority its scans reached (None: no shrink event).
    pub lowest_priority: Option<i32>,
    /// IPIs its task sent to flush other CPUs' TLBs (0 where the IPI events are not traced).
    pub remote_flushes: u64,
    /// Of the CPUs those IPIs went to, how many ran a task and how many were idle when it was
    /// sent (0 where the scheduler's switches are not traced; a CPU not yet seen switching is in
    /// neither).
    pub flushes_to_running: u64,
    pub flushes_to_idle: u64,
    /// Whether every other CPU was idle when it began (None where the scheduler's switches are
    /// not traced, or no other CPU had been seen switching yet).
    pub others_idle_at_begin: Option<bool>,
    /// Time its task spent off the CPU while runnable (preempted) and asleep (waiting, e.g.
    /// for a write), ns (0 where the scheduler's switches are not traced).
    pub preempted_ns: u64,
    pub blocked_ns: u64,
    /// Pages its inactive scans neither freed nor kept for their references (`nr_scanned -
    /// nr_reclaimed - nr_ref_keep - nr_activate_*`): anonymous pages it wrote whose writes were
    /// still in flight (`shrink_folio_list` keeps a page under writeback; a later scan frees
    /// it), pages whose write failed (zram at its memory limit: kept dirty in the swap cache),
    /// and the rare page it could not unmap or lock.
    pub left_writing: u64,
    /// Time from each of its inactive lists' isolations to that list's shrink event: in
    /// `shrink_folio_list` and the putback, ns (0 where the isolations are not traced,
    /// [`Tracer::start_with_isolation`]).
    pub folio_list_ns: u64,
    /// Summed round trips of its flush IPIs (each from the IPI to its target's handler end):
    /// the time its task waited for other CPUs to flush, ns (0 where the handlers' ends are not
    /// traced). The sender waits for each flush (`on_each_cpu_cond_mask` with `wait`).
    pub flush_wait_ns: u64,
}

/// What the trace says of the workload's charges.
#[derive(Debug, Default)]
struct Summary {
    charges: u64,
    /// Each charge's `(begin, end)`, ns.
    spans: Vec<(u64, u64)>,
    reclaimed: Vec<u64>,
    scanned: Vec<u64>,
    duration_ns: Vec<u64>,
    /// Priority (or `none`) -> charges.
    lowest_priority: BTreeMap<String, u64>,
    ref_keep: u64,
    activated: u64,
    deactivated: u64,
    events_lost: u64,
    /// Begins of the workload with no end (the trace ended, or the end was lost).
    unfinished: u64,
    /// Ends of the workload with no begin (lost, or before the trace began).
    ends_without_begin: u64,
    /// Shrink events of the workload outside a charge (global or kswapd-less direct reclaim).
    scans_outside_charges: u64,
    /// Charges of other processes (other cgroups' limits), left out.
    other_charges: u64,
    /// Per charge, its remote flushes and its pages left writing.
    remote_flushes: Vec<u64>,
    left_writing: Vec<u64>,
    /// The charges with no remote flush, and with some: (charges, their summed duration ns).
    without_flushes: (u64, u64),
    with_flushes: (u64, u64),
    /// The IPI events were recorded (else `remote_flushes` is not reported).
    ipis_traced: bool,
    /// Per charge, its task's time off the CPU preempted and asleep (ns).
    preempted_ns: Vec<u64>,
    blocked_ns: Vec<u64>,
    /// Per charge, its time in `shrink_folio_list` ([`Charge::folio_list_ns`]).
    folio_list_ns: Vec<u64>,
    /// Flush IPIs of the charges to a CPU that ran a task, and to an idle one.
    flushes_to_running: u64,
    flushes_to_idle: u64,
    /// Charges and their flush IPIs by the other CPUs at the charge's begin: [every one idle,
    /// some running] (charges whose begin found them unknown are in neither).
    by_others_at_begin: [(u64, u64); 2],
    /// Times an idle CPU was switched to `init_mm` by a flush IPI ([`Event::InitMm`]).
    joined_init_mm: u64,
    /// The scheduler's switches and the `init_mm` flushes were recorded (else neither the
    /// flushes' targets, the `init_mm` entries nor the time off the CPU are reported).
    cpu_states_traced: bool,
    /// Each charge's flush IPI's round trip (to its target's handler end), ns: [to a CPU that
    /// ran a task, to an idle one].
    round_trip_ns: [Vec<u64>; 2],
    /// The IPI handlers' ends were recorded (else no round trips are reported).
    ipi_ends_traced: bool,
    /// The inactive lists' isolations were recorded (else no charge's `folio_list_us`).
    isolations_traced: bool,
    /// The longest charges ([`nvmswap_core::metrics::LONGEST_CHARGES`]), longest first, whole:
    /// what sets the tail.
    longest: Vec<Charge>,
    /// For each of `longest`, what the CPUs ran inside it besides its task
    /// ([`ran_beside`]); empty where the switches were not traced.
    longest_ran_beside: Vec<Vec<(String, u64)>>,
}

/// A task's stretch on a CPU, from one switch to the next (ns).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Run {
    pid: i32,
    from: u64,
    to: u64,
}

/// How many of a charge's neighbours `ran_beside` names: the rest are summed as `other`.
const RAN_BESIDE_NAMED: usize = 5;

/// What the CPUs ran while `c` went on, besides `c`'s own task and the idle task: time summed
/// over the CPUs by who ran, most first; the workload's tasks (`pids`) as `tab`, others by
/// command name, the least beyond [`RAN_BESIDE_NAMED`] as `other`. These are the tasks a
/// charge's flush IPIs interrupt.
fn ran_beside(
    c: &Charge,
    runs: &[Run],
    pids: &BTreeSet<i32>,
    comms: &BTreeMap<i32, String>,
) -> Vec<(String, u64)> {
    let (begin, end) = (c.begin_ns, c.begin_ns + c.duration_ns);
    let mut by: BTreeMap<String, u64> = BTreeMap::new();
    for r in runs {
        if r.pid == 0 || r.pid == c.pid || r.to <= begin || r.from >= end {
            continue;
        }
        let who = if pids.contains(&r.pid) {
            "tab".to_string()
        } else {
            comms
                .get(&r.pid)
                .cloned()
                .unwrap_or_else(|| format!("pid {}", r.pid))
        };
        *by.entry(who).or_default() += r.to.min(end) - r.from.max(begin);
    }
    let mut ranked: Vec<(String, u64)> = by.into_iter().collect();
    ranked.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    if ranked.len() > RAN_BESIDE_NAMED {
        let rest: u64 = ranked.drain(RAN_BESIDE_NAMED..).map(|(_, ns)| ns).sum();
        ranked.push(("other".to_string(), rest));
    }
    ranked
}

/// Pairs begin/end per pid over the events of `pids`, attributing that pid's shrink events in
/// between to the charge. Also every task's stretches on the CPUs ([`Run`]), from the switches.
fn charges(parsed: &Parsed, pids: &BTreeSet<i32>, s: &mut Summary) -> (Vec<Charge>, Vec<Run>) {
    let mut open: BTreeMap<i32, Charge> = BTreeMap::new();
    let mut done = Vec::new();
    let mut runs = Vec::new();
    // Each CPU's task since its last switch, and since when.
    let mut on_cpu: BTreeMap<u32, (i32, u64)> = BTreeMap::new();
    // Each CPU's state as its last switch left it: Some(true) idle, Some(false) a task; a CPU
    // not yet seen switching is unknown.
    let mut idle: BTreeMap<u32, bool> = BTreeMap::new();
    // A charging task off its CPU: since when, and whether it left runnable (preempted).
    let mut off_cpu: BTreeMap<i32, (u64, bool)> = BTreeMap::new();
    // A charging task's last inactive-list isolation, not yet followed by its shrink event.
    let mut isolated: BTreeMap<i32, u64> = BTreeMap::new();
    // Per target CPU, the charges' flush IPIs it has not yet handled: (sent, target idle,
    // sender's pid).
    let mut unhandled: BTreeMap<u32, Vec<(u64, bool, i32)>> = BTreeMap::new();
    for e in &parsed.events {
        // What CPUs do is every task's doing, not only the workload's.
        match e.event {
            Event::Switch {
                next,
                prev_runnable,
            } => {
                idle.insert(e.cpu, next == 0);
                if let Some((pid, from)) = on_cpu.insert(e.cpu, (next, e.t_ns)) {
                    runs.push(Run {
                        pid,
                        from,
                        to: e.t_ns,
                    });
                }
                if open.contains_key(&e.pid) {
                    off_cpu.insert(e.pid, (e.t_ns, prev_runnable));
                }
                if let (Some(c), Some((since, preempted))) =
                    (open.get_mut(&next), off_cpu.remove(&next))
                {
                    let away = e.t_ns.saturating_sub(since);
                    if preempted {
                        c.preempted_ns += away;
                    } else {
                        c.blocked_ns += away;
                    }
                }
                continue;
            }
            Event::InitMm => {
                s.joined_init_mm += (idle.get(&e.cpu) == Some(&true)) as u64;
                continue;
            }
            Event::IpiDone => {
                // One interrupt runs every function queued for the CPU by then.
                for (sent, was_idle, pid) in unhandled.remove(&e.cpu).unwrap_or_default() {
                    let round_trip = e.t_ns.saturating_sub(sent);
                    s.round_trip_ns[usize::from(was_idle)].push(round_trip);
                    if let Some(c) = open.get_mut(&pid) {
                        c.flush_wait_ns += round_trip;
                    }
                }
                continue;
            }
            _ => {}
        }
        if !pids.contains(&e.pid) {
            s.other_charges += (e.event == Event::Begin) as u64;
            continue;
        }
        let lower = |c: &mut Charge, p: i32| {
            c.lowest_priority = Some(c.lowest_priority.map_or(p, |q| q.min(p)));
        };
        match e.event {
            Event::Begin => {
                off_cpu.remove(&e.pid);
                isolated.remove(&e.pid);
                let others: Vec<bool> = idle
                    .iter()
                    .filter(|(&cpu, _)| cpu != e.cpu)
                    .map(|(_, &is_idle)| is_idle)
                    .collect();
                let fresh = Charge {
                    pid: e.pid,
                    begin_ns: e.t_ns,
                    others_idle_at_begin: (!others.is_empty())
                        .then(|| others.iter().all(|&is_idle| is_idle)),
                    ..Charge::default()
                };
                if open.insert(e.pid, fresh).is_some() {
                    s.unfinished += 1; // its end was lost
                }
            }
            Event::End { reclaimed } => match open.remove(&e.pid) {
                Some(mut c) => {
                    c.duration_ns = e.t_ns.saturating_sub(c.begin_ns);
                    c.reclaimed = reclaimed;
                    done.push(c);
                }
                None => s.ends_without_begin += 1,
            },
            Event::Inactive {
                scanned,
                reclaimed,
                ref_keep,
                activated,
                priority,
            } => match open.get_mut(&e.pid) {
                Some(c) => {
                    if let Some(since) = isolated.remove(&e.pid) {
                        c.folio_list_ns += e.t_ns.saturating_sub(since);
                    }
                    c.scanned += scanned;
                    c.left_writing += scanned.saturating_sub(reclaimed + ref_keep + activated);
                    c.ref_keep += ref_keep;
                    c.activated += activated;
                    lower(c, priority);
                }
                None => s.scans_outside_charges += 1,
            },
            Event::Active {
                deactivated,
                priority,
            } => match open.get_mut(&e.pid) {
                Some(c) => {
                    c.deactivated += deactivated;
                    lower(c, priority);
                }
                None => s.scans_outside_charges += 1,
            },
            Event::Isolate { inactive } => {
                if inactive && open.contains_key(&e.pid) {
                    isolated.insert(e.pid, e.t_ns);
                } else {
                    isolated.remove(&e.pid);
                }
            }
            // A flush outside a charge is not reclaim's (munmap, mprotect, migration).
            Event::FlushIpi { targets } => {
                if let Some(c) = open.get_mut(&e.pid) {
                    c.remote_flushes += 1;
                    for (&cpu, &is_idle) in &idle {
                        if targets & cpu_bit(cpu) != 0 {
                            if is_idle {
                                c.flushes_to_idle += 1;
                            } else {
                                c.flushes_to_running += 1;
                            }
                            unhandled
                                .entry(cpu)
                                .or_default()
                                .push((e.t_ns, is_idle, e.pid));
                        }
                    }
                }
            }
            Event::Switch { .. } | Event::InitMm | Event::IpiDone => {
                unreachable!("handled above")
            }
        }
    }
    s.unfinished += open.len() as u64;
    // The tasks still on their CPUs ran to the trace's last event.
    let last = parsed.events.last().map_or(0, |e| e.t_ns);
    runs.extend(on_cpu.into_values().map(|(pid, from)| Run {
        pid,
        from,
        to: last,
    }));
    (done, runs)
}

fn summarise(parsed: &Parsed, pids: &BTreeSet<i32>, lost_in_stats: u64) -> Summary {
    let mut s = Summary {
        events_lost: lost_in_stats.max(parsed.lost_marked),
        ..Summary::default()
    };
    let (done, runs) = charges(parsed, pids, &mut s);
    for c in done {
        s.charges += 1;
        s.reclaimed.push(c.reclaimed);
        s.scanned.push(c.scanned);
        s.duration_ns.push(c.duration_ns);
        let key = c
            .lowest_priority
            .map_or_else(|| "none".to_string(), |p| p.to_string());
        *s.lowest_priority.entry(key).or_default() += 1;
        s.ref_keep += c.ref_keep;
        s.activated += c.activated;
        s.deactivated += c.deactivated;
        s.remote_flushes.push(c.remote_flushes);
        s.flushes_to_running += c.flushes_to_running;
        s.flushes_to_idle += c.flushes_to_idle;
        if let Some(all_idle) = c.others_idle_at_begin {
            let e = &mut s.by_others_at_begin[usize::from(!all_idle)];
            e.0 += 1;
            e.1 += c.remote_flushes;
        }
        s.preempted_ns.push(c.preempted_ns);
        s.blocked_ns.push(c.blocked_ns);
        s.folio_list_ns.push(c.folio_list_ns);
        s.left_writing.push(c.left_writing);
        s.spans.push((c.begin_ns, c.begin_ns + c.duration_ns));
        let group = if c.remote_flushes == 0 {
            &mut s.without_flushes
        } else {
            &mut s.with_flushes
        };
        group.0 += 1;
        group.1 += c.duration_ns;
        s.longest.push(c);
    }
    // Longest first; equal durations in trace order.
    s.longest.sort_by_key(|c| std::cmp::Reverse(c.duration_ns));
    s.longest.truncate(nvmswap_core::metrics::LONGEST_CHARGES);
    s.longest_ran_beside = s
        .longest
        .iter()
        .map(|c| ran_beside(c, &runs, pids, &parsed.comms))
        .collect();
    s
}

/// `{mean, p50, p99, max}` of `values` divided by `unit`, exactly.
fn dist(values: &[u64], unit: f64) -> serde_json::Value {
    nvmswap_core::metrics::exact_distribution(values, unit)
}

impl Summary {
    fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "charges": self.charges,
            "pages_reclaimed": dist(&self.reclaimed, 1.0),
            "pages_scanned": dist(&self.scanned, 1.0),
            "duration_us": dist(&self.duration_ns, 1_000.0),
            "pages_left_writing": dist(&self.left_writing, 1.0),
            "lowest_priority": self.lowest_priority,
            "beside_another": nvmswap_core::metrics::charge_overlap_json(&self.spans),
            "ref_keep": self.ref_keep,
            "activated": self.activated,
            "deactivated": self.deactivated,
            "events_lost": self.events_lost,
            "unfinished_charges": self.unfinished,
            "ends_without_begin": self.ends_without_begin,
            "scans_outside_charges": self.scans_outside_charges,
            "other_processes_charges": self.other_charges,
            "remote_flushes": self.remote_flushes_json(),
            "folio_list_us": if self.isolations_traced {
                dist(&self.folio_list_ns, 1_000.0)
            } else {
                serde_json::Value::Null
            },
            "longest_charges": self.longest_json(),
            "off_cpu_us": if self.cpu_states_traced {
                serde_json::json!({
                    "preempted": dist(&self.preempted_ns, 1_000.0),
                    "blocked": dist(&self.blocked_ns, 1_000.0),
                })
            } else {
                serde_json::Value::Null
            },
        })
    }

    /// `longest_charges` of `extra.memcg_reclaim`: each of the longest charges whole, null what
    /// its events were not traced for.
    fn longest_json(&self) -> serde_json::Value {
        let traced = |on: bool, v: u64| on.then_some(v);
        let records: Vec<nvmswap_core::metrics::ChargeRecord> = self
            .longest
            .iter()
            .zip(&self.longest_ran_beside)
            .map(|(c, ran)| nvmswap_core::metrics::ChargeRecord {
                begin_ns: c.begin_ns,
                duration_ns: c.duration_ns,
                scanned: c.scanned,
                reclaimed: c.reclaimed,
                left_writing: c.left_writing,
                lowest_priority: c.lowest_priority.map(i64::from),
                ref_keep: Some(c.ref_keep),
                activated: Some(c.activated),
                deactivated: Some(c.deactivated),
                folio_list_ns: traced(self.isolations_traced, c.folio_list_ns),
                remote_flushes: traced(self.ipis_traced, c.remote_flushes),
                flushes_to_running: traced(self.cpu_states_traced, c.flushes_to_running),
                flushes_to_idle: traced(self.cpu_states_traced, c.flushes_to_idle),
                flush_wait_ns: traced(self.ipi_ends_traced, c.flush_wait_ns),
                others_idle_at_begin: c.others_idle_at_begin,
                preempted_ns: traced(self.cpu_states_traced, c.preempted_ns),
                blocked_ns: traced(self.cpu_states_traced, c.blocked_ns),
                ran_beside: self.cpu_states_traced.then(|| ran.clone()),
            })
            .collect();
        nvmswap_core::metrics::longest_charges_json(&records, &self.spans)
    }

    /// `remote_flushes` of `extra.memcg_reclaim`: null where the IPI events were not traced.
    fn remote_flushes_json(&self) -> serde_json::Value {
        if !self.ipis_traced {
            return serde_json::Value::Null;
        }
        let mean_us = |(n, ns): (u64, u64)| {
            if n == 0 {
                serde_json::Value::Null
            } else {
                serde_json::json!(ns as f64 / n as f64 / 1_000.0)
            }
        };
        let traced = |n: u64| {
            if self.cpu_states_traced {
                serde_json::json!(n)
            } else {
                serde_json::Value::Null
            }
        };
        serde_json::json!({
            "total": self.remote_flushes.iter().sum::<u64>(),
            "per_charge": dist(&self.remote_flushes, 1.0),
            "charges_with": self.with_flushes.0,
            "duration_us_mean_with": mean_us(self.with_flushes),
            "duration_us_mean_without": mean_us(self.without_flushes),
            "to_running_cpu": traced(self.flushes_to_running),
            "to_idle_cpu": traced(self.flushes_to_idle),
            "idle_cpu_joined_init_mm": traced(self.joined_init_mm),
            "by_other_cpus_at_begin": if self.cpu_states_traced {
                nvmswap_core::metrics::by_other_cpus_at_begin_json(self.by_others_at_begin)
            } else {
                serde_json::Value::Null
            },
            "round_trip_us": if self.ipi_ends_traced {
                serde_json::json!({
                    "to_running_cpu": dist(&self.round_trip_ns[0], 1_000.0),
                    "to_idle_cpu": dist(&self.round_trip_ns[1], 1_000.0),
                })
            } else {
                serde_json::Value::Null
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pids(p: &[i32]) -> BTreeSet<i32> {
        p.iter().copied().collect()
    }

    const INACTIVE: &str = "mm_vmscan_lru_shrink_inactive: nid=0 nr_scanned";

    /// Two tabs (101, 102) charging at the same time on two CPUs, a charge of another process
    /// (900), a scan of 101 outside any charge, and a begin of 102 never ended.
    fn trace() -> String {
        format!(
            "# tracer: nop\n\
#\n\
#           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION\n\
         nvmswap-101     [000] ..... 100.000000: mm_vmscan_memcg_reclaim_begin: order=0 gfp_flags=GFP_HIGHUSER_MOVABLE\n\
         nvmswap-102     [001] ..... 100.000010: mm_vmscan_memcg_reclaim_begin: order=0 gfp_flags=GFP_HIGHUSER_MOVABLE\n\
         nvmswap-101     [000] ..... 100.000020: {INACTIVE}=3 nr_reclaimed=3 nr_dirty=0 nr_writeback=0 nr_congested=0 nr_immediate=0 nr_activate_anon=0 nr_activate_file=0 nr_ref_keep=0 nr_unmap_fail=0 priority=12 flags=RECLAIM_WB_ANON|RECLAIM_WB_ASYNC\n\
         nvmswap-102     [001] ..... 100.000030: {INACTIVE}=8 nr_reclaimed=8 nr_dirty=0 nr_writeback=0 nr_congested=0 nr_immediate=0 nr_activate_anon=1 nr_activate_file=0 nr_ref_keep=2 nr_unmap_fail=0 priority=10 flags=RECLAIM_WB_ANON|RECLAIM_WB_ASYNC\n\
   other-tool-x-900 (900) [001] ..... 100.000040: mm_vmscan_memcg_reclaim_begin: order=0 gfp_flags=GFP_KERNEL\n\
         nvmswap-101     [001] ..... 100.000050: {INACTIVE}=34 nr_reclaimed=30 nr_dirty=0 nr_writeback=0 nr_congested=0 nr_immediate=0 nr_activate_anon=2 nr_activate_file=1 nr_ref_keep=4 nr_unmap_fail=0 priority=8 flags=RECLAIM_WB_ANON|RECLAIM_WB_ASYNC\n\
         nvmswap-101     [001] ..... 100.000060: mm_vmscan_lru_shrink_active: nid=0 nr_taken=32 nr_active=0 nr_deactivated=32 nr_referenced=0 priority=8 flags=RECLAIM_WB_ANON|RECLAIM_WB_ASYNC\n\
         nvmswap-101     [001] ..... 100.000617: mm_vmscan_memcg_reclaim_end: nr_reclaimed=33\n\
   other-tool-x-900 (900) [001] ..... 100.000700: mm_vmscan_memcg_reclaim_end: nr_reclaimed=40\n\
         nvmswap-102     [000] ..... 100.001030: mm_vmscan_memcg_reclaim_end: nr_reclaimed=40\n\
         nvmswap-101     [000] ..... 100.002000: {INACTIVE}=1 nr_reclaimed=1 nr_dirty=0 nr_writeback=0 nr_congested=0 nr_immediate=0 nr_activate_anon=0 nr_activate_file=0 nr_ref_keep=0 nr_unmap_fail=0 priority=12 flags=RECLAIM_WB_ANON|RECLAIM_WB_ASYNC\n\
         nvmswap-102     [000] ..... 100.003000: mm_vmscan_memcg_reclaim_begin: order=0 gfp_flags=GFP_HIGHUSER_MOVABLE\n"
        )
    }

    #[test]
    fn tracefs_lines_parse_to_events_of_their_task() {
        let p = parse(&trace());
        assert_eq!(p.events.len(), 12);
        assert_eq!(p.events[1].cpu, 1);
        assert_eq!(
            p.events[0],
            Traced {
                pid: 101,
                cpu: 0,
                t_ns: 100_000_000_000,
                event: Event::Begin
            }
        );
        assert_eq!(p.events[4].pid, 900, "comm with '-' and a (tgid) column");
        assert_eq!(
            p.events[5].event,
            Event::Inactive {
                scanned: 34,
                reclaimed: 30,
                ref_keep: 4,
                activated: 3,
                priority: 8
            }
        );
        assert_eq!(
            p.events[6].event,
            Event::Active {
                deactivated: 32,
                priority: 8
            }
        );
        assert_eq!(p.events[7].event, Event::End { reclaimed: 33 });
    }

    #[test]
    fn charges_pair_begin_and_end_per_pid_with_their_scans() {
        let p = parse(&trace());
        let mut s = Summary::default();
        let (c, _) = charges(&p, &pids(&[101, 102]), &mut s);
        assert_eq!(
            c,
            vec![
                Charge {
                    pid: 101,
                    begin_ns: 100_000_000_000,
                    duration_ns: 617_000,
                    reclaimed: 33,
                    scanned: 37,
                    ref_keep: 4,
                    activated: 3,
                    deactivated: 32,
                    lowest_priority: Some(8),
                    remote_flushes: 0,
                    flushes_to_running: 0,
                    flushes_to_idle: 0,
                    others_idle_at_begin: None,
                    preempted_ns: 0,
                    blocked_ns: 0,
                    left_writing: 0,
                    folio_list_ns: 0,
                    flush_wait_ns: 0,
                },
                Charge {
                    pid: 102,
                    begin_ns: 100_000_010_000,
                    duration_ns: 1_020_000,
                    reclaimed: 40,
                    scanned: 8,
                    ref_keep: 2,
                    activated: 1,
                    deactivated: 0,
                    lowest_priority: Some(10),
                    remote_flushes: 0,
                    flushes_to_running: 0,
                    flushes_to_idle: 0,
                    others_idle_at_begin: None,
                    preempted_ns: 0,
                    blocked_ns: 0,
                    left_writing: 0,
                    folio_list_ns: 0,
                    flush_wait_ns: 0,
                },
            ],
            "interleaved on two CPUs, each pid's scans go to its own charge"
        );
        assert_eq!(s.unfinished, 1, "102's last begin has no end");
        assert_eq!(s.scans_outside_charges, 1, "101's scan at 100.002");
        assert_eq!(s.other_charges, 1, "pid 900 is not the workload's");
        assert_eq!(s.ends_without_begin, 0);
    }

    #[test]
    fn the_summary_has_known_answers() {
        let v = summarise(&parse(&trace()), &pids(&[101, 102]), 0).to_json();
        assert_eq!(v["charges"], 2);
        assert_eq!(v["pages_reclaimed"]["mean"], 36.5);
        assert_eq!(v["pages_reclaimed"]["p50"], 40.0);
        assert_eq!(v["pages_reclaimed"]["max"], 40.0);
        assert_eq!(v["pages_scanned"]["mean"], 22.5);
        assert_eq!(v["pages_scanned"]["p99"], 37.0);
        assert_eq!(v["duration_us"]["mean"], 818.5);
        assert_eq!(v["duration_us"]["p50"], 1020.0);
        assert_eq!(v["lowest_priority"], serde_json::json!({"8": 1, "10": 1}));
        assert_eq!(v["ref_keep"], 6);
        assert_eq!(v["activated"], 4);
        assert_eq!(v["deactivated"], 32);
        assert_eq!(v["events_lost"], 0);
        assert_eq!(v["unfinished_charges"], 1);
        assert_eq!(v["other_processes_charges"], 1);
        // Only 101 is the workload's: 102's charges count as another process's.
        let only = summarise(&parse(&trace()), &pids(&[101]), 0).to_json();
        assert_eq!(only["charges"], 1);
        assert_eq!(only["other_processes_charges"], 3);
    }

    #[test]
    fn lost_events_are_reported_from_the_stats_and_the_trace() {
        let stats = "entries: 120\noverrun: 7\ncommit overrun: 1\nbytes: 4000\n\
                     oldest event ts: 1.0\nnow ts: 2.0\ndropped events: 2\nread events: 0\n";
        assert_eq!(lost_in_stats(stats), 10);
        // The buffer overwrote the oldest events: the first end has no begin.
        let text = "CPU:1 [LOST 5 EVENTS]\n\
            nvmswap-7 [001] ..... 1.000100: mm_vmscan_memcg_reclaim_end: nr_reclaimed=32\n\
            nvmswap-7 [001] ..... 1.000200: mm_vmscan_memcg_reclaim_begin: order=0 gfp_flags=GFP_HIGHUSER_MOVABLE\n\
            nvmswap-7 [001] ..... 1.000300: mm_vmscan_memcg_reclaim_end: nr_reclaimed=64\n";
        let p = parse(text);
        assert_eq!(p.lost_marked, 5);
        let s = summarise(&p, &pids(&[7]), 0);
        assert_eq!(s.events_lost, 5);
        assert_eq!(s.ends_without_begin, 1);
        assert_eq!(s.charges, 1);
        assert_eq!(summarise(&p, &pids(&[7]), 10).events_lost, 10);
        let v = s.to_json();
        assert_eq!(v["lowest_priority"], serde_json::json!({"none": 1}));
        assert_eq!(v["duration_us"]["max"], 100.0);
    }

    #[test]
    fn a_charges_tlb_flush_ipis_are_counted_and_other_ipis_are_not() {
        let begin = "mm_vmscan_memcg_reclaim_begin: order=0 gfp_flags=GFP_HIGHUSER_MOVABLE";
        let flush = "ipi_send_cpu: cpu=1 callsite=on_each_cpu_cond_mask+0x20/0x60 \
                     callback=generic_smp_call_function_single_interrupt+0x0/0x10";
        let wake = "ipi_send_cpu: cpu=1 callsite=ttwu_queue_wakelist+0x11d/0x150 \
                    callback=0x0";
        let mask = "ipi_send_cpumask: cpumask=1 callsite=on_each_cpu_cond_mask+0x20/0x60 \
                    callback=flush_tlb_func+0x0/0x1f0";
        let text = format!(
            "nvmswap-7 [000] ..... 1.000000: {begin}\n\
             nvmswap-7 [000] ...2. 1.000010: {flush}\n\
             nvmswap-7 [000] ...2. 1.000020: {wake}\n\
             nvmswap-8 [001] ...2. 1.000025: {flush}\n\
             nvmswap-7 [000] ...2. 1.000030: {mask}\n\
             nvmswap-7 [000] ..... 1.000100: mm_vmscan_memcg_reclaim_end: nr_reclaimed=32\n\
             nvmswap-7 [000] ...2. 1.000200: {flush}\n\
             nvmswap-7 [000] ..... 1.000300: {begin}\n\
             nvmswap-7 [000] ..... 1.000340: mm_vmscan_memcg_reclaim_end: nr_reclaimed=32\n"
        );
        let p = parse(&text);
        let mut s = Summary::default();
        let (c, _) = charges(&p, &pids(&[7, 8]), &mut s);
        // Two flushes inside 7's first charge (the wake-up IPI is not one; 8 is not charging;
        // the flush after the end is outside any charge).
        assert_eq!(
            c.iter().map(|c| c.remote_flushes).collect::<Vec<_>>(),
            [2, 0]
        );
        let mut summary = summarise(&p, &pids(&[7, 8]), 0);
        assert_eq!(summary.to_json()["remote_flushes"], serde_json::Value::Null);
        summary.ipis_traced = true;
        let v = summary.to_json()["remote_flushes"].clone();
        assert_eq!(v["total"], 2);
        assert_eq!(v["charges_with"], 1);
        assert_eq!(v["duration_us_mean_with"], 100.0);
        assert_eq!(v["duration_us_mean_without"], 40.0);
        assert_eq!(v["per_charge"]["max"], 2.0);
    }

    #[test]
    fn a_flush_ipi_counts_its_target_as_running_or_idle_and_init_mm_entries_are_counted() {
        // CPU 1 runs tab 8, then goes idle; a flush IPI sent before it slept reaches it
        // idle and switches it to init_mm (hardirq flush on task switch); 7's later flushes
        // find it idle. Before CPU 1's first switch its state is unknown. A task-switch flush
        // outside an interrupt, and a hardirq shootdown, are not init_mm entries.
        let begin = "mm_vmscan_memcg_reclaim_begin: order=0 gfp_flags=GFP_HIGHUSER_MOVABLE";
        let flush = "ipi_send_cpu: cpu=1 callsite=on_each_cpu_cond_mask+0x20/0x60 \
                     callback=generic_smp_call_function_single_interrupt+0x0/0x10";
        let both = "ipi_send_cpumask: cpumask=0-1 callsite=on_each_cpu_cond_mask+0x20/0x60 \
                    callback=flush_tlb_func+0x0/0x1f0";
        let to_tab = "sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R \
                      ==> next_comm=nvmswap next_pid=8 next_prio=120";
        let to_idle = "sched_switch: prev_comm=nvmswap prev_pid=8 prev_prio=120 prev_state=S \
                       ==> next_comm=swapper/1 next_pid=0 next_prio=120";
        let init_mm = "tlb_flush: pages:-1 reason:flush on task switch (0)";
        let shootdown = "tlb_flush: pages:-1 reason:remote shootdown (1)";
        let text = format!(
            "nvmswap-7 [000] ..... 1.000000: {begin}\n\
             nvmswap-7 [000] ...2. 1.000005: {flush}\n\
             <idle>-0 [001] d..2. 1.000010: {to_tab}\n\
             nvmswap-7 [000] ...2. 1.000020: {flush}\n\
             nvmswap-8 [001] d.h.. 1.000021: {shootdown}\n\
             nvmswap-8 [001] d..2. 1.000030: {to_idle}\n\
             <idle>-0 [001] d.h1. 1.000032: {init_mm}\n\
             nvmswap-7 [000] ...2. 1.000040: {flush}\n\
             nvmswap-7 [000] ...2. 1.000050: {both}\n\
             <idle>-0 [001] d..2. 1.000060: {init_mm}\n\
             nvmswap-7 [000] ..... 1.000100: mm_vmscan_memcg_reclaim_end: nr_reclaimed=32\n"
        );
        let p = parse(&text);
        assert_eq!(p.events[2].cpu, 1);
        assert_eq!(
            p.events[2].event,
            Event::Switch {
                next: 8,
                prev_runnable: true
            }
        );
        assert_eq!(p.events[5].event, Event::InitMm);
        assert_eq!(p.events[6].event, Event::FlushIpi { targets: 0b10 });
        assert_eq!(p.events[7].event, Event::FlushIpi { targets: 0b11 });
        assert_eq!(
            p.events.len(),
            9,
            "the shootdown and the threaded flush are left out"
        );
        let mut s = Summary::default();
        let (c, _) = charges(&p, &pids(&[7]), &mut s);
        assert_eq!(c[0].remote_flushes, 4);
        // Running: the second flush. Idle: the third and the mask's CPU 1 (CPU 0 unknown).
        assert_eq!((c[0].flushes_to_running, c[0].flushes_to_idle), (1, 2));
        assert_eq!(
            c[0].others_idle_at_begin, None,
            "CPU 1 not yet seen switching"
        );
        assert_eq!(s.joined_init_mm, 1);
        let mut summary = summarise(&p, &pids(&[7]), 0);
        summary.ipis_traced = true;
        assert_eq!(
            summary.to_json()["remote_flushes"]["to_idle_cpu"],
            serde_json::Value::Null,
            "not reported without the scheduler's switches"
        );
        summary.cpu_states_traced = true;
        let v = summary.to_json()["remote_flushes"].clone();
        assert_eq!(v["to_running_cpu"], 1);
        assert_eq!(v["to_idle_cpu"], 2);
        assert_eq!(v["idle_cpu_joined_init_mm"], 1);
    }

    #[test]
    fn what_ran_beside_a_charge_is_summed_by_who_over_the_other_cpus() {
        // Charge 7 on CPU 0 from 1.000000 to 1.000100. CPU 1 runs tab 8 from before it to
        // 1.000030, a kworker to 1.000050, idles, then the driver from 1.000090 on (to the
        // trace's end, 1.000120). 7 itself is preempted on CPU 0 by a kworker for 10 µs. Tab 9
        // ran only before the charge.
        let sw = |prev: &str, prev_pid: i32, state: &str, next: &str, next_pid: i32| {
            format!(
                "sched_switch: prev_comm={prev} prev_pid={prev_pid} prev_prio=120 \
                 prev_state={state} ==> next_comm={next} next_pid={next_pid} next_prio=120"
            )
        };
        let begin = "mm_vmscan_memcg_reclaim_begin: order=0 gfp_flags=GFP_HIGHUSER_MOVABLE";
        let text = format!(
            "<idle>-0 [001] d..2. 0.900000: {}\n\
             tab-9 [001] d..2. 0.950000: {}\n\
             tab-7 [000] ..... 1.000000: {begin}\n\
             tab-7 [000] d..2. 1.000010: {}\n\
             kworker/0:1-30 [000] d..2. 1.000020: {}\n\
             tab-8 [001] d..2. 1.000030: {}\n\
             kworker/1:2-31 [001] d..2. 1.000050: {}\n\
             <idle>-0 [001] d..2. 1.000090: {}\n\
             tab-7 [000] ..... 1.000100: mm_vmscan_memcg_reclaim_end: nr_reclaimed=32\n\
             nvmswap-5 [001] d..2. 1.000120: {}\n",
            sw("swapper/1", 0, "R", "tab", 9),
            sw("tab", 9, "S", "tab", 8),
            sw("tab", 7, "R", "kworker/0:1", 30),
            sw("kworker/0:1", 30, "S", "tab", 7),
            sw("tab", 8, "S", "kworker/1:2", 31),
            sw("kworker/1:2", 31, "S", "swapper/1", 0),
            sw("swapper/1", 0, "R", "nvmswap driver", 5),
            sw("nvmswap driver", 5, "S", "swapper/1", 0),
        );
        let p = parse(&text);
        assert_eq!(p.comms.get(&5).map(String::as_str), Some("nvmswap driver"));
        let s = summarise(&p, &pids(&[7, 8, 9]), 0);
        assert_eq!(s.longest.len(), 1);
        assert_eq!(
            s.longest_ran_beside[0],
            [
                ("tab".to_string(), 30_000),
                ("kworker/1:2".to_string(), 20_000),
                ("kworker/0:1".to_string(), 10_000),
                ("nvmswap driver".to_string(), 10_000),
            ]
        );
        let mut traced = s;
        traced.cpu_states_traced = true;
        let v = traced.to_json();
        assert_eq!(v["longest_charges"][0]["ran_beside_us"]["tab"], 30.0);
        traced.cpu_states_traced = false;
        assert_eq!(
            traced.to_json()["longest_charges"][0]["ran_beside_us"],
            serde_json::Value::Null
        );
    }

    #[test]
    fn a_flush_ipis_round_trip_ends_at_its_targets_next_handler_end() {
        // Charge 7 on CPU 0 flushes CPU 1 while tab 8 runs there (handled 12 µs later), then
        // twice while CPU 1 idles: one interrupt handles both (40 and 30 µs). A handler end
        // with nothing of a charge's pending, and one on another CPU, count nothing.
        let flush = "ipi_send_cpu: cpu=1 callsite=on_each_cpu_cond_mask+0x20/0x60 \
                     callback=generic_smp_call_function_single_interrupt+0x0/0x10";
        let to_tab = "sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R \
                      ==> next_comm=nvmswap next_pid=8 next_prio=120";
        let to_idle = "sched_switch: prev_comm=nvmswap prev_pid=8 prev_prio=120 prev_state=S \
                       ==> next_comm=swapper/1 next_pid=0 next_prio=120";
        let done = "call_function_single_exit: vector=251";
        let text = format!(
            "nvmswap-7 [000] ..... 1.000000: mm_vmscan_memcg_reclaim_begin: order=0 gfp_flags=GFP_HIGHUSER_MOVABLE\n\
             <idle>-0 [001] d..2. 1.000001: {to_tab}\n\
             nvmswap-7 [000] ...2. 1.000010: {flush}\n\
             nvmswap-8 [001] d.h1. 1.000022: {done}\n\
             nvmswap-8 [001] d.h1. 1.000025: {done}\n\
             nvmswap-8 [001] d..2. 1.000030: {to_idle}\n\
             nvmswap-7 [000] ...2. 1.000040: {flush}\n\
             nvmswap-7 [000] ...2. 1.000050: {flush}\n\
             <idle>-0 [000] d.h1. 1.000060: {done}\n\
             <idle>-0 [001] d.h1. 1.000080: {done}\n\
             nvmswap-7 [000] ..... 1.000100: mm_vmscan_memcg_reclaim_end: nr_reclaimed=32\n"
        );
        let p = parse(&text);
        assert_eq!(p.events[3].event, Event::IpiDone);
        let mut summary = summarise(&p, &pids(&[7]), 0);
        assert_eq!(summary.round_trip_ns, [vec![12_000], vec![40_000, 30_000]]);
        assert_eq!(
            summary.longest[0].flush_wait_ns, 82_000,
            "the charge waited for all three round trips"
        );
        summary.ipis_traced = true;
        summary.cpu_states_traced = true;
        assert_eq!(
            summary.to_json()["remote_flushes"]["round_trip_us"],
            serde_json::Value::Null,
            "not reported without the handlers' ends"
        );
        summary.ipi_ends_traced = true;
        let v = summary.to_json()["remote_flushes"]["round_trip_us"].clone();
        assert_eq!(v["to_running_cpu"]["mean"], 12.0);
        assert_eq!(v["to_idle_cpu"]["mean"], 35.0);
    }

    #[test]
    fn each_charge_says_whether_the_other_cpus_were_idle_when_it_began() {
        // CPU 1 idles, 7 charges on CPU 0 and flushes once (to the idle CPU); CPU 1 runs tab 8,
        // 7 charges again and flushes twice.
        let begin = "mm_vmscan_memcg_reclaim_begin: order=0 gfp_flags=GFP_HIGHUSER_MOVABLE";
        let end = "mm_vmscan_memcg_reclaim_end: nr_reclaimed=32";
        let flush = "ipi_send_cpu: cpu=1 callsite=on_each_cpu_cond_mask+0x20/0x60 \
                     callback=generic_smp_call_function_single_interrupt+0x0/0x10";
        let sw = |prev: i32, next: i32| {
            format!(
                "sched_switch: prev_comm=x prev_pid={prev} prev_prio=120 prev_state=S \
                 ==> next_comm=x next_pid={next} next_prio=120"
            )
        };
        let text = format!(
            "nvmswap-8 [001] d..2. 0.500000: {}\n\
             nvmswap-7 [000] ..... 1.000000: {begin}\n\
             nvmswap-7 [000] ...2. 1.000010: {flush}\n\
             nvmswap-7 [000] ..... 1.000100: {end}\n\
             <idle>-0 [001] d..2. 1.500000: {}\n\
             nvmswap-7 [000] ..... 2.000000: {begin}\n\
             nvmswap-7 [000] ...2. 2.000010: {flush}\n\
             nvmswap-7 [000] ...2. 2.000020: {flush}\n\
             nvmswap-7 [000] ..... 2.000100: {end}\n",
            sw(8, 0),
            sw(0, 8),
        );
        let p = parse(&text);
        let mut s = Summary::default();
        let (c, _) = charges(&p, &pids(&[7]), &mut s);
        let at_begin: Vec<_> = c.iter().map(|c| c.others_idle_at_begin).collect();
        assert_eq!(at_begin, [Some(true), Some(false)]);
        let mut summary = summarise(&p, &pids(&[7]), 0);
        summary.ipis_traced = true;
        summary.cpu_states_traced = true;
        let v = summary.to_json()["remote_flushes"]["by_other_cpus_at_begin"].clone();
        assert_eq!(v["idle"], serde_json::json!({"charges": 1, "ipis": 1}));
        assert_eq!(v["running"], serde_json::json!({"charges": 1, "ipis": 2}));
    }

    #[test]
    fn charges_of_two_tasks_at_once_are_counted_beside_one_another() {
        // 7 charges from 1.000 to 1.004 s on CPU 0, 8 from 1.003 to 1.005 s on CPU 1, then 7
        // alone from 2.000 to 2.001 s: two of three charges ran beside another, for 1 ms of
        // the charges' 7 ms.
        let begin = "mm_vmscan_memcg_reclaim_begin: order=0 gfp_flags=GFP_HIGHUSER_MOVABLE";
        let end = "mm_vmscan_memcg_reclaim_end: nr_reclaimed=32";
        let text = format!(
            "nvmswap-7 [000] ..... 1.000000: {begin}\n\
             nvmswap-8 [001] ..... 1.003000: {begin}\n\
             nvmswap-7 [000] ..... 1.004000: {end}\n\
             nvmswap-8 [001] ..... 1.005000: {end}\n\
             nvmswap-7 [000] ..... 2.000000: {begin}\n\
             nvmswap-7 [000] ..... 2.001000: {end}\n"
        );
        let p = parse(&text);
        let v = summarise(&p, &pids(&[7, 8]), 0).to_json()["beside_another"].clone();
        assert_eq!(v["charges"], 2);
        let share = v["time_share"].as_f64().unwrap();
        assert!((share - 1.0 / 7.0).abs() < 1e-9, "{share}");
    }

    #[test]
    fn a_charges_time_off_the_cpu_is_split_into_preempted_and_asleep() {
        // 7 charges from 1.000000 to 1.002000: preempted by 9 for 300 us, then asleep (D) for
        // 1 ms. 9's own time off the CPU, and 7's before its charge, are not the charge's.
        let sw = |prev: i32, state: &str, next: i32| {
            format!(
                "sched_switch: prev_comm=nvmswap prev_pid={prev} prev_prio=120 \
                 prev_state={state} ==> next_comm=nvmswap next_pid={next} next_prio=120"
            )
        };
        let text = format!(
            "nvmswap-7 [000] d..2. 0.999000: {}\n\
             nvmswap-9 [000] d..2. 0.999500: {}\n\
             nvmswap-7 [000] ..... 1.000000: mm_vmscan_memcg_reclaim_begin: order=0 \
             gfp_flags=GFP_HIGHUSER_MOVABLE\n\
             nvmswap-7 [000] d..2. 1.000100: {}\n\
             nvmswap-9 [000] d..2. 1.000400: {}\n\
             nvmswap-7 [000] d..2. 1.000500: {}\n\
             <idle>-0 [000] d..2. 1.001500: {}\n\
             nvmswap-7 [000] ..... 1.002000: mm_vmscan_memcg_reclaim_end: nr_reclaimed=32\n",
            sw(7, "R+", 9),
            sw(9, "S", 7),
            sw(7, "R+", 9),
            sw(9, "S", 7),
            sw(7, "D", 0),
            sw(0, "R", 7),
        );
        let p = parse(&text);
        let mut s = Summary::default();
        let (c, _) = charges(&p, &pids(&[7, 9]), &mut s);
        assert_eq!(c.len(), 1);
        assert_eq!((c[0].preempted_ns, c[0].blocked_ns), (300_000, 1_000_000));
        assert_eq!(c[0].duration_ns, 2_000_000);
        let mut summary = summarise(&p, &pids(&[7, 9]), 0);
        assert_eq!(summary.to_json()["off_cpu_us"], serde_json::Value::Null);
        summary.cpu_states_traced = true;
        let v = summary.to_json()["off_cpu_us"].clone();
        assert_eq!(v["preempted"]["mean"], 300.0);
        assert_eq!(v["blocked"]["max"], 1000.0);
    }

    #[test]
    fn tracefs_cpumasks_parse_as_lists_and_ranges() {
        assert_eq!(cpu_list_bits("1"), 0b10);
        assert_eq!(cpu_list_bits("0-3"), 0b1111);
        assert_eq!(cpu_list_bits("0,2-3"), 0b1101);
        assert_eq!(cpu_list_bits("62-70"), 0b11 << 62);
        assert_eq!(cpu_list_bits(""), 0);
    }

    #[test]
    fn pages_neither_freed_nor_kept_are_left_writing() {
        // 32 scanned: 3 freed, 1 kept for its reference, 28 written and under writeback; then
        // a batch that frees 30 ended writes and keeps 2.
        let text = "nvmswap-7 [000] ..... 1.000000: mm_vmscan_memcg_reclaim_begin: order=0 \
             gfp_flags=GFP_HIGHUSER_MOVABLE\n\
             nvmswap-7 [000] ..... 1.000100: mm_vmscan_lru_shrink_inactive: nid=0 nr_scanned=32 \
             nr_reclaimed=3 nr_dirty=0 nr_writeback=0 nr_congested=0 nr_immediate=0 \
             nr_activate_anon=0 nr_activate_file=0 nr_ref_keep=1 nr_unmap_fail=0 priority=12 \
             flags=RECLAIM_WB_ANON|RECLAIM_WB_ASYNC\n\
             nvmswap-7 [000] ..... 1.000150: mm_vmscan_lru_shrink_inactive: nid=0 nr_scanned=32 \
             nr_reclaimed=30 nr_dirty=0 nr_writeback=0 nr_congested=0 nr_immediate=0 \
             nr_activate_anon=2 nr_activate_file=0 nr_ref_keep=0 nr_unmap_fail=0 priority=11 \
             flags=RECLAIM_WB_ANON|RECLAIM_WB_ASYNC\n\
             nvmswap-7 [000] ..... 1.000200: mm_vmscan_memcg_reclaim_end: nr_reclaimed=33\n";
        let p = parse(text);
        let mut s = Summary::default();
        let (c, _) = charges(&p, &pids(&[7]), &mut s);
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].left_writing, 28);
        let v = summarise(&p, &pids(&[7]), 0).to_json();
        assert_eq!(v["pages_left_writing"]["mean"], 28.0);
    }

    #[test]
    fn a_charges_time_in_shrink_folio_list_runs_from_each_inactive_isolation_to_its_shrink() {
        let shrink = "nr_reclaimed=20 nr_dirty=0 nr_writeback=0 nr_congested=0 nr_immediate=0 \
                      nr_activate_anon=0 nr_activate_file=0 nr_ref_keep=12 nr_unmap_fail=0 \
                      priority=12";
        let iso = |lru: &str| {
            format!(
                "mm_vmscan_lru_isolate: classzone=4 order=0 nr_requested=32 nr_scanned=32 \
                 nr_skipped=0 nr_taken=32 lru={lru}"
            )
        };
        // Inside the charge: an active list's isolation (not a folio list), two inactive
        // windows of 40 and 25 us; another task's isolation, and one of ours before the
        // charge, count nowhere.
        let text = format!(
            "nvmswap-7 [000] d..1. 0.999000: {inactive}\n\
             nvmswap-7 [000] ..... 1.000000: mm_vmscan_memcg_reclaim_begin: order=0 \
             gfp_flags=GFP_HIGHUSER_MOVABLE\n\
             nvmswap-7 [000] d..1. 1.000010: {active}\n\
             nvmswap-7 [000] ..... 1.000015: mm_vmscan_lru_shrink_active: nid=0 nr_taken=32 \
             nr_active=0 nr_deactivated=32 nr_referenced=0 priority=12\n\
             nvmswap-7 [000] d..1. 1.000020: {inactive}\n\
             nvmswap-8 [001] d..1. 1.000030: {inactive}\n\
             nvmswap-7 [000] ..... 1.000060: mm_vmscan_lru_shrink_inactive: nid=0 \
             nr_scanned=32 {shrink}\n\
             nvmswap-7 [000] d..1. 1.000070: {inactive}\n\
             nvmswap-7 [000] ..... 1.000095: mm_vmscan_lru_shrink_inactive: nid=0 \
             nr_scanned=32 {shrink}\n\
             nvmswap-7 [000] ..... 1.000100: mm_vmscan_memcg_reclaim_end: nr_reclaimed=40\n",
            inactive = iso("inactive_anon"),
            active = iso("active_anon"),
        );
        let p = parse(&text);
        let (c, _) = charges(&p, &pids(&[7]), &mut Summary::default());
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].duration_ns, 100_000);
        assert_eq!(c[0].folio_list_ns, 65_000);
        assert_eq!(c[0].reclaimed, 40);
        assert_eq!(c[0].ref_keep, 24);
        // Without the isolation events (a trace started without them) nothing is counted.
        let plain: String = text
            .lines()
            .filter(|l| !l.contains("lru_isolate"))
            .map(|l| format!("{l}\n"))
            .collect();
        let (c, _) = charges(&parse(&plain), &pids(&[7]), &mut Summary::default());
        assert_eq!(c[0].folio_list_ns, 0);
    }

    #[test]
    fn the_longest_charges_are_listed_whole_longest_first_with_their_overlap() {
        // Seven charges of pid 7 (1 ms apart, lasting 10..70 us) and one of pid 8 from 6.000050
        // to 6.000200, beside pid 7's 70 us charge (6.000000-6.000070) for 20 us.
        let mut text = String::new();
        for i in 0..7u64 {
            text += &format!(
                "nvmswap-7 [000] ..... {i}.000000: mm_vmscan_memcg_reclaim_begin: order=0 \
                 gfp_flags=GFP_HIGHUSER_MOVABLE\n\
                 nvmswap-7 [000] ..... {i}.000005: mm_vmscan_lru_shrink_inactive: nid=0 \
                 nr_scanned=100 nr_reclaimed=32 nr_dirty=0 nr_writeback=0 nr_congested=0 \
                 nr_immediate=0 nr_activate_anon=0 nr_activate_file=0 nr_ref_keep=0 \
                 nr_unmap_fail=0 priority={p}\n\
                 nvmswap-7 [000] ..... {i}.0000{d:02}: mm_vmscan_memcg_reclaim_end: \
                 nr_reclaimed=32\n",
                p = 12 - i,
                d = 10 * (i + 1),
            );
        }
        text += "nvmswap-8 [001] ..... 6.000050: mm_vmscan_memcg_reclaim_begin: order=0 \
                 gfp_flags=GFP_HIGHUSER_MOVABLE\n\
                 nvmswap-8 [001] ..... 6.000200: mm_vmscan_memcg_reclaim_end: nr_reclaimed=8\n";
        let mut s = summarise(&parse(&text), &pids(&[7, 8]), 0);
        let v = s.to_json();
        let longest = v["longest_charges"].as_array().unwrap();
        assert_eq!(longest.len(), nvmswap_core::metrics::LONGEST_CHARGES);
        let durations: Vec<f64> = longest
            .iter()
            .map(|c| c["duration_us"].as_f64().unwrap())
            .collect();
        assert_eq!(durations, [150.0, 70.0, 60.0, 50.0, 40.0]);
        assert_eq!(longest[0]["at_s"], 6.00005);
        assert_eq!(longest[0]["beside_another_us"], 20.0);
        assert_eq!(longest[1]["beside_another_us"], 20.0);
        assert_eq!(longest[2]["beside_another_us"], 0.0);
        assert_eq!(longest[1]["pages_scanned"], 100);
        assert_eq!(longest[1]["ns_per_scanned_page"], 700.0);
        assert_eq!(longest[1]["lowest_priority"], 6);
        assert_eq!(longest[0]["ns_per_scanned_page"], serde_json::Value::Null);
        // What was not traced is null, never a zero that reads as measured.
        for key in [
            "folio_list_us",
            "remote_flushes",
            "flush_wait_us",
            "preempted_us",
        ] {
            assert_eq!(longest[1][key], serde_json::Value::Null, "{key}");
        }
        assert_eq!(v["folio_list_us"], serde_json::Value::Null);
        s.isolations_traced = true;
        s.ipi_ends_traced = true;
        let v = s.to_json();
        assert_eq!(v["longest_charges"][1]["folio_list_us"], 0.0);
        assert_eq!(v["longest_charges"][1]["flush_wait_us"], 0.0);
        assert_eq!(v["folio_list_us"]["max"], 0.0);
    }

    #[test]
    fn an_empty_trace_has_no_charges() {
        let v = summarise(&parse("# tracer: nop\n"), &pids(&[1]), 0).to_json();
        assert_eq!(v["charges"], 0);
        assert_eq!(v["pages_reclaimed"]["p50"], 0.0);
    }

    #[test]
    fn the_buffer_grows_with_the_scale() {
        assert_eq!(buffer_kb(0.1), 32_768);
        assert_eq!(buffer_kb(2.0), 65_536);
        assert_eq!(buffer_kb(100.0), 262_144);
    }
}
