//! Memory: DRAM frames for the tabs' anonymous pages, the zone watermarks, and the free figure
//! that reclaim and Chrome's discard rule read. A compressed pool's bytes (zram, zswap) take
//! frames too, and so does what each open tab's process holds beyond its pages (its page tables
//! and kernel memory, `costs.tab_charged_*`). With `memcg_limit` the tabs run in a memory
//! cgroup whose limit is the frames.

use nvmswap_core::config::{SystemConfig, Watermarks};
use nvmswap_core::discard::MemorySnapshot;
use nvmswap_core::PAGE_SIZE;

use crate::engine::Machine;

pub struct Memory {
    /// Frames for the tabs: DRAM less what the OS holds.
    pub frames: u64,
    /// Frames the tabs' pages hold.
    pub resident: u64,
    pub marks: Watermarks,
    /// The tabs run under a memory cgroup's limit (no watermarks, no kswapd).
    pub memcg_limit: bool,
    /// Frames handed out since the driver last checked Chrome's discard rule.
    pub allocs_since_check: u32,
    /// What the open tabs' processes hold beyond their pages (`costs.tab_charged_*`: page
    /// tables, kernel stacks and structures), bytes; it takes frames as the pool does.
    pub tab_charged_bytes: u64,
}

impl Memory {
    pub fn new(cfg: &SystemConfig) -> Self {
        Memory {
            frames: (cfg.dram_bytes - cfg.os_reserved_bytes) / PAGE_SIZE,
            resident: 0,
            marks: cfg.watermarks(),
            memcg_limit: cfg.memcg_limit,
            allocs_since_check: 0,
            tab_charged_bytes: 0,
        }
    }

    /// Free frames when a compressed pool holds `pool_bytes`.
    pub fn free_frames(&self, pool_bytes: u64) -> u64 {
        self.frames.saturating_sub(
            self.resident
                + pool_bytes.div_ceil(PAGE_SIZE)
                + self.tab_charged_bytes.div_ceil(PAGE_SIZE),
        )
    }
}

impl Machine<'_> {
    /// Free frames: less the pool (where charged) and the pages under reclaim's writeback.
    pub fn free_frames(&self) -> u64 {
        self.mem
            .free_frames(self.backend.charged_pool_bytes())
            .saturating_sub(self.backend.frames_held())
    }

    /// What Chrome's discard rule reads (core::discard).
    pub fn snapshot(&self) -> MemorySnapshot {
        MemorySnapshot {
            total_ram: self.cfg.dram_bytes,
            free: self.free_frames() * PAGE_SIZE,
            // A cgroup has no watermarks: the linux substrate reads reserved as 0 there too.
            reserved: if self.mem.memcg_limit {
                0
            } else {
                self.mem.marks.high * PAGE_SIZE
            },
            clean_file: 0,
            anon: self.mem.resident * PAGE_SIZE,
            swap_free: self.backend.swap_free_pages() * PAGE_SIZE,
            swap_cached: self.backend.swap_cached_pages() * PAGE_SIZE,
        }
    }
}
