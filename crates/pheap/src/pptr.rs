//! Typed persistent pointers: an offset into the pool (virtual addresses do not survive a
//! restart, seed 004 §3.2.1), with the type of what it points to.

use std::marker::PhantomData;

/// A persistent pointer to a `T`; 0 is null. `T` is only a tag: the heap reads and writes
/// words, so the pointer is `Copy` and 8 bytes whatever `T` is.
#[derive(Debug)]
pub struct PPtr<T> {
    off: u64,
    _t: PhantomData<fn() -> T>,
}

impl<T> Clone for PPtr<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for PPtr<T> {}
impl<T> PartialEq for PPtr<T> {
    fn eq(&self, other: &Self) -> bool {
        self.off == other.off
    }
}
impl<T> Eq for PPtr<T> {}

impl<T> PPtr<T> {
    pub const NULL: PPtr<T> = PPtr {
        off: 0,
        _t: PhantomData,
    };
    pub fn from_off(off: u64) -> PPtr<T> {
        PPtr {
            off,
            _t: PhantomData,
        }
    }
    pub fn off(self) -> u64 {
        self.off
    }
    pub fn is_null(self) -> bool {
        self.off == 0
    }
}
