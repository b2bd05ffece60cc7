//! nvmswap-persist: a file as the `nvmswap_core::persist::Medium` of Heap-Wear's age counters.
//!
//! On a machine with a DAX/pmem file system the file is real NVM; elsewhere it is a file on disk
//! or tmpfs, which survives the process (and, with `flush` = fdatasync, power loss).

use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::Path;

use nvmswap_core::persist::{required_len, AgeStore, Medium, PersistError};

/// A file accessed with positioned reads and writes; `flush` is fdatasync.
pub struct FileMedium {
    file: File,
    len: u64,
}

impl FileMedium {
    pub fn open(path: &Path) -> Result<Self, PersistError> {
        let file = OpenOptions::new().read(true).write(true).open(path)?;
        let len = file.metadata()?.len();
        Ok(FileMedium { file, len })
    }

    /// Creates (or truncates) the file at `len` bytes.
    pub fn create(path: &Path, len: u64) -> Result<Self, PersistError> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)?;
        file.set_len(len)?;
        Ok(FileMedium { file, len })
    }
}

impl Medium for FileMedium {
    fn size(&self) -> u64 {
        self.len
    }

    fn read(&self, offset: u64, buf: &mut [u8]) -> Result<(), PersistError> {
        Ok(self.file.read_exact_at(buf, offset)?)
    }

    fn write(&mut self, offset: u64, data: &[u8]) -> Result<(), PersistError> {
        Ok(self.file.write_all_at(data, offset)?)
    }

    fn flush(&mut self) -> Result<(), PersistError> {
        Ok(self.file.sync_data()?)
    }
}

/// Heap-Wear's age counters in a file.
pub type AgeFile = AgeStore<FileMedium>;

/// Creates an age file for `slots` slots, all ages 0.
pub fn create_age_file(path: &Path, slots: u64) -> Result<AgeFile, PersistError> {
    AgeStore::format(FileMedium::create(path, required_len(slots))?, slots)
}

/// Opens an existing age file and recovers its ages.
pub fn open_age_file(path: &Path, slots: u64) -> Result<(AgeFile, Vec<u32>), PersistError> {
    AgeStore::open(FileMedium::open(path)?, slots)
}
