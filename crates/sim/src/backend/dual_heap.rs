//! Dual use of the NVM-Swap device (seed 004 §3: NVMCap and NVMPersist co-running on one NVM
//! device): a persistent heap beside the swap tier, configured by `[persistent_heap]`
//! (`nvmswap_core::dual_use`). Used by nvm_swap.rs only; without the section nothing here runs.
//!
//! The heap. At build, pheap's own PHT (`nvmswap_pheap`: its allocator, logging and hash table,
//! the code `nvmswap pheap bench` measures) runs in a pool in memory with line tracing on: it
//! puts `elements` keys, then puts a new key and deletes the oldest, `sample_pairs` times to warm
//! the cache model and as many again recorded. Every load and store of a pool line goes through
//! a model of seed 004's last-level cache (`core::caa::Llc`, 1 MB, 8 ways, the heap alone in it):
//! a miss is a line read from NVM. Every line written back is a line write. A fence ends an
//! epoch. The recorded operations are the heap's cycle, repeated for the whole run: in each
//! epoch the heap computes (its share of `cpu_ns_per_op`), reads its missed lines one after the
//! other (each waits for the last), then issues its write-backs at once and waits at the fence
//! for the last.
//!
//! The channel. The NVM device serves one transfer at a time (our assumption: the profile's
//! 4 KiB latencies are a page's transfer over one channel, so they are its occupancy). A swap
//! access (a swap-out's page write, a swap-in's page copy, Lazy Swap-in's reads, Heap-Wear's
//! migrations) holds it for its device latency as sampled from the profile; a heap line for the
//! profile's 4 KiB latency over 64 lines (pheap's `line_read_ns` / `line_write_ns`). In arrival
//! order: a swap access arriving while a heap read is in service waits for that read; arriving
//! during the heap's write-backs, for all of them (they were queued before it). A heap
//! transfer that would start while the swap side holds the channel starts when it is free, and
//! the heap's whole schedule moves by that delay. The slowdowns come out of these waits; nothing
//! else slows either side. Swap accesses do not wait for each other (as without the heap: sim's
//! NVM-Swap lets kswapd's writes and the foreground's copies overlap); the heap waits for their
//! union.
//!
//! Time. The heap's state is (t, p): at time t it has done p ns of its uncontended schedule
//! (the cycle's epochs back to back); without swap traffic p advances with t, so a long
//! stretch costs O(1). The swap side's intervals are kept until the heap has passed them. The
//! heap is committed up to the foreground's clock (`catch_up`); a swap access arriving later
//! projects the heap from there to its arrival to see what is in service.

use std::collections::BTreeMap;

use nvmswap_core::caa::{Llc, Misses, SEED004_LLC_BYTES, SEED004_LLC_WAYS};
use nvmswap_core::device::DeviceProfile;
use nvmswap_core::dual_use::PersistentHeapConfig;
use nvmswap_core::metrics::LatencyRecorder;
use nvmswap_core::NS_PER_S;
use nvmswap_pheap::bench::{fill, pool_size, KEY_SALT, LAYOUT, VAL_SALT};
use nvmswap_pheap::flush::{Cause, LINE};
use nvmswap_pheap::pht::Pht;
use nvmswap_pheap::pool::{
    line_read_ns, line_write_ns, AllocKind, Header, LineAccess, LogKind, Pool, PoolOptions,
};
use nvmswap_pheap::Heap;
use serde_json::{json, Value};

/// The work between two fences of the heap.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Epoch {
    /// CPU time before its channel use: its share of its operation's CPU time (and, at an
    /// operation's first epoch, the pause that keeps `ops_per_s`).
    pub cpu: u64,
    /// Lines read from NVM (cache misses of its loads and stores), one after the other.
    pub reads: u32,
    /// Lines written back, issued at once; the fence waits for the last.
    pub writes: u32,
    /// Operations whose last fence this is.
    pub ops_done: u32,
}

