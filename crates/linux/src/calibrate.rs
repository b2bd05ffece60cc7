//! Calibration probes: this machine's own costs, measured with small probes that never run the
//! validation scenario (so nothing is tuned on it).
//!
//! - **Compression**: the kernel's own compressors, through a scratch zram device per algorithm:
//!   tab-model pages (`workload::content::fill_page` with the mean site's compressibility) written
//!   and read back with 4 KiB O_DIRECT I/O. A write is compression plus zram's store; a read is
//!   decompression plus zram's lookup. Both include the syscall and block-layer entry (a few µs),
//!   which is what a swap-out/swap-in to zram pays too.
//! - **Disk**: 4 KiB O_DIRECT reads and writes at random offsets of a scratch file next to where
//!   the swap file goes (same disk).
//! - **Queue depth**: the hardware queues' tags (/sys/block/<disk>/mq/*/nr_tags, summed), what
//!   the device takes; the scheduler's `nr_requests` is a software limit sim derives itself.
//! - **Fault path**: the demand-zero (minor) fault, timed per page on fresh anonymous memory.
//! - **Swap path** (a scratch swap file of our own on the same disk, page-cluster 0): the swap
//!   *write* path per page, timed as `madvise(MADV_PAGEOUT)` of 32-page batches of tab-model
//!   pages (the kernel unmaps them, allocates slots, adds them to the swap cache and submits the
//!   writes in `shrink_folio_list` without waiting for them: the cost reclaim pays per page); then
//!   the swap-in fault per page, timed from user space on a random order of the swapped pages,
//!   with the block tracepoints of the swap file's requests (Q2D, D2C) giving the swap-in cost
//!   breakdown of seed 002 ("Swap In Overhead Analysis"): block layer (Q2D), device (D2C), and the
//!   rest of the fault (swap layer and fault handling: the fault time less Q2C). This kernel has no
//!   fault-exit tracepoint and refuses the function tracer's filter (available_filter_functions:
//!   "Operation not permitted"), so the swap layer and the fault handling are not separated.

use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

use nvmswap_core::metrics::LatencyRecorder;
use nvmswap_core::results::LatencySummary;
use nvmswap_core::workload::content::fill_page;
use nvmswap_core::{MIB, NS_PER_US, PAGE_SIZE};

use crate::config::{LinuxConfig, SwapSetup};
use crate::error::LinuxError;
use crate::setup::Setup;
use crate::state::Change;
use crate::worker::{self, Mapping};
use crate::{state, sysfs};

/// Page size as usize for buffers.
const PAGE: usize = PAGE_SIZE as usize;

/// What the probes measured, in µs.
#[derive(Debug, Clone, Serialize)]
pub struct Calibration {
    /// Algorithm → (write = compress, read = decompress) per page through zram.
    pub compression: Vec<CompressionProbe>,
    pub disk: String,
    pub disk_read_4k_us: LatencySummary,
    pub disk_write_4k_us: LatencySummary,
    pub minor_fault_us: LatencySummary,
    pub pages_per_probe: u64,
    /// The disk's queue depth: the tags of its hardware queues (/sys/block/<disk>/mq/*/nr_tags,
    /// summed), or the scheduler's nr_requests when the disk has no mq directory.
    pub queue_depth: u32,
    /// Where `queue_depth` was read.
    pub queue_depth_source: String,
    /// Hardware queues of the disk (/sys/block/<disk>/mq/*).
    pub hw_queues: u32,
    /// The swap path through a swap file on the disk (None when it could not be probed, with why).
    pub swap_path: Option<SwapPathProbe>,
    pub swap_path_unavailable: Option<String>,
}

/// The swap write and read paths measured through a swap file (see the module text).
#[derive(Debug, Clone, Serialize)]
pub struct SwapPathProbe {
    /// `MADV_PAGEOUT` time per page of a 32-page batch: unmap, swap slot, swap cache, write
    /// submission (the write itself is not waited for).
    pub write_submit_us_per_page: LatencySummary,
    /// A touch of a swapped-out page (page-cluster 0: one page read per fault).
    pub swap_in_fault_us: LatencySummary,
    /// Pages written and read as /proc/vmstat counted them (pswpout, pswpin).
    pub pswpout: u64,
    pub pswpin: u64,
    /// Seed 002's breakdown of the swap-in fault, means in µs: block layer (read Q2D), device
    /// (read D2C), swap layer + fault handling (fault mean less read Q2C mean).
    pub breakdown: Option<SwapInBreakdown>,
    /// The block trace of the probe's requests (`extra.blktrace` format), or why there is none.
    pub trace: serde_json::Value,
}

