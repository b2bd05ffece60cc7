//! Crash-consistent age counters: seed 001 §3.3's shadow paging.
//!
//! Heap-Wear's ages live in DRAM and are written back to NVM now and then. A crash in the middle
//! of a write-back must not leave a mix of old and new ages, so the medium holds two arrays, the
//! *primary* and the *shadow*. A write-back fills the shadow, makes it durable, and only then
//! publishes it by one atomic write of the pointer word; the old primary becomes the next shadow.
//! Recovery reads the pointer and takes the array it names: complete old or complete new, never a
//! mix. Each array also carries its generation and a CRC-32, checked on recovery as a second line
//! of defence (a mismatch is reported, never papered over).
//!
//! Layout (little endian):
//!
//! ```text
//! 0      pointer: u64 = generation << 1 | index of the primary array
//! 64     array 0: generation u64, length u64, crc32 u32, 4 bytes pad, then length x u32 ages
//! 64+A   array 1: the same              (A = 24 + 4 * length, rounded up to 64)
//! ```
//!
//! The medium is a trait so this logic stays free of I/O: `nvmswap-persist` provides a file, the
//! tests here a memory image that tears writes at any byte.

/// Byte storage with an explicit durability point.
///
/// Contract: `flush` makes every earlier `write` durable; an aligned 8-byte `write` is atomic
/// (NVM's 8-byte store atomicity; for a file, an aligned write inside one sector).
pub trait Medium {
    fn size(&self) -> u64;
    fn read(&self, offset: u64, buf: &mut [u8]) -> Result<(), PersistError>;
    fn write(&mut self, offset: u64, data: &[u8]) -> Result<(), PersistError>;
    fn flush(&mut self) -> Result<(), PersistError>;
}

#[derive(Debug, thiserror::Error)]
pub enum PersistError {
    #[error("medium I/O failed: {0}")]
    Io(#[from] std::io::Error),
    #[error("medium is {have} bytes, the age store for {slots} slots needs {need}")]
    TooSmall { have: u64, need: u64, slots: u64 },
    #[error(
        "age array {index} fails its check ({what}): the medium was damaged outside a write-back"
    )]
    Corrupt { index: u8, what: &'static str },
    #[error("the medium stopped accepting writes (injected crash)")]
    Crashed,
}

const POINTER_BYTES: u64 = 64;
const HEADER_BYTES: u64 = 24;

fn array_bytes(slots: u64) -> u64 {
    (HEADER_BYTES + 4 * slots).div_ceil(64) * 64
}

/// Bytes a medium needs to hold the ages of `slots` slots.
pub fn required_len(slots: u64) -> u64 {
    POINTER_BYTES + 2 * array_bytes(slots)
}

/// The two age arrays on a medium and which one is primary.
pub struct AgeStore<M: Medium> {
    medium: M,
    slots: u64,
    primary: u8,
    generation: u64,
}

impl<M: Medium> AgeStore<M> {
    /// Writes an empty store (all ages 0, generation 0) over the medium.
    pub fn format(mut medium: M, slots: u64) -> Result<Self, PersistError> {
        check_len(&medium, slots)?;
        let zeros = vec![0u32; slots as usize];
        for index in 0..2u8 {
            write_array(&mut medium, slots, index, 0, &zeros)?;
        }
        medium.flush()?;
        medium.write(0, &0u64.to_le_bytes())?;
        medium.flush()?;
        Ok(AgeStore {
            medium,
            slots,
            primary: 0,
            generation: 0,
        })
    }