/// The heap's cycle of epochs and what it writes where.
pub struct HeapProfile {
    epochs: Vec<Epoch>,
    /// Uncontended start of each epoch in the cycle; `start[E]` is the cycle's length.
    start: Vec<u64>,
    /// Operations, line reads and line writes done before each epoch of the cycle (`[E]`: all).
    ops_before: Vec<u64>,
    reads_before: Vec<u64>,
    writes_before: Vec<u64>,
    /// Written lines (pool line, cause) of epoch k: `lines[line_at[k]..line_at[k + 1]]`.
    lines: Vec<(u64, Cause)>,
    line_at: Vec<usize>,
    read_ns: u64,
    write_ns: u64,
    /// Over the cycle: fences, log bytes, CPU time (without pauses), operations.
    fences: u64,
    log_bytes: u64,
    cpu_ns: u64,
    /// Where the pool's regions are (the wear's split).
    hdr: Option<Header>,
    /// Per kind of operation (puts, deletes: `ops` alternate them) over the cycle.
    kinds: [KindCounts; 2],
    /// Whether the cycle uses the channel at all.
    transfers: bool,
}

/// What the operations of one kind did over the cycle.
#[derive(Debug, Clone, Copy, Default)]
struct KindCounts {
    ops: u64,
    /// Lines written back by cause: allocator, log, data.
    writes: [u64; 3],
    reads: u64,
    fences: u64,
}

fn cause_index(c: Cause) -> usize {
    match c {
        Cause::Allocator => 0,
        Cause::Log => 1,
        Cause::Data => 2,
    }
}

/// An open epoch's accesses so far.
#[derive(Default)]
struct Open {
    reads: u32,
    lines: Vec<(u64, Cause)>,
}

impl HeapProfile {
    /// Runs pheap's PHT as configured (module comment) and records its cycle. `seed` picks the
    /// keys (the run's seed).
    pub fn measure(
        h: &PersistentHeapConfig,
        nvm: &DeviceProfile,
        seed: u64,
    ) -> Result<HeapProfile, String> {
        let alloc = AllocKind::parse(&h.allocator)
            .map_err(|e| format!("persistent_heap.allocator: {e}"))?;
        let logging =
            LogKind::parse(&h.logging).map_err(|e| format!("persistent_heap.logging: {e}"))?;
        let err = |e: nvmswap_pheap::PheapError| format!("persistent_heap: the PHT failed: {e}");
        let pool = Pool::create_in_memory(
            pool_size(h.elements),
            LAYOUT,
            alloc,
            logging,
            PoolOptions::default(),
        )
        .map_err(err)?;
        let mut heap = Heap::create(pool).map_err(err)?;
        let pht = Pht::create(&mut heap, h.elements).map_err(err)?;
        let (key, val) = (
            |i: u64| fill(seed, i, KEY_SALT),
            |i: u64| fill(seed, i, VAL_SALT),
        );
        for i in 0..h.elements {
            pht.put(&mut heap, &key(i), &val(i)).map_err(err)?;
        }
        heap.pool.set_trace_lines(true);
        let mut llc = Llc::new(SEED004_LLC_BYTES, SEED004_LLC_WAYS);
        let pairs = u64::from(h.sample_pairs);
        let mut ops: Vec<Vec<LineAccess>> = Vec::new();
        let mut log_bytes = 0;
        for round in 0..2 {
            let log0 = heap.pool.stats.log_bytes;
            for j in 0..pairs {
                let i = h.elements + round * pairs + j;
                pht.put(&mut heap, &key(i), &val(i)).map_err(err)?;
                let put = heap.pool.take_lines();
                if !pht.delete(&mut heap, &key(i - h.elements)).map_err(err)? {
                    return Err(format!("persistent_heap: key {} was not in the table", i));
                }
                let delete = heap.pool.take_lines();
                if round == 0 {
                    // Warming the cache: its misses are not the cycle's.
                    for a in put.iter().chain(&delete) {
                        if let LineAccess::Load(l) | LineAccess::Store(l) = a {
                            llc.access(l * LINE as u64, &mut Misses::default());
                        }
                    }
                } else {
                    ops.push(put);
                    ops.push(delete);
                }
            }
            log_bytes = heap.pool.stats.log_bytes - log0;
        }
        let mut p = Self::from_ops(
            &ops,
            &mut llc,
            h.cpu_ns_per_op.round() as u64,
            line_read_ns(nvm),
            line_write_ns(nvm),
        );
        p.log_bytes = log_bytes;
        p.hdr = Some(heap.pool.hdr.clone());
        if let Some(rate) = h.ops_per_s.filter(|&r| r > 0.0) {
            p.pace(rate);
        }
        Ok(p)
    }

