//! The pool: an NVM region (a file mapped shared, or a buffer for the crash checker) with a
//! checksummed header, and the only write path to it: `write`, `flush`, `fence`. Every store,
//! flush and fence can be recorded (the crash checker replays them) and every flush and fence is
//! counted by cause.
//!
//! Layout (all offsets from the start; regions page aligned):
//! `[header 4 KiB][root 4 KiB][transaction log][allocator metadata][heap]`.

use std::cell::RefCell;
use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};

use memmap2::MmapMut;

use crate::error::{PheapError, Result};
use crate::flush::{spin, Cause, FlushInsn, Stats, LINE};

/// Identifies a pool file: "NVMSWPH" and a NUL.
pub const MAGIC: [u8; 8] = *b"NVMSWPH\0";
/// The on-media layout this build writes and reads. Bump on any change to the layout.
pub const LAYOUT_VERSION: u32 = 1;
pub const PAGE: u64 = 4096;
/// Smallest pool: header, root, a 16 KiB log, metadata and at least a few heap pages.
pub const MIN_POOL: u64 = 256 * 1024;
/// Bytes of the header covered by its checksum (the checksum follows them).
const HEADER_FIELDS: usize = 112;
/// Log capacity: seed 004 §4.3 truncates the log at the LLC size, 1 MB on its Atom platform.
pub const LOG_MAX: u64 = 1 << 20;
pub const ROOT_LEN: u64 = PAGE;

/// Which allocator manages the heap.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum AllocKind {
    /// Seed 004 §4.2's NVM-write-aware allocator: metadata in DRAM, a two-level log in NVM.
    Nvwa,
    /// A persistent jemalloc-style allocator: run headers and bitmaps in NVM, flushed on change.
    Naive,
}

/// How transactions log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum LogKind {
    /// Old value of every written word before the in-place store.
    UndoWord,
    /// New value of every written word, applied at commit.
    RedoWord,
    /// Old contents of every object written (whole object, once per transaction).
    UndoObject,
    /// Seed 004 §4.3: word or object records chosen per object, redo.
    Hybrid,
}

/// The kind among `all` whose name is `s`, or an error listing the names.
fn parse_named<K: Copy>(
    all: &[K],
    name: fn(K) -> &'static str,
    s: &str,
    what: &'static str,
) -> Result<K> {
    all.iter()
        .copied()
        .find(|&k| name(k) == s)
        .ok_or_else(|| PheapError::Unknown {
            what,
            name: s.into(),
            known: all.iter().map(|&k| name(k)).collect::<Vec<_>>().join(", "),
        })
}

impl AllocKind {
    pub const ALL: [AllocKind; 2] = [AllocKind::Nvwa, AllocKind::Naive];
    pub fn name(self) -> &'static str {
        match self {
            AllocKind::Nvwa => "nvwa",
            AllocKind::Naive => "naive",
        }
    }
    pub fn parse(s: &str) -> Result<AllocKind> {
        parse_named(&AllocKind::ALL, AllocKind::name, s, "allocator")
    }
    fn code(self) -> u32 {
        self as u32
    }
}

impl LogKind {
    pub const ALL: [LogKind; 4] = [
        LogKind::UndoWord,
        LogKind::RedoWord,
        LogKind::UndoObject,
        LogKind::Hybrid,
    ];
    pub fn name(self) -> &'static str {
        match self {
            LogKind::UndoWord => "undo-word",
            LogKind::RedoWord => "redo-word",
            LogKind::UndoObject => "undo-object",
            LogKind::Hybrid => "hybrid",
        }
    }
    pub fn parse(s: &str) -> Result<LogKind> {
        parse_named(&LogKind::ALL, LogKind::name, s, "logging")
    }
    pub fn is_redo(self) -> bool {
        matches!(self, LogKind::RedoWord | LogKind::Hybrid)
    }
}

/// The pool header (offsets of the regions and what manages them).
#[derive(Debug, Clone, PartialEq)]
pub struct Header {
    pub size: u64,
    pub layout: String,
    pub alloc: AllocKind,
    pub logging: LogKind,
    pub root_off: u64,
    pub log_off: u64,
    pub log_len: u64,
    pub meta_off: u64,
    pub meta_len: u64,
    pub heap_off: u64,
    pub heap_len: u64,
}

