//! Start-Gap wear levelling (Qureshi et al., "Enhancing Lifetime and Security of PCM-Based Main
//! Memory with Start-Gap Wear Leveling", MICRO 2009), applied to swap slots.
//!
//! N swapper slots live in N+1 physical slots; one is the empty *gap*. Two registers, Start and
//! Gap, define the mapping: after a static randomisation `r(la)` of the address,
//! `pa = (r(la) + Start) mod N`, plus one if `pa >= Gap`. Every `psi` writes the gap moves one
//! slot down (copy physical `Gap-1` into `Gap`: one extra device write); when it reaches 0 the
//! page in slot N moves to 0, Gap returns to N and Start advances, so over time every swapper
//! slot visits every physical slot. Which swapper slot a page gets is the kernel's cluster
//! allocator's choice (Start-Gap only remaps, it does not choose).
//!
//! Randomisation: the paper uses a Feistel network or random invertible binary matrix; we use a
//! seeded random permutation table (our choice; same effect, costs 4 bytes per slot).

use super::linux_cluster::LinuxCluster;
use super::{Migration, PhysSlot, Placement, Slot, SlotAllocator};
use rand::seq::SliceRandom;
use rand::SeedableRng;

pub struct StartGap {
    inner: LinuxCluster,
    n: u32,
    start: u32,
    gap: u32,
    psi: u64,
    writes_since_move: u64,
    randomise: Vec<u32>,
    moves: u64,
}

impl StartGap {
    pub fn new(slots: u32, psi: u64, seed: u64) -> Self {
        let mut randomise: Vec<u32> = (0..slots).collect();
        randomise.shuffle(&mut rand_chacha::ChaCha8Rng::seed_from_u64(seed));
        StartGap {
            inner: LinuxCluster::new(slots, 1),
            n: slots,
            start: 0,
            gap: slots,
            psi,
            writes_since_move: 0,
            randomise,
            moves: 0,
        }
    }

    fn move_gap(&mut self) -> Migration {
        self.moves += 1;
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
    fn phys_slots(&self) -> u32 {
        self.n + 1
    }
    fn in_use(&self) -> u32 {
        self.inner.in_use()
    }

    fn allocate(&mut self, cpu: usize) -> Option<Placement> {
        let mut placement = self.inner.allocate(cpu)?;
        self.writes_since_move += 1;
        if self.writes_since_move >= self.psi {
            // Every psi-th write first moves the gap (Placement's migrations precede the write).
            self.writes_since_move = 0;
            placement.migrations.push(self.move_gap());
        }
        placement.phys = self.physical(placement.slot);
        Some(placement)
    }

    fn free(&mut self, slot: Slot) {
        self.inner.free(slot);
    }

    fn physical(&self, slot: Slot) -> PhysSlot {
        let pa = (self.randomise[slot as usize] + self.start) % self.n;
        if pa >= self.gap {
            pa + 1
        } else {
            pa
        }
    }

    fn exchanges(&self) -> u64 {
        self.moves
    }
}
