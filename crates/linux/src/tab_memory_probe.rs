//! What a tab process costs its memory cgroup beyond its own pages.
//!
//! A linux run's tabs are processes forked into the run's memory cgroup ([`crate::tab`]), and the
//! cgroup's charge, which its limit caps, holds more than the tabs' pages: each process's kernel
//! memory (its page tables, which stay while a page is swapped out since the PTE holds the swap
//! entry; its kernel stack, task and mm structures: `__GFP_ACCOUNT` allocations, counted in v1's
//! `memory.kmem.usage_in_bytes` and v2's `kernel`), the pages of its own the child writes after
//! the fork (anonymous, beside the tab's), and the shared fault buffer it writes its latencies
//! into (shmem, charged to the child that first touches it: `cache` in v1, `shmem` in v2). In a
//! run at the limit these leave the tabs that much less room, so more of them is in swap: on a
//! linux-zswap run at x0.1 the swap area held 1-2 MiB more than sim's at the same tab count
//! (docs/experiments/validation.md, "What a tab costs its cgroup beyond its pages").
//!
//! The probe: a memory cgroup with room for everything (no swap, no reclaim), tabs spawned into
//! it as a run spawns them ([`TabProcess::spawn`]), [`PROBE_TABS`] of each of the
//! [`PROBE_PAGES`] sizes at load, and the cgroup's anonymous, file and kernel charges read
//! before and after each size's tabs, once the kernel's per-CPU statistics were folded in
//! ([`STATS_SETTLE`]). A size's tabs' charge less their pages, per tab, is its overhead; the
//! line through the two sizes' overheads is `fixed + per page x pages`
//! (`costs.tab_charged_fixed_bytes`, `costs.tab_charged_bytes_per_page`), which sim charges to
//! the cgroup for each open tab.
//!
//! What is not in it: the cgroup's per-CPU charge stock (up to `MEMCG_CHARGE_BATCH`, 64 pages, a
//! CPU charged ahead and not yet used, include/linux/memcontrol.h), which `memory.usage_in_bytes`
//! counts but no tab holds; it comes and goes with the charges, by at most 64 pages a CPU.

use std::time::Duration;

use nvmswap_core::workload::life::GROWTH_LIMIT;
use nvmswap_core::PAGE_SIZE;

use crate::config::LinuxConfig;
use crate::error::LinuxError;
use crate::setup::Setup;
use crate::tab::{TabProcess, TabShape};

/// Tabs of each size: the charges are read once per size, so a charge's rounding (a page of a
/// per-CPU object stock) is shared by this many tabs.
pub const PROBE_TABS: u32 = 16;
/// Pages at load of the two sizes (1 and 16 MiB): far enough apart that the per-page part
/// (about 1/512 of the pages for their page tables, as much for the fault buffer) shows.
pub const PROBE_PAGES: [u32; 2] = [256, 4096];
/// Long enough for the kernel's periodic flush of the per-CPU memory statistics (every 2 s,
/// `FLUSH_TIME` in mm/memcontrol.c), so that memory.stat has every charge in it.
pub const STATS_SETTLE: Duration = Duration::from_millis(2_500);
/// The probe cgroup's limit: room for every tab with no reclaim.
const PROBE_LIMIT_BYTES: u64 = 1 << 30;

/// A cgroup's charge by kind, in bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Charged {
    pub anon: u64,
    pub file: u64,
    pub kernel: u64,
}

impl Charged {
    fn total(&self) -> u64 {
        self.anon + self.file + self.kernel
    }

    fn less(&self, before: &Charged) -> Charged {
        Charged {
            anon: self.anon.saturating_sub(before.anon),
            file: self.file.saturating_sub(before.file),
            kernel: self.kernel.saturating_sub(before.kernel),
        }
    }
}

/// One size's tabs: what they added to the cgroup's charge, beside their own pages.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct SizePoint {
    pub pages: u32,
    pub tabs: u32,
    /// The charge the size's tabs added, by kind.
    pub added: Charged,
}

impl SizePoint {
    /// Bytes per tab beyond its pages.
    pub fn overhead_per_tab(&self) -> f64 {
        let own = u64::from(self.tabs) * u64::from(self.pages) * PAGE_SIZE;
        (self.added.total() as f64 - own as f64) / f64::from(self.tabs)
    }
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct TabMemoryProbe {
    pub points: Vec<SizePoint>,
}

impl TabMemoryProbe {
    /// The line through the sizes' overheads: (fixed bytes, bytes per page); None with fewer
    /// than two sizes. Each part at least 0: a charge cannot be negative.
    pub fn fit(&self) -> Option<(f64, f64)> {
        let (a, b) = (self.points.first()?, self.points.last()?);
        if a.pages == b.pages {
            return None;
        }
        let per_page = ((b.overhead_per_tab() - a.overhead_per_tab())
            / (f64::from(b.pages) - f64::from(a.pages)))
        .max(0.0);
        let fixed = (a.overhead_per_tab() - per_page * f64::from(a.pages)).max(0.0);
        Some((fixed, per_page))
    }

