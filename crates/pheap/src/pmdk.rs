//! The libpmemobj (PMDK) PHT benchmark, compiled from c/pmdk_pht.c by build.rs and called over
//! FFI, so both systems run in one process on the same file system.

use std::path::Path;

use crate::error::{PheapError, Result};

/// Seconds for `elements` puts and as many gets, and how many gets found their key.
#[derive(Debug, Clone, Copy)]
pub struct PmdkRun {
    pub seconds: f64,
    pub found: u64,
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
    let mut err = vec![0u8; 512];
    // SAFETY: every pointer is valid for the call: a NUL-terminated path, two out-parameters on
    // our stack and an error buffer of the length we pass; the C side writes nothing else and
    // keeps no pointer after returning.
    let rc = unsafe {
        ffi::nvmswap_pmdk_pht(
            c_path.as_ptr(),
            pool_size,
            elements,
            seed,
            &mut seconds,
            &mut found,
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
    Ok(PmdkRun { seconds, found })
}

#[cfg(not(pmdk))]
pub fn run(_path: &Path, _pool_size: u64, _elements: u64, _seed: u64) -> Result<PmdkRun> {
    Err(PheapError::Pmdk(
        "built without libpmemobj (install libpmemobj-dev: scripts/install-deps)".into(),
    ))
}