    /// The cycle of the operations' traced accesses (puts and deletes alternating): loads and
    /// stores through `llc` (a miss is a line read), write-backs, fences ending epochs.
    fn from_ops(
        ops: &[Vec<LineAccess>],
        llc: &mut Llc,
        cpu_per_op: u64,
        read_ns: u64,
        write_ns: u64,
    ) -> HeapProfile {
        let mut epochs = Vec::new();
        let mut lines = Vec::new();
        let mut line_at = vec![0];
        let mut fences = 0;
        let mut kinds = [KindCounts::default(); 2];
        for (i, op) in ops.iter().enumerate() {
            let kind = &mut kinds[i % 2];
            kind.ops += 1;
            let first = epochs.len();
            let mut open = Open::default();
            let mut close = |open: &mut Open, epochs: &mut Vec<Epoch>| {
                epochs.push(Epoch {
                    cpu: 0,
                    reads: open.reads,
                    writes: open.lines.len() as u32,
                    ops_done: 0,
                });
                lines.append(&mut open.lines);
                line_at.push(lines.len());
                open.reads = 0;
            };
            for a in op {
                match *a {
                    LineAccess::Load(l) | LineAccess::Store(l) => {
                        let mut m = Misses::default();
                        llc.access(l * LINE as u64, &mut m);
                        let miss = (m.total() > 0) as u32;
                        open.reads += miss;
                        kind.reads += u64::from(miss);
                    }
                    LineAccess::Flush(l, cause) => {
                        open.lines.push((l, cause));
                        kind.writes[cause_index(cause)] += 1;
                    }
                    LineAccess::Fence => {
                        fences += 1;
                        kind.fences += 1;
                        close(&mut open, &mut epochs);
                    }
                }
            }
            if open.reads > 0 || !open.lines.is_empty() || epochs.len() == first {
                close(&mut open, &mut epochs);
            }
            // The operation's CPU time, spread over its epochs.
            let n = (epochs.len() - first) as u64;
            for (k, e) in epochs[first..].iter_mut().enumerate() {
                e.cpu = cpu_per_op / n + u64::from(k == 0) * (cpu_per_op % n);
            }
            epochs.last_mut().expect("an epoch per operation").ops_done += 1;
        }
        let mut p = HeapProfile {
            epochs,
            start: Vec::new(),
            ops_before: Vec::new(),
            reads_before: Vec::new(),
            writes_before: Vec::new(),
            lines,
            line_at,
            read_ns,
            write_ns,
            fences,
            log_bytes: 0,
            cpu_ns: cpu_per_op * ops.len() as u64,
            hdr: None,
            kinds,
            transfers: false,
        };
        p.index();
        p
    }

    /// A cycle of the given epochs, with no written lines recorded (tests of the channel).
    #[cfg(test)]
    pub fn of_epochs(epochs: Vec<Epoch>, read_ns: u64, write_ns: u64) -> HeapProfile {
        let n = epochs.len();
        let mut p = HeapProfile {
            cpu_ns: epochs.iter().map(|e| e.cpu).sum(),
            epochs,
            start: Vec::new(),
            ops_before: Vec::new(),
            reads_before: Vec::new(),
            writes_before: Vec::new(),
            lines: Vec::new(),
            line_at: vec![0; n + 1],
            read_ns,
            write_ns,
            fences: n as u64,
            log_bytes: 0,
            hdr: None,
            kinds: Default::default(),
            transfers: false,
        };
        p.index();
        p
    }

