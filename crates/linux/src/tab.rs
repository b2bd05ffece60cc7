//! A tab as a real process: a forked child in the memory cgroup that holds the site's memory as
//! real bytes and, on command, touches its working set and renders.
//!
//! Protocol (8-byte little-endian words over pipes): the driver writes `SWITCH`, `EXIT`,
//! `LIVE` followed by `[background_second or NONE, grow_from, grow_to]`, or `SCROLL` followed by
//! `[step, steps, 0]`; after loading, after each switch, each scroll step and each second of
//! life the tab answers `[latency_ns, faulting_touches, major_faults, cpu_ns, began_ns,
//! answered_ns, began_cpu]` and has written the latency of each faulting touch into its shared
//! fault buffer (the top bit set for a major fault, [`FaultSample`]). A tab killed (discard, or
//! the cgroup's OOM killer) closes its answer pipe, which the driver reads as EOF.
//!
//! Which pages a switch and a second of life touch is core's decision
//! (`nvmswap_core::workload::life`): the tab computes it from its [`TabLife`], its visit count
//! and the second the driver names (pure functions that do not allocate), the same pages `sim`
//! and `live` touch. Its mapping is made at its largest size (`TabLife::max_pages`) up front.
//!
//! Like [`crate::worker`], the child never allocates.

use std::ffi::CString;
use std::sync::atomic::Ordering;

use nvmswap_core::discard::LOAD_CHECK_PAGES;
use nvmswap_core::workload::content::fill_page;
use nvmswap_core::workload::life::{scroll_step, TabLife};
use nvmswap_core::workload::tabs::SiteType;
use nvmswap_core::PAGE_SIZE;

use crate::affinity::{self, CpuSet};
use crate::error::LinuxError;
use crate::worker::{self, Mapping};

const SWITCH: u64 = 1;
const EXIT: u64 = 0;
const LIVE: u64 = 2;
const SCROLL: u64 = 3;
/// `LIVE`'s background second when the tab is in front (it only grows).
const NONE: u64 = u64::MAX;

/// The shape of one tab after scaling.
#[derive(Debug, Clone, Copy)]
pub struct TabShape {
    /// Which pages it touches, as every substrate decides it.
    pub life: TabLife,
    pub compress_ratio: f64,
    pub same_filled_share: f64,
    pub load_cpu_ns: u64,
    pub render_cpu_ns: u64,
}

impl TabShape {
    /// `scale` shrinks memory only; CPU times stay as the site gives them (as in `sim`, whose
    /// scale shrinks sizes, not times).
    pub fn of(site: &SiteType, scale: f64) -> Self {
        TabShape {
            life: TabLife::of(site, scale),
            compress_ratio: site.compress_ratio,
            same_filled_share: site.same_filled_share,
            load_cpu_ns: site.load_cpu_ns,
            render_cpu_ns: site.render_cpu_ns,
        }
    }

    /// Pages at load.
    pub fn pages(&self) -> usize {
        self.life.pages as usize
    }
}

/// The answer to a load or a switch.
#[derive(Debug, Clone, Copy, Default)]
pub struct Answer {
    pub latency_ns: u64,
    pub faulting_touches: u64,
    pub major_faults: u64,
    /// The tab's CPU time (`CLOCK_THREAD_CPUTIME_ID`) from having read the command word to
    /// having answered: its arguments, its touches, their faults' kernel work and the getrusage
    /// and clock calls around each, the answer's write; not the blocking read between commands,
    /// the time it slept on a read or waited for a CPU.
    pub cpu_ns: u64,
    /// When (`CLOCK_MONOTONIC`, the driver's clock too) the tab read the command word, and
    /// when it wrote the answer: with the driver's own times they place the tab's part in the
    /// second (how long a told tab waited to run, how long its answer waited to be read).
    pub began_ns: u64,
    pub answered_ns: u64,
    /// The CPU it began on (`sched_getcpu` after reading the command word): beside the
    /// driver's CPU when it wrote the command, whether the wake-up went to another CPU.
    pub began_cpu: u64,
    /// The touches that did not fault, counted by their timed access in the classes of
    /// [`ACCESS_CLASS_NS`], and the ns each class's accesses took in sum.
    pub resident_accesses: [u64; 4],
    pub resident_access_ns: [u64; 4],
    /// Of those, the writes: their count, how many were not in the first class, and the ns
    /// those took (a write may set the page's dirty bit as well as its accessed bit).
    pub resident_writes: [u64; 3],
}

/// An answer's size: eighteen words (within PIPE_BUF, so written atomically). Every answer is
/// written whole, unused words zero.
const ANSWER_BYTES: usize = 144;

/// Upper bounds (ns) of the first three classes a timed access that did not fault falls in;
/// the fourth holds the rest. Below 250 ns: a load or store that the caches or a page walk
/// served (this machine's dependent random access over 512 MiB of one process takes ~250 ns,
/// docs/experiments/validation.md, "Where a resident touch's time goes"); up to 1 µs: what more
/// a page walk can cost, setting a cleared accessed bit among it (calibrate's accessed-bit
/// probe: ~350 ns more); beyond: something the guest does not count as a fault (an interrupt
/// taken inside the access, or the hypervisor's own fault on the page), split at 10 µs.
pub const ACCESS_CLASS_NS: [u64; 3] = [250, 1_000, 10_000];

/// A tab's load answer and the latencies of its demand-zero faults.
pub type Loaded = (Answer, Vec<FaultSample>);

/// The driver's handle on a tab process.
pub struct TabProcess {
    pub pid: libc::pid_t,
    cmd_fd: libc::c_int,
    answer_fd: libc::c_int,
    /// The load's progress: the child writes the pages it has loaded (one word) after every
    /// [`LOAD_CHECK_PAGES`] of them, so that the driver reads Chrome's rule during the load.
    /// Closed (-1) once the load is over.
    progress_fd: libc::c_int,
    faults: Mapping,
    pub shape: TabShape,
}

/// What a loading tab said last ([`TabProcess::next_load_news`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoadNews {
    /// It has loaded this many pages and goes on.
    Progress(u32),
    /// Its load answer can be read ([`TabProcess::answer`]), or it died (the read finds EOF).
    Done,
}

fn pipe() -> Result<(libc::c_int, libc::c_int), LinuxError> {
    let mut fds = [0; 2];
    // SAFETY: valid out-array of two fds.
    if unsafe { libc::pipe(fds.as_mut_ptr()) } != 0 {
        return Err(LinuxError::Worker(format!(
            "pipe: {}",
            std::io::Error::last_os_error()
        )));
    }
    Ok((fds[0], fds[1]))
}

fn spin(ns: u64) {
    let end = worker::monotonic_ns() + ns;
    while worker::monotonic_ns() < end {
        std::hint::spin_loop();
    }
}

/// The CPU the calling thread runs on (u64::MAX if the kernel cannot say).
pub fn this_cpu() -> u64 {
    // SAFETY: sched_getcpu takes no arguments and touches no memory of ours.
    let cpu = unsafe { libc::sched_getcpu() };
    u64::try_from(cpu).unwrap_or(u64::MAX)
}

/// Writes an answer: `words` and zeros after them, [`ANSWER_BYTES`] in all.
fn write_words(fd: libc::c_int, words: &[u64]) -> bool {
    let mut buf = [0u8; ANSWER_BYTES];
    for (i, w) in words.iter().take(ANSWER_BYTES / 8).enumerate() {
        buf[i * 8..i * 8 + 8].copy_from_slice(&w.to_le_bytes());
    }
    // SAFETY: writing all ANSWER_BYTES initialised bytes of a stack buffer (within PIPE_BUF:
    // one atomic write).
    unsafe { libc::write(fd, buf.as_ptr().cast(), ANSWER_BYTES) == ANSWER_BYTES as isize }
}

fn read_exact(fd: libc::c_int, buf: &mut [u8]) -> bool {
    let mut got = 0;
    while got < buf.len() {
        // SAFETY: reading into the unfilled tail of `buf`.
        let n = unsafe { libc::read(fd, buf[got..].as_mut_ptr().cast(), buf.len() - got) };
        if n < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
            continue;
        }
        if n <= 0 {
            return false;
        }
        got += n as usize;
    }
    true
}

/// A command's three argument words; `None` when the driver's end closed.
fn read_args(fd: libc::c_int) -> Option<[u64; 3]> {
    let mut buf = [0u8; 24];
    if !read_exact(fd, &mut buf) {
        return None;
    }
    let w = |i: usize| u64::from_le_bytes(buf[i * 8..i * 8 + 8].try_into().unwrap_or([0; 8]));
    Some([w(0), w(1), w(2)])
}

