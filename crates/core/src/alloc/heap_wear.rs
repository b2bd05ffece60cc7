//! Heap-Wear: seed 001 §3.3, Algorithm 1.
//!
//! Every physical slot has an age (writes so far). Free slots sit in a doubly linked *free-slot
//! list*; *all* slots, used or free, sit in a *min-heap* keyed by age. To place a page:
//!
//! 1. `head` is the first free slot, `top` the youngest slot of all.
//! 2. If `head.age - top.age > TH`: if `top` holds a page, that page is copied to `head` (one
//!    extra NVM write, `head` ages, the mapping table now sends the page's logical slot to `head`);
//!    if `top` is free it just leaves the free list. The new page is written to `top`.
//! 3. Otherwise the new page is written to `head`.
//!
//! So a page that never leaves its slot (a *zombie*) cannot keep that slot young for long: once the
//! slot is TH writes younger than the free list's head, its page is moved onto the older slot.
//!
//! The swapper sees *logical* slots (what the PTE records); the mapping table sends each to its
//! physical slot and is updated by every exchange. Logical slots are handed out from a stack of
//! unused ids. Freed physical slots go to the tail of the free list, so the head is the slot
//! freed longest ago (the seed does not say where freed slots go; FIFO is our choice).
//! Every operation is O(log N): heap sifts after an age increment; list operations are O(1).

use super::{AllocError, Migration, PhysSlot, Placement, Slot, SlotAllocator};

const NONE: u32 = u32::MAX;

pub struct HeapWear {
    threshold: u32,
    /// Age (writes) of each physical slot.
    age: Vec<u32>,
    /// Min-heap of physical slots by age, and each slot's position in it.
    heap: Vec<PhysSlot>,
    heap_pos: Vec<u32>,
    /// Doubly linked free-slot list over physical slots.
    free_prev: Vec<u32>,
    free_next: Vec<u32>,
    free_head: u32,
    free_tail: u32,
    free_len: u32,
    /// Mapping table: logical -> physical, and physical -> logical (NONE when free).
    phys_of: Vec<u32>,
    logical_of: Vec<u32>,
    /// Logical slot ids not in use.
    unused_logical: Vec<Slot>,
    exchanges: u64,
}

impl HeapWear {
    pub fn new(slots: u32, threshold: u32) -> Result<Self, AllocError> {
        if slots == 0 {
            return Err(AllocError::NoSlots);
        }
        let n = slots as usize;
        let mut hw = HeapWear {
            threshold,
            age: vec![0; n],
            heap: (0..slots).collect(),
            heap_pos: (0..slots).collect(),
            free_prev: vec![NONE; n],
            free_next: vec![NONE; n],
            free_head: NONE,
            free_tail: NONE,
            free_len: 0,
            phys_of: vec![NONE; n],
            logical_of: vec![NONE; n],
            unused_logical: (0..slots).rev().collect(),
            exchanges: 0,
        };
        for s in 0..slots {
            hw.list_push_back(s);
        }
        Ok(hw)
    }

    /// A Heap-Wear whose slots start with the given ages (recovered from an age file after a
    /// restart, so wear levelling goes on where it stopped); all slots free.
    pub fn with_ages(threshold: u32, ages: &[u32]) -> Result<Self, AllocError> {
        let mut hw = HeapWear::new(ages.len() as u32, threshold)?;
        hw.age.copy_from_slice(ages);
        // Slots in ascending age order form a valid min-heap.
        hw.heap.sort_by_key(|&s| (ages[s as usize], s));
        for (pos, &s) in hw.heap.iter().enumerate() {
            hw.heap_pos[s as usize] = pos as u32;
        }
        Ok(hw)
    }

    /// Every physical slot's age, by slot.
    pub fn ages(&self) -> &[u32] {
        &self.age
    }

    /// Writes the slot has taken so far.
    pub fn age(&self, phys: PhysSlot) -> u32 {
        self.age[phys as usize]
    }

    /// Slot exchanges (pages moved to level wear) so far.
    pub fn exchanges(&self) -> u64 {
        self.exchanges
    }

    fn list_push_back(&mut self, s: PhysSlot) {
        let i = s as usize;
        self.free_prev[i] = self.free_tail;
        self.free_next[i] = NONE;
        if self.free_tail == NONE {
            self.free_head = s;
        } else {
            self.free_next[self.free_tail as usize] = s;
        }
        self.free_tail = s;
        self.free_len += 1;
    }

    fn list_remove(&mut self, s: PhysSlot) {
        let i = s as usize;
        let (prev, next) = (self.free_prev[i], self.free_next[i]);
        if prev == NONE {
            debug_assert_eq!(self.free_head, s);
            self.free_head = next;
        } else {
            self.free_next[prev as usize] = next;
        }
        if next == NONE {
            debug_assert_eq!(self.free_tail, s);
            self.free_tail = prev;
        } else {
            self.free_prev[next as usize] = prev;
        }
        self.free_prev[i] = NONE;
        self.free_next[i] = NONE;
        self.free_len -= 1;
    }

