//! nvmswap-sim: the deterministic substrate.
//!
//! A whole consumer device (DRAM, reclaim, compressed pools, swap devices, NVM on the memory bus)
//! composed from `nvmswap-core` mechanisms and driven in virtual time. The same seed and
//! configuration give byte-identical results (except `wall_s`, the real time the run took).
//! Components (docs/adr/0004-sim-components.md): `engine.rs` the machine and its fault path,
//! `memory.rs` frames and watermarks, `reclaim.rs` kswapd, direct and memcg reclaim,
//! `backend/` the swap back-ends (one file each, chosen through `backend::REGISTRY`), `io.rs`
//! the block layer's submission path, `driver.rs` the workload driver (its tabs' seconds under
//! core's CPU scheduler `cpu_sched`), `tlb.rs` reclaim's remote TLB flushes, `observe.rs`
//! the events and their observers (`blkreq.rs` one of them: every block request as a row),
//! `metrics.rs` the results built from them, `costs.rs` the software costs and their sources;
//! `iosched.rs` the block layer alone (`nvmswap iosched`); `relaunch.rs` runs seed 001's
//! app-relaunch workload.

mod backend;
pub mod blkreq;
mod charge;
mod costs;
mod driver;
mod engine;
mod io;
pub mod iosched;
mod mapped_access;
mod memory;
mod metrics;
pub mod observe;
mod reclaim;
#[cfg(test)]
mod reclaim_policy_test;
pub mod relaunch;
pub mod sweep;
/// Reclaim's remote TLB flushes: core's model, composed by the engine.
pub use nvmswap_core::tlb;

use nvmswap_core::config::{ConfigError, SystemConfig};
use nvmswap_core::discard::check_scale;
use nvmswap_core::progress::Progress;
use nvmswap_core::results::RunOutput;
use nvmswap_core::workload::tabs::default_sites;

/// How to run: the seed of every random draw, which draw of the machine's timing, and a factor
/// shrinking every size.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RunOptions {
    /// The workload's pages' contents and, with `timing_draw` 0, the machine's timing.
    pub seed: u64,
    pub scale: f64,
    /// Which draw of the machine's timing (device service times, the jitter of software costs,
    /// the memory's access classes): 0 is the seed's own; another value draws them again while
    /// the workload and its pages' contents stay the seed's, as a second run of the same
    /// scenario on the same machine would (`nvmswap validate --sim-spread`).
    pub timing_draw: u64,
}

impl RunOptions {
    /// `seed` at `scale`, the seed's own timing.
    pub fn new(seed: u64, scale: f64) -> Self {
        RunOptions {
            seed,
            scale,
            timing_draw: 0,
        }
    }

    /// The seed of the machine's timing streams: the run's seed for draw 0, else the first
    /// number of the seed's ChaCha stream `timing_draw` (ChaCha's streams are independent).
    pub fn timing_seed(&self) -> u64 {
        use rand::{RngCore, SeedableRng};
        if self.timing_draw == 0 {
            return self.seed;
        }
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(self.seed);
        rng.set_stream(self.timing_draw);
        rng.next_u64()
    }
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions::new(1, 1.0)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum SimError {
    #[error(transparent)]
    Invalid(#[from] ConfigError),
    #[error("{0}")]
    Config(String),
    /// core's one scale rule (`nvmswap_core::discard::check_scale`).
    #[error("scale must be within (0, {max}] (got {0})", max = nvmswap_core::discard::MAX_SCALE)]
    Scale(f64),
    #[error("out of memory: no tab left to discard and nothing left to reclaim")]
    OutOfMemory,
}

/// The bundled system configurations, in the order reports list them.
pub fn bundled_configs() -> Vec<&'static str> {
    SystemConfig::bundled_names()
}

/// Runs the memory-capacity pressure test on `cfg`.
pub fn run_pressure(
    cfg: &SystemConfig,
    opts: &RunOptions,
    progress: &dyn Progress,
) -> Result<RunOutput, SimError> {
    run_pressure_observed(cfg, opts, progress, Vec::new())
}

/// Runs the pressure test on `cfg` with the test's parameters `params` instead of the ChromeOS
/// defaults (the sweeps set `max_tabs`, seed 000 §5's 50-tab limit, this way).
pub fn run_pressure_with(
    cfg: &SystemConfig,
    opts: &RunOptions,
    params: &nvmswap_core::workload::tabs::PressureParams,
    progress: &dyn Progress,
) -> Result<RunOutput, SimError> {
    if !(opts.scale > 0.0 && opts.scale <= 1.0) {
        return Err(SimError::Scale(opts.scale));
    }
    let started = std::time::Instant::now();
    driver::Driver::new(cfg, default_sites(), opts, progress)?
        .run_pressure_with(params.clone(), started)
}

/// Runs the pressure test on `cfg` with `sites` as the tab rotation instead of the bundled
/// measured one (e.g. another `nvmswap workload measure` profile, [`nvmswap_core::workload::measured::sites`]).
pub fn run_pressure_with_sites(
    cfg: &SystemConfig,
    opts: &RunOptions,
    sites: Vec<nvmswap_core::workload::tabs::SiteType>,
    progress: &dyn Progress,
) -> Result<RunOutput, SimError> {
    check_scale(opts.scale).map_err(|e| SimError::Scale(e.0))?;
    let started = std::time::Instant::now();
    driver::Driver::new(cfg, sites, opts, progress)?.run_pressure(started)
}

/// Runs the memory-capacity pressure test on `cfg` with `observers` watching every event of the
/// machine (observe.rs), after the metrics that make the results.
pub fn run_pressure_observed(
    cfg: &SystemConfig,
    opts: &RunOptions,
    progress: &dyn Progress,
    observers: Vec<Box<dyn observe::Observer>>,
) -> Result<RunOutput, SimError> {
    run_pressure_observed_with(
        cfg,
        opts,
        &nvmswap_core::workload::tabs::PressureParams::default(),
        progress,
        observers,
    )
}

/// [`run_pressure_observed`] with the test's parameters `params` (as [`run_pressure_with`]).
pub fn run_pressure_observed_with(
    cfg: &SystemConfig,
    opts: &RunOptions,
    params: &nvmswap_core::workload::tabs::PressureParams,
    progress: &dyn Progress,
    observers: Vec<Box<dyn observe::Observer>>,
) -> Result<RunOutput, SimError> {
    check_scale(opts.scale).map_err(|e| SimError::Scale(e.0))?;
    let started = std::time::Instant::now();
    let mut driver = driver::Driver::new(cfg, default_sites(), opts, progress)?;
    for o in observers {
        driver.machine.observe(o);
    }
    driver.run_pressure_with(params.clone(), started)
}
