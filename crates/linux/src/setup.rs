//! Applying a configuration with guaranteed restore.
//!
//! [`Setup::apply`] records the machine's state, then makes each change only after writing it to
//! the journal in the state file. Dropping the [`Setup`] (normal end, `?` on an error, a panic,
//! or a run stopped by Ctrl-C/SIGTERM) undoes the journal; a crash leaves the state file for
//! `nvmswap linux restore`.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::cgroup;
use crate::config::{LinuxConfig, SwapFileBlocks, SwapSetup};
use crate::error::LinuxError;
use crate::state::{self, Change, MachineSnapshot, StateFile};
use crate::sysfs;

/// Priority of our swap areas: the highest user priority, so reclaim prefers them to any area
/// already active on the machine.
const SWAP_PRIORITY: i32 = 32767;
/// From include/linux/swap.h (not exported by the libc crate): use the given priority, and the
/// mask of its bits.
const SWAP_FLAG_PREFER: i32 = 0x8000;
const SWAP_FLAG_PRIO_MASK: i32 = 0x7fff;

/// A configuration applied to the machine. Restores on drop.
pub struct Setup {
    state_path: PathBuf,
    state: StateFile,
    restored: bool,
    /// The memory cgroup the workload runs in.
    pub cgroup: PathBuf,
    /// The block device that holds swapped pages (zramN or the swap file's disk), if any.
    pub swap_device: Option<String>,
    /// Whether zswap is in front of the swap area.
    pub zswap: bool,
    /// Held (flock) from before the snapshot until after the restore: one run per machine, so two
    /// runs never record each other's changes as "prior state".
    _machine_lock: std::fs::File,
    /// How long [`Setup::apply`] waited for another run to release the machine-wide lock.
    pub lock_wait: std::time::Duration,
    pub config: LinuxConfig,
}

fn c_string(path: &str) -> Result<std::ffi::CString, LinuxError> {
    std::ffi::CString::new(path).map_err(|_| LinuxError::Config {
        name: path.to_string(),
        detail: "path contains a NUL byte".into(),
    })
}

/// Writes every block of the swap file at `path` once (see [`SwapFileBlocks::Written`]), with
/// O_DIRECT so the run does not start with a page cache full of it. The pattern is not zeros:
/// a virtual disk may turn a write of zeros into a discard.
fn write_through(path: &str, size: u64) -> Result<(), LinuxError> {
    use std::os::unix::fs::{FileExt, OpenOptionsExt};
    const CHUNK: usize = 1 << 20;
    const ALIGN: usize = 4096;
    let file = std::fs::OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_DIRECT)
        .open(path)
        .map_err(|e| LinuxError::io("open with O_DIRECT", path, e))?;
    // O_DIRECT needs a page-aligned buffer: an aligned window of a larger vector.
    let mut backing = vec![0u8; CHUNK + ALIGN];
    let skip = backing.as_ptr().align_offset(ALIGN);
    let buf = &mut backing[skip..skip + CHUNK];
    for (i, b) in buf.iter_mut().enumerate() {
        *b = (i % 251) as u8 | 1;
    }
    // Whole pages only (O_DIRECT lengths are block multiples; swap uses whole pages anyway).
    let size = size - size % ALIGN as u64;
    let mut offset = 0u64;
    while offset < size {
        let len = (size - offset).min(CHUNK as u64) as usize;
        file.write_all_at(&buf[..len], offset)
            .map_err(|e| LinuxError::io("write through", path, e))?;
        offset += len as u64;
    }
    // The extents turned from unwritten to written: make that durable before swapon maps them.
    file.sync_all().map_err(|e| LinuxError::io("sync", path, e))
}

