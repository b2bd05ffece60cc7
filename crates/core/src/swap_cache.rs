//! The swap cache's slot rules: whether a page read back from swap keeps its slot, and what a
//! later write to it does to that slot. Sim's block device and zswap carry them out
//! (`nvmswap_sim::backend`); live has no swap cache (its pager frees a slot at every swap-in),
//! and linux is the kernel itself.
//!
//! A page read back stays in the swap cache with its slot unless `should_try_to_free_swap`
//! (mm/memory.c, `do_swap_page`) frees it: when swap is more than half full (`vm_swap_full`,
//! include/linux/swap.h, which is what `mem_cgroup_swap_full` answers on cgroup v1) or when the
//! fault writes. A clean page that kept its slot is evicted again without I/O (its copy is still
//! in the slot). A write to such a page makes the copy stale: on the seeds' kernels the write
//! faults (the page was mapped read-only) and `do_wp_page` frees the slot; since Linux 6.10 an
//! exclusive page is mapped writable at its swap-in even on a read fault (Barry Song, "mm: map
//! swapped-in pages writable on read fault if exclusive"), so the write takes no fault, the
//! page keeps its slot and reclaim writes it back there (`shrink_folio_list` allocates a slot
//! only for a folio not in the swap cache). Checked on this machine's 6.18 kernel by
//! `scripts/swapin-writable-probe` (docs/experiments/validation.md, "Charges call by call, and a
//! page read back keeps its slot").
//!
//! The workload's write touch is a read-modify-write on every substrate (the linux and live
//! tabs load a byte of the page, then store it incremented), so a touch that finds its page in
//! swap faults as a read: the swap-in keeps or frees the slot by the read's rule
//! ([`keeps_slot_after_read_fault`]), and the store then acts on the mapped page as any write to
//! a kept slot does ([`write_to_kept_slot`]). The rule's write-fault arm (`FAULT_FLAG_WRITE`: the
//! slot goes at once when the folio's only other reference is the swap cache's) is one no touch
//! of ours takes.
//!
//! Two more places give a slot up or keep it. A page read ahead is not mapped: its table entry
//! still names its slot, so the slot stays in the swap cache with it, however full swap is,
//! until a fault maps the page (`do_swap_page`, the rule above) or reclaim drops it clean. And
//! reclaim's scan, when it activates a mapped page it found referenced, frees the slot the page
//! kept if swap is over half full (mm/vmscan.c `shrink_folio_list`, `activate_locked`: "Not a
//! candidate for swapping, so reclaim swap space"; `folio_free_swap` skips a folio under
//! writeback).

/// More than half of the swap area is in use (`vm_swap_full`: free slots x 2 < total slots).
pub fn vm_swap_full(used_slots: u64, total_slots: u64) -> bool {
    used_slots * 2 > total_slots
}

/// Whether a page swapped in by a read fault keeps its slot in the swap cache: not when swap is
/// more than half full.
pub fn keeps_slot_after_read_fault(used_slots: u64, total_slots: u64) -> bool {
    !vm_swap_full(used_slots, total_slots)
}

/// What a write does to the slot a resident page kept in the swap cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteToKeptSlot {
    /// The write faults and the slot is freed (`do_wp_page`): the seeds' kernels.
    FreeSlot,
    /// The page was mapped writable at its swap-in: no fault, the slot stays with the page and
    /// its copy is stale until reclaim writes the page back there (Linux 6.10+).
    KeepStale,
}

/// The rule for a write to a page that kept its slot, by whether swap-in maps exclusive pages
/// writable (`SystemConfig::swapin_maps_writable`).
pub fn write_to_kept_slot(swapin_maps_writable: bool) -> WriteToKeptSlot {
    if swapin_maps_writable {
        WriteToKeptSlot::KeepStale
    } else {
        WriteToKeptSlot::FreeSlot
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn swap_is_full_above_half_its_slots() {
        assert!(!vm_swap_full(0, 100));
        assert!(!vm_swap_full(50, 100), "exactly half is not over half");
        assert!(vm_swap_full(51, 100));
        assert!(vm_swap_full(1, 1));
    }

    #[test]
    fn a_page_read_back_keeps_its_slot_only_with_swap_at_most_half_full() {
        assert!(keeps_slot_after_read_fault(10, 100));
        assert!(keeps_slot_after_read_fault(50, 100));
        assert!(!keeps_slot_after_read_fault(51, 100), "vm_swap_full");
    }

    #[test]
    fn a_write_frees_the_kept_slot_unless_swap_in_mapped_the_page_writable() {
        assert_eq!(write_to_kept_slot(false), WriteToKeptSlot::FreeSlot);
        assert_eq!(write_to_kept_slot(true), WriteToKeptSlot::KeepStale);
    }
}
