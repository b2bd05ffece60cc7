//! How fast this machine does a fixed piece of CPU work at a given moment, so that runs made at
//! different times can be told apart when the host under this VM slows down.
//!
//! On the 2-vCPU VM the linux substrate runs on, the same kernel paths took 40 % longer half an
//! hour apart (a zram charge's compression 7.7 against 10.7 µs per page in
//! `scripts/path-profile` recordings of the same command, 2026-11-29 04:35 and 05:16), while
//! /proc/stat's steal time stayed near zero (2 ticks in 2,000 of full load): the host shares
//! caches and memory bandwidth rather than taking the CPU away, so only timing work shows it.
//! A calibration describes the machine of its own hour (docs/experiments/validation.md, "The
//! calibration's pool paths, where a zram charge's time goes, and a drifting host").
//!
//! The work: lz4 compression (the `lz4_flex` crate the live substrate uses; user space, so an
//! index of the CPU and memory this VM gets, not a kernel cost) of tab-model pages, timed in
//! rounds; the median round's time per page is the figure. About 10 ms in all.

use nvmswap_core::workload::content::fill_page;
use nvmswap_core::PAGE_SIZE;

/// Pages compressed per round: 1 MiB of input, one vCPU's whole L2 on this machine (lscpu: 1 MiB
/// in each of 2 instances), so the job also reaches into the L3 the host shares with others.
const PAGES: usize = 256;
/// Rounds timed; the median is the figure (a round the host interrupted does not move it).
const ROUNDS: usize = 9;
/// The pages' content: the tab model's mean compressibility and same-filled share, as the
/// calibration's compression probe fills them (`calibrate`, compression probe).
const RATIO: f64 = 0.38;
const SAME_FILLED: f64 = 0.10;

/// Median over the rounds of the time per page to lz4-compress [`PAGES`] tab-model pages, ns.
pub fn lz4_ns_per_page() -> f64 {
    let mut pages = vec![0u8; PAGES * PAGE_SIZE as usize];
    for (i, page) in pages.chunks_exact_mut(PAGE_SIZE as usize).enumerate() {
        fill_page(page, 1, i as u64, RATIO, SAME_FILLED);
    }
    let mut rounds: Vec<f64> = (0..ROUNDS)
        .map(|_| {
            let t = std::time::Instant::now();
            for page in pages.chunks_exact(PAGE_SIZE as usize) {
                std::hint::black_box(lz4_flex::compress(std::hint::black_box(page)));
            }
            t.elapsed().as_nanos() as f64 / PAGES as f64
        })
        .collect();
    rounds.sort_by(f64::total_cmp);
    rounds[ROUNDS / 2]
}

/// `extra.host_speed` of a linux run: the figure just before the machine was set up and just
/// after it was restored.
pub fn to_json(before_ns: f64, after_ns: f64) -> serde_json::Value {
    serde_json::json!({
        "lz4_ns_per_page_before": before_ns,
        "lz4_ns_per_page_after": after_ns,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_probe_times_real_work_and_reports_both_ends_of_a_run() {
        let ns = lz4_ns_per_page();
        // A 4 KiB page takes lz4 at least tens of ns and far less than a millisecond.
        assert!(ns.is_finite() && ns > 10.0 && ns < 1e6, "{ns}");
        let v = to_json(ns, 2.0 * ns);
        assert_eq!(v["lz4_ns_per_page_before"].as_f64(), Some(ns));
        assert_eq!(v["lz4_ns_per_page_after"].as_f64(), Some(2.0 * ns));
    }
}
