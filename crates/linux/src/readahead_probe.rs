//! What each further page of a swap-in's read-ahead window costs inside the task's block plug
//! (the costs file's `readahead_page_ns`).
//!
//! `swap_cluster_readahead` and `swap_vma_readahead` (mm/swap_state.c) open a block plug, then
//! for each slot of the window allocate a folio, charge it to the memory cgroup, add it to the
//! swap cache and queue its read (`__read_swap_cache_async`, `swap_read_folio`), and dispatch
//! the queued reads only when the plug finishes after the last slot. The first read of a window
//! therefore waits in the plug for the work on every page after it: the kernel's read Q2D p50
//! was 13 µs in linux-swapfile x0.1 (2026-11-27 09:10 matrix) where sim's was 0, since sim
//! holds a read in the plug only while a charge reclaims.
//!
//! The probe: the calibration's page-out probe (a forked child pages out tab-model pages through
//! a scratch swap file, then touches them in a random order) with page-cluster 3, the block
//! layer traced; no charge reclaims (the cgroup has room). A window is the read requests queued
//! before the first of them was dispatched; its in-plug time is that dispatch less the first
//! queue time. The mean per window size (pages), and a least-squares line through them against
//! the pages after the first: the slope is the work per further page. The swap path probe's
//! `swap_in_software_ns` (page-cluster 0) already holds the faulting page's own share.

use crate::calibrate::{fit_page_cost, PageFit};
use nvmswap_core::block::Op;
use nvmswap_core::results::{BlockRequest, LatencySummary};
use nvmswap_core::PAGE_SIZE;
use serde::Serialize;

/// The page-clusters the probe runs with: windows of up to 2, 4 and 8 pages (3 is the kernel's
/// default).
pub const PROBE_PAGE_CLUSTERS: [u32; 3] = [1, 2, 3];

/// Windows of one size: how many, and their mean time in the plug (µs).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct PlugPoint {
    pub pages: u32,
    pub windows: u64,
    pub in_plug_us_mean: f64,
}

/// What the probe measured.
#[derive(Debug, Clone, Serialize)]
pub struct ReadaheadPlugProbe {
    pub page_clusters: Vec<u32>,
    /// The touches' swap-in faults (and the swap-cache hits among them), all runs.
    pub fault_us: LatencySummary,
    pub points: Vec<PlugPoint>,
    /// In-plug time against pages after the first (`page_us` is the cost per further page).
    pub fit: Option<PageFit>,
}

/// A window: its pages and the time its first read waited in the plug, ns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    pub pages: u32,
    pub in_plug_ns: u64,
}

/// The read windows of a trace: read requests in queue order, each joining the window before
/// when it was queued before that window's first dispatch (a window's reads go out together
/// when its plug finishes; the next fault's come after).
pub fn windows_of(requests: &[BlockRequest]) -> Vec<Window> {
    let mut reads: Vec<&BlockRequest> = requests.iter().filter(|r| r.op == Op::Read).collect();
    reads.sort_by_key(|r| (r.q_ns, r.d_ns));
    let mut out = Vec::new();
    // (first queue, first dispatch, pages) of the window being gathered.
    let mut open: Option<(u64, u64, u64)> = None;
    for r in reads {
        let pages = r.bytes.div_ceil(PAGE_SIZE);
        match &mut open {
            Some((_, first_d, n)) if r.q_ns < *first_d => {
                *first_d = (*first_d).min(r.d_ns);
                *n += pages;
            }
            _ => {
                if let Some((q, d, n)) = open.take() {
                    out.push(Window {
                        pages: n as u32,
                        in_plug_ns: d.saturating_sub(q),
                    });
                }
                open = Some((r.q_ns, r.d_ns, pages));
            }
        }
    }
    if let Some((q, d, n)) = open {
        out.push(Window {
            pages: n as u32,
            in_plug_ns: d.saturating_sub(q),
        });
    }
    out
}

/// Mean in-plug time per window size, sizes in increasing order.
pub fn points_of(windows: &[Window]) -> Vec<PlugPoint> {
    let mut by_size: std::collections::BTreeMap<u32, (u64, u64)> = Default::default();
    for w in windows {
        let e = by_size.entry(w.pages).or_default();
        e.0 += 1;
        e.1 += w.in_plug_ns;
    }
    by_size
        .into_iter()
        .map(|(pages, (n, sum))| PlugPoint {
            pages,
            windows: n,
            in_plug_us_mean: sum as f64 / n as f64 / 1_000.0,
        })
        .collect()
}

/// The line through the sizes' means (each size with at least `MIN_WINDOWS` windows).
pub fn fit(points: &[PlugPoint]) -> Option<PageFit> {
    let usable: Vec<(u32, f64)> = points
        .iter()
        .filter(|p| p.windows >= MIN_WINDOWS)
        .map(|p| (p.pages, p.in_plug_us_mean))
        .collect();
    if usable.len() < 3 {
        return None;
    }
    fit_page_cost(&usable)
}

