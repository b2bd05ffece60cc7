//! The memory cgroup the workload runs in: v1 (`memory.limit_in_bytes`, per-cgroup
//! `memory.swappiness`) where the machine mounts the v1 memory controller, v2 (`memory.max`)
//! otherwise.
//!
//! A cgroup limits how much of the workload stays resident; it does not choose the swap device.
//! Reclaim sends the cgroup's pages to whichever active swap area has the highest priority, so
//! swap areas that were active before the run (we never turn them off) can absorb some of the
//! cgroup's swap. Our areas are activated with the highest priority to make that rare.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::error::LinuxError;
use crate::sysfs;

const V1_ROOT: &str = "/sys/fs/cgroup/memory";
const V2_ROOT: &str = "/sys/fs/cgroup";

/// True when the memory controller is the v1 one.
pub fn is_v1() -> bool {
    Path::new(V1_ROOT).join("memory.limit_in_bytes").exists()
}

/// Where memory cgroups are created.
pub fn memory_root() -> PathBuf {
    if is_v1() {
        PathBuf::from(V1_ROOT)
    } else {
        PathBuf::from(V2_ROOT)
    }
}

/// The cgroup's limit file (v1 or v2).
pub fn limit_file(cg: &Path) -> PathBuf {
    if is_v1() {
        cg.join("memory.limit_in_bytes")
    } else {
        cg.join("memory.max")
    }
}

/// The cgroup's current charge (v1 or v2).
pub fn usage_bytes(cg: &Path) -> Result<u64, LinuxError> {
    let file = if is_v1() {
        cg.join("memory.usage_in_bytes")
    } else {
        cg.join("memory.current")
    };
    let text = sysfs::read_trimmed(&file)?;
    text.parse().map_err(|_| LinuxError::Kernel {
        what: file.display().to_string(),
        detail: format!("not a number: {text}"),
    })
}

/// memory.stat of the cgroup as name → value.
pub fn stat(cg: &Path) -> Result<std::collections::BTreeMap<String, u64>, LinuxError> {
    let text = sysfs::read_trimmed(cg.join("memory.stat"))?;
    Ok(text
        .lines()
        .filter_map(|l| {
            let mut it = l.split_whitespace();
            Some((it.next()?.to_string(), it.next()?.parse().ok()?))
        })
        .collect())
}

/// Set the limit and, on v1, the cgroup's own swappiness (v1 reclaim inside a cgroup reads the
/// cgroup's value, not vm.swappiness).
pub fn configure(cg: &Path, limit_bytes: u64, swappiness: Option<u32>) -> Result<(), LinuxError> {
    sysfs::write_value(limit_file(cg), &limit_bytes.to_string())?;
    if let (true, Some(s)) = (is_v1(), swappiness) {
        sysfs::write_value(cg.join("memory.swappiness"), &s.to_string())?;
    }
    Ok(())
}

/// Move process `pid` into the cgroup.
pub fn join(cg: &Path, pid: u32) -> Result<(), LinuxError> {
    sysfs::write_value(cg.join("cgroup.procs"), &pid.to_string())
}

fn tasks(cg: &Path) -> Vec<i32> {
    std::fs::read_to_string(cg.join("cgroup.procs"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect()
}

/// Kill whatever still runs in the cgroup and remove it. Only called on cgroups we created.
pub fn remove(cg: &Path) -> Result<(), LinuxError> {
    if !cg.exists() {
        return Ok(());
    }
    for _ in 0..100 {
        for pid in tasks(cg) {
            // SAFETY: kill(2) has no memory-safety preconditions; the pids are in our cgroup.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        match std::fs::remove_dir(cg) {
            Ok(()) => return Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
    std::fs::remove_dir(cg).map_err(|e| LinuxError::io("rmdir", cg, e))
}
