//! The SIGBUS path's signal handler (self-paging, as ExtMem does). With UFFD_FEATURE_SIGBUS the
//! kernel does not queue a fault on a registered range: it raises SIGBUS (BUS_ADRERR, the fault
//! address in `si_addr`) in the faulting thread. Our handler finds the pager whose region holds
//! the address and resolves the fault there; returning retries the faulting instruction.
//!
//! Async-signal-safety: the handler reads a fixed table of atomics, saves and restores errno,
//! and calls `fault::resolve_signalled`, which does not allocate or free. Pagers enter the table
//! when made and leave it when dropped; a per-entry count of handlers inside makes the drop wait
//! until none of them still looks at the pager. A SIGBUS that no pager claims goes to the handler
//! that was installed before ours (Rust's own, for stack overflows), or, if that was the default,
//! the default action is restored and the fault retried, so the process ends as it would have
//! without us.

use std::cell::Cell;
use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

use crate::error::LiveError;
use crate::fault::{resolve_signalled, Signalled};
use crate::state::Shared;

/// Pagers on the SIGBUS path alive at once in one process.
pub const MAX_PAGERS: usize = 64;

struct Entry {
    pager: AtomicPtr<Shared>,
    /// Handlers currently looking at `pager`.
    users: AtomicUsize,
}

static TABLE: [Entry; MAX_PAGERS] = [const {
    Entry {
        pager: AtomicPtr::new(std::ptr::null_mut()),
        users: AtomicUsize::new(0),
    }
}; MAX_PAGERS];

/// The SIGBUS disposition before ours, set once ours is installed.
static PREVIOUS: OnceLock<libc::sigaction> = OnceLock::new();

thread_local! {
    static IN_HANDLER: Cell<bool> = const { Cell::new(false) };
}

/// Whether this thread is inside the pager's SIGBUS handler. For tests that check that nothing
/// on the handler's path allocates (a counting global allocator asks this).
pub fn in_handler() -> bool {
    IN_HANDLER.with(|c| c.get())
}

fn install() -> Result<(), LiveError> {
    static INSTALLING: Mutex<()> = Mutex::new(());
    let _one_at_a_time = INSTALLING.lock().unwrap_or_else(|p| p.into_inner());
    if PREVIOUS.get().is_some() {
        return Ok(());
    }
    // SAFETY: sigaction structs are plain data; all-zero is a valid starting value.
    let mut ours: libc::sigaction = unsafe { std::mem::zeroed() };
    ours.sa_sigaction = on_sigbus as *const () as usize;
    // No SA_ONSTACK: the handler decompresses into a page-sized stack buffer, more than an
    // alternate signal stack is sized for. Every other signal is blocked while it runs, so no
    // other handler can run on this thread while it holds a pager lock.
    ours.sa_flags = libc::SA_SIGINFO;
    let mut previous: libc::sigaction = unsafe { std::mem::zeroed() };
    // SAFETY: both pointers are to live sigaction structs; on_sigbus has the SA_SIGINFO
    // signature and is async-signal-safe (module comment).
    let rc = unsafe {
        libc::sigfillset(&mut ours.sa_mask);
        libc::sigaction(libc::SIGBUS, &ours, &mut previous)
    };
    if rc != 0 {
        return Err(LiveError::os("install the SIGBUS handler"));
    }
    PREVIOUS
        .set(previous)
        .expect("installed once, under INSTALLING");
    Ok(())
}

/// Enter a pager into the handler's table; the index to `unregister` it with.
pub(crate) fn register(pager: *const Shared) -> Result<usize, LiveError> {
    install()?;
    for (i, e) in TABLE.iter().enumerate() {
        if e.pager
            .compare_exchange(
                std::ptr::null_mut(),
                pager.cast_mut(),
                Ordering::SeqCst,
                Ordering::SeqCst,
            )
            .is_ok()
        {
            return Ok(i);
        }
    }
    Err(LiveError::TooManyPagers(MAX_PAGERS))
}

/// Take a pager out of the table; returns once no handler looks at it any more.
pub(crate) fn unregister(index: usize) {
    let e = &TABLE[index];
    e.pager.store(std::ptr::null_mut(), Ordering::SeqCst);
    while e.users.load(Ordering::SeqCst) != 0 {
        std::thread::yield_now();
    }
}

/// Write `msg` to stderr and abort (async-signal-safe).
pub(crate) fn fatal(msg: &[u8]) -> ! {
    // SAFETY: write(2) from a live buffer, then abort(3); both are async-signal-safe.
    unsafe {
        libc::write(2, msg.as_ptr().cast(), msg.len());
        libc::abort()
    }
}

extern "C" fn on_sigbus(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    // SAFETY: errno is this thread's; saved and restored so the interrupted code never sees
    // the handler's system calls.
    let errno = unsafe { *libc::__errno_location() };
    // SAFETY: the kernel passes a valid siginfo to an SA_SIGINFO handler.
    let (code, addr) = unsafe { ((*info).si_code, (*info).si_addr() as usize) };
    IN_HANDLER.with(|c| c.set(true));
    let handled = code == libc::BUS_ADRERR && dispatch(addr);
    IN_HANDLER.with(|c| c.set(false));
    // SAFETY: as above.
    unsafe { *libc::__errno_location() = errno };
    if !handled {
        chain(sig, info, ctx);
    }
}

fn dispatch(addr: usize) -> bool {
    let mut lock_held = false;
    for e in &TABLE {
        if e.pager.load(Ordering::Acquire).is_null() {
            continue;
        }
        e.users.fetch_add(1, Ordering::SeqCst);
        let pager = e.pager.load(Ordering::SeqCst);
        let outcome = if pager.is_null() {
            Signalled::NotOurs
        } else {
            // SAFETY: the pager was in the table after `users` went up, so `unregister` (which
            // clears the entry first, then waits for `users` to reach 0) has not returned and the
            // pager's shared state is alive.
            resolve_signalled(unsafe { &*pager }, addr)
        };
        e.users.fetch_sub(1, Ordering::SeqCst);
        match outcome {
            Signalled::Resolved => return true,
            Signalled::NotOurs => {}
            Signalled::LockHeld => lock_held = true,
        }
    }
    if lock_held {
        fatal(b"nvmswap: SIGBUS on a thread holding a pager lock (pager code touched a region page?)\n");
    }
    false
}

fn chain(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    let handler = PREVIOUS.get().map(|p| (p.sa_sigaction, p.sa_flags));
    match handler {
        Some((h, flags)) if h != libc::SIG_DFL && h != libc::SIG_IGN => {
            if flags & libc::SA_SIGINFO != 0 {
                // SAFETY: an SA_SIGINFO handler has this signature; we pass what we were given.
                let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
                    unsafe { std::mem::transmute(h) };
                f(sig, info, ctx);
            } else {
                // SAFETY: a plain handler takes the signal number.
                let f: extern "C" fn(libc::c_int) = unsafe { std::mem::transmute(h) };
                f(sig);
            }
        }
        _ => {
            // SAFETY: restoring the default disposition; sigaction is async-signal-safe. The
            // faulting instruction then runs again and the default action ends the process.
            unsafe {
                let mut dfl: libc::sigaction = std::mem::zeroed();
                dfl.sa_sigaction = libc::SIG_DFL;
                libc::sigaction(libc::SIGBUS, &dfl, std::ptr::null_mut());
            }
        }
    }
}