/// The whole-disk block device (as in /sys/block) that holds `path`.
pub fn disk_of(path: &Path) -> Result<String, LinuxError> {
    use std::os::unix::fs::MetadataExt;
    let dev = std::fs::metadata(path)
        .map_err(|e| LinuxError::io("stat", path, e))?
        .dev();
    // SAFETY: major/minor are pure arithmetic on the device number.
    let (major, minor) = (libc::major(dev), libc::minor(dev));
    let sys = PathBuf::from(format!("/sys/dev/block/{major}:{minor}"));
    let real = std::fs::canonicalize(&sys).map_err(|e| LinuxError::io("resolve", &sys, e))?;
    let disk = if real.join("partition").exists() {
        real.parent().map(Path::to_path_buf).unwrap_or(real)
    } else {
        real
    };
    Ok(disk
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default())
}

fn scheduler_file(disk: &str) -> String {
    format!("/sys/block/{disk}/queue/scheduler")
}

/// Whether a sysfs scheduler list (`none [mq-deadline] kyber`) names `scheduler`.
fn offers(list: &str, scheduler: &str) -> bool {
    list.split_whitespace()
        .any(|s| s.trim_matches(['[', ']']) == scheduler)
}

/// Why this machine cannot run `config` as it asks for its I/O scheduler, or None when it can
/// (or the configuration sets none, or its swap is not on a disk): the swap file's disk does not
/// offer the scheduler (a kernel built without it, as `CONFIG_IOSCHED_BFQ` off). Read-only; the
/// swap file need not exist yet (its directory's disk is the one it will be on).
pub fn scheduler_unavailable(config: &LinuxConfig) -> Result<Option<String>, LinuxError> {
    let (Some(sched), Some(path)) = (&config.scheduler, config.swap.file_path()) else {
        return Ok(None);
    };
    let path = Path::new(path);
    let on = if path.exists() {
        path
    } else {
        path.parent().unwrap_or(Path::new("/"))
    };
    let disk = disk_of(on)?;
    let file = scheduler_file(&disk);
    let list = sysfs::read_trimmed(&file)?;
    Ok((!offers(&list, sched.name())).then(|| {
        format!(
            "{disk} does not offer the {sched} scheduler (its list: {list}); the kernel was \
             built without it"
        )
    }))
}

/// The compressors the running kernel offers: /proc/crypto's entries of a compression type.
pub fn kernel_compressors() -> Result<Vec<String>, LinuxError> {
    let text = std::fs::read_to_string("/proc/crypto")
        .map_err(|e| LinuxError::io("read", "/proc/crypto", e))?;
    let mut names = Vec::new();
    for block in text.split("\n\n") {
        let field = |key: &str| {
            block.lines().find_map(|l| {
                let (k, v) = l.split_once(':')?;
                (k.trim() == key).then(|| v.trim().to_string())
            })
        };
        if let (Some(name), Some(kind)) = (field("name"), field("type")) {
            if ["scomp", "acomp", "compression"].contains(&kind.as_str()) && !names.contains(&name)
            {
                names.push(name);
            }
        }
    }
    Ok(names)
}

/// Checks that the running kernel has what `config` asks for (its compressor in /proc/crypto,
/// its I/O scheduler in the swap disk's sysfs list) before anything is changed, with an error
/// that lists what the kernel has.
pub fn check_kernel(config: &LinuxConfig) -> Result<(), LinuxError> {
    let compressor = match &config.swap {
        SwapSetup::Zram { algorithm, .. } => Some(*algorithm),
        SwapSetup::Zswap { compressor, .. } => Some(*compressor),
        _ => None,
    };
    if let Some(c) = compressor {
        let offered = kernel_compressors()?;
        if !offered.iter().any(|o| o == c.name()) {
            return Err(LinuxError::Kernel {
                what: format!("configuration {}: compressor {c}", config.name),
                detail: format!(
                    "the running kernel does not offer it (/proc/crypto has: {}); nothing was changed",
                    offered.join(", ")
                ),
            });
        }
    }
    let swap_file = match &config.swap {
        SwapSetup::Swapfile { path, .. } | SwapSetup::Zswap { path, .. } => Some(path),
        _ => None,
    };
    if let (Some(sched), Some(path)) = (config.scheduler, swap_file) {
        let dir = Path::new(path)
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let disk = disk_of(dir)?;
        let file = format!("/sys/block/{disk}/queue/scheduler");
        let list = sysfs::read_trimmed(&file).unwrap_or_default();
        let offered: Vec<&str> = list
            .split_whitespace()
            .map(|s| s.trim_matches(['[', ']']))
            .collect();
        if !list.is_empty() && list != "none" && !offered.contains(&sched.name()) {
            return Err(LinuxError::Kernel {
                what: format!("configuration {}: I/O scheduler {sched}", config.name),
                detail: format!(
                    "{disk} does not offer it ({file} has: {}); nothing was changed",
                    offered.join(", ")
                ),
            });
        }
    }
    Ok(())
}