/// A swap-in fault's time split as seed 002 splits it, means in µs.
#[derive(Debug, Clone, Serialize)]
pub struct SwapInBreakdown {
    pub total_us: f64,
    pub swap_layer_and_fault_us: f64,
    pub block_layer_us: f64,
    pub device_us: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct CompressionProbe {
    pub algorithm: String,
    pub compress_us: LatencySummary,
    pub decompress_us: LatencySummary,
    /// Compressed / original bytes from zram's mm_stat.
    pub ratio: f64,
}

/// The disk's queue depth: its hardware queues' tags summed, else the scheduler's nr_requests;
/// with where it was read and the number of hardware queues.
fn queue_depth_of(disk: &str) -> Result<(u32, String, u32), LinuxError> {
    let mq = format!("/sys/block/{disk}/mq");
    let mut tags = 0u32;
    let mut queues = 0u32;
    if let Ok(dir) = std::fs::read_dir(&mq) {
        for entry in dir.flatten() {
            let t = sysfs::read_trimmed(entry.path().join("nr_tags"))?;
            tags += t.parse::<u32>().map_err(|_| LinuxError::Kernel {
                what: format!("{}/nr_tags", entry.path().display()),
                detail: format!("not a number: {t}"),
            })?;
            queues += 1;
        }
    }
    if tags > 0 {
        return Ok((
            tags,
            format!(
                "read: /sys/block/{disk}/mq/*/nr_tags summed over its {queues} hardware queue(s) \
                 on this machine, the requests the device takes (the scheduler's nr_requests is \
                 a software limit sim derives as 2 x min(depth, 128))"
            ),
            queues,
        ));
    }
    let nr = sysfs::read_trimmed(format!("/sys/block/{disk}/queue/nr_requests"))?;
    Ok((
        nr.parse().unwrap_or(1).max(1),
        format!("read: /sys/block/{disk}/queue/nr_requests on this machine (no mq/*/nr_tags)"),
        1,
    ))
}

/// A page-aligned buffer for O_DIRECT.
struct AlignedPage(Mapping);

impl AlignedPage {
    fn new() -> Result<Self, LinuxError> {
        Ok(AlignedPage(Mapping::new(PAGE, false)?))
    }
    fn bytes(&mut self) -> &mut [u8] {
        // SAFETY: the mapping is one page long, page-aligned and owned by `self`.
        unsafe { std::slice::from_raw_parts_mut(self.0.as_ptr(), PAGE) }
    }
}

fn probe_zram(
    algorithm: &str,
    pages: u64,
    seed: u64,
    state_path: &Path,
) -> Result<CompressionProbe, LinuxError> {
    // A zram device of our own, recorded in the journal like any other change.
    let cfg = LinuxConfig {
        name: format!("calibrate-{algorithm}"),
        description: String::new(),
        cgroup_limit_bytes: 64 * MIB,
        swap: SwapSetup::None,
        scheduler: None,
        page_cluster: None,
        swappiness: None,
        discard: Default::default(),
    };
    let setup = Setup::apply(&cfg, state_path)?;
    let id_text = sysfs::read_trimmed("/sys/class/zram-control/hot_add")?;
    let id: u32 = id_text.parse().map_err(|_| LinuxError::Kernel {
        what: "zram hot_add".into(),
        detail: id_text.clone(),
    })?;
    // Not in `setup`'s journal (it is private), so undone here explicitly on every path.
    let change = Change::ZramDevice { id };
    let result = (|| {
        let dev = format!("/sys/block/zram{id}");
        sysfs::write_value(format!("{dev}/comp_algorithm"), algorithm)?;
        sysfs::write_value(
            format!("{dev}/disksize"),
            &(pages * PAGE_SIZE + MIB).to_string(),
        )?;
        let path = format!("/dev/zram{id}");
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_DIRECT)
            .open(&path)
            .map_err(|e| LinuxError::io("open", &path, e))?;
        let mut buf = AlignedPage::new()?;
        let (mut comp, mut decomp) = (LatencyRecorder::new(), LatencyRecorder::new());
        // Pages at ratio 0.38 with 10 % same-filled: the mean of the assumed tab rotation of round
        // 1, with which profiles/linux/calibrated-costs.toml was measured. The measured rotation
        // (profiles/workloads/chromium-measured.toml) compresses less (lzo-rle 0.41-0.80); the
        // probe is kept as it was so its figures stay comparable with the committed calibration.
        for p in 0..pages {
            fill_page(buf.bytes(), seed, p, 0.38, 0.10);
            let t = worker::monotonic_ns();
            file.write_all(buf.bytes())
                .map_err(|e| LinuxError::io("write", &path, e))?;
            comp.record_ns(worker::monotonic_ns() - t);
        }
        file.seek(SeekFrom::Start(0))
            .map_err(|e| LinuxError::io("seek", &path, e))?;
        for _ in 0..pages {
            let t = worker::monotonic_ns();
            file.read_exact(buf.bytes())
                .map_err(|e| LinuxError::io("read", &path, e))?;
            decomp.record_ns(worker::monotonic_ns() - t);
        }
        let mm: Vec<f64> = sysfs::read_trimmed(format!("{dev}/mm_stat"))?
            .split_whitespace()
            .filter_map(|v| v.parse().ok())
            .collect();
        let ratio = if mm.len() > 1 && mm[0] > 0.0 {
            mm[1] / mm[0]
        } else {
            0.0
        };
        drop(file);
        Ok(CompressionProbe {
            algorithm: algorithm.to_string(),
            compress_us: comp.summary(NS_PER_US),
            decompress_us: decomp.summary(NS_PER_US),
            ratio,
        })
    })();
    let undo = state::undo(&change);
    let diffs = setup.restore()?;
    undo?;
    if !diffs.is_empty() {
        return Err(LinuxError::Restore(diffs.join("; ")));
    }
    result
}

