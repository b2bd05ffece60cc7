//! The persistent heap: a pool, its allocator, a root object and transactions with undo, redo,
//! object or hybrid logging; `open` recovers to the last committed transaction.
//!
//! Log region: one header line whose first word is `tid << 2 | state` (EMPTY or COMMITTED),
//! then records of 24-byte headers `[kind << 56 | addr][value or length][tid | crc32]`, object
//! records followed by their data. A record belongs to the transaction whose id it carries and
//! is valid only if its CRC (over header and data) matches, so stale and torn records end a scan.
//!
//! * Undo (word or object): each record is flushed and fenced before its in-place store; commit
//!   flushes the data, then (if the transaction allocated or freed) marks COMMITTED, publishes
//!   allocations and frees, and marks EMPTY(tid). Recovery from EMPTY(t) rolls back the records
//!   of t+1 in reverse order; from COMMITTED(t) it republishes t's allocations and frees.
//! * Redo (word, hybrid): stores wait in DRAM; commit writes the records, flushes them, marks
//!   COMMITTED, applies and flushes the stores, publishes, marks EMPTY. Recovery from
//!   COMMITTED(t) replays t's records.
//! * Hybrid (seed 004 §4.3): per object written, word records if `24 x words` is smaller than
//!   one object record (24 + object size), else one object record; the caller gives no hint.

use std::collections::{BTreeMap, HashMap, HashSet};

use crate::alloc::Allocator;
use crate::error::{PheapError, Result};
use crate::flush::{Cause, LINE};
use crate::pool::{LogKind, OmitFlush, Pool};

/// Size of the root object (one line), at the pool's root offset.
pub const ROOT_SIZE: u64 = 64;
/// A record header: three words (seed 004 §3.2.2: address, data, link; 24 B per logged word).
pub const REC_HDR: u64 = 24;

const EMPTY: u64 = 0;
const COMMITTED: u64 = 1;
const K_WORD: u64 = 1;
const K_OBJECT: u64 = 2;
const K_ALLOC: u64 = 3;
const K_FREE: u64 = 4;
const ADDR_MASK: u64 = (1 << 56) - 1;

#[derive(Debug, Clone)]
struct Record {
    kind: u64,
    addr: u64,
    value: u64,
    data: Vec<u8>,
}

/// Per transaction counters (the benchmark divides them by operations).
#[derive(Debug, Clone, Copy, Default)]
pub struct TxCounts {
    pub committed: u64,
    pub word_records: u64,
    pub object_records: u64,
}

pub struct Heap {
    pub pool: Pool,
    pub alloc: Allocator,
    logging: LogKind,
    tid: u64,
    in_tx: bool,
    log_tail: u64,
    /// First log byte not yet flushed.
    log_flushed: u64,
    dirty: Vec<u64>,
    allocs: Vec<u64>,
    frees: Vec<u64>,
    fresh: HashSet<u64>,
    /// Undo-object / hybrid: objects already logged in this transaction.
    logged: HashSet<u64>,
    /// Redo: pending stores by object, and by word for reads.
    pending: BTreeMap<u64, BTreeMap<u64, u64>>,
    pending_words: HashMap<u64, u64>,
    pub counts: TxCounts,
}

impl Heap {
    /// A heap on a freshly created pool.
    pub fn create(mut pool: Pool) -> Result<Heap> {
        let alloc = Allocator::rebuild(&mut pool)?;
        Ok(Heap::with(pool, alloc, 0))
    }

    /// Open a heap, recovering from a crash: rebuild the allocator, then roll the last
    /// transaction back or forward.
    pub fn open(mut pool: Pool) -> Result<Heap> {
        let mut alloc = Allocator::rebuild(&mut pool)?;
        let log_off = pool.hdr.log_off;
        let state = pool.read_u64(log_off);
        let (tid, st) = (state >> 2, state & 3);
        let logging = pool.hdr.logging;
        let recs = |pool: &Pool, t: u64| scan(pool, t);
        let mut next_tid = tid;
        if st == COMMITTED {
            let records = recs(&pool, tid);
            if logging.is_redo() {
                apply(&mut pool, records.iter());
            }
            republish(&mut pool, &mut alloc, &records)?;
        } else if st == EMPTY {
            let records = recs(&pool, tid + 1);
            // Records of t+1 with no commit mark: an undo log rolls them back; a redo log just
            // drops them. Either way t+1 is burnt, so a later transaction's scan can never run
            // on into stale records carrying its own id.
            if !records.is_empty() && !logging.is_redo() {
                apply(&mut pool, records.iter().rev());
            }
            // Reserved allocations of the dropped transaction were never published. t+1 is
            // burnt even when the scan found none of its records: the records of one epoch
            // reach NVM in any order, so a lost first line hides valid records of t+1 behind
            // it, which a later, shorter transaction reusing t+1 would run on into (the crash
            // checker's `--run-on-every` failure). One flushed line per open.
            next_tid = tid + 1;
        } else {
            return Err(PheapError::Corrupt {
                path: pool.path().to_path_buf(),
                what: format!("log state word {state:#x}"),
            });
        }
        if st != EMPTY || next_tid != tid {
            pool.write_u64(log_off, next_tid << 2 | EMPTY);
            pool.flush(log_off, 8, Cause::Log);
            pool.fence(Cause::Log);
        }
        Ok(Heap::with(pool, alloc, next_tid))
    }

