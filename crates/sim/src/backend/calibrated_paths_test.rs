//! Known answers for the calibrated swap-out and pool swap-in paths (`costs.swap_write_page_ns`,
//! `zswap_store_page_ns`, `zram_store_page_ns`, `pool_swap_in_software_ns`): with the
//! compressor's cost fixed, a store charges exactly the calibrated path (less the MADV_PAGEOUT
//! call's own share where the write path is split) and says so (`Spent::whole_path`), and
//! without calibrated figures the sourced defaults stay.

use nvmswap_core::config::{CostOverrides, SystemConfig};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::writeback_test::Rig;
use super::{BuildArgs, Spent, SwapIn};
use crate::costs::{Costs, BLOCK_SUBMIT_NS, POOL_SWAP_IN_SOFTWARE_NS};
use crate::observe::Actor;

const ME: Actor = Actor { cpu: 0, pid: 100 };
/// Compression and decompression fixed (p99 = mean: the sampler's constant).
const COMPRESS: f64 = 4_000.0;
const DECOMPRESS: f64 = 2_000.0;

fn fixed_codec() -> CostOverrides {
    CostOverrides {
        compress_mean_ns: Some(COMPRESS),
        compress_p99_ns: Some(COMPRESS),
        decompress_mean_ns: Some(DECOMPRESS),
        decompress_p99_ns: Some(DECOMPRESS),
        ..CostOverrides::default()
    }
}

/// The back-end `system` chooses (zswap for a zswap system, even when `edit` empties its pool,
/// where the registry would pick block), scaled to 1/1024, with `costs` and `edit` applied; one
/// page of 1,500 compressed bytes.
fn rig(system: &str, costs: CostOverrides, edit: impl FnOnce(&mut SystemConfig)) -> Rig {
    let mut cfg = SystemConfig::load(system, &[])
        .unwrap()
        .scaled(1.0 / 1024.0);
    cfg.costs = costs;
    edit(&mut cfg);
    let args = BuildArgs::of_seed(1);
    let backend = if system.ends_with("zswap") {
        super::zswap::Zswap::build(&cfg, &args).unwrap()
    } else {
        super::build(&cfg, &args).unwrap()
    };
    Rig::with(&cfg, backend, 1, 1500)
}

fn store(r: &mut Rig) -> Spent {
    r.call(|b, env| b.store(0, 0, ME, env)).unwrap()
}

/// A read fault served from the pool; its cost.
fn pool_hit(r: &mut Rig, t: u64) -> u64 {
    r.call(|b, env| {
        b.fault(0, false, t, ME, env);
        match b.swap_in(0, false, t, ME, env) {
            SwapIn::Done { cost, .. } => cost,
            other => panic!("the page should come from the pool, got {other:?}"),
        }
    })
}

#[test]
fn a_calibrated_zswap_store_charges_the_measured_path_and_nothing_else() {
    let costs = CostOverrides {
        zswap_store_page_ns: Some(15_000.0),
        ..fixed_codec()
    };
    let mut r = rig("optane-zswap", costs, |_| {});
    let s = store(&mut r);
    // 15,000 - 4,000 (compress mean) + 4,000 (this page's compression).
    assert_eq!((s.cpu, s.wait, s.whole_path), (15_000, 0, true));
    assert_eq!(r.backend.pool_bytes(), 1500);
}

#[test]
fn a_calibrated_zram_store_charges_the_measured_path_and_nothing_else() {
    let costs = CostOverrides {
        zram_store_page_ns: Some(12_500.0),
        ..fixed_codec()
    };
    let mut r = rig("baseline-zram", costs, |_| {});
    let s = store(&mut r);
    assert_eq!((s.cpu, s.whole_path), (12_500, true));
}

#[test]
fn the_path_keeps_the_content_s_variation_of_compression() {
    // Compression drawn (mean 4,000, p99 12,000): the store is the path less the mean plus the
    // draw, so it moves with the draw and averages the calibrated path.
    let costs = CostOverrides {
        zswap_store_page_ns: Some(15_000.0),
        compress_p99_ns: Some(12_000.0),
        ..fixed_codec()
    };
    let cfg = {
        let mut c = SystemConfig::load("optane-zswap", &[]).unwrap();
        c.costs = costs;
        c
    };
    let costs = Costs::of(&cfg).unwrap();
    let (mut a, mut b) = (ChaCha8Rng::seed_from_u64(7), ChaCha8Rng::seed_from_u64(7));
    let n = 20_000;
    let mut sum = 0.0;
    for _ in 0..n {
        let s = costs.zswap_store(1500, &mut a);
        assert_eq!(s.cpu, 11_000 + costs.compress(1500, &mut b));
        sum += s.cpu as f64;
    }
    let mean = sum / f64::from(n);
    assert!((mean / 15_000.0 - 1.0).abs() < 0.02, "mean {mean}");
}