fn probe_disk(
    dir: &Path,
    ops: u64,
    seed: u64,
) -> Result<(LatencySummary, LatencySummary), LinuxError> {
    let path = dir.join(format!("nvmswap-calibrate-{}.dat", std::process::id()));
    let size_pages = 16 * MIB / PAGE_SIZE;
    let result = (|| {
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .custom_flags(libc::O_DIRECT)
            .open(&path)
            .map_err(|e| LinuxError::io("create", &path, e))?;
        let mut buf = AlignedPage::new()?;
        fill_page(buf.bytes(), seed, 0, 0.38, 0.0);
        for _ in 0..size_pages {
            file.write_all(buf.bytes())
                .map_err(|e| LinuxError::io("write", &path, e))?;
        }
        file.sync_all()
            .map_err(|e| LinuxError::io("fsync", &path, e))?;
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let (mut reads, mut writes) = (LatencyRecorder::new(), LatencyRecorder::new());
        for _ in 0..ops {
            let off = rng.random_range(0..size_pages) * PAGE_SIZE;
            file.seek(SeekFrom::Start(off))
                .map_err(|e| LinuxError::io("seek", &path, e))?;
            let t = worker::monotonic_ns();
            file.write_all(buf.bytes())
                .map_err(|e| LinuxError::io("write", &path, e))?;
            writes.record_ns(worker::monotonic_ns() - t);
            let off = rng.random_range(0..size_pages) * PAGE_SIZE;
            file.seek(SeekFrom::Start(off))
                .map_err(|e| LinuxError::io("seek", &path, e))?;
            let t = worker::monotonic_ns();
            file.read_exact(buf.bytes())
                .map_err(|e| LinuxError::io("read", &path, e))?;
            reads.record_ns(worker::monotonic_ns() - t);
        }
        Ok((reads.summary(NS_PER_US), writes.summary(NS_PER_US)))
    })();
    let _ = std::fs::remove_file(&path);
    result
}

fn probe_minor_fault(pages: usize) -> Result<LatencySummary, LinuxError> {
    let region = Mapping::new(pages * PAGE, false)?;
    let mut faults = LatencyRecorder::new();
    for p in 0..pages {
        let t = worker::monotonic_ns();
        // SAFETY: page `p` is inside the mapping.
        unsafe { region.as_ptr().add(p * PAGE).write_volatile(1) };
        faults.record_ns(worker::monotonic_ns() - t);
    }
    Ok(faults.summary(NS_PER_US))
}