/// Fewest windows of a size for its mean to enter the fit.
pub const MIN_WINDOWS: u64 = 20;

/// The swap-in probe through a scratch swap file, once per page-cluster of
/// [`PROBE_PAGE_CLUSTERS`], the pages touched in order.
pub fn probe(
    dir: &std::path::Path,
    pages: usize,
    seed: u64,
    state_path: &std::path::Path,
) -> Result<ReadaheadPlugProbe, crate::error::LinuxError> {
    let mut windows = Vec::new();
    let mut faults = nvmswap_core::metrics::LatencyRecorder::new();
    for page_cluster in PROBE_PAGE_CLUSTERS {
        let mut cfg = crate::calibrate::scratch_swap_file_config("calibrate-readahead", dir, pages);
        cfg.page_cluster = Some(page_cluster);
        let run = crate::calibrate::probe_page_out(&cfg, pages, seed, true, state_path)?;
        windows.extend(windows_of(&run.requests));
        faults.merge(&run.fault);
    }
    let points = points_of(&windows);
    Ok(ReadaheadPlugProbe {
        page_clusters: PROBE_PAGE_CLUSTERS.to_vec(),
        fault_us: faults.summary(nvmswap_core::NS_PER_US),
        fit: fit(&points),
        points,
    })
}

/// The probe's table as TOML comments, for the costs file.
pub fn comment(p: &ReadaheadPlugProbe) -> String {
    let clusters: Vec<String> = p.page_clusters.iter().map(|c| c.to_string()).collect();
    let mut out = format!(
        "# Read-ahead in the plug: swap-ins through a scratch swap file, page-cluster {},\n\
         # pages touched in address order (touches p50 {:.1} us); per window size, the windows\n\
         # and the mean time from their first read's queue to their dispatch (us):\n",
        clusters.join(", "),
        p.fault_us.p50
    );
    for pt in &p.points {
        out.push_str(&format!(
            "#   {} pages: {} windows, {:.1} us\n",
            pt.pages, pt.windows, pt.in_plug_us_mean
        ));
    }
    if let Some(f) = &p.fit {
        out.push_str(&format!(
            "# least squares over sizes with {MIN_WINDOWS}+ windows: {:.1} us + {:.2} us x (pages - 1), R² {:.4}\n",
            f.first_page_us, f.page_us, f.r_squared
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(q_ns: u64, d_ns: u64, pages: u64) -> BlockRequest {
        BlockRequest {
            op: Op::Read,
            sector: 0,
            slot: 0,
            bytes: pages * PAGE_SIZE,
            merged: pages as u32 - 1,
            q_ns,
            g_ns: None,
            i_ns: None,
            d_ns,
            c_ns: d_ns + 50_000,
        }
    }

    #[test]
    fn reads_queued_before_a_dispatch_are_one_window() {
        // A window of 3 + 2 pages (two requests: a slot between them is resident), queued from
        // 0 and dispatched at 12 us; a lone read 100 us later, out at once; a write between
        // them is not a read.
        let mut write = read(60_000, 61_000, 4);
        write.op = Op::Write;
        let trace = [
            read(100_000, 101_000, 1),
            read(0, 12_000, 3),
            write,
            read(7_000, 12_500, 2),
        ];
        assert_eq!(
            windows_of(&trace),
            [
                Window {
                    pages: 5,
                    in_plug_ns: 12_000
                },
                Window {
                    pages: 1,
                    in_plug_ns: 1_000
                }
            ]
        );
    }

    #[test]
    fn the_slope_over_window_sizes_is_the_cost_per_further_page() {
        // 2 us + 3 us per further page, 30 windows of each size; a size with too few windows
        // is left out of the fit.
        let mut windows = Vec::new();
        for pages in 1..=8u32 {
            let n = if pages == 5 { 3 } else { 30 };
            for _ in 0..n {
                windows.push(Window {
                    pages,
                    in_plug_ns: 2_000 + 3_000 * u64::from(pages - 1),
                });
            }
        }
        windows.push(Window {
            pages: 5,
            in_plug_ns: 900_000,
        });
        let points = points_of(&windows);
        assert_eq!(points.len(), 8);
        assert_eq!(points[0].in_plug_us_mean, 2.0);
        let f = fit(&points).unwrap();
        assert!((f.page_us - 3.0).abs() < 1e-9, "{f:?}");
        assert!((f.first_page_us - 2.0).abs() < 1e-9, "{f:?}");
        let text = comment(&ReadaheadPlugProbe {
            page_clusters: vec![1, 2, 3],
            fault_us: LatencySummary::default(),
            points,
            fit: Some(f),
        });
        assert!(text.contains("#   8 pages: 30 windows, 23.0 us"), "{text}");
        assert!(text.contains("2.0 us + 3.00 us x (pages - 1)"), "{text}");
        assert!(fit(&points_of(&windows[..60])).is_none());
    }
}