    /// Recovers the store: the array the pointer names, verified.
    pub fn open(medium: M, slots: u64) -> Result<(Self, Vec<u32>), PersistError> {
        check_len(&medium, slots)?;
        let mut word = [0u8; 8];
        medium.read(0, &mut word)?;
        let pointer = u64::from_le_bytes(word);
        let (generation, primary) = (pointer >> 1, (pointer & 1) as u8);
        let ages = read_array(&medium, slots, primary, generation)?;
        Ok((
            AgeStore {
                medium,
                slots,
                primary,
                generation,
            },
            ages,
        ))
    }

    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Writes `ages` back: shadow first, then the pointer flip.
    pub fn sync(&mut self, ages: &[u32]) -> Result<(), PersistError> {
        assert_eq!(
            ages.len() as u64,
            self.slots,
            "age array length is fixed at format"
        );
        let shadow = 1 - self.primary;
        let generation = self.generation + 1;
        write_array(&mut self.medium, self.slots, shadow, generation, ages)?;
        self.medium.flush()?;
        self.medium
            .write(0, &(generation << 1 | shadow as u64).to_le_bytes())?;
        self.medium.flush()?;
        self.primary = shadow;
        self.generation = generation;
        Ok(())
    }

    pub fn into_medium(self) -> M {
        self.medium
    }
}

fn check_len<M: Medium>(medium: &M, slots: u64) -> Result<(), PersistError> {
    let need = required_len(slots);
    if medium.size() < need {
        return Err(PersistError::TooSmall {
            have: medium.size(),
            need,
            slots,
        });
    }
    Ok(())
}

fn array_offset(slots: u64, index: u8) -> u64 {
    POINTER_BYTES + index as u64 * array_bytes(slots)
}

fn write_array<M: Medium>(
    medium: &mut M,
    slots: u64,
    index: u8,
    generation: u64,
    ages: &[u32],
) -> Result<(), PersistError> {
    let mut bytes = Vec::with_capacity(HEADER_BYTES as usize + 4 * ages.len());
    let body: Vec<u8> = ages.iter().flat_map(|a| a.to_le_bytes()).collect();
    bytes.extend_from_slice(&generation.to_le_bytes());
    bytes.extend_from_slice(&slots.to_le_bytes());
    bytes.extend_from_slice(&crc(generation, &body).to_le_bytes());
    bytes.extend_from_slice(&[0u8; 4]);
    bytes.extend_from_slice(&body);
    medium.write(array_offset(slots, index), &bytes)
}

fn read_array<M: Medium>(
    medium: &M,
    slots: u64,
    index: u8,
    generation: u64,
) -> Result<Vec<u32>, PersistError> {
    let mut bytes = vec![0u8; (HEADER_BYTES + 4 * slots) as usize];
    medium.read(array_offset(slots, index), &mut bytes)?;
    let word = |i: usize| u64::from_le_bytes(bytes[i..i + 8].try_into().expect("8 bytes"));
    if word(0) != generation {
        return Err(PersistError::Corrupt {
            index,
            what: "generation differs from the pointer's",
        });
    }
    if word(8) != slots {
        return Err(PersistError::Corrupt {
            index,
            what: "length differs",
        });
    }
    let stored = u32::from_le_bytes(bytes[16..20].try_into().expect("4 bytes"));
    let body = &bytes[HEADER_BYTES as usize..];
    if crc(generation, body) != stored {
        return Err(PersistError::Corrupt {
            index,
            what: "checksum",
        });
    }
    Ok(body
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes(c.try_into().expect("4 bytes")))
        .collect())
}

fn crc(generation: u64, body: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(&generation.to_le_bytes());
    h.update(body);
    h.finalize()
}

/// A memory image that can crash: after `budget` more bytes, writes stop (the one in flight is
/// torn at that byte) and every later call fails. Bytes written but never flushed are lost on
/// [`CrashingMedium::recover`] unless `keep_unflushed` says they happened to reach the medium.
#[derive(Debug, Clone)]
pub struct CrashingMedium {
    durable: Vec<u8>,
    volatile: Vec<u8>,
    budget: Option<u64>,
    crashed: bool,
}

impl CrashingMedium {
    pub fn new(len: usize) -> Self {
        CrashingMedium {
            durable: vec![0; len],
            volatile: vec![0; len],
            budget: None,
            crashed: false,
        }
    }

    /// Crash after `bytes` more bytes are written.
    pub fn crash_after(&mut self, bytes: u64) {
        self.budget = Some(bytes);
    }

    /// The image after a crash: the durable bytes, plus the unflushed ones if `keep_unflushed`.
    pub fn recover(&self, keep_unflushed: bool) -> CrashingMedium {
        let image = if keep_unflushed {
            &self.volatile
        } else {
            &self.durable
        };
        CrashingMedium {
            durable: image.clone(),
            volatile: image.clone(),
            budget: None,
            crashed: false,
        }
    }
}

