//! The swap disk's speed at the moment of a run: a few hundred lone 4 KiB requests just before
//! and just after it, compared with the same requests in the calibration sim was given.
//!
//! On the 2-vCPU VM the linux substrate runs on, the disk's speed moves on its own by ±40 %
//! from one minute to the next (a lone 4 KiB read's D2C 19-21 µs at one calibration, 34.9 µs
//! 50 minutes later and 26.2 µs two minutes after that; 2026-12-02, docs/experiments/
//! validation.md, "A new machine's matrix, the disk's minute-by-minute speed ..."), and a
//! kernel run's own lone reads go at the speed of its minutes. A calibration taken at a
//! matrix's start describes its own minutes only. The canary tells, for every run, how far the
//! disk had moved from the calibration, so that an error of sim's disk figures can be told
//! from the drift of the disk it was calibrated on.
//!
//! The requests are the calibration's own one-at-a-time loop
//! ([`crate::service_probe::one_at_a_time`]: a 4 KiB write then a 4 KiB read at random pages of
//! a 16 MiB O_DIRECT scratch file, each its own system call, timed around it), fewer of them
//! and without a block trace: `calibrate` takes the same canary first thing, untraced too, and
//! writes its medians into the device profile (`call_read_4k_p50_ns`, `call_write_4k_p50_ns`)
//! as the reference. The time around the system call holds more than the device (the system
//! call and the file system's direct-I/O path, 11-16 µs of a read on this machine), which does
//! not drift with the disk; the canary's difference from the reference is the disk's.

use crate::error::LinuxError;
use nvmswap_core::results::LatencySummary;
use nvmswap_core::{NS_PER_US, PAGE_SIZE};
use serde::Serialize;
use std::path::Path;

/// Rounds (a write and a read each) of one canary: ~40 ms on this machine's disk, and a median
/// whose own spread is well below the drift it is to see (the p50 of 300 draws of a
/// distribution whose p25-p75 spans a few µs moves by a fraction of a µs).
pub const CANARY_ROUNDS: u64 = 300;

/// The scratch file's size: the span of the calibration's single-request probes.
const SCRATCH_BYTES: u64 = 16 << 20;

/// One canary's requests, timed around their system calls (µs).
#[derive(Debug, Clone, Serialize)]
pub struct DiskCanary {
    pub rounds: u64,
    pub read_call_us: LatencySummary,
    pub write_call_us: LatencySummary,
}

/// Takes one canary on a fresh scratch file in `dir` (on the disk to watch), removed afterwards
/// on every path. Changes nothing else of the machine.
pub fn measure(dir: &Path, rounds: u64, seed: u64) -> Result<DiskCanary, LinuxError> {
    let path = dir.join(format!("nvmswap-disk-canary-{}.dat", std::process::id()));
    let result = crate::device_check::scratch_file(&path, SCRATCH_BYTES, seed).and_then(|file| {
        crate::service_probe::one_at_a_time(&file, SCRATCH_BYTES / PAGE_SIZE, rounds, seed)
    });
    let _ = std::fs::remove_file(&path);
    let (reads, writes) = result?;
    Ok(DiskCanary {
        rounds,
        read_call_us: reads.summary(NS_PER_US),
        write_call_us: writes.summary(NS_PER_US),
    })
}

/// The directory a run's canary goes to: the swap file's, where the configuration has one
/// (its disk is the one the run uses), else `/var/tmp` (calibrate's default `--swap-dir`).
pub fn dir_of(swap: &crate::config::SwapSetup) -> std::path::PathBuf {
    use crate::config::SwapSetup;
    match swap {
        SwapSetup::Swapfile { path, .. } | SwapSetup::Zswap { path, .. } => Path::new(path)
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .map_or_else(|| "/var/tmp".into(), Path::to_path_buf),
        SwapSetup::Zram { .. } | SwapSetup::None => "/var/tmp".into(),
    }
}

/// `extra.disk_canary` of a linux run: the canary before the machine was set up and after it
/// was restored, and the mean of their read and write medians (the figure `nvmswap validate`
/// compares with the calibration's). A canary that could not be taken is its error's text.
pub fn to_json(
    before: &Result<DiskCanary, LinuxError>,
    after: &Result<DiskCanary, LinuxError>,
) -> serde_json::Value {
    let side = |c: &Result<DiskCanary, LinuxError>| match c {
        Ok(c) => serde_json::to_value(c).unwrap_or_default(),
        Err(e) => serde_json::json!({ "error": e.to_string() }),
    };
    let mut v = serde_json::json!({ "before": side(before), "after": side(after) });
    if let (Ok(b), Ok(a)) = (before, after) {
        v["read_call_p50_us"] = ((b.read_call_us.p50 + a.read_call_us.p50) / 2.0).into();
        v["write_call_p50_us"] = ((b.write_call_us.p50 + a.write_call_us.p50) / 2.0).into();
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::SwapSetup;

    #[test]
    fn the_canary_goes_to_the_swap_files_disk_or_var_tmp() {
        let file = SwapSetup::Swapfile {
            path: "/srv/swap/nvmswap-swapfile".into(),
            size_bytes: 1 << 20,
        };
        assert_eq!(dir_of(&file), Path::new("/srv/swap"));
        assert_eq!(dir_of(&SwapSetup::None), Path::new("/var/tmp"));
    }

    #[test]
    fn both_ends_give_the_mean_of_their_medians_and_a_failed_end_its_error() {
        let summary = |p50: f64| LatencySummary {
            p50,
            mean: p50,
            ..Default::default()
        };
        let canary = |r: f64, w: f64| DiskCanary {
            rounds: 3,
            read_call_us: summary(r),
            write_call_us: summary(w),
        };
        let v = to_json(&Ok(canary(30.0, 20.0)), &Ok(canary(40.0, 24.0)));
        assert_eq!(v["read_call_p50_us"], 35.0);
        assert_eq!(v["write_call_p50_us"], 22.0);
        assert_eq!(v["before"]["rounds"], 3);
        let failed = to_json(
            &Ok(canary(30.0, 20.0)),
            &Err(LinuxError::Worker("no space".into())),
        );
        assert!(failed.get("read_call_p50_us").is_none(), "{failed}");
        assert!(failed["after"]["error"]
            .as_str()
            .unwrap()
            .contains("no space"));
    }

    /// Writes and reads a real scratch file (no root needed: O_DIRECT on a directory of the
    /// disk); skipped where the file system refuses O_DIRECT (tmpfs).
    #[test]
    fn a_canary_times_every_round_and_leaves_no_file() {
        let dir = std::env::temp_dir().join(format!("nvmswap-canary-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let result = measure(&dir, 20, 7);
        let left: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
        let _ = std::fs::remove_dir(&dir);
        assert!(
            left.is_empty(),
            "the scratch file was left behind: {left:?}"
        );
        match result {
            Ok(c) => {
                assert_eq!(c.rounds, 20);
                assert!(
                    c.read_call_us.p50 > 0.0 && c.write_call_us.p50 > 0.0,
                    "{c:?}"
                );
            }
            Err(e) if e.to_string().contains("Invalid argument") => {
                eprintln!("skipped: {} refuses O_DIRECT ({e})", dir.display());
            }
            Err(e) => panic!("{e}"),
        }
    }
}
