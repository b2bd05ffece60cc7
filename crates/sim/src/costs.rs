//! CPU costs of the kernel paths the simulator charges, each with its source. Device latencies
//! come from the device profiles; these are the software around them.

use nvmswap_core::config::SystemConfig;
use nvmswap_core::kinds::Compressor;
use nvmswap_core::NS_PER_S;

use crate::backend::Spent;
use crate::SimError;
use nvmswap_core::device::LatencyDist;
use rand_chacha::ChaCha8Rng;

/// Demand-zero (minor) fault: allocate a page and map it. Seed 002, "Swap In Overhead": "minor
/// page fault handling latency ~6 us".
pub const MINOR_FAULT_NS: u64 = 6_000;

/// Swap-in through the block layer, without the device read: seed 002's 31 us swap-in fault less
/// its 10 us SCM read (swap-cache lookup, "swap page read" 12 us of block layer, reuse, mapping,
/// slot free).
pub const BLOCK_SWAP_IN_SOFTWARE_NS: u64 = 21_000;

/// Swap-in with no block layer (NVM-Swap, seed 001 §3.1): seed 002's breakdown less the SCM read
/// (10 us) and the block-layer "swap page read" (12 us).
pub const NVM_SWAP_IN_SOFTWARE_NS: u64 = 9_000;

/// Swap-in from zram or a zswap hit, without decompression: seed 002's swap-in less the SCM read
/// and the block layer, as for NVM-Swap (zram's bio path is a function call). Replaced by
/// `costs.pool_swap_in_software_ns` when calibrated.
pub const POOL_SWAP_IN_SOFTWARE_NS: u64 = 9_000;

/// Submitting one swap-out write through the block layer: taken equal to seed 002's "swap page
/// read" block-layer cost (12 us), our assumption for the write path.
pub const BLOCK_SUBMIT_NS: u64 = 12_000;

/// Unmapping a page and adding it to the swap cache during reclaim (our assumption: the same order
/// as a minor fault). Not charged when the store charged a calibrated whole swap-out path
/// (`costs.swap_write_page_ns`, `zswap_store_page_ns`, `zram_store_page_ns`), which holds it.
pub const RECLAIM_PAGE_NS: u64 = 2_000;

/// lzo page compression and decompression in the zswap pool during the pressure test: seed 000
/// §4.2 (Fig. 11): compression 12.1 us mean (max 138.2 us), decompression 3.9 us mean (max 42.6 us,
/// 98.7 % under 10 us). The p99s are our reading of those maxima and shares.
pub const LZO_COMPRESS: LatencyDist = LatencyDist::new(12_100.0, 45_000.0);
pub const LZO_DECOMPRESS: LatencyDist = LatencyDist::new(3_900.0, 10_000.0);

/// lz4 is not measured in the seeds; we take it as 0.6x lzo's time (our assumption, to be replaced
/// by `nvmswap linux calibrate` figures for this machine).
pub const LZ4_COMPRESS: LatencyDist = LatencyDist::new(7_260.0, 27_000.0);
pub const LZ4_DECOMPRESS: LatencyDist = LatencyDist::new(2_340.0, 6_000.0);

/// A same-filled page is detected by scanning it; no compression (our assumption: 1 us).
pub const SAME_FILLED_NS: u64 = 1_000;

/// The kernel's timer frequency (CONFIG_HZ), which sizes `reclaim_throttle`'s timeouts: 250 on
/// the machine the linux substrate runs on (/proc/config.gz: CONFIG_HZ=250).
pub const KERNEL_HZ: u64 = 250;

/// How often the timeline is sampled, in virtual time.
pub const TIMELINE_INTERVAL_NS: u64 = 5_000_000_000;

/// BLKDEV_DEFAULT_RQ (128, include/linux/blkdev.h): with an I/O scheduler, blk-mq allows twice
/// the smaller of this and the device's queue depth in requests before a submitter must wait for
/// a tag (io.rs builds the limit).
pub const BLOCK_MAX_REQUESTS: usize = 128;

