//! Running code in a forked child that lives in the memory cgroup.
//!
//! The child must not allocate: `fork` in a process that may have other threads (progress bars)
//! copies only the calling thread, and a lock another thread held in the allocator would stay
//! locked forever. So the parent prepares everything (paths as C strings, the touch list, a shared
//! result buffer), and the child only makes system calls and writes into memory mapped before the
//! fork.

use std::ffi::CString;
use std::time::Duration;

use crate::error::LinuxError;

/// Anonymous memory mapped before a fork: private (the child's pages are charged to the child's
/// cgroup when it first touches them) or shared (results the parent reads).
pub struct Mapping {
    ptr: *mut u8,
    len: usize,
}

impl Mapping {
    pub fn new(len: usize, shared: bool) -> Result<Self, LinuxError> {
        let kind = if shared {
            libc::MAP_SHARED
        } else {
            libc::MAP_PRIVATE
        };
        // SAFETY: a fresh anonymous mapping; no existing memory is affected.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len.max(1),
                libc::PROT_READ | libc::PROT_WRITE,
                kind | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(LinuxError::io(
                "mmap",
                format!("{len} bytes"),
                std::io::Error::last_os_error(),
            ));
        }
        Ok(Mapping {
            ptr: ptr.cast(),
            len,
        })
    }

    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The mapping as u64 words (the shared result buffer).
    pub fn words(&self) -> &[std::sync::atomic::AtomicU64] {
        // SAFETY: the mapping is page-aligned, `len` bytes long and lives as long as `self`;
        // AtomicU64 has the layout of u64 and any bit pattern is valid.
        unsafe { std::slice::from_raw_parts(self.ptr.cast(), self.len / 8) }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly the region mmap returned.
        unsafe { libc::munmap(self.ptr.cast(), self.len.max(1)) };
    }
}

/// One page of memory for single-page O_DIRECT requests (page-aligned, as O_DIRECT needs), the
/// probes' lone requests at random offsets of a scratch file.
pub struct DirectPage {
    buf: Mapping,
}

impl DirectPage {
    /// A page filled with 0x5a (what the writes put on the disk).
    pub fn new() -> Result<Self, LinuxError> {
        let buf = Mapping::new(PAGE, false)?;
        // SAFETY: the mapping is PAGE bytes long and owned by `buf`; nothing else refers to it.
        unsafe { std::ptr::write_bytes(buf.as_ptr(), 0x5a, PAGE) };
        Ok(DirectPage { buf })
    }

    /// One request of the page at byte `offset` of `file` (a write or a read), timed around the
    /// system call: (issued, completed) in monotonic ns. `what` names the file in an error.
    pub fn timed_io(
        &mut self,
        file: &std::fs::File,
        write: bool,
        offset: u64,
        what: &'static str,
    ) -> Result<(u64, u64), LinuxError> {
        use std::os::unix::fs::FileExt;
        // SAFETY: the mapping is PAGE bytes long, page-aligned and borrowed mutably through
        // `self` for the length of this call only.
        let page = unsafe { std::slice::from_raw_parts_mut(self.buf.as_ptr(), PAGE) };
        let t = monotonic_ns();
        if write {
            file.write_all_at(page, offset)
        } else {
            file.read_exact_at(page, offset)
        }
        .map_err(|e| LinuxError::io("O_DIRECT I/O on", what, e))?;
        Ok((t, monotonic_ns()))
    }
}

const PAGE: usize = nvmswap_core::PAGE_SIZE as usize;

/// Write the calling process's pid to an open-able file (a cgroup's `cgroup.procs`) without
/// allocating. Returns false on failure.
pub fn join_cgroup_no_alloc(procs_file: &CString) -> bool {
    let mut digits = [0u8; 20];
    // SAFETY: getpid has no preconditions.
    let mut pid = unsafe { libc::getpid() } as u64;
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (pid % 10) as u8;
        pid /= 10;
        if pid == 0 {
            break;
        }
    }
    // SAFETY: a valid C string; the fd is closed below.
    let fd = unsafe { libc::open(procs_file.as_ptr(), libc::O_WRONLY) };
    if fd < 0 {
        return false;
    }
    let n = digits.len() - i;
    // SAFETY: writing `n` initialised bytes from a live stack array.
    let written = unsafe { libc::write(fd, digits[i..].as_ptr().cast(), n) };
    // SAFETY: closing the fd opened above.
    unsafe { libc::close(fd) };
    written == n as isize
}

/// CLOCK_MONOTONIC in nanoseconds (vDSO: tens of ns, no system call).
#[inline]
/// The calling thread's CPU time so far (`CLOCK_THREAD_CPUTIME_ID`, ns; the scheduler's exact
/// runtime, not tick-sampled). No allocation: a tab child may call it.
pub fn thread_cpu_ns() -> u64 {
    clock_ns(libc::CLOCK_THREAD_CPUTIME_ID)
}

pub fn monotonic_ns() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC)
}