fn round_up(x: u64, to: u64) -> u64 {
    x.div_ceil(to) * to
}

impl Header {
    /// Place the regions of a pool of `size` bytes.
    pub fn plan(size: u64, layout: &str, alloc: AllocKind, logging: LogKind) -> Result<Header> {
        if size < MIN_POOL {
            return Err(PheapError::TooSmall {
                size,
                min: MIN_POOL,
            });
        }
        let size = size / PAGE * PAGE;
        let log_len = (size / 16 / PAGE * PAGE).clamp(4 * PAGE, LOG_MAX);
        let fixed = 2 * PAGE + log_len + crate::alloc::meta_fixed(alloc);
        let per_page = crate::alloc::meta_per_page(alloc);
        let heap_pages = (size - fixed) / (PAGE + per_page);
        let meta_len = round_up(
            crate::alloc::meta_fixed(alloc) + heap_pages * per_page,
            PAGE,
        );
        let heap_pages = (size - 2 * PAGE - log_len - meta_len) / PAGE;
        if heap_pages < 8 {
            return Err(PheapError::TooSmall {
                size,
                min: MIN_POOL,
            });
        }
        Ok(Header {
            size,
            layout: layout.chars().take(15).collect(),
            alloc,
            logging,
            root_off: PAGE,
            log_off: 2 * PAGE,
            log_len,
            meta_off: 2 * PAGE + log_len,
            meta_len,
            heap_off: 2 * PAGE + log_len + meta_len,
            heap_len: heap_pages * PAGE,
        })
    }

    fn encode(&self) -> [u8; HEADER_FIELDS + 4] {
        let mut b = [0u8; HEADER_FIELDS + 4];
        b[0..8].copy_from_slice(&MAGIC);
        b[8..12].copy_from_slice(&LAYOUT_VERSION.to_le_bytes());
        b[12..16].copy_from_slice(&(HEADER_FIELDS as u32).to_le_bytes());
        b[16..24].copy_from_slice(&self.size.to_le_bytes());
        let name = self.layout.as_bytes();
        b[24..24 + name.len().min(16)].copy_from_slice(&name[..name.len().min(16)]);
        b[40..44].copy_from_slice(&self.alloc.code().to_le_bytes());
        b[44..48].copy_from_slice(&(self.logging as u32).to_le_bytes());
        let words = [
            self.root_off,
            self.log_off,
            self.log_len,
            self.meta_off,
            self.meta_len,
            self.heap_off,
            self.heap_len,
        ];
        for (i, w) in words.iter().enumerate() {
            b[48 + i * 8..56 + i * 8].copy_from_slice(&w.to_le_bytes());
        }
        let crc = crc32fast::hash(&b[..HEADER_FIELDS]);
        b[HEADER_FIELDS..].copy_from_slice(&crc.to_le_bytes());
        b
    }