/// The software costs in force: the sourced defaults above unless the configuration overrides.
pub struct Costs {
    pub minor_fault: u64,
    /// A pool hit's swap-in around decompression: `costs.pool_swap_in_software_ns`
    /// (calibrated) or `POOL_SWAP_IN_SOFTWARE_NS` (seed 002).
    pub pool_swap_in: u64,
    compress: LatencyDist,
    decompress: LatencyDist,
    /// Reclaim's work per reclaimed page besides its page-out (LRU scanning, deactivation with
    /// its referenced checks, rotations, priority loops): `costs.reclaim_scan_page_ns`
    /// (calibrated), else 0 (sim assumes none).
    pub reclaim_scan: u64,
    /// Reclaim's work for a page its scan looks at and keeps (referenced check, rotation or
    /// activation): `costs.reclaim_keep_page_ns` (calibrated), else 0 (sim assumes none).
    pub reclaim_keep: u64,
    /// Of `reclaim_scan`, the reclaimed page's own referenced check inside
    /// `shrink_folio_list`, just before its page-out: `reclaim_keep` (the same reverse-map walk,
    /// as calibrate composes `reclaim_scan_page_ns`), at most all of `reclaim_scan`. The rest is
    /// reclaim's work outside `shrink_folio_list` (the priority loop, the cgroup walk, the
    /// active list's deactivation), which a charge spends around its batches, not between its
    /// pages' write bios.
    pub reclaim_check: u64,
    /// The work on each further page of a swap-in's read-ahead window inside the block plug
    /// (folio, charge, swap cache, read submission): `costs.readahead_page_ns` (calibrated),
    /// else 0 (sim assumes none).
    pub readahead_page: u64,
    /// A reclaimer's wait for one remote TLB flush IPI: `costs.remote_flush_ns` (calibrated),
    /// else 0 (sim then models no remote flushes; crate::tlb).
    pub remote_flush: u64,
    /// The same to a CPU idling on `init_mm`: `costs.remote_flush_idle_ns` (calibrated), else
    /// None (the larger of `remote_flush` and `cpu_wake`; nvmswap_core::tlb::Tlbs::new).
    pub remote_flush_idle: Option<u64>,
    /// What a flush IPI takes from the task running on its target:
    /// `costs.remote_flush_target_ns` (calibrated), else None (nothing; nvmswap_core::tlb).
    pub remote_flush_target: Option<u64>,
    /// A tab's own CPU per background touch: `costs.tab_touch_ns` (calibrated), else 0 (a
    /// resident touch takes no time).
    pub tab_touch: u64,
    /// A tab's own CPU per page it adds, after the page's fault (its contents):
    /// `costs.tab_fill_*_page_ns` (calibrated), else none (contents cost nothing).
    pub tab_fill: Option<FillCosts>,
    /// A touch of a mapped page whose accessed bit reclaim's scan cleared since its last touch:
    /// `costs.accessed_bit_ns` (calibrated), else 0.
    pub accessed_bit: u64,
    /// A tab's own CPU when its background second begins, apart from its touches:
    /// `costs.tab_second_ns` (calibrated), else 0.
    pub tab_second: u64,
    /// What that work costs more after the tab idled: `costs.tab_second_by_idle`
    /// (calibrated), else nothing ([`Costs::tab_second_after`]).
    pub tab_second_by_idle: Option<nvmswap_core::mapped_access::TabSecondByIdle>,
    /// The driver's CPU per tab it tells a second (`costs.driver_touch_set_ns`,
    /// `driver_tell_local_ns`, `driver_tell_remote_ns`, `driver_answer_ns`, calibrated): its
    /// touch set, its command, its answer. `None` unless all four are given: then no driver is
    /// scheduled (every tab is told at the second's start).
    pub driver: Option<DriverCosts>,
    /// A task woken onto an idle CPU waits this long for it (`costs.cpu_wake_ns`, calibrated),
    /// else 0. Used, where neither `cpu_wake_curve` nor `cpu_halt_poll` is given, for the tabs
    /// the driver tells and for a task a read's completion interrupt wakes onto an idle CPU
    /// other than its own ([`Costs::idle_cpu_wake`]), and always as the least a remote TLB
    /// flush to an idle CPU on `init_mm` costs its reclaimer (crate::tlb).
    pub cpu_wake: u64,
    /// The same wake-up by how long the CPU idled (`costs.cpu_wake_curve`, calibrated): where
    /// set (and `cpu_halt_poll` not), [`Costs::idle_cpu_wake`] reads it instead of `cpu_wake`.
    pub cpu_wake_curve: Option<Vec<nvmswap_core::device::WakePoint>>,
    /// The same wake-up as the host's adaptive halt polling prices it (`costs.cpu_halt_poll`,
    /// calibrated; nvmswap_core::halt_poll): where set, the machine carries each CPU's polling
    /// interval and charges a wake-up by it (`Machine::halt_wake_ns`) instead of
    /// [`Costs::idle_cpu_wake`].
    pub cpu_halt_poll: Option<nvmswap_core::halt_poll::HaltPollCosts>,
    /// The machine's other processes' tasks (`costs.other_process_runs_per_s`,
    /// `costs.other_process_run_ns`, calibrated): one every `period` ns on an idle CPU. None
    /// without them or at 0 runs a second (crate::tlb).
    pub other_processes: Option<crate::tlb::OtherProcesses>,
    /// Calibrated whole swap-out paths into zswap's pool and into zram (None: not calibrated).
    zswap_store: Option<f64>,
    zram_store: Option<f64>,
    /// Of those paths, the MADV_PAGEOUT call's own work per page, which reclaim does not do
    /// (`CostOverrides::pageout_call_ns`; 0 where the swap write path is not split).
    pageout_call: f64,
}

