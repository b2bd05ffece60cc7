//! Everything that can go wrong on the linux substrate, with the file or value involved.

/// An error of the linux substrate. Every variant says what was being done and to which path.
#[derive(Debug, thiserror::Error)]
pub enum LinuxError {
    /// The substrate changes swap, zswap, sysctls and cgroups, which only root may do.
    #[error(
        "the linux substrate needs root (effective uid is {euid}); nothing was changed. \
         Run with sudo, or use --substrate sim|live"
    )]
    NotRoot { euid: u32 },
    #[error("{op} {path}: {source}")]
    Io {
        op: &'static str,
        path: String,
        #[source]
        source: std::io::Error,
    },
    /// The kernel lacks a feature or rejected a value.
    #[error("{what}: {detail}")]
    Kernel { what: String, detail: String },
    /// A configuration is malformed or unknown.
    #[error("configuration {name}: {detail}")]
    Config { name: String, detail: String },
    #[error("state file {path}: {detail}")]
    StateFile { path: String, detail: String },
    /// SIGINT or SIGTERM arrived; the run stopped and the machine was restored.
    #[error("interrupted by a signal; the machine state was restored")]
    Interrupted,
    /// Restoring left something different from the recorded state.
    #[error("restore incomplete: {0}")]
    Restore(String),
    #[error("worker process: {0}")]
    Worker(String),
    /// Other processes kept the CPUs busy while a calibration was to measure this machine.
    #[error(
        "the machine is not quiet: other processes took {cpu_percent:.0} % of a CPU over \
         {window_s:.1} s (at most {limit_percent:.0} % lets a calibration measure this machine's \
         own paths; busiest by runs: {busiest}). Stop them and calibrate again; nothing was written"
    )]
    NotQuiet {
        cpu_percent: f64,
        limit_percent: f64,
        window_s: f64,
        busiest: String,
    },
}

impl LinuxError {
    pub(crate) fn io(
        op: &'static str,
        path: impl AsRef<std::path::Path>,
        source: std::io::Error,
    ) -> Self {
        LinuxError::Io {
            op,
            path: path.as_ref().display().to_string(),
            source,
        }
    }
}
