//! Standard output and standard error that a closed reader does not stop: `nvmswap ... | head`
//! closes the pipe after ten lines, and std's `println!` / `eprintln!` panic on the write that
//! follows ("failed printing to stdout: Broken pipe"; so does `2>&1 | head` for stderr). The
//! Unix default, dying of SIGPIPE, would be no better here: a linux run stopped by it would skip
//! the restore of the machine's swap, zswap and cgroup. So the crate's `println!`, `print!`,
//! `eprintln!` and `eprint!` (main.rs) write through [`write`], and the diagnostics' subscriber
//! through [`Stderr`]: once a stream's reader is gone nothing more is written to it and the
//! command goes on to its end, restore included, with its own exit status.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

/// One of the process's two output streams.
#[derive(Clone, Copy)]
pub enum Stream {
    Out,
    Err,
}

/// Set once a write found standard output closed (or failed otherwise).
static OUT_CLOSED: AtomicBool = AtomicBool::new(false);
/// Set once a write to standard error failed: there is nowhere left to say anything.
static ERR_CLOSED: AtomicBool = AtomicBool::new(false);

impl Stream {
    fn closed(self) -> &'static AtomicBool {
        match self {
            Stream::Out => &OUT_CLOSED,
            Stream::Err => &ERR_CLOSED,
        }
    }
}

/// Writes `args` (and a newline if `newline`) to `stream`, or nothing once it is closed. A
/// failed write to standard output other than a closed pipe is said once on stderr; either way
/// that stream gets nothing more.
pub fn write(stream: Stream, args: std::fmt::Arguments, newline: bool) {
    if stream.closed().load(Ordering::Relaxed) {
        return;
    }
    let written = match stream {
        Stream::Out => write_to(&mut std::io::stdout().lock(), args, newline),
        Stream::Err => write_to(&mut std::io::stderr().lock(), args, newline),
    };
    if let Err(e) = written {
        stream.closed().store(true, Ordering::Relaxed);
        if matches!(stream, Stream::Out) && e.kind() != std::io::ErrorKind::BrokenPipe {
            write(
                Stream::Err,
                format_args!("nvmswap: warning: standard output: {e}; printing no more"),
                true,
            );
        }
    }
}

fn write_to(out: &mut impl Write, args: std::fmt::Arguments, newline: bool) -> std::io::Result<()> {
    out.write_fmt(args)?;
    if newline {
        out.write_all(b"\n")?;
    }
    Ok(())
}

/// Standard error for the diagnostics' subscriber (crate::progress): every write succeeds, and
/// once one fails nothing more is written. (`tracing_subscriber` reports a failed write with
/// std's `eprintln!`, which would panic on the same closed pipe.)
pub struct Stderr;

impl Write for Stderr {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if !ERR_CLOSED.load(Ordering::Relaxed) && std::io::stderr().write_all(buf).is_err() {
            ERR_CLOSED.store(true, Ordering::Relaxed);
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if !ERR_CLOSED.load(Ordering::Relaxed) && std::io::stderr().flush().is_err() {
            ERR_CLOSED.store(true, Ordering::Relaxed);
        }
        Ok(())
    }
}
