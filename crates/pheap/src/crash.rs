//! The crash checker: run a PHT workload on a recorded pool, rebuild the images of NVM a crash
//! could leave, recover each, and check the invariants.
//!
//! Persistence model (x86 with a volatile cache): a store dirties its line; a flush captures the
//! line's contents, which are durable at the next fence at the latest; any dirty or flushed
//! line may also reach NVM earlier (eviction), in any order. At every fence (just before it
//! orders anything) and at the end, the images are the durable contents plus every subset of the
//! lines not yet known durable, when there are at most `exhaustive_lines` of them; otherwise the
//! empty and full subsets, each single line, each all-but-one, and `samples` random subsets.
//!
//! Invariants after recovery: the table equals the state after the operations that returned
//! before the crash, or after one more (the operation in flight may land either way); every
//! object the allocator holds is reached by the table and every object the table reaches is
//! allocated (nothing leaked, nothing dangling); the table's count matches its entries.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::hash::{Hash, Hasher};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

use crate::error::Result;
use crate::flush::LINE;
use crate::heap::Heap;
use crate::pht::{digest, Key, Pht, Val};
use crate::pool::{AllocKind, Event, LogKind, OmitFlush, Pool, PoolOptions};

pub const LAYOUT: &str = "pht";

#[derive(Debug, Clone)]
pub struct CheckConfig {
    pub alloc: AllocKind,
    pub logging: LogKind,
    /// Operations (puts of new keys, updates, deletes).
    pub ops: u64,
    pub pool_size: u64,
    pub nbuckets: u64,
    pub exhaustive_lines: usize,
    pub samples: usize,
    pub seed: u64,
    pub omit: Option<OmitFlush>,
    /// Every this many images, also run on after recovery and crash again (0: never).
    pub run_on_every: u64,
}