    fn with(pool: Pool, alloc: Allocator, tid: u64) -> Heap {
        let logging = pool.hdr.logging;
        let start = pool.hdr.log_off + LINE as u64;
        Heap {
            pool,
            alloc,
            logging,
            tid,
            in_tx: false,
            log_tail: start,
            log_flushed: start,
            dirty: Vec::new(),
            allocs: Vec::new(),
            frees: Vec::new(),
            fresh: HashSet::new(),
            logged: HashSet::new(),
            pending: BTreeMap::new(),
            pending_words: HashMap::new(),
            counts: TxCounts::default(),
        }
    }

    pub fn logging(&self) -> LogKind {
        self.logging
    }

    pub fn root(&self) -> u64 {
        self.pool.hdr.root_off
    }

    /// Read a word, as the running transaction sees it.
    pub fn read_u64(&self, addr: u64) -> u64 {
        if let Some(&v) = self.pending_words.get(&addr) {
            return v;
        }
        self.pool.read_u64(addr)
    }

    /// Read bytes that no pending redo store touches (object contents written with `init`, or
    /// outside a transaction).
    pub fn read(&self, addr: u64, len: usize) -> &[u8] {
        self.pool.read(addr, len)
    }

    pub fn begin(&mut self) {
        assert!(!self.in_tx, "transactions do not nest");
        self.in_tx = true;
        self.log_tail = self.pool.hdr.log_off + LINE as u64;
        self.log_flushed = self.log_tail;
    }

    fn object_size(&self, obj: u64) -> Result<u64> {
        if obj == self.root() {
            return Ok(ROOT_SIZE);
        }
        self.alloc
            .size_of(obj)
            .ok_or(PheapError::BadObject { off: obj })
    }

    fn append(&mut self, kind: u64, addr: u64, value: u64, data: &[u8]) -> Result<()> {
        let len = REC_HDR + (data.len() as u64).div_ceil(8) * 8;
        let end = self.pool.hdr.log_off + self.pool.hdr.log_len;
        if self.log_tail + len > end {
            return Err(PheapError::LogFull {
                needed: len,
                capacity: self.pool.hdr.log_len - LINE as u64,
            });
        }
        let w0 = kind << 56 | addr;
        let tid = (self.tid + 1) as u32;
        let crc = record_crc(w0, value, tid, data);
        let mut buf = Vec::with_capacity(len as usize);
        buf.extend_from_slice(&w0.to_le_bytes());
        buf.extend_from_slice(&value.to_le_bytes());
        buf.extend_from_slice(&((crc as u64) << 32 | tid as u64).to_le_bytes());
        buf.extend_from_slice(data);
        buf.resize(len as usize, 0);
        self.pool.write(self.log_tail, &buf);
        self.log_tail += len;
        self.pool.stats.log_bytes += len;
        self.pool.stats.log_meta_bytes += if kind == K_WORD { 16 } else { REC_HDR };
        match kind {
            K_WORD => self.counts.word_records += 1,
            K_OBJECT => self.counts.object_records += 1,
            _ => {}
        }
        Ok(())
    }

    /// Flush the log written since the last flush (and fence if `fence`).
    fn flush_log(&mut self, fence: bool) {
        if self.log_tail > self.log_flushed {
            if !self.pool.omitted(OmitFlush::LogRecords) {
                let (from, to) = (self.log_flushed, self.log_tail);
                self.pool.flush(from, to - from, Cause::Log);
            }
            self.log_flushed = self.log_tail;
            if fence {
                self.pool.fence(Cause::Log);
            }
        }
    }

    /// Allocate `size` bytes in the transaction (published at commit; gone if it does not
    /// commit). Contents are undefined: write them with `init`.
    pub fn alloc(&mut self, size: u64) -> Result<u64> {
        assert!(self.in_tx, "alloc outside a transaction");
        let off = self.alloc.reserve(size)?;
        self.append(K_ALLOC, off, size, &[])?;
        self.allocs.push(off);
        self.fresh.insert(off);
        Ok(off)
    }