/// Take the machine-wide lock, waiting for another run to finish first.
fn lock_machine() -> Result<std::fs::File, LinuxError> {
    use std::os::unix::io::AsRawFd;
    let path = "/var/tmp/nvmswap-linux.lock";
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .map_err(|e| LinuxError::io("open", path, e))?;
    // SAFETY: flock on an fd we own; released when the file is closed.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
        tracing::warn!("nvmswap linux: another run holds {path}; waiting for it to finish");
        // SAFETY: as above, blocking this time.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } != 0 {
            return Err(LinuxError::io(
                "flock",
                path,
                std::io::Error::last_os_error(),
            ));
        }
    }
    Ok(file)
}

impl Setup {
    /// Record the machine's state and apply `config`. On any error everything done so far is
    /// undone before the error is returned.
    pub fn apply(config: &LinuxConfig, state_path: &Path) -> Result<Setup, LinuxError> {
        crate::require_root()?;
        check_kernel(config)?;
        if state_path.exists() {
            return Err(LinuxError::StateFile {
                path: state_path.display().to_string(),
                detail: "exists: a previous run did not finish; run `nvmswap linux restore` first"
                    .into(),
            });
        }
        crate::signals::install();
        // A Ctrl-C that arrived between runs (e.g. during validate's sim half) stops here,
        // before anything is touched.
        if crate::signals::interrupted() {
            return Err(LinuxError::Interrupted);
        }
        let waiting = std::time::Instant::now();
        let machine_lock = lock_machine()?;
        let lock_wait = waiting.elapsed();
        let before = MachineSnapshot::capture()?;
        let mut setup = Setup {
            state_path: state_path.to_path_buf(),
            state: StateFile {
                pid: std::process::id(),
                before,
                changes: Vec::new(),
            },
            restored: false,
            cgroup: PathBuf::new(),
            swap_device: None,
            zswap: false,
            _machine_lock: machine_lock,
            lock_wait,
            config: config.clone(),
        };
        setup.state.save(state_path)?;
        setup.apply_steps(config)?;
        Ok(setup)
    }

    /// Adds a change made outside the set-up (the swap-device trace's mounts and tracepoint
    /// settings) to the journal, so `nvmswap linux restore` undoes it after a crash too.
    pub fn journal(&mut self, change: Change) -> Result<(), LinuxError> {
        self.record(change)
    }

    fn record(&mut self, change: Change) -> Result<(), LinuxError> {
        self.state.changes.push(change);
        self.state.save(&self.state_path)
    }

    fn set_attribute(&mut self, path: &str, value: &str) -> Result<(), LinuxError> {
        let raw = sysfs::read_trimmed(path)?;
        // Choice lists (schedulers, zram algorithms) are restored to the selected entry.
        let prior = if raw.contains('[') {
            sysfs::selected_choice(&raw)
        } else {
            raw
        };
        if prior == value {
            return Ok(());
        }
        self.record(Change::Attribute {
            path: path.to_string(),
            prior,
        })?;
        sysfs::write_value(path, value)
    }

