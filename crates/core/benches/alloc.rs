//! Allocate + free throughput of each slot allocator at 64K and 1M slots.
//!
//! Issue #2's target: at least 2 million operations per second for heap-wear at 1M slots. The
//! area is kept half full and each iteration frees a pseudo-random live slot and allocates one,
//! the steady state of the wear experiment. One iteration = one allocate + one free = 2 ops.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use nvmswap_core::alloc::{by_name, AllocParams, ALLOCATORS};

fn steady_state(c: &mut Criterion) {
    let mut group = c.benchmark_group("alloc+free");
    for &slots in &[64u32 << 10, 1 << 20] {
        for name in ALLOCATORS {
            group.throughput(Throughput::Elements(2));
            group.bench_with_input(BenchmarkId::new(*name, slots), &slots, |b, &slots| {
                let mut a = by_name(name, slots, &AllocParams::default()).unwrap();
                let mut live: Vec<u32> = (0..slots / 2)
                    .map(|_| a.allocate(0).unwrap().slot)
                    .collect();
                let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
                b.iter(|| {
                    // xorshift: cheap, deterministic choice of the slot to free.
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let i = (x % live.len() as u64) as usize;
                    a.free(live[i]);
                    live[i] = a.allocate(0).unwrap().slot;
                });
            });
        }
    }
    group.finish();
}

criterion_group!(benches, steady_state);
criterion_main!(benches);