    /// Free an object when the transaction commits.
    pub fn free(&mut self, obj: u64) -> Result<()> {
        assert!(self.in_tx, "free outside a transaction");
        self.object_size(obj)?;
        self.append(K_FREE, obj, 0, &[])?;
        self.frees.push(obj);
        Ok(())
    }

    /// Write the contents of an object allocated in this transaction: no log record (the object
    /// is unreachable if the transaction does not commit); flushed at commit.
    pub fn init(&mut self, obj: u64, at: u64, data: &[u8]) -> Result<()> {
        if !self.fresh.contains(&obj) {
            return Err(PheapError::BadObject { off: obj });
        }
        let size = self.object_size(obj)?;
        if at + data.len() as u64 > size {
            return Err(PheapError::OutOfBounds {
                off: obj + at,
                len: data.len() as u64,
            });
        }
        self.pool.write(obj + at, data);
        self.mark_dirty(obj + at, data.len() as u64);
        Ok(())
    }

    fn mark_dirty(&mut self, addr: u64, len: u64) {
        if len == 0 {
            return;
        }
        let first = addr / LINE as u64;
        let last = (addr + len - 1) / LINE as u64;
        self.dirty.extend(first..=last);
    }

    /// A logged write of whole words into object `obj` at byte `at`.
    pub fn write(&mut self, obj: u64, at: u64, words: &[u64]) -> Result<()> {
        assert!(self.in_tx, "write outside a transaction");
        let size = self.object_size(obj)?;
        let len = words.len() as u64 * 8;
        if !at.is_multiple_of(8) || at + len > size {
            return Err(PheapError::OutOfBounds { off: obj + at, len });
        }
        let addr = obj + at;
        match self.logging {
            LogKind::UndoWord => {
                for (i, _) in words.iter().enumerate() {
                    let a = addr + i as u64 * 8;
                    let old = self.pool.read_u64(a);
                    self.append(K_WORD, a, old, &[])?;
                }
                self.flush_log(true);
                self.store_words(addr, words);
            }
            LogKind::UndoObject => {
                if !self.fresh.contains(&obj) && self.logged.insert(obj) {
                    let old = self.pool.read(obj, size as usize).to_vec();
                    self.append(K_OBJECT, obj, size, &old)?;
                    self.flush_log(true);
                }
                self.store_words(addr, words);
            }
            LogKind::RedoWord | LogKind::Hybrid => {
                let m = self.pending.entry(obj).or_default();
                for (i, &w) in words.iter().enumerate() {
                    let a = addr + i as u64 * 8;
                    m.insert(a, w);
                    self.pending_words.insert(a, w);
                }
            }
        }
        Ok(())
    }

    fn store_words(&mut self, addr: u64, words: &[u64]) {
        let mut buf = Vec::with_capacity(words.len() * 8);
        for w in words {
            buf.extend_from_slice(&w.to_le_bytes());
        }
        self.pool.write(addr, &buf);
        self.mark_dirty(addr, buf.len() as u64);
    }

    fn set_state(&mut self, tid: u64, state: u64) {
        let at = self.pool.hdr.log_off;
        self.pool.write_u64(at, tid << 2 | state);
        self.pool.flush(at, 8, Cause::Log);
        self.pool.fence(Cause::Log);
    }

    fn flush_data(&mut self) {
        self.dirty.sort_unstable();
        self.dirty.dedup();
        if !self.pool.omitted(OmitFlush::CommitData) {
            for i in 0..self.dirty.len() {
                let line = self.dirty[i];
                self.pool.flush_line(line, Cause::Data);
            }
        }
        self.dirty.clear();
    }

