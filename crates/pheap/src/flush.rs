//! Cache-line write-back and ordering: the instructions the CPU offers (found with `cpuid`), and
//! the counters of every flush and fence by cause.
//!
//! `clwb` writes a line back and may keep it cached; `clflushopt` writes it back and evicts it;
//! both are weakly ordered and need an `sfence` before later stores are known to follow them.
//! `clflush` (every x86-64 CPU has it) is ordered by itself, so its fence is a no-op; we still
//! count the fence the protocol asks for, so counts do not depend on the CPU.

use serde::Serialize;

/// Size of a cache line, the unit of a flush (x86-64: 64 bytes, Intel SDM vol. 3A §11.5).
pub const LINE: usize = 64;

/// Which instruction writes lines back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FlushInsn {
    Clwb,
    Clflushopt,
    Clflush,
    /// Not x86-64: no write-back instruction is issued (counts and emulated latency only).
    None,
}

impl FlushInsn {
    /// The best the CPU offers: CPUID leaf 7 EBX bit 24 is CLWB, bit 23 CLFLUSHOPT; leaf 1 EDX
    /// bit 19 CLFSH (Intel SDM vol. 2A, CPUID).
    pub fn detect() -> FlushInsn {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::x86_64::{__cpuid, __cpuid_count};
            // `__cpuid`/`__cpuid_count` are safe to call on x86-64, which always has CPUID.
            let max_leaf = __cpuid(0).eax;
            if max_leaf >= 7 {
                let ebx = __cpuid_count(7, 0).ebx;
                if ebx & (1 << 24) != 0 {
                    return FlushInsn::Clwb;
                }
                if ebx & (1 << 23) != 0 {
                    return FlushInsn::Clflushopt;
                }
            }
            if __cpuid(1).edx & (1 << 19) != 0 {
                return FlushInsn::Clflush;
            }
        }
        FlushInsn::None
    }

    /// Write back the line holding `p`.
    #[inline]
    pub(crate) fn flush(self, p: *const u8) {
        #[cfg(target_arch = "x86_64")]
        match self {
            // SAFETY: `p` points into the pool's live mapping (callers pass addresses inside it);
            // CLWB only writes the line back, it does not change memory contents, and `detect`
            // found the instruction in CPUID.
            FlushInsn::Clwb => unsafe {
                std::arch::asm!("clwb [{0}]", in(reg) p, options(nostack, preserves_flags))
            },
            // SAFETY: as above; CLFLUSHOPT is present per CPUID and only writes back/evicts.
            FlushInsn::Clflushopt => unsafe {
                std::arch::asm!("clflushopt [{0}]", in(reg) p, options(nostack, preserves_flags))
            },
            // SAFETY: as above; every x86-64 CPU with CLFSH set executes CLFLUSH on any mapped
            // address without changing its contents.
            FlushInsn::Clflush => unsafe { std::arch::x86_64::_mm_clflush(p) },
            FlushInsn::None => {}
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = p;
    }

    /// Order the write-backs before later stores.
    #[inline]
    pub(crate) fn fence(self) {
        #[cfg(target_arch = "x86_64")]
        if matches!(self, FlushInsn::Clwb | FlushInsn::Clflushopt) {
            // SAFETY: SFENCE has no operands and no memory effects beyond ordering; SSE is part
            // of the x86-64 baseline.
            unsafe { std::arch::x86_64::_mm_sfence() }
        }
    }
}

/// Why a line was flushed or a fence issued (seed 004 §3.2: allocator metadata and logging are
/// the two sources of persistence cost beside the data itself).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cause {
    Allocator,
    Log,
    Data,
}

/// Flushes (lines written back) and fences by cause.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct ByCause {
    pub allocator: u64,
    pub log: u64,
    pub data: u64,
}

impl ByCause {
    pub fn add(&mut self, cause: Cause, n: u64) {
        match cause {
            Cause::Allocator => self.allocator += n,
            Cause::Log => self.log += n,
            Cause::Data => self.data += n,
        }
    }
    pub fn total(&self) -> u64 {
        self.allocator + self.log + self.data
    }
    pub fn minus(&self, before: &ByCause) -> ByCause {
        ByCause {
            allocator: self.allocator - before.allocator,
            log: self.log - before.log,
            data: self.data - before.data,
        }
    }
}

/// The pool's persistence counters.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Stats {
    pub flushes: ByCause,
    pub fences: ByCause,
    /// Bytes appended to the transaction log (records and their data).
    pub log_bytes: u64,
    /// Of which record headers (the log's metadata, seed 004 §4.3's 24 B per word record).
    pub log_meta_bytes: u64,
    /// Nanoseconds spent in emulated NVM write latency.
    pub emulated_ns: u64,
}

/// Spin for `ns` nanoseconds (the live NVM tier injects its emulated PCM latency the same way).
pub fn spin(ns: u64) {
    if ns == 0 {
        return;
    }
    let until = std::time::Instant::now() + std::time::Duration::from_nanos(ns);
    while std::time::Instant::now() < until {
        std::hint::spin_loop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detect_and_flush_a_line() {
        let insn = FlushInsn::detect();
        let buf = vec![7u8; 256];
        insn.flush(buf.as_ptr());
        insn.fence();
        assert_eq!(buf[0], 7);
        #[cfg(target_arch = "x86_64")]
        assert_ne!(insn, FlushInsn::None);
    }
}
