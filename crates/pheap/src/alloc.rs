//! The two heap allocators. Both keep the same DRAM picture of the heap (which page is a run of
//! which size class, which slots are taken) for speed; they differ in what they keep in NVM and
//! how often they flush it:
//!
//! * **NVWA** (seed 004 §4.2, Fig. 12): only a two-level log in NVM. Level 2 has one word per
//!   heap page saying what the page is (a run of a size class, or the head of a large object);
//!   level 1 is a sequentially filled array of chunk words (offset, size, valid bit), one per live
//!   small object. An allocation writes one level-1 word and, for a new run, one level-2 word:
//!   at most two lines flushed; a free clears one valid bit: one line. The DRAM metadata
//!   (including the chunk -> level-1 slot map, seed 004's red-black tree; a hash map here) is
//!   rebuilt from the log on open.
//! * **Naive**: a persistent jemalloc-style allocator (seed 004 §3.2.1, Fig. 6): per-run headers
//!   with the slot bitmap and free count, per-size-class statistics and a page map, all in NVM,
//!   each field flushed when it changes.
//!
//! Allocations are reserved in DRAM first and published to NVM by the transaction at commit
//! (after its commit mark is durable), so an interrupted transaction leaves nothing allocated.
//! Publishing is idempotent: recovery replays it for a committed transaction.

use std::collections::{BTreeSet, HashMap};

use crate::error::{PheapError, Result};
use crate::flush::{Cause, LINE};
use crate::pool::{AllocKind, OmitFlush, Pool, PAGE};

/// Size classes of small objects (bytes), jemalloc's spacing of four classes per doubling from
/// 32 B (Evans, "A Scalable Concurrent malloc(3) Implementation for FreeBSD", BSDCan 2006, as
/// seed 004 §3.2.1 describes page runs of uniformly sized objects).
pub const CLASSES: [u64; 12] = [32, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048];
const MAX_SLOTS: u64 = PAGE / 32;

/// Bytes of allocator metadata per heap page in NVM.
pub fn meta_per_page(kind: AllocKind) -> u64 {
    match kind {
        // One level-2 word plus room for a level-1 word per smallest slot.
        AllocKind::Nvwa => 8 + MAX_SLOTS * 8,
        // A run-header line plus a page-map word.
        AllocKind::Naive => LINE as u64 + 8,
    }
}

/// Fixed allocator metadata (the naive allocator's arena page of per-class statistics).
pub fn meta_fixed(_kind: AllocKind) -> u64 {
    PAGE
}

fn class_of(size: u64) -> Option<usize> {
    CLASSES.iter().position(|&c| c >= size)
}

#[derive(Clone, Copy, Default, PartialEq, Eq, Debug)]
enum PageKind {
    #[default]
    Free,
    Small,
    LargeHead,
    LargeTail,
}

#[derive(Clone, Copy, Default, Debug)]
struct PageInfo {
    kind: PageKind,
    class: u8,
    used: u16,
    npages: u32,
    bits: u128,
}

const L2_VALID: u64 = 1 << 63;
const L2_LARGE: u64 = 1 << 62;
const L1_VALID: u64 = 1 << 63;

pub struct Allocator {
    kind: AllocKind,
    heap_off: u64,
    heap_pages: u64,
    meta_off: u64,
    pages: Vec<PageInfo>,
    free_pages: BTreeSet<u32>,
    partial: Vec<Vec<u32>>,
    /// NVWA: chunk offset -> level-1 slot; free level-1 slots; next never-used slot.
    l1_slot: HashMap<u64, u64>,
    l1_free: Vec<u64>,
    l1_next: u64,
    /// Lines dirtied by the current publish batch (NVWA flushes each once).
    dirty: Vec<u64>,
}

impl Allocator {
    fn empty(pool: &Pool) -> Allocator {
        let h = &pool.hdr;
        let heap_pages = h.heap_len / PAGE;
        Allocator {
            kind: h.alloc,
            heap_off: h.heap_off,
            heap_pages,
            meta_off: h.meta_off,
            pages: vec![PageInfo::default(); heap_pages as usize],
            free_pages: (0..heap_pages as u32).collect(),
            partial: vec![Vec::new(); CLASSES.len()],
            l1_slot: HashMap::new(),
            l1_free: Vec::new(),
            l1_next: 0,
            dirty: Vec::new(),
        }
    }

    pub fn kind(&self) -> AllocKind {
        self.kind
    }