    /// Commit: durable when this returns.
    pub fn commit(&mut self) -> Result<()> {
        assert!(self.in_tx, "commit outside a transaction");
        let tid = self.tid + 1;
        let publishes = !self.allocs.is_empty() || !self.frees.is_empty();
        if self.logging.is_redo() {
            let pending = std::mem::take(&mut self.pending);
            let mut stores: Vec<(u64, Vec<u8>)> = Vec::new();
            for (obj, words) in &pending {
                let size = self.object_size(*obj)?;
                let object_record = self.logging == LogKind::Hybrid
                    && REC_HDR + size < REC_HDR * words.len() as u64;
                if object_record {
                    let mut img = self.pool.read(*obj, size as usize).to_vec();
                    for (&a, &v) in words {
                        let o = (a - obj) as usize;
                        img[o..o + 8].copy_from_slice(&v.to_le_bytes());
                    }
                    self.append(K_OBJECT, *obj, size, &img)?;
                    stores.push((*obj, img));
                } else {
                    for (&a, &v) in words {
                        self.append(K_WORD, a, v, &[])?;
                        stores.push((a, v.to_le_bytes().to_vec()));
                    }
                }
            }
            self.flush_log(false);
            // Data written with `init` into fresh objects must be durable with the commit.
            self.flush_data();
            self.pool.fence(Cause::Log);
            self.set_state(tid, COMMITTED);
            for (a, bytes) in &stores {
                self.pool.write(*a, bytes);
                self.mark_dirty(*a, bytes.len() as u64);
            }
            self.flush_data();
            self.pool.fence(Cause::Data);
            self.publish()?;
            self.set_state(tid, EMPTY);
            self.pending_words.clear();
        } else {
            self.flush_log(false);
            self.flush_data();
            self.pool.fence(Cause::Data);
            if publishes {
                self.set_state(tid, COMMITTED);
                self.publish()?;
            }
            self.set_state(tid, EMPTY);
        }
        self.tid = tid;
        self.in_tx = false;
        self.fresh.clear();
        self.logged.clear();
        self.counts.committed += 1;
        Ok(())
    }

    fn publish(&mut self) -> Result<()> {
        if self.allocs.is_empty() && self.frees.is_empty() {
            return Ok(());
        }
        for off in std::mem::take(&mut self.allocs) {
            self.alloc.publish_alloc(&mut self.pool, off)?;
        }
        for off in std::mem::take(&mut self.frees) {
            self.alloc.publish_free(&mut self.pool, off);
        }
        self.alloc.finish_publish(&mut self.pool);
        Ok(())
    }
}

fn record_crc(w0: u64, value: u64, tid: u32, data: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(&w0.to_le_bytes());
    h.update(&value.to_le_bytes());
    h.update(&tid.to_le_bytes());
    h.update(data);
    h.finalize()
}

/// The valid records of transaction `tid`, in log order.
fn scan(pool: &Pool, tid: u64) -> Vec<Record> {
    let mut out = Vec::new();
    let mut at = pool.hdr.log_off + LINE as u64;
    let end = pool.hdr.log_off + pool.hdr.log_len;
    while at + REC_HDR <= end {
        let w0 = pool.read_u64(at);
        let value = pool.read_u64(at + 8);
        let w2 = pool.read_u64(at + 16);
        let (t, crc) = (w2 as u32, (w2 >> 32) as u32);
        let kind = w0 >> 56;
        if t != tid as u32 || !(K_WORD..=K_FREE).contains(&kind) {
            break;
        }
        let dlen = if kind == K_OBJECT { value } else { 0 };
        let padded = dlen.div_ceil(8) * 8;
        if at + REC_HDR + padded > end {
            break;
        }
        let data = pool.read(at + REC_HDR, dlen as usize);
        if record_crc(w0, value, t, data) != crc {
            break;
        }
        out.push(Record {
            kind,
            addr: w0 & ADDR_MASK,
            value,
            data: data.to_vec(),
        });
        at += REC_HDR + padded;
    }
    out
}

/// Store the words and objects of `records` (a redo log's new values, or an undo log's old
/// values in reverse order), flush them and fence.
fn apply<'a>(pool: &mut Pool, records: impl Iterator<Item = &'a Record>) {
    for r in records {
        let len = match r.kind {
            K_WORD => {
                pool.write_u64(r.addr, r.value);
                8
            }
            K_OBJECT => {
                pool.write(r.addr, &r.data);
                r.data.len() as u64
            }
            _ => continue,
        };
        pool.flush(r.addr, len, Cause::Data);
    }
    pool.fence(Cause::Data);
}

fn republish(pool: &mut Pool, alloc: &mut Allocator, records: &[Record]) -> Result<()> {
    let mut any = false;
    for r in records {
        match r.kind {
            K_ALLOC => {
                // The reservation is lost with DRAM; take the same slot again.
                if alloc.size_of(r.addr).is_none() {
                    alloc
                        .reserve_at(r.addr, r.value)
                        .map_err(|_| PheapError::Corrupt {
                            path: pool.path().to_path_buf(),
                            what: format!("logged allocation at {:#x} cannot be replayed", r.addr),
                        })?;
                }
                alloc.publish_alloc(pool, r.addr)?;
                any = true;
            }
            K_FREE => {
                alloc.publish_free(pool, r.addr);
                any = true;
            }
            _ => {}
        }
    }
    if any {
        alloc.finish_publish(pool);
    }
    Ok(())
}
