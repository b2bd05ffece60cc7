//! Closed loops on a scratch file: a set number of O_DIRECT requests kept in flight for a while,
//! each replaced by the next as soon as it completes, all from one thread through one io_uring.
//!
//! Why io_uring and one thread: the loops measure the disk (its throughput at saturation, the
//! calibration's parallelism and serial stage), so what the guest spends per request has to
//! stay small beside it. With one thread per request in flight (the probe before 2026-12-03,
//! synchronous `pread`/`pwrite`), each request also paid a context switch and a wake-up on one of
//! this machine's two vCPUs: on its vda, 16 threads of one-page writes completed one request per
//! 45-61 µs where one thread keeping 16 in flight through io_uring completed one per 11-16 µs,
//! and 128 in flight one per 6 µs (adjacent offsets) or 14 µs (a page apart). The kernel's own
//! swap I/O is not issued by a thread per request either: reclaim submits a plug's batch, and a
//! faulting task waits for its own read.
//!
//! Offsets: at random (a swap-in's read), or forward through the file a page apart ([`Offsets::
//! Forward`]): swap-out writes go forward through a cluster's slots, and the requests that reach
//! the device are not adjacent (adjacent ones a plug merges into one). Adjacent offsets would
//! time the guest's merging, not the device: one-page writes at depth 128 took 6.8-7.4 µs each
//! adjacent and 13.0-17.2 a page apart, but of the ~200,000 adjacent writes the guest's block
//! layer merged 99 % (vda's `/sys/block/vda/stat`); with its merging off (`queue/nomerges` 2)
//! adjacent took 9.6-15.7 µs and a page apart 12.8-16.1 (2026-12-03 23:33, two repeats).

use crate::error::LinuxError;
use crate::worker::{self, Mapping};
use io_uring::{opcode, types, IoUring};
use nvmswap_core::metrics::LatencyRecorder;
use nvmswap_core::workload::content::fill_page;
use nvmswap_core::PAGE_SIZE;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::os::fd::AsRawFd;

const PAGE: usize = PAGE_SIZE as usize;

/// Where a job's requests go in the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Offsets {
    /// Page-aligned, uniformly at random.
    Random,
    /// Each one page past the end of the job's request before it (wrapping at the end of the
    /// file): forward, never adjacent, as swap-out's requests (see the module text).
    Forward,
}

/// One group of requests of a closed loop: `in_flight` requests of `pages` pages kept in flight.
#[derive(Debug, Clone, Copy)]
pub struct Job {
    pub write: bool,
    pub pages: u32,
    pub in_flight: u32,
    pub offsets: Offsets,
}

/// What one job of a closed loop did.
pub struct JobResult {
    /// Each request's time from its submission to the loop's seeing its completion.
    pub latency: LatencyRecorder,
    /// Requests completed within the loop's duration.
    pub ops: u64,
}

/// The first page of a job's next request in a file of `size_pages`: at random, or (forward) at
/// `cursor`, which moves one page past the request's end, wrapping to the file's start where the
/// request would not fit.
fn next_page(job: &Job, size_pages: u64, cursor: &mut u64, rng: &mut ChaCha8Rng) -> u64 {
    let span = size_pages - job.pages as u64 + 1;
    match job.offsets {
        Offsets::Random => rng.random_range(0..span),
        Offsets::Forward => {
            let page = if *cursor < span { *cursor } else { 0 };
            *cursor = page + job.pages as u64 + 1;
            page
        }
    }
}

/// A request in flight: its job, and when it was submitted.
#[derive(Clone, Copy)]
struct Slot {
    job: usize,
    submitted_ns: u64,
}