    // NVWA layout.
    fn l2_at(&self, page: u64) -> u64 {
        self.meta_off + page * 8
    }
    fn l1_base(&self) -> u64 {
        (self.meta_off + self.heap_pages * 8).div_ceil(LINE as u64) * LINE as u64
    }
    fn l1_cap(&self) -> u64 {
        self.heap_pages * MAX_SLOTS
    }
    // Naive layout.
    fn stats_at(&self, class: usize) -> u64 {
        self.meta_off + class as u64 * LINE as u64
    }
    fn run_hdr_at(&self, page: u64) -> u64 {
        self.meta_off + PAGE + page * LINE as u64
    }
    fn map_at(&self, page: u64) -> u64 {
        self.meta_off + PAGE + self.heap_pages * LINE as u64 + page * 8
    }

    /// Rebuild the DRAM metadata from NVM (a fresh pool has all-zero metadata: an empty heap).
    pub fn rebuild(pool: &mut Pool) -> Result<Allocator> {
        let mut a = Allocator::empty(pool);
        let path = pool.path().to_path_buf();
        let corrupt = |what: String| PheapError::Corrupt {
            path: path.clone(),
            what,
        };
        match a.kind {
            AllocKind::Nvwa => {
                for p in 0..a.heap_pages {
                    let w = pool.read_u64(a.l2_at(p));
                    if w & L2_VALID == 0 {
                        continue;
                    }
                    if w & L2_LARGE != 0 {
                        let n = (w & 0xffff_ffff) as u32;
                        a.claim_large(p as u32, n)
                            .map_err(|_| corrupt(format!("large object at page {p} overlaps")))?;
                    } else {
                        let class = ((w >> 48) & 0xff) as usize;
                        if class >= CLASSES.len() || a.pages[p as usize].kind != PageKind::Free {
                            return Err(corrupt(format!("bad level-2 word at page {p}")));
                        }
                        a.init_run(p as u32, class);
                    }
                }
                let base = a.l1_base();
                let cap = a.l1_cap();
                let mut last_used = 0;
                for i in 0..cap {
                    let w = pool.read_u64(base + i * 8);
                    if w == 0 {
                        continue;
                    }
                    last_used = i + 1;
                    if w & L1_VALID == 0 {
                        a.l1_free.push(i);
                        continue;
                    }
                    let off = a.heap_off + (w & 0xff_ffff_ffff) * 16;
                    let size = ((w >> 40) & 0x7f_ffff) * 16;
                    let class = class_of(size)
                        .filter(|&c| CLASSES[c] == size)
                        .ok_or_else(|| corrupt(format!("level-1 word {i}: bad size {size}")))?;
                    let page = ((off - a.heap_off) / PAGE) as u32;
                    if page as u64 >= a.heap_pages {
                        return Err(corrupt(format!("level-1 word {i}: offset out of heap")));
                    }
                    if a.pages[page as usize].kind == PageKind::Free {
                        // The run's level-2 word did not reach NVM before the crash (it is
                        // flushed in the same epoch): the chunk says what the run is.
                        a.init_run(page, class);
                    }
                    let pi = a.pages[page as usize];
                    if pi.kind != PageKind::Small || pi.class as usize != class {
                        return Err(corrupt(format!(
                            "level-1 word {i}: not in a run of its class"
                        )));
                    }
                    a.take_slot(off)
                        .map_err(|_| corrupt(format!("level-1 word {i}: slot taken twice")))?;
                    a.l1_slot.insert(off, i);
                }
                a.l1_next = last_used;
                a.l1_free.retain(|&i| i < last_used);
                a.l1_free.reverse();
            }
            AllocKind::Naive => {
                for p in 0..a.heap_pages {
                    let map = pool.read_u64(a.map_at(p));
                    if map & L2_VALID == 0 {
                        continue;
                    }
                    if map & L2_LARGE != 0 {
                        let n = (map & 0xffff_ffff) as u32;
                        a.claim_large(p as u32, n)
                            .map_err(|_| corrupt(format!("large object at page {p} overlaps")))?;
                        continue;
                    }
                    let class = ((map >> 48) & 0xff) as usize;
                    if class >= CLASSES.len() || a.pages[p as usize].kind != PageKind::Free {
                        return Err(corrupt(format!("bad page-map word at page {p}")));
                    }
                    a.init_run(p as u32, class);
                    let hdr = a.run_hdr_at(p);
                    let lo = pool.read_u64(hdr + 16) as u128;
                    let hi = pool.read_u64(hdr + 24) as u128;
                    let bits = lo | (hi << 64);
                    let slots = PAGE / CLASSES[class];
                    if slots < 128 && bits >> slots != 0 {
                        return Err(corrupt(format!("run bitmap at page {p} beyond its slots")));
                    }
                    let pi = &mut a.pages[p as usize];
                    pi.bits = bits;
                    pi.used = bits.count_ones() as u16;
                    // The free count in NVM may lag its bitmap after a crash; the bitmap rules.
                    let want = slots - pi.used as u64;
                    if pool.read_u64(hdr + 8) != want {
                        pool.write_u64(hdr + 8, want);
                        pool.flush(hdr + 8, 8, Cause::Allocator);
                    }
                    if pi.used as u64 == slots {
                        a.partial[class].retain(|&q| q != p as u32);
                    }
                }
                pool.fence(Cause::Allocator);
            }
        }
        Ok(a)
    }

