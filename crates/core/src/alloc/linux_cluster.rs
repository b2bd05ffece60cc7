//! The Linux kernel's swap-slot allocator for SSD-like swap areas (mm/swapfile.c, seed 002
//! "swap slot allocation" slides): the area is cut into clusters of 256 slots
//! (`SWAPFILE_CLUSTER`); each CPU owns a current cluster and fills it sequentially; when it is
//! exhausted the CPU takes a wholly free cluster (free-cluster list, FIFO so freed clusters rest
//! before reuse), and only when there is none does it scan partly used clusters for freed slots
//! (SSD mode does not reuse freed slots until it must). No remapping: slot == physical slot, so
//! slots held by long-lived pages ("zombies", seed 001 §3.3) are simply never written again and
//! the remaining slots absorb all writes.
//!
//! This is our model of the mechanism, not the kernel code: it omits swap priorities, the
//! HDD path (`scan_swap_map_slots` without clusters), discard and multi-order (mTHP) clusters.

use super::{PhysSlot, Placement, Slot, SlotAllocator};
use std::collections::VecDeque;

/// Slots per cluster: `SWAPFILE_CLUSTER` in mm/swapfile.c (seed 002: "a cluster (1MB size)").
pub const CLUSTER_SLOTS: u32 = 256;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ClusterState {
    /// Every slot free, on the free list.
    Free,
    /// Some slots free, on the non-full list (the kernel's nonfull/frag lists).
    NonFull,
    /// No slot free, on no list.
    Full,
    /// Some CPU's current cluster.
    Current,
}

pub struct LinuxCluster {
    used: Vec<bool>,
    cluster_used: Vec<u32>,
    state: Vec<ClusterState>,
    // Lists hold cluster numbers; an entry whose cluster has since changed state is stale and
    // skipped when popped, which keeps every update O(1).
    free_list: VecDeque<u32>,
    nonfull_list: VecDeque<u32>,
    /// Per CPU: (current cluster, next offset to try).
    percpu: Vec<Option<(u32, u32)>>,
    in_use: u32,
}

impl LinuxCluster {
    pub fn new(slots: u32, cpus: usize) -> Self {
        let clusters = slots.div_ceil(CLUSTER_SLOTS);
        LinuxCluster {
            used: vec![false; slots as usize],
            cluster_used: vec![0; clusters as usize],
            state: vec![ClusterState::Free; clusters as usize],
            free_list: (0..clusters).collect(),
            nonfull_list: VecDeque::new(),
            percpu: vec![None; cpus.max(1)],
            in_use: 0,
        }
    }

    fn cluster_range(&self, c: u32) -> (u32, u32) {
        let start = c * CLUSTER_SLOTS;
        (start, (start + CLUSTER_SLOTS).min(self.used.len() as u32))
    }

    /// First free slot in cluster `c` at or after `from`.
    fn scan(&self, c: u32, from: u32) -> Option<u32> {
        let (start, end) = self.cluster_range(c);
        (start.max(from)..end).find(|&s| !self.used[s as usize])
    }

    fn take_cluster(&mut self) -> Option<u32> {
        while let Some(c) = self.free_list.pop_front() {
            if self.state[c as usize] == ClusterState::Free {
                return Some(c);
            }
        }
        while let Some(c) = self.nonfull_list.pop_front() {
            if self.state[c as usize] == ClusterState::NonFull {
                return Some(c);
            }
        }
        None
    }

    /// Last resort, like the kernel's slow path: a free slot in another CPU's current cluster.
    fn steal_from_other_cpus(&mut self) -> Option<Placement> {
        let currents: Vec<u32> = self.percpu.iter().flatten().map(|&(c, _)| c).collect();
        for c in currents {
            let start = self.cluster_range(c).0;
            if let Some(s) = self.scan(c, start) {
                self.used[s as usize] = true;
                self.cluster_used[c as usize] += 1;
                self.in_use += 1;
                return Some(Placement {
                    slot: s,
                    phys: s,
                    migrations: Vec::new(),
                });
            }
        }
        None
    }

    fn after_release(&mut self, c: u32) {
        // A cluster a CPU let go of goes where its occupancy says.
        let (start, end) = self.cluster_range(c);
        let used = self.cluster_used[c as usize];
        let st = if used == 0 {
            self.free_list.push_back(c);
            ClusterState::Free
        } else if used == end - start {
            ClusterState::Full
        } else {
            self.nonfull_list.push_back(c);
            ClusterState::NonFull
        };
        self.state[c as usize] = st;
    }
}

impl SlotAllocator for LinuxCluster {
    fn name(&self) -> &'static str {
        "linux-cluster"
    }
    fn capacity(&self) -> u32 {
        self.used.len() as u32
    }
    fn in_use(&self) -> u32 {
        self.in_use
    }

    fn allocate(&mut self, cpu: usize) -> Option<Placement> {
        let cpu = cpu % self.percpu.len();
        loop {
            let (c, next) = match self.percpu[cpu] {
                Some(cur) => cur,
                None => {
                    let Some(c) = self.take_cluster() else {
                        return self.steal_from_other_cpus();
                    };
                    self.state[c as usize] = ClusterState::Current;
                    let start = self.cluster_range(c).0;
                    self.percpu[cpu] = Some((c, start));
                    (c, start)
                }
            };
            match self.scan(c, next) {
                Some(s) => {
                    self.used[s as usize] = true;
                    self.cluster_used[c as usize] += 1;
                    self.in_use += 1;
                    self.percpu[cpu] = Some((c, s + 1));
                    return Some(Placement {
                        slot: s,
                        phys: s,
                        migrations: Vec::new(),
                    });
                }
                None => {
                    // Sequential fill reached the end: drop the cluster, take another.
                    self.percpu[cpu] = None;
                    self.after_release(c);
                }
            }
        }
    }

    fn free(&mut self, slot: Slot) {
        assert!(
            self.used[slot as usize],
            "freeing slot {slot} that holds no page"
        );
        self.used[slot as usize] = false;
        self.in_use -= 1;
        let c = slot / CLUSTER_SLOTS;
        self.cluster_used[c as usize] -= 1;
        match self.state[c as usize] {
            ClusterState::Current => {}
            ClusterState::Full | ClusterState::NonFull => {
                if self.cluster_used[c as usize] == 0 {
                    self.state[c as usize] = ClusterState::Free;
                    self.free_list.push_back(c);
                } else if self.state[c as usize] == ClusterState::Full {
                    self.state[c as usize] = ClusterState::NonFull;
                    self.nonfull_list.push_back(c);
                }
            }
            ClusterState::Free => unreachable!("a free cluster holds no used slot"),
        }
    }

    fn physical(&self, slot: Slot) -> PhysSlot {
        slot
    }
}