    fn swapon(&mut self, path: &str) -> Result<(), LinuxError> {
        let out = Command::new("mkswap")
            .arg(path)
            .output()
            .map_err(|e| LinuxError::io("run mkswap on", path, e))?;
        if !out.status.success() {
            return Err(LinuxError::Kernel {
                what: format!("mkswap {path}"),
                detail: String::from_utf8_lossy(&out.stderr).trim().to_string(),
            });
        }
        self.record(Change::Swapon {
            path: path.to_string(),
        })?;
        let c = c_string(path)?;
        let flags = SWAP_FLAG_PREFER | (SWAP_PRIORITY & SWAP_FLAG_PRIO_MASK);
        // SAFETY: `c` is a valid NUL-terminated path that outlives the call.
        if unsafe { libc::swapon(c.as_ptr(), flags) } != 0 {
            return Err(LinuxError::io(
                "swapon",
                path,
                std::io::Error::last_os_error(),
            ));
        }
        Ok(())
    }

    fn create_swap_file(&mut self, path: &str, size: u64) -> Result<(), LinuxError> {
        use std::os::unix::fs::OpenOptionsExt;
        use std::os::unix::io::AsRawFd;
        if Path::new(path).exists() {
            return Err(LinuxError::Config {
                name: self.config.name.clone(),
                detail: format!(
                    "swap file {path} already exists; not overwriting a file we did not make"
                ),
            });
        }
        self.record(Change::SwapFile {
            path: path.to_string(),
        })?;
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(path)
            .map_err(|e| LinuxError::io("create", path, e))?;
        // Real blocks (not a sparse file): swap files must not have holes.
        // SAFETY: the fd is open for writing for the duration of the call.
        let rc = unsafe { libc::posix_fallocate(file.as_raw_fd(), 0, size as libc::off_t) };
        if rc != 0 {
            return Err(LinuxError::io(
                "fallocate",
                path,
                std::io::Error::from_raw_os_error(rc),
            ));
        }
        drop(file);
        match self.config.swap_file_blocks {
            SwapFileBlocks::Allocated => Ok(()),
            SwapFileBlocks::Written => write_through(path, size),
        }
    }

    fn apply_steps(&mut self, config: &LinuxConfig) -> Result<(), LinuxError> {
        match &config.swap {
            SwapSetup::None => {}
            SwapSetup::Zram {
                size_bytes,
                algorithm,
                mem_limit_bytes,
            } => {
                let id_text = sysfs::read_trimmed("/sys/class/zram-control/hot_add")?;
                let id: u32 = id_text.parse().map_err(|_| LinuxError::Kernel {
                    what: "zram hot_add".into(),
                    detail: format!("unexpected answer {id_text}"),
                })?;
                self.record(Change::ZramDevice { id })?;
                let dev = format!("/sys/block/zram{id}");
                sysfs::write_value(format!("{dev}/comp_algorithm"), algorithm.name())?;
                sysfs::write_value(format!("{dev}/disksize"), &size_bytes.to_string())?;
                if *mem_limit_bytes > 0 {
                    sysfs::write_value(format!("{dev}/mem_limit"), &mem_limit_bytes.to_string())?;
                }
                self.swapon(&format!("/dev/zram{id}"))?;
                self.swap_device = Some(format!("zram{id}"));
            }
            SwapSetup::Swapfile { path, size_bytes } => {
                self.create_swap_file(path, *size_bytes)?;
                self.swapon(path)?;
                self.swap_device = Some(disk_of(Path::new(path))?);
            }
            SwapSetup::Zswap {
                path,
                size_bytes,
                compressor,
                max_pool_percent,
            } => {
                let p = state::ZSWAP_PARAMS;
                if !Path::new(p).exists() {
                    return Err(LinuxError::Kernel {
                        what: "zswap".into(),
                        detail: format!("{p} missing: kernel built without zswap"),
                    });
                }
                self.create_swap_file(path, *size_bytes)?;
                self.swapon(path)?;
                self.swap_device = Some(disk_of(Path::new(path))?);
                self.set_attribute(&format!("{p}/compressor"), compressor.name())?;
                self.set_attribute(
                    &format!("{p}/max_pool_percent"),
                    &max_pool_percent.to_string(),
                )?;
                self.set_attribute(&format!("{p}/enabled"), "Y")?;
                self.zswap = true;
            }
        }
        if let (Some(sched), Some(dev)) = (&config.scheduler, &self.swap_device) {
            let file = scheduler_file(dev);
            let list = sysfs::read_trimmed(&file).unwrap_or_default();
            // zram has no scheduler; other devices must offer the one asked for.
            if !list.is_empty() && list != "none" {
                if !offers(&list, sched.name()) {
                    return Err(LinuxError::Kernel {
                        what: file,
                        detail: format!("scheduler {sched} not offered ({list})"),
                    });
                }
                self.set_attribute(&file, sched.name())?;
            }
        }
        if let Some(pc) = config.page_cluster {
            self.set_attribute("/proc/sys/vm/page-cluster", &pc.to_string())?;
        }
        if let Some(s) = config.swappiness {
            self.set_attribute("/proc/sys/vm/swappiness", &s.to_string())?;
        }
        let cg = cgroup::memory_root().join(format!("nvmswap-{}", std::process::id()));
        self.record(Change::Cgroup {
            path: cg.display().to_string(),
        })?;
        std::fs::create_dir(&cg).map_err(|e| LinuxError::io("mkdir", &cg, e))?;
        cgroup::configure(&cg, config.cgroup_limit_bytes, config.swappiness)?;
        self.cgroup = cg;
        Ok(())
    }