/// The child's life: join the cgroup, load, then serve switches until told to exit. The
/// arguments are the pieces prepared before the fork (no struct: nothing may allocate). Exit
/// codes: 3 the cgroup join failed, 4 an answer could not be written.
#[allow(clippy::too_many_arguments)]
fn tab_main(
    procs: &CString,
    memory: *mut u8,
    faults: &[std::sync::atomic::AtomicU64],
    shape: TabShape,
    seed: u64,
    tab: u32,
    cmd_fd: libc::c_int,
    answer_fd: libc::c_int,
    progress_fd: libc::c_int,
) -> i32 {
    if !worker::join_cgroup_no_alloc(procs) {
        return 3;
    }
    let t0 = worker::monotonic_ns();
    let cpu0 = worker::thread_cpu_ns();
    let mut load = Touches::default();
    let content = (shape.compress_ratio, shape.same_filled_share);
    for p in 0..shape.life.pages {
        fill(memory, &mut load, faults, content, (seed, tab, p));
        let loaded = p + 1;
        if loaded % LOAD_CHECK_PAGES == 0 && loaded < shape.life.pages {
            let word = u64::from(loaded).to_le_bytes();
            // SAFETY: one word of a stack buffer to our pipe end (atomic; the pipe holds a
            // load's every word: 8 bytes a MiB loaded). A driver gone is seen at the answer.
            unsafe { libc::write(progress_fd, word.as_ptr().cast(), word.len()) };
        }
    }
    // SAFETY: our own end, once; the driver stops reading progress at the answer.
    unsafe { libc::close(progress_fd) };
    spin(shape.load_cpu_ns);
    let t1 = worker::monotonic_ns();
    let answer = [
        t1 - t0,
        load.faulting,
        0,
        worker::thread_cpu_ns() - cpu0,
        t0,
        t1,
        this_cpu(),
    ];
    if !write_words(answer_fd, &answer) {
        return 4;
    }
    let mut visit = 0u32;
    let mut pages = shape.life.pages;
    // The scroll under way: its set is drawn once, at its first step, as sim and live draw it
    // (the tab may grow between steps; the set must not change with it).
    let mut scroll: Vec<(u32, bool)> = Vec::new();
    loop {
        let mut cmd = [0u8; 8];
        if !read_exact(cmd_fd, &mut cmd) {
            return 0;
        }
        let mut done = Touches::default();
        let began = worker::monotonic_ns();
        let began_cpu = this_cpu();
        let cpu0 = worker::thread_cpu_ns();
        match u64::from_le_bytes(cmd) {
            SWITCH => {
                for (p, write) in shape.life.switch_touches(tab, pages, visit) {
                    touch(memory, &mut done, faults, p, write);
                }
                visit += 1;
                let r0 = worker::monotonic_ns();
                spin(shape.render_cpu_ns);
                done.ns += worker::monotonic_ns() - r0;
            }
            SCROLL => {
                let Some([step, steps, _]) = read_args(cmd_fd) else {
                    return 0;
                };
                let (step, steps) = (step as u32, steps as u32);
                if step == 0 {
                    scroll = shape.life.scroll_touches(tab, pages, visit);
                }
                for &(p, write) in &scroll[scroll_step(scroll.len(), step, steps)] {
                    touch(memory, &mut done, faults, p, write);
                }
            }
            LIVE => {
                let Some([second, from, to]) = read_args(cmd_fd) else {
                    return 0;
                };
                let (from, to) = (from as u32, to as u32);
                // Growth: new pages written with their contents, never past the mapping.
                for p in from.max(pages)..to.min(shape.life.max_pages) {
                    fill(memory, &mut done, faults, content, (seed, tab, p));
                    pages = p + 1;
                }
                if second != NONE {
                    for (p, write) in shape.life.background_touches(tab, pages, second) {
                        touch(memory, &mut done, faults, p, write);
                    }
                }
            }
            EXIT => return 0,
            _ => return 5,
        }
        let cpu = worker::thread_cpu_ns() - cpu0;
        let answered = worker::monotonic_ns();
        let [c0, c1, c2, c3] = done.resident;
        let [n0, n1, n2, n3] = done.resident_ns;
        let [w0, w1, w2] = done.resident_writes;
        let words = [
            done.ns,
            done.faulting,
            done.majors,
            cpu,
            began,
            answered,
            began_cpu,
            c0,
            c1,
            c2,
            c3,
            n0,
            n1,
            n2,
            n3,
            w0,
            w1,
            w2,
        ];
        if !write_words(answer_fd, &words) {
            return 4;
        }
    }
}

/// What a tab's touches cost: their time, how many faulted, how many of those were major, and
/// the others by their access's class ([`ACCESS_CLASS_NS`]) with each class's time.
#[derive(Default)]
struct Touches {
    ns: u64,
    faulting: u64,
    majors: u64,
    resident: [u64; 4],
    resident_ns: [u64; 4],
    /// Of those, the writes: their count, how many took [`ACCESS_CLASS_NS`]`[0]` or more, and
    /// the ns those took.
    resident_writes: [u64; 3],
}

/// Times one access through `access`, counting it (and storing its latency in `faults`) if it
/// faulted.
fn timed(
    done: &mut Touches,
    faults: &[std::sync::atomic::AtomicU64],
    write: bool,
    access: impl FnOnce(),
) {
    let before = worker::thread_counters();
    let a = worker::monotonic_ns();
    access();
    let b = worker::monotonic_ns();
    let after = worker::thread_counters();
    done.ns += b - a;
    let faults_before = before.major_faults + before.minor_faults;
    if after.major_faults + after.minor_faults > faults_before {
        let sample = FaultSample {
            ns: b - a,
            major: after.major_faults > before.major_faults,
            preempted: after.preempted > before.preempted,
            slept: after.slept > before.slept,
        };
        if (done.faulting as usize) < faults.len() {
            faults[done.faulting as usize].store(sample.word(), Ordering::Relaxed);
        }
        done.faulting += 1;
        done.majors += sample.major as u64;
    } else {
        let ns = b - a;
        let class = ACCESS_CLASS_NS.iter().filter(|&&bound| ns >= bound).count();
        done.resident[class] += 1;
        done.resident_ns[class] += ns;
        if write {
            done.resident_writes[0] += 1;
            if class > 0 {
                done.resident_writes[1] += 1;
                done.resident_writes[2] += ns;
            }
        }
    }
}

/// The bits of a fault-buffer word: a major fault (the thread's `ru_majflt` rose across the
/// touch), a preemption and a sleep inside it (`ru_nivcsw`, `ru_nvcsw` rose); the other 61
/// bits are its latency in ns.
const MAJOR_BIT: u64 = 1 << 63;
const PREEMPTED_BIT: u64 = 1 << 62;
const SLEPT_BIT: u64 = 1 << 61;
const LATENCY_MASK: u64 = SLEPT_BIT - 1;

/// One faulting touch as the tab timed it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FaultSample {
    pub ns: u64,
    /// The kernel counted it major: it read its page in (device, zram or zswap), not a
    /// demand-zero page or a swap-cache hit.
    pub major: bool,
    /// Another task took the CPU inside the timed window: the fault's time includes a wait
    /// for the CPU (a wake-up that preempted, or the slice's end, acted on at the fault's
    /// return to user space or at a `cond_resched` in it).
    pub preempted: bool,
    /// The tab slept inside the timed window (a device read, a page lock, a throttle).
    pub slept: bool,
}

impl FaultSample {
    fn word(self) -> u64 {
        self.ns.min(LATENCY_MASK)
            | if self.major { MAJOR_BIT } else { 0 }
            | if self.preempted { PREEMPTED_BIT } else { 0 }
            | if self.slept { SLEPT_BIT } else { 0 }
    }

    fn from_word(word: u64) -> FaultSample {
        FaultSample {
            ns: word & LATENCY_MASK,
            major: word & MAJOR_BIT != 0,
            preempted: word & PREEMPTED_BIT != 0,
            slept: word & SLEPT_BIT != 0,
        }
    }
}

/// Reads (a write: increments) a byte of page `p`.
fn touch(
    memory: *mut u8,
    done: &mut Touches,
    faults: &[std::sync::atomic::AtomicU64],
    p: u32,
    write: bool,
) {
    timed(done, faults, write, || {
        // SAFETY: `p` is below the tab's current size, inside its private mapping of
        // `max_pages` pages (core's `Life` keeps offsets below the size).
        unsafe {
            let byte = memory.add(p as usize * PAGE_SIZE as usize + 8);
            if write {
                byte.write_volatile(byte.read_volatile().wrapping_add(1));
            } else {
                byte.read_volatile();
            }
        }
    });
}

/// The first touch of page `p` of `tab` (a demand-zero fault, counted as seed 000 Fig. 5 and
/// `sim` count them; it may stall in direct reclaim when the cgroup is at its limit), then its
/// contents: `content` is the tab's (compress ratio, same-filled share).
fn fill(
    memory: *mut u8,
    done: &mut Touches,
    faults: &[std::sync::atomic::AtomicU64],
    content: (f64, f64),
    (seed, tab, p): (u64, u32, u32),
) {
    let at = p as usize * PAGE_SIZE as usize;
    // SAFETY: first byte of page `p` < max_pages, inside the mapping.
    timed(done, faults, true, || unsafe {
        memory.add(at).write_volatile(0)
    });
    // SAFETY: page `p` lies inside this tab's private mapping of `max_pages` pages.
    let page = unsafe { std::slice::from_raw_parts_mut(memory.add(at), PAGE_SIZE as usize) };
    fill_page(
        page,
        seed,
        ((tab as u64) << 32) | p as u64,
        content.0,
        content.1,
    );
}

impl TabProcess {
    /// Fork the tab; it runs on `cpus` (every CPU if None), joins the cgroup whose
    /// `cgroup.procs` is `procs` and loads its memory. Returns once the tab has loaded (or died
    /// trying).
    pub fn spawn(
        cpus: Option<&CpuSet>,
        procs: &CString,
        shape: TabShape,
        seed: u64,
        tab: u32,
    ) -> Result<(TabProcess, Option<Loaded>), LinuxError> {
        let mut tab_proc = Self::spawn_loading(cpus, procs, shape, seed, tab)?;
        let answer = tab_proc.answer();
        Ok((tab_proc, answer))
    }

    /// [`TabProcess::spawn`] without waiting for the load: follow it with
    /// [`TabProcess::next_load_news`] and read its answer with [`TabProcess::answer`].
    pub fn spawn_loading(
        cpus: Option<&CpuSet>,
        procs: &CString,
        shape: TabShape,
        seed: u64,
        tab: u32,
    ) -> Result<TabProcess, LinuxError> {
        let room = shape.life.max_pages as usize;
        let memory = Mapping::new(room * PAGE_SIZE as usize, false)?;
        // Room for one latency per page: a load faults on every page.
        let faults = Mapping::new(room * 8, true)?;
        let (cmd_read, cmd_write) = pipe()?;
        let (answer_read, answer_write) = pipe()?;
        let (progress_read, progress_write) = pipe()?;
        let base = memory.as_ptr();
        let words = faults.words();
        let child_body = || {
            // SAFETY: closing the driver's ends in the child.
            unsafe {
                libc::close(cmd_write);
                libc::close(answer_read);
                libc::close(progress_read);
            }
            tab_main(
                procs,
                base,
                words,
                shape,
                seed,
                tab,
                cmd_read,
                answer_write,
                progress_write,
            )
        };
        // Forked on `cpus`, the child never runs elsewhere (crate::affinity::forking_on).
        // SAFETY: the child closes the driver's pipe ends and runs `tab_main`, which joins the
        // cgroup without allocating and only makes system calls and writes to memory mapped
        // before the fork, as `fork_child` requires.
        let pid = affinity::forking_on(cpus, || unsafe { worker::fork_child(child_body) })??;
        // SAFETY: closing the child's ends in the driver, so EOF means the tab died.
        unsafe {
            libc::close(cmd_read);
            libc::close(answer_write);
            libc::close(progress_write);
        }
        // The driver never touches the tab's memory; unmapping it here keeps later forks light.
        drop(memory);
        Ok(TabProcess {
            pid,
            cmd_fd: cmd_write,
            answer_fd: answer_read,
            progress_fd: progress_read,
            faults,
            shape,
        })
    }

