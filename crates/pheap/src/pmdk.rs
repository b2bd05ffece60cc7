//! The libpmemobj (PMDK) PHT benchmark, compiled from c/pmdk_pht.c by build.rs and called over
//! FFI, so both systems run in one process on the same file system.

use std::path::Path;

use crate::error::{PheapError, Result};

/// Seconds for `elements` puts and as many gets, and how many gets found their key.
#[derive(Debug, Clone, Copy)]
pub struct PmdkRun {
    pub seconds: f64,
    pub found: u64,
    /// What libpmemobj asked libpmem to write back during the puts, counted by interposing
    /// libpmem's flush, drain, persist and mem* functions (c/pmdk_pht.c); `None` if the
    /// interposition was not in effect (no call reached it).
    pub flushes: Option<PmdkFlushes>,
}

/// Counts of the interposed libpmem calls (the layout of c/pmdk_pht.c's struct).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct PmdkFlushes {
    /// Lines written back, by the phase of the put they happened in: inside
    /// `pmemobj_tx_alloc`, inside `pmemobj_tx_add_range`, at commit (`TX_END`: the snapshotted
    /// data, the allocations' redo log and the undo log's invalidation together), elsewhere.
    pub lines: [u64; 4],
    pub fences: u64,
    /// Calls of the flushing functions.
    pub calls: u64,
}

/// Whether this build has the libpmemobj benchmark.
pub fn available() -> bool {
    cfg!(pmdk)
}

#[cfg(pmdk)]
mod ffi {
    extern "C" {
        pub fn nvmswap_pmdk_pht(
            path: *const std::os::raw::c_char,
            pool_size: u64,
            elements: u64,
            seed: u64,
            seconds: *mut f64,
            found: *mut u64,
            flushes: *mut super::PmdkFlushes,
            err: *mut std::os::raw::c_char,
            errlen: usize,
        ) -> i32;
    }
}

/// Run the PHT benchmark on a new libpmemobj pool at `path` (which must not exist).
#[cfg(pmdk)]
pub fn run(path: &Path, pool_size: u64, elements: u64, seed: u64) -> Result<PmdkRun> {
    use std::os::unix::ffi::OsStrExt;
    if path.exists() {
        return Err(PheapError::Exists {
            path: path.to_path_buf(),
        });
    }
    let c_path = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|_| PheapError::Pmdk("path contains a NUL byte".into()))?;
    let mut seconds = 0.0;
    let mut found = 0;
    let mut flushes = PmdkFlushes::default();
    let mut err = vec![0u8; 512];
    // SAFETY: every pointer is valid for the call: a NUL-terminated path, three out-parameters
    // on our stack (the counts struct is `repr(C)` with the C struct's layout) and an error buffer of the length we pass; the C side writes nothing else and
    // keeps no pointer after returning.
    let rc = unsafe {
        ffi::nvmswap_pmdk_pht(
            c_path.as_ptr(),
            pool_size,
            elements,
            seed,
            &mut seconds,
            &mut found,
            &mut flushes,
            err.as_mut_ptr().cast(),
            err.len(),
        )
    };
    if rc != 0 {
        let end = err.iter().position(|&b| b == 0).unwrap_or(err.len());
        return Err(PheapError::Pmdk(
            String::from_utf8_lossy(&err[..end]).into(),
        ));
    }
    Ok(PmdkRun {
        seconds,
        found,
        flushes: (flushes.calls > 0).then_some(flushes),
    })
}

#[cfg(not(pmdk))]
pub fn run(_path: &Path, _pool_size: u64, _elements: u64, _seed: u64) -> Result<PmdkRun> {
    Err(PheapError::Pmdk(
        "built without libpmemobj (install libpmemobj-dev: scripts/install-deps)".into(),
    ))
}
