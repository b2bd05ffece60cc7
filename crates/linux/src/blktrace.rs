//! blktrace of the swap file's disk during a linux run: Q2D (queued to issued to the driver),
//! D2C (issued to completed) and Q2C per request, as seed 000 §5-§6 reads them, and Q2G (queued
//! to getting a request: the wait for the writeback throttle and for a request tag, which
//! `blk_mq_submit_bio` passes before `trace_block_getrq`; the rest of Q2D is the plug and the
//! I/O scheduler).
//!
//! `blktrace` records every request of the whole disk into per-CPU files; afterwards `blkparse`
//! prints them as text and we keep the requests whose sectors fall inside the swap file (its
//! physical extents from `filefrag`), so other processes' I/O on the same disk is left out.
//! A request is matched by its start sector: its Q, G, D and C events share it. A bio
//! back-merged into another has a Q of its own but no G, D or C at its sector; it is counted as
//! merged and has no stages of its own (its wait is the request's).
//!
//! Two ways to the same events. `blktrace` (its BLKTRACESETUP ioctl needs debugfs at
//! /sys/kernel/debug) is tried first; where the kernel refuses it (this machine answers EPERM),
//! the block tracepoints blktrace itself is built on are read through tracefs:
//! `block_bio_queue` (Q), `block_getrq` (G), `block_rq_insert` (I), `block_rq_issue` (D),
//! `block_rq_complete` (C), filtered to the disk. I is where the plug's flush (or an unplugged
//! bio) puts the request into the I/O scheduler, so Q2I is the plug's hold and I2D the
//! scheduler's queue.
//!
//! Machine state: a debugfs or tracefs we mount is unmounted when the trace ends; the tracepoints'
//! enable and filter files, `tracing_on` and `buffer_size_kb` are put back as they were and the
//! trace buffer is cleared — on success, on error and on Ctrl-C (`Drop`). The same changes go into
//! the run's state file (`journal`), so `nvmswap linux restore` undoes them after a crash.
//! blktrace runs with `-w` as a time limit, so even a tracer orphaned by a killed nvmswap stops
//! by itself.

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use nvmswap_core::block::{Op, SECTOR_BYTES};
use nvmswap_core::metrics::LatencyRecorder;
use nvmswap_core::results::{BlockRequest, BLOCK_STAGES};
use nvmswap_core::PAGE_SIZE;

const DEBUGFS: &str = "/sys/kernel/debug";

/// Longest a trace may run before blktrace stops by itself (seconds).
const TIME_LIMIT_S: u32 = 3600;

/// A running trace of one disk, restricted to one file's sectors.
pub struct Tracer {
    child: Option<Child>,
    dir: PathBuf,
    device: String,
    extents: Vec<Extent>,
    mounted_debugfs: bool,
    tracefs: Option<Tracefs>,
}

const TRACEFS: &str = "/sys/kernel/tracing";
const EVENTS: [&str; 5] = [
    "block_bio_queue",
    "block_getrq",
    "block_rq_insert",
    "block_rq_issue",
    "block_rq_complete",
];

/// A tracefs session: what we changed, to put back.
struct Tracefs {
    mounted: bool,
    /// (file, its value before we wrote it).
    saved: Vec<(PathBuf, String)>,
}

impl Tracefs {
    fn start(major: u64, minor: u64) -> Result<Tracefs, Unavailable> {
        let root = Path::new(TRACEFS);
        let mounted = crate::tracefs::mount_unless(
            "tracefs",
            root,
            |r| r.join("events/block").exists(),
            "tracefs with block events",
        )?;
        let mut t = Tracefs {
            mounted,
            saved: Vec::new(),
        };
        // The kernel's internal dev_t: major << 20 | minor.
        let filter = format!("dev == {}", (major << 20) | minor);
        t.set("tracing_on", "0")?;
        t.set("buffer_size_kb", "65536")?;
        std::fs::write(root.join("trace"), "").map_err(|e| format!("clear trace: {e}"))?;
        for ev in EVENTS {
            t.set(&format!("events/block/{ev}/filter"), &filter)?;
            t.set(&format!("events/block/{ev}/enable"), "1")?;
        }
        t.set("tracing_on", "1")?;
        Ok(t)
    }