    /// Sleeps until the loading tab has news: the pages it has loaded after another
    /// [`LOAD_CHECK_PAGES`], or that its load answer is there (or it died). After `Done` the
    /// progress pipe is closed and every later call says `Done` at once.
    pub fn next_load_news(&mut self) -> Result<LoadNews, LinuxError> {
        if self.progress_fd < 0 {
            return Ok(LoadNews::Done);
        }
        let mut fds = [self.answer_fd, self.progress_fd].map(|fd| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        });
        loop {
            // SAFETY: two pollfds on the stack for our own pipe ends.
            let n = unsafe { libc::poll(fds.as_mut_ptr(), 2, -1) };
            if n >= 0 {
                break;
            }
            let err = std::io::Error::last_os_error();
            if err.kind() != std::io::ErrorKind::Interrupted {
                return Err(LinuxError::Worker(format!("poll on a loading tab: {err}")));
            }
        }
        // The answer first: progress words still queued behind it are stale.
        if fds[0].revents != 0 {
            self.close_progress();
            return Ok(LoadNews::Done);
        }
        // Every word queued (a slow driver finds several): the last is the news.
        let mut buf = [0u8; 8 * 64];
        // SAFETY: reading into a stack buffer from our own pipe end, which poll found readable.
        let n = unsafe { libc::read(self.progress_fd, buf.as_mut_ptr().cast(), buf.len()) };
        if n < 8 {
            // EOF (the load ended, its answer is on its way) or a torn read: the answer tells.
            self.close_progress();
            return Ok(LoadNews::Done);
        }
        let last = (n as usize / 8 - 1) * 8;
        let word = u64::from_le_bytes(buf[last..last + 8].try_into().unwrap_or([0; 8]));
        Ok(LoadNews::Progress(word as u32))
    }

    fn close_progress(&mut self) {
        if self.progress_fd >= 0 {
            // SAFETY: our own pipe end, closed once (marked -1 after).
            unsafe { libc::close(self.progress_fd) };
            self.progress_fd = -1;
        }
    }

    fn read_answer(&mut self) -> Option<Answer> {
        let mut buf = [0u8; ANSWER_BYTES];
        if !read_exact(self.answer_fd, &mut buf) {
            return None;
        }
        let w = |i: usize| u64::from_le_bytes(buf[i * 8..i * 8 + 8].try_into().unwrap_or([0; 8]));
        Some(Answer {
            latency_ns: w(0),
            faulting_touches: w(1),
            major_faults: w(2),
            cpu_ns: w(3),
            began_ns: w(4),
            answered_ns: w(5),
            began_cpu: w(6),
            resident_accesses: [w(7), w(8), w(9), w(10)],
            resident_access_ns: [w(11), w(12), w(13), w(14)],
            resident_writes: [w(15), w(16), w(17)],
        })
    }

    /// Switch to the tab; `None` when the tab died (killed by the cgroup's OOM killer).
    pub fn switch(&mut self) -> Option<(Answer, Vec<FaultSample>)> {
        // A dead reader gives EPIPE, which the CLI ignores (SIGPIPE is ignored by Rust's
        // runtime), and then EOF below.
        if !self.command(&[SWITCH]) {
            return None;
        }
        self.answer()
    }

    /// Asks the tab to live one second (core's `TabSecond`: grow from `grow.0` to `grow.1`
    /// pages, then touch background second `second` if given) without waiting; collect the
    /// answer with [`TabProcess::answer`]. False when the tab died.
    pub fn live(&mut self, second: Option<u64>, grow: Option<(u32, u32)>) -> bool {
        let (from, to) = grow.unwrap_or((0, 0));
        self.command(&[LIVE, second.unwrap_or(NONE), from as u64, to as u64])
    }

    /// Step `step` of `steps` of a scroll (the tab is in front): the tab touches its part of
    /// its scroll set and answers. `None` when the tab died.
    pub fn scroll(&mut self, step: u32, steps: u32) -> Option<(Answer, Vec<FaultSample>)> {
        if !self.command(&[SCROLL, step as u64, steps as u64, 0]) {
            return None;
        }
        self.answer()
    }

    /// Waits until the tab's answer can be read (or the tab died: the read then finds EOF);
    /// false when the wait itself failed.
    pub fn wait_for_answer(&self) -> bool {
        let mut fd = libc::pollfd {
            fd: self.answer_fd,
            events: libc::POLLIN,
            revents: 0,
        };
        loop {
            // SAFETY: one pollfd on the stack for our own pipe end.
            let n = unsafe { libc::poll(&mut fd, 1, -1) };
            if n >= 0 {
                return true;
            }
            if std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
                return false;
            }
        }
    }

    /// The answer to the last command and its faults' latencies; `None` when the tab died.
    pub fn answer(&mut self) -> Option<(Answer, Vec<FaultSample>)> {
        let answer = self.read_answer()?;
        let lat = self.fault_latencies(answer.faulting_touches);
        Some((answer, lat))
    }

    fn command(&mut self, words: &[u64]) -> bool {
        let mut buf = [0u8; 32];
        let n = words.len().min(4) * 8;
        for (i, w) in words.iter().take(4).enumerate() {
            buf[i * 8..i * 8 + 8].copy_from_slice(&w.to_le_bytes());
        }
        // SAFETY: writing `n` initialised bytes of a stack buffer to our pipe (at most 32
        // bytes: atomic for a pipe).
        unsafe { libc::write(self.cmd_fd, buf.as_ptr().cast(), n) == n as isize }
    }

    fn fault_latencies(&self, n: u64) -> Vec<FaultSample> {
        let n = (n as usize).min(self.faults.words().len());
        self.faults.words()[..n]
            .iter()
            .map(|w| FaultSample::from_word(w.load(Ordering::Relaxed)))
            .collect()
    }

    /// Kill the tab (a discard) and reap it.
    pub fn kill(self) {
        drop(self);
    }
}

impl Drop for TabProcess {
    fn drop(&mut self) {
        // SAFETY: closing our own pipe ends once.
        unsafe {
            libc::close(self.cmd_fd);
            libc::close(self.answer_fd);
        }
        self.close_progress();
        worker::kill_and_reap(self.pid);
    }
}

/// Tab processes the tab-second probe keeps (told their seconds in turn, so that each meets its
/// memory as a background tab does, after the others ran), the seconds each lives, and the
/// scale of their sites (the validation matrix's first).
pub const SECOND_PROBE_TABS: u32 = 8;
pub const SECOND_PROBE_SECONDS: u64 = 40;
pub const SECOND_PROBE_SCALE: f64 = 0.1;
/// Sleeps the tab-second probe leaves before each round of its later phases, ms: every tab then
/// idles that long between its seconds, as a run's background tabs idle through the rest of
/// each second's wall time (sim's tabs 0.125 s at x0.1, 0.075 s at x0.05; validation.md, "A
/// tab's own work after it idled"), where the first phase's tabs idle only while the other
/// seven run theirs. On this VM a small footprint's lines are gone after ~100 ms
/// however little the guest touched ([`IDLE_ACCESS_MS`]); the tab's own code, stack and the
/// kernel's paths for its command are such a footprint. The 40 ms phase measures between 10
/// and 100 ms, where x0.05's tabs idle (75 ms), instead of drawing a line across it: on
/// 2026-12-06 its point lay 0-1 µs above that line (validation.md, "The probe's 40 ms phase").
pub const SECOND_PROBE_IDLE_MS: [u64; 4] = [10, 40, 100, 1_000];
/// Rounds (every tab told one second) of each of those phases: 96 tab-seconds to fit; the four
/// phases take ~14 s.
pub const SECOND_PROBE_IDLE_ROUNDS: u64 = 12;

/// Tab-seconds whose touches all found their page mapped (no fault), split into the touches'
/// own timed accesses (the answer's `latency_ns`: each access between its two clock reads) and
/// the rest of the tab's CPU (the `getrusage` pair and the clock reads around every touch, the
/// command and the answer). Taken the same way in a run and in calibrate's tab-second probe, it
/// tells a run's dearer touches apart: the memory access itself, or the system calls around it.
#[derive(Debug, Clone, Default)]
pub struct ResidentSeconds {
    fit: nvmswap_core::metrics::TabSecondCosts,
    touches: u64,
    access_ns: u64,
    /// The accesses by class ([`ACCESS_CLASS_NS`]): counts and ns.
    classes: [u64; 4],
    classes_ns: [u64; 4],
    /// The writes among them: their count, how many were not in the first class, and the ns
    /// those took.
    writes: [u64; 3],
}

impl ResidentSeconds {
    /// A tab-second none of whose touches faulted: its touches, their timed accesses' ns (the
    /// answer's `latency_ns`), the tab's CPU ns, and its answer's access classes.
    pub fn record(&mut self, touches: u64, access_ns: u64, cpu_ns: u64, a: &Answer) {
        self.fit.record(touches, 0, 0, cpu_ns);
        self.touches += touches;
        self.access_ns += access_ns;
        for k in 0..4 {
            self.classes[k] += a.resident_accesses[k];
            self.classes_ns[k] += a.resident_access_ns[k];
        }
        for k in 0..3 {
            self.writes[k] += a.resident_writes[k];
        }
    }