    /// The costs file's two keys, with where they come from; empty without a fit.
    pub fn costs_toml(&self) -> String {
        let Some((fixed, per_page)) = self.fit() else {
            return String::new();
        };
        let mut out = String::from(
            "# Memory a tab process holds in its cgroup beyond its own pages (page tables, kernel\n\
             # stack and structures, its own writes after the fork, its fault buffer), by the tab\n\
             # memory probe: tabs spawned as a run spawns them into a cgroup with room for all;\n\
             # the charge (anon + file + kernel) they added less their pages, per tab:\n",
        );
        for p in &self.points {
            out.push_str(&format!(
                "#   {} tabs of {} pages: {:.0} bytes (kernel {:.0})\n",
                p.tabs,
                p.pages,
                p.overhead_per_tab(),
                p.added.kernel as f64 / f64::from(p.tabs)
            ));
        }
        out.push_str("# The line through them: a fixed part and one per page of the tab.\n");
        out.push_str(&format!(
            "tab_charged_fixed_bytes = {}\ntab_charged_bytes_per_page = {}\n",
            fixed.round(),
            (per_page * 1000.0).round() / 1000.0
        ));
        out
    }
}

/// The cgroup's charge by kind (v1: `rss` + `rss_huge`, `cache`, `memory.kmem.usage_in_bytes`;
/// v2: `anon`, `file`, `kernel` of memory.stat).
fn charged(cg: &std::path::Path) -> Result<Charged, LinuxError> {
    let st = crate::cgroup::stat(cg)?;
    let get = |k: &str| st.get(k).copied().unwrap_or(0);
    if crate::cgroup::is_v1() {
        let kmem = crate::sysfs::read_trimmed(cg.join("memory.kmem.usage_in_bytes"))?;
        Ok(Charged {
            anon: get("rss") + get("rss_huge"),
            file: get("cache"),
            kernel: kmem.parse().map_err(|_| LinuxError::Kernel {
                what: "memory.kmem.usage_in_bytes".into(),
                detail: format!("not a number: {kmem}"),
            })?,
        })
    } else {
        Ok(Charged {
            anon: get("anon"),
            file: get("file"),
            kernel: get("kernel"),
        })
    }
}

/// Runs the probe (see the module text); the cgroup is undone whatever happens.
pub fn probe(seed: u64, state_path: &std::path::Path) -> Result<TabMemoryProbe, LinuxError> {
    let cfg = LinuxConfig::cgroup_only("calibrate-tab-memory", PROBE_LIMIT_BYTES);
    let setup = Setup::apply(&cfg, state_path)?;
    let result = (|| {
        let procs = crate::calibrate::procs_file(&setup.cgroup)?;
        let site = &nvmswap_core::workload::tabs::default_sites()[0];
        let mut tabs = Vec::new();
        let mut points = Vec::new();
        std::thread::sleep(STATS_SETTLE);
        let mut before = charged(&setup.cgroup)?;
        for &pages in &PROBE_PAGES {
            for _ in 0..PROBE_TABS {
                let mut shape = TabShape {
                    load_cpu_ns: 0,
                    render_cpu_ns: 0,
                    ..TabShape::of(site, 1.0)
                };
                shape.life.pages = pages;
                shape.life.max_pages = pages * GROWTH_LIMIT;
                let tab = tabs.len() as u32;
                let (proc_, loaded) = TabProcess::spawn(None, &procs, shape, seed, tab)?;
                if loaded.is_none() {
                    return Err(LinuxError::Worker(format!(
                        "tab memory probe: tab {tab} died while loading"
                    )));
                }
                tabs.push(proc_);
            }
            std::thread::sleep(STATS_SETTLE);
            let after = charged(&setup.cgroup)?;
            points.push(SizePoint {
                pages,
                tabs: PROBE_TABS,
                added: after.less(&before),
            });
            before = after;
        }
        drop(tabs);
        Ok(TabMemoryProbe { points })
    })();
    let diffs = setup.restore()?;
    if !diffs.is_empty() {
        return Err(LinuxError::Restore(diffs.join("; ")));
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(pages: u32, tabs: u32, overhead: u64) -> SizePoint {
        let own = u64::from(tabs) * u64::from(pages) * PAGE_SIZE;
        SizePoint {
            pages,
            tabs,
            added: Charged {
                anon: own + u64::from(tabs) * overhead / 2,
                file: 0,
                kernel: u64::from(tabs) * overhead / 2,
            },
        }
    }

    #[test]
    fn the_fit_is_the_line_through_the_two_sizes_overheads() {
        // 40,000 bytes fixed and 16 a page: 44,096 at 256 pages, 105,536 at 4,096.
        let p = TabMemoryProbe {
            points: vec![point(256, 16, 44_096), point(4096, 16, 105_536)],
        };
        assert_eq!(p.points[0].overhead_per_tab(), 44_096.0);
        let (fixed, per_page) = p.fit().unwrap();
        assert!((fixed - 40_000.0).abs() < 1e-6, "{fixed}");
        assert!((per_page - 16.0).abs() < 1e-9, "{per_page}");
        let toml = p.costs_toml();
        assert!(
            toml.contains("\ntab_charged_fixed_bytes = 40000\n"),
            "{toml}"
        );
        assert!(
            toml.contains("\ntab_charged_bytes_per_page = 16\n"),
            "{toml}"
        );
        assert!(
            toml.contains("\n#   16 tabs of 256 pages: 44096 bytes (kernel 22048)\n"),
            "{toml}"
        );
    }

    #[test]
    fn a_part_that_came_out_below_zero_is_zero_and_one_size_fits_nothing() {
        // The larger tabs cost less per tab than the smaller: no per-page part.
        let p = TabMemoryProbe {
            points: vec![point(256, 16, 50_000), point(4096, 16, 48_000)],
        };
        assert_eq!(p.fit(), Some((50_000.0, 0.0)));
        let one = TabMemoryProbe {
            points: vec![point(256, 16, 50_000)],
        };
        assert_eq!(one.fit(), None);
        assert_eq!(one.costs_toml(), "");
    }
}