    /// Writes `value` to a tracefs file, remembering the first value it had.
    fn set(&mut self, file: &str, value: &str) -> Result<(), Unavailable> {
        let path = Path::new(TRACEFS).join(file);
        if !self.saved.iter().any(|(p, _)| *p == path) {
            let before =
                std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
            self.saved.push((path.clone(), before.trim().to_string()));
        }
        std::fs::write(&path, value).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// Stops tracing and returns the buffer's lines in blkparse's format of `summarise`.
    fn collect(&mut self) -> Result<String, Unavailable> {
        self.set("tracing_on", "0")?;
        let text = std::fs::read_to_string(Path::new(TRACEFS).join("trace"))
            .map_err(|e| format!("read trace: {e}"))?;
        Ok(tracefs_to_blkparse(&text))
    }

    fn restore(&mut self) {
        // Put back in reverse order: tracing off first, filters after their events.
        for (path, before) in self.saved.drain(..).rev() {
            let _ = std::fs::write(&path, restore_value(&path, &before));
        }
        let _ = std::fs::write(Path::new(TRACEFS).join("trace"), "");
        if self.mounted {
            crate::tracefs::unmount(Path::new(TRACEFS));
            self.mounted = false;
        }
    }
}

/// What to write to a tracefs file to put back the value it read as `before`: a filter reads
/// back as "none" when there is none, and writing 0 clears it. A trace buffer never used since
/// boot reads as `7 (expanded: 1408)` (allocated minimum, size it grows to on first use), which
/// cannot be written back; its expanded size is what the next tracing user would have got, so
/// that is written (the buffer itself cannot be shrunk back to unexpanded from user space).
fn restore_value(path: &Path, before: &str) -> String {
    if path.ends_with("filter") && before == "none" {
        "0".to_string()
    } else if let Some(expanded) = before
        .split_once("(expanded: ")
        .and_then(|(_, rest)| rest.strip_suffix(')'))
    {
        expanded.trim().to_string()
    } else {
        before.to_string()
    }
}

/// `task-pid [cpu] flags 15409.562140: block_rq_issue: 254,0 WS 4096 () 357051424 + 8 ...` ->
/// `D WS 357051424 4096 15409.562140` (action, RWBS, sector, bytes, time), one per event.
fn tracefs_to_blkparse(text: &str) -> String {
    let mut out = String::new();
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let Some((head, tail)) = line.split_once(": block_") else {
            continue;
        };
        let Some(time) = head.split_whitespace().last() else {
            continue;
        };
        // `comm-pid [cpu] flags time`: the pid follows the command's last '-'.
        let pid = head
            .split_once('[')
            .and_then(|(task, _)| task.trim().rsplit_once('-'))
            .map_or("0", |(_, pid)| pid);
        let Some((event, rest)) = tail.split_once(": ") else {
            continue;
        };
        let action = match event {
            "bio_queue" => "Q",
            "getrq" => "G",
            "rq_insert" => "I",
            "rq_issue" => "D",
            "rq_complete" => "C",
            _ => continue,
        };
        let f: Vec<&str> = rest.split_whitespace().collect();
        let Some(plus) = f.iter().position(|&t| t == "+") else {
            continue;
        };
        if plus == 0 || f.len() < plus + 2 || f.len() < 2 {
            continue;
        }
        let (rwbs, sector) = (f[1], f[plus - 1]);
        let sectors: u64 = f[plus + 1].parse().unwrap_or(0);
        out.push_str(&format!(
            "{action} {rwbs} {sector} {} {time} {pid}\n",
            sectors * 512
        ));
    }
    out
}

/// Why a trace could not be taken; the run goes on without it.
pub type Unavailable = String;

/// A finished trace: the swap file's requests, and their summary (`extra.blktrace`: Q2D, D2C,
/// Q2C per direction, how it was traced).
pub struct Traced {
    pub summary: serde_json::Value,
    /// In completion order, times in ns since the trace's first event.
    pub requests: Vec<BlockRequest>,
}

