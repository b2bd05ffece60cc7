//! Swap-slot allocation and wear levelling.
//!
//! A swapper stores a page in a *slot* and records the slot in the page table entry; it never
//! sees where the device put the bytes. Allocators that level wear (Heap-Wear, Start-Gap) keep a
//! mapping from that slot to a physical slot and may move pages between physical slots; each move
//! is an extra device write that they report, so wear and copy costs are charged honestly.

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
    /// Short name as used on the command line (`linux-cluster`, `heap-wear`, `start-gap`).
    fn name(&self) -> &'static str;
    /// Number of slots a swapper can hold pages in.
    fn capacity(&self) -> u32;
    /// Slots currently holding a page.
    fn in_use(&self) -> u32;
    /// Find a slot for a page about to be written. `cpu` lets per-CPU allocators (the kernel's
    /// cluster allocator) keep their per-CPU state. None when the area is full.
    fn allocate(&mut self, cpu: usize) -> Option<Placement>;
    /// The page in `slot` is no longer needed.
    fn free(&mut self, slot: Slot);
    /// Where the page recorded as `slot` lives now.
    fn physical(&self, slot: Slot) -> PhysSlot;
}
