//! The two tiers below DRAM: a compressed pool in DRAM (zswap/zram style) and an NVM tier whose
//! slots come from a `core` slot allocator (Heap-Wear by default, seed 001 §3.3).

use nvmswap_core::kinds::NvmBackend;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use memmap2::MmapMut;
use nvmswap_core::alloc::{self, AllocParams, HeapWear, Slot, SlotAllocator};
use nvmswap_core::device::{DeviceProfile, LatencyDist};
use nvmswap_persist::{create_age_file, open_age_file, AgeFile};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use crate::error::LiveError;
use crate::PAGE;

/// Which compressor the pool uses: core's vocabulary, of which the live pager implements lz4 and
/// zstd (`Codec::new` refuses the others with a clear error).
pub use nvmswap_core::kinds::Compressor;

/// The compressors the live pager implements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Lz4,
    Zstd,
}

/// If every 8-byte word of the page is the same, that word (zram/zswap store such pages without
/// data).
pub fn same_filled_word(page: &[u8]) -> Option<u64> {
    let first = u64::from_ne_bytes(page[..8].try_into().expect("8 bytes"));
    page.chunks_exact(8)
        .all(|w| u64::from_ne_bytes(w.try_into().expect("8 bytes")) == first)
        .then_some(first)
}

pub fn fill_same(page: &mut [u8], word: u64) {
    for w in page.chunks_exact_mut(8) {
        w.copy_from_slice(&word.to_ne_bytes());
    }
}

/// zstd level for the pool: the fastest (zswap's zstd also runs at a low level).
const ZSTD_LEVEL: i32 = 1;

/// A compressor with its contexts made in advance, so that decompressing allocates nothing
/// (the SIGBUS fault path decompresses). One per thread that compresses or decompresses.
pub struct Codec {
    kind: Kind,
    zstd_in: zstd::bulk::Compressor<'static>,
    zstd_out: zstd::bulk::Decompressor<'static>,
}

impl Codec {
    pub fn new(compressor: Compressor) -> Result<Codec, LiveError> {
        let kind = match compressor {
            Compressor::Lz4 => Kind::Lz4,
            Compressor::Zstd => Kind::Zstd,
            other => return Err(LiveError::Compressor(other.name().to_string())),
        };
        Ok(Codec {
            kind,
            zstd_in: zstd::bulk::Compressor::new(ZSTD_LEVEL)
                .map_err(LiveError::CompressorContext)?,
            zstd_out: zstd::bulk::Decompressor::new().map_err(LiveError::CompressorContext)?,
        })
    }

    pub fn compress(&mut self, page: &[u8]) -> Vec<u8> {
        match self.kind {
            Kind::Lz4 => lz4_flex::block::compress(page),
            Kind::Zstd => self
                .zstd_in
                .compress(page)
                .expect("zstd compresses a 4 KiB buffer"),
        }
    }

    /// Decompress one page into `out`; allocates nothing.
    pub fn decompress(&mut self, data: &[u8], out: &mut [u8]) {
        let n = match self.kind {
            Kind::Lz4 => lz4_flex::block::decompress_into(data, out).expect("pool data is lz4"),
            Kind::Zstd => self
                .zstd_out
                .decompress_to_buffer(data, out)
                .expect("pool data is zstd"),
        };
        assert_eq!(n, PAGE, "pool entries decompress to one page");
    }
}

/// The compressed pool's bytes: compressed pages keyed by page id. What enters and what is
/// written back is decided by `nvmswap_core::zswap::ZswapPool` (the pager's `store.rs` asks it
/// and carries the answer out here); without an NVM tier behind it the pool keeps every page,
/// as zram does.
///
/// `load` runs on the SIGBUS fault path, so it decompresses into the caller's buffer without
/// allocating. Removing an entry frees its buffer, so that is a separate step (`discard`), which
/// the pager leaves to its evictor thread.
pub struct Pool {
    codec: Codec,
    stored_bytes: u64,
    entries: BTreeMap<u32, Vec<u8>>,
    pub bytes_in: u64,
    pub bytes_compressed_in: u64,
}

impl Pool {
    pub fn new(compressor: Compressor) -> Result<Pool, LiveError> {
        Ok(Pool {
            codec: Codec::new(compressor)?,
            stored_bytes: 0,
            entries: BTreeMap::new(),
            bytes_in: 0,
            bytes_compressed_in: 0,
        })
    }

