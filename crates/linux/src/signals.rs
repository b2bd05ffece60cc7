//! Ctrl-C and SIGTERM during a run: the handler only raises a flag; the run checks it between
//! steps, stops, and its guard puts the machine back as it was.

use std::sync::atomic::{AtomicBool, Ordering};

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_sig: libc::c_int) {
    // Only an atomic store: async-signal-safe.
    INTERRUPTED.store(true, Ordering::SeqCst);
}

/// Install the handler for SIGINT and SIGTERM (idempotent).
pub fn install() {
    for sig in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: a zeroed sigaction is valid; the handler is an extern "C" fn that only does an
        // atomic store, which is async-signal-safe.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as usize;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(sig, &action, std::ptr::null_mut());
        }
    }
}

/// True once SIGINT or SIGTERM arrived.
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

/// Raise the flag without a signal (tests inject a failure mid-run this way).
pub fn raise_for_test() {
    INTERRUPTED.store(true, Ordering::SeqCst);
}

/// Lower the flag (before a new run).
pub fn clear() {
    INTERRUPTED.store(false, Ordering::SeqCst);
}
