//! Integrity torture: several threads read and write random pages (and runs of neighbours) of a
//! region larger than the budget; every page's bytes are a function of (page, version)
//! (`content::fill_page`, a quarter of versions same-filled), checked on every read. Used by the test suite (short) and by
//! `nvmswap microbench --substrate live --verify` (long).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use nvmswap_core::workload::content::fill_page;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::{LiveError, Pager, PagerConfig, PagerStats, PAGE};

/// What a torture run found.
#[derive(Debug, Clone)]
pub struct TortureReport {
    pub operations: u64,
    pub mismatches: u64,
    pub stats: PagerStats,
    /// Resident pages and NVM slots in use after the region was dropped (both must be 0).
    pub left_after_drop: (u64, u32),
}

fn expected(seed: u64, page: u64, version: u64, out: &mut [u8; PAGE]) {
    if version == 0 {
        out.fill(0); // demand-zero before the first write
        return;
    }
    let same = if version % 4 == 3 { 1.0 } else { 0.0 };
    fill_page(out, seed, page << 32 | version, 0.5, same);
}

/// Run `threads` x `ops_per_thread` random operations (half writes) over `pages` pages.
pub fn run(
    cfg: PagerConfig,
    pages: usize,
    threads: usize,
    ops_per_thread: u64,
    seed: u64,
) -> Result<TortureReport, LiveError> {
    let pager = Pager::new(cfg)?;
    let region = pager.region((pages * PAGE) as u64)?;
    let base = region.as_ptr() as usize;
    let versions: Vec<Mutex<u64>> = (0..pages).map(|_| Mutex::new(0)).collect();
    let mismatches = AtomicU64::new(0);
    std::thread::scope(|s| {
        for t in 0..threads {
            let (versions, mismatches) = (&versions, &mismatches);
            s.spawn(move || {
                let mut rng = ChaCha8Rng::seed_from_u64(seed ^ t as u64);
                let mut want = [0u8; PAGE];
                let mut got = [0u8; PAGE];
                let mut p = 0;
                for _ in 0..ops_per_thread {
                    // Half the time the next page, so runs of neighbours come back and the
                    // read-ahead cache is exercised too; else anywhere.
                    p = if rng.random_bool(0.5) {
                        (p + 1) % pages
                    } else {
                        rng.random_range(0..pages)
                    };
                    let mut v = versions[p].lock().unwrap_or_else(|e| e.into_inner());
                    let addr = base + p * PAGE;
                    // SAFETY: the page lies in the live region and this thread holds its lock.
                    unsafe {
                        std::ptr::copy_nonoverlapping(addr as *const u8, got.as_mut_ptr(), PAGE)
                    };
                    expected(seed, p as u64, *v, &mut want);
                    if got != want {
                        mismatches.fetch_add(1, Ordering::Relaxed);
                    }
                    if rng.random_bool(0.5) {
                        *v += 1;
                        expected(seed, p as u64, *v, &mut want);
                        // SAFETY: as above.
                        unsafe {
                            std::ptr::copy_nonoverlapping(want.as_ptr(), addr as *mut u8, PAGE)
                        };
                    }
                }
            });
        }
    });
    let stats = pager.stats();
    drop(region);
    let after = pager.stats();
    Ok(TortureReport {
        operations: threads as u64 * ops_per_thread,
        mismatches: mismatches.into_inner(),
        stats,
        left_after_drop: (after.resident_pages, after.nvm_in_use),
    })
}