    /// Prefix sums of the cycle.
    fn index(&mut self) {
        let (mut t, mut o, mut r, mut w) = (0, 0, 0, 0);
        self.start = vec![0];
        self.ops_before = vec![0];
        self.reads_before = vec![0];
        self.writes_before = vec![0];
        for e in &self.epochs {
            t += self.duration(e);
            o += u64::from(e.ops_done);
            r += u64::from(e.reads);
            w += u64::from(e.writes);
            self.start.push(t);
            self.ops_before.push(o);
            self.reads_before.push(r);
            self.writes_before.push(w);
        }
        self.transfers = r + w > 0;
    }

    fn duration(&self, e: &Epoch) -> u64 {
        e.cpu + u64::from(e.reads) * self.read_ns + u64::from(e.writes) * self.write_ns
    }

    /// Each operation waits before it starts so that, uncontended, the heap does `rate`
    /// operations a second (none when its work alone takes longer).
    fn pace(&mut self, rate: f64) {
        let ops = self.ops();
        let want = (ops as f64 * NS_PER_S as f64 / rate).round() as u64;
        let pause = want.saturating_sub(self.cycle()) / ops.max(1);
        let mut first = true;
        for e in &mut self.epochs {
            if first {
                e.cpu += pause;
            }
            first = e.ops_done > 0;
        }
        self.index();
    }

    fn len(&self) -> u64 {
        self.epochs.len() as u64
    }
    fn cycle(&self) -> u64 {
        self.start[self.epochs.len()]
    }
    fn ops(&self) -> u64 {
        self.ops_before[self.epochs.len()]
    }

    /// Uncontended start of global epoch `g` (epochs of every cycle numbered from 0).
    fn cum(&self, g: u64) -> u64 {
        (g / self.len()) * self.cycle() + self.start[(g % self.len()) as usize]
    }

    /// The global epoch in progress at progress `p`.
    fn epoch_of(&self, p: u64) -> u64 {
        let (c, r) = (p / self.cycle(), p % self.cycle());
        let k = self.start.partition_point(|&s| s <= r) - 1;
        c * self.len() + k as u64
    }

    /// Prefix count `v` (one of the `_before` tables) over the global epochs before `g`.
    fn before(&self, v: &[u64], g: u64) -> u64 {
        (g / self.len()) * v[self.epochs.len()] + v[(g % self.len()) as usize]
    }

    /// The channel transfer in progress at progress `p`, or else the next: (start, length).
    /// A read is one line; an epoch's write-backs are one transfer (queued together).
    fn transfer_from(&self, p: u64) -> (u64, u64) {
        debug_assert!(self.transfers);
        let mut g = self.epoch_of(p);
        loop {
            let e = &self.epochs[(g % self.len()) as usize];
            let c0 = self.cum(g) + e.cpu;
            let reads_end = c0 + u64::from(e.reads) * self.read_ns;
            let end = reads_end + u64::from(e.writes) * self.write_ns;
            if end > c0 && p < end {
                return if p < reads_end {
                    let j = p.saturating_sub(c0) / self.read_ns;
                    (c0 + j * self.read_ns, self.read_ns)
                } else {
                    (reads_end, end - reads_end)
                };
            }
            g += 1;
        }
    }
}

/// The swap side's use of the channel.
#[derive(Debug, Default)]
struct SwapSide {
    accesses: u64,
    waited: u64,
    wait_ns: u64,
    busy_ns: u64,
}

/// Where the heap is: at time `t` it has done `p` ns of its uncontended schedule; `blocked`:
/// its transfer at `p` waits for the channel until `t`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct HeapAt {
    t: u64,
    p: u64,
    blocked: bool,
}

/// The heap projected to a swap access's arrival `at`, and the waits it took since the
/// committed state.
#[derive(Debug, Clone, Copy)]
struct Projection {
    at: u64,
    heap: HeapAt,
    wait: u64,
    delays: u64,
}

