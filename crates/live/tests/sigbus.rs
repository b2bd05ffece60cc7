//! The SIGBUS (self-paging) fault path: nothing on it allocates, and a SIGBUS that is not a
//! pager's still ends the process as it would have without the pager.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};

use nvmswap_live::{Compressor, FaultPath, Pager, PagerConfig, PAGE};

/// Counts allocations made inside the pager's SIGBUS handler (on any thread).
struct CountingAlloc;

static IN_HANDLER_ALLOCS: AtomicU64 = AtomicU64::new(0);

// SAFETY: forwards to the system allocator; the count is a side effect only.
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if nvmswap_live::sigbus::in_handler() {
            IN_HANDLER_ALLOCS.fetch_add(1, Ordering::SeqCst);
        }
        // SAFETY: same contract as ours.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if nvmswap_live::sigbus::in_handler() {
            IN_HANDLER_ALLOCS.fetch_add(1, Ordering::SeqCst);
        }
        // SAFETY: same contract as ours.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc;

/// Write then read back every page of a region 8x the budget, twice, through the given tiers.
fn churn(cfg: PagerConfig) -> nvmswap_live::PagerStats {
    let pager = Pager::new(cfg).unwrap();
    let region = pager.region(1024 * PAGE as u64).unwrap();
    let p = region.as_ptr();
    for round in 0..2u8 {
        for i in 0..region.pages() {
            // SAFETY: page i lies in the live region; only this thread uses it. Half the pages
            // get a pattern (compressible), the rest a same-filled byte.
            unsafe {
                let page = p.add(i * PAGE);
                page.write_bytes(round ^ (i as u8), if i % 2 == 0 { 64 } else { PAGE });
            }
        }
        for i in 0..region.pages() {
            // SAFETY: as above.
            let got = unsafe { p.add(i * PAGE).read_volatile() };
            assert_eq!(got, round ^ (i as u8), "page {i} round {round}");
        }
    }
    let stats = pager.stats();
    drop(region);
    stats
}

#[test]
fn the_sigbus_fault_path_does_not_allocate() {
    for (compressor, nvm) in [
        (Compressor::Lz4, Some("emulated:pcm")),
        (Compressor::Zstd, Some("emulated:pcm")),
        (Compressor::Lz4, None),
    ] {
        let before = IN_HANDLER_ALLOCS.load(Ordering::SeqCst);
        let s = churn(PagerConfig {
            budget_bytes: 128 * PAGE as u64,
            pool_share: 0.25,
            compressor,
            nvm_backend: nvm.map(|s| s.parse().expect("a back-end")),
            nvm_bytes: 2048 * PAGE as u64,
            fault_path: FaultPath::Sigbus,
            ..PagerConfig::default()
        });
        let allocs = IN_HANDLER_ALLOCS.load(Ordering::SeqCst) - before;
        assert!(
            s.faults > 2000,
            "{compressor:?}/{nvm:?}: faults {}",
            s.faults
        );
        assert!(
            s.evictions_moved > 0,
            "{compressor:?}/{nvm:?}: eviction by move ran"
        );
        assert_eq!(
            allocs, 0,
            "{compressor:?}/{nvm:?}: allocations or frees inside the SIGBUS handler"
        );
    }
}

/// Set in the child process of `a_foreign_sigbus_still_ends_the_process`.
const CHILD: &str = "NVMSWAP_SIGBUS_TEST_CHILD";

#[test]
fn a_foreign_sigbus_still_ends_the_process() {
    if std::env::var_os(CHILD).is_some() {
        // Child: a pager on the SIGBUS path serves its region, then a SIGBUS no pager owns (a
        // read past the end of a truncated file mapping) must kill us as it would without it.
        let pager = Pager::new(PagerConfig {
            budget_bytes: 64 * PAGE as u64,
            fault_path: FaultPath::Sigbus,
            ..PagerConfig::default()
        })
        .unwrap();
        let region = pager.region(256 * PAGE as u64).unwrap();
        // SAFETY: the region is live; only this thread uses it.
        unsafe { region.as_ptr().add(200 * PAGE).write_volatile(7) };
        let path = std::env::temp_dir().join(format!("nvmswap-sigbus-{}", std::process::id()));
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .unwrap();
        file.set_len(PAGE as u64).unwrap();
        // SAFETY: a shared mapping of our own file, read once below after truncation.
        let map = unsafe { memmap2::Mmap::map(&file) }.unwrap();
        file.set_len(0).unwrap();
        std::fs::remove_file(&path).unwrap();
        // SAFETY: the read is meant to fault (SIGBUS: beyond the end of the file).
        let byte = unsafe { std::ptr::read_volatile(map.as_ptr()) };
        println!("read {byte}: no SIGBUS");
        std::process::exit(0);
    }
    let exe = std::env::current_exe().unwrap();
    let out = std::process::Command::new(exe)
        .args([
            "--exact",
            "a_foreign_sigbus_still_ends_the_process",
            "--nocapture",
        ])
        .env(CHILD, "1")
        .output()
        .unwrap();
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(
        out.status.signal(),
        Some(libc::SIGBUS),
        "child: {:?}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout)
    );
}
