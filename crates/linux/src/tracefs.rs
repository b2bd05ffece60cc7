//! Mounting a pseudo file system (tracefs, debugfs) for the time a trace needs it: the swap-device
//! trace ([`crate::blktrace`]) and the memcg reclaim trace ([`crate::memcg_reclaim`]) both mount
//! what is not mounted and unmount only what they mounted.

use std::path::Path;
use std::process::Command;

/// Mounts a `fstype` file system at `at` unless `ready(at)` already holds (then it is somebody
/// else's and stays as it is). Returns whether we mounted it. When the mount fails, or succeeds
/// without making `ready` hold (the kernel lacks the feature), nothing is left mounted and the
/// error says what is `missing`.
pub fn mount_unless(
    fstype: &str,
    at: &Path,
    ready: impl Fn(&Path) -> bool,
    missing: &str,
) -> Result<bool, String> {
    if ready(at) {
        return Ok(false);
    }
    let ok = Command::new("mount")
        .args(["-t", fstype, "nodev"])
        .arg(at)
        .status()
        .map_err(|e| format!("mount {fstype}: {e}"))?
        .success();
    if ok && ready(at) {
        return Ok(true);
    }
    if ok {
        unmount(at);
    }
    Err(format!("{missing} is not available"))
}

/// Unmounts what [`mount_unless`] mounted (best effort: used on every path out, errors too).
pub fn unmount(at: &Path) {
    let _ = Command::new("umount").arg(at).status();
}
