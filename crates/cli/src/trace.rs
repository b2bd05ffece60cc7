//! `--trace FILE`: a run's timeline in the Chrome JSON trace format ("Trace Event Format"),
//! which Perfetto (ui.perfetto.dev) and chrome://tracing load.
//!
//! One process per run, one thread (track) per context: the foreground's tab opens and switches
//! as complete ("X") slices with discards and direct-reclaim entries as instants; major faults
//! as slices on a track of their own; kswapd's wake-ups and reclaimed pages on kswapd's track;
//! block requests as async ("b"/"e") slices, one track per software queue; counters ("C") for
//! free memory, resident memory, the compressed pool, swap in use, tabs open and faults per
//! timeline interval. Slices on one track never overlap partially (a slice that would start
//! inside the previous one starts at its end), and the file's events are in time order.

use std::borrow::Cow;
use std::collections::HashMap;
use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Mutex};

use nvmswap_sim::observe::{Event, FaultKind, Observer, ReclaimKind};

/// Tracks (Chrome trace "threads") of a run.
pub const TID_FOREGROUND: u32 = 1;
pub const TID_FAULTS: u32 = 2;
pub const TID_KSWAPD: u32 = 3;
pub const TID_DIRECT: u32 = 4;

#[derive(Debug, Clone)]
enum Kind {
    Slice { dur_ns: u64 },
    Instant,
    Counter(f64),
    AsyncBegin(u64),
    AsyncEnd(u64),
}

#[derive(Debug, Clone)]
struct Ev {
    ts_ns: u64,
    pid: u32,
    tid: u32,
    name: Cow<'static, str>,
    cat: &'static str,
    kind: Kind,
    /// Small arguments as (key, value) pairs.
    args: Vec<(&'static str, serde_json::Value)>,
}

/// The events of one or more runs, written as one trace file.
#[derive(Debug, Default)]
pub struct Trace {
    events: Vec<Ev>,
    /// (pid, name) of processes and (pid, tid, name) of their tracks.
    processes: Vec<(u32, String)>,
    threads: Vec<(u32, u32, String)>,
    /// Where the last slice of each (pid, tid) ends, to keep slices properly nested.
    track_end: HashMap<(u32, u32), u64>,
}

impl Trace {
    /// A process (one run) and its fixed tracks.
    pub fn process(&mut self, pid: u32, name: &str) {
        self.processes.push((pid, name.to_string()));
        for (tid, t) in [
            (TID_FOREGROUND, "foreground: tab opens and switches"),
            (TID_FAULTS, "major faults"),
            (TID_KSWAPD, "kswapd"),
            (TID_DIRECT, "direct reclaim"),
        ] {
            self.threads.push((pid, tid, t.to_string()));
        }
    }

