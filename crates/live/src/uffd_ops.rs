//! The few raw operations on pages that the `userfaultfd` crate does not offer: UFFDIO_COPY with
//! the write-protect mode (a page comes in clean and its first write tells us), UFFDIO_MOVE
//! (Linux >= 6.8) and MADV_DONTNEED. Every `unsafe` of the pager's page handling is here.

use std::os::fd::AsRawFd;

use userfaultfd::Uffd;

use crate::PAGE;

/// `struct uffdio_copy` and `struct uffdio_move` of include/uapi/linux/userfaultfd.h: the two
/// share this layout (the last field is the bytes copied or moved, or an error).
#[repr(C)]
struct UffdioTransfer {
    dst: u64,
    src: u64,
    len: u64,
    mode: u64,
    done: i64,
}

/// _IOWR(0xAA, 0x03, struct uffdio_copy) from include/uapi/linux/userfaultfd.h.
const UFFDIO_COPY: libc::c_ulong = 0xC028_AA03;
const UFFDIO_COPY_MODE_WP: u64 = 1 << 1;

/// UFFDIO_COPY or UFFDIO_MOVE of one page from `src` to `dst`; the bytes the kernel reports done.
///
/// # Safety
/// `request` is UFFDIO_COPY or UFFDIO_MOVE, and the caller has made sure that what the kernel
/// does to `src` and `dst` for it cannot change memory Rust code holds a reference to.
unsafe fn transfer(
    uffd: &Uffd,
    request: libc::c_ulong,
    dst: usize,
    src: usize,
    mode: u64,
) -> std::io::Result<i64> {
    let mut arg = UffdioTransfer {
        dst: dst as u64,
        src: src as u64,
        len: PAGE as u64,
        mode,
        done: 0,
    };
    // SAFETY: `arg` is a valid uffdio_copy/uffdio_move that lives across the call; the effect on
    // the two addresses is the caller's obligation (above).
    let rc = unsafe { libc::ioctl(uffd.as_raw_fd(), request, &mut arg as *mut UffdioTransfer) };
    if rc == 0 {
        Ok(arg.done)
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Outcome of placing a page.
#[derive(Debug, PartialEq, Eq)]
pub enum Placed {
    Done,
    /// Another resolution got there first (the page is present): nothing to do but wake.
    AlreadyPresent,
}

/// Atomically map a copy of `src` at `dst` (page-aligned, inside a range registered on `uffd`),
/// write-protected if `write_protect`, and wake threads waiting on it.
pub fn copy_in(
    uffd: &Uffd,
    dst: usize,
    src: &[u8; PAGE],
    write_protect: bool,
) -> std::io::Result<Placed> {
    assert_eq!(dst % PAGE, 0, "pages are placed at page boundaries");
    let mode = if write_protect {
        UFFDIO_COPY_MODE_WP
    } else {
        0
    };
    // SAFETY: the kernel reads PAGE bytes from `src` (a live buffer of that size) and only
    // installs a page at `dst` if none is present in a range registered on this uffd, so no memory
    // we hold a reference to changes under us.
    let rc = unsafe { transfer(uffd, UFFDIO_COPY, dst, src.as_ptr() as usize, mode) };
    let err = match rc {
        Ok(_) => return Ok(Placed::Done),
        Err(err) => err,
    };
    if err.raw_os_error() == Some(libc::EEXIST) {
        uffd.wake(dst as *mut _, PAGE)
            .map_err(|e| std::io::Error::other(e.to_string()))?;
        return Ok(Placed::AlreadyPresent);
    }
    Err(err)
}

/// _IOWR(0xAA, 0x05, struct uffdio_move).
const UFFDIO_MOVE: libc::c_ulong = 0xC028_AA05;
const UFFDIO_MOVE_MODE_DONTWAKE: u64 = 1 << 0;
/// UFFD_FEATURE_MOVE: the kernel offers UFFDIO_MOVE.
pub const FEATURE_MOVE: u64 = 1 << 16;

/// Atomically move the page at `src` to `dst` (both page-aligned, anonymous, in ranges
/// registered on `uffd`; `dst` must be empty). Afterwards `src` is empty, so its next touch
/// raises a missing fault. Wakes threads waiting on `dst` if `wake`. One TLB flush (for `src`)
/// instead of the two of write-protect then MADV_DONTNEED.
pub fn move_page(uffd: &Uffd, dst: usize, src: usize, wake: bool) -> std::io::Result<()> {
    assert!(
        dst.is_multiple_of(PAGE) && src.is_multiple_of(PAGE),
        "pages move at page boundaries"
    );
    let mode = if wake { 0 } else { UFFDIO_MOVE_MODE_DONTWAKE };
    // SAFETY: the kernel moves the page only between ranges registered on this uffd, which the
    // pager owns; the caller holds the pager lock, under which every page's state says where its
    // bytes are, and updates it.
    match unsafe { transfer(uffd, UFFDIO_MOVE, dst, src, mode) }? {
        moved if moved == PAGE as i64 => Ok(()),
        moved => Err(std::io::Error::other(format!(
            "UFFDIO_MOVE moved {moved} bytes"
        ))),
    }
}

/// Drop the page at `addr` so that its next touch raises a missing fault.
///
/// # Safety
///
/// As `zap_range` for one page.
pub unsafe fn zap(addr: usize) -> std::io::Result<()> {
    // SAFETY: the caller's contract is zap_range's for one page.
    unsafe { zap_range(addr, PAGE) }
}

/// Drop `len` bytes of pages from `addr` (one TLB flush for the range).
///
/// # Safety
///
/// The range must be pages of a mapping the pager made and owns (a region or its staging area)
/// whose contents are saved (or known to have a valid copy), with the pager lock held, so that
/// nobody relies on the bytes staying.
pub unsafe fn zap_range(addr: usize, len: usize) -> std::io::Result<()> {
    // SAFETY: the caller's contract: the range is the pager's own pages, saved; user threads
    // that touch a region page next fault and get the saved copy.
    let rc = unsafe { libc::madvise(addr as *mut _, len, libc::MADV_DONTNEED) };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Copy the current contents of a resident page.
///
/// # Safety
///
/// `addr` must be a resident, write-protected (or clean) page of a region, with the pager lock
/// held, so that it is mapped and no thread writes to it during the copy.
pub unsafe fn read_page(addr: usize, out: &mut [u8; PAGE]) {
    // SAFETY: the caller's contract keeps the page mapped and unwritten; `out` is a distinct
    // buffer of PAGE bytes.
    unsafe { std::ptr::copy_nonoverlapping(addr as *const u8, out.as_mut_ptr(), PAGE) };
}