/// The heap and the channel it shares with the swap tier.
pub struct DualHeap {
    cfg: PersistentHeapConfig,
    prof: HeapProfile,
    swap_slots: u64,
    /// No heap work: `ops_per_s = 0`, or a cycle that never uses the channel.
    idle: bool,
    /// The heap, committed up to the foreground's clock.
    heap: HeapAt,
    /// The swap side's channel intervals the heap has not passed: start -> end, disjoint.
    busy: BTreeMap<u64, u64>,
    /// The heap projected to the last swap access's arrival (a burst of reclaim runs ahead of
    /// the foreground's clock; projecting each access from the committed state would go over
    /// the burst's intervals again and again).
    proj: Option<Projection>,
    heap_wait_ns: u64,
    heap_delays: u64,
    swap: SwapSide,
    /// NVM-Swap's swap-ins into a frame: software, copy and channel wait.
    swap_in: LatencyRecorder,
    nvm: DeviceProfile,
}

impl DualHeap {
    pub fn new(
        cfg: &PersistentHeapConfig,
        nvm: &DeviceProfile,
        swap_slots: u64,
        seed: u64,
    ) -> Result<DualHeap, String> {
        let prof = HeapProfile::measure(cfg, nvm, seed)?;
        Ok(Self::with_profile(
            cfg.clone(),
            prof,
            nvm.clone(),
            swap_slots,
        ))
    }

    fn with_profile(
        cfg: PersistentHeapConfig,
        prof: HeapProfile,
        nvm: DeviceProfile,
        swap_slots: u64,
    ) -> DualHeap {
        DualHeap {
            idle: cfg.idle() || !prof.transfers,
            cfg,
            prof,
            swap_slots,
            heap: HeapAt::default(),
            busy: BTreeMap::new(),
            proj: None,
            heap_wait_ns: 0,
            heap_delays: 0,
            swap: SwapSide::default(),
            swap_in: LatencyRecorder::new(),
            nvm,
        }
    }

    /// The heap from `st` run to `until` through the swap side's intervals: its new state (t
    /// may pass `until` while it waits for the channel), and the wait and the delayed transfers
    /// this added.
    fn run(&self, mut st: HeapAt, until: u64) -> (HeapAt, u64, u64) {
        if self.idle {
            st.t = st.t.max(until);
            return (st, 0, 0);
        }
        let (mut wait, mut delays) = (0, 0);
        // The intervals are disjoint: the first that matters is the one holding t, or after.
        let from = match self.busy.range(..=st.t).next_back() {
            Some((&s, &e)) if e > st.t => s,
            _ => st.t,
        };
        for (&s, &e) in self.busy.range(from..) {
            if e <= st.t {
                continue;
            }
            if s >= until {
                break;
            }
            let t0 = st.t.max(s);
            let p0 = st.p + (t0 - st.t);
            let (mut px, len) = self.prof.transfer_from(p0);
            let at = |px: u64| {
                if px <= p0 {
                    t0 - (p0 - px)
                } else {
                    t0 + (px - p0)
                }
            };
            let mut x = at(px);
            if x < t0 {
                // In service when the interval began: it arrived first and finishes; the
                // heap's next transfer is the one that meets the interval.
                px = self.prof.transfer_from(px + len).0;
                x = at(px);
            }
            if x >= e {
                continue;
            }
            wait += e - x;
            // The transfer the heap already waits for (an interval grown since) is one delay.
            if !(st.blocked && px == st.p && x == st.t) {
                delays += 1;
            }
            st = HeapAt {
                t: e,
                p: px,
                blocked: true,
            };
        }
        if st.t < until {
            st = HeapAt {
                t: until,
                p: st.p + (until - st.t),
                blocked: false,
            };
        }
        (st, wait, delays)
    }

    /// The heap runs up to `t` (the foreground's clock: no access arrives before it later).
    pub fn commit(&mut self, t: u64) {
        if self.idle || t <= self.heap.t {
            return;
        }
        // From the last projection when it is not past t (it carries its waits).
        let (st, w0, d0) = match self.proj.take() {
            Some(pr) if pr.at <= t => (pr.heap, pr.wait, pr.delays),
            _ => (self.heap, 0, 0),
        };
        let (st, wait, delays) = self.run(st, t);
        self.heap = st;
        self.heap_wait_ns += w0 + wait;
        self.heap_delays += d0 + delays;
        // The intervals are disjoint, so their ends are in the order of their starts.
        while let Some(entry) = self.busy.first_entry() {
            if *entry.get() > t {
                break;
            }
            entry.remove();
        }
    }