impl Traced {
    /// The trace of `tracer`, or why there is none as the summary (`{"unavailable": why}`) with
    /// no requests: a run reports a missing trace, it does not fail for it.
    pub fn of(tracer: Result<Tracer, Unavailable>) -> Traced {
        match tracer.and_then(Tracer::finish) {
            Ok(t) => t,
            Err(why) => Traced {
                summary: serde_json::json!({ "unavailable": why }),
                requests: Vec::new(),
            },
        }
    }
}

impl Tracer {
    /// Starts tracing the disk that holds `file`: blktrace if the kernel lets it, else the same
    /// block tracepoints through tracefs.
    pub fn start(file: &Path) -> Result<Tracer, Unavailable> {
        if !in_path("filefrag") {
            return Err("filefrag is not installed (e2fsprogs)".into());
        }
        let (device, major, minor) = disk_of(file)?;
        let extents = extents_of(file)?;
        let blktrace_refused = match Self::start_blktrace(&device, &extents) {
            Ok(t) => return Ok(t),
            Err(why) => why,
        };
        let tracefs = Tracefs::start(major, minor)
            .map_err(|why| format!("blktrace: {blktrace_refused}; tracefs: {why}"))?;
        Ok(Tracer {
            child: None,
            dir: PathBuf::new(),
            device,
            extents,
            mounted_debugfs: false,
            tracefs: Some(tracefs),
        })
    }

    fn start_blktrace(device: &str, extents: &[Extent]) -> Result<Tracer, Unavailable> {
        for tool in ["blktrace", "blkparse"] {
            if !in_path(tool) {
                return Err(format!(
                    "{tool} is not installed (scripts/install-deps installs blktrace)"
                ));
            }
        }
        let mounted_debugfs = crate::tracefs::mount_unless(
            "debugfs",
            Path::new(DEBUGFS),
            |d| d.join("block").exists(),
            "debugfs with block trace files at /sys/kernel/debug",
        )?;
        let dir = std::env::temp_dir().join(format!("nvmswap-blktrace-{}", std::process::id()));
        // From here on `Drop` undoes what was done, whatever fails.
        let mut tracer = Tracer {
            child: None,
            dir,
            device: device.to_string(),
            extents: extents.to_vec(),
            mounted_debugfs,
            tracefs: None,
        };
        let _ = std::fs::remove_dir_all(&tracer.dir);
        std::fs::create_dir_all(&tracer.dir)
            .map_err(|e| format!("{}: {e}", tracer.dir.display()))?;
        let child = Command::new("blktrace")
            .arg("-d")
            .arg(format!("/dev/{}", tracer.device))
            // The queue mask carries G (`BLK_TA_GETRQ` is in `BLK_TC_QUEUE`) as well as Q.
            .args(["-a", "queue", "-a", "issue", "-a", "complete"])
            .arg("-w")
            .arg(TIME_LIMIT_S.to_string())
            .arg("-D")
            .arg(&tracer.dir)
            .args(["-o", "swap"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("blktrace: {e}"))?;
        tracer.child = Some(child);
        // blktrace needs a moment to set up its per-CPU buffers; a request before then is lost,
        // which only shortens the trace.
        std::thread::sleep(std::time::Duration::from_millis(300));
        if let Some(status) = tracer
            .child
            .as_mut()
            .and_then(|c| c.try_wait().ok().flatten())
        {
            let mut err = String::new();
            if let Some(mut e) = tracer.child.take().and_then(|mut c| c.stderr.take()) {
                use std::io::Read;
                let _ = e.read_to_string(&mut err);
            }
            return Err(format!("exited at once ({status}): {}", err.trim()));
        }
        Ok(tracer)
    }

    /// What starting the trace changed on the machine, for the set-up's journal (crash
    /// recovery by `nvmswap linux restore`): mounts first, then tracepoint settings, so that
    /// undoing the journal newest first puts the settings back before unmounting.
    pub fn journal(&self) -> Vec<crate::state::Change> {
        use crate::state::Change;
        let mut out = Vec::new();
        if self.mounted_debugfs {
            out.push(Change::Mount {
                path: DEBUGFS.into(),
            });
        }
        if let Some(t) = &self.tracefs {
            if t.mounted {
                out.push(Change::Mount {
                    path: TRACEFS.into(),
                });
            }
            for (path, before) in &t.saved {
                out.push(Change::Attribute {
                    path: path.display().to_string(),
                    prior: restore_value(path, before),
                });
            }
        }
        out
    }

    /// Stops the trace; the swap file's requests and their summary.
    pub fn finish(mut self) -> Result<Traced, Unavailable> {
        let (text, method) = if let Some(t) = self.tracefs.as_mut() {
            (
                t.collect()?,
                "tracefs block tracepoints (blktrace refused by the kernel)",
            )
        } else {
            self.stop_child();
            let out = Command::new("blkparse")
                .args(["-i", "swap", "-D"])
                .arg(&self.dir)
                .args(["-q", "-f", "%a %d %S %N %T.%9t %p\n"])
                .output()
                .map_err(|e| format!("blkparse: {e}"))?;
            if !out.status.success() {
                return Err(format!(
                    "blkparse failed: {}",
                    String::from_utf8_lossy(&out.stderr).trim()
                ));
            }
            (String::from_utf8_lossy(&out.stdout).to_string(), "blktrace")
        };
        let parsed = parse(&text, &self.extents);
        let mut summary = summarise(&parsed, &self.device);
        summary["method"] = method.into();
        Ok(Traced {
            summary,
            requests: parsed.requests,
        })
    }

    fn stop_child(&mut self) {
        if let Some(mut child) = self.child.take() {
            // SIGINT makes blktrace flush its buffers and exit.
            // SAFETY: kill(2) on the pid of a child we spawned and have not reaped.
            unsafe {
                libc::kill(child.id() as libc::pid_t, libc::SIGINT);
            }
            let _ = child.wait();
        }
    }
}

impl Drop for Tracer {
    fn drop(&mut self) {
        self.stop_child();
        if let Some(t) = self.tracefs.as_mut() {
            t.restore();
        }
        if !self.dir.as_os_str().is_empty() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
        if self.mounted_debugfs {
            crate::tracefs::unmount(Path::new(DEBUGFS));
        }
    }
}

fn in_path(tool: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(tool).exists()))
        || Path::new("/usr/sbin").join(tool).exists()
}