    fn init_run(&mut self, page: u32, class: usize) {
        self.free_pages.remove(&page);
        self.pages[page as usize] = PageInfo {
            kind: PageKind::Small,
            class: class as u8,
            used: 0,
            npages: 1,
            bits: 0,
        };
        self.partial[class].push(page);
    }

    fn claim_large(&mut self, page: u32, n: u32) -> std::result::Result<(), ()> {
        if n == 0 || (page as u64 + n as u64) > self.heap_pages {
            return Err(());
        }
        for q in page..page + n {
            if self.pages[q as usize].kind != PageKind::Free {
                return Err(());
            }
        }
        for q in page..page + n {
            self.free_pages.remove(&q);
            self.pages[q as usize] = PageInfo {
                kind: if q == page {
                    PageKind::LargeHead
                } else {
                    PageKind::LargeTail
                },
                npages: n,
                ..Default::default()
            };
        }
        Ok(())
    }

    fn slot_of(&self, off: u64) -> Option<(u32, u32)> {
        if off < self.heap_off || off >= self.heap_off + self.heap_pages * PAGE {
            return None;
        }
        let rel = off - self.heap_off;
        let page = (rel / PAGE) as u32;
        let pi = self.pages[page as usize];
        if pi.kind != PageKind::Small {
            return None;
        }
        let size = CLASSES[pi.class as usize];
        let within = rel % PAGE;
        if !within.is_multiple_of(size) || within / size >= PAGE / size {
            return None;
        }
        Some((page, (within / size) as u32))
    }

    fn take_slot(&mut self, off: u64) -> std::result::Result<(), ()> {
        let (page, slot) = self.slot_of(off).ok_or(())?;
        let pi = &mut self.pages[page as usize];
        if pi.bits & (1 << slot) != 0 {
            return Err(());
        }
        pi.bits |= 1 << slot;
        pi.used += 1;
        Ok(())
    }

    /// Size of the allocated (or reserved) object starting at `off`.
    pub fn size_of(&self, off: u64) -> Option<u64> {
        if off < self.heap_off || off >= self.heap_off + self.heap_pages * PAGE {
            return None;
        }
        let page = ((off - self.heap_off) / PAGE) as usize;
        let pi = self.pages[page];
        match pi.kind {
            PageKind::Small => {
                let (_, slot) = self.slot_of(off)?;
                (pi.bits & (1 << slot) != 0).then_some(CLASSES[pi.class as usize])
            }
            PageKind::LargeHead if (off - self.heap_off).is_multiple_of(PAGE) => {
                Some(pi.npages as u64 * PAGE)
            }
            _ => None,
        }
    }

