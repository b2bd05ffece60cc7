//! Integrity under concurrency (see `nvmswap_live::torture`): zero mismatches through all tiers.

use nvmswap_live::{torture, PagerConfig, PAGE};

#[test]
fn torture_through_pool_and_nvm() {
    let cfg = PagerConfig {
        budget_bytes: 128 * PAGE as u64,
        pool_share: 0.1,
        nvm_bytes: 2048 * PAGE as u64,
        nvm_backend: Some("emulated:pcm".into()),
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
        s.service_ns.len() >= 4,
        "zero, same, pool and nvm faults all happened: {s:?}"
    );
    assert!(s.pool_writebacks > 0 && s.evictions > 0);
}

#[test]
fn torture_nvm_only_on_file() {
    let path = std::env::temp_dir().join(format!("nvmswap-live-test-{}", std::process::id()));
    std::fs::write(&path, b"").unwrap();
    let cfg = PagerConfig {
        budget_bytes: 64 * PAGE as u64,
        pool_share: 0.0,
        nvm_bytes: 1024 * PAGE as u64,
        nvm_backend: Some(format!("file:{}", path.display())),
        ..PagerConfig::default()
    };
    let r = torture::run(cfg, 512, 3, 3_000, 9).unwrap();
    std::fs::remove_file(&path).unwrap();
    assert_eq!(r.mismatches, 0);
    assert_eq!(r.left_after_drop, (0, 0));
    assert!(
        r.stats.nvm_writes_saved > 0,
        "clean pages evicted without a rewrite"
    );
    assert!(r.stats.read_ahead_pages > 0);
}
