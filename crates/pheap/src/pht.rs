//! The persistent hash table (PHT) of seed 004 Fig. 5 and §4.2: chained buckets, entries of
//! three words (key pointer, value pointer, next), keys and values of 64 bytes in their own
//! objects. A put of a new key allocates key, value and entry, fills key and value (new objects,
//! no log), and makes five word updates (entry's three words, the bucket head, the count), the
//! five word records of seed 004 §4.3.
//!
//! Buckets live in segments of 64 (512-byte objects) under a directory, so no logged object is
//! larger than a segment; segments are allocated on first use.

use std::collections::{BTreeMap, HashSet};

use crate::error::{PheapError, Result};
use crate::heap::Heap;
use crate::pptr::PPtr;

pub const KEY_LEN: usize = 64;
pub const VAL_LEN: usize = 64;
pub const SEG_BUCKETS: u64 = 64;
const ENTRY_SIZE: u64 = 24;
/// Root words: directory, bucket count, element count, a tag saying a table is there.
const R_DIR: u64 = 0;
const R_NBUCKETS: u64 = 8;
const R_COUNT: u64 = 16;
const R_TAG: u64 = 24;
const TAG: u64 = 0x5048_545f_7631; // "PHT_v1"

pub struct Entry;
pub struct Segment;
pub struct Bytes;

pub type Key = [u8; KEY_LEN];
pub type Val = [u8; VAL_LEN];

/// FNV-1a (Fowler, Noll, Vo), 64-bit.
pub fn hash(key: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in key {
        h ^= b as u64;
        h = h.wrapping_mul(0x100_0000_01b3);
    }
    h
}

pub struct Pht {
    nbuckets: u64,
    dir: u64,
}

impl Pht {
    /// Make an empty table of `nbuckets` (a power of two, at least 64) in the heap's root.
    pub fn create(heap: &mut Heap, nbuckets: u64) -> Result<Pht> {
        let nbuckets = nbuckets.max(SEG_BUCKETS).next_power_of_two();
        let root = heap.root();
        heap.begin();
        let nsegs = nbuckets / SEG_BUCKETS;
        let dir = heap.alloc(nsegs * 8)?;
        heap.init(dir, 0, &vec![0u8; (nsegs * 8) as usize])?;
        heap.write(root, R_DIR, &[dir, nbuckets, 0, TAG])?;
        heap.commit()?;
        Ok(Pht { nbuckets, dir })
    }

    /// The table in an opened (recovered) heap.
    pub fn open(heap: &Heap) -> Result<Pht> {
        let root = heap.root();
        if heap.read_u64(root + R_TAG) != TAG {
            return Err(PheapError::Corrupt {
                path: heap.pool.path().to_path_buf(),
                what: "the root holds no hash table".into(),
            });
        }
        Ok(Pht {
            nbuckets: heap.read_u64(root + R_NBUCKETS),
            dir: heap.read_u64(root + R_DIR),
        })
    }

    pub fn len(&self, heap: &Heap) -> u64 {
        heap.read_u64(heap.root() + R_COUNT)
    }

    pub fn is_empty(&self, heap: &Heap) -> bool {
        self.len(heap) == 0
    }

    fn seg_slot(&self, key: &[u8]) -> (u64, u64) {
        let b = hash(key) & (self.nbuckets - 1);
        (b / SEG_BUCKETS, (b % SEG_BUCKETS) * 8)
    }

    fn key_matches(heap: &Heap, e: PPtr<Entry>, key: &[u8]) -> bool {
        let k = heap.read_u64(e.off());
        heap.read(k, KEY_LEN) == key
    }

    /// Find `key`: (segment, byte of the link pointing at the entry, the entry).
    fn find(&self, heap: &Heap, key: &[u8]) -> Option<(u64, u64, PPtr<Entry>)> {
        let (seg_i, at) = self.seg_slot(key);
        let seg = heap.read_u64(self.dir + seg_i * 8);
        if seg == 0 {
            return None;
        }
        let (mut obj, mut link) = (seg, at);
        let mut e = PPtr::<Entry>::from_off(heap.read_u64(seg + at));
        while !e.is_null() {
            if Self::key_matches(heap, e, key) {
                return Some((obj, link, e));
            }
            obj = e.off();
            link = 16;
            e = PPtr::from_off(heap.read_u64(e.off() + 16));
        }
        None
    }

    pub fn get(&self, heap: &Heap, key: &Key) -> Option<Val> {
        let (_, _, e) = self.find(heap, key)?;
        let v = heap.read_u64(e.off() + 8);
        Some(heap.read(v, VAL_LEN).try_into().expect("value is 64 bytes"))
    }