/// A tab's CPU to write an added page's contents, ns, by content ([`Costs::tab_fill`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FillCosts {
    pub same_filled: u64,
    /// A page whose chunks after its first are all copies (fresh share 0)...
    pub copy: u64,
    /// ...and one whose chunks are all fresh bytes (fresh share 1).
    pub fresh: u64,
}

impl FillCosts {
    /// A page of `compressed_bytes` (0: zero-filled; `same_word`: another repeated word, also
    /// same-filled) of a tab whose pages compress to `ratio`:
    /// the linux tab writes its chunks fresh with core's `fresh_share_for_ratio(ratio)`, and a
    /// fresh chunk costs what the probe's fresh page costs more than its copied one, per chunk.
    pub fn page_ns(&self, compressed_bytes: u16, same_word: bool, ratio: f64) -> u64 {
        if compressed_bytes == 0 || same_word {
            return self.same_filled;
        }
        let share = nvmswap_core::workload::content::fresh_share_for_ratio(ratio);
        let extra = self.fresh.saturating_sub(self.copy) as f64 * share;
        self.copy + extra.round() as u64
    }
}

/// The driver's CPU per tab it tells a second, ns ([`Costs::driver`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DriverCosts {
    pub touch_set: u64,
    /// Telling a tab that will wait for a CPU the driver's or another task holds.
    pub tell_local: u64,
    /// Telling a tab that takes an idle CPU (an interrupt to it).
    pub tell_remote: u64,
    pub answer: u64,
}

