//! Heap-Wear: seed 001 §3.3, Algorithm 1.
//!
//! Every physical slot carries an age (writes it has received). A doubly linked *free slot list*
//! holds the unused physical slots (head preferred, freed slots appended at the tail) and an
//! indexed *min-heap* holds all physical slots keyed by age. To place a page, compare the list
//! head with the heap top: if the head is older by more than `TH`, write the page into the
//! youngest slot instead — first moving the top's page (if any) into the head (a *slot
//! exchange*, one extra device write, reported as a [`Migration`]). The mapping table (swapper
//! slot -> physical slot) hides the move from the PTE. Every operation is O(log N) (heap sift).

use super::{Migration, PhysSlot, Placement, Slot, SlotAllocator};

const NIL: u32 = u32::MAX;

pub struct HeapWear {
    threshold: u64,
    age: Vec<u64>,
    // Indexed min-heap over physical slots by age: heap[i] is a slot, heap_pos[slot] its index.
    heap: Vec<PhysSlot>,
    heap_pos: Vec<u32>,
    // Doubly linked free slot list over physical slots.
    free_head: u32,
    free_tail: u32,
    next: Vec<u32>,
    prev: Vec<u32>,
    is_free: Vec<bool>,
    // Mapping table: swapper slot -> physical slot, and its inverse (NIL when unused).
    map: Vec<PhysSlot>,
    owner: Vec<Slot>,
    free_slots: Vec<Slot>,
    in_use: u32,
    exchanges: u64,
}

impl HeapWear {
    /// `slots` physical slots (also the number of swapper slots); `threshold` is seed 001's TH.
    pub fn new(slots: u32, threshold: u64) -> Self {
        let n = slots as usize;
        let mut this = HeapWear {
            threshold,
            age: vec![0; n],
            heap: (0..slots).collect(),
            heap_pos: (0..slots).collect(),
            free_head: NIL,
            free_tail: NIL,
            next: vec![NIL; n],
            prev: vec![NIL; n],
            is_free: vec![false; n],
            map: vec![NIL; n],
            owner: vec![NIL; n],
            // Hand out swapper slots lowest first: pop from the end.
            free_slots: (0..slots).rev().collect(),
            in_use: 0,
            exchanges: 0,
        };
        for p in 0..slots {
            this.list_push_tail(p);
        }
        this
    }

    /// Writes physical slot `p` has received (its age).
    pub fn age(&self, p: PhysSlot) -> u64 {
        self.age[p as usize]
    }

    /// The exchange threshold TH.
    pub fn threshold(&self) -> u64 {
        self.threshold
    }

    fn list_push_tail(&mut self, p: PhysSlot) {
        debug_assert!(!self.is_free[p as usize]);
        self.is_free[p as usize] = true;
        self.prev[p as usize] = self.free_tail;
        self.next[p as usize] = NIL;
        if self.free_tail == NIL {
            self.free_head = p;
        } else {
            self.next[self.free_tail as usize] = p;
        }
        self.free_tail = p;
    }

    fn list_remove(&mut self, p: PhysSlot) {
        assert!(
            self.is_free[p as usize],
            "removing a used slot from the free list"
        );
        let (pr, nx) = (self.prev[p as usize], self.next[p as usize]);
        if pr == NIL {
            self.free_head = nx;
        } else {
            self.next[pr as usize] = nx;
        }
        if nx == NIL {
            self.free_tail = pr;
        } else {
            self.prev[nx as usize] = pr;
        }
        self.is_free[p as usize] = false;
    }

    /// One write to `p`: its age grows, so it can only sink in the heap.
    fn age_up(&mut self, p: PhysSlot) {
        self.age[p as usize] += 1;
        let mut i = self.heap_pos[p as usize] as usize;
        let n = self.heap.len();
        loop {
            let (l, r) = (2 * i + 1, 2 * i + 2);
            let mut smallest = i;
            if l < n && self.key(l) < self.key(smallest) {
                smallest = l;
            }
            if r < n && self.key(r) < self.key(smallest) {
                smallest = r;
            }
            if smallest == i {
                break;
            }
            self.heap.swap(i, smallest);
            self.heap_pos[self.heap[i] as usize] = i as u32;
            self.heap_pos[self.heap[smallest] as usize] = smallest as u32;
            i = smallest;
        }
    }

    // Ties broken by slot number so the heap order (and so every run) is deterministic.
    fn key(&self, i: usize) -> (u64, u32) {
        let p = self.heap[i];
        (self.age[p as usize], p)
    }

    fn bind(&mut self, slot: Slot, p: PhysSlot) {
        self.map[slot as usize] = p;
        self.owner[p as usize] = slot;
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
        self.in_use
    }

    fn allocate(&mut self, _cpu: usize) -> Option<Placement> {
        let head = self.free_head;
        if head == NIL {
            return None;
        }
        let slot = self
            .free_slots
            .pop()
            .expect("a free physical slot implies a free slot");
        let top = self.heap[0];
        let mut migrations = Vec::new();
        // Algorithm 1, line 3.
        let target = if self.age[head as usize] - self.age[top as usize] > self.threshold {
            if !self.is_free[top as usize] {
                // Lines 4-11: move the top's page into the head, remap its swapper slot.
                let moved = self.owner[top as usize];
                migrations.push(Migration {
                    from: top,
                    to: head,
                });
                self.age_up(head);
                self.list_remove(head);
                self.bind(moved, head);
                self.exchanges += 1;
            } else {
                // Lines 12-13.
                self.list_remove(top);
            }
            // Lines 14-16: the new page goes to the youngest slot.
            self.age_up(top);
            top
        } else {
            // Lines 18-21.
            self.list_remove(head);
            self.age_up(head);
            head
        };
        self.bind(slot, target);
        self.in_use += 1;
        Some(Placement {
            slot,
            phys: target,
            migrations,
        })
    }

    fn free(&mut self, slot: Slot) {
        let p = self.map[slot as usize];
        assert!(p != NIL, "freeing swapper slot {slot} that holds no page");
        self.map[slot as usize] = NIL;
        self.owner[p as usize] = NIL;
        self.list_push_tail(p);
        self.free_slots.push(slot);
        self.in_use -= 1;
    }

    fn physical(&self, slot: Slot) -> PhysSlot {
        self.map[slot as usize]
    }

    fn exchanges(&self) -> u64 {
        self.exchanges
    }
}