/// The whole disk (not a partition) that holds `file`, e.g. `vda`, with its major and minor.
fn disk_of(file: &Path) -> Result<(String, u64, u64), Unavailable> {
    let dev = std::fs::metadata(file)
        .map_err(|e| format!("{}: {e}", file.display()))?
        .dev();
    // glibc's major()/minor() encoding of dev_t.
    let major = ((dev >> 32) & 0xffff_f000) | ((dev >> 8) & 0xfff);
    let minor = ((dev >> 12) & 0xffff_ff00) | (dev & 0xff);
    let sys = PathBuf::from(format!("/sys/dev/block/{major}:{minor}"));
    let real = std::fs::canonicalize(&sys).map_err(|e| format!("{}: {e}", sys.display()))?;
    if sys.join("partition").exists() {
        return Err(format!(
            "{} is on a partition: its sectors would need the partition's offset (not supported)",
            file.display()
        ));
    }
    let name = real
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .ok_or_else(|| format!("no device name for {}", sys.display()))?;
    Ok((name, major, minor))
}

/// The file's physical extents in 512-byte sectors, [start, end).
fn extents_of(file: &Path) -> Result<Vec<Extent>, Unavailable> {
    let out = Command::new("filefrag")
        .args(["-v", "-b512"])
        .arg(file)
        .output()
        .map_err(|e| format!("filefrag: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "filefrag {}: {}",
            file.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let extents = parse_filefrag(&String::from_utf8_lossy(&out.stdout));
    if extents.is_empty() {
        return Err(format!("filefrag found no extents for {}", file.display()));
    }
    Ok(extents)
}

/// One extent of a file on its disk, in 512-byte sectors: the file's sector `logical` lies at
/// the disk's sector `start`, up to `end` (exclusive).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Extent {
    logical: u64,
    start: u64,
    end: u64,
}

/// Lines like `   0:        0..  262143:   34816..  296959: 262144: ...`: the logical start and
/// the physical range.
fn parse_filefrag(text: &str) -> Vec<Extent> {
    text.lines()
        .filter_map(|l| {
            let fields: Vec<&str> = l.split(':').map(str::trim).collect();
            if fields.len() < 4 || fields[0].parse::<u64>().is_err() {
                return None;
            }
            let logical: u64 = fields[1].split_once("..")?.0.trim().parse().ok()?;
            let (a, b) = fields[2].split_once("..")?;
            let start: u64 = a.trim().parse().ok()?;
            let end: u64 = b.trim().parse().ok()?;
            Some(Extent {
                logical,
                start,
                end: end + 1,
            })
        })
        .collect()
}

/// The swap file's requests from blkparse-format text (`action RWBS sector bytes seconds pid`,
/// one event per line), and the bios queued inside the file that were never issued on their own.
#[derive(Debug, Default)]
struct Parsed {
    /// Requests with a Q, a D and a C in that order, in completion order; times are ns since the
    /// trace's first event.
    requests: Vec<BlockRequest>,
    /// Per direction (read, write): bios merged into another request or whose request the trace
    /// missed (a Q with no D at its sector).
    merged_or_unmatched: [u64; 2],
    /// The one-page write bios (swap-outs) queued inside the file, by submitting task.
    write_bios: nvmswap_core::block::write_order::WriteBioOrder,
}

/// What is known of a request at one sector before its C: Q, G, I and D times, D's bytes, bios
/// merged.
#[derive(Debug, Default, Clone, Copy)]
struct Open {
    q: Option<u64>,
    g: Option<u64>,
    i: Option<u64>,
    d: Option<u64>,
    bytes: u64,
    merged: u32,
}

/// A request is matched by its start sector: its Q, G, D and C share it. A bio merged into it (by the
/// plug or the scheduler) has a Q of its own inside the request's sectors but no D; it is counted
/// as the request's `merged` when the request's D covers it, else as unmatched at the end.
fn parse(blkparse: &str, extents: &[Extent]) -> Parsed {
    let slot_of = |s: u64| {
        extents
            .iter()
            .find(|e| s >= e.start && s < e.end)
            .map(|e| (e.logical + s - e.start) * SECTOR_BYTES / PAGE_SIZE)
    };
    let mut out = Parsed::default();
    let mut open: BTreeMap<(usize, u64), Open> = BTreeMap::new();
    let mut origin = None;
    for line in blkparse.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() != 6 {
            continue;
        }
        let (Ok(sector), Ok(bytes), Some(t)) = (
            f[2].parse::<u64>(),
            f[3].parse::<u64>(),
            parse_time_ns(f[4]),
        ) else {
            continue;
        };
        let t = t.saturating_sub(*origin.get_or_insert(t));
        let Some(slot) = slot_of(sector) else {
            continue;
        };
        let dir = if f[1].contains('W') {
            1
        } else if f[1].contains('R') {
            0
        } else {
            continue;
        };
        match f[0] {
            "Q" => {
                if dir == 1 && bytes == PAGE_SIZE {
                    if let Ok(pid) = f[5].parse::<u32>() {
                        out.write_bios.record(pid, slot, t);
                    }
                }
                let e = open.entry((dir, sector)).or_default();
                if e.q.is_some() && e.d.is_none() {
                    out.merged_or_unmatched[dir] += 1; // an earlier Q here never issued
                }
                *e = Open {
                    q: Some(t),
                    ..Open::default()
                };
            }
            "G" => {
                // The first G after the Q: a bio that needed a request of its own got one.
                if let Some(e) = open.get_mut(&(dir, sector)) {
                    if e.q.is_some() && e.g.is_none() && e.d.is_none() {
                        e.g = Some(t);
                    }
                }
            }
            "I" => {
                // The first insertion into the scheduler: the plug's flush (or a bio that went
                // to the scheduler unplugged). A requeue's second I is not the plug's.
                if let Some(e) = open.get_mut(&(dir, sector)) {
                    if e.q.is_some() && e.i.is_none() && e.d.is_none() {
                        e.i = Some(t);
                    }
                }
            }
            "D" => {
                // Bios queued inside this request's sectors with no D of their own joined it.
                let end = sector + bytes.div_ceil(SECTOR_BYTES);
                let joined: Vec<(usize, u64)> = open
                    .range((dir, sector + 1)..(dir, end))
                    .filter(|(_, o)| o.q.is_some() && o.d.is_none())
                    .map(|(k, _)| *k)
                    .collect();
                for k in &joined {
                    open.remove(k);
                }
                out.merged_or_unmatched[dir] += joined.len() as u64;
                let e = open.entry((dir, sector)).or_default();
                e.d = Some(t);
                e.bytes = bytes;
                e.merged = joined.len() as u32;
            }
            "C" => {
                if let Some(Open {
                    q: Some(q),
                    g,
                    i,
                    d: Some(d),
                    bytes: issued,
                    merged,
                }) = open.remove(&(dir, sector))
                {
                    if q <= d && d <= t {
                        out.requests.push(BlockRequest {
                            op: if dir == 1 { Op::Write } else { Op::Read },
                            sector,
                            slot,
                            bytes: if issued > 0 { issued } else { bytes },
                            merged,
                            q_ns: q,
                            g_ns: g.filter(|&g| q <= g && g <= d),
                            i_ns: i.filter(|&i| q <= i && i <= d),
                            d_ns: d,
                            c_ns: t,
                        });
                    }
                }
            }
            _ => {}
        }
    }
    for ((dir, _), o) in &open {
        if o.q.is_some() && o.d.is_none() {
            out.merged_or_unmatched[*dir] += 1;
        }
    }
    out
}