fn clock_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid out-pointer.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Sleeps until CLOCK_MONOTONIC reads `deadline_ns` (absolute, so a wake-up early by a signal
/// sleeps again for the rest).
pub fn sleep_until_monotonic_ns(deadline_ns: u64) {
    let ts = libc::timespec {
        tv_sec: (deadline_ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (deadline_ns % 1_000_000_000) as libc::c_long,
    };
    // SAFETY: `ts` is a valid timespec; the remaining-time pointer may be null with
    // TIMER_ABSTIME.
    while unsafe {
        libc::clock_nanosleep(
            libc::CLOCK_MONOTONIC,
            libc::TIMER_ABSTIME,
            &ts,
            std::ptr::null_mut(),
        )
    } == libc::EINTR
    {}
}

/// Sets the calling thread's timer slack (how late the kernel may end its sleeps, 50 µs by
/// default) and returns the value it had.
pub fn set_timer_slack_ns(ns: u64) -> u64 {
    // SAFETY: PR_GET_TIMERSLACK takes no pointer and returns the slack; PR_SET_TIMERSLACK takes
    // a value. Both act on the calling thread only.
    let old = unsafe { libc::prctl(libc::PR_GET_TIMERSLACK, 0, 0, 0, 0) };
    // SAFETY: as above.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, ns as libc::c_ulong, 0, 0, 0) };
    old.max(0) as u64
}

/// (major, minor) page faults of the calling thread so far.
#[inline]
pub fn thread_faults() -> (u64, u64) {
    let c = thread_counters();
    (c.major_faults, c.minor_faults)
}

/// The calling thread's fault and context-switch counters (`getrusage(RUSAGE_THREAD)`): what a
/// timed window read on both sides tells about the window besides its time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThreadCounters {
    pub major_faults: u64,
    pub minor_faults: u64,
    /// `ru_nvcsw`: times the thread gave up its CPU to sleep (a lock, I/O, a throttle).
    pub slept: u64,
    /// `ru_nivcsw`: times another task took its CPU while it could run.
    pub preempted: u64,
}

/// The calling thread's [`ThreadCounters`] so far: one system call.
#[inline]
pub fn thread_counters() -> ThreadCounters {
    // SAFETY: a zeroed rusage is valid; getrusage fills it.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: valid out-pointer.
    unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) };
    ThreadCounters {
        major_faults: ru.ru_majflt as u64,
        minor_faults: ru.ru_minflt as u64,
        slept: ru.ru_nvcsw as u64,
        preempted: ru.ru_nivcsw as u64,
    }
}

/// The calling thread's involuntary context switches so far (`ru_nivcsw`): times another task
/// took its CPU while it could run.
pub fn thread_preemptions() -> u64 {
    thread_counters().preempted
}

/// Fork a child that runs `body` and exits with its return code.
///
/// # Safety
///
/// `body` must not allocate, free or take any lock another thread may hold (the child has only
/// the calling thread; see the module comment): only system calls and writes to memory mapped
/// before the fork.
pub unsafe fn fork_child(body: impl FnOnce() -> i32) -> Result<libc::pid_t, LinuxError> {
    // SAFETY: the child only runs `body`, which by the caller's contract makes system calls and
    // writes to memory mapped before the fork, then leaves with _exit (no destructors, no
    // atexit handlers).
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(LinuxError::Worker(format!(
            "fork: {}",
            std::io::Error::last_os_error()
        )));
    }
    if pid == 0 {
        let code = body();
        // SAFETY: leaving the child without running the parent's destructors.
        unsafe { libc::_exit(code) };
    }
    Ok(pid)
}

/// Wait for `pid`, calling `tick` every 50 ms; kills the child and returns
/// [`LinuxError::Interrupted`] when a signal arrived. Returns the exit code.
pub fn wait_child(pid: libc::pid_t, mut tick: impl FnMut()) -> Result<i32, LinuxError> {
    loop {
        let mut status = 0;
        // SAFETY: waiting for our own child with a valid status out-pointer.
        let rc = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
        if rc == pid {
            if libc::WIFEXITED(status) {
                return Ok(libc::WEXITSTATUS(status));
            }
            return Err(LinuxError::Worker(format!(
                "child {pid} ended by signal {} (out of memory in its cgroup?)",
                libc::WTERMSIG(status)
            )));
        }
        if rc < 0 {
            return Err(LinuxError::Worker(format!(
                "waitpid: {}",
                std::io::Error::last_os_error()
            )));
        }
        if crate::signals::interrupted() {
            kill_and_reap(pid);
            return Err(LinuxError::Interrupted);
        }
        tick();
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// SIGKILL a child and reap it.
pub fn kill_and_reap(pid: libc::pid_t) {
    // SAFETY: signalling and reaping our own child.
    unsafe {
        libc::kill(pid, libc::SIGKILL);
        let mut status = 0;
        libc::waitpid(pid, &mut status, 0);
    }
}
