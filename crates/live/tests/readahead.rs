//! Read-ahead: pages swapped out together come back together (seed 002) when the access pattern
//! says so, and cost nothing when it does not (the window follows the hits, as the kernel's).

use nvmswap_core::kinds::NvmBackend;
use nvmswap_live::{FaultPath, Pager, PagerConfig, Tier, PAGE};

fn scan(sequential: bool) -> nvmswap_live::PagerStats {
    let pager = Pager::new(PagerConfig {
        budget_bytes: 64 * PAGE as u64,
        pool_share: 0.0,
        nvm_backend: Some(NvmBackend::Emulated("pcm".into())),
        nvm_bytes: 1024 * PAGE as u64,
        fault_path: FaultPath::Sigbus,
        ..PagerConfig::default()
    })
    .unwrap();
    let pages = 512;
    let region = pager.region((pages * PAGE) as u64).unwrap();
    let p = region.as_ptr();
    for i in 0..pages {
        // SAFETY: page i lies in the live region; only this thread uses it.
        unsafe { p.add(i * PAGE + 8).write_volatile(i as u8 ^ 0xa5) };
    }
    // Sequential: every page in order. Random: a fixed stride that never visits a neighbour
    // right after its page.
    let order: Vec<usize> = if sequential {
        (0..pages).collect()
    } else {
        (0..pages).map(|k| (k * 97) % pages).collect()
    };
    for &i in &order {
        // SAFETY: as above.
        let got = unsafe { p.add(i * PAGE + 8).read_volatile() };
        assert_eq!(got, i as u8 ^ 0xa5, "page {i}");
    }
    let s = pager.stats();
    drop(region);
    s
}

#[test]
fn sequential_reads_hit_the_read_ahead_and_random_ones_read_none() {
    let seq = scan(true);
    let hits = seq.service_ns[&Tier::ReadAhead].count();
    assert!(
        hits > 100 && seq.read_ahead_pages >= hits,
        "sequential: {hits} hits of {} pages read ahead",
        seq.read_ahead_pages
    );
    let random = scan(false);
    assert!(
        random.read_ahead_pages < 16,
        "random: {} pages read ahead",
        random.read_ahead_pages
    );
}