    /// Parse and check a header; `len` is the size of the file or image it came from.
    pub fn decode(b: &[u8], len: u64, path: &Path, layout: &str) -> Result<Header> {
        let p = || path.to_path_buf();
        // Another program's file first (whatever its size), then one too small to be a pool.
        if b.len() >= 8 && b[0..8] != MAGIC {
            return Err(PheapError::NotAPool {
                path: p(),
                found: b[..8].to_vec(),
            });
        }
        if b.len() < HEADER_FIELDS + 4 || len < MIN_POOL {
            return Err(PheapError::TooSmall {
                size: len,
                min: MIN_POOL,
            });
        }
        let u32_at = |o: usize| u32::from_le_bytes(b[o..o + 4].try_into().unwrap());
        let u64_at = |o: usize| u64::from_le_bytes(b[o..o + 8].try_into().unwrap());
        let version = u32_at(8);
        if version > LAYOUT_VERSION {
            return Err(PheapError::NewerVersion {
                path: p(),
                found: version,
                supported: LAYOUT_VERSION,
            });
        }
        if version < LAYOUT_VERSION {
            return Err(PheapError::OldVersion {
                path: p(),
                found: version,
                supported: LAYOUT_VERSION,
            });
        }
        let stored = u32_at(HEADER_FIELDS);
        let computed = crc32fast::hash(&b[..HEADER_FIELDS]);
        if stored != computed || u32_at(12) as usize != HEADER_FIELDS {
            return Err(PheapError::Checksum {
                path: p(),
                stored,
                computed,
            });
        }
        let size = u64_at(16);
        if len < size {
            return Err(PheapError::Truncated {
                path: p(),
                expected: size,
                actual: len,
            });
        }
        let name_end = b[24..40].iter().position(|&c| c == 0).unwrap_or(16);
        let found = String::from_utf8_lossy(&b[24..24 + name_end]).into_owned();
        if found != layout {
            return Err(PheapError::Layout {
                path: p(),
                found,
                expected: layout.into(),
            });
        }
        let corrupt = |what: &str| PheapError::Corrupt {
            path: p(),
            what: what.into(),
        };
        let alloc = match u32_at(40) {
            0 => AllocKind::Nvwa,
            1 => AllocKind::Naive,
            _ => return Err(corrupt("unknown allocator code in header")),
        };
        let logging = *LogKind::ALL
            .get(u32_at(44) as usize)
            .ok_or_else(|| corrupt("unknown logging code in header"))?;
        let h = Header {
            size,
            layout: found,
            alloc,
            logging,
            root_off: u64_at(48),
            log_off: u64_at(56),
            log_len: u64_at(64),
            meta_off: u64_at(72),
            meta_len: u64_at(80),
            heap_off: u64_at(88),
            heap_len: u64_at(96),
        };
        let planned = Header::plan(size, layout, alloc, logging)?;
        if planned != h {
            return Err(corrupt(
                "region offsets do not match this build's plan for the size",
            ));
        }
        Ok(h)
    }
}

/// One recorded event of a run (the crash checker's input).
#[derive(Debug, Clone)]
pub enum Event {
    Store {
        off: u64,
        data: Vec<u8>,
    },
    /// A line write-back was issued (durable at the next fence at the latest).
    Flush {
        line: u64,
    },
    Fence,
    /// The workload's marker: operation `n` returned (its effects must survive a crash).
    Done(u64),
}

/// One access of a pool line, for a model of the device under the pool
/// (`PoolOptions::trace_lines`): sim's dual use replays a PHT's accesses against its cache and
/// NVM channel models (crates/sim/src/backend/dual_heap.rs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineAccess {
    /// A load from the line (`Pool::read`).
    Load(u64),
    /// A store into the line (`Pool::write`).
    Store(u64),
    /// The line written back (`Pool::flush_line`), and why.
    Flush(u64, Cause),
    /// A fence: the write-backs issued before it are durable when it returns.
    Fence,
}

/// A flush call site the crash checker's own tests can remove (seeded bug).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OmitFlush {
    /// The flush of the written data lines at commit.
    CommitData,
    /// The flush of undo records before the in-place store (undo logs) or of the redo records
    /// before the commit mark (redo logs).
    LogRecords,
    /// The flush of the allocator's records when allocations are published.
    AllocRecords,
}

impl OmitFlush {
    pub fn parse(s: &str) -> Result<OmitFlush> {
        match s {
            "commit-data" => Ok(OmitFlush::CommitData),
            "log-records" => Ok(OmitFlush::LogRecords),
            "alloc-records" => Ok(OmitFlush::AllocRecords),
            _ => Err(PheapError::Unknown {
                what: "flush site",
                name: s.into(),
                known: "commit-data, log-records, alloc-records".into(),
            }),
        }
    }
}

enum Mem {
    Map { map: MmapMut, _file: File },
    Buf(Vec<u8>),
}

impl Mem {
    fn bytes(&self) -> &[u8] {
        match self {
            Mem::Map { map, .. } => map,
            Mem::Buf(b) => b,
        }
    }
    fn bytes_mut(&mut self) -> &mut [u8] {
        match self {
            Mem::Map { map, .. } => map,
            Mem::Buf(b) => b,
        }
    }
}