    /// Undo every change, check the machine against the snapshot and remove the state file.
    /// Returns the differences that remain (empty when restored exactly).
    pub fn restore(mut self) -> Result<Vec<String>, LinuxError> {
        self.restore_inner()
    }

    fn restore_inner(&mut self) -> Result<Vec<String>, LinuxError> {
        self.restored = true;
        state::undo_all(&self.state.changes)?;
        let now = MachineSnapshot::capture()?;
        let diffs = self.state.before.differences(&now);
        let _ = std::fs::remove_file(&self.state_path);
        Ok(diffs)
    }

    /// Leave the configuration applied (for `nvmswap linux setup`): nothing is undone now, and
    /// the state file stays for `nvmswap linux restore`.
    pub fn keep(mut self) -> PathBuf {
        self.restored = true;
        self.state_path.clone()
    }

    /// The snapshot taken before any change.
    pub fn before(&self) -> &MachineSnapshot {
        &self.state.before
    }

    /// The journal so far (for tests and `status`).
    pub fn changes(&self) -> &[Change] {
        &self.state.changes
    }
}

impl Drop for Setup {
    fn drop(&mut self) {
        if self.restored {
            return;
        }
        match self.restore_inner() {
            Ok(d) if d.is_empty() => {}
            Ok(d) => tracing::warn!("nvmswap linux: restored with differences: {}", d.join("; ")),
            Err(e) => tracing::error!(
                "nvmswap linux: restore failed ({e}); state kept in {}, run `nvmswap linux restore`",
                self.state_path.display()
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scheduler_list_offers_its_names_bracketed_or_not() {
        let list = "none [mq-deadline] kyber";
        for name in ["none", "mq-deadline", "kyber"] {
            assert!(offers(list, name), "{name}");
        }
        assert!(!offers(list, "bfq"));
        assert!(!offers(list, "deadline"), "a name, not a part of one");
    }

    #[test]
    fn a_configuration_without_a_scheduler_or_a_swap_file_asks_nothing_of_the_disk() {
        let zram = crate::config::LinuxConfig::load("linux-zram").unwrap();
        assert_eq!(scheduler_unavailable(&zram).unwrap(), None);
        let mut swapfile = crate::config::LinuxConfig::load("linux-swapfile").unwrap();
        swapfile.scheduler = None;
        assert_eq!(scheduler_unavailable(&swapfile).unwrap(), None);
    }
}