    /// `{count, share, slow_share, slow_mean_ns}`: the writes among the accesses, their share
    /// of them, and the share of writes beyond the first class with their mean; beside the
    /// classes' shares over all accesses it says whether writes are the slower ones.
    fn writes_json(&self) -> serde_json::Value {
        let all: u64 = self.classes.iter().sum();
        let [n, slow, slow_ns] = self.writes;
        serde_json::json!({
            "count": n,
            "share": (all > 0).then(|| n as f64 / all as f64),
            "slow_share": (n > 0).then(|| slow as f64 / n as f64),
            "slow_mean_ns": (slow > 0).then(|| slow_ns as f64 / slow as f64),
        })
    }

    /// The timed accesses' mean per touch, ns (`None` before any touch).
    pub fn access_ns_per_touch(&self) -> Option<f64> {
        (self.touches > 0).then(|| self.access_ns as f64 / self.touches as f64)
    }

    /// `{seconds, touches, access_ns_per_touch, access_classes, fixed_us, per_touch_ns, r2}`:
    /// the CPU fitted over these seconds as fixed + per touch (core's `TabSecondCosts`; zeros
    /// and `r2` null when the touch counts never vary), the access part of a touch, and the
    /// accesses by class (`[{from_ns, to_ns (null: no bound), count, share, mean_ns,
    /// ns_per_touch}]`, the last the class's part of `access_ns_per_touch`).
    pub fn to_json(&self) -> serde_json::Value {
        let fit = self.fit.to_json();
        let all: u64 = self.classes.iter().sum();
        let classes: Vec<serde_json::Value> = (0..4)
            .map(|k| {
                let (n, ns) = (self.classes[k], self.classes_ns[k]);
                serde_json::json!({
                    "from_ns": if k == 0 { 0 } else { ACCESS_CLASS_NS[k - 1] },
                    "to_ns": ACCESS_CLASS_NS.get(k),
                    "count": n,
                    "share": (all > 0).then(|| n as f64 / all as f64),
                    "mean_ns": (n > 0).then(|| ns as f64 / n as f64),
                    "ns_per_touch": (all > 0).then(|| ns as f64 / all as f64),
                })
            })
            .collect();
        serde_json::json!({
            "seconds": self.fit.len(),
            "touches": self.touches,
            "access_ns_per_touch": self.access_ns_per_touch(),
            "access_classes": classes,
            "writes": self.writes_json(),
            "fixed_us": fit["fixed_us"],
            "per_touch_ns": fit["per_touch_ns"],
            "r2": fit["r2"],
        })
    }
}

/// What a tab's second costs its CPU, fitted over the probe's seconds: `fixed_ns` per second
/// (reading the command's arguments, computing its touch set, the answer's pipe write; the
/// blocking read between commands is in neither part) and `per_touch_ns` per background touch of a resident page.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct TabSecondProbe {
    pub fixed_ns: f64,
    pub per_touch_ns: f64,
    /// Least-squares fit's R² and the seconds it fitted (those with touches and without).
    pub r2: f64,
    pub seconds: usize,
    /// Touches per second over the fitted seconds: smallest, median, largest.
    pub touches_min_median_max: (usize, usize, usize),
    /// Of `per_touch_ns`, the timed access alone (mean over the fitted seconds,
    /// [`ResidentSeconds`]); the rest is the system calls around it.
    pub access_ns_per_touch: f64,
    /// Those seconds' accesses by class, and the writes among them
    /// ([`ResidentSeconds::to_json`]).
    pub resident: serde_json::Value,
    /// The same fit per phase, by how long its tabs idled between their seconds: the first
    /// phase's (tabs in turn) and one per [`SECOND_PROBE_IDLE_MS`] (empty where a phase did
    /// not fit; the costs file then takes none).
    pub by_idle: Vec<TabSecondAtIdle>,
    /// The driver's side of a tab's second, medians over every tab-second of the probe, in
    /// the driver's thread CPU: working out the tab's touch set (core's `Life::second` collects
    /// it), telling the tab (the command's pipe write, which wakes it) and taking its answer
    /// (the answer's read once written, its fault latencies' copy).
    pub driver: DriverSecond,
}

/// One phase of the tab-second probe: its tab-seconds' median idle time (from the tab's
/// previous answer to its reading this command, `CLOCK_MONOTONIC`) and the fit of their CPU.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct TabSecondAtIdle {
    pub idle_ms: f64,
    pub fixed_ns: f64,
    pub per_touch_ns: f64,
    pub r2: f64,
    pub seconds: usize,
    /// The median of each second's CPU less its touches at `per_touch_ns`, for the round's
    /// first tab-seconds (the first task after the phase's sleep) and for the others.
    pub first_of_round_ns: f64,
    pub rest_of_round_ns: f64,
}

/// The driver's CPU per tab told a second, ns (medians): see [`TabSecondProbe::driver`]. A told
/// tab begins either on the driver's CPU (a local wake-up: it runs once the driver sleeps) or
/// on another (a remote one: the write sends that CPU an interrupt, which in a VM exits to the
/// host, and the CPU, idle, has to wake); the two cost the driver differently, so each has its
/// own figures, with the share of remote ones. A kind the probe never saw takes the other's.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
pub struct DriverSecond {
    pub touch_set_ns: f64,
    pub tell_local_ns: f64,
    pub tell_remote_ns: f64,
    pub answer_ns: f64,
    /// A remotely woken tab's wait from its command written to its running (its answer's
    /// `began_ns`), the machine otherwise idle: waking a CPU that idles (a halted vCPU).
    pub wake_remote_ns: f64,
    /// Of the probe's tells, the share whose tab began on another CPU than the driver's.
    pub remote_share: f64,
}

/// A tab's CPU per second of background life, measured on the tab processes of the linux
/// substrate (the same code as a run's: [`TabProcess::live`], the tab's thread CPU clock across
/// the command): [`SECOND_PROBE_TABS`] tabs of the bundled sites at [`SECOND_PROBE_SCALE`],
/// resident (the root memory cgroup: no limit), each told [`SECOND_PROBE_SECONDS`] seconds, the
/// tabs in turn and one at a time (no CPU contention; the probe's own pipe round trip is the
/// run's). Each second's CPU against its touch count, fitted as `fixed + per_touch x touches`.
/// Then the same tabs again, [`SECOND_PROBE_IDLE_ROUNDS`] rounds after each sleep of
/// [`SECOND_PROBE_IDLE_MS`], each phase fitted apart ([`TabSecondProbe::by_idle`]): what a
/// second costs a tab that idled as long as a run's background tabs do between theirs. The
/// driver's figures and the accesses' split are the first phase's.
pub fn probe_tab_second(seed: u64) -> Result<TabSecondProbe, LinuxError> {
    let procs_path = crate::cgroup::memory_root().join("cgroup.procs");
    let procs =
        CString::new(procs_path.to_string_lossy().as_bytes()).map_err(|_| LinuxError::Config {
            name: procs_path.display().to_string(),
            detail: "a path with a NUL byte".into(),
        })?;
    let sites = nvmswap_core::workload::tabs::default_sites();
    let mut tabs = Vec::new();
    for tab in 0..SECOND_PROBE_TABS {
        let site = &sites[tab as usize % sites.len()];
        let shape = TabShape {
            load_cpu_ns: 0,
            render_cpu_ns: 0,
            ..TabShape::of(site, SECOND_PROBE_SCALE)
        };
        let (proc_, loaded) = TabProcess::spawn(None, &procs, shape, seed, tab)?;
        if loaded.is_none() {
            return Err(LinuxError::Worker(format!(
                "tab-second probe: tab {tab} died while loading"
            )));
        }
        tabs.push((tab, shape, proc_));
    }
    let mut samples: Vec<(f64, f64)> = Vec::new();
    let mut resident = ResidentSeconds::default();
    let (mut sets, mut answers) = (Vec::new(), Vec::new());
    // The tells whose tab began on the driver's CPU and on another: the driver's CPU for each,
    // and (remote) the tab's wait to run.
    let (mut tells_local, mut tells_remote, mut wakes_remote) =
        (Vec::new(), Vec::new(), Vec::new());
    // Phases: the tabs in turn, then after each sleep. Per phase the resident seconds'
    // `(touches, cpu_ns)` and each one's idle time since its tab's previous answer, ns.
    let phases: Vec<(u64, u64)> = std::iter::once((0, SECOND_PROBE_SECONDS))
        .chain(
            SECOND_PROBE_IDLE_MS
                .iter()
                .map(|&ms| (ms, SECOND_PROBE_IDLE_ROUNDS)),
        )
        .collect();
    let mut phase_samples: Vec<PhaseSeconds> = Vec::new();
    let mut last_answer: Vec<Option<u64>> = vec![None; tabs.len()];
    let mut second = 0u64;
    for (phase, &(sleep_ms, rounds)) in phases.iter().enumerate() {
        let mut seconds = PhaseSeconds::default();
        for _ in 0..rounds {
            if sleep_ms > 0 {
                std::thread::sleep(std::time::Duration::from_millis(sleep_ms));
            }
            for (k, (tab, shape, proc_)) in tabs.iter_mut().enumerate() {
                let c0 = worker::thread_cpu_ns();
                let set: Vec<(u32, bool)> = shape
                    .life
                    .background_touches(*tab, shape.life.pages, second)
                    .collect();
                let touches = std::hint::black_box(set).len();
                let c1 = worker::thread_cpu_ns();
                let driver_cpu = this_cpu();
                if !proc_.live(Some(second), None) {
                    return Err(LinuxError::Worker(format!(
                        "tab-second probe: tab {tab} died"
                    )));
                }
                let c2 = worker::thread_cpu_ns();
                let told = worker::monotonic_ns();
                // The answer is waited for apart, so that its read finds it written (the run's
                // driver mostly does: it reads the answers in order after telling every tab).
                if !proc_.wait_for_answer() {
                    return Err(LinuxError::Worker(format!(
                        "tab-second probe: tab {tab} died"
                    )));
                }
                let c3 = worker::thread_cpu_ns();
                let Some((answer, _)) = proc_.answer() else {
                    return Err(LinuxError::Worker(format!(
                        "tab-second probe: tab {tab} died"
                    )));
                };
                let c4 = worker::thread_cpu_ns();
                let idle = last_answer[k].map(|a| answer.began_ns.saturating_sub(a));
                last_answer[k] = Some(answer.answered_ns);
                if phase == 0 {
                    sets.push((c1 - c0) as f64);
                    if answer.began_cpu == driver_cpu {
                        tells_local.push((c2 - c1) as f64);
                    } else {
                        tells_remote.push((c2 - c1) as f64);
                        wakes_remote.push(answer.began_ns.saturating_sub(told) as f64);
                    }
                    answers.push((c4 - c3) as f64);
                }
                // A second whose touches faulted (a page the host or DAMON took) is not the
                // resident case the fit is for; nor a tab's first, which has no idle time (the
                // tab just spawned: its fixed part came 2-3 µs above the in-turn phase's others
                // on 2026-12-05, and sim adds the idle curve's steps to this fit's).
                if let (0, Some(idle)) = (answer.faulting_touches, idle) {
                    if phase == 0 {
                        samples.push((touches as f64, answer.cpu_ns as f64));
                        resident.record(touches as u64, answer.latency_ns, answer.cpu_ns, &answer);
                    }
                    seconds.fitted.push((touches as f64, answer.cpu_ns as f64));
                    seconds.first_of_round.push(k == 0);
                    seconds.idles.push(idle as f64);
                }
                second += 1;
            }
        }
        phase_samples.push(seconds);
    }
    drop(tabs);
    let mut fit = fit_tab_second(&samples).ok_or_else(|| {
        LinuxError::Worker(format!(
            "tab-second probe: {} seconds without faults do not give a fit (need two touch counts)",
            samples.len()
        ))
    })?;
    fit.access_ns_per_touch = resident.access_ns_per_touch().unwrap_or(0.0);
    fit.resident = resident.to_json();
    fit.by_idle = by_idle(phase_samples);
    use crate::calibrate::median;
    let told = (tells_local.len() + tells_remote.len()).max(1);
    let remote_share = tells_remote.len() as f64 / told as f64;
    let (local, remote) = (median(tells_local), median(tells_remote));
    fit.driver = DriverSecond {
        touch_set_ns: median(sets).unwrap_or(0.0),
        tell_local_ns: local.or(remote).unwrap_or(0.0),
        tell_remote_ns: remote.or(local).unwrap_or(0.0),
        answer_ns: median(answers).unwrap_or(0.0),
        wake_remote_ns: median(wakes_remote).unwrap_or(0.0),
        remote_share,
    };
    Ok(fit)
}

