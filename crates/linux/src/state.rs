//! The machine's swap-related state: a snapshot to compare before and after, and a journal of
//! every change this process made, written to a state file *before* each change so that
//! `nvmswap linux restore` can undo a run that crashed half-way.
//!
//! Restoring undoes the journal in reverse order. It never touches anything the journal does not
//! name: swap areas, zram devices and cgroups that existed before stay as they were.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::LinuxError;
use crate::sysfs;

/// The sysctls a configuration may change.
pub const SYSCTLS: [&str; 2] = ["/proc/sys/vm/swappiness", "/proc/sys/vm/page-cluster"];
pub const ZSWAP_PARAMS: &str = "/sys/module/zswap/parameters";

/// What `before == after` is checked on: everything a run may change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MachineSnapshot {
    pub swaps: Vec<String>,
    pub zswap: BTreeMap<String, String>,
    pub sysctls: BTreeMap<String, String>,
    /// Block device → selected I/O scheduler.
    pub schedulers: BTreeMap<String, String>,
    /// zram device names (zram0, ...).
    pub zram_devices: Vec<String>,
    /// Child cgroups of the memory controller's root (v1) or of the unified root (v2).
    pub memory_cgroups: Vec<String>,
    /// Mount points of tracefs and debugfs (the swap-device trace mounts them when it must).
    #[serde(default)]
    pub trace_mounts: Vec<String>,
    /// Our tracefs instances (`nvmswap-reclaim-*`, the memcg reclaim trace's).
    #[serde(default)]
    pub trace_instances: Vec<String>,
}

/// Where tracefs and debugfs are mounted, from /proc/mounts (`type mount-point`).
pub(crate) fn trace_mounts() -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_to_string("/proc/mounts")
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() > 2 && (f[2] == "tracefs" || f[2] == "debugfs"))
                .then(|| format!("{} {}", f[2], f[1]))
        })
        .collect();
    v.sort();
    v
}

fn dir_names(dir: &Path, keep: impl Fn(&str, &Path) -> bool) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .filter_map(|e| {
                    let name = e.file_name().to_string_lossy().to_string();
                    keep(&name, &e.path()).then_some(name)
                })
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

impl MachineSnapshot {
    pub fn capture() -> Result<Self, LinuxError> {
        let zswap = dir_names(Path::new(ZSWAP_PARAMS), |_, _| true)
            .into_iter()
            .map(|p| {
                let v = sysfs::read_trimmed(Path::new(ZSWAP_PARAMS).join(&p)).unwrap_or_default();
                (p, v)
            })
            .collect();
        let sysctls = SYSCTLS
            .iter()
            .map(|p| Ok((p.to_string(), sysfs::read_trimmed(p)?)))
            .collect::<Result<_, LinuxError>>()?;
        let schedulers = dir_names(Path::new("/sys/block"), |_, p| {
            p.join("queue/scheduler").exists()
        })
        .into_iter()
        .map(|d| {
            let s =
                sysfs::read_trimmed(format!("/sys/block/{d}/queue/scheduler")).unwrap_or_default();
            (d, sysfs::selected_choice(&s))
        })
        .collect();
        let zram_devices = dir_names(Path::new("/sys/block"), |n, _| n.starts_with("zram"));
        let memory_cgroups = dir_names(&crate::cgroup::memory_root(), |_, p| p.is_dir());
        Ok(MachineSnapshot {
            swaps: sysfs::active_swaps()?,
            zswap,
            sysctls,
            schedulers,
            zram_devices,
            memory_cgroups,
            trace_mounts: trace_mounts(),
            trace_instances: crate::memcg_reclaim::instances(),
        })
    }

    /// Human-readable differences from `other` (empty when equal).
    pub fn differences(&self, other: &MachineSnapshot) -> Vec<String> {
        let mut out = Vec::new();
        if self.swaps != other.swaps {
            out.push(format!("swaps {:?} -> {:?}", self.swaps, other.swaps));
        }
        for (name, a, b) in [
            ("zswap", &self.zswap, &other.zswap),
            ("sysctls", &self.sysctls, &other.sysctls),
            ("schedulers", &self.schedulers, &other.schedulers),
        ] {
            if a != b {
                out.push(format!("{name} {a:?} -> {b:?}"));
            }
        }
        if self.zram_devices != other.zram_devices {
            out.push(format!(
                "zram {:?} -> {:?}",
                self.zram_devices, other.zram_devices
            ));
        }
        if self.memory_cgroups != other.memory_cgroups {
            out.push(format!(
                "cgroups {:?} -> {:?}",
                self.memory_cgroups, other.memory_cgroups
            ));
        }
        if self.trace_mounts != other.trace_mounts {
            out.push(format!(
                "trace mounts {:?} -> {:?}",
                self.trace_mounts, other.trace_mounts
            ));
        }
        if self.trace_instances != other.trace_instances {
            out.push(format!(
                "trace instances {:?} -> {:?}",
                self.trace_instances, other.trace_instances
            ));
        }
        out
    }
}

/// One change this process made, with what undoes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Change {
    /// A kernel attribute (sysctl, zswap parameter, scheduler, zram attribute) and its prior value.
    Attribute { path: String, prior: String },
    /// A swap area we activated.
    Swapon { path: String },
    /// A zram device we hot-added.
    ZramDevice { id: u32 },
    /// A swap file we created.
    SwapFile { path: String },
    /// A cgroup directory we created (its tasks are killed before removal).
    Cgroup { path: String },
    /// A pseudo file system we mounted (tracefs or debugfs, for the swap-device trace).
    Mount { path: String },
    /// A tracefs instance we created (`instances/<name>`, the memcg reclaim trace's): removing
    /// it takes its buffer and event switches with it.
    TraceInstance { name: String },
}

