//! Reclaim over core's two-list LRU (`nvmswap_core::lru`, with refault detection): kswapd on
//! its own clock from the low to the high watermark, direct reclaim by the allocating task
//! below min, and a memory cgroup's charge that reclaims when the limit is reached. Each
//! reclaimed page goes to the swap back-end (backend/).

use nvmswap_core::SWAP_CLUSTER_MAX;

use crate::backend::Spent;
use crate::costs::RECLAIM_PAGE_NS;
use crate::engine::{Loc, Machine};
use crate::observe::{Actor, CpuKind, Event, ReclaimKind, KSWAPD_PID};

/// kswapd's state: whether it is awake, and its own clock.
#[derive(Debug, Default)]
pub struct Kswapd {
    pub running: bool,
    pub at: u64,
}

impl Machine<'_> {
    pub fn kswapd_actor(&self) -> Actor {
        Actor {
            cpu: self.cfg.cpus - 1,
            pid: KSWAPD_PID,
        }
    }

    /// kswapd reclaims, page by page on its own clock, until `until` or the high watermark.
    pub fn run_kswapd_until(&mut self, until: u64) {
        while self.kswapd.running && self.kswapd.at < until {
            if self.free_frames() >= self.mem.marks.high {
                self.kswapd.running = false;
                break;
            }
            let t = self.kswapd.at;
            let kswapd = self.kswapd_actor();
            match self.reclaim_one(t, kswapd, ReclaimKind::Kswapd) {
                Some(spent) => {
                    self.kswapd.at += spent.total().max(1);
                    self.obs.emit(Event::Cpu {
                        t,
                        actor: kswapd,
                        kind: CpuKind::Kernel,
                        ns: spent.cpu,
                    });
                }
                None => self.kswapd.running = false,
            }
        }
    }

    /// Takes one free frame for the foreground, reclaiming as the kernel would. Returns the
    /// foreground's extra latency (direct reclaim), or None when nothing can be reclaimed.
    pub fn allocate_frame(&mut self) -> Option<u64> {
        if self.mem.memcg_limit {
            return self.charge_frame();
        }
        if self.free_frames() <= self.mem.marks.low && !self.kswapd.running {
            self.kswapd.running = true;
            self.kswapd.at = self.kswapd.at.max(self.now);
            self.obs.emit(Event::KswapdWake { t: self.now });
        }
        // kswapd is behind: the allocating task reclaims a batch itself.
        let stall = if self.free_frames() <= self.mem.marks.min {
            self.direct_reclaim()
        } else {
            0
        };
        self.take_frame(stall)
    }

    /// A frame under a memory cgroup's limit: nobody reclaims in the background, so a charge
    /// that finds the limit reached reclaims a batch itself first.
    fn charge_frame(&mut self) -> Option<u64> {
        let stall = if self.free_frames() == 0 {
            self.direct_reclaim()
        } else {
            0
        };
        self.take_frame(stall)
    }

    /// The foreground reclaims up to `SWAP_CLUSTER_MAX` pages; returns how long it took.
    fn direct_reclaim(&mut self) -> u64 {
        let mut stall = 0;
        let me = self.foreground();
        self.obs.emit(Event::DirectReclaim {
            t: self.now,
            actor: me,
        });
        for _ in 0..SWAP_CLUSTER_MAX {
            let t = self.now + stall;
            match self.reclaim_one(t, me, ReclaimKind::Direct) {
                Some(spent) => {
                    stall += spent.total();
                    self.obs.emit(Event::Cpu {
                        t,
                        actor: me,
                        kind: CpuKind::Kernel,
                        ns: spent.cpu,
                    });
                }
                None => break,
            }
        }
        stall
    }

    /// Hands out a free frame after `stall` of reclaim, or None when there is none.
    fn take_frame(&mut self, stall: u64) -> Option<u64> {
        if self.free_frames() == 0 {
            return None;
        }
        self.mem.resident += 1;
        self.mem.allocs_since_check += 1;
        Some(stall)
    }

    /// Evicts the LRU's next victim at time `t`.
    pub(crate) fn reclaim_one(&mut self, t: u64, by: Actor, kind: ReclaimKind) -> Option<Spent> {
        let p = self.lru.pick_victim()?;
        debug_assert_eq!(self.loc[p as usize], Loc::Resident);
        match self.swap_out(p, t, by) {
            Some(mut spent) => {
                self.lru.evicted(p);
                spent.cpu += RECLAIM_PAGE_NS;
                self.obs.emit(Event::Reclaimed {
                    t,
                    actor: by,
                    kind,
                    page: p,
                    cpu_ns: spent.cpu,
                    wait_ns: spent.wait,
                });
                Some(spent)
            }
            None => {
                self.lru.put_back(p);
                None
            }
        }
    }

    /// Moves a resident page to the swap back-end at `t`, or None if the back-end is full.
    fn swap_out(&mut self, p: u32, t: u64, by: Actor) -> Option<Spent> {
        let spent = self.backend.store(p, t, by, crate::engine::env!(self))?;
        self.mem.resident -= 1;
        self.loc[p as usize] = Loc::Out;
        Some(spent)
    }
}