/// The costs file's comment on the tab-second probe's fit (each line a TOML comment).
pub fn tab_second_comment(t: &TabSecondProbe) -> String {
    let (lo, mid, hi) = t.touches_min_median_max;
    format!(
        "# A tab's own CPU per background second apart from its touches: {SECOND_PROBE_TABS} tab processes\n\
         # of the bundled sites (x{SECOND_PROBE_SCALE}, resident) told {SECOND_PROBE_SECONDS} seconds each in turn; each second's\n\
         # thread CPU against its touches ({lo}..{hi}, median {mid}) over {} seconds without faults\n\
         # (each tab's first, just spawned, left out: it has not idled as a run's tabs have):\n\
         # {:.0} ns + {:.0} ns x touches (R² {:.3}); the fixed part. Of a touch, the timed access\n\
         # alone {:.0} ns (the rest is the getrusage pair and clock reads around it).\n",
        t.seconds, t.fixed_ns, t.per_touch_ns, t.r2, t.access_ns_per_touch
    )
}

/// The costs file's `tab_second_by_idle` with its comment (each phase's fit), or nothing where
/// a phase did not fit.
pub fn tab_second_by_idle_toml(t: &TabSecondProbe) -> String {
    if t.by_idle.is_empty() {
        return "# tab_second_by_idle: not measured (a phase of the probe gave no fit)\n".into();
    }
    let mut out = format!(
        "# The same tabs' seconds in phases apart: in turn as above, then {SECOND_PROBE_IDLE_ROUNDS} rounds after\n\
         # each sleep of {SECOND_PROBE_IDLE_MS:?} ms; per phase its seconds' median idle time (since the\n\
         # tab's previous answer) and fit:\n"
    );
    for p in &t.by_idle {
        out.push_str(&format!(
            "#   {:.2} ms: {:.0} ns + {:.0} ns x touches (R² {:.3}, {} seconds); past the touches,\n\
             #     median {:.0} ns for a round's first tab, {:.0} ns for the others\n",
            p.idle_ms,
            p.fixed_ns,
            p.per_touch_ns,
            p.r2,
            p.seconds,
            p.first_of_round_ns,
            p.rest_of_round_ns
        ));
    }
    let points: Vec<String> = t
        .by_idle
        .iter()
        .map(|p| {
            format!(
                "{{ idle_ms = {:.2}, fixed_ns = {:.1} }}",
                p.idle_ms,
                // A fit's intercept can come out below 0 on a noisy phase; the costs check
                // refuses a negative point, as `tab_second_ns` is written at 0 or more.
                p.fixed_ns.max(0.0)
            )
        })
        .collect();
    out.push_str(&format!("tab_second_by_idle = [{}]\n", points.join(", ")));
    out
}

/// The costs file's comment on the driver's side of the probe's seconds.
pub fn driver_second_comment(t: &TabSecondProbe) -> String {
    let d = &t.driver;
    format!(
        "# The driver's CPU per tab told a second, medians over the same probe's {} tab-seconds\n\
         # (its thread CPU clock): the tab's touch set {:.0} ns; the command's write {:.0} ns when\n\
         # the tab began on the driver's CPU, {:.0} ns when on another ({:.0} % of the tells; that tab\n\
         # ran {:.0} ns after the write); the answer's read and fault latencies {:.0} ns.\n",
        SECOND_PROBE_TABS as u64 * SECOND_PROBE_SECONDS,
        d.touch_set_ns,
        d.tell_local_ns,
        d.tell_remote_ns,
        d.remote_share * 100.0,
        d.wake_remote_ns,
        d.answer_ns
    )
}

/// One phase's resident tab-seconds that had an idle time: `(touches, cpu_ns)`, whether each
/// was its round's first (the first task to run after the phase's sleep), and its idle ns.
#[derive(Default)]
struct PhaseSeconds {
    fitted: Vec<(f64, f64)>,
    first_of_round: Vec<bool>,
    idles: Vec<f64>,
}

/// Each phase's fit at its seconds' median idle time, the phases in rising idle time; empty
/// when any phase does not fit (a curve with a hole would be read as flat there).
fn by_idle(phases: Vec<PhaseSeconds>) -> Vec<TabSecondAtIdle> {
    let mut points = Vec::new();
    for phase in phases {
        let (Some(fit), Some(idle)) = (
            fit_tab_second(&phase.fitted),
            crate::calibrate::median(phase.idles),
        ) else {
            return Vec::new();
        };
        // What is left of each second's CPU past its touches at the phase's per-touch cost,
        // the round's first apart from the rest: after a sleep the first meets the whole
        // machine cold (the code all tabs share, the kernel's paths), the rest only their own.
        let (mut first, mut rest) = (Vec::new(), Vec::new());
        for (&(touches, cpu), &is_first) in phase.fitted.iter().zip(&phase.first_of_round) {
            let left = cpu - fit.per_touch_ns * touches;
            if is_first {
                first.push(left);
            } else {
                rest.push(left);
            }
        }
        points.push(TabSecondAtIdle {
            idle_ms: idle / 1e6,
            fixed_ns: fit.fixed_ns,
            per_touch_ns: fit.per_touch_ns,
            r2: fit.r2,
            seconds: fit.seconds,
            first_of_round_ns: crate::calibrate::median(first).unwrap_or(f64::NAN),
            rest_of_round_ns: crate::calibrate::median(rest).unwrap_or(f64::NAN),
        });
    }
    if points.windows(2).any(|w| w[1].idle_ms <= w[0].idle_ms) {
        return Vec::new();
    }
    points
}

/// Least squares of `cpu = fixed + per_touch x touches` over `(touches, cpu_ns)` (core's
/// `TabSecondCosts`, which splits a run's tab-seconds the same way); `None` with fewer than two
/// distinct touch counts.
fn fit_tab_second(samples: &[(f64, f64)]) -> Option<TabSecondProbe> {
    let mut counts: Vec<usize> = samples.iter().map(|s| s.0 as usize).collect();
    counts.sort_unstable();
    if counts.first() == counts.last() {
        return None;
    }
    let mut seconds = nvmswap_core::metrics::TabSecondCosts::default();
    for &(touches, cpu_ns) in samples {
        seconds.record(touches as u64, 0, 0, cpu_ns.max(0.0).round() as u64);
    }
    let ([fixed, per_touch, _, _], r2) = seconds.fit()?;
    Some(TabSecondProbe {
        fixed_ns: fixed,
        per_touch_ns: per_touch,
        r2,
        seconds: samples.len(),
        touches_min_median_max: (
            counts[0],
            counts[counts.len() / 2],
            counts[counts.len() - 1],
        ),
        access_ns_per_touch: 0.0,
        resident: serde_json::Value::Null,
        by_idle: Vec::new(),
        driver: DriverSecond::default(),
    })
}

#[cfg(test)]
mod second_probe_tests {
    use super::*;

    #[test]
    fn a_fault_word_keeps_its_latency_and_every_flag() {
        for bits in 0..8u8 {
            let f = FaultSample {
                ns: 123_456_789,
                major: bits & 1 != 0,
                preempted: bits & 2 != 0,
                slept: bits & 4 != 0,
            };
            assert_eq!(FaultSample::from_word(f.word()), f);
        }
        // A latency too long for its bits is kept at the longest, not mixed into the flags.
        let long = FaultSample {
            ns: u64::MAX,
            major: false,
            preempted: false,
            slept: false,
        };
        assert_eq!(FaultSample::from_word(long.word()).ns, LATENCY_MASK);
        assert!(!FaultSample::from_word(long.word()).slept);
    }