impl Costs {
    pub fn of(cfg: &SystemConfig) -> Result<Self, SimError> {
        let (compress, decompress) = match cfg.compressor {
            Compressor::Lz4 => (LZ4_COMPRESS, LZ4_DECOMPRESS),
            Compressor::Lzo => (LZO_COMPRESS, LZO_DECOMPRESS),
            other => {
                return Err(SimError::Config(format!(
                    "configuration '{}': compressor '{other}': sim knows the costs of lzo and lz4 \
                     only (crates/sim/src/costs.rs); the live substrate runs lz4 and zstd",
                    cfg.name
                )))
            }
        };
        let o = &cfg.costs;
        Ok(Costs {
            minor_fault: o.minor_fault_ns.map_or(MINOR_FAULT_NS, |v| v as u64),
            pool_swap_in: o
                .pool_swap_in_software_ns
                .map_or(POOL_SWAP_IN_SOFTWARE_NS, |v| v as u64),
            reclaim_scan: o
                .reclaim_scan_page_ns
                .map_or(0, |v| v.max(0.0).round() as u64),
            reclaim_keep: o
                .reclaim_keep_page_ns
                .map_or(0, |v| v.max(0.0).round() as u64),
            reclaim_check: o
                .reclaim_keep_page_ns
                .map_or(0, |v| v.max(0.0).round() as u64)
                .min(
                    o.reclaim_scan_page_ns
                        .map_or(0, |v| v.max(0.0).round() as u64),
                ),
            readahead_page: o.readahead_page_ns.map_or(0, |v| v.max(0.0).round() as u64),
            remote_flush: o.remote_flush_ns.map_or(0, |v| v.max(0.0).round() as u64),
            remote_flush_idle: o.remote_flush_idle_ns.map(|v| v.max(0.0).round() as u64),
            remote_flush_target: o.remote_flush_target_ns.map(|v| v.max(0.0).round() as u64),
            tab_touch: o.tab_touch_ns.map_or(0, |v| v.max(0.0).round() as u64),
            tab_fill: match (
                o.tab_fill_same_page_ns,
                o.tab_fill_copy_page_ns,
                o.tab_fill_fresh_page_ns,
            ) {
                (Some(same), Some(copy), Some(fresh)) => Some(FillCosts {
                    same_filled: same.max(0.0).round() as u64,
                    copy: copy.max(0.0).round() as u64,
                    fresh: fresh.max(0.0).round() as u64,
                }),
                _ => None,
            },
            accessed_bit: o.accessed_bit_ns.map_or(0, |v| v.max(0.0).round() as u64),
            tab_second: o.tab_second_ns.map_or(0, |v| v.max(0.0).round() as u64),
            tab_second_by_idle: o
                .tab_second_by_idle
                .as_deref()
                .map(nvmswap_core::mapped_access::TabSecondByIdle::new)
                .transpose()
                .map_err(|e| SimError::Config(format!("costs.tab_second_by_idle: {e}")))?,
            driver: match (
                o.driver_touch_set_ns,
                o.driver_tell_local_ns,
                o.driver_tell_remote_ns,
                o.driver_answer_ns,
            ) {
                (Some(set), Some(local), Some(remote), Some(answer)) => Some(DriverCosts {
                    touch_set: set.max(0.0).round() as u64,
                    tell_local: local.max(0.0).round() as u64,
                    tell_remote: remote.max(0.0).round() as u64,
                    answer: answer.max(0.0).round() as u64,
                }),
                _ => None,
            },
            cpu_wake: o.cpu_wake_ns.map_or(0, |v| v.max(0.0).round() as u64),
            cpu_wake_curve: o.cpu_wake_curve.clone(),
            cpu_halt_poll: o.cpu_halt_poll.clone(),
            other_processes: match (o.other_process_runs_per_s, o.other_process_run_ns) {
                (Some(rate), Some(run)) if rate > 0.0 => Some(crate::tlb::OtherProcesses {
                    period: (NS_PER_S as f64 / rate).round().max(1.0) as u64,
                    run: run.max(0.0).round() as u64,
                }),
                _ => None,
            },
            zswap_store: o.zswap_store_page_ns,
            zram_store: o.zram_store_page_ns,
            pageout_call: o.pageout_call_ns(),
            compress: LatencyDist::new(
                o.compress_mean_ns.unwrap_or(compress.mean_ns),
                o.compress_p99_ns.unwrap_or(compress.p99_ns),
            ),
            decompress: LatencyDist::new(
                o.decompress_mean_ns.unwrap_or(decompress.mean_ns),
                o.decompress_p99_ns.unwrap_or(decompress.p99_ns),
            ),
        })
    }

    /// A tab's own work when its background second begins, apart from its touches, after it
    /// idled `idle_ns` since it last ran (`None`: it never ran): `tab_second` plus the idle
    /// curve's extra there (the curve's longest point for a tab that never ran), ns; and that
    /// extra alone.
    pub fn tab_second_after(&self, idle_ns: Option<u64>) -> (u64, u64) {
        let extra = self.tab_second_by_idle.as_ref().map_or(0, |c| {
            c.extra_ns(idle_ns.unwrap_or(u64::MAX)).max(0.0).round() as u64
        });
        (self.tab_second + extra, extra)
    }

