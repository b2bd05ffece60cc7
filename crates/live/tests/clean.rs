//! Clean behaviour: dropping a region unmaps it and frees its slots; no leaked fds or threads.

use nvmswap_live::{FaultPath, Pager, PagerConfig, PAGE};

// This file holds one test only: it counts the process's descriptors and threads, which other
// tests running in parallel in the same process would change.

fn count(dir: &str) -> usize {
    std::fs::read_dir(dir).unwrap().count()
}

#[test]
fn no_leaked_fds_or_threads_and_region_drop_frees_slots() {
    for (fault_path, threads) in [(FaultPath::Sigbus, 1), (FaultPath::Handler, 2)] {
        check(fault_path, threads);
    }
}

fn check(fault_path: FaultPath, threads: usize) {
    let fds = count("/proc/self/fd");
    let tasks = count("/proc/self/task");
    {
        let pager = Pager::new(PagerConfig {
            budget_bytes: 32 * PAGE as u64,
            pool_share: 0.0,
            fault_path,
            ..PagerConfig::default()
        })
        .unwrap();
        assert_eq!(
            count("/proc/self/task"),
            tasks + threads,
            "{fault_path:?}: the evictor (and the handler thread) run"
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
    assert_eq!(
        count("/proc/self/fd"),
        fds,
        "{fault_path:?}: file descriptors"
    );
    assert_eq!(count("/proc/self/task"), tasks, "{fault_path:?}: threads");
}
