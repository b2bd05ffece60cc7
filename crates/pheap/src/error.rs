use std::path::PathBuf;

/// Why a pool could not be created, opened or used.
#[derive(Debug, thiserror::Error)]
pub enum PheapError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "{path}: not an nvmswap persistent heap pool (magic {found:02x?}); refusing to reformat it"
    )]
    NotAPool { path: PathBuf, found: Vec<u8> },
    #[error("{path}: pool layout version {found} is newer than this build's {supported}")]
    NewerVersion {
        path: PathBuf,
        found: u32,
        supported: u32,
    },
    #[error("{path}: pool layout version {found} is not supported (this build reads {supported})")]
    OldVersion {
        path: PathBuf,
        found: u32,
        supported: u32,
    },
    #[error("{path}: truncated: the header says {expected} bytes, the file has {actual}")]
    Truncated {
        path: PathBuf,
        expected: u64,
        actual: u64,
    },
    #[error("pool of {size} bytes is too small (at least {min} bytes)")]
    TooSmall { size: u64, min: u64 },
    #[error("{path}: header checksum mismatch (stored {stored:#010x}, computed {computed:#010x})")]
    Checksum {
        path: PathBuf,
        stored: u32,
        computed: u32,
    },
    #[error("{path}: pool was made for layout '{found}', not '{expected}'")]
    Layout {
        path: PathBuf,
        found: String,
        expected: String,
    },
    #[error("{path}: {what}")]
    Corrupt { path: PathBuf, what: String },
    #[error("{path} already exists; refusing to overwrite it")]
    Exists { path: PathBuf },
    #[error("out of persistent memory: no room for {size} bytes")]
    OutOfMemory { size: u64 },
    #[error("transaction log full: a record of {needed} bytes does not fit in {capacity}")]
    LogFull { needed: u64, capacity: u64 },
    #[error("offset {off:#x} is not an allocated object")]
    BadObject { off: u64 },
    #[error("write of {len} bytes at {off:#x} falls outside the pool's heap")]
    OutOfBounds { off: u64, len: u64 },
    #[error("unknown {what} '{name}' (known: {known})")]
    Unknown {
        what: &'static str,
        name: String,
        known: String,
    },
    #[error("libpmemobj benchmark: {0}")]
    Pmdk(String),
}

pub type Result<T> = std::result::Result<T, PheapError>;
