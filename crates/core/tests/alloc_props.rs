//! Properties every slot allocator must keep, checked against a model of the device contents:
//! each write stores the page id in its physical slot, each migration copies one slot to
//! another, and every live swapper slot must then read back its own page.

use nvmswap_core::alloc::heap_wear::HeapWear;
use nvmswap_core::alloc::{by_name, AllocParams, SlotAllocator, ALLOCATORS};
use proptest::prelude::*;
use std::collections::BTreeMap;

#[derive(Debug, Clone)]
enum Op {
    Alloc(usize),
    Free(usize),
}

fn ops() -> impl Strategy<Value = Vec<Op>> {
    prop::collection::vec(
        prop_oneof![3 => (0usize..4).prop_map(Op::Alloc), 2 => any::<usize>().prop_map(Op::Free)],
        1..600,
    )
}

/// Runs `ops` and checks the invariants after every step.
fn check(alloc: &mut dyn SlotAllocator, ops: &[Op]) -> Result<(), TestCaseError> {
    let phys_n = alloc.phys_slots() as usize;
    let mut contents: Vec<Option<u64>> = vec![None; phys_n];
    let mut wear = vec![0u64; phys_n];
    let mut live: BTreeMap<u32, u64> = BTreeMap::new();
    let mut next_page = 0u64;
    for op in ops {
        match *op {
            Op::Alloc(cpu) => match alloc.allocate(cpu) {
                Some(p) => {
                    prop_assert!(
                        !live.contains_key(&p.slot),
                        "slot {} handed out twice",
                        p.slot
                    );
                    for m in &p.migrations {
                        contents[m.to as usize] = contents[m.from as usize];
                        wear[m.to as usize] += 1;
                    }
                    contents[p.phys as usize] = Some(next_page);
                    wear[p.phys as usize] += 1;
                    live.insert(p.slot, next_page);
                    next_page += 1;
                }
                None => {
                    // Full means full: every free slot must be reachable by allocate.
                    prop_assert_eq!(live.len() as u32, alloc.capacity());
                }
            },
            Op::Free(pick) => {
                if !live.is_empty() {
                    let slot = *live.keys().nth(pick % live.len()).expect("non-empty");
                    alloc.free(slot);
                    live.remove(&slot);
                }
            }
        }
        prop_assert_eq!(alloc.in_use() as usize, live.len());
        let mut seen = vec![false; phys_n];
        for (&slot, &page) in &live {
            let p = alloc.physical(slot) as usize;
            prop_assert!(!seen[p], "two live slots map to physical {}", p);
            seen[p] = true;
            prop_assert_eq!(
                contents[p],
                Some(page),
                "slot {} reads back the wrong page",
                slot
            );
        }
    }
    // Every free slot is reachable: allocating until full yields exactly capacity - in_use slots.
    let free = alloc.capacity() - alloc.in_use();
    let mut got = 0;
    while let Some(p) = alloc.allocate(0) {
        prop_assert!(!live.contains_key(&p.slot));
        live.insert(p.slot, 0);
        got += 1;
    }
    prop_assert_eq!(got, free);
    Ok(())
}

proptest! {
    #[test]
    fn allocators_keep_mapping_and_contents(ops in ops(), slots in 1u32..700, th in 0u64..4, psi in 1u64..8, which in 0usize..3) {
        let params = AllocParams { threshold: th, psi, seed: 7, cpus: 2 };
        let mut a = by_name(ALLOCATORS[which], slots, &params).unwrap();
        check(a.as_mut(), &ops)?;
    }

    #[test]
    fn heap_wear_ages_count_writes_and_never_go_back(ops in ops(), slots in 1u32..300, th in 0u64..4) {
        let mut a = HeapWear::new(slots, th);
        let mut writes = vec![0u64; slots as usize];
        let mut live = Vec::new();
        for op in &ops {
            let before: Vec<u64> = (0..slots).map(|p| a.age(p)).collect();
            match *op {
                Op::Alloc(_) => if let Some(p) = a.allocate(0) {
                    for m in &p.migrations { writes[m.to as usize] += 1; }
                    writes[p.phys as usize] += 1;
                    live.push(p.slot);
                },
                Op::Free(i) => if !live.is_empty() { let s = live.swap_remove(i % live.len()); a.free(s); },
            }
            for p in 0..slots {
                prop_assert!(a.age(p) >= before[p as usize], "age of {} went back", p);
                prop_assert_eq!(a.age(p), writes[p as usize]);
            }
        }
    }
}

#[test]
fn unknown_allocator_and_zero_slots_are_errors() {
    assert!(by_name("nope", 10, &AllocParams::default()).is_err());
    assert!(by_name("heap-wear", 0, &AllocParams::default()).is_err());
    let bad_psi = AllocParams {
        psi: 0,
        ..AllocParams::default()
    };
    assert!(by_name("start-gap", 10, &bad_psi).is_err());
}

#[test]
fn heap_wear_exchanges_when_head_is_older_than_top_by_more_than_th() {
    // 2 slots, TH 0. Write page A (slot->phys 0), free it, so the list is [1, 0] and ages [1, 0].
    let mut a = HeapWear::new(2, 0);
    let p = a.allocate(0).unwrap();
    assert_eq!(p.phys, 0);
    a.free(p.slot);
    // Head is 1 (age 0) = top: no exchange, write to 1.
    let b = a.allocate(0).unwrap();
    assert_eq!((b.phys, b.migrations.len()), (1, 0));
    // Ages [1, 1]; head is 0. Write C to 0 -> ages [2, 1]. Free C: head 0 (age 2), top 1 (age 1,
    // holds B). 2 - 1 > 0: B moves to 0, the new page goes to 1.
    let c = a.allocate(0).unwrap();
    assert_eq!(c.phys, 0);
    a.free(c.slot);
    let d = a.allocate(0).unwrap();
    assert_eq!(d.phys, 1);
    assert_eq!(d.migrations.len(), 1);
    assert_eq!((d.migrations[0].from, d.migrations[0].to), (1, 0));
    assert_eq!(a.physical(b.slot), 0);
    assert_eq!((a.age(0), a.age(1)), (3, 2));
}
