//! Standard output that a closed reader does not stop: `nvmswap ... | head` closes the pipe
//! after ten lines, and std's `println!` panics on the write that follows ("failed printing to
//! stdout: Broken pipe"). The Unix default, dying of SIGPIPE, would be no better here: a linux
//! run stopped by it would skip the restore of the machine's swap, zswap and cgroup. So the
//! crate's `println!` and `print!` (main.rs) write through [`write`]: once the reader is gone
//! they print nothing more and the command goes on to its end, restore included.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

/// Set once a write found standard output closed.
static CLOSED: AtomicBool = AtomicBool::new(false);

/// Writes `args` (and a newline if `newline`) to standard output, or nothing once it is closed.
/// Another write error than a closed pipe is said once on stderr, and printing stops as well.
pub fn write(args: std::fmt::Arguments, newline: bool) {
    if CLOSED.load(Ordering::Relaxed) {
        return;
    }
    let mut out = std::io::stdout().lock();
    let written = out.write_fmt(args).and_then(|()| {
        if newline {
            out.write_all(b"\n")
        } else {
            Ok(())
        }
    });
    if let Err(e) = written {
        CLOSED.store(true, Ordering::Relaxed);
        if e.kind() != std::io::ErrorKind::BrokenPipe {
            eprintln!("nvmswap: warning: standard output: {e}; printing no more");
        }
    }
}