/// Each of [`BLOCK_STAGES`] in µs per direction of the parsed requests (Q2G and Q2I, I2D of
/// the requests with a G, an I).
fn summarise(parsed: &Parsed, device: &str) -> serde_json::Value {
    let mut stages: [[LatencyRecorder; BLOCK_STAGES.len()]; 2] = Default::default();
    let mut requests = [0u64; 2];
    for r in &parsed.requests {
        let dir = (r.op == Op::Write) as usize;
        requests[dir] += 1;
        for (rec, ns) in stages[dir].iter_mut().zip(r.stages_ns()) {
            if let Some(ns) = ns {
                rec.record_ns(ns);
            }
        }
    }
    let mut out = serde_json::Map::new();
    out.insert("device".into(), device.into());
    let dispatched: Vec<(Op, u64, u64, u64)> = parsed
        .requests
        .iter()
        .map(|r| (r.op, r.d_ns, r.c_ns, r.bytes.div_ceil(PAGE_SIZE)))
        .collect();
    out.extend(nvmswap_core::block::dispatch_statistics(&dispatched));
    if let Some(s) = parsed.write_bios.summary() {
        let v = serde_json::to_value(s).expect("a summary serialises");
        out.insert("write_bios".into(), v);
    }
    for (dir, name) in [(0, "read"), (1, "write")] {
        out.insert(format!("{name}_requests"), requests[dir].into());
        out.insert(
            format!("{name}_merged_or_unmatched"),
            parsed.merged_or_unmatched[dir].into(),
        );
        for (i, stage) in BLOCK_STAGES.into_iter().enumerate() {
            if stages[dir][i].count() > 0 {
                let v = serde_json::to_value(stages[dir][i].summary(1_000))
                    .expect("a summary serialises");
                out.insert(format!("{name}_{stage}"), v);
            }
        }
    }
    serde_json::Value::Object(out)
}

