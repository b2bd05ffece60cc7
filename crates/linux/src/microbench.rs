//! The shared page-touch microbenchmark on the kernel's own swap.
//!
//! A forked child joins a memory cgroup limited to the spec's budget, fills the working set with
//! the spec's page contents (so most of it is swapped out to zram or the swap file while it is
//! written), then makes the spec's random touches, timing each with CLOCK_MONOTONIC.
//!
//! **Fault detection:** a touch counts as a fault when the thread's fault counters
//! (`getrusage(RUSAGE_THREAD)`, major + minor) changed across it. Major faults are swap-ins that
//! had to read the swap device (zram decompression or a disk read); minor ones found the page in
//! the swap cache (read-ahead, page-cluster) or were write-protect faults. Both are reported in
//! `extra`. The counters are read outside the timed interval, so their cost is not in the latency.

use std::ffi::CString;
use std::sync::atomic::Ordering;

use nvmswap_core::metrics::LatencyRecorder;
use nvmswap_core::progress::Progress;
use nvmswap_core::results::{MicrobenchReport, MICROBENCH_SCHEMA};
use nvmswap_core::workload::content::fill_page;
use nvmswap_core::workload::microbench::MicrobenchSpec;
use nvmswap_core::{MIB, PAGE_SIZE};

use crate::config::{LinuxConfig, SwapSetup};
use crate::error::LinuxError;
use crate::setup::Setup;
use crate::worker::{self, Mapping};
use crate::{state, sysfs};

/// Which kernel swap the microbenchmark pages to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinuxSwap {
    /// A hot-added zram device (lzo-rle).
    Zram,
    /// A swap file on the disk holding /var/tmp.
    Swapfile,
}

impl LinuxSwap {
    pub fn as_str(self) -> &'static str {
        match self {
            LinuxSwap::Zram => "zram",
            LinuxSwap::Swapfile => "swapfile",
        }
    }
}

impl std::str::FromStr for LinuxSwap {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "zram" => Ok(LinuxSwap::Zram),
            "swapfile" => Ok(LinuxSwap::Swapfile),
            other => Err(format!(
                "unknown linux swap '{other}' (expected zram or swapfile)"
            )),
        }
    }
}

/// Header words of the shared result buffer.
const PROGRESS: usize = 0;
const STAGE: usize = 1;
const T_START: usize = 2;
const T_END: usize = 3;
const HEADER: usize = 4;

/// The configuration the microbenchmark runs under: the budget as the cgroup limit, swap sized
/// to hold the whole working set plus slack.
fn config_for(spec: &MicrobenchSpec, swap: LinuxSwap) -> LinuxConfig {
    let size_bytes = (spec.working_set_bytes + 64 * MIB).div_ceil(PAGE_SIZE) * PAGE_SIZE;
    let swap_setup = match swap {
        LinuxSwap::Zram => SwapSetup::Zram {
            size_bytes,
            algorithm: nvmswap_core::kinds::Compressor::LzoRle,
            mem_limit_bytes: 0,
        },
        LinuxSwap::Swapfile => SwapSetup::Swapfile {
            path: format!("/var/tmp/nvmswap-microbench-{}.swap", std::process::id()),
            size_bytes,
        },
    };
    LinuxConfig {
        name: format!("microbench-{}", swap.as_str()),
        description: String::new(),
        cgroup_limit_bytes: spec.budget_bytes,
        swap: swap_setup,
        scheduler: None,
        // One page per fault, so each fault reads what it touches (as the other substrates do).
        page_cluster: Some(0),
        swappiness: Some(100),
        discard: Default::default(),
        swap_file_blocks: Default::default(),
        tab_cpus: None,
    }
}

/// Run `spec` on the kernel with `swap`; the machine is restored before this returns.
pub fn run(
    spec: &MicrobenchSpec,
    swap: LinuxSwap,
    progress: &dyn Progress,
) -> Result<MicrobenchReport, LinuxError> {
    run_with_state_file(spec, swap, progress, &state::default_state_path())
}

/// [`run`] with an explicit state file.
pub fn run_with_state_file(
    spec: &MicrobenchSpec,
    swap: LinuxSwap,
    progress: &dyn Progress,
    state_path: &std::path::Path,
) -> Result<MicrobenchReport, LinuxError> {
    spec.validate().map_err(|e| LinuxError::Config {
        name: "microbench".into(),
        detail: e.to_string(),
    })?;
    crate::require_root()?;
    let config = config_for(spec, swap);
    let setup = Setup::apply(&config, state_path)?;
    let report = measure(spec, swap, &setup, progress);
    let diffs = setup.restore()?;
    if !diffs.is_empty() {
        return Err(LinuxError::Restore(diffs.join("; ")));
    }
    report
}