impl Medium for CrashingMedium {
    fn size(&self) -> u64 {
        self.volatile.len() as u64
    }

    fn read(&self, offset: u64, buf: &mut [u8]) -> Result<(), PersistError> {
        let o = offset as usize;
        buf.copy_from_slice(&self.volatile[o..o + buf.len()]);
        Ok(())
    }

    fn write(&mut self, offset: u64, data: &[u8]) -> Result<(), PersistError> {
        if self.crashed {
            return Err(PersistError::Crashed);
        }
        let n = match self.budget {
            Some(b) if (data.len() as u64) > b => b as usize,
            _ => data.len(),
        };
        let o = offset as usize;
        self.volatile[o..o + n].copy_from_slice(&data[..n]);
        if let Some(b) = self.budget.as_mut() {
            *b -= n as u64;
        }
        if n < data.len() {
            self.crashed = true;
            return Err(PersistError::Crashed);
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), PersistError> {
        if self.crashed {
            return Err(PersistError::Crashed);
        }
        self.durable.copy_from_slice(&self.volatile);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let m = CrashingMedium::new(required_len(10) as usize);
        let mut store = AgeStore::format(m, 10).unwrap();
        let ages: Vec<u32> = (0..10).map(|i| i * 3).collect();
        store.sync(&ages).unwrap();
        store
            .sync(&ages.iter().map(|a| a + 1).collect::<Vec<_>>())
            .unwrap();
        let (store, got) = AgeStore::open(store.into_medium(), 10).unwrap();
        assert_eq!(got, ages.iter().map(|a| a + 1).collect::<Vec<_>>());
        assert_eq!(store.generation(), 2);
    }

    /// A crash at every byte of a write-back, with and without the unflushed bytes surviving,
    /// recovers exactly the old or exactly the new array.
    #[test]
    fn crash_at_every_byte_yields_old_or_new() {
        let slots = 13u64;
        let old: Vec<u32> = (0..slots as u32).map(|i| 100 + i).collect();
        let new: Vec<u32> = (0..slots as u32).map(|i| 200 + i).collect();
        let mut base =
            AgeStore::format(CrashingMedium::new(required_len(slots) as usize), slots).unwrap();
        base.sync(&old).unwrap();
        let base = base.into_medium();
        let write_back_bytes = HEADER_BYTES + 4 * slots + 8;
        let (mut saw_old, mut saw_new) = (false, false);
        for k in 0..=write_back_bytes + 1 {
            for keep_unflushed in [false, true] {
                let mut m = base.clone();
                m.crash_after(k);
                let (mut store, _) = AgeStore::open(m, slots).unwrap();
                let finished = store.sync(&new).is_ok();
                let crashed = store.into_medium().recover(keep_unflushed);
                let (_, got) = AgeStore::open(crashed, slots).unwrap();
                assert!(
                    got == old || got == new,
                    "crash after {k} bytes gave a mix: {got:?}"
                );
                if finished {
                    assert_eq!(got, new, "a completed write-back must survive");
                }
                saw_old |= got == old;
                saw_new |= got == new;
            }
        }
        assert!(saw_old && saw_new);
    }

    #[test]
    fn damage_outside_a_write_back_is_reported() {
        let m = CrashingMedium::new(required_len(4) as usize);
        let mut store = AgeStore::format(m, 4).unwrap();
        store.sync(&[1, 2, 3, 4]).unwrap();
        let mut m = store.into_medium();
        // Flip a byte of the primary (array 1 after one sync).
        let off = array_offset(4, 1) + HEADER_BYTES;
        m.write(off, &[0xff]).unwrap();
        assert!(matches!(
            AgeStore::open(m, 4),
            Err(PersistError::Corrupt { index: 1, .. })
        ));
        let small = CrashingMedium::new(10);
        assert!(matches!(
            AgeStore::format(small, 4),
            Err(PersistError::TooSmall { .. })
        ));
    }
}
