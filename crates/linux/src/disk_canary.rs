//! The swap disk's speed at the moment of a run: a few hundred lone 4 KiB requests just before
//! and just after it, compared with the same requests in the calibration sim was given.
//!
//! On one 2-vCPU VM the linux substrate ran on, the disk's speed moved on its own by ±40 % from
//! one minute to the next (a lone 4 KiB read's D2C 19-21 µs at one calibration, 34.9 µs 50
//! minutes later and 26.2 µs two minutes after that; docs/experiments/validation.md, "A new
//! machine's matrix, the disk's minute-by-minute speed ..."), and a calibration taken at a
//! matrix's start describes its own minutes only. The canary says, for every run, how the
//! disk's lone requests went right before and after it against the calibration's, so that a
//! scenario's disk figures can be read against the disk's drift. What it does not give is the
//! disk the run itself met: on the next machine the canaries' read medians moved by ±15 % from
//! run to run while the runs' own read D2C p50 held within 70-83 µs, uncorrelated with them
//! (docs/experiments/validation.md, "A disk canary in every kernel run ..."); `nvmswap validate
//! --disk-drift`, which scales sim's disk by them, is a diagnostic for that reason.
//!
//! The requests are the calibration's own one-at-a-time loop
//! ([`crate::service_probe::one_at_a_time`]: a 4 KiB write then a 4 KiB read at random pages of
//! a 16 MiB O_DIRECT scratch file, each its own system call, timed around it), fewer of them,
//! after as many untimed ones that wake the disk ([`CANARY_WARMUP_ROUNDS`]), and without a
//! block trace: `calibrate` takes the same canary first among its disk probes, and writes its
//! medians into the device profile (`call_read_4k_p50_ns`, `call_write_4k_p50_ns`) as the
//! reference. The time around the system call holds more than the device (the system call and
//! the file system's direct-I/O path: the call p50 less the D2C p50 was 13.6-16.5 µs in the
//! three calibrations of 2026-12-02 14:15, whose D2C p50 moved 52-75 µs), which does not drift
//! with the disk.

use crate::error::LinuxError;
use nvmswap_core::results::LatencySummary;
use nvmswap_core::{NS_PER_US, PAGE_SIZE};
use serde::Serialize;
use std::path::Path;

/// Rounds (a write and a read each) of one canary: ~50 ms on this machine's disk. Canaries
/// taken back to back gave read medians mostly within 63-75 µs, single ones as far out as 51
/// and 93 (hand runs 2026-12-02 14:50): one canary is a sample of a moving disk, not its
/// speed to a few %.
pub const CANARY_ROUNDS: u64 = 300;

/// Rounds issued first and not timed: a disk left idle for a second or more serves its first
/// few hundred lone requests slower (hand runs 2026-12-02 14:50 on this machine's vda, a Python
/// loop of canaries of 300 rounds: back to back each canary's read p50 68-75 µs after the
/// first, after 1-10 s of idle 76-90 µs for the first), which a canary right after the machine
/// sat idle would report as the disk's drift. The calibration's service probe, whose requests
/// give the profile's times, issues 2,000 rounds back to back: most come after such a start.
pub const CANARY_WARMUP_ROUNDS: u64 = 300;

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
    let pages = SCRATCH_BYTES / PAGE_SIZE;
    let result = crate::device_check::scratch_file(&path, SCRATCH_BYTES, seed).and_then(|file| {
        crate::service_probe::one_at_a_time(&file, pages, CANARY_WARMUP_ROUNDS, seed ^ 1)?;
        crate::service_probe::one_at_a_time(&file, pages, rounds, seed)
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