fn measure(
    spec: &MicrobenchSpec,
    swap: LinuxSwap,
    setup: &Setup,
    progress: &dyn Progress,
) -> Result<MicrobenchReport, LinuxError> {
    let pages = spec.pages() as usize;
    let touches: Vec<(u64, bool)> = spec.touches().collect();
    let working_set = Mapping::new(pages * PAGE_SIZE as usize, false)?;
    let results = Mapping::new((HEADER + 2 * touches.len()) * 8, true)?;
    let procs = CString::new(setup.cgroup.join("cgroup.procs").display().to_string())
        .map_err(|_| LinuxError::Worker("cgroup path has a NUL byte".into()))?;
    let vm_before = sysfs::vmstat()?;
    let zram_before = zram_mm_stat(setup);

    let base = working_set.as_ptr();
    let words = results.words();
    let (seed, ratio, same) = (spec.seed, spec.compress_ratio, spec.same_filled_share);
    let child_body = || {
        if !worker::join_cgroup_no_alloc(&procs) {
            return 3;
        }
        for p in 0..pages {
            // SAFETY: page `p` lies inside the private mapping of `pages` pages.
            let page = unsafe {
                std::slice::from_raw_parts_mut(base.add(p * PAGE_SIZE as usize), PAGE_SIZE as usize)
            };
            fill_page(page, seed, p as u64, ratio, same);
            words[PROGRESS].store(p as u64 + 1, Ordering::Relaxed);
        }
        words[STAGE].store(1, Ordering::Relaxed);
        words[T_START].store(worker::monotonic_ns(), Ordering::Relaxed);
        for (i, &(page, write)) in touches.iter().enumerate() {
            // A byte that varies with the touch so reads hit different cache lines of the page.
            let offset = page as usize * PAGE_SIZE as usize + (i % 64) * 64;
            let (maj0, min0) = worker::thread_faults();
            let t0 = worker::monotonic_ns();
            // SAFETY: `offset` lies inside the working-set mapping.
            unsafe {
                let byte = base.add(offset);
                if write {
                    byte.write_volatile(byte.read_volatile().wrapping_add(1));
                } else {
                    byte.read_volatile();
                }
            }
            let t1 = worker::monotonic_ns();
            let (maj1, min1) = worker::thread_faults();
            words[HEADER + 2 * i].store(t1 - t0, Ordering::Relaxed);
            words[HEADER + 2 * i + 1]
                .store(((maj1 - maj0) << 32) | (min1 - min0), Ordering::Relaxed);
            words[PROGRESS].store(i as u64 + 1, Ordering::Relaxed);
        }
        words[T_END].store(worker::monotonic_ns(), Ordering::Relaxed);
        0
    };
    // SAFETY: the child joins the cgroup without allocating (`join_cgroup_no_alloc`), fills
    // and touches the mapping made before the fork and stores into the shared result words:
    // system calls and writes to pre-mapped memory only, as `fork_child` requires.
    let child = unsafe { worker::fork_child(child_body) }?;
    let mut stage = u64::MAX;
    let code = worker::wait_child(child, || {
        let s = words[STAGE].load(Ordering::Relaxed);
        if s != stage {
            stage = s;
            let (name, total) = if s == 0 {
                ("fill working set", pages as u64)
            } else {
                ("touches", touches.len() as u64)
            };
            progress.stage(name, total);
        }
        progress.advance(words[PROGRESS].load(Ordering::Relaxed));
    })?;
    if code != 0 {
        return Err(LinuxError::Worker(format!(
            "microbench child exited with {code} (3: could not join cgroup {})",
            setup.cgroup.display()
        )));
    }
    let vm_after = sysfs::vmstat()?;
    let zram_after = zram_mm_stat(setup);

    let mut faults = LatencyRecorder::new();
    let (mut majors, mut minors) = (0u64, 0u64);
    for i in 0..touches.len() {
        let ns = words[HEADER + 2 * i].load(Ordering::Relaxed);
        let flags = words[HEADER + 2 * i + 1].load(Ordering::Relaxed);
        let (maj, min) = (flags >> 32, flags & 0xffff_ffff);
        majors += maj.min(1);
        minors += (maj == 0 && min > 0) as u64;
        if maj + min > 0 {
            faults.record_ns(ns);
        }
    }
    let elapsed_ns = words[T_END]
        .load(Ordering::Relaxed)
        .saturating_sub(words[T_START].load(Ordering::Relaxed));
    let mut extra = serde_json::Map::new();
    extra.insert(
        "fault_detection".into(),
        "getrusage(RUSAGE_THREAD) majflt+minflt delta across the touch".into(),
    );
    extra.insert("major_faults".into(), majors.into());
    extra.insert("minor_faults".into(), minors.into());
    extra.insert(
        "cgroup_limit_bytes".into(),
        setup.config.cgroup_limit_bytes.into(),
    );
    for key in ["pswpin", "pswpout", "zswpin", "zswpout"] {
        let d = vm_after
            .get(key)
            .unwrap_or(&0)
            .saturating_sub(*vm_before.get(key).unwrap_or(&0));
        extra.insert(format!("{key}_delta"), d.into());
    }
    if let (Some(a), Some(b)) = (zram_before, zram_after) {
        extra.insert("zram_mm_stat_before".into(), a.into());
        extra.insert("zram_mm_stat_after".into(), b.into());
    }
    Ok(MicrobenchReport {
        schema: MICROBENCH_SCHEMA.to_string(),
        substrate: "linux".into(),
        tier: swap.as_str().into(),
        working_set_bytes: spec.working_set_bytes,
        budget_bytes: spec.budget_bytes,
        write_share: spec.write_share,
        touches: touches.len() as u64,
        faults: faults.count(),
        touches_per_s: if elapsed_ns == 0 {
            0.0
        } else {
            touches.len() as f64 * 1e9 / elapsed_ns as f64
        },
        fault_latency_us: faults.summary(nvmswap_core::NS_PER_US),
        extra,
    })
}

/// zram's mm_stat line for our device (orig, compr, mem_used, ... in bytes), if we use zram.
pub fn zram_mm_stat(setup: &Setup) -> Option<String> {
    let dev = setup
        .swap_device
        .as_ref()
        .filter(|d| d.starts_with("zram"))?;
    sysfs::read_trimmed(format!("/sys/block/{dev}/mm_stat")).ok()
}