/// Options of a pool that are not on the media.
#[derive(Debug, Clone, Default)]
pub struct PoolOptions {
    /// Emulated NVM write latency per flushed line, ns (0: none).
    pub line_write_ns: u64,
    /// Record every store, flush and fence (crash checker).
    pub record: bool,
    /// Remove one flush site (the crash checker's seeded bug).
    pub omit: Option<OmitFlush>,
    /// Note every line loaded, stored, written back and every fence, by line number
    /// (`Pool::take_lines`); off by default (the benchmark's timing is not disturbed).
    pub trace_lines: bool,
}

/// Per flushed line latency of a device profile: its 4 KiB write latency over the 64 lines of a
/// page (our assumption: a page write is 64 line writes back to back; the profile gives pages).
pub fn line_write_ns(profile: &nvmswap_core::device::DeviceProfile) -> u64 {
    (profile.write_4k.mean_ns / (PAGE as f64 / LINE as f64)).round() as u64
}

/// Per line read latency of a device profile: its 4 KiB read latency over the 64 lines of a page
/// (the same assumption as `line_write_ns`).
pub fn line_read_ns(profile: &nvmswap_core::device::DeviceProfile) -> u64 {
    (profile.read_4k.mean_ns / (PAGE as f64 / LINE as f64)).round() as u64
}

pub struct Pool {
    mem: Mem,
    pub hdr: Header,
    path: PathBuf,
    insn: FlushInsn,
    pub stats: Stats,
    opts: PoolOptions,
    trace: Vec<Event>,
    /// Lines written back per heap/metadata page (wear), indexed by page number in the pool.
    pub page_writes: Vec<u32>,
    /// With `PoolOptions::trace_lines`: the line accesses since the last `take_lines` (loads
    /// come through `&self`, hence the cell).
    lines: RefCell<Vec<LineAccess>>,
}

impl Pool {
    /// Create a pool file (it must not exist; we never reformat).
    pub fn create(
        path: &Path,
        size: u64,
        layout: &str,
        alloc: AllocKind,
        logging: LogKind,
        opts: PoolOptions,
    ) -> Result<Pool> {
        let hdr = Header::plan(size, layout, alloc, logging)?;
        let io = |source| PheapError::Io {
            path: path.to_path_buf(),
            source,
        };
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(path)
            .map_err(|e| {
                if e.kind() == std::io::ErrorKind::AlreadyExists {
                    PheapError::Exists {
                        path: path.to_path_buf(),
                    }
                } else {
                    io(e)
                }
            })?;
        file.set_len(hdr.size).map_err(io)?;
        // SAFETY: we created the file just now and hold it open for the pool's lifetime; its
        // length is fixed; another process truncating it would fault us (SIGBUS), as with any
        // shared mapping, which the docs say.
        let map = unsafe { MmapMut::map_mut(&file) }.map_err(io)?;
        let mut pool = Pool::with_mem(Mem::Map { map, _file: file }, hdr, path, opts);
        pool.format();
        Ok(pool)
    }

    /// Create a pool inside an existing NVM region file at byte `offset` (page aligned), for a
    /// region shared with other users (the NVM-Swap tier). Refuses a range that already holds a
    /// pool, and a range beyond the file's end.
    pub fn create_in_region(
        path: &Path,
        offset: u64,
        size: u64,
        layout: &str,
        alloc: AllocKind,
        logging: LogKind,
        opts: PoolOptions,
    ) -> Result<Pool> {
        let hdr = Header::plan(size, layout, alloc, logging)?;
        let io = |source| PheapError::Io {
            path: path.to_path_buf(),
            source,
        };
        if !offset.is_multiple_of(PAGE) {
            return Err(PheapError::Corrupt {
                path: path.to_path_buf(),
                what: format!("region offset {offset} is not page aligned"),
            });
        }
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .map_err(io)?;
        let len = file.metadata().map_err(io)?.len();
        if len < offset + hdr.size {
            return Err(PheapError::Truncated {
                path: path.to_path_buf(),
                expected: offset + hdr.size,
                actual: len,
            });
        }
        // SAFETY: the range lies inside the file (checked above); the file stays open with the
        // pool; other users of the region map other ranges of it.
        let map = unsafe {
            memmap2::MmapOptions::new()
                .offset(offset)
                .len(hdr.size as usize)
                .map_mut(&file)
        }
        .map_err(io)?;
        if map[0..8] == MAGIC {
            return Err(PheapError::Exists {
                path: path.to_path_buf(),
            });
        }
        let mut pool = Pool::with_mem(Mem::Map { map, _file: file }, hdr, path, opts);
        pool.format();
        Ok(pool)
    }