    /// A swap access arriving at `at` that holds the channel for `busy` ns of device time:
    /// how long it waits for the heap.
    pub fn swap_access(&mut self, at: u64, busy: u64) -> u64 {
        self.swap.accesses += 1;
        self.swap.busy_ns += busy;
        if self.idle {
            return 0;
        }
        // The heap projected from the committed state to `at`; a later arrival goes on from
        // this projection (the interval this access holds starts at `at` or later, and
        // running the heap over intervals it has passed changes nothing), an earlier one
        // starts again from the committed state.
        let base = match self.proj {
            Some(pr) if pr.at <= at => pr,
            _ => Projection {
                at: self.heap.t,
                heap: self.heap,
                wait: 0,
                delays: 0,
            },
        };
        let (st, w, d) = self.run(base.heap, at);
        self.proj = Some(Projection {
            at,
            heap: st,
            wait: base.wait + w,
            delays: base.delays + d,
        });
        let (t1, p1) = (st.t, st.p);
        let wait = if t1 > at {
            0 // the heap waits for the channel itself: nothing of it in service
        } else {
            let (px, len) = self.prof.transfer_from(p1);
            if px <= p1 && p1 < px + len {
                px + len - p1
            } else {
                0
            }
        };
        if wait > 0 {
            self.swap.waited += 1;
            self.swap.wait_ns += wait;
        }
        self.hold(at + wait, at + wait + busy);
        wait
    }

    /// A swap-in into a frame took `ns` (software, copy and wait).
    pub fn swap_in_took(&mut self, ns: u64) {
        self.swap_in.record_ns(ns);
    }

    /// The swap side holds the channel over [s, e).
    fn hold(&mut self, mut s: u64, mut e: u64) {
        if e <= s {
            return;
        }
        if let Some((&ps, &pe)) = self.busy.range(..=s).next_back() {
            if pe >= s {
                s = ps;
                e = e.max(pe);
                self.busy.remove(&ps);
            }
        }
        while let Some((&ns, &ne)) = self.busy.range(s..).next() {
            if ns > e {
                break;
            }
            e = e.max(ne);
            self.busy.remove(&ns);
        }
        self.busy.insert(s, e);
    }

    /// Operations the heap had done at progress `p`.
    fn ops_at(&self, p: u64) -> u64 {
        if self.cfg.idle() {
            return 0;
        }
        let g = self.prof.epoch_of(p);
        self.prof.before(&self.prof.ops_before, g)
    }