    /// Reserve room for `size` bytes in DRAM (nothing reaches NVM until `publish_alloc`).
    pub fn reserve(&mut self, size: u64) -> Result<u64> {
        let size = size.max(1);
        if let Some(class) = class_of(size) {
            loop {
                let page = match self.partial[class].last() {
                    Some(&p) => p,
                    None => {
                        let p = *self
                            .free_pages
                            .iter()
                            .next()
                            .ok_or(PheapError::OutOfMemory { size })?;
                        self.init_run(p, class);
                        p
                    }
                };
                let pi = &mut self.pages[page as usize];
                let slots = PAGE / CLASSES[class];
                if pi.kind != PageKind::Small
                    || pi.class as usize != class
                    || pi.used as u64 >= slots
                {
                    self.partial[class].pop();
                    continue;
                }
                let slot = (!pi.bits).trailing_zeros() as u64;
                pi.bits |= 1 << slot;
                pi.used += 1;
                if pi.used as u64 == slots {
                    self.partial[class].pop();
                }
                return Ok(self.heap_off + page as u64 * PAGE + slot * CLASSES[class]);
            }
        }
        let n = size.div_ceil(PAGE) as u32;
        let mut start = None;
        let mut run = 0u32;
        let mut prev = None;
        for &p in &self.free_pages {
            if prev.map(|q: u32| q + 1) == Some(p) {
                run += 1;
            } else {
                run = 1;
            }
            prev = Some(p);
            if run == n {
                start = Some(p + 1 - n);
                break;
            }
        }
        let start = start.ok_or(PheapError::OutOfMemory { size })?;
        self.claim_large(start, n)
            .expect("free pages found free are claimable");
        Ok(self.heap_off + start as u64 * PAGE)
    }

    /// Reserve the object at `off` of `size` bytes (recovery replaying a logged allocation).
    #[allow(clippy::result_unit_err)]
    pub fn reserve_at(&mut self, off: u64, size: u64) -> std::result::Result<(), ()> {
        if off < self.heap_off || off >= self.heap_off + self.heap_pages * PAGE {
            return Err(());
        }
        let page = ((off - self.heap_off) / PAGE) as u32;
        match class_of(size.max(1)) {
            Some(class) => {
                if self.pages[page as usize].kind == PageKind::Free {
                    self.init_run(page, class);
                }
                let pi = self.pages[page as usize];
                if pi.kind != PageKind::Small || pi.class as usize != class {
                    return Err(());
                }
                self.take_slot(off)?;
                if self.pages[page as usize].used as u64 == PAGE / CLASSES[class] {
                    self.partial[class].retain(|&q| q != page);
                }
                Ok(())
            }
            None => {
                if !(off - self.heap_off).is_multiple_of(PAGE) {
                    return Err(());
                }
                self.claim_large(page, size.div_ceil(PAGE) as u32)
            }
        }
    }

    fn mark(&mut self, pool: &mut Pool, off: u64, v: u64) {
        pool.write_u64(off, v);
        match self.kind {
            AllocKind::Nvwa => self.dirty.push(off / LINE as u64),
            // The naive allocator flushes every change as it makes it.
            AllocKind::Naive => {
                if !pool.omitted(OmitFlush::AllocRecords) {
                    pool.flush(off, 8, Cause::Allocator);
                }
            }
        }
    }

    /// Make a reserved object allocated in NVM. Idempotent (recovery replays it).
    pub fn publish_alloc(&mut self, pool: &mut Pool, off: u64) -> Result<()> {
        let size = self.size_of(off).ok_or(PheapError::BadObject { off })?;
        let page = (off - self.heap_off) / PAGE;
        let pi = self.pages[page as usize];
        let large = pi.kind == PageKind::LargeHead;
        let page_word = if large {
            L2_VALID | L2_LARGE | pi.npages as u64
        } else {
            L2_VALID | (pi.class as u64) << 48
        };
        match self.kind {
            AllocKind::Nvwa => {
                if pool.read_u64(self.l2_at(page)) != page_word {
                    self.mark(pool, self.l2_at(page), page_word);
                }
                if large || self.l1_slot.contains_key(&off) {
                    return Ok(());
                }
                let slot = match self.l1_free.pop() {
                    Some(s) => s,
                    None => {
                        if self.l1_next >= self.l1_cap() {
                            return Err(PheapError::OutOfMemory { size });
                        }
                        self.l1_next += 1;
                        self.l1_next - 1
                    }
                };
                let w = L1_VALID | (size / 16) << 40 | ((off - self.heap_off) / 16);
                self.mark(pool, self.l1_base() + slot * 8, w);
                self.l1_slot.insert(off, slot);
            }
            AllocKind::Naive => {
                let stats = self.stats_at(if large { 0 } else { pi.class as usize });
                if large && pool.read_u64(self.map_at(page)) == page_word {
                    return Ok(());
                }
                if pool.read_u64(self.map_at(page)) != page_word {
                    // A new run: its page-map word and run header (jemalloc's chunk map and
                    // arena_run_t).
                    self.mark(pool, self.map_at(page), page_word);
                    if !large {
                        let hdr = self.run_hdr_at(page);
                        self.mark(pool, hdr, page_word);
                        self.mark(pool, hdr + 8, PAGE / size);
                    }
                }
                if !large {
                    let hdr = self.run_hdr_at(page);
                    let slot = ((off - self.heap_off) % PAGE) / size;
                    let word = hdr + 16 + (slot / 64) * 8;
                    let bits = pool.read_u64(word);
                    if bits & (1 << (slot % 64)) != 0 {
                        return Ok(());
                    }
                    self.mark(pool, word, bits | 1 << (slot % 64));
                    let nfree = pool.read_u64(hdr + 8);
                    self.mark(pool, hdr + 8, nfree.saturating_sub(1));
                }
                // Bin statistics (jemalloc's nmalloc and curregs, kept with the metadata).
                let n = pool.read_u64(stats);
                self.mark(pool, stats, n + 1);
            }
        }
        Ok(())
    }