    #[test]
    fn a_timed_fault_that_sleeps_says_so() {
        let region = Mapping::new(2 * PAGE_SIZE as usize, false).unwrap();
        let faults = Mapping::new(2 * 8, true).unwrap();
        let mut done = Touches::default();
        let base = region.as_ptr();
        // SAFETY: page 0 lies inside the two-page mapping; the write faults it in.
        timed(&mut done, faults.words(), true, || unsafe {
            base.write_volatile(1)
        });
        timed(&mut done, faults.words(), true, || {
            // SAFETY: page 1 lies inside the mapping.
            unsafe { base.add(PAGE_SIZE as usize).write_volatile(1) };
            std::thread::sleep(std::time::Duration::from_millis(2));
        });
        assert_eq!(done.faulting, 2);
        let first = FaultSample::from_word(faults.words()[0].load(Ordering::Relaxed));
        let second = FaultSample::from_word(faults.words()[1].load(Ordering::Relaxed));
        assert!(!first.major && !second.major);
        assert!(second.slept && second.ns >= 2_000_000, "{second:?}");
        // A demand-zero fault outside any cgroup's limit has nothing to sleep on.
        assert!(!first.slept, "{first:?}");
    }

    #[test]
    fn the_fit_finds_the_fixed_and_per_touch_parts() {
        let samples: Vec<(f64, f64)> = (0..50)
            .map(|i| {
                let t = (i * 7 % 120) as f64;
                (
                    t,
                    30_000.0 + 900.0 * t + if i % 2 == 0 { 50.0 } else { -50.0 },
                )
            })
            .collect();
        let f = fit_tab_second(&samples).unwrap();
        assert!((f.fixed_ns - 30_000.0).abs() < 100.0, "{f:?}");
        assert!((f.per_touch_ns - 900.0).abs() < 2.0, "{f:?}");
        assert!(f.r2 > 0.99, "{f:?}");
        assert_eq!(f.seconds, 50);
        assert!(fit_tab_second(&[(5.0, 1.0), (5.0, 2.0)]).is_none());
    }

    #[test]
    fn resident_seconds_split_the_access_from_the_rest_of_a_touch() {
        let mut r = ResidentSeconds::default();
        assert!(r.access_ns_per_touch().is_none());
        assert!(r.to_json()["r2"].is_null());
        // 20 µs a second, 900 ns a touch of which 150 ns the access: all in the first class
        // but one access in ten of each second, which took 1,050 ns.
        for t in [10u64, 40, 70, 100] {
            // Every slow access a write, and as many fast ones.
            let a = Answer {
                resident_accesses: [t - t / 10, 0, t / 10, 0],
                resident_access_ns: [(t - t / 10) * 50, 0, t / 10 * 1_050, 0],
                resident_writes: [2 * (t / 10), t / 10, t / 10 * 1_050],
                ..Answer::default()
            };
            r.record(t, 150 * t, 20_000 + 900 * t, &a);
        }
        assert_eq!(r.access_ns_per_touch(), Some(150.0));
        let j = r.to_json();
        let c = &j["access_classes"];
        assert_eq!(c[0]["count"], 198);
        assert_eq!(c[2]["count"], 22);
        assert_eq!(c[2]["from_ns"], 1_000);
        assert_eq!(c[2]["to_ns"], 10_000);
        assert!(c[3]["to_ns"].is_null() && c[3]["mean_ns"].is_null());
        assert!((c[2]["share"].as_f64().unwrap() - 0.1).abs() < 1e-12);
        assert!((c[2]["mean_ns"].as_f64().unwrap() - 1_050.0).abs() < 1e-9);
        // The classes' parts of a touch add up to the access per touch.
        let parts: f64 = (0..4).filter_map(|k| c[k]["ns_per_touch"].as_f64()).sum();
        assert!((parts - 150.0).abs() < 1e-9, "{parts}");
        let w = &j["writes"];
        assert_eq!(w["count"], 44);
        assert!((w["share"].as_f64().unwrap() - 0.2).abs() < 1e-12, "{w}");
        assert!(
            (w["slow_share"].as_f64().unwrap() - 0.5).abs() < 1e-12,
            "{w}"
        );
        assert!(
            (w["slow_mean_ns"].as_f64().unwrap() - 1_050.0).abs() < 1e-9,
            "{w}"
        );
        assert_eq!(j["seconds"], 4);
        assert_eq!(j["touches"], 220);
        assert!((j["fixed_us"].as_f64().unwrap() - 20.0).abs() < 1e-6, "{j}");
        assert!(
            (j["per_touch_ns"].as_f64().unwrap() - 900.0).abs() < 1e-6,
            "{j}"
        );
        assert!((j["r2"].as_f64().unwrap() - 1.0).abs() < 1e-9, "{j}");
    }

    #[test]
    fn a_phase_fitted_below_zero_is_written_as_a_point_the_costs_check_takes() {
        let point = |idle_ms, fixed_ns| TabSecondAtIdle {
            idle_ms,
            fixed_ns,
            per_touch_ns: 700.0,
            r2: 0.5,
            seconds: 96,
            first_of_round_ns: f64::NAN,
            rest_of_round_ns: 1.0,
        };
        let mut t = fit_tab_second(&[(1.0, 10.0), (2.0, 20.0), (3.0, 30.0)]).unwrap();
        t.by_idle = vec![point(1.0, -500.0), point(100.0, 9_000.0)];
        let text = tab_second_by_idle_toml(&t);
        assert!(
            text.contains(
                "tab_second_by_idle = [{ idle_ms = 1.00, fixed_ns = 0.0 }, \
                 { idle_ms = 100.00, fixed_ns = 9000.0 }]"
            ),
            "{text}"
        );
        let costs: nvmswap_core::config::CostOverrides =
            toml::from_str(text.lines().last().unwrap()).unwrap();
        assert!(costs.check().is_ok(), "{costs:?}");
        t.by_idle.clear();
        assert!(tab_second_by_idle_toml(&t).contains("not measured"));
    }

    #[test]
    fn the_probe_measures_tab_processes_living_their_seconds() {
        if crate::require_root().is_err() {
            eprintln!(
                "skipped: the tab-second probe moves its tabs into the root memory cgroup (root)"
            );
            return;
        }
        let p = probe_tab_second(1).unwrap();
        eprintln!("tab second: {p:?}");
        assert!(p.seconds > 20, "{p:?}");
        // One fit per phase, their idle times rising: the tabs in turn idle while the other
        // seven run (well under the first sleep), the others at least their phase's sleep.
        assert_eq!(p.by_idle.len(), 1 + SECOND_PROBE_IDLE_MS.len(), "{p:?}");
        assert!(
            p.by_idle[0].idle_ms < SECOND_PROBE_IDLE_MS[0] as f64,
            "{p:?}"
        );
        for (point, &ms) in p.by_idle[1..].iter().zip(&SECOND_PROBE_IDLE_MS) {
            assert!(point.idle_ms >= ms as f64, "{p:?}");
            assert!(point.fixed_ns.is_finite() && point.seconds > 40, "{p:?}");
        }
        assert!(p.per_touch_ns > 0.0 && p.per_touch_ns < 100_000.0, "{p:?}");
        assert!(p.fixed_ns.is_finite(), "{p:?}");
        // The fit and the curve's first point are the same seconds (the tabs in turn, each
        // tab's first left out), so sim's base and the curve's base agree.
        assert_eq!(p.seconds, p.by_idle[0].seconds, "{p:?}");
        assert!((p.fixed_ns - p.by_idle[0].fixed_ns).abs() < 1e-6, "{p:?}");
        // Every fitted second timed its touches' accesses: a mapped page's access takes some
        // ns, and far less than the whole touch's share of a second could be.
        assert!(
            p.access_ns_per_touch > 0.0 && p.access_ns_per_touch < 100_000.0,
            "{p:?}"
        );
        // A pipe write that wakes a process and a read are system calls: neither is free, and
        // neither takes a millisecond on an idle machine.
        let d = p.driver;
        for ns in [
            d.touch_set_ns,
            d.tell_local_ns,
            d.tell_remote_ns,
            d.answer_ns,
        ] {
            assert!(ns > 0.0 && ns < 1_000_000.0, "{p:?}");
        }
        assert!((0.0..=1.0).contains(&d.remote_share), "{p:?}");
        assert!(d.wake_remote_ns < 100_000_000.0, "{p:?}");
    }

    #[test]
    fn a_loading_tab_tells_its_progress_every_load_check_then_its_answer() {
        if crate::require_root().is_err() {
            eprintln!("skipped: the tab joins the root memory cgroup (root)");
            return;
        }
        let procs_path = crate::cgroup::memory_root().join("cgroup.procs");
        let procs = CString::new(procs_path.to_string_lossy().as_bytes()).unwrap();
        let site = &nvmswap_core::workload::tabs::default_sites()[0];
        let mut shape = TabShape {
            load_cpu_ns: 0,
            render_cpu_ns: 0,
            ..TabShape::of(site, 0.1)
        };
        // 40 MiB: a load of ~0.1 s or more, 39 words of progress; the last page is no check's.
        let pages = 40 * LOAD_CHECK_PAGES + 1;
        shape.life.pages = pages;
        shape.life.max_pages = pages;
        let mut tab = TabProcess::spawn_loading(None, &procs, shape, 1, 0).unwrap();
        let mut heard = Vec::new();
        while let LoadNews::Progress(p) = tab.next_load_news().unwrap() {
            heard.push(p);
        }
        assert_eq!(
            tab.next_load_news().unwrap(),
            LoadNews::Done,
            "and stays done"
        );
        let (answer, latencies) = tab.answer().expect("the tab loaded");
        assert_eq!(
            answer.faulting_touches,
            u64::from(pages),
            "every page faulted"
        );
        assert_eq!(latencies.len(), pages as usize);
        // Whole checks, rising, short of the load's end; a driver that slept past some hears
        // the latest only.
        assert!(!heard.is_empty(), "the driver heard the load go on");
        assert!(heard.iter().all(|p| p % LOAD_CHECK_PAGES == 0), "{heard:?}");
        assert!(heard.windows(2).all(|w| w[0] < w[1]), "{heard:?}");
        assert!(*heard.last().unwrap() < pages, "{heard:?}");
        // It serves commands as a tab spawned whole does.
        assert!(tab.switch().is_some());
    }
}