    pub fn stored_bytes(&self) -> u64 {
        self.stored_bytes
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The pool's own codec (for compressing under the pager lock).
    pub fn codec(&mut self) -> &mut Codec {
        &mut self.codec
    }

    /// Store an already compressed page (admitted by the policy).
    pub fn insert(&mut self, id: u32, data: Vec<u8>) {
        self.stored_bytes += data.len() as u64;
        self.bytes_in += PAGE as u64;
        self.bytes_compressed_in += data.len() as u64;
        if let Some(old) = self.entries.insert(id, data) {
            self.stored_bytes -= old.len() as u64;
        }
    }

    /// Decompress an entry into `out` (one page), leaving it in the pool; false if absent.
    /// An entry of exactly a page is a page stored as it is (it did not shrink; a compressed
    /// entry is always shorter, store.rs) and is copied. Allocates nothing.
    pub fn load(&mut self, id: u32, out: &mut [u8]) -> bool {
        let Some(data) = self.entries.get(&id) else {
            return false;
        };
        if data.len() == PAGE {
            out.copy_from_slice(data);
        } else {
            self.codec.decompress(data, out);
        }
        true
    }

    /// Remove an entry, freeing its buffer.
    pub fn discard(&mut self, id: u32) {
        if let Some(data) = self.entries.remove(&id) {
            self.stored_bytes -= data.len() as u64;
        }
    }
}

/// Where the NVM tier keeps its bytes.
pub enum NvmMedium {
    /// DRAM with the profile's latency injected per page access (seed 001 §4.1 emulated PCM with
    /// DRAM and added delay in the same way).
    Emulated {
        buf: Vec<u8>,
        read: LatencyDist,
        write: LatencyDist,
        rng: Box<ChaCha8Rng>,
    },
    /// A memory-mapped file; its contents outlive the process.
    File { map: MmapMut, path: PathBuf },
}

/// A medium of `slots` pages for the back-end `spec` (core's `NvmBackend`, parsed by its
/// registry).
pub fn open_medium(spec: &NvmBackend, slots: u32) -> Result<NvmMedium, LiveError> {
    let bytes = slots as u64 * PAGE as u64;
    match spec {
        NvmBackend::Emulated(profile) => {
            let p =
                DeviceProfile::resolve(profile).map_err(|e| LiveError::Device(e.to_string()))?;
            Ok(NvmMedium::Emulated {
                buf: vec![0u8; bytes as usize],
                read: p.read_4k,
                write: p.write_4k,
                rng: Box::new(ChaCha8Rng::seed_from_u64(0x6e766d)),
            })
        }
        NvmBackend::File(path) => {
            let path = PathBuf::from(path);
            let file = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .open(&path)
                .map_err(|source| LiveError::BackendFile {
                    path: path.clone(),
                    source,
                })?;
            let len = file
                .metadata()
                .map_err(|source| LiveError::BackendFile {
                    path: path.clone(),
                    source,
                })?
                .len();
            if len < bytes {
                file.set_len(bytes)
                    .map_err(|source| LiveError::BackendFile {
                        path: path.clone(),
                        source,
                    })?;
            }
            // SAFETY: the file is ours for the pager's lifetime; another process truncating it would
            // fault us (SIGBUS), which the docs warn about; nothing else maps it here.
            let map =
                unsafe { MmapMut::map_mut(&file) }.map_err(|source| LiveError::BackendFile {
                    path: path.clone(),
                    source,
                })?;
            Ok(NvmMedium::File { map, path })
        }
    }
}

fn spin(ns: u64) {
    let until = Instant::now() + Duration::from_nanos(ns);
    while Instant::now() < until {
        std::hint::spin_loop();
    }
}

/// The NVM tier: a slot allocator over a medium, with per-slot write counts (wear).
pub struct Nvm {
    medium: NvmMedium,
    alloc: Box<dyn SlotAllocator>,
    /// Heap-Wear's ages on the `file` back-end, kept next to it (`<file>.ages`).
    ages: Option<AgeKeeper>,
    pub writes_per_slot: Vec<u64>,
    pub bytes_in: u64,
    pub bytes_out: u64,
    pub migrations: u64,
}

/// Heap-Wear's per-slot ages in a file with seed 001 §3.3's crash-consistent shadow arrays
/// (`nvmswap_core::persist`): the back-end file outlives the process, and so must the record of
/// how worn each of its slots is, or a restarted pager would level wear from zero.
struct AgeKeeper {
    store: AgeFile,
    path: PathBuf,
    writes_since_sync: u64,
    /// Write-backs that failed (I/O); the ages in memory stay right, the file lags.
    sync_failures: u64,
}

/// Device writes between two write-backs of the ages (our assumption: a write-back writes
/// 4 bytes per slot and an fdatasync; once per 4096 page writes keeps it under 0.1 % of the
/// traffic for tiers up to a million slots, and a crash loses at most that many increments).
const AGE_SYNC_WRITES: u64 = 4096;

impl Nvm {
    pub fn new(backend: &NvmBackend, slots: u32, allocator: &str) -> Result<Nvm, LiveError> {
        let params = AllocParams::default();
        let mut alloc = alloc::by_name(allocator, slots, &params)?;
        let medium = open_medium(backend, alloc.physical_slots())?;
        let mut ages = None;
        if let (NvmMedium::File { path, .. }, Some(_)) = (&medium, alloc.ages()) {
            let age_path = PathBuf::from(format!("{}.ages", path.display()));
            let ages_err = |source| LiveError::Ages {
                path: age_path.clone(),
                source,
            };
            let store = if age_path.exists() {
                let (store, saved) = open_age_file(&age_path, slots as u64).map_err(ages_err)?;
                alloc = Box::new(HeapWear::with_ages(params.threshold, &saved)?);
                store
            } else {
                create_age_file(&age_path, slots as u64).map_err(ages_err)?
            };
            ages = Some(AgeKeeper {
                store,
                path: age_path,
                writes_since_sync: 0,
                sync_failures: 0,
            });
        }
        Ok(Nvm {
            writes_per_slot: vec![0; alloc.physical_slots() as usize],
            medium,
            alloc,
            ages,
            bytes_in: 0,
            bytes_out: 0,
            migrations: 0,
        })
    }

