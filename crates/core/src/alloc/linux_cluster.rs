//! The Linux swap-slot allocator, as seed 002 (slides "swap slot allocation") and mm/swapfile.c
//! describe it.
//!
//! SSD mode (the default for non-rotational devices): the area is cut into clusters of 256 slots
//! (1 MiB of 4 KiB pages). Each CPU owns a current cluster and fills it sequentially. A used-up
//! cluster is replaced by the first cluster on the free-cluster list; freed slots are not reused
//! while whole free clusters remain ("don't reuse obsolete pages until the swap device is full",
//! seed 002). A cluster whose last page is freed goes to the tail of that list. When no free
//! cluster is left, the allocator falls back to scanning the whole map from where the last scan
//! stopped (the kernel's `cluster_next`) for any free slot, which reuses freed slots in place.
//!
//! Rotational mode has no clusters: next-fit from the last position, keeping swap-out sequential.
//!
//! The allocator does no wear levelling: a slot's physical place is its number.

use std::collections::VecDeque;

use super::{AllocError, PhysSlot, Placement, Slot, SlotAllocator};

/// Slots per cluster: SWAPFILE_CLUSTER in mm/swapfile.c, 256 pages = 1 MiB (seed 002).
pub const CLUSTER_SLOTS: u32 = 256;

pub struct LinuxCluster {
    used: Vec<bool>,
    in_use: u32,
    ssd: bool,
    /// Used slots per cluster.
    cluster_used: Vec<u16>,
    /// Clusters with no used slot that no CPU owns, in the order they became free.
    free_clusters: VecDeque<u32>,
    on_free_list: Vec<bool>,
    /// Per-CPU current cluster and the next offset in it to try.
    current: Vec<Option<(u32, u32)>>,
    /// Where the next whole-map scan starts.
    scan_next: u32,
}

impl LinuxCluster {
    pub fn new(slots: u32, cpus: usize, ssd: bool) -> Result<Self, AllocError> {
        if slots == 0 {
            return Err(AllocError::NoSlots);
        }
        if cpus == 0 {
            return Err(AllocError::NoCpus);
        }
        let clusters = slots.div_ceil(CLUSTER_SLOTS);
        Ok(LinuxCluster {
            used: vec![false; slots as usize],
            in_use: 0,
            ssd,
            cluster_used: vec![0; clusters as usize],
            free_clusters: (0..clusters).collect(),
            on_free_list: vec![true; clusters as usize],
            current: vec![None; cpus],
            scan_next: 0,
        })
    }

    fn cluster_range(&self, c: u32) -> std::ops::Range<u32> {
        c * CLUSTER_SLOTS..((c + 1) * CLUSTER_SLOTS).min(self.used.len() as u32)
    }

    fn take(&mut self, s: Slot) -> Placement {
        debug_assert!(!self.used[s as usize]);
        self.used[s as usize] = true;
        self.in_use += 1;
        let c = s / CLUSTER_SLOTS;
        self.cluster_used[c as usize] += 1;
        if self.on_free_list[c as usize] {
            // Only the whole-map scan can land in a listed free cluster; it is no longer free.
            self.on_free_list[c as usize] = false;
            self.free_clusters.retain(|&x| x != c);
        }
        Placement {
            slot: s,
            phys: s,
            migrations: Vec::new(),
        }
    }

    fn owned_by_a_cpu(&self, c: u32) -> bool {
        self.current
            .iter()
            .any(|cur| matches!(cur, Some((owned, _)) if *owned == c))
    }

    fn release_if_empty(&mut self, c: u32) {
        if self.cluster_used[c as usize] == 0
            && !self.on_free_list[c as usize]
            && !self.owned_by_a_cpu(c)
        {
            self.on_free_list[c as usize] = true;
            self.free_clusters.push_back(c);
        }
    }

    /// Next-fit over the whole map from `scan_next`.
    fn scan(&mut self) -> Option<Placement> {
        let n = self.used.len() as u32;
        for i in 0..n {
            let s = (self.scan_next + i) % n;
            if !self.used[s as usize] {
                self.scan_next = (s + 1) % n;
                return Some(self.take(s));
            }
        }
        None
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
        if self.in_use == self.capacity() {
            return None;
        }
        if !self.ssd {
            return self.scan();
        }
        let cpu = cpu % self.current.len();
        loop {
            if let Some((c, offset)) = self.current[cpu] {
                let range = self.cluster_range(c);
                if let Some(s) = (range.start + offset..range.end).find(|&s| !self.used[s as usize])
                {
                    self.current[cpu] = Some((c, s + 1 - range.start));
                    return Some(self.take(s));
                }
                self.current[cpu] = None;
                self.release_if_empty(c);
            }
            match self.free_clusters.pop_front() {
                Some(c) => {
                    self.on_free_list[c as usize] = false;
                    self.current[cpu] = Some((c, 0));
                }
                None => return self.scan(),
            }
        }
    }

    fn free(&mut self, slot: Slot) {
        assert!(
            self.used[slot as usize],
            "linux-cluster: slot {slot} freed while free"
        );
        self.used[slot as usize] = false;
        self.in_use -= 1;
        let c = slot / CLUSTER_SLOTS;
        self.cluster_used[c as usize] -= 1;
        if self.ssd {
            self.release_if_empty(c);
        }
    }

    fn physical(&self, slot: Slot) -> PhysSlot {
        slot
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_cpu_fills_its_own_cluster_sequentially() {
        let mut lc = LinuxCluster::new(4 * CLUSTER_SLOTS, 2, true).unwrap();
        let a: Vec<_> = (0..3).map(|_| lc.allocate(0).unwrap().slot).collect();
        let b: Vec<_> = (0..3).map(|_| lc.allocate(1).unwrap().slot).collect();
        assert_eq!(a, vec![0, 1, 2]);
        assert_eq!(b, vec![256, 257, 258]);
    }

    #[test]
    fn freed_slots_wait_until_free_clusters_run_out() {
        let mut lc = LinuxCluster::new(2 * CLUSTER_SLOTS, 1, true).unwrap();
        let first = lc.allocate(0).unwrap().slot;
        let second = lc.allocate(0).unwrap().slot;
        lc.free(first);
        // Cluster 0 still has slot 1 in use; the CPU goes on sequentially, then to cluster 1.
        let rest: Vec<_> = (0..2 * CLUSTER_SLOTS - 1)
            .map(|_| lc.allocate(0).unwrap().slot)
            .collect();
        assert_eq!(rest[0], 2);
        assert_eq!(rest[254], 256);
        // Only when every other slot is taken does the whole-map scan reuse the freed one.
        assert_eq!(rest.iter().position(|&s| s == first), Some(rest.len() - 1));
        assert!(lc.allocate(0).is_none());
        assert_eq!(second, 1);
    }

    #[test]
    fn rotational_mode_is_next_fit() {
        let mut lc = LinuxCluster::new(8, 1, false).unwrap();
        for _ in 0..4 {
            lc.allocate(0).unwrap();
        }
        lc.free(1);
        assert_eq!(lc.allocate(0).unwrap().slot, 4);
    }
}