    /// A pool in a buffer (the crash checker, tests).
    pub fn create_in_memory(
        size: u64,
        layout: &str,
        alloc: AllocKind,
        logging: LogKind,
        opts: PoolOptions,
    ) -> Result<Pool> {
        let hdr = Header::plan(size, layout, alloc, logging)?;
        let mem = Mem::Buf(vec![0u8; hdr.size as usize]);
        let mut pool = Pool::with_mem(mem, hdr, Path::new("<memory>"), opts);
        pool.format();
        Ok(pool)
    }

    /// Open an existing pool file made for `layout`.
    pub fn open(path: &Path, layout: &str, opts: PoolOptions) -> Result<Pool> {
        let io = |source| PheapError::Io {
            path: path.to_path_buf(),
            source,
        };
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .map_err(io)?;
        let len = file.metadata().map_err(io)?.len();
        let mut head = vec![0u8; (HEADER_FIELDS + 4).min(len as usize)];
        {
            use std::io::Read;
            (&file).read_exact(&mut head).map_err(io)?;
        }
        let hdr = Header::decode(&head, len, path, layout)?;
        // SAFETY: as in `create`: the file stays open with the pool and is at least `hdr.size`
        // bytes long (checked by `decode`).
        let map = unsafe { MmapMut::map_mut(&file) }.map_err(io)?;
        Ok(Pool::with_mem(
            Mem::Map { map, _file: file },
            hdr,
            path,
            opts,
        ))
    }

    /// Open a pool image (a crash image) held in a buffer.
    pub fn from_image(image: Vec<u8>, layout: &str, opts: PoolOptions) -> Result<Pool> {
        let path = Path::new("<image>");
        let hdr = Header::decode(&image, image.len() as u64, path, layout)?;
        Ok(Pool::with_mem(Mem::Buf(image), hdr, path, opts))
    }

    fn with_mem(mem: Mem, hdr: Header, path: &Path, opts: PoolOptions) -> Pool {
        let pages = (hdr.size / PAGE) as usize;
        Pool {
            mem,
            hdr,
            path: path.to_path_buf(),
            insn: FlushInsn::detect(),
            stats: Stats::default(),
            opts,
            trace: Vec::new(),
            page_writes: vec![0; pages],
            lines: RefCell::new(Vec::new()),
        }
    }