#[test]
fn uncalibrated_pool_stores_charge_the_compression_alone() {
    let mut z = rig("optane-zswap", fixed_codec(), |_| {});
    let s = store(&mut z);
    assert_eq!((s.cpu, s.whole_path), (4_000, false));
    let mut r = rig("baseline-zram", fixed_codec(), |_| {});
    let s = store(&mut r);
    assert_eq!((s.cpu, s.whole_path), (4_000, false));
}

#[test]
fn a_rejected_zswap_store_pays_the_swap_file_path() {
    // A pool of 0 bytes is full: the page goes to the device through the swap write path.
    let costs = CostOverrides {
        zswap_store_page_ns: Some(15_000.0),
        swap_write_page_ns: Some(4_084.0),
        ..fixed_codec()
    };
    let mut r = rig("optane-zswap", costs, |c| c.zswap_max_pool_percent = 0);
    let s = store(&mut r);
    assert_eq!((s.cpu, s.whole_path), (4_084, true));
    assert_eq!(r.backend.pool_bytes(), 0);
    // Without a calibrated write path: the assumed submission, and reclaim adds the unmap.
    let mut r = rig("optane-zswap", fixed_codec(), |c| {
        c.zswap_max_pool_percent = 0
    });
    let s = store(&mut r);
    assert_eq!((s.cpu, s.whole_path), (BLOCK_SUBMIT_NS, false));
}

#[test]
fn a_block_store_charges_the_calibrated_write_path() {
    let costs = CostOverrides {
        swap_write_page_ns: Some(4_084.0),
        ..fixed_codec()
    };
    let s = store(&mut rig("optane", costs, |_| {}));
    assert_eq!((s.cpu, s.whole_path), (4_084, true));
    let s = store(&mut rig("optane", fixed_codec(), |_| {}));
    assert_eq!((s.cpu, s.whole_path), (BLOCK_SUBMIT_NS, false));
}

#[test]
fn reclaim_pays_each_path_less_the_madvise_calls_own_walk_and_isolation() {
    // The write path split 4,084 = 3,000 between the bios + 1,084 of the MADV_PAGEOUT call's
    // own (its page-table walk and its folios' isolation, which reclaim does not do): a block
    // write costs the 3,000, and each pool store its calibrated path less the same 1,084.
    let split = CostOverrides {
        swap_write_page_ns: Some(4_084.0),
        swap_write_plugged_page_ns: Some(3_000.0),
        zswap_store_page_ns: Some(15_000.0),
        zram_store_page_ns: Some(12_500.0),
        ..fixed_codec()
    };
    assert_eq!(split.pageout_call_ns(), 1_084.0);
    let s = store(&mut rig("optane", split.clone(), |_| {}));
    assert_eq!((s.cpu, s.whole_path), (3_000, true));
    let s = store(&mut rig("optane-zswap", split.clone(), |_| {}));
    assert_eq!((s.cpu, s.whole_path), (15_000 - 1_084, true));
    let s = store(&mut rig("baseline-zram", split.clone(), |_| {}));
    assert_eq!((s.cpu, s.whole_path), (12_500 - 1_084, true));
    // A page the full pool rejects goes to the swap file at the write's share.
    let mut r = rig("optane-zswap", split, |c| c.zswap_max_pool_percent = 0);
    assert_eq!(store(&mut r).cpu, 3_000);
    // Unsplit, nothing is taken off.
    let whole = CostOverrides {
        swap_write_page_ns: Some(4_084.0),
        zram_store_page_ns: Some(12_500.0),
        ..fixed_codec()
    };
    assert_eq!(whole.pageout_call_ns(), 0.0);
    let s = store(&mut rig("baseline-zram", whole, |_| {}));
    assert_eq!(s.cpu, 12_500);
}

#[test]
fn pool_hits_charge_the_calibrated_swap_in_around_decompression() {
    let calibrated = CostOverrides {
        pool_swap_in_software_ns: Some(6_500.0),
        ..fixed_codec()
    };
    for system in ["optane-zswap", "baseline-zram"] {
        let mut r = rig(system, calibrated.clone(), |_| {});
        store(&mut r);
        assert_eq!(pool_hit(&mut r, 1_000), 6_500 + 2_000, "{system}");
        let mut r = rig(system, fixed_codec(), |_| {});
        store(&mut r);
        assert_eq!(
            pool_hit(&mut r, 1_000),
            POOL_SWAP_IN_SOFTWARE_NS + 2_000,
            "{system}"
        );
    }
}
