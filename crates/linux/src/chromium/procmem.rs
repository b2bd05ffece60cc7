//! What the kernel tells about another process's memory, for `nvmswap workload measure`:
//! smaps_rollup (RSS, PSS, anon, swap), the private anonymous ranges of /proc/PID/maps, per-page
//! state from /proc/PID/pagemap (present / swapped), pushing a range out to swap with
//! process_madvise(MADV_PAGEOUT), reading page contents through /proc/PID/mem, and CPU time.
//!
//! Which pages a tab touches is measured by paging its anonymous memory out and reading which
//! pages came back (present again) after a switch or a background interval. This kernel has
//! neither idle-page tracking (CONFIG_IDLE_PAGE_TRACKING, /sys/kernel/mm/page_idle) nor
//! soft-dirty bits (CONFIG_MEM_SOFT_DIRTY), so the access bit cannot be read per page; a page
//! that was swapped out and is present again was touched, read or written.

use std::io::Read;
use std::os::unix::fs::FileExt;

use crate::error::LinuxError;

const PAGE: u64 = 4096;

/// Figures of /proc/PID/smaps_rollup in bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Rollup {
    pub rss: u64,
    pub pss: u64,
    pub anon: u64,
    pub swap: u64,
}

pub fn rollup(pid: u32) -> Result<Rollup, LinuxError> {
    let path = format!("/proc/{pid}/smaps_rollup");
    let text = std::fs::read_to_string(&path).map_err(|e| LinuxError::io("read", &path, e))?;
    let mut r = Rollup::default();
    for line in text.lines() {
        let mut it = line.split_whitespace();
        let (Some(k), Some(v)) = (it.next(), it.next()) else {
            continue;
        };
        let v: u64 = v.parse().unwrap_or(0) * 1024;
        match k {
            "Rss:" => r.rss = v,
            "Pss:" => r.pss = v,
            "Anonymous:" => r.anon = v,
            "Swap:" => r.swap = v,
            _ => {}
        }
    }
    Ok(r)
}

/// Private anonymous ranges (no backing file; [heap] and named anonymous mappings included).
pub fn anon_ranges(pid: u32) -> Result<Vec<(u64, u64)>, LinuxError> {
    let path = format!("/proc/{pid}/maps");
    let text = std::fs::read_to_string(&path).map_err(|e| LinuxError::io("read", &path, e))?;
    let mut out = Vec::new();
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 5 {
            continue;
        }
        let perms = f[1];
        let name = f.get(5).copied().unwrap_or("");
        let private_rw = perms.starts_with("rw") && perms.ends_with('p');
        let anon =
            name.is_empty() || (name.starts_with('[') && name != "[vvar]" && name != "[vdso]");
        if !(private_rw && anon) {
            continue;
        }
        let Some((a, b)) = f[0].split_once('-') else {
            continue;
        };
        if let (Ok(a), Ok(b)) = (u64::from_str_radix(a, 16), u64::from_str_radix(b, 16)) {
            out.push((a, b));
        }
    }
    Ok(out)
}

/// State of one page from pagemap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PageState {
    Absent,
    Present,
    Swapped,
}

/// Every page of `ranges`, in order, with its state.
pub fn page_states(pid: u32, ranges: &[(u64, u64)]) -> Result<Vec<(u64, PageState)>, LinuxError> {
    let path = format!("/proc/{pid}/pagemap");
    let f = std::fs::File::open(&path).map_err(|e| LinuxError::io("open", &path, e))?;
    let mut out = Vec::new();
    let mut buf = vec![0u8; 8 * 4096];
    for &(a, b) in ranges {
        let mut page = a / PAGE;
        let end = b / PAGE;
        while page < end {
            let n = ((end - page) as usize).min(4096);
            let bytes = &mut buf[..n * 8];
            if f.read_exact_at(bytes, page * 8).is_err() {
                // The range went away (unmapped meanwhile): skip it.
                break;
            }
            for i in 0..n {
                let e = u64::from_le_bytes(bytes[i * 8..i * 8 + 8].try_into().unwrap_or([0; 8]));
                let st = if e >> 63 & 1 == 1 {
                    PageState::Present
                } else if e >> 62 & 1 == 1 {
                    PageState::Swapped
                } else {
                    PageState::Absent
                };
                out.push(((page + i as u64) * PAGE, st));
            }
            page += n as u64;
        }
    }
    Ok(out)
}

