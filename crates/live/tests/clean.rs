//! Clean behaviour: dropping a region unmaps it and frees its slots; no leaked fds or threads.

use nvmswap_live::{Pager, PagerConfig, PAGE};

// This file holds one test only: it counts the process's descriptors and threads, which other
// tests running in parallel in the same process would change.

fn count(dir: &str) -> usize {
    std::fs::read_dir(dir).unwrap().count()
}

#[test]
fn no_leaked_fds_or_threads_and_region_drop_frees_slots() {
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
