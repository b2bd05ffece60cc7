//! Bad sizes and a missing back-end file get clear errors.

use nvmswap_live::{LiveError, Pager, PagerConfig, PAGE};

#[test]
fn bad_sizes_and_missing_backend_file_are_clear_errors() {
    let small = Pager::new(PagerConfig {
        budget_bytes: 3 * PAGE as u64,
        ..PagerConfig::default()
    });
    assert!(matches!(small, Err(LiveError::Budget { got, .. }) if got == 3 * PAGE as u64));
    let missing = Pager::new(PagerConfig {
        nvm_backend: Some("file:/nonexistent/nvmswap/tier".into()),
        ..PagerConfig::default()
    });
    match missing {
        Err(e @ LiveError::BackendFile { .. }) => {
            assert!(e.to_string().contains("/nonexistent/nvmswap/tier"), "{e}")
        }
        other => panic!("expected a back-end file error, got {:?}", other.err()),
    }
    let unknown = Pager::new(PagerConfig {
        nvm_backend: Some("tape:/dev/st0".into()),
        ..PagerConfig::default()
    });
    assert!(matches!(unknown, Err(LiveError::Backend(s)) if s == "tape:/dev/st0"));
    let pager = Pager::new(PagerConfig::default()).unwrap();
    assert!(matches!(pager.region(0), Err(LiveError::RegionSize(0))));
    assert!(matches!(
        pager.region(4097),
        Err(LiveError::RegionSize(4097))
    ));
}