/// Ask the kernel to page out `ranges` of process `pid` (process_madvise, MADV_PAGEOUT).
pub fn pageout(pid: u32, ranges: &[(u64, u64)]) -> Result<(), LinuxError> {
    const MADV_PAGEOUT: libc::c_int = 21;
    // SAFETY: pidfd_open takes a pid and flags and returns a new fd or -1.
    let pidfd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::c_int, 0) } as i32;
    if pidfd < 0 {
        return Err(LinuxError::io(
            "pidfd_open",
            format!("pid {pid}"),
            std::io::Error::last_os_error(),
        ));
    }
    let mut result = Ok(());
    for chunk in ranges.chunks(512) {
        let iov: Vec<libc::iovec> = chunk
            .iter()
            .map(|&(a, b)| libc::iovec {
                iov_base: a as *mut libc::c_void,
                iov_len: (b - a) as usize,
            })
            .collect();
        // SAFETY: `iov` is a valid array of `iov.len()` iovecs describing the target's address
        // ranges (the kernel only interprets them in the target process); pidfd is ours.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_process_madvise,
                pidfd,
                iov.as_ptr(),
                iov.len(),
                MADV_PAGEOUT,
                0u32,
            )
        };
        if rc < 0 {
            let e = std::io::Error::last_os_error();
            // A range that disappeared meanwhile (ENOMEM) is not an error of ours.
            if e.raw_os_error() != Some(libc::ENOMEM) {
                result = Err(LinuxError::io(
                    "process_madvise(MADV_PAGEOUT)",
                    format!("pid {pid}"),
                    e,
                ));
                break;
            }
        }
    }
    // SAFETY: closing the pidfd opened above.
    unsafe { libc::close(pidfd) };
    result
}

/// Read the contents of present pages `addrs` of `pid` (pages that fail to read are skipped).
pub fn read_pages(pid: u32, addrs: &[u64]) -> Result<Vec<Vec<u8>>, LinuxError> {
    let path = format!("/proc/{pid}/mem");
    let f = std::fs::File::open(&path).map_err(|e| LinuxError::io("open", &path, e))?;
    let mut out = Vec::with_capacity(addrs.len());
    for &a in addrs {
        let mut page = vec![0u8; PAGE as usize];
        if f.read_exact_at(&mut page, a).is_ok() {
            out.push(page);
        }
    }
    Ok(out)
}

/// User + system CPU time of `pid` in nanoseconds (from /proc/PID/stat).
pub fn cpu_ns(pid: u32) -> u64 {
    let mut text = String::new();
    if std::fs::File::open(format!("/proc/{pid}/stat"))
        .and_then(|mut f| f.read_to_string(&mut text))
        .is_err()
    {
        return 0;
    }
    // Fields after the command name (which may contain spaces) start after the last ')'.
    let Some(rest) = text.rsplit_once(')').map(|x| x.1) else {
        return 0;
    };
    let f: Vec<&str> = rest.split_whitespace().collect();
    // rest[0] is field 3 (state): utime is field 14, stime 15.
    let ticks: u64 = f.get(11).and_then(|v| v.parse().ok()).unwrap_or(0)
        + f.get(12).and_then(|v| v.parse().ok()).unwrap_or(0);
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
    ticks * 1_000_000_000 / hz
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_process_figures_are_read() {
        let me = std::process::id();
        let r = rollup(me).unwrap();
        assert!(r.rss > 0 && r.anon > 0, "{r:?}");
        // Allocate first: 1 MiB is above malloc's mmap threshold, so it is a mapping of its own
        // that a list of ranges read before it would not contain.
        let v = vec![7u8; 1 << 20];
        let a = v.as_ptr() as u64;
        let ranges = anon_ranges(me).unwrap();
        assert!(!ranges.is_empty());
        let states = page_states(me, &ranges).unwrap();
        let page = a.div_ceil(PAGE) * PAGE;
        assert!(states
            .iter()
            .any(|&(p, s)| p == page && s == PageState::Present));
        let got = read_pages(me, &[page]).unwrap();
        assert_eq!(got[0][0], 7);
        // Burn a little CPU so the tick counter moves.
        let mut x = 0u64;
        let t = std::time::Instant::now();
        while t.elapsed().as_millis() < 30 {
            x = x.wrapping_add(std::hint::black_box(1));
        }
        assert!(x > 0 && cpu_ns(me) > 0);
        drop(v);
    }
}