fn vmstat_counter(name: &str) -> Result<u64, LinuxError> {
    let text = std::fs::read_to_string("/proc/vmstat")
        .map_err(|e| LinuxError::io("read", "/proc/vmstat", e))?;
    Ok(text
        .lines()
        .filter_map(|l| l.split_once(' '))
        .find(|(k, _)| *k == name)
        .and_then(|(_, v)| v.trim().parse().ok())
        .unwrap_or(0))
}

/// Waits (at most `limit`) until /proc/meminfo's Writeback is zero.
fn wait_writeback(limit: std::time::Duration) {
    let start = std::time::Instant::now();
    while start.elapsed() < limit {
        let busy = std::fs::read_to_string("/proc/meminfo")
            .ok()
            .and_then(|t| {
                t.lines()
                    .find(|l| l.starts_with("Writeback:"))
                    .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
            })
            .unwrap_or(0);
        if busy == 0 {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

/// The swap write and read paths through a scratch swap file in `dir` (see the module text).
pub fn probe_swap_path(
    dir: &Path,
    pages: usize,
    seed: u64,
    state_path: &Path,
) -> Result<SwapPathProbe, LinuxError> {
    let swap_file = dir.join(format!("nvmswap-calibrate-{}.swap", std::process::id()));
    let cfg = LinuxConfig {
        name: "calibrate-swap-path".into(),
        description: String::new(),
        cgroup_limit_bytes: 1024 * MIB,
        swap: SwapSetup::Swapfile {
            path: swap_file.display().to_string(),
            size_bytes: (pages as u64) * PAGE_SIZE * 2 + 16 * MIB,
        },
        scheduler: None,
        page_cluster: Some(0),
        swappiness: None,
        discard: Default::default(),
    };
    let mut setup = Setup::apply(&cfg, state_path)?;
    let result = (|| {
        let tracer = crate::blktrace::Tracer::start(&swap_file);
        if let Ok(t) = &tracer {
            for change in t.journal() {
                setup.journal(change)?;
            }
        }
        let region = Mapping::new(pages * PAGE, false)?;
        for p in 0..pages {
            // SAFETY: page `p` lies inside the mapping, which outlives this borrow.
            let page =
                unsafe { std::slice::from_raw_parts_mut(region.as_ptr().add(p * PAGE), PAGE) };
            // Tab-model content without same-filled pages: zero pages would skip the write.
            fill_page(page, seed, p as u64, 0.38, 0.0);
        }
        let (out0, in0) = (vmstat_counter("pswpout")?, vmstat_counter("pswpin")?);
        let batch = nvmswap_core::SWAP_CLUSTER_MAX as usize;
        let mut write = LatencyRecorder::new();
        for start in (0..pages).step_by(batch) {
            let n = batch.min(pages - start);
            let t = worker::monotonic_ns();
            // SAFETY: the range lies inside our private anonymous mapping; MADV_PAGEOUT only
            // reclaims it (the contents come back on the next touch).
            let rc = unsafe {
                libc::madvise(
                    region.as_ptr().add(start * PAGE).cast(),
                    n * PAGE,
                    libc::MADV_PAGEOUT,
                )
            };
            let dt = worker::monotonic_ns() - t;
            if rc != 0 {
                return Err(LinuxError::Kernel {
                    what: "madvise(MADV_PAGEOUT)".into(),
                    detail: std::io::Error::last_os_error().to_string(),
                });
            }
            write.record_ns(dt / n as u64);
        }
        wait_writeback(std::time::Duration::from_secs(10));
        let pswpout = vmstat_counter("pswpout")? - out0;
        // A page written by reclaim stays in the swap cache until reclaim meets it again after
        // its write (measured here: without this second pass the touches below were swap-cache
        // hits, pswpin 0). The second pass frees the clean pages without I/O.
        // SAFETY: as above, the whole range is our private anonymous mapping.
        let rc = unsafe { libc::madvise(region.as_ptr().cast(), pages * PAGE, libc::MADV_PAGEOUT) };
        if rc != 0 {
            return Err(LinuxError::Kernel {
                what: "madvise(MADV_PAGEOUT)".into(),
                detail: std::io::Error::last_os_error().to_string(),
            });
        }
        let mut order: Vec<usize> = (0..pages).collect();
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        for i in (1..order.len()).rev() {
            order.swap(i, rng.random_range(0..=i));
        }
        let mut fault = LatencyRecorder::new();
        for &p in &order {
            let t = worker::monotonic_ns();
            // SAFETY: page `p` is inside the mapping; a read brings it back from swap.
            let _ = unsafe { region.as_ptr().add(p * PAGE).read_volatile() };
            fault.record_ns(worker::monotonic_ns() - t);
        }
        let pswpin = vmstat_counter("pswpin")? - in0;
        let trace = crate::blktrace::Traced::of(tracer).summary;
        let fault_us = fault.summary(NS_PER_US);
        let mean = |k: &str| trace[k]["mean"].as_f64();
        let breakdown = match (
            mean("read_q2d_us"),
            mean("read_d2c_us"),
            mean("read_q2c_us"),
        ) {
            (Some(q2d), Some(d2c), Some(q2c)) => Some(SwapInBreakdown {
                total_us: fault_us.mean,
                swap_layer_and_fault_us: (fault_us.mean - q2c).max(0.0),
                block_layer_us: q2d,
                device_us: d2c,
            }),
            _ => None,
        };
        Ok(SwapPathProbe {
            write_submit_us_per_page: write.summary(NS_PER_US),
            swap_in_fault_us: fault_us,
            pswpout,
            pswpin,
            breakdown,
            trace,
        })
    })();
    let diffs = setup.restore()?;
    if !diffs.is_empty() {
        return Err(LinuxError::Restore(diffs.join("; ")));
    }
    result
}

/// Run every probe. `swap_dir` is where the swap file would go (its disk is probed).
pub fn run(swap_dir: &Path, seed: u64) -> Result<Calibration, LinuxError> {
    crate::require_root()?;
    let state_path = state::default_state_path();
    let pages = 4096;
    let offered = sysfs::read_trimmed("/sys/block/zram0/comp_algorithm").unwrap_or_default();
    let mut compression = Vec::new();
    for alg in ["lzo", "lzo-rle", "lz4"] {
        if offered
            .split_whitespace()
            .any(|a| a.trim_matches(['[', ']']) == alg)
        {
            compression.push(probe_zram(alg, pages, seed, &state_path)?);
        }
    }
    let (read, write) = probe_disk(swap_dir, 2000, seed)?;
    let disk = crate::setup::disk_of(swap_dir)?;
    let (queue_depth, queue_depth_source, hw_queues) = queue_depth_of(&disk)?;
    let (swap_path, swap_path_unavailable) =
        match probe_swap_path(swap_dir, 4096, seed, &state_path) {
            Ok(p) => (Some(p), None),
            Err(e) => (None, Some(e.to_string())),
        };
    Ok(Calibration {
        swap_path,
        swap_path_unavailable,
        compression,
        queue_depth,
        queue_depth_source,
        hw_queues,
        disk,
        disk_read_4k_us: read,
        disk_write_4k_us: write,
        minor_fault_us: probe_minor_fault(8192)?,
        pages_per_probe: pages,
    })
}

/// The device profile of the swap disk (profiles/devices format) from a calibration.
pub fn device_profile_toml(cal: &Calibration) -> String {
    let us = 1000.0;
    // A log-normal cannot express p99/mean above ~14.9 (device.rs); clamp and say so.
    let dist = |s: &LatencySummary| {
        let mean = s.mean * us;
        let p99 = (s.p99 * us).clamp(mean, mean * 14.0);
        format!("{{ mean_ns = {mean:.0}, p99_ns = {p99:.0} }}")
    };
    let mut out = String::new();
    out.push_str(&format!("name = \"linux-{}\"\n", cal.disk));
    out.push_str(&format!(
        "description = \"This machine's {} disk, measured by nvmswap linux calibrate (4 KiB O_DIRECT, random offsets)\"\n",
        cal.disk
    ));
    out.push_str("kind = \"block\"\n");
    out.push_str(&format!("read_4k = {}\n", dist(&cal.disk_read_4k_us)));
    out.push_str(&format!("write_4k = {}\n", dist(&cal.disk_write_4k_us)));
    out.push_str(&format!("queue_depth = {}\n", cal.queue_depth));
    out.push_str(&format!("parallelism = {}\n", cal.hw_queues));
    out.push_str("\n[sources]\n");
    out.push_str("read_4k = \"measured: nvmswap linux calibrate, 2000 random 4 KiB O_DIRECT reads of a 16 MiB file (p99 capped at 14x mean, the log-normal limit)\"\n");
    out.push_str(&format!("queue_depth = \"{}\"\n", cal.queue_depth_source));
    out.push_str(&format!(
        "parallelism = \"read: count of /sys/block/{}/mq/* hardware queues on this machine\"\n",
        cal.disk
    ));
    out.push_str("write_4k = \"measured: nvmswap linux calibrate, 2000 random 4 KiB O_DIRECT writes (p99 capped at 14x mean)\"\n");
    out
}

/// This machine's software costs for sim's `costs` overrides (`SystemConfig::costs`), as TOML:
/// the minor fault and, per compression algorithm probed, compression and decompression through
/// zram. `load_costs` reads it back for one algorithm.
pub fn costs_toml(cal: &Calibration) -> String {
    let ns = |us: f64| (us * NS_PER_US as f64).round();
    let mut out = String::from(
        "# Software costs of this machine, measured by `nvmswap linux calibrate` (per 4 KiB page of\n\
         # the tab model, through zram). `nvmswap validate` hands them to sim as `costs.*`.\n",
    );
    out.push_str(&format!(
        "minor_fault_ns = {}\n",
        ns(cal.minor_fault_us.mean)
    ));
    if let Some(sp) = &cal.swap_path {
        out.push_str(
            "# Swap write path per page (MADV_PAGEOUT of 32-page batches through a swap file:\n\
             # unmap, slot, swap cache, write submission; the write is not waited for).\n",
        );
        out.push_str(&format!(
            "swap_write_page_ns = {}\n",
            ns(sp.write_submit_us_per_page.mean)
        ));
        if let Some(b) = &sp.breakdown {
            out.push_str(
                "# Swap-in fault through the swap file without the block layer and device\n\
                 # (fault mean less the read Q2C mean of the same probe's block trace).\n",
            );
            out.push_str(&format!(
                "swap_in_software_ns = {}\n",
                ns(b.swap_layer_and_fault_us)
            ));
        }
    }
    for c in &cal.compression {
        out.push_str(&format!("\n[compressor.{}]\n", c.algorithm));
        out.push_str(&format!("compress_mean_ns = {}\n", ns(c.compress_us.mean)));
        // The log-normal sampler needs p99 >= mean; a probe whose p99 fell below its mean (a few
        // slow outliers) is given a constant cost.
        out.push_str(&format!(
            "compress_p99_ns = {}\n",
            ns(c.compress_us.p99.max(c.compress_us.mean))
        ));
        out.push_str(&format!(
            "decompress_mean_ns = {}\n",
            ns(c.decompress_us.mean)
        ));
        out.push_str(&format!(
            "decompress_p99_ns = {}\n",
            ns(c.decompress_us.p99.max(c.decompress_us.mean))
        ));
    }
    out
}

#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct CostsFile {
    minor_fault_ns: f64,
    #[serde(default)]
    swap_write_page_ns: Option<f64>,
    #[serde(default)]
    swap_in_software_ns: Option<f64>,
    #[serde(default)]
    compressor: std::collections::BTreeMap<String, CompressorCosts>,
}

#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct CompressorCosts {
    compress_mean_ns: f64,
    compress_p99_ns: f64,
    decompress_mean_ns: f64,
    decompress_p99_ns: f64,
}

/// Reads a file written by `costs_toml` and returns the overrides for `algorithm` (the minor
/// fault alone when that algorithm was not probed).
pub fn load_costs(
    path: &Path,
    algorithm: &str,
) -> Result<nvmswap_core::config::CostOverrides, LinuxError> {
    let text = std::fs::read_to_string(path).map_err(|e| LinuxError::io("read", path, e))?;
    let file: CostsFile = toml::from_str(&text).map_err(|e| LinuxError::Config {
        name: path.display().to_string(),
        detail: e.to_string(),
    })?;
    let c = file.compressor.get(algorithm);
    Ok(nvmswap_core::config::CostOverrides {
        minor_fault_ns: Some(file.minor_fault_ns),
        swap_write_page_ns: file.swap_write_page_ns,
        swap_in_software_ns: file.swap_in_software_ns,
        compress_mean_ns: c.map(|c| c.compress_mean_ns),
        compress_p99_ns: c.map(|c| c.compress_p99_ns),
        decompress_mean_ns: c.map(|c| c.decompress_mean_ns),
        decompress_p99_ns: c.map(|c| c.decompress_p99_ns),
    })
}