    /// The results' `extra.persistent_heap` at the run's end `end` (docs/results-schema.md).
    pub fn report(&mut self, end: u64) -> Value {
        self.commit(end);
        let prof = &self.prof;
        let secs = end as f64 / NS_PER_S as f64;
        let per_s = |n: u64| if secs > 0.0 { n as f64 / secs } else { 0.0 };
        let (ops, ops_alone) = (self.ops_at(self.heap.p), self.ops_at(end));
        // Epochs done, and the wear of their write-backs: whole cycles, then the rest.
        let g = if self.cfg.idle() {
            0
        } else {
            prof.epoch_of(self.heap.p)
        };
        let (cycles, rest) = (g / prof.len(), (g % prof.len()) as usize);
        let mut per_line: BTreeMap<u64, u64> = BTreeMap::new();
        let mut by_cause = [0u64; 3];
        for k in 0..prof.epochs.len() {
            let n = cycles + u64::from(k < rest);
            for &(line, cause) in &prof.lines[prof.line_at[k]..prof.line_at[k + 1]] {
                *per_line.entry(line).or_default() += n;
                by_cause[cause_index(cause)] += n;
            }
        }
        per_line.retain(|_, n| *n > 0);
        let line_writes: u64 = by_cause.iter().sum();
        let line_reads = prof.before(&prof.reads_before, g);
        let region = |line: u64| {
            let off = line * LINE as u64;
            match &prof.hdr {
                Some(h) if off >= h.heap_off => "data",
                Some(h) if off >= h.meta_off => "allocator",
                Some(h) if off >= h.log_off => "log",
                Some(h) if off >= h.root_off => "root",
                Some(_) => "header",
                None => "unknown",
            }
        };
        let mut by_region: BTreeMap<&str, u64> = BTreeMap::new();
        let mut per_page: BTreeMap<u64, u64> = BTreeMap::new();
        for (&line, &n) in &per_line {
            *by_region.entry(region(line)).or_default() += n;
            *per_page.entry(line * LINE as u64 / 4096).or_default() += n;
        }
        let hottest = per_line
            .iter()
            .max_by_key(|(l, n)| (**n, std::cmp::Reverse(**l)));
        let e = &self.nvm;
        let line_j = |nj: Option<f64>, n: u64| nj.map(|nj| nj * 1e-9 / 64.0 * n as f64);
        let energy = match (
            line_j(e.write_energy_nj, line_writes),
            line_j(e.read_energy_nj, line_reads),
        ) {
            (Some(w), Some(r)) => Some(w + r),
            _ => None,
        };
        let ops_c = prof.ops().max(1) as f64;
        let swap = &self.swap;
        let swap_in = (self.swap_in.count() > 0).then(|| self.swap_in.summary(1_000));
        json!({
            "region_bytes": self.cfg.region_bytes,
            "swap_slots": self.swap_slots,
            "elements": self.cfg.elements,
            "allocator": self.cfg.allocator,
            "logging": self.cfg.logging,
            "ops_per_s_target": self.cfg.ops_per_s,
            "ops": ops,
            "ops_per_s": per_s(ops),
            "ops_alone": ops_alone,
            "ops_per_s_alone": per_s(ops_alone),
            "slowdown": (ops > 0).then(|| ops_alone as f64 / ops as f64),
            "channel_wait_ms": self.heap_wait_ns as f64 / 1e6,
            "channel_delays": self.heap_delays,
            "channel_busy_share": if end > 0 {
                (line_reads * prof.read_ns + line_writes * prof.write_ns) as f64 / end as f64
            } else { 0.0 },
            "per_op": {
                "lines_written": prof.writes_before[prof.epochs.len()] as f64 / ops_c,
                "lines_read": prof.reads_before[prof.epochs.len()] as f64 / ops_c,
                "fences": prof.fences as f64 / ops_c,
                "log_bytes": prof.log_bytes as f64 / ops_c,
                "cpu_ns": prof.cpu_ns as f64 / ops_c,
                "uncontended_ns": prof.cycle() as f64 / ops_c,
            },
            "per_put": kind_json(&prof.kinds[0]),
            "per_delete": kind_json(&prof.kinds[1]),
            "line_writes": line_writes,
            "line_writes_by_cause": {"allocator": by_cause[0], "log": by_cause[1], "data": by_cause[2]},
            "line_writes_by_region": by_region,
            "line_reads": line_reads,
            "hottest_line": hottest.map(|(&l, &n)| json!({
                "region": region(l),
                "pool_offset": l * LINE as u64,
                "writes": n,
                "writes_per_s": per_s(n),
            })),
            "max_page_line_writes": per_page.values().max().copied().unwrap_or(0),
            "nvm_energy_j": energy,
            "swap": {
                "accesses": swap.accesses,
                "waited": swap.waited,
                "wait_ms": swap.wait_ns as f64 / 1e6,
                "wait_ns_mean": if swap.accesses > 0 { swap.wait_ns as f64 / swap.accesses as f64 } else { 0.0 },
                "channel_busy_share": if end > 0 { swap.busy_ns as f64 / end as f64 } else { 0.0 },
                "swap_in_us": swap_in,
            },
        })
    }
}

