//! Real Chromium on the linux substrate: generated pages ([`pages`]), the browser in the run's
//! memory cgroup driven over the DevTools protocol ([`browser`]), the pressure test with the Tast
//! cadence ([`drive`]) and the measurement of the tab model ([`measure`]).

pub mod browser;
pub mod drive;
pub mod measure;
pub mod pages;
pub mod procmem;

pub use drive::{run_chromium_pressure, ChromiumOptions};
