//! Bad sizes, a read-ahead too large and a missing back-end file get clear errors; the fault-wait option parses and a
//! spinning handler serves faults correctly.

use nvmswap_core::kinds::NvmBackend;
use nvmswap_live::{LiveError, Pager, PagerConfig, PAGE};

#[test]
fn bad_sizes_and_missing_backend_file_are_clear_errors() {
    let small = Pager::new(PagerConfig {
        budget_bytes: 3 * PAGE as u64,
        ..PagerConfig::default()
    });
    assert!(matches!(small, Err(LiveError::Budget { got, .. }) if got == 3 * PAGE as u64));
    let missing = Pager::new(PagerConfig {
        nvm_backend: Some(NvmBackend::File("/nonexistent/nvmswap/tier".into())),
        ..PagerConfig::default()
    });
    match missing {
        Err(e @ LiveError::BackendFile { .. }) => {
            assert!(e.to_string().contains("/nonexistent/nvmswap/tier"), "{e}")
        }
        other => panic!("expected a back-end file error, got {:?}", other.err()),
    }
    // The back-end's forms are core's registry (`NvmBackend`): a bad one fails to parse, with
    // the forms in the error.
    let unknown = "tape:/dev/st0"
        .parse::<NvmBackend>()
        .unwrap_err()
        .to_string();
    assert!(
        unknown.contains("'tape:/dev/st0'") && unknown.contains("emulated:<device profile>"),
        "{unknown}"
    );
    let huge_read_ahead = Pager::new(PagerConfig {
        read_ahead: 1 << 30,
        ..PagerConfig::default()
    });
    assert!(matches!(
        huge_read_ahead,
        Err(LiveError::ReadAhead { got, .. }) if got == 1 << 30
    ));
    let pager = Pager::new(PagerConfig::default()).unwrap();
    assert!(matches!(pager.region(0), Err(LiveError::RegionSize(0))));
    assert!(matches!(
        pager.region(4097),
        Err(LiveError::RegionSize(4097))
    ));
}

#[test]
fn fault_wait_parses_block_and_spin_and_rejects_the_rest() {
    use nvmswap_live::FaultWait;
    assert_eq!("block".parse::<FaultWait>(), Ok(FaultWait::Block));
    assert_eq!(
        "spin:50".parse::<FaultWait>(),
        Ok(FaultWait::Spin { micros: 50 })
    );
    for bad in ["spin", "spin:x", "poll", ""] {
        let e = bad.parse::<FaultWait>().unwrap_err();
        assert!(e.contains("block or spin"), "{bad}: {e}");
    }
}

#[test]
fn a_spinning_handler_serves_faults_correctly() {
    use nvmswap_live::{FaultWait, Pager, PagerConfig};
    let pager = Pager::new(PagerConfig {
        budget_bytes: 1 << 20,
        pool_share: 1.0,
        nvm_backend: None,
        fault_wait: FaultWait::Spin { micros: 50 },
        ..PagerConfig::default()
    })
    .unwrap();
    let region = pager.region(4 << 20).unwrap();
    let p = region.as_ptr();
    let pages = region.pages();
    for i in 0..pages {
        // SAFETY: `p` is the start of a live region of `pages` pages.
        unsafe { p.add(i * 4096).write(i as u8 ^ 0x5a) };
    }
    for i in 0..pages {
        // SAFETY: as above.
        let got = unsafe { p.add(i * 4096).read() };
        assert_eq!(got, i as u8 ^ 0x5a, "page {i}");
    }
}
