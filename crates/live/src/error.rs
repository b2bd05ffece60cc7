//! Errors of the live substrate, each with the value or file that caused it.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum LiveError {
    #[error("region size must be a positive multiple of 4096 bytes (got {0})")]
    RegionSize(u64),
    #[error("DRAM budget must be at least {min} pages of 4 KiB (got {got} bytes)")]
    Budget { got: u64, min: u64 },
    #[error("NVM tier size must be a positive multiple of 4096 bytes (got {0})")]
    NvmSize(u64),
    #[error("pool limit share must be within [0, 1] (got {0})")]
    PoolShare(f64),
    #[error("read-ahead must be at most {max} pages either side (got {got})")]
    ReadAhead { got: usize, max: usize },
    #[error("unknown NVM back-end '{0}' (expected emulated:<profile> or file:<path>)")]
    Backend(String),
    #[error("compressor '{0}': the live pager implements lz4 and zstd")]
    Compressor(String),
    #[error("NVM back-end file {path}: {source}")]
    BackendFile {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("NVM age file {path}: {source}")]
    Ages {
        path: PathBuf,
        source: nvmswap_core::persist::PersistError,
    },
    #[error("device profile: {0}")]
    Device(String),
    #[error("slot allocator: {0}")]
    Alloc(#[from] nvmswap_core::alloc::AllocError),
    #[error("userfaultfd: {0} (needs Linux >= 5.7 with write-protect support and root or vm.unprivileged_userfaultfd=1)")]
    Uffd(String),
    #[error("{what}: {source}")]
    Os {
        what: &'static str,
        source: std::io::Error,
    },
    #[error("at most {0} pagers on the SIGBUS fault path can live in one process")]
    TooManyPagers(usize),
    #[error("compressor context: {0}")]
    CompressorContext(std::io::Error),
    #[error("workload: {0}")]
    Spec(String),
}

impl LiveError {
    pub(crate) fn os(what: &'static str) -> LiveError {
        LiveError::Os {
            what,
            source: std::io::Error::last_os_error(),
        }
    }
}