    /// Insert or update, in one transaction.
    pub fn put(&self, heap: &mut Heap, key: &Key, val: &Val) -> Result<()> {
        heap.begin();
        if let Some((_, _, e)) = self.find(heap, key) {
            let v = heap.read_u64(e.off() + 8);
            let words: Vec<u64> = val
                .chunks_exact(8)
                .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
                .collect();
            heap.write(v, 0, &words)?;
            return heap.commit();
        }
        let (seg_i, at) = self.seg_slot(key);
        let mut seg = heap.read_u64(self.dir + seg_i * 8);
        if seg == 0 {
            seg = heap.alloc(SEG_BUCKETS * 8)?;
            heap.init(seg, 0, &[0u8; (SEG_BUCKETS * 8) as usize])?;
            heap.write(self.dir, seg_i * 8, &[seg])?;
        }
        let k = heap.alloc(KEY_LEN as u64)?;
        heap.init(k, 0, key)?;
        let v = heap.alloc(VAL_LEN as u64)?;
        heap.init(v, 0, val)?;
        let e = heap.alloc(ENTRY_SIZE)?;
        let head = heap.read_u64(seg + at);
        heap.write(e, 0, &[k, v, head])?;
        heap.write(seg, at, &[e])?;
        let root = heap.root();
        let n = heap.read_u64(root + R_COUNT);
        heap.write(root, R_COUNT, &[n + 1])?;
        heap.commit()
    }

    /// Remove `key`; false if it was not there.
    pub fn delete(&self, heap: &mut Heap, key: &Key) -> Result<bool> {
        let Some((obj, link, e)) = self.find(heap, key) else {
            return Ok(false);
        };
        heap.begin();
        let next = heap.read_u64(e.off() + 16);
        heap.write(obj, link, &[next])?;
        let root = heap.root();
        let n = heap.read_u64(root + R_COUNT);
        heap.write(root, R_COUNT, &[n - 1])?;
        let (k, v) = (heap.read_u64(e.off()), heap.read_u64(e.off() + 8));
        heap.free(k)?;
        heap.free(v)?;
        heap.free(e.off())?;
        heap.commit()?;
        Ok(true)
    }

    /// Every key and value, and every object the table reaches (directory, segments, entries,
    /// keys, values); errors on a cycle, a dangling pointer or a count that does not match.
    pub fn walk(&self, heap: &Heap) -> std::result::Result<Walk, String> {
        let mut w = Walk::default();
        let reach = |off: u64, what: &str, w: &mut Walk| -> std::result::Result<(), String> {
            if heap.alloc.size_of(off).is_none() {
                return Err(format!("{what} at {off:#x} is not an allocated object"));
            }
            if !w.reachable.insert(off) {
                return Err(format!("{what} at {off:#x} reached twice"));
            }
            Ok(())
        };
        reach(self.dir, "directory", &mut w)?;
        for s in 0..self.nbuckets / SEG_BUCKETS {
            let seg = heap.read_u64(self.dir + s * 8);
            if seg == 0 {
                continue;
            }
            reach(seg, "segment", &mut w)?;
            for b in 0..SEG_BUCKETS {
                let mut e = heap.read_u64(seg + b * 8);
                while e != 0 {
                    reach(e, "entry", &mut w)?;
                    let (k, v) = (heap.read_u64(e), heap.read_u64(e + 8));
                    reach(k, "key", &mut w)?;
                    reach(v, "value", &mut w)?;
                    let key: Key = heap.read(k, KEY_LEN).try_into().unwrap();
                    let val: Val = heap.read(v, VAL_LEN).try_into().unwrap();
                    if self.seg_slot(&key) != (s, b * 8) {
                        return Err(format!("key in the wrong bucket ({s}, {b})"));
                    }
                    if w.map.insert(key, val).is_some() {
                        return Err("a key is in the table twice".into());
                    }
                    e = heap.read_u64(e + 16);
                }
            }
        }
        if w.map.len() as u64 != self.len(heap) {
            return Err(format!(
                "count {} but {} entries",
                self.len(heap),
                w.map.len()
            ));
        }
        Ok(w)
    }
}

/// What `walk` found.
#[derive(Default)]
pub struct Walk {
    pub map: BTreeMap<Key, Val>,
    pub reachable: HashSet<u64>,
}

/// A digest of a table's contents (the crash checker compares states by it).
pub fn digest(map: &BTreeMap<Key, Val>) -> u64 {
    let mut h = crc32fast::Hasher::new();
    let mut x: u64 = map.len() as u64;
    for (k, v) in map {
        h.update(k);
        h.update(v);
        x = x.rotate_left(7) ^ hash(k) ^ hash(v).wrapping_mul(3);
    }
    (h.finalize() as u64) << 32 ^ x
}
