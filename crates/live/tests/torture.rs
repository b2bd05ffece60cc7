//! Integrity under concurrency: several threads read and write random pages of a region four
//! times the budget; every page's bytes are a function of (page, version), checked on each read.

use std::sync::Mutex;

use nvmswap_core::workload::content::fill_page;
use nvmswap_live::{Pager, PagerConfig, PAGE};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

fn expected(page: u64, version: u64, out: &mut [u8; PAGE]) {
    // A quarter of versions are same-filled so that path is exercised too.
    let same = if version % 4 == 3 { 1.0 } else { 0.0 };
    fill_page(out, 7, page << 32 | version, 0.5, same);
    if version == 0 {
        out.fill(0); // demand-zero before the first write
    }
}

fn torture(cfg: PagerConfig, pages: usize, threads: usize, ops: usize) -> nvmswap_live::PagerStats {
    let pager = Pager::new(cfg).expect("pager");
    let region = pager.region((pages * PAGE) as u64).expect("region");
    let base = region.as_ptr() as usize;
    let versions: Vec<Mutex<u64>> = (0..pages).map(|_| Mutex::new(0)).collect();
    std::thread::scope(|s| {
        for t in 0..threads {
            let versions = &versions;
            s.spawn(move || {
                let mut rng = ChaCha8Rng::seed_from_u64(t as u64);
                let mut want = [0u8; PAGE];
                let mut got = [0u8; PAGE];
                for _ in 0..ops {
                    let p = rng.random_range(0..pages);
                    let mut v = versions[p].lock().unwrap();
                    let addr = base + p * PAGE;
                    // SAFETY: the page belongs to the live region and this thread holds its lock.
                    unsafe {
                        std::ptr::copy_nonoverlapping(addr as *const u8, got.as_mut_ptr(), PAGE)
                    };
                    expected(p as u64, *v, &mut want);
                    assert!(got == want, "page {p} version {} mismatch", *v);
                    if rng.random_bool(0.5) {
                        *v += 1;
                        expected(p as u64, *v, &mut want);
                        // SAFETY: as above.
                        unsafe {
                            std::ptr::copy_nonoverlapping(want.as_ptr(), addr as *mut u8, PAGE)
                        };
                    }
                }
            });
        }
    });
    drop(region);
    let stats = pager.stats();
    assert_eq!(
        stats.resident_pages, 0,
        "dropping the region releases its pages"
    );
    assert_eq!(stats.nvm_in_use, 0, "dropping the region frees its slots");
    stats
}

#[test]
fn torture_through_pool_and_nvm() {
    let cfg = PagerConfig {
        budget_bytes: 128 * PAGE as u64,
        pool_share: 0.1,
        nvm_bytes: 2048 * PAGE as u64,
        nvm_backend: Some("emulated:pcm".into()),
        ..PagerConfig::default()
    };
    let s = torture(cfg, 1024, 4, 5_000);
    eprintln!("{s:?}");
    assert!(s.faults > 1000, "{}", s.faults);
    assert!(
        s.service_ns.keys().count() >= 3,
        "pool, nvm and zero faults all happened"
    );
    assert!(s.pool_writebacks > 0 && s.evictions > 0);
}

#[test]
fn torture_nvm_only_on_file() {
    let dir = std::env::temp_dir().join(format!("nvmswap-live-test-{}", std::process::id()));
    std::fs::write(&dir, b"").unwrap();
    let cfg = PagerConfig {
        budget_bytes: 64 * PAGE as u64,
        pool_share: 0.0,
        nvm_bytes: 1024 * PAGE as u64,
        nvm_backend: Some(format!("file:{}", dir.display())),
        ..PagerConfig::default()
    };
    let s = torture(cfg, 512, 3, 3_000);
    std::fs::remove_file(&dir).unwrap();
    assert!(
        s.nvm_writes_saved > 0,
        "clean pages evicted without a rewrite"
    );
    assert!(s.read_ahead_pages > 0);
}