/// Pages the tab-touch probe touches per round (16 MiB), and its rounds.
pub const TOUCH_PROBE_PAGES: usize = 4096;
pub const TOUCH_PROBE_ROUNDS: usize = 5;

/// A tab's own CPU per touch of a resident page: the timed access a tab makes for every
/// background touch ([`touch`]: the access between two clock reads, with `getrusage` before and
/// after), in address order over resident memory, every other touch a write, as a tab's second
/// runs them. Not in it: the workload's choice of pages (`TabLife::background_touches`). ns per
/// touch of each of [`TOUCH_PROBE_ROUNDS`] rounds over [`TOUCH_PROBE_PAGES`] pages.
pub fn probe_touch_ns() -> Result<Vec<f64>, LinuxError> {
    let memory = Mapping::new(TOUCH_PROBE_PAGES * PAGE_SIZE as usize, false)?;
    let faults = Mapping::new(TOUCH_PROBE_PAGES * 8, true)?;
    let base = memory.as_ptr();
    for p in 0..TOUCH_PROBE_PAGES {
        // SAFETY: page `p` is inside the mapping; this write faults it in.
        unsafe { base.add(p * PAGE_SIZE as usize).write_volatile(1) };
    }
    let mut rounds = Vec::with_capacity(TOUCH_PROBE_ROUNDS);
    for _ in 0..TOUCH_PROBE_ROUNDS {
        let mut done = Touches::default();
        let start = worker::monotonic_ns();
        for p in 0..TOUCH_PROBE_PAGES {
            touch(base, &mut done, faults.words(), p as u32, p % 2 == 1);
        }
        let took = worker::monotonic_ns() - start;
        rounds.push(took as f64 / TOUCH_PROBE_PAGES as f64);
    }
    Ok(rounds)
}

/// The page contents the fill probe writes: a same-filled page, a page of copies of its first
/// chunk (fresh share 0) and a page of fresh bytes only (fresh share 1); see [`FillProbe`].
const FILL_PROBE_SHAPES: [(f64, f64); 3] = [(1.0, 1.0), (0.0, 0.0), (2.0, 0.0)];

/// A tab's own CPU per page it adds, apart from the page's first-write fault: the fill a tab
/// makes for every page it loads or grows ([`fill`]: the timed first write with `getrusage`
/// before and after, then `fill_page`'s contents), ns per page of each of [`TOUCH_PROBE_ROUNDS`]
/// rounds over [`TOUCH_PROBE_PAGES`] fresh pages, by content. `fill_page` writes its first chunk
/// fresh and each other chunk fresh with the page's fresh share, else a copy of an earlier one,
/// so a non-same-filled page's cost is `copy + fresh_share x (fresh - copy)` (sim's
/// `Costs::tab_fill`).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct FillProbe {
    pub same_filled_ns_rounds: Vec<f64>,
    pub copy_ns_rounds: Vec<f64>,
    pub fresh_ns_rounds: Vec<f64>,
}

/// Measures [`FillProbe`]: each round a fresh mapping outside any memory limit, every page
/// filled as a tab fills it, the rounds' time less the timed faults in them.
pub fn probe_fill_ns(seed: u64) -> Result<FillProbe, LinuxError> {
    let faults = Mapping::new(TOUCH_PROBE_PAGES * 8, true)?;
    let mut by_shape = [Vec::new(), Vec::new(), Vec::new()];
    for round in 0..TOUCH_PROBE_ROUNDS {
        for (shape_at, &(ratio, same)) in FILL_PROBE_SHAPES.iter().enumerate() {
            let memory = Mapping::new(TOUCH_PROBE_PAGES * PAGE_SIZE as usize, false)?;
            let mut done = Touches::default();
            let start = worker::monotonic_ns();
            for p in 0..TOUCH_PROBE_PAGES as u32 {
                let page = (seed, round as u32, p);
                fill(
                    memory.as_ptr(),
                    &mut done,
                    faults.words(),
                    (ratio, same),
                    page,
                );
            }
            let took = worker::monotonic_ns() - start;
            let beside_faults = took.saturating_sub(done.ns);
            by_shape[shape_at].push(beside_faults as f64 / TOUCH_PROBE_PAGES as f64);
        }
    }
    let [same_filled_ns_rounds, copy_ns_rounds, fresh_ns_rounds] = by_shape;
    Ok(FillProbe {
        same_filled_ns_rounds,
        copy_ns_rounds,
        fresh_ns_rounds,
    })
}

/// The costs file's lines of [`FillProbe`]: each content's median, with its rounds; nothing when
/// a content has no rounds.
pub fn fill_comment(p: &FillProbe) -> String {
    let contents = [
        ("same", "a same-filled page", &p.same_filled_ns_rounds),
        (
            "copy",
            "a page of copied chunks (fresh share 0)",
            &p.copy_ns_rounds,
        ),
        (
            "fresh",
            "a page of fresh bytes (fresh share 1)",
            &p.fresh_ns_rounds,
        ),
    ];
    let mut out = format!(
        "# A tab's own CPU per page it adds, apart from the page's fault (the timed first write's\n\
         # getrusage and clock reads, then its contents by workload::content::fill_page), over {}\n\
         # fresh pages per round; the median of {} rounds for each content:\n",
        TOUCH_PROBE_PAGES, TOUCH_PROBE_ROUNDS
    );
    let mut lines = String::new();
    for (key, what, rounds) in contents {
        let Some(each) = crate::calibrate::median(rounds.to_vec()) else {
            return String::new();
        };
        let list: Vec<String> = rounds.iter().map(|ns| format!("{ns:.0}")).collect();
        out.push_str(&format!("#   {what}: {}\n", list.join(", ")));
        lines.push_str(&format!("tab_fill_{key}_page_ns = {}\n", each.round()));
    }
    out + &lines
}

/// Memory the accessed-bit probe walks between its timed passes (256 MiB, one byte per page):
/// more than this machine's last-level cache and TLB hold, so the timed pages' lines and
/// translations are gone, as a background tab's are after the other tabs' seconds.
pub const EVICT_PAGES: usize = 65_536;

/// The tab's timed access to mapped pages over one footprint ([`probe_access_by_footprint`]).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct FootprintAccess {
    pub footprint_mib: u64,
    /// Mean of the timed accesses (each between its two clock reads), ns.
    pub access_ns: f64,
    /// Mean of those below [`ACCESS_CLASS_NS`]`[2]` (10 µs): the accesses the host did not
    /// stall (`crate::host_speed::probe_idle_stalls` measures those apart), ns.
    pub access_below_stall_ns: f64,
    /// Share of them at [`ACCESS_CLASS_NS`]`[0]` (250 ns) or more.
    pub slow_share: f64,
}

/// Pages `0..pages` in a random order of `seed` (Fisher-Yates with splitmix64 draws), so that
/// a pass in it defeats the prefetchers as a tab's scattered touches do.
fn random_order(pages: u64, seed: u64) -> Vec<u32> {
    let mut order: Vec<u32> = (0..pages as u32).collect();
    let mut x = seed;
    for i in (1..order.len()).rev() {
        x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = x;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        order.swap(i, (z % (i as u64 + 1)) as usize);
    }
    order
}

/// How the tab's own access to a mapped page costs with the footprint it cycles over: for each
/// of core's `reuse::FOOTPRINTS_MIB` (16 MiB to 1 GiB) a fresh mapping filled page by page,
/// then touched twice over in one random order with the tab's timed [`touch`], every page once
/// a pass (so each access comes back after the whole footprint's other pages, its reuse
/// distance); the second pass is timed. Where a run's touches lie on this curve is
/// `extra.touch_reuse` (sim); what the kernel's runs met is `extra.resident_tab_seconds`.
/// The mappings are 4 KiB pages (THP is `madvise` here and they do not ask); about 2 GiB is
/// mapped and freed one footprint at a time.
pub fn probe_access_by_footprint(seed: u64) -> Result<Vec<FootprintAccess>, LinuxError> {
    let mut out = Vec::new();
    for mib in nvmswap_core::reuse::FOOTPRINTS_MIB {
        let pages = (mib << 20) / PAGE_SIZE;
        let memory = Mapping::new((pages * PAGE_SIZE) as usize, false)?;
        let faults = Mapping::new(8, true)?;
        let base = memory.as_ptr();
        for p in 0..pages as usize {
            // SAFETY: page `p` is inside the mapping of `pages` pages; the write faults it in.
            unsafe { base.add(p * PAGE_SIZE as usize).write_volatile(1) };
        }
        // One order for both passes.
        let order = random_order(pages, seed ^ mib);
        let mut done = Touches::default();
        for pass in 0..2 {
            done = Touches::default();
            for (i, &p) in order.iter().enumerate() {
                // The tab's write share is most of its touches (78-81 %, the classes' writes).
                touch(base, &mut done, faults.words(), p, pass == 1 && i % 5 != 0);
            }
        }
        let timed: u64 = done.resident.iter().sum();
        if timed == 0 {
            return Err(LinuxError::Worker(format!(
                "footprint probe: every touch of the {mib} MiB footprint faulted"
            )));
        }
        let unstalled: u64 = done.resident[..3].iter().sum();
        out.push(FootprintAccess {
            footprint_mib: mib,
            access_ns: done.resident_ns.iter().sum::<u64>() as f64 / timed as f64,
            access_below_stall_ns: done.resident_ns[..3].iter().sum::<u64>() as f64
                / unstalled.max(1) as f64,
            slow_share: (timed - done.resident[0]) as f64 / timed as f64,
        });
    }
    Ok(out)
}

/// The tab's timed access to a small footprint's mapped pages after they idled
/// ([`probe_access_by_idle`]).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct IdleAccess {
    pub idle_ms: u64,
    /// Mean of the timed accesses below [`ACCESS_CLASS_NS`]`[2]` (10 µs; the host's stalls
    /// are `crate::host_speed::probe_idle_stalls`'), ns.
    pub access_ns: f64,
    /// Share of them at [`ACCESS_CLASS_NS`]`[0]` (250 ns) or more.
    pub slow_share: f64,
}