    /// One more write to `s`; restore the heap property (ages only grow, so sift down).
    fn age_up(&mut self, s: PhysSlot) {
        self.age[s as usize] += 1;
        let mut pos = self.heap_pos[s as usize] as usize;
        let n = self.heap.len();
        loop {
            let (l, r) = (2 * pos + 1, 2 * pos + 2);
            let mut smallest = pos;
            if l < n && self.key(l) < self.key(smallest) {
                smallest = l;
            }
            if r < n && self.key(r) < self.key(smallest) {
                smallest = r;
            }
            if smallest == pos {
                break;
            }
            self.heap.swap(pos, smallest);
            self.heap_pos[self.heap[pos] as usize] = pos as u32;
            self.heap_pos[self.heap[smallest] as usize] = smallest as u32;
            pos = smallest;
        }
    }

    fn key(&self, heap_index: usize) -> u32 {
        self.age[self.heap[heap_index] as usize]
    }
}

impl SlotAllocator for HeapWear {
    fn name(&self) -> &'static str {
        "heap-wear"
    }

    fn capacity(&self) -> u32 {
        self.age.len() as u32
    }

    fn in_use(&self) -> u32 {
        self.capacity() - self.free_len
    }

    fn allocate(&mut self, _cpu: usize) -> Option<Placement> {
        let head = self.free_head;
        if head == NONE {
            return None;
        }
        let top = self.heap[0];
        let logical = self
            .unused_logical
            .pop()
            .expect("a free physical slot implies a free id");
        let mut migrations = Vec::new();
        let target = if self.age[head as usize] - self.age[top as usize] > self.threshold {
            let moved = self.logical_of[top as usize];
            if moved != NONE {
                // Slot exchange: the page in `top` moves to the older `head` (Algorithm 1 l. 5-9).
                self.list_remove(head);
                self.age_up(head);
                self.phys_of[moved as usize] = head;
                self.logical_of[head as usize] = moved;
                migrations.push(Migration {
                    from: top,
                    to: head,
                });
                self.exchanges += 1;
            } else {
                self.list_remove(top);
            }
            self.age_up(top);
            top
        } else {
            self.list_remove(head);
            self.age_up(head);
            head
        };
        self.phys_of[logical as usize] = target;
        self.logical_of[target as usize] = logical;
        Some(Placement {
            slot: logical,
            phys: target,
            migrations,
        })
    }

    fn free(&mut self, slot: Slot) {
        let phys = self.phys_of[slot as usize];
        assert!(
            phys != NONE,
            "heap-wear: logical slot {slot} freed twice or never allocated"
        );
        self.phys_of[slot as usize] = NONE;
        self.logical_of[phys as usize] = NONE;
        self.unused_logical.push(slot);
        self.list_push_back(phys);
    }

    fn physical(&self, slot: Slot) -> PhysSlot {
        let phys = self.phys_of[slot as usize];
        assert!(phys != NONE, "heap-wear: logical slot {slot} is not in use");
        phys
    }

    fn ages(&self) -> Option<&[u32]> {
        Some(&self.age)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn restored_ages_order_the_heap() {
        let hw = HeapWear::with_ages(8, &[5, 0, 9, 2]).unwrap();
        assert_eq!(hw.ages(), &[5, 0, 9, 2]);
        assert_eq!(hw.heap[0], 1, "the youngest slot is on top");
        for (pos, &s) in hw.heap.iter().enumerate() {
            assert_eq!(hw.heap_pos[s as usize] as usize, pos);
        }
    }

    #[test]
    fn takes_the_free_list_head_while_ages_are_close() {
        let mut hw = HeapWear::new(4, 2).unwrap();
        let a = hw.allocate(0).unwrap();
        assert_eq!((a.phys, a.migrations.len()), (0, 0));
        hw.free(a.slot);
        // Slot 0 went to the tail: the head is now slot 1.
        assert_eq!(hw.allocate(0).unwrap().phys, 1);
    }

    #[test]
    fn exchanges_a_zombie_out_of_a_young_slot() {
        // Two slots, TH = 1. Slot 0 gets a zombie page; slot 1 is written over and over.
        let mut hw = HeapWear::new(2, 1).unwrap();
        let zombie = hw.allocate(0).unwrap();
        assert_eq!(zombie.phys, 0);
        let mut exchanged = None;
        for _ in 0..4 {
            let p = hw.allocate(0).unwrap();
            if !p.migrations.is_empty() {
                exchanged = Some(p.clone());
            }
            hw.free(p.slot);
            if exchanged.is_some() {
                break;
            }
        }
        // Slot 0 stays at age 1 under its zombie; once slot 1 (the free head) is more than TH
        // writes older, the zombie moves to slot 1 and the new page goes to slot 0.
        let p = exchanged.expect("an exchange happens once the gap exceeds TH");
        assert_eq!(p.migrations, vec![Migration { from: 0, to: 1 }]);
        assert_eq!(p.phys, 0);
        assert_eq!(hw.physical(zombie.slot), 1);
        assert_eq!(hw.exchanges(), 1);
    }

    #[test]
    fn full_area_refuses() {
        let mut hw = HeapWear::new(2, 16).unwrap();
        assert!(hw.allocate(0).is_some());
        assert!(hw.allocate(0).is_some());
        assert!(hw.allocate(0).is_none());
        assert_eq!(hw.in_use(), 2);
    }
}