    /// A complete slice from `start` lasting `dur` ns on track `tid`; clipped to start after the
    /// track's previous slice so that slices on one track nest.
    #[allow(clippy::too_many_arguments)] // the Chrome trace event's own fields, one each
    pub fn slice(
        &mut self,
        pid: u32,
        tid: u32,
        start: u64,
        dur: u64,
        name: impl Into<Cow<'static, str>>,
        cat: &'static str,
        args: Vec<(&'static str, serde_json::Value)>,
    ) {
        let end = start + dur;
        let prev = self.track_end.entry((pid, tid)).or_insert(0);
        let clipped = start.max(*prev);
        // A slice swallowed by the previous one is dropped; one that lasted no time (a switch
        // to a resident tab whose measured render CPU is under a clock tick) is kept at length
        // 0, so every switch the results count has its slice.
        if end < clipped || (end == clipped && dur > 0) {
            return;
        }
        let start = clipped;
        *prev = end;
        self.events.push(Ev {
            ts_ns: start,
            pid,
            tid,
            name: name.into(),
            cat,
            kind: Kind::Slice {
                dur_ns: end - start,
            },
            args,
        });
    }

    pub fn instant(
        &mut self,
        pid: u32,
        tid: u32,
        t: u64,
        name: impl Into<Cow<'static, str>>,
        cat: &'static str,
        args: Vec<(&'static str, serde_json::Value)>,
    ) {
        self.events.push(Ev {
            ts_ns: t,
            pid,
            tid,
            name: name.into(),
            cat,
            kind: Kind::Instant,
            args,
        });
    }

    /// A counter's value from `t` on (its track is named `name`).
    pub fn counter(&mut self, pid: u32, t: u64, name: &'static str, value: f64) {
        self.events.push(Ev {
            ts_ns: t,
            pid,
            tid: 0,
            name: Cow::Borrowed(name),
            cat: "counter",
            kind: Kind::Counter(value),
            args: Vec::new(),
        });
    }

    /// An async slice (overlapping ones allowed), e.g. a block request from queue to completion.
    #[allow(clippy::too_many_arguments)] // the Chrome trace event's own fields, one each
    pub fn async_slice(
        &mut self,
        pid: u32,
        id: u64,
        start: u64,
        end: u64,
        name: String,
        cat: &'static str,
        args: Vec<(&'static str, serde_json::Value)>,
    ) {
        let name: Cow<'static, str> = Cow::Owned(name);
        self.events.push(Ev {
            ts_ns: start,
            pid,
            tid: 0,
            name: name.clone(),
            cat,
            kind: Kind::AsyncBegin(id),
            args,
        });
        self.events.push(Ev {
            ts_ns: end.max(start),
            pid,
            tid: 0,
            name,
            cat,
            kind: Kind::AsyncEnd(id),
            args: Vec::new(),
        });
    }

    /// Writes the trace: metadata first, then every event in time order (an async end before a
    /// begin at the same instant, so a request never ends before it begins; of slices that
    /// begin together the longer first, so one that holds another encloses it).
    pub fn write(&mut self, path: &Path) -> anyhow::Result<()> {
        self.events.sort_by_key(|e| {
            let (rank, dur) = match e.kind {
                Kind::AsyncEnd(_) => (0, 0),
                Kind::Slice { dur_ns } => (1, dur_ns),
                _ => (1, 0),
            };
            (e.ts_ns, rank, std::cmp::Reverse(dur))
        });
        let file = std::fs::File::create(path)?;
        let mut w = std::io::BufWriter::new(file);
        write!(w, "{{\"displayTimeUnit\":\"ms\",\"traceEvents\":[")?;
        let mut first = true;
        let mut sep = |w: &mut std::io::BufWriter<std::fs::File>| -> std::io::Result<()> {
            if !first {
                w.write_all(b",\n")?;
            }
            first = false;
            Ok(())
        };
        for (pid, name) in &self.processes {
            sep(&mut w)?;
            let v = serde_json::json!({"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": name}});
            serde_json::to_writer(&mut w, &v)?;
        }
        for (pid, tid, name) in &self.threads {
            sep(&mut w)?;
            let v = serde_json::json!({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": name}});
            serde_json::to_writer(&mut w, &v)?;
        }
        for e in &self.events {
            sep(&mut w)?;
            let mut v = serde_json::json!({
                "name": e.name,
                "cat": e.cat,
                "pid": e.pid,
                "tid": e.tid,
                // Microseconds, as the format wants; ns resolution kept in the fraction.
                "ts": e.ts_ns as f64 / 1000.0,
            });
            let mut args: serde_json::Map<String, serde_json::Value> = e
                .args
                .iter()
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect();
            match e.kind {
                Kind::Slice { dur_ns } => {
                    v["ph"] = "X".into();
                    v["dur"] = (dur_ns as f64 / 1000.0).into();
                }
                Kind::Instant => {
                    v["ph"] = "i".into();
                    v["s"] = "t".into();
                }
                Kind::Counter(x) => {
                    v["ph"] = "C".into();
                    args.insert("value".into(), x.into());
                }
                Kind::AsyncBegin(id) => {
                    v["ph"] = "b".into();
                    v["id"] = id.into();
                }
                Kind::AsyncEnd(id) => {
                    v["ph"] = "e".into();
                    v["id"] = id.into();
                }
            }
            if !args.is_empty() {
                v["args"] = args.into();
            }
            serde_json::to_writer(&mut w, &v)?;
        }
        writeln!(w, "]}}")?;
        w.flush()?;
        Ok(())
    }
}

const MIB: f64 = 1048576.0;

/// Watches a sim run and records its trace into a shared [`Trace`] (the observer is handed to
/// the simulator, the trace stays with the caller).
pub struct SimTracer {
    trace: Arc<Mutex<Trace>>,
    pid: u32,
    faults_since_sample: u64,
    /// Reclaim of consecutive pages on one track shown as one slice: (track, start, end, pages).
    reclaim: Option<(u32, u64, u64, u64)>,
    /// Memory cgroup charges so far (their async slices' ids).
    charges: u64,
}

/// Ids of charges' async slices start here, clear of the block requests' ids.
const CHARGE_ID_BASE: u64 = 1 << 48;

/// Reclaimed pages closer together than this on one track join one `reclaim` slice (a page
/// each would make a full-scale trace hundreds of MB).
const RECLAIM_JOIN_NS: u64 = 1_000;

impl SimTracer {
    fn flush_reclaim(&mut self, tr: &mut Trace) {
        if let Some((tid, start, end, pages)) = self.reclaim.take() {
            tr.slice(
                self.pid,
                tid,
                start,
                end - start,
                "reclaim",
                "reclaim",
                vec![("pages", pages.into())],
            );
        }
    }
}

impl SimTracer {
    /// A tracer for a sim run, as process `pid` named `name`.
    pub fn new(trace: Arc<Mutex<Trace>>, pid: u32, name: &str) -> Self {
        if let Ok(mut t) = trace.lock() {
            t.process(pid, name);
        }
        SimTracer {
            trace,
            pid,
            faults_since_sample: 0,
            reclaim: None,
            charges: 0,
        }
    }
}

impl Observer for SimTracer {
    fn on_event(&mut self, e: &Event<'_>) {
        let pid = self.pid;
        if let Event::Fault { .. } = e {
            self.faults_since_sample += 1;
        }
        let trace = self.trace.clone();
        let Ok(mut tr) = trace.lock() else {
            return;
        };
        match *e {
            Event::TabOpened { t, end, tab, site } => tr.slice(
                pid,
                TID_FOREGROUND,
                t,
                end.saturating_sub(t),
                format!("open tab {tab}"),
                "tab",
                vec![("tab", tab.into()), ("site", site.into())],
            ),
            Event::Switch {
                t,
                end,
                tab,
                phase,
                tabs_open,
            } => tr.slice(
                pid,
                TID_FOREGROUND,
                t,
                end.saturating_sub(t),
                format!("switch to tab {tab}"),
                "switch",
                vec![
                    ("tab", tab.into()),
                    ("phase", phase.into()),
                    ("tabs_open", tabs_open.into()),
                    ("latency_ms", ((end.saturating_sub(t)) as f64 / 1e6).into()),
                ],
            ),
            Event::Discard { t, tab, oom } => tr.instant(
                pid,
                TID_FOREGROUND,
                t,
                format!("discard tab {tab}"),
                "discard",
                vec![("oom", oom.into())],
            ),
            Event::DirectReclaim { t, .. } => {
                tr.instant(pid, TID_DIRECT, t, "direct reclaim", "reclaim", Vec::new())
            }
            // One slice per charge, spanning its page-by-page `reclaim` slices, with the
            // statistics `extra.memcg_reclaim` summarises. Asynchronous: the background tabs'
            // charges overlap the foreground's (each tab runs on its own clock).
            Event::MemcgReclaim {
                t,
                pages_reclaimed,
                pages_scanned,
                pages_left_writing,
                lowest_priority,
                ns,
                batches,
                flushes,
                ..
            } => {
                self.charges += 1;
                // As scripts/charge-rotation-analyze prints the kernel's: priority, then
                // scanned/reclaimed/kept of each `shrink_inactive_list` call.
                let batches = batches
                    .iter()
                    .map(|b| format!("p{}:{}/{}/{}", b.priority, b.scanned, b.reclaimed, b.kept))
                    .collect::<Vec<_>>()
                    .join(" ");
                tr.async_slice(
                    pid,
                    CHARGE_ID_BASE + self.charges,
                    t,
                    t + ns,
                    "memcg charge".to_string(),
                    "reclaim",
                    vec![
                        ("pages_reclaimed", pages_reclaimed.into()),
                        ("pages_scanned", pages_scanned.into()),
                        ("pages_left_writing", pages_left_writing.into()),
                        ("lowest_priority", lowest_priority.into()),
                        ("remote_flushes", flushes.total().into()),
                        ("batches", batches.into()),
                    ],
                )
            }
            Event::Fault {
                t,
                kind,
                latency_ns,
                page,
                ..
            } if kind != FaultKind::Minor => tr.slice(
                pid,
                TID_FAULTS,
                t,
                latency_ns,
                if kind == FaultKind::Major {
                    "major fault"
                } else {
                    "lazy map (NVM)"
                },
                "fault",
                vec![("page", page.into())],
            ),
            Event::KswapdWake { t } => {
                tr.instant(pid, TID_KSWAPD, t, "kswapd wake", "reclaim", Vec::new())
            }
            Event::Reclaimed {
                t,
                kind,
                cpu_ns,
                wait_ns,
                ..
            } => {
                let tid = if kind == ReclaimKind::Kswapd {
                    TID_KSWAPD
                } else {
                    TID_DIRECT
                };
                let end = t + (cpu_ns + wait_ns).max(1);
                match &mut self.reclaim {
                    Some((rt, _, re, pages)) if *rt == tid && t <= *re + RECLAIM_JOIN_NS => {
                        *re = (*re).max(end);
                        *pages += 1;
                    }
                    _ => {
                        self.flush_reclaim(&mut tr);
                        self.reclaim = Some((tid, t, end, 1));
                    }
                }
            }
            Event::BlockCompleted { done, .. } => {
                let op = format!("{:?}", done.op).to_lowercase();
                tr.async_slice(
                    pid,
                    done.id,
                    done.q,
                    done.c,
                    format!("block queue {} {op}", done.cpu),
                    "block",
                    vec![("bytes", done.bytes.into())],
                );
            }
            Event::Sample {
                t,
                tabs_open,
                resident_bytes,
                pool_bytes,
                free_bytes,
                swap_used_bytes,
                swap_cached_bytes,
                active_anon_bytes,
                inactive_anon_bytes,
            } => {
                self.flush_reclaim(&mut tr);
                tr.counter(pid, t, "free memory (MiB)", free_bytes as f64 / MIB);
                tr.counter(
                    pid,
                    t,
                    "resident tab memory (MiB)",
                    resident_bytes as f64 / MIB,
                );
                tr.counter(pid, t, "compressed pool (MiB)", pool_bytes as f64 / MIB);
                tr.counter(pid, t, "swap used (MiB)", swap_used_bytes as f64 / MIB);
                tr.counter(pid, t, "swap cached (MiB)", swap_cached_bytes as f64 / MIB);
                tr.counter(pid, t, "active anon (MiB)", active_anon_bytes as f64 / MIB);
                tr.counter(
                    pid,
                    t,
                    "inactive anon (MiB)",
                    inactive_anon_bytes as f64 / MIB,
                );
                tr.counter(pid, t, "tabs open", tabs_open as f64);
                tr.counter(
                    pid,
                    t,
                    "faults per interval",
                    self.faults_since_sample as f64,
                );
                self.faults_since_sample = 0;
            }
            _ => {}
        }
    }
}

/// Records a live run's trace: the pager has no kswapd or block layer of its own; its evictor
/// thread's work shows as counters (pages evicted, faults served per sample interval).
pub struct LiveTracer {
    trace: Arc<Mutex<Trace>>,
    pid: u32,
    budget_bytes: u64,
    last: Option<(u64, u64, u64)>,
}

impl LiveTracer {
    pub fn new(trace: Arc<Mutex<Trace>>, pid: u32, name: &str, budget_bytes: u64) -> Self {
        if let Ok(mut t) = trace.lock() {
            t.process(pid, name);
        }
        LiveTracer {
            trace,
            pid,
            budget_bytes,
            last: None,
        }
    }
}

fn ns(d: std::time::Duration) -> u64 {
    d.as_nanos() as u64
}

impl nvmswap_live::PressureSink for LiveTracer {
    fn tab_opened(&mut self, start: std::time::Duration, end: std::time::Duration, tab: u32) {
        if let Ok(mut t) = self.trace.lock() {
            t.slice(
                self.pid,
                TID_FOREGROUND,
                ns(start),
                ns(end).saturating_sub(ns(start)),
                format!("open tab {tab}"),
                "tab",
                vec![("tab", tab.into())],
            );
        }
    }

    fn switched(
        &mut self,
        start: std::time::Duration,
        end: std::time::Duration,
        tab: u32,
        phase: &str,
        tabs_open: u32,
    ) {
        let dur = ns(end).saturating_sub(ns(start));
        if let Ok(mut t) = self.trace.lock() {
            t.slice(
                self.pid,
                TID_FOREGROUND,
                ns(start),
                dur,
                format!("switch to tab {tab}"),
                "switch",
                vec![
                    ("tab", tab.into()),
                    ("phase", phase.to_string().into()),
                    ("tabs_open", tabs_open.into()),
                    ("latency_ms", (dur as f64 / 1e6).into()),
                ],
            );
        }
    }

    fn discarded(&mut self, at: std::time::Duration, tab: u32) {
        if let Ok(mut t) = self.trace.lock() {
            t.instant(
                self.pid,
                TID_FOREGROUND,
                ns(at),
                format!("discard tab {tab}"),
                "discard",
                Vec::new(),
            );
        }
    }

    fn stats(&mut self, at: std::time::Duration, st: &nvmswap_live::PagerStats, swapped: u64) {
        let Ok(mut t) = self.trace.lock() else {
            return;
        };
        let (pid, at) = (self.pid, ns(at));
        let resident = st.resident_pages * nvmswap_live::PAGE as u64;
        t.counter(
            pid,
            at,
            "free memory (MiB)",
            self.budget_bytes.saturating_sub(resident) as f64 / MIB,
        );
        t.counter(pid, at, "resident tab memory (MiB)", resident as f64 / MIB);
        t.counter(
            pid,
            at,
            "compressed pool (MiB)",
            st.pool_stored_bytes as f64 / MIB,
        );
        t.counter(pid, at, "swap used (MiB)", swapped as f64 / MIB);
        let now = (st.faults, st.evictions, st.direct_reclaims);
        let (f0, e0, d0) = self.last.unwrap_or((0, 0, 0));
        t.counter(
            pid,
            at,
            "faults per interval",
            now.0.saturating_sub(f0) as f64,
        );
        t.counter(
            pid,
            at,
            "evictor: pages evicted per interval",
            now.1.saturating_sub(e0) as f64,
        );
        t.counter(
            pid,
            at,
            "direct reclaims per interval",
            now.2.saturating_sub(d0) as f64,
        );
        self.last = Some(now);
    }
}
