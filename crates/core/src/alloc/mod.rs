//! Swap-slot allocation and wear levelling.
//!
//! A swapper stores a page in a *slot* and records the slot in the page table entry; it never
//! sees where the device put the bytes. Allocators that level wear (Heap-Wear, Start-Gap) keep a
//! mapping from that slot to a physical slot and may move pages between physical slots; each move
//! is an extra device write that they report, so wear and copy costs are charged honestly.

mod heap_wear;
mod linux_618;
mod linux_cluster;
mod start_gap;

pub use heap_wear::HeapWear;
pub use linux_618::{Linux618, CLUSTER_SLOTS_618};
pub use linux_cluster::LinuxCluster;
pub use start_gap::StartGap;

/// A slot as the swapper sees it (stored in the PTE).
pub type Slot = u32;
/// A physical slot on the device: the unit that wears.
pub type PhysSlot = u32;

/// One extra page copy a wear leveller performed: read `from`, write `to` on the device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Migration {
    pub from: PhysSlot,
    pub to: PhysSlot,
}

/// What one `allocate` did on the device.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Placement {
    /// The slot to record in the PTE.
    pub slot: Slot,
    /// The physical slot the new page's bytes are written to.
    pub phys: PhysSlot,
    /// Extra copies done to level wear before the write (each is one device write).
    pub migrations: Vec<Migration>,
}

/// The interface every slot allocator implements; one file per allocator.
pub trait SlotAllocator: Send {
    /// Short name as used on the command line (`linux-cluster`, `linux-6.18`, `heap-wear`,
    /// `start-gap`).
    fn name(&self) -> &'static str;
    /// Number of slots a swapper can hold pages in.
    fn capacity(&self) -> u32;
    /// Physical slots on the device (more than `capacity` where a spare slot is kept, as in
    /// Start-Gap).
    fn physical_slots(&self) -> u32 {
        self.capacity()
    }
    /// Slots currently holding a page.
    fn in_use(&self) -> u32;
    /// Find a slot for a page about to be written. `cpu` lets per-CPU allocators (the kernel's
    /// cluster allocator) keep their per-CPU state. None when the area is full.
    fn allocate(&mut self, cpu: usize) -> Option<Placement>;

    /// `allocate`, for an allocator that takes slots back from the swap cache as it goes (the
    /// kernel's since 6.12, `linux-6.18`): `cache_only(slot)` tells whether a slot in use is
    /// held by nothing but the swap cache (a resident, mapped page kept it; no page table entry
    /// names it and no write of it is in flight). Each such slot the allocator takes back is
    /// pushed on `reclaimed`, freed or handed to the new page; the swapper drops it from the
    /// page that kept it, which is dirty from then on. The others never take one back.
    fn allocate_reclaiming(
        &mut self,
        cpu: usize,
        _cache_only: &mut dyn FnMut(Slot) -> bool,
        _reclaimed: &mut Vec<Slot>,
    ) -> Option<Placement> {
        self.allocate(cpu)
    }
    /// The page in `slot` is no longer needed.
    fn free(&mut self, slot: Slot);
    /// Where the page recorded as `slot` lives now.
    fn physical(&self, slot: Slot) -> PhysSlot;
    /// Per-slot ages an allocator levels wear by, if it keeps them (Heap-Wear); these are what
    /// must survive a restart.
    fn ages(&self) -> Option<&[u32]> {
        None
    }
}

/// Names accepted by [`by_name`].
pub const ALLOCATORS: &[&str] = &["linux-cluster", "linux-6.18", "heap-wear", "start-gap"];

/// Tunables of all allocators; each uses the ones that apply to it.
#[derive(Debug, Clone, PartialEq)]
pub struct AllocParams {
    /// Heap-Wear's exchange threshold TH (seed 001 §3.3; Table 3 sweeps 16..256).
    pub threshold: u32,
    /// Start-Gap: writes between two gap moves (psi; Qureshi et al., MICRO 2009, use 100).
    pub psi: u32,
    /// linux-cluster: SSD mode (seed 002: clusters, no reuse of freed slots until needed).
    /// linux-6.18: the device is non-rotational (a cluster per CPU, else one for the device).
    pub ssd: bool,
    /// linux-6.18: the swap area discards freed clusters (`SWP_PAGE_DISCARD`, `swapon
    /// --discard`), which makes it open free clusters before refilling non-full ones.
    pub discard: bool,
    /// CPUs with a per-CPU current cluster.
    pub cpus: usize,
    /// Seed of Start-Gap's static address randomisation.
    pub seed: u64,
}

impl Default for AllocParams {
    fn default() -> Self {
        AllocParams {
            threshold: 16,
            psi: 100,
            ssd: true,
            discard: false,
            cpus: 2,
            seed: 1,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AllocError {
    #[error("unknown slot allocator '{0}' (expected one of: linux-cluster, linux-6.18, heap-wear, start-gap)")]
    Unknown(String),
    #[error("a swap area needs at least one slot")]
    NoSlots,
    #[error("start-gap needs psi >= 1 (got {0})")]
    Psi(u32),
    #[error("linux-cluster and linux-6.18 need at least one CPU")]
    NoCpus,
}

/// An allocator by its command-line name.
pub fn by_name(
    name: &str,
    slots: u32,
    params: &AllocParams,
) -> Result<Box<dyn SlotAllocator>, AllocError> {
    Ok(match name {
        "heap-wear" => Box::new(HeapWear::new(slots, params.threshold)?),
        "linux-cluster" => Box::new(LinuxCluster::new(slots, params.cpus, params.ssd)?),
        "linux-6.18" => Box::new(Linux618::new(
            slots,
            params.cpus,
            params.ssd,
            params.discard,
        )?),
        "start-gap" => Box::new(StartGap::new(slots, params.psi, params.cpus, params.seed)?),
        other => return Err(AllocError::Unknown(other.to_string())),
    })
}