    /// How long a task woken onto a CPU that has idled `idle_ns` waits for it to run: the
    /// calibrated curve's median there where the configuration has one, else `cpu_wake`
    /// whatever the idle time.
    pub fn idle_cpu_wake(&self, idle_ns: u64) -> u64 {
        match &self.cpu_wake_curve {
            Some(curve) => nvmswap_core::device::wake_wait_ns(curve, idle_ns as f64)
                .max(0.0)
                .round() as u64,
            None => self.cpu_wake,
        }
    }

    /// Compressing a page of `size` compressed bytes (0: same-filled, only scanned).
    pub fn compress(&self, size: u64, rng: &mut ChaCha8Rng) -> u64 {
        if size == 0 {
            SAME_FILLED_NS
        } else {
            self.compress.sample(rng)
        }
    }

    /// Storing a page of `size` compressed bytes into zswap's pool: see [`Costs::pool_store`].
    pub fn zswap_store(&self, size: u64, rng: &mut ChaCha8Rng) -> Spent {
        self.pool_store(self.zswap_store, size, rng)
    }

    /// Storing a page of `size` compressed bytes into zram: see [`Costs::pool_store`].
    pub fn zram_store(&self, size: u64, rng: &mut ChaCha8Rng) -> Spent {
        self.pool_store(self.zram_store, size, rng)
    }

    /// A pool store's CPU. Without a calibrated path, the compression alone (reclaim adds
    /// `RECLAIM_PAGE_NS` for the unmap and the swap cache). With one (`path_ns`: the whole
    /// swap-out of a page of the probe's content as `nvmswap linux calibrate` timed it with
    /// MADV_PAGEOUT), `max(path_ns - pageout_call - compress mean, 0) + compress(size)`: the
    /// path around the compressor as measured, less the call's own walk and isolation that
    /// reclaim does not do, plus this page's own compression, drawn as without (so the
    /// content's variation stays and the run's draws are the same), and nothing else
    /// (`Spent::whole_path`).
    fn pool_store(&self, path_ns: Option<f64>, size: u64, rng: &mut ChaCha8Rng) -> Spent {
        let compress = self.compress(size, rng);
        match path_ns {
            None => Spent {
                cpu: compress,
                ..Spent::default()
            },
            Some(path) => Spent {
                cpu: (path - self.pageout_call - self.compress.mean_ns)
                    .max(0.0)
                    .round() as u64
                    + compress,
                wait: 0,
                whole_path: true,
            },
        }
    }

    /// Decompressing a page of `size` compressed bytes (0: same-filled, filled again).
    pub fn decompress(&self, size: u64, rng: &mut ChaCha8Rng) -> u64 {
        if size == 0 {
            SAME_FILLED_NS
        } else {
            self.decompress.sample(rng)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::FillCosts;

    #[test]
    fn a_pages_fill_is_its_copies_plus_its_fresh_share_of_the_fresh_chunks_cost() {
        let fill = FillCosts {
            same_filled: 400,
            copy: 1_000,
            fresh: 2_000,
        };
        // A same-filled page, zero or another word, whatever the tab's ratio.
        assert_eq!(fill.page_ns(0, false, 0.5), 400);
        assert_eq!(fill.page_ns(17, true, 0.5), 400);
        // core's table: ratio 0.4 of an LZ77 compressor is about 0.31 of the chunks fresh,
        // 0.575 is 0.5 of them, and 1.1 all.
        assert_eq!(fill.page_ns(1_000, false, 0.575), 1_500);
        assert_eq!(fill.page_ns(1_000, false, 1.1), 2_000);
        assert_eq!(fill.page_ns(1_000, false, 0.0), 1_000);
        let share = nvmswap_core::workload::content::fresh_share_for_ratio(0.4);
        assert_eq!(
            fill.page_ns(1_000, false, 0.4),
            1_000 + (1_000.0 * share).round() as u64
        );
    }
}
