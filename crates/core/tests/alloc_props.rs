//! Invariants every slot allocator keeps, under random sequences of allocations and frees.
//!
//! The device is modelled as an array of physical slots holding page ids. Each placement first
//! applies the allocator's migrations (copy `from` to `to`), then writes the new page. After every
//! step each live logical slot must read back its own page through `physical()`.

use nvmswap_core::alloc::{by_name, AllocParams, HeapWear, SlotAllocator, ALLOCATORS};
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Op {
    Alloc(usize),
    /// Free the live slot at this index (modulo the number live).
    Free(usize),
}

fn ops() -> impl Strategy<Value = Vec<Op>> {
    prop::collection::vec(
        prop_oneof![3 => (0usize..2).prop_map(Op::Alloc), 2 => any::<usize>().prop_map(Op::Free)],
        1..400,
    )
}

fn check(name: &str, slots: u32, threshold: u32, psi: u32, ops: &[Op]) {
    let params = AllocParams {
        threshold,
        psi,
        ..AllocParams::default()
    };
    let mut a = by_name(name, slots, &params).unwrap();
    let mut device: Vec<Option<u64>> = vec![None; a.physical_slots() as usize];
    let mut live: Vec<(u32, u64)> = Vec::new();
    let mut next_page = 0u64;
    for op in ops {
        match *op {
            Op::Alloc(cpu) => match a.allocate(cpu) {
                Some(p) => {
                    assert!(
                        live.iter().all(|&(s, _)| s != p.slot),
                        "{name}: slot {} handed out twice",
                        p.slot
                    );
                    for m in &p.migrations {
                        device[m.to as usize] = device[m.from as usize];
                    }
                    device[p.phys as usize] = Some(next_page);
                    live.push((p.slot, next_page));
                    next_page += 1;
                }
                None => assert_eq!(
                    live.len() as u32,
                    a.capacity(),
                    "{name}: refused while not full"
                ),
            },
            Op::Free(i) if !live.is_empty() => {
                let (slot, _) = live.swap_remove(i % live.len());
                a.free(slot);
            }
            Op::Free(_) => {}
        }
        assert_eq!(a.in_use() as usize, live.len(), "{name}: in_use disagrees");
        for &(slot, page) in &live {
            assert_eq!(
                device[a.physical(slot) as usize],
                Some(page),
                "{name}: logical slot {slot} does not read back page {page}"
            );
        }
    }
    // Every free slot is reachable: the area fills up exactly to its capacity.
    while let Some(p) = a.allocate(0) {
        live.push((p.slot, u64::MAX));
    }
    assert_eq!(
        live.len() as u32,
        a.capacity(),
        "{name}: free slots unreachable"
    );
}

proptest! {
    #[test]
    fn allocators_keep_mapping_and_reachability(
        ops in ops(), slots in 1u32..600, threshold in 0u32..8, psi in 1u32..5,
    ) {
        for name in ALLOCATORS {
            check(name, slots, threshold, psi, &ops);
        }
    }

    #[test]
    fn heap_wear_ages_never_go_backwards(ops in ops(), slots in 1u32..300, threshold in 0u32..6) {
        let mut hw = HeapWear::new(slots, threshold).unwrap();
        let mut live = Vec::new();
        let mut ages: Vec<u32> = (0..slots).map(|s| hw.age(s)).collect();
        for op in &ops {
            match *op {
                Op::Alloc(_) => {
                    if let Some(p) = hw.allocate(0) {
                        live.push(p.slot);
                    }
                }
                Op::Free(i) if !live.is_empty() => {
                    let s = live.swap_remove(i % live.len());
                    hw.free(s);
                }
                Op::Free(_) => {}
            }
            for s in 0..slots {
                prop_assert!(hw.age(s) >= ages[s as usize], "slot {} got younger", s);
                ages[s as usize] = hw.age(s);
            }
        }
    }
}