/// Runs `jobs` at once on `file` (offsets below `size_pages`) for `duration`; returns each job's
/// latencies and the seconds the requests were counted over (`duration`: a request counts when
/// the loop sees it complete before the deadline, so none at all on a disk that completes
/// nothing in time gives 0 a second, not 0 / 0). The requests still in flight at the end are
/// waited for and not counted.
pub fn run(
    file: &std::fs::File,
    size_pages: u64,
    jobs: &[Job],
    duration: std::time::Duration,
    seed: u64,
) -> Result<(Vec<JobResult>, f64), LinuxError> {
    let total: u32 = jobs.iter().map(|j| j.in_flight).sum();
    if total == 0
        || jobs
            .iter()
            .any(|j| j.pages == 0 || j.pages as u64 > size_pages)
    {
        return Err(LinuxError::Worker(format!(
            "a closed loop needs requests in flight of 1 to {size_pages} pages: {jobs:?}"
        )));
    }
    // One buffer per request in flight, each the size of its job's requests.
    let sizes: Vec<(usize, usize)> = jobs
        .iter()
        .enumerate()
        .flat_map(|(ji, j)| {
            std::iter::repeat_n((ji, j.pages as usize * PAGE), j.in_flight as usize)
        })
        .collect();
    let bytes_total: usize = sizes.iter().map(|s| s.1).sum();
    let buf = Mapping::new(bytes_total, false)?;
    // SAFETY: the mapping is `bytes_total` bytes, page-aligned, owned here and outliving every
    // request: all are waited for before `buf` is dropped.
    let bytes = unsafe { std::slice::from_raw_parts_mut(buf.as_ptr(), bytes_total) };
    // Declared after the buffer, so dropped before it on an early return (the kernel pins a
    // request's pages until it completes in any case).
    let uring = |what: &str, e: std::io::Error| LinuxError::Worker(format!("{what}: {e}"));
    let mut ring =
        IoUring::new(total.next_power_of_two()).map_err(|e| uring("io_uring_setup", e))?;
    for (i, page) in bytes.chunks_exact_mut(PAGE).enumerate() {
        fill_page(page, seed, i as u64, 0.38, 0.0);
    }
    let mut starts = Vec::with_capacity(sizes.len());
    let mut at = 0usize;
    for &(_, len) in &sizes {
        starts.push(at);
        at += len;
    }
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut cursors = vec![0u64; jobs.len()];
    let fd = types::Fd(file.as_raw_fd());
    let mut slots: Vec<Slot> = sizes
        .iter()
        .map(|&(job, _)| Slot {
            job,
            submitted_ns: 0,
        })
        .collect();
    // Queues request `i` (its slot's job, buffer and a fresh offset).
    let mut queue = |ring: &mut IoUring, slots: &mut [Slot], i: usize| -> Result<(), LinuxError> {
        let job = jobs[slots[i].job];
        let page = next_page(&job, size_pages, &mut cursors[slots[i].job], &mut rng);
        let len = sizes[i].1;
        let ptr = bytes[starts[i]..starts[i] + len].as_mut_ptr();
        let offset = page * PAGE_SIZE;
        let entry = if job.write {
            opcode::Write::new(fd, ptr, len as u32)
                .offset(offset)
                .build()
        } else {
            opcode::Read::new(fd, ptr, len as u32)
                .offset(offset)
                .build()
        }
        .user_data(i as u64);
        // SAFETY: the entry's buffer is request `i`'s part of `buf`, which no other request in
        // flight uses and which outlives the request (see above).
        unsafe { ring.submission().push(&entry) }
            .map_err(|_| LinuxError::Worker("io_uring submission queue full".into()))?;
        slots[i].submitted_ns = worker::monotonic_ns();
        Ok(())
    };
    let mut results: Vec<JobResult> = jobs
        .iter()
        .map(|_| JobResult {
            latency: LatencyRecorder::new(),
            ops: 0,
        })
        .collect();
    let t0 = worker::monotonic_ns();
    for i in 0..slots.len() {
        queue(&mut ring, &mut slots, i)?;
    }
    let deadline = t0 + duration.as_nanos() as u64;
    let mut in_flight = slots.len();
    let mut draining = false;
    let mut first_err = None;
    let mut done = Vec::with_capacity(slots.len());
    while in_flight > 0 {
        match ring.submit_and_wait(1) {
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            r => r.map_err(|e| uring("io_uring_enter", e))?,
        };
        let now = worker::monotonic_ns();
        done.clear();
        done.extend(
            ring.completion()
                .map(|c| (c.user_data() as usize, c.result())),
        );
        in_flight -= done.len();
        draining |= now >= deadline || first_err.is_some();
        for &(i, res) in &done {
            if res != sizes[i].1 as i32 {
                first_err.get_or_insert_with(|| {
                    LinuxError::io(
                        "O_DIRECT I/O on",
                        "the scratch file",
                        if res < 0 {
                            std::io::Error::from_raw_os_error(-res)
                        } else {
                            std::io::Error::other(format!("{res} of {} bytes", sizes[i].1))
                        },
                    )
                });
                draining = true;
                continue;
            }
            if now <= deadline {
                let r = &mut results[slots[i].job];
                r.latency.record_ns(now - slots[i].submitted_ns);
                r.ops += 1;
            }
            if !draining {
                match queue(&mut ring, &mut slots, i) {
                    Ok(()) => in_flight += 1,
                    Err(e) => {
                        first_err.get_or_insert(e);
                        draining = true;
                    }
                }
            }
        }
    }
    drop(buf);
    match first_err {
        Some(e) => Err(e),
        None => Ok((results, duration.as_secs_f64())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn job(write: bool, pages: u32, in_flight: u32, offsets: Offsets) -> Job {
        Job {
            write,
            pages,
            in_flight,
            offsets,
        }
    }

    #[test]
    fn forward_requests_go_a_page_apart_and_wrap_where_the_next_would_not_fit() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let mut cursor = 0;
        let j = job(true, 3, 1, Offsets::Forward);
        // A 10-page file: pages 0-2, hole at 3, 4-6, hole at 7; 8-10 would pass the end.
        let pages: Vec<u64> = (0..4)
            .map(|_| next_page(&j, 10, &mut cursor, &mut rng))
            .collect();
        assert_eq!(pages, [0, 4, 0, 4]);
    }

    #[test]
    fn random_requests_stay_inside_the_file() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let mut cursor = 0;
        let j = job(false, 4, 1, Offsets::Random);
        let pages: Vec<u64> = (0..2000)
            .map(|_| next_page(&j, 10, &mut cursor, &mut rng))
            .collect();
        assert!(pages.iter().all(|&p| p + 4 <= 10));
        assert!(
            (0..=6).all(|p| pages.contains(&p)),
            "every start that fits is drawn"
        );
    }

    /// A scratch file removed however the test ends.
    struct Scratch(std::path::PathBuf, std::fs::File);
    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }

    fn scratch(pages: u64) -> Scratch {
        let path = std::env::temp_dir().join(format!(
            "nvmswap-closed-loop-test-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let mut f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)
            .expect("scratch file");
        f.write_all(&vec![0u8; (pages * PAGE_SIZE) as usize])
            .expect("fill the scratch file");
        Scratch(path, f)
    }

    #[test]
    fn a_loop_of_two_jobs_keeps_both_going_and_times_what_it_counts() {
        let s = scratch(64);
        let jobs = [
            job(true, 2, 3, Offsets::Forward),
            job(false, 1, 1, Offsets::Random),
        ];
        let (results, secs) = run(&s.1, 64, &jobs, std::time::Duration::from_millis(50), 3)
            .expect("io_uring on a plain file");
        assert_eq!(secs, 0.05);
        for r in &results {
            assert!(r.ops > 0);
            assert_eq!(r.latency.count(), r.ops, "one latency per request counted");
        }
    }

    #[test]
    fn requests_larger_than_the_file_or_none_in_flight_are_refused() {
        let s = scratch(4);
        let d = std::time::Duration::from_millis(1);
        assert!(run(&s.1, 4, &[job(true, 5, 1, Offsets::Forward)], d, 1).is_err());
        assert!(run(&s.1, 4, &[job(true, 1, 0, Offsets::Forward)], d, 1).is_err());
    }
}
