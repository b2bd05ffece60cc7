//! nvmswap-linux: the running kernel's own swap (zram, zswap, swap file, I/O schedulers) in a
//! memory cgroup, set up from a configuration and always restored afterwards.
//!
//! - [`setup::Setup`] applies a [`config::LinuxConfig`] and undoes it on drop, on error and on
//!   Ctrl-C; [`state::restore_from_file`] undoes a crashed run from its state file.
//! - [`run_pressure`] runs the ChromeOS pressure test with tabs as real processes.
//! - [`microbench::run`] runs the shared page-touch microbenchmark against zram or a swap file.

pub mod affinity;
pub mod batch_probe;
pub mod blktrace;
pub mod calibrate;
pub mod calibration_median;
pub mod cgroup;
pub mod chromium;
pub mod closed_loop;
pub mod completion_cpu_probe;
pub mod config;
pub mod cpu_wake_probe;
pub mod device_check;
pub mod disk_canary;
pub mod error;
pub mod host_speed;
pub mod memcg_reclaim;
pub mod microbench;
pub mod other_processes;
pub mod pressure;
pub mod readahead_probe;
pub mod service_probe;
pub mod setup;
pub mod shootdown;
pub mod signals;
pub mod state;
pub mod sysfs;
pub mod tab;
pub mod tab_memory_probe;
pub mod tracefs;
pub mod wake_probe;
pub mod wakeup_replay;
pub mod worker;

pub use config::{bundled_configs, LinuxConfig, SwapSetup};
pub use error::LinuxError;
pub use pressure::{run_pressure, PressureOptions};
pub use setup::Setup;

/// Fail with [`LinuxError::NotRoot`] unless the effective uid is 0. Called before anything is
/// touched.
pub fn require_root() -> Result<(), LinuxError> {
    // SAFETY: geteuid has no preconditions and cannot fail.
    let euid = unsafe { libc::geteuid() };
    if euid == 0 {
        Ok(())
    } else {
        Err(LinuxError::NotRoot { euid })
    }
}
