//! Start-Gap wear levelling (Qureshi et al., "Enhancing Lifetime and Security of PCM-Based Main
//! Memory with Start-Gap Wear Leveling", MICRO 2009), applied to swap slots.
//!
//! N logical slots live in N + 1 physical slots; one physical slot, the *gap*, holds nothing.
//! Every `psi` writes the gap moves down by one: the page just below it is copied into it (one
//! extra device write). When the gap reaches slot 0 it wraps to slot N and `start` advances, so
//! over time every logical slot visits every physical slot. The mapping is two registers:
//! `pa = (la + start) mod N; if pa >= gap { pa + 1 }`. A static random permutation of logical
//! slots (the paper's address-space randomisation; ours is a seeded table rather than a Feistel
//! network) spreads hot logical regions over the whole area.
//!
//! Start-Gap lives below the swap allocator, as it would in a memory controller: logical slots are
//! handed out by the kernel's cluster allocator, and Start-Gap only moves them physically. It
//! moves lines whether or not they hold a page, as hardware that cannot see validity would.

use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::linux_cluster::LinuxCluster;
use super::{AllocError, Migration, PhysSlot, Placement, Slot, SlotAllocator};

pub struct StartGap {
    slots: LinuxCluster,
    n: u32,
    start: u32,
    gap: u32,
    psi: u32,
    writes_since_move: u32,
    randomised: Vec<u32>,
}

impl StartGap {
    pub fn new(slots: u32, psi: u32, cpus: usize, seed: u64) -> Result<Self, AllocError> {
        if psi == 0 {
            return Err(AllocError::Psi(psi));
        }
        let inner = LinuxCluster::new(slots, cpus, true)?;
        let mut randomised: Vec<u32> = (0..slots).collect();
        randomised.shuffle(&mut ChaCha8Rng::seed_from_u64(seed));
        Ok(StartGap {
            slots: inner,
            n: slots,
            start: 0,
            gap: slots,
            psi,
            writes_since_move: 0,
            randomised,
        })
    }

    fn map(&self, logical: Slot) -> PhysSlot {
        let pa = (self.randomised[logical as usize] + self.start) % self.n;
        if pa >= self.gap {
            pa + 1
        } else {
            pa
        }
    }

    /// Moves the gap one step; returns the copy it took.
    fn move_gap(&mut self) -> Migration {
        if self.gap == 0 {
            self.gap = self.n;
            self.start = (self.start + 1) % self.n;
            Migration {
                from: self.n,
                to: 0,
            }
        } else {
            self.gap -= 1;
            Migration {
                from: self.gap,
                to: self.gap + 1,
            }
        }
    }
}

impl SlotAllocator for StartGap {
    fn name(&self) -> &'static str {
        "start-gap"
    }

    fn capacity(&self) -> u32 {
        self.n
    }

    fn physical_slots(&self) -> u32 {
        self.n + 1
    }

    fn in_use(&self) -> u32 {
        self.slots.in_use()
    }

    fn allocate(&mut self, cpu: usize) -> Option<Placement> {
        let slot = self.slots.allocate(cpu)?.slot;
        let mut migrations = Vec::new();
        self.writes_since_move += 1;
        if self.writes_since_move >= self.psi {
            self.writes_since_move = 0;
            migrations.push(self.move_gap());
        }
        Some(Placement {
            slot,
            phys: self.map(slot),
            migrations,
        })
    }

    fn free(&mut self, slot: Slot) {
        self.slots.free(slot);
    }

    fn physical(&self, slot: Slot) -> PhysSlot {
        self.map(slot)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gap_walks_down_and_wraps_with_start() {
        let mut sg = StartGap::new(3, 1, 1, 0).unwrap();
        let moves: Vec<_> = (0..3)
            .map(|_| sg.allocate(0).unwrap().migrations[0])
            .collect();
        assert_eq!(
            moves,
            vec![
                Migration { from: 2, to: 3 },
                Migration { from: 1, to: 2 },
                Migration { from: 0, to: 1 }
            ]
        );
        assert_eq!(sg.gap, 0);
        for s in 0..3 {
            sg.free(s);
        }
        let wrap = sg.allocate(0).unwrap().migrations[0];
        assert_eq!(wrap, Migration { from: 3, to: 0 });
        assert_eq!((sg.gap, sg.start), (3, 1));
    }

    #[test]
    fn mapping_is_a_bijection_onto_the_non_gap_slots() {
        let mut sg = StartGap::new(50, 1, 1, 9).unwrap();
        for step in 0..200 {
            let mut seen: Vec<_> = (0..50).map(|l| sg.map(l)).collect();
            seen.sort_unstable();
            seen.dedup();
            assert_eq!(seen.len(), 50, "step {step}");
            assert!(!seen.contains(&sg.gap));
            let p = sg.allocate(0).unwrap();
            sg.free(p.slot);
        }
    }
}
