//! Clean behaviour: clear errors for bad input, and no leaked descriptors or threads.

use nvmswap_live::{LiveError, Pager, PagerConfig, PAGE};

/// The tests of this file count the process's descriptors and threads: run them one at a time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn count(dir: &str) -> usize {
    std::fs::read_dir(dir).unwrap().count()
}

#[test]
fn bad_sizes_and_missing_backend_file_are_clear_errors() {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
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

#[test]
fn no_leaked_fds_or_threads_and_region_drop_frees_slots() {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let fds = count("/proc/self/fd");
    let tasks = count("/proc/self/task");
    {
        let pager = Pager::new(PagerConfig {
            budget_bytes: 32 * PAGE as u64,
            pool_share: 0.0,
            ..PagerConfig::default()
        })
        .unwrap();
        assert!(
            count("/proc/self/task") >= tasks + 2,
            "handler and evictor run"
        );
        let region = pager.region(256 * PAGE as u64).unwrap();
        for p in 0..256 {
            // SAFETY: page p lies in the live region; only this thread uses it.
            unsafe { region.as_ptr().add(p * PAGE).write_volatile(p as u8 | 1) };
        }
        let s = pager.stats();
        assert!(s.nvm_in_use > 0 && s.resident_pages <= 32, "{s:?}");
        let addr = region.as_ptr() as usize;
        drop(region);
        let s = pager.stats();
        assert_eq!((s.nvm_in_use, s.resident_pages), (0, 0));
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
        assert!(
            !maps.lines().any(|l| l.starts_with(&format!("{addr:x}-"))),
            "region unmapped"
        );
    }
    assert_eq!(count("/proc/self/fd"), fds, "file descriptors");
    assert_eq!(count("/proc/self/task"), tasks, "threads");
}