    /// Heap-Wear's per-slot ages (all writes the slots took, across restarts on the file
    /// back-end); None for allocators without ages.
    pub fn ages(&self) -> Option<&[u32]> {
        self.alloc.ages()
    }

    /// The age file, if ages are kept in one.
    pub fn age_file(&self) -> Option<&PathBuf> {
        self.ages.as_ref().map(|a| &a.path)
    }

    /// Write the ages back now (also done every AGE_SYNC_WRITES writes and on drop).
    pub fn sync_ages(&mut self) -> Result<(), LiveError> {
        let (Some(keeper), Some(ages)) = (self.ages.as_mut(), self.alloc.ages()) else {
            return Ok(());
        };
        keeper.writes_since_sync = 0;
        keeper.store.sync(ages).map_err(|source| {
            keeper.sync_failures += 1;
            LiveError::Ages {
                path: keeper.path.clone(),
                source,
            }
        })
    }

    fn count_write(&mut self) {
        if let Some(keeper) = self.ages.as_mut() {
            keeper.writes_since_sync += 1;
            if keeper.writes_since_sync >= AGE_SYNC_WRITES {
                // Counted in `sync_failures`; the tier works on with the ages in memory.
                let _ = self.sync_ages();
            }
        }
    }

    pub fn in_use(&self) -> u32 {
        self.alloc.in_use()
    }

    pub fn capacity(&self) -> u32 {
        self.alloc.capacity()
    }

    fn page_mut(&mut self, phys: u32) -> &mut [u8] {
        let at = phys as usize * PAGE;
        match &mut self.medium {
            NvmMedium::Emulated { buf, .. } => &mut buf[at..at + PAGE],
            NvmMedium::File { map, .. } => &mut map[at..at + PAGE],
        }
    }

    fn charge(&mut self, write: bool) {
        if let NvmMedium::Emulated {
            read,
            write: w,
            rng,
            ..
        } = &mut self.medium
        {
            let ns = if write {
                w.sample(rng)
            } else {
                read.sample(rng)
            };
            spin(ns);
        }
    }

    /// Write a page to a fresh slot; None when the tier is full.
    pub fn store(&mut self, page: &[u8]) -> Option<Slot> {
        let placement = self.alloc.allocate(0)?;
        for m in &placement.migrations {
            // Heap-Wear moved a page to level wear: one read and one device write.
            let from = m.from as usize * PAGE;
            let mut tmp = [0u8; PAGE];
            tmp.copy_from_slice(&self.page_mut(m.from)[..]);
            let _ = from;
            self.charge(false);
            self.page_mut(m.to).copy_from_slice(&tmp);
            self.charge(true);
            self.writes_per_slot[m.to as usize] += 1;
            self.migrations += 1;
            self.count_write();
        }
        self.page_mut(placement.phys).copy_from_slice(page);
        self.charge(true);
        self.writes_per_slot[placement.phys as usize] += 1;
        self.bytes_in += PAGE as u64;
        self.count_write();
        Some(placement.slot)
    }

    pub fn load(&mut self, slot: Slot, out: &mut [u8]) {
        let phys = self.alloc.physical(slot);
        out.copy_from_slice(self.page_mut(phys));
        self.charge(false);
        self.bytes_out += PAGE as u64;
    }

    pub fn free(&mut self, slot: Slot) {
        self.alloc.free(slot);
    }

    pub fn age_sync_failures(&self) -> u64 {
        self.ages.as_ref().map_or(0, |a| a.sync_failures)
    }

    pub fn backend_path(&self) -> Option<&PathBuf> {
        match &self.medium {
            NvmMedium::File { path, .. } => Some(path),
            NvmMedium::Emulated { .. } => None,
        }
    }
}

impl Drop for Nvm {
    fn drop(&mut self) {
        // Best effort: a failure here leaves the file at the last periodic write-back, which is
        // still a consistent (older) set of ages.
        let _ = self.sync_ages();
    }
}