/// Per operation of one kind: lines written back by cause, lines read, fences.
fn kind_json(k: &KindCounts) -> Value {
    let n = k.ops.max(1) as f64;
    json!({
        "lines_written": {
            "allocator": k.writes[0] as f64 / n,
            "log": k.writes[1] as f64 / n,
            "data": k.writes[2] as f64 / n,
        },
        "lines_read": k.reads as f64 / n,
        "fences": k.fences as f64 / n,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A heap of one epoch per operation: 1000 ns of CPU, one read (20 ns), two writes (2 x 120
    /// ns): a cycle of 1260 ns whose channel use is [1000, 1260).
    fn heap(ops_per_s: Option<f64>) -> DualHeap {
        let epochs = vec![Epoch {
            cpu: 1000,
            reads: 1,
            writes: 2,
            ops_done: 1,
        }];
        let cfg = PersistentHeapConfig {
            region_bytes: 1 << 20,
            elements: 1024,
            allocator: "nvwa".into(),
            logging: "hybrid".into(),
            ops_per_s,
            cpu_ns_per_op: 1000.0,
            sample_pairs: 1,
        };
        let nvm = DeviceProfile::bundled("pcm").unwrap();
        DualHeap::with_profile(cfg, HeapProfile::of_epochs(epochs, 20, 120), nvm, 100)
    }

    #[test]
    fn an_idle_heap_never_delays_a_swap_access() {
        let mut d = heap(Some(0.0));
        for t in (0..100_000).step_by(77) {
            assert_eq!(d.swap_access(t, 1280), 0);
        }
        assert_eq!(d.report(100_000)["ops"], 0);
    }

    #[test]
    fn a_swap_access_waits_for_what_the_heap_has_in_service() {
        let mut d = heap(None);
        // CPU: the channel is free.
        assert_eq!(d.swap_access(500, 10), 0);
        // During the read [1000, 1020): its rest.
        let mut d = heap(None);
        assert_eq!(d.swap_access(1010, 10), 10);
        // During the write-backs [1020, 1260): all of them.
        let mut d = heap(None);
        assert_eq!(d.swap_access(1100, 10), 160);
        // The next cycle, same place.
        let mut d = heap(None);
        assert_eq!(d.swap_access(1260 + 1100, 10), 160);
    }

    #[test]
    fn the_heap_waits_for_the_swap_side_and_falls_behind() {
        let mut d = heap(None);
        // A swap-out of 7680 ns arriving at 900 holds the channel [900, 8580): the heap's read
        // due at 1000 starts at 8580; everything after moves by 7580.
        assert_eq!(d.swap_access(900, 7680), 0);
        d.commit(8580 + 260);
        assert_eq!((d.heap.t, d.heap.p), (8840, 1260));
        assert_eq!((d.heap_wait_ns, d.heap_delays), (7580, 1));
        // At 8600 the heap's read was in service (8580 + 20 is its end): a later access then
        // waits, against the moved schedule.
        let mut d2 = heap(None);
        d2.swap_access(900, 7680);
        d2.commit(8590);
        assert_eq!(d2.swap_access(8590, 10), 10);
        // Over 10 cycles' time, the one delay (6 cycles' worth) leaves the heap 3 operations.
        let r = d.report(12_600);
        assert_eq!(r["ops_alone"], 10);
        assert_eq!(r["ops"], 3);
    }

    #[test]
    fn a_wait_grown_by_a_later_access_is_one_delay() {
        let mut d = heap(None);
        // [900, 8580) holds the heap's read due at 1000; an access at 8000 (the heap is still
        // waiting: nothing of it in service) extends the hold to 9000.
        assert_eq!(d.swap_access(900, 7680), 0);
        assert_eq!(d.swap_access(8000, 1000), 0);
        d.commit(10_000);
        assert_eq!((d.heap_wait_ns, d.heap_delays), (8000, 1));
        assert_eq!(d.heap.p, 1000 + 1000);
    }

    #[test]
    fn a_write_back_in_service_goes_first() {
        let mut d = heap(None);
        // Arriving at 1100, the access waits for the write-backs (to 1260) and holds the
        // channel [1260, 1270); the heap's next read is due at 2260: no delay.
        assert_eq!(d.swap_access(1100, 10), 160);
        d.commit(5000);
        assert_eq!((d.heap_wait_ns, d.heap.p), (0, 5000));
    }

    #[test]
    fn pacing_stretches_the_cycle_to_the_rate() {
        let mut d = heap(Some(500_000.0));
        d.prof.pace(500_000.0);
        assert_eq!(d.prof.cycle(), 2000);
        assert_eq!(d.report(1_000_000_000)["ops"], 500_000);
    }
}