/// `12.345678901` seconds -> nanoseconds.
pub(crate) fn parse_time_ns(s: &str) -> Option<u64> {
    let (secs, frac) = s.split_once('.')?;
    let secs: u64 = secs.parse().ok()?;
    let frac = format!("{frac:0<9}");
    let ns: u64 = frac.get(..9)?.parse().ok()?;
    Some(secs * 1_000_000_000 + ns)
}

#[cfg(test)]
mod tests {
    #[test]
    fn an_unexpanded_trace_buffer_is_restored_to_its_expanded_size() {
        use super::restore_value;
        use std::path::Path;
        let p = Path::new("/sys/kernel/tracing/buffer_size_kb");
        assert_eq!(restore_value(p, "7 (expanded: 1408)"), "1408");
        assert_eq!(restore_value(p, "1410"), "1410");
        let f = Path::new("/sys/kernel/tracing/events/block/block_rq_issue/filter");
        assert_eq!(restore_value(f, "none"), "0");
    }

    use super::*;

    fn whole(start: u64, end: u64) -> Vec<Extent> {
        vec![Extent {
            logical: 0,
            start,
            end,
        }]
    }

    #[test]
    fn filefrag_extents_become_sector_ranges() {
        let text = "Filesystem type is: ef53\nFile size of /var/tmp/x is 1048576 (2048 blocks of 512 bytes)\n ext:     logical_offset:        physical_offset: length:   expected: flags:\n   0:        0..    1023:     34816..     35839:   1024:            \n   1:     1024..    2047:     40960..     41983:   1024:      35840: last,eof\n/var/tmp/x: 2 extents found\n";
        assert_eq!(
            parse_filefrag(text),
            vec![
                Extent {
                    logical: 0,
                    start: 34816,
                    end: 35840
                },
                Extent {
                    logical: 1024,
                    start: 40960,
                    end: 41984
                }
            ]
        );
    }