impl Default for CheckConfig {
    fn default() -> Self {
        CheckConfig {
            alloc: AllocKind::Nvwa,
            logging: LogKind::Hybrid,
            ops: 60,
            pool_size: 512 * 1024,
            nbuckets: 128,
            exhaustive_lines: 6,
            samples: 24,
            seed: 1,
            omit: None,
            run_on_every: 0,
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct CheckReport {
    pub allocator: &'static str,
    pub logging: &'static str,
    pub ops: u64,
    pub crash_points: u64,
    pub images_checked: u64,
    pub failures: u64,
    /// Images of a second crash while running on after a recovered one (in `images_checked`
    /// too).
    pub second_crash_images: u64,
    /// The first few failures, for a human.
    pub examples: Vec<String>,
}

fn key_of(i: u64) -> Key {
    let mut k = [0u8; 64];
    let mut x = i.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0x5151;
    for c in k.chunks_exact_mut(8) {
        x ^= x >> 29;
        x = x.wrapping_mul(0xbf58_476d_1ce4_e5b9);
        c.copy_from_slice(&x.to_le_bytes());
    }
    k
}

fn val_of(i: u64, version: u64) -> Val {
    let mut v = [0u8; 64];
    for (j, c) in v.chunks_exact_mut(8).enumerate() {
        c.copy_from_slice(&(i << 20 ^ version << 8 ^ j as u64).to_le_bytes());
    }
    v
}

/// Run the workload and check every crash image.
pub fn check(cfg: &CheckConfig) -> Result<CheckReport> {
    let opts = PoolOptions {
        record: true,
        omit: cfg.omit,
        ..Default::default()
    };
    let pool = Pool::create_in_memory(cfg.pool_size, LAYOUT, cfg.alloc, cfg.logging, opts)?;
    let mut heap = Heap::create(pool)?;
    let pht = Pht::create(&mut heap, cfg.nbuckets)?;
    heap.pool.take_trace();
    let base = heap.pool.image();

    // The workload, and the table's digest after each prefix of operations.
    let mut rng = ChaCha8Rng::seed_from_u64(cfg.seed);
    let mut model: BTreeMap<Key, Val> = BTreeMap::new();
    let mut digests = vec![digest(&model)];
    let mut keys: Vec<u64> = Vec::new();
    let mut next_key = 0;
    for op in 0..cfg.ops {
        let roll = rng.random_range(0..10);
        if roll < 6 || keys.len() < 3 {
            let i = next_key;
            next_key += 1;
            pht.put(&mut heap, &key_of(i), &val_of(i, 0))?;
            model.insert(key_of(i), val_of(i, 0));
            keys.push(i);
        } else if roll < 8 {
            let i = keys[rng.random_range(0..keys.len())];
            let v = val_of(i, op + 1);
            pht.put(&mut heap, &key_of(i), &v)?;
            model.insert(key_of(i), v);
        } else {
            let at = rng.random_range(0..keys.len());
            let i = keys.swap_remove(at);
            pht.delete(&mut heap, &key_of(i))?;
            model.remove(&key_of(i));
        }
        heap.pool.mark_done(op);
        digests.push(digest(&model));
    }
    let trace = heap.pool.take_trace();

    let mut report = CheckReport {
        allocator: cfg.alloc.name(),
        logging: cfg.logging.name(),
        ops: cfg.ops,
        crash_points: 0,
        images_checked: 0,
        failures: 0,
        second_crash_images: 0,
        examples: Vec::new(),
    };
    let mut durable = base.clone();
    let mut current = base;
    let mut dirty: BTreeSet<u64> = BTreeSet::new();
    let mut flushed: HashMap<u64, Vec<u8>> = HashMap::new();
    let mut done = 0u64;
    let mut version = 0u64;
    let mut seen: HashSet<u64> = HashSet::new();
    for (i, ev) in trace.iter().enumerate() {
        let at_end = i + 1 == trace.len();
        match ev {
            Event::Store { off, data } => {
                let (o, n) = (*off as usize, data.len());
                current[o..o + n].copy_from_slice(data);
                let first = *off / LINE as u64;
                let last = (*off + n as u64 - 1) / LINE as u64;
                dirty.extend(first..=last);
            }
            Event::Flush { line } => {
                let a = *line as usize * LINE;
                flushed.insert(*line, current[a..a + LINE].to_vec());
            }
            Event::Done(_) => done += 1,
            Event::Fence => {}
        }
        if matches!(ev, Event::Fence) || at_end {
            report.crash_points += 1;
            crash_images(
                cfg,
                &mut rng,
                &durable,
                &current,
                &dirty,
                &flushed,
                &mut seen,
                (version, done),
                |image| {
                    report.images_checked += 1;
                    let run_on = cfg.run_on_every > 0
                        && report.images_checked.is_multiple_of(cfg.run_on_every);
                    let checked = check_image(image, &digests, done, run_on);
                    if let Ok(n) = checked {
                        report.second_crash_images += n;
                        report.images_checked += n;
                    }
                    if let Err(why) = checked {
                        report.failures += 1;
                        if report.examples.len() < 5 {
                            report
                                .examples
                                .push(format!("event {i} after {done} operations: {why}"));
                        }
                    }
                },
            );
        }
        if matches!(ev, Event::Fence) {
            version += 1;
            for (line, bytes) in flushed.drain() {
                let a = line as usize * LINE;
                durable[a..a + LINE].copy_from_slice(&bytes);
            }
            dirty.retain(|&l| {
                let a = l as usize * LINE;
                durable[a..a + LINE] != current[a..a + LINE]
            });
        }
    }
    Ok(report)
}

#[allow(clippy::too_many_arguments)]
fn crash_images(
    cfg: &CheckConfig,
    rng: &mut ChaCha8Rng,
    durable: &[u8],
    current: &[u8],
    dirty: &BTreeSet<u64>,
    flushed: &HashMap<u64, Vec<u8>>,
    seen: &mut HashSet<u64>,
    (version, done): (u64, u64),
    mut check: impl FnMut(Vec<u8>),
) {
    // Lines that may or may not have reached NVM, with the contents they would have.
    let mut cands: Vec<(u64, &[u8])> = Vec::new();
    for &l in dirty {
        let a = l as usize * LINE;
        if durable[a..a + LINE] != current[a..a + LINE] {
            cands.push((l, &current[a..a + LINE]));
        }
    }
    for (l, bytes) in flushed {
        if !dirty.contains(l) || bytes.as_slice() != &current[*l as usize * LINE..][..LINE] {
            cands.push((*l, bytes));
        }
    }
    cands.sort_by_key(|c| c.0);
    let n = cands.len();
    let mut subsets: Vec<Vec<bool>> = Vec::new();
    if n <= cfg.exhaustive_lines {
        for mask in 0u64..1 << n {
            subsets.push((0..n).map(|j| mask >> j & 1 == 1).collect());
        }
    } else {
        subsets.push(vec![false; n]);
        subsets.push(vec![true; n]);
        for j in 0..n {
            let mut one = vec![false; n];
            one[j] = true;
            subsets.push(one);
            let mut all_but = vec![true; n];
            all_but[j] = false;
            subsets.push(all_but);
        }
        for _ in 0..cfg.samples {
            subsets.push((0..n).map(|_| rng.random_bool(0.5)).collect());
        }
    }
    for s in subsets {
        // An image is the durable state (by version) plus the chosen lines; skip repeats.
        let mut h = std::collections::hash_map::DefaultHasher::new();
        (version, done).hash(&mut h);
        for (j, c) in cands.iter().enumerate() {
            if s[j] {
                (c.0, c.1).hash(&mut h);
            }
        }
        if !seen.insert(h.finish()) {
            continue;
        }
        let mut image = durable.to_vec();
        for (j, c) in cands.iter().enumerate() {
            if s[j] {
                let a = c.0 as usize * LINE;
                image[a..a + LINE].copy_from_slice(c.1);
            }
        }
        check(image);
    }
}

fn check_image(
    image: Vec<u8>,
    digests: &[u64],
    done: u64,
    run_on: bool,
) -> std::result::Result<u64, String> {
    let mut allowed = vec![digests[done as usize]];
    allowed.extend(digests.get(done as usize + 1));
    let opts = PoolOptions {
        record: run_on,
        ..Default::default()
    };
    let (mut heap, pht, walk) = recover_and_check(image, opts, &allowed)?;
    if !run_on {
        return Ok(0);
    }
    // Run on after the recovered crash: one delete and one put of a new key, then crash again
    // at each of their fences (with everything stored so far in NVM, and with only what was
    // flushed and fenced), and check that recovery lands on one of the three states.
    heap.pool.take_trace();
    let base = heap.pool.image();
    let mut m = walk.map.clone();
    let mut states = vec![digest(&m)];
    // The delete first: it writes fewer log records than a put, so a put dropped by recovery
    // would leave stale records past its end.
    if let Some(first) = walk.map.keys().next().copied() {
        pht.delete(&mut heap, &first).map_err(|e| e.to_string())?;
        m.remove(&first);
        states.push(digest(&m));
    }
    let k = key_of(u64::MAX - done);
    let v = val_of(done, 7);
    pht.put(&mut heap, &k, &v).map_err(|e| e.to_string())?;
    m.insert(k, v);
    states.push(digest(&m));
    let trace = heap.pool.take_trace();
    let mut current = base.clone();
    let mut durable = base;
    let mut flushed: HashMap<u64, Vec<u8>> = HashMap::new();
    let mut second = 0;
    for ev in &trace {
        match ev {
            Event::Store { off, data } => {
                current[*off as usize..*off as usize + data.len()].copy_from_slice(data)
            }
            Event::Flush { line } => {
                let a = *line as usize * LINE;
                flushed.insert(*line, current[a..a + LINE].to_vec());
            }
            Event::Fence => {
                for img in [current.clone(), durable.clone()] {
                    second += 1;
                    recover_and_check(img, PoolOptions::default(), &states)
                        .map_err(|e| format!("after a recovered crash and a second one: {e}"))?;
                }
                for (line, bytes) in flushed.drain() {
                    let a = line as usize * LINE;
                    durable[a..a + LINE].copy_from_slice(&bytes);
                }
            }
            Event::Done(_) => {}
        }
    }
    Ok(second)
}

/// Open an image (recovery runs) and check the invariants; the table must be one of `allowed`.
fn recover_and_check(
    image: Vec<u8>,
    opts: PoolOptions,
    allowed: &[u64],
) -> std::result::Result<(Heap, Pht, crate::pht::Walk), String> {
    let pool = Pool::from_image(image, LAYOUT, opts).map_err(|e| e.to_string())?;
    let heap = Heap::open(pool).map_err(|e| format!("recovery failed: {e}"))?;
    let pht = Pht::open(&heap).map_err(|e| e.to_string())?;
    let walk = pht.walk(&heap)?;
    let d = digest(&walk.map);
    if !allowed.contains(&d) {
        return Err(format!(
            "table ({} keys) is none of the {} states allowed at this point",
            walk.map.len(),
            allowed.len()
        ));
    }
    let held: HashSet<u64> = heap.alloc.objects().into_iter().map(|o| o.0).collect();
    if let Some(leak) = held.difference(&walk.reachable).next() {
        return Err(format!(
            "object at {leak:#x} allocated but unreachable (leak)"
        ));
    }
    if let Some(d) = walk.reachable.difference(&held).next() {
        return Err(format!("object at {d:#x} reachable but not allocated"));
    }
    Ok((heap, pht, walk))
}