    /// Free an allocated object in NVM and DRAM. Idempotent: freeing a free object is a no-op.
    pub fn publish_free(&mut self, pool: &mut Pool, off: u64) {
        let Some(size) = self.size_of(off) else {
            return;
        };
        let page = (off - self.heap_off) / PAGE;
        let pi = self.pages[page as usize];
        if pi.kind == PageKind::LargeHead {
            let at = match self.kind {
                AllocKind::Nvwa => self.l2_at(page),
                AllocKind::Naive => self.map_at(page),
            };
            self.mark(pool, at, 0);
            if self.kind == AllocKind::Naive {
                let n = pool.read_u64(self.stats_at(0));
                self.mark(pool, self.stats_at(0), n.wrapping_sub(1));
            }
            for q in page..page + pi.npages as u64 {
                self.pages[q as usize] = PageInfo::default();
                self.free_pages.insert(q as u32);
            }
            return;
        }
        match self.kind {
            AllocKind::Nvwa => {
                if let Some(slot) = self.l1_slot.remove(&off) {
                    let at = self.l1_base() + slot * 8;
                    let w = pool.read_u64(at);
                    self.mark(pool, at, w & !L1_VALID);
                    self.l1_free.push(slot);
                }
            }
            AllocKind::Naive => {
                let hdr = self.run_hdr_at(page);
                let slot = ((off - self.heap_off) % PAGE) / size;
                let word = hdr + 16 + (slot / 64) * 8;
                let bits = pool.read_u64(word);
                if bits & (1 << (slot % 64)) != 0 {
                    self.mark(pool, word, bits & !(1 << (slot % 64)));
                    let nfree = pool.read_u64(hdr + 8);
                    self.mark(pool, hdr + 8, nfree + 1);
                    let stats = self.stats_at(pi.class as usize);
                    let n = pool.read_u64(stats + 8);
                    self.mark(pool, stats + 8, n + 1);
                }
            }
        }
        let (page, slot) = self.slot_of(off).expect("size_of found a small slot");
        let pi = &mut self.pages[page as usize];
        let was_full = pi.used as u64 == PAGE / CLASSES[pi.class as usize];
        pi.bits &= !(1 << slot);
        pi.used -= 1;
        if was_full {
            self.partial[pi.class as usize].push(page);
        }
    }

    /// Flush what this publish batch dirtied (NVWA: each line once) and order it.
    pub fn finish_publish(&mut self, pool: &mut Pool) {
        if self.kind == AllocKind::Nvwa {
            self.dirty.sort_unstable();
            self.dirty.dedup();
            if !pool.omitted(OmitFlush::AllocRecords) {
                for &line in &self.dirty {
                    pool.flush_line(line, Cause::Allocator);
                }
            }
            self.dirty.clear();
        }
        pool.fence(Cause::Allocator);
    }

    /// Every allocated object as (offset, size).
    pub fn objects(&self) -> Vec<(u64, u64)> {
        let mut v = Vec::new();
        for (p, pi) in self.pages.iter().enumerate() {
            let base = self.heap_off + p as u64 * PAGE;
            match pi.kind {
                PageKind::Small => {
                    let size = CLASSES[pi.class as usize];
                    for s in 0..PAGE / size {
                        if pi.bits & (1 << s) != 0 {
                            v.push((base + s * size, size));
                        }
                    }
                }
                PageKind::LargeHead => v.push((base, pi.npages as u64 * PAGE)),
                _ => {}
            }
        }
        v
    }
}