/// Idle times the idle-access probe leaves its pages for, ms: from back to back past the
/// hundred milliseconds in which this VM's caches lost a small footprint (2026-12-05, a C loop
/// over 4 and 16 MiB: 75-128 ns up to 10 ms, 144-269 ns from 100 ms on) to the seconds between
/// a background tab's touches.
pub const IDLE_ACCESS_MS: [u64; 6] = [0, 1, 10, 100, 1_000, 3_000];
/// Pages the idle-access probe cycles over: 4 MiB, which the caches and the TLB's reach hold
/// back to back (the footprint probe's smallest point, 16 MiB, already misses 1-2.5 %).
pub const IDLE_ACCESS_PAGES: u64 = 1_024;
/// Rounds per idle time (each a pass to warm, the sleep and a timed pass).
pub const IDLE_ACCESS_ROUNDS: usize = 3;

/// How the tab's own access to a mapped page costs with the time its page was left alone,
/// its footprint held small: [`IDLE_ACCESS_PAGES`] pages filled, then for each of
/// [`IDLE_ACCESS_MS`] [`IDLE_ACCESS_ROUNDS`] rounds of a pass in one random order, the sleep
/// and a timed pass in the same order with the tab's timed [`touch`]. On a machine whose
/// caches nobody else uses the curve is flat; where others share them (a host's other
/// guests) the lines a guest left alone go after a while however little it touched. A few
/// seconds per round (about 12 s in all).
pub fn probe_access_by_idle(seed: u64) -> Result<Vec<IdleAccess>, LinuxError> {
    let pages = IDLE_ACCESS_PAGES;
    let memory = Mapping::new((pages * PAGE_SIZE) as usize, false)?;
    let faults = Mapping::new(8, true)?;
    let base = memory.as_ptr();
    for p in 0..pages as usize {
        // SAFETY: page `p` is inside the mapping of `pages` pages; the write faults it in.
        unsafe { base.add(p * PAGE_SIZE as usize).write_volatile(1) };
    }
    let order = random_order(pages, seed ^ 0x1d1e);
    let mut out = Vec::new();
    for idle_ms in IDLE_ACCESS_MS {
        let mut timed = Touches::default();
        for _ in 0..IDLE_ACCESS_ROUNDS {
            let mut warm = Touches::default();
            for &p in &order {
                touch(base, &mut warm, faults.words(), p, true);
            }
            std::thread::sleep(std::time::Duration::from_millis(idle_ms));
            for (i, &p) in order.iter().enumerate() {
                // The tab's write share is most of its touches (78-81 %, the classes' writes).
                touch(base, &mut timed, faults.words(), p, i % 5 != 0);
            }
        }
        let unstalled: u64 = timed.resident[..3].iter().sum();
        if unstalled == 0 {
            return Err(LinuxError::Worker(format!(
                "idle-access probe: no timed access after {idle_ms} ms left unfaulted and unstalled"
            )));
        }
        out.push(IdleAccess {
            idle_ms,
            access_ns: timed.resident_ns[..3].iter().sum::<u64>() as f64 / unstalled as f64,
            slow_share: (unstalled - timed.resident[0]) as f64 / unstalled as f64,
        });
    }
    Ok(out)
}

/// Per-page costs of the accessed-bit probe, medians over [`TOUCH_PROBE_ROUNDS`] rounds (ns per
/// touch of [`TOUCH_PROBE_PAGES`] resident pages in address order, the tab's timed [`touch`]).
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub struct AccessedBitProbe {
    /// Right after the same pages' previous pass (the tab-touch probe's case).
    pub warm_ns: f64,
    /// After the eviction walk: lines and translations gone, accessed bits set.
    pub cold_ns: f64,
    /// After clearing the pages' accessed bits (`/proc/self/clear_refs`, anonymous pages, as
    /// reclaim's `folio_referenced` clears them) and the eviction walk.
    pub cleared_ns: f64,
}

impl AccessedBitProbe {
    /// What a touch costs more when reclaim cleared its page's accessed bit since the last:
    /// the page walk sets the bit again (`costs.accessed_bit_ns`).
    pub fn accessed_bit_ns(&self) -> f64 {
        (self.cleared_ns - self.cold_ns).max(0.0)
    }
}

/// How much a touch of a resident page costs when its accessed bit was cleared (by reclaim's
/// scan, here by `clear_refs`) against one whose bit is set, both with its line and translation
/// evicted first. On x86 the page walker sets a clear accessed bit with a locked update of the
/// page-table entry; `ptep_clear_flush_young` (arch/x86/mm/pgtable.c) clears it without a TLB
/// flush, so the cost falls on the next walk, which in a background tab's second is the next
/// touch. Under a hypervisor the update may cost it more; the probe measures whatever this
/// machine pays.
pub fn probe_accessed_bit() -> Result<AccessedBitProbe, LinuxError> {
    let memory = Mapping::new(TOUCH_PROBE_PAGES * PAGE_SIZE as usize, false)?;
    let evict = Mapping::new(EVICT_PAGES * PAGE_SIZE as usize, false)?;
    let faults = Mapping::new(TOUCH_PROBE_PAGES * 8, true)?;
    let (base, other) = (memory.as_ptr(), evict.as_ptr());
    let walk = |m: *mut u8, pages: usize| {
        for p in 0..pages {
            // SAFETY: page `p` is inside the mapping of `pages` pages; the first write faults it.
            unsafe { m.add(p * PAGE_SIZE as usize).write_volatile(1) };
        }
    };
    walk(base, TOUCH_PROBE_PAGES);
    walk(other, EVICT_PAGES);
    let pass = || {
        let mut done = Touches::default();
        let start = worker::monotonic_ns();
        for p in 0..TOUCH_PROBE_PAGES {
            touch(base, &mut done, faults.words(), p as u32, p % 2 == 1);
        }
        (worker::monotonic_ns() - start) as f64 / TOUCH_PROBE_PAGES as f64
    };
    let clear_refs = || {
        // "2": the accessed bits of the process's anonymous pages (fs/proc/task_mmu.c).
        std::fs::write("/proc/self/clear_refs", "2")
            .map_err(|e| LinuxError::io("write", "/proc/self/clear_refs", e))
    };
    let (mut warm, mut cold, mut cleared) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..TOUCH_PROBE_ROUNDS {
        pass();
        warm.push(pass());
        walk(other, EVICT_PAGES);
        cold.push(pass());
        clear_refs()?;
        // The walk sets the eviction pages' bits again; the timed pages' stay clear.
        walk(other, EVICT_PAGES);
        cleared.push(pass());
    }
    let m = |v: Vec<f64>| crate::calibrate::median(v).unwrap_or(0.0);
    Ok(AccessedBitProbe {
        warm_ns: m(warm),
        cold_ns: m(cold),
        cleared_ns: m(cleared),
    })
}

#[cfg(test)]
mod touch_probe_tests {
    // The probes below measure this machine; which case costs more is what they report
    // (`nvmswap linux calibrate` prints it, docs/commands/linux.md gives this machine's figures),
    // not what a unit test may assert: under the test harness's parallel tests on two CPUs the
    // order flips (CI, 2026-12-04: 1 GiB footprint 188 ns against 16 MiB's 237). These tests
    // check that every case was timed and every figure is a possible one.
    #[test]
    fn the_fill_probe_times_every_round_of_every_kind() {
        let p = super::probe_fill_ns(1).unwrap();
        eprintln!("{p:?}");
        for rounds in [
            &p.same_filled_ns_rounds,
            &p.copy_ns_rounds,
            &p.fresh_ns_rounds,
        ] {
            assert_eq!(rounds.len(), super::TOUCH_PROBE_ROUNDS);
            assert!(rounds.iter().all(|&ns| ns.is_finite() && ns > 0.0), "{p:?}");
        }
    }

    #[test]
    fn the_touch_probe_times_every_round_and_each_touch_costs_something() {
        let rounds = super::probe_touch_ns().unwrap();
        eprintln!("tab touch ns per round: {rounds:?}");
        assert_eq!(rounds.len(), super::TOUCH_PROBE_ROUNDS);
        // Two getrusage calls per touch: no round can be free.
        assert!(
            rounds.iter().all(|&ns| ns.is_finite() && ns > 0.0),
            "{rounds:?}"
        );
    }

    #[test]
    fn the_footprint_probe_times_every_footprint() {
        let curve = super::probe_access_by_footprint(1).unwrap();
        eprintln!("access by footprint: {curve:?}");
        let mibs: Vec<u64> = curve.iter().map(|c| c.footprint_mib).collect();
        assert_eq!(mibs, nvmswap_core::reuse::FOOTPRINTS_MIB.to_vec());
        assert!(
            curve.iter().all(|c| c.access_ns.is_finite()
                && c.access_ns > 0.0
                && (0.0..=1.0).contains(&c.slow_share)),
            "{curve:?}"
        );
    }

    #[test]
    fn the_idle_access_probe_times_every_idle_time() {
        let points = super::probe_access_by_idle(1).unwrap();
        eprintln!("access by idle time: {points:?}");
        assert_eq!(
            points.iter().map(|p| p.idle_ms).collect::<Vec<_>>(),
            super::IDLE_ACCESS_MS
        );
        for p in &points {
            // Each mean is of timed accesses below 10 µs, and every access costs something.
            assert!(p.access_ns > 0.0 && p.access_ns < 10_000.0, "{p:?}");
            assert!((0.0..=1.0).contains(&p.slow_share), "{p:?}");
        }
    }

    #[test]
    fn the_accessed_bit_probe_times_three_passes() {
        let p = super::probe_accessed_bit().unwrap();
        eprintln!("accessed-bit probe: {p:?}");
        for ns in [p.warm_ns, p.cold_ns, p.cleared_ns] {
            assert!(ns.is_finite() && ns > 0.0 && ns < 1_000_000.0, "{p:?}");
        }
    }
}