    #[test]
    fn stages_come_from_matching_q_d_c_inside_the_file() {
        let text = "\
Q WS 100 4096 1.000000000 42
G WS 100 4096 1.000004000 42
D WS 100 4096 1.000010000 42
C WS 100 4096 1.000060000 42
Q R 200 4096 2.000000000 42
G R 200 4096 2.000000500 42
Q R 208 4096 2.000001000 42
D R 200 8192 2.000005000 42
C R 200 8192 2.000105000 42
Q R 999999 4096 3.0 42
D R 999999 4096 3.1 42
C R 999999 4096 3.2 42
";
        let v = summarise(&parse(text, &whole(0, 1000)), "vda");
        assert_eq!(v["write_requests"], 1);
        assert_eq!(v["write_q2d_us"]["mean"].as_f64().unwrap().round(), 10.0);
        assert_eq!(v["write_d2c_us"]["mean"].as_f64().unwrap().round(), 50.0);
        assert_eq!(v["write_q2g_us"]["mean"].as_f64().unwrap().round(), 4.0);
        assert_eq!(v["read_q2g_us"]["mean"].as_f64().unwrap(), 0.5);
        assert_eq!(v["read_requests"], 1, "sector 999999 is outside the file");
        assert_eq!(
            v["read_merged_or_unmatched"], 1,
            "sector 208 merged into 200"
        );
        assert_eq!(v["read_q2c_us"]["mean"].as_f64().unwrap().round(), 105.0);
    }