    /// Write the header last, so a crash during creation leaves no valid pool.
    fn format(&mut self) {
        let enc = self.hdr.encode();
        self.write(0, &enc);
        self.flush(0, enc.len() as u64, Cause::Data);
        self.fence(Cause::Data);
        self.stats = Stats::default();
        self.page_writes.iter_mut().for_each(|w| *w = 0);
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
    pub fn flush_insn(&self) -> FlushInsn {
        self.insn
    }
    pub fn omitted(&self, site: OmitFlush) -> bool {
        self.opts.omit == Some(site)
    }
    pub fn recording(&self) -> bool {
        self.opts.record
    }
    pub fn take_trace(&mut self) -> Vec<Event> {
        std::mem::take(&mut self.trace)
    }
    pub fn mark_done(&mut self, op: u64) {
        if self.opts.record {
            self.trace.push(Event::Done(op));
        }
    }
    /// Turn line tracing (`PoolOptions::trace_lines`) on or off from here on.
    pub fn set_trace_lines(&mut self, on: bool) {
        self.opts.trace_lines = on;
    }
    /// The line accesses noted since the last call (empty unless tracing).
    pub fn take_lines(&mut self) -> Vec<LineAccess> {
        self.lines.take()
    }
    /// Notes an access of every line of `[off, off + len)`.
    fn note_lines(&self, off: u64, len: u64, access: fn(u64) -> LineAccess) {
        if len == 0 {
            return;
        }
        let mut lines = self.lines.borrow_mut();
        for line in off / LINE as u64..=(off + len - 1) / LINE as u64 {
            lines.push(access(line));
        }
    }
    /// The whole media (the crash checker's starting image).
    pub fn image(&self) -> Vec<u8> {
        self.mem.bytes().to_vec()
    }

    #[inline]
    pub fn read(&self, off: u64, len: usize) -> &[u8] {
        if self.opts.trace_lines {
            self.note_lines(off, len as u64, LineAccess::Load);
        }
        &self.mem.bytes()[off as usize..off as usize + len]
    }
    #[inline]
    pub fn read_u64(&self, off: u64) -> u64 {
        u64::from_le_bytes(self.read(off, 8).try_into().unwrap())
    }

    /// Store bytes (into the cache: not durable until flushed and fenced).
    #[inline]
    pub fn write(&mut self, off: u64, data: &[u8]) {
        self.mem.bytes_mut()[off as usize..off as usize + data.len()].copy_from_slice(data);
        if self.opts.trace_lines {
            self.note_lines(off, data.len() as u64, LineAccess::Store);
        }
        if self.opts.record {
            self.trace.push(Event::Store {
                off,
                data: data.to_vec(),
            });
        }
    }
    #[inline]
    pub fn write_u64(&mut self, off: u64, v: u64) {
        self.write(off, &v.to_le_bytes());
    }

    /// Write back every line of `[off, off + len)`.
    pub fn flush(&mut self, off: u64, len: u64, cause: Cause) {
        if len == 0 {
            return;
        }
        let first = off / LINE as u64;
        let last = (off + len - 1) / LINE as u64;
        for line in first..=last {
            self.flush_line(line, cause);
        }
    }

    /// Write back one line (by line number).
    pub fn flush_line(&mut self, line: u64, cause: Cause) {
        let at = line as usize * LINE;
        let p = self.mem.bytes()[at..].as_ptr();
        self.insn.flush(p);
        self.stats.flushes.add(cause, 1);
        self.page_writes[(line * LINE as u64 / PAGE) as usize] += 1;
        if self.opts.line_write_ns > 0 {
            spin(self.opts.line_write_ns);
            self.stats.emulated_ns += self.opts.line_write_ns;
        }
        if self.opts.record {
            self.trace.push(Event::Flush { line });
        }
        if self.opts.trace_lines {
            self.lines.get_mut().push(LineAccess::Flush(line, cause));
        }
    }

    pub fn fence(&mut self, cause: Cause) {
        self.insn.fence();
        self.stats.fences.add(cause, 1);
        if self.opts.record {
            self.trace.push(Event::Fence);
        }
        if self.opts.trace_lines {
            self.lines.get_mut().push(LineAccess::Fence);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trip_and_refusals() {
        let h = Header::plan(1 << 22, "pht", AllocKind::Nvwa, LogKind::Hybrid).unwrap();
        let enc = h.encode();
        let p = Path::new("x");
        assert_eq!(Header::decode(&enc, h.size, p, "pht").unwrap(), h);
        assert!(matches!(
            Header::decode(&enc, h.size, p, "btree"),
            Err(PheapError::Layout { .. })
        ));
        assert!(matches!(
            Header::decode(&enc, h.size - 4096, p, "pht"),
            Err(PheapError::Truncated { .. })
        ));
        let mut newer = enc;
        newer[8] = 2;
        assert!(matches!(
            Header::decode(&newer, h.size, p, "pht"),
            Err(PheapError::NewerVersion { found: 2, .. })
        ));
        let mut bad = enc;
        bad[20] ^= 1;
        assert!(matches!(
            Header::decode(&bad, h.size, p, "pht"),
            Err(PheapError::Checksum { .. })
        ));
        let mut other = enc;
        other[0] = b'P';
        assert!(matches!(
            Header::decode(&other, h.size, p, "pht"),
            Err(PheapError::NotAPool { .. })
        ));
        assert!(matches!(
            Header::plan(1000, "pht", AllocKind::Nvwa, LogKind::Hybrid),
            Err(PheapError::TooSmall { .. })
        ));
        assert!(h.heap_off + h.heap_len <= h.size);
        assert!(h.meta_off + h.meta_len <= h.heap_off);
    }
}