/// The state file: the snapshot before the run and the journal of changes since.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StateFile {
    pub pid: u32,
    pub before: MachineSnapshot,
    pub changes: Vec<Change>,
}

const STATE_DIR: &str = "/var/tmp";
const STATE_PREFIX: &str = "nvmswap-linux-state-";

/// This process's default state file. One per process id, so that two runs on one machine (other
/// users of the shared machine) never overwrite each other's journal.
pub fn default_state_path() -> PathBuf {
    PathBuf::from(format!(
        "{STATE_DIR}/{STATE_PREFIX}{}.json",
        std::process::id()
    ))
}

/// Default state files left by processes that are no longer running: what
/// `nvmswap linux restore` undoes when not given a file. Files of live processes are skipped (that
/// run is still in progress and will restore itself).
pub fn orphaned_state_files() -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(STATE_DIR)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .map(|e| e.path())
                .filter(|p| {
                    let name = p
                        .file_name()
                        .map(|n| n.to_string_lossy().to_string())
                        .unwrap_or_default();
                    let Some(pid) = name
                        .strip_prefix(STATE_PREFIX)
                        .and_then(|r| r.strip_suffix(".json"))
                        .and_then(|r| r.parse::<u32>().ok())
                    else {
                        return false;
                    };
                    !Path::new(&format!("/proc/{pid}")).exists()
                })
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

impl StateFile {
    pub fn load(path: &Path) -> Result<Self, LinuxError> {
        let text = std::fs::read_to_string(path).map_err(|e| LinuxError::io("read", path, e))?;
        serde_json::from_str(&text).map_err(|e| LinuxError::StateFile {
            path: path.display().to_string(),
            detail: e.to_string(),
        })
    }

    /// Written atomically (temporary file and rename), so a crash mid-write leaves the old one.
    pub fn save(&self, path: &Path) -> Result<(), LinuxError> {
        let tmp = path.with_extension("tmp");
        let text = serde_json::to_string_pretty(self).map_err(|e| LinuxError::StateFile {
            path: path.display().to_string(),
            detail: e.to_string(),
        })?;
        std::fs::write(&tmp, text).map_err(|e| LinuxError::io("write", &tmp, e))?;
        std::fs::rename(&tmp, path).map_err(|e| LinuxError::io("rename", path, e))
    }
}

fn c_path(path: &str) -> std::ffi::CString {
    std::ffi::CString::new(path).unwrap_or_default()
}

/// Undo one change. Missing objects (already removed) are not errors: restore is idempotent.
pub fn undo(change: &Change) -> Result<(), LinuxError> {
    match change {
        Change::Attribute { path, prior } => {
            // zswap's `enabled` reads back Y/N and accepts the same. An attribute that no longer
            // exists (a tracefs file after the trace unmounted it, having put it back) has
            // nothing left to restore.
            match sysfs::write_value(path, prior) {
                Err(LinuxError::Io { source, .. })
                    if source.kind() == std::io::ErrorKind::NotFound =>
                {
                    Ok(())
                }
                other => other,
            }
        }
        Change::Swapon { path } => {
            if !sysfs::active_swaps()?.iter().any(|s| s == path) {
                return Ok(());
            }
            let c = c_path(path);
            // SAFETY: `c` is a valid NUL-terminated path that outlives the call.
            let rc = unsafe { libc::swapoff(c.as_ptr()) };
            if rc != 0 {
                return Err(LinuxError::io(
                    "swapoff",
                    path,
                    std::io::Error::last_os_error(),
                ));
            }
            Ok(())
        }
        Change::ZramDevice { id } => {
            let dev = format!("/sys/block/zram{id}");
            if !Path::new(&dev).exists() {
                return Ok(());
            }
            sysfs::write_value(format!("{dev}/reset"), "1")?;
            sysfs::write_value("/sys/class/zram-control/hot_remove", &id.to_string())
        }
        Change::SwapFile { path } => match std::fs::remove_file(path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(LinuxError::io("remove", path, e))
            }
            _ => Ok(()),
        },
        Change::Cgroup { path } => crate::cgroup::remove(Path::new(path)),
        Change::Mount { path } => {
            let mounted = std::fs::read_to_string("/proc/mounts")
                .unwrap_or_default()
                .lines()
                .any(|l| l.split_whitespace().nth(1) == Some(path.as_str()));
            if !mounted {
                return Ok(());
            }
            let ok = std::process::Command::new("umount")
                .arg(path)
                .status()
                .map_err(|e| LinuxError::io("umount", path, e))?
                .success();
            if ok {
                Ok(())
            } else {
                Err(LinuxError::Restore(format!("umount {path} failed")))
            }
        }
        Change::TraceInstance { name } => {
            crate::memcg_reclaim::undo_instance(name).map_err(LinuxError::Restore)
        }
    }
}

/// Undo the journal newest first; every step is tried even when one fails.
pub fn undo_all(changes: &[Change]) -> Result<(), LinuxError> {
    let mut failures = Vec::new();
    for change in changes.iter().rev() {
        if let Err(e) = undo(change) {
            failures.push(e.to_string());
        }
    }
    if failures.is_empty() {
        Ok(())
    } else {
        Err(LinuxError::Restore(failures.join("; ")))
    }
}

/// `nvmswap linux restore`: undo the journal of a state file, then check the machine against the
/// snapshot in it and remove the file.
pub fn restore_from_file(path: &Path) -> Result<Vec<String>, LinuxError> {
    crate::require_root()?;
    let state = StateFile::load(path)?;
    undo_all(&state.changes)?;
    let now = MachineSnapshot::capture()?;
    let diffs = state.before.differences(&now);
    std::fs::remove_file(path).map_err(|e| LinuxError::io("remove", path, e))?;
    Ok(diffs)
}