    #[test]
    fn blkparse_events_become_one_row_per_request_of_the_file() {
        // A file in two extents; a plugged write of three pages (two bios merged into the
        // first), a read in the second extent, a request outside the file, a Q never issued.
        let extents = [
            Extent {
                logical: 0,
                start: 34816,
                end: 35840,
            },
            Extent {
                logical: 1024,
                start: 40960,
                end: 41984,
            },
        ];
        let text = "\
Q R 8 4096 0.400000000 42
Q WS 34824 4096 0.500000000 42
G WS 34824 4096 0.500000200 42
Q WS 34832 4096 0.500001000 42
Q WS 34840 4096 0.500002000 42
I WS 34824 12288 0.500008000 42
D WS 34824 12288 0.500010000 42
D R 8 4096 0.550000000 42
C WS 34824 12288 0.500060000 42
C R 8 4096 0.560000000 42
Q R 40968 4096 0.600000000 42
D R 40968 4096 0.600004000 42
C R 40968 4096 0.600104000 42
Q R 41000 4096 0.700000000 42
garbage line
";
        let parsed = parse(text, &extents);
        assert_eq!(
            parsed.requests,
            vec![
                BlockRequest {
                    op: Op::Write,
                    sector: 34824,
                    slot: 1,
                    bytes: 12288,
                    merged: 2,
                    q_ns: 100_000_000,
                    g_ns: Some(100_000_200),
                    i_ns: Some(100_008_000),
                    d_ns: 100_010_000,
                    c_ns: 100_060_000,
                },
                BlockRequest {
                    op: Op::Read,
                    sector: 40968,
                    slot: 129,
                    bytes: 4096,
                    merged: 0,
                    q_ns: 200_000_000,
                    g_ns: None,
                    i_ns: None,
                    d_ns: 200_004_000,
                    c_ns: 200_104_000,
                },
            ],
            "times from the trace's first event (sector 8, outside the file); no G, no g_ns"
        );
        let v = summarise(&parsed, "vda");
        assert_eq!(v["write_requests"], 1);
        // The plug held the write 8 µs (Q2I), the scheduler 2 µs (I2D); the read had no I.
        assert_eq!(v["write_q2i_us"]["mean"].as_f64().unwrap().round(), 8.0);
        assert_eq!(v["write_i2d_us"]["mean"].as_f64().unwrap().round(), 2.0);
        assert!(v.get("read_q2i_us").is_none() && v.get("read_i2d_us").is_none());
        assert_eq!(v["write_merged_or_unmatched"], 2);
        // Its three one-page bios: the first starts the task's run, the others follow it.
        assert_eq!(v["write_bios"]["count"], 3);
        let after_own = v["write_bios"]["after_own_share"].as_f64().unwrap();
        assert!((after_own - 2.0 / 3.0).abs() < 1e-9, "{after_own}");
        assert_eq!(v["read_requests"], 1);
        assert_eq!(
            v["read_merged_or_unmatched"], 1,
            "sector 41000 never issued"
        );
    }

    #[test]
    fn tracefs_lines_become_q_g_i_d_c_events() {
        let text = "# tracer: nop\n\
              dd-10920   [001] ..... 15409.562140: block_bio_queue: 254,0 WS 357051424 + 8 [dd]\n\
              dd-10920   [001] ..... 15409.562141: block_getrq: 254,0 WS 357051424 + 8 [dd]\n\
              dd-10920   [001] ..... 15409.562141: block_rq_insert: 254,0 WS 4096 () 357051424 + 8 be,0,4 [dd]\n\
              dd-10920   [001] ..... 15409.562142: block_rq_issue: 254,0 WS 4096 () 357051424 + 8 be,0,4 [dd]\n\
   nvmswap-evict-28393   [001] ..s.. 15409.562191: block_rq_complete: 254,0 WS () 357051424 + 8 be,0,4 [0]\n";
        assert_eq!(
            tracefs_to_blkparse(text),
            "Q WS 357051424 4096 15409.562140 10920\nG WS 357051424 4096 15409.562141 10920\nI WS 357051424 4096 15409.562141 10920\nD WS 357051424 4096 15409.562142 10920\nC WS 357051424 4096 15409.562191 28393\n"
        );
        let parsed = parse(&tracefs_to_blkparse(text), &whole(357051424, 357051432));
        let v = summarise(&parsed, "vda");
        assert_eq!(v["write_requests"], 1);
        assert_eq!(v["write_q2c_us"]["mean"].as_f64().unwrap().round(), 51.0);
        assert_eq!(
            parsed.requests,
            vec![BlockRequest {
                op: Op::Write,
                sector: 357051424,
                slot: 0,
                bytes: 4096,
                merged: 0,
                q_ns: 0,
                g_ns: Some(1_000),
                i_ns: Some(1_000),
                d_ns: 2_000,
                c_ns: 51_000,
            }]
        );
    }

    #[test]
    fn times_parse_to_nanoseconds() {
        assert_eq!(parse_time_ns("1.5"), Some(1_500_000_000));
        assert_eq!(parse_time_ns("0.000000123"), Some(123));
        assert_eq!(parse_time_ns("x"), None);
    }
}
