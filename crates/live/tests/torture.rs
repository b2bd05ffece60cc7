//! Integrity under concurrency (see `nvmswap_live::torture`): zero mismatches through all tiers.

use nvmswap_core::kinds::NvmBackend;
use nvmswap_live::{torture, Compressor, FaultPath, PagerConfig, Tier, PAGE};

#[test]
fn torture_through_pool_and_nvm_sigbus_path() {
    torture_through_pool_and_nvm(FaultPath::Sigbus, Compressor::Lz4);
}

#[test]
fn torture_through_pool_and_nvm_handler_path() {
    torture_through_pool_and_nvm(FaultPath::Handler, Compressor::Lz4);
}

#[test]
fn torture_through_zstd_pool_sigbus_path() {
    torture_through_pool_and_nvm(FaultPath::Sigbus, Compressor::Zstd);
}

#[test]
fn torture_evicting_by_write_protect_sigbus_path() {
    torture_through(FaultPath::Sigbus, Compressor::Lz4, false);
}

fn torture_through_pool_and_nvm(fault_path: FaultPath, compressor: Compressor) {
    torture_through(fault_path, compressor, true);
}

fn torture_through(fault_path: FaultPath, compressor: Compressor, evict_by_move: bool) {
    let cfg = PagerConfig {
        fault_path,
        compressor,
        evict_by_move,
        budget_bytes: 128 * PAGE as u64,
        pool_share: 0.1,
        nvm_bytes: 2048 * PAGE as u64,
        nvm_backend: Some(NvmBackend::Emulated("pcm".into())),
        ..PagerConfig::default()
    };
    let r = torture::run(cfg, 1024, 4, 5_000, 7).unwrap();
    let s = &r.stats;
    assert_eq!(r.mismatches, 0);
    assert_eq!(
        r.left_after_drop,
        (0, 0),
        "dropping the region frees pages and slots"
    );
    assert!(s.faults > 1000, "{}", s.faults);
    assert!(
        s.tiers_used() == 4,
        "zero, same, pool and nvm faults all happened: {s:?}"
    );
    assert!(s.pool_writebacks > 0 && s.evictions > 0);
    if evict_by_move {
        assert!(s.evictions_moved > 0 && s.move_batches > 0, "{s:?}");
    } else {
        assert_eq!(s.evictions_moved, 0);
    }
}

#[test]
fn torture_nvm_only_on_file_sigbus_path() {
    torture_nvm_only_on_file(FaultPath::Sigbus);
}

#[test]
fn torture_nvm_only_on_file_handler_path() {
    torture_nvm_only_on_file(FaultPath::Handler);
}

fn torture_nvm_only_on_file(fault_path: FaultPath) {
    let path = std::env::temp_dir().join(format!(
        "nvmswap-live-test-{}-{fault_path:?}",
        std::process::id()
    ));
    std::fs::write(&path, b"").unwrap();
    let cfg = PagerConfig {
        budget_bytes: 64 * PAGE as u64,
        pool_share: 0.0,
        nvm_bytes: 1024 * PAGE as u64,
        nvm_backend: Some(NvmBackend::File(path.display().to_string())),
        fault_path,
        ..PagerConfig::default()
    };
    let r = torture::run(cfg, 512, 3, 3_000, 9).unwrap();
    std::fs::remove_file(&path).unwrap();
    // Heap-Wear's ages live next to the back-end file.
    std::fs::remove_file(format!("{}.ages", path.display())).unwrap();
    assert_eq!(r.mismatches, 0);
    assert_eq!(r.left_after_drop, (0, 0));
    assert!(
        r.stats.nvm_writes_saved > 0,
        "clean pages evicted without a rewrite"
    );
    assert!(r.stats.read_ahead_pages > 0);
    assert!(
        r.stats.service_ns[&Tier::ReadAhead].count() > 0,
        "faults served from the read-ahead cache"
    );
}
