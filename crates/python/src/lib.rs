//! `nvmswap._native`: the Rust side of the Python package. Everything crosses as JSON text (the
//! results contract of RESULTS.md), which the Python side turns into dicts and DataFrames.

use nvmswap_core::config::SystemConfig;
use nvmswap_core::progress::NoProgress;
use nvmswap_core::workload::tabs::PressureParams;
use nvmswap_sim::sweep::{Grid, Point};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

fn err(e: impl std::fmt::Display) -> PyErr {
    PyValueError::new_err(e.to_string())
}

/// Runs the pressure test in sim on a bundled configuration or TOML file with `set` overrides
/// and the test's parameters (`params_json`, e.g. `{"max_tabs": 50}`); the run's
/// `{"result": ..., "series": ...}` as JSON.
#[pyfunction]
#[pyo3(signature = (config, set, seed, scale, params_json))]
fn run_pressure(
    py: Python<'_>,
    config: &str,
    set: Vec<String>,
    seed: u64,
    scale: f64,
    params_json: &str,
) -> PyResult<String> {
    let cfg = SystemConfig::load(config, &set).map_err(err)?;
    let mut params = serde_json::to_value(PressureParams::default()).map_err(err)?;
    let given: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(params_json).map_err(err)?;
    for (k, v) in given {
        params[k] = v;
    }
    let params: PressureParams = serde_json::from_value(params).map_err(err)?;
    let opts = nvmswap_sim::RunOptions::new(seed, scale);
    let out = py
        .allow_threads(|| nvmswap_sim::run_pressure_with(&cfg, &opts, &params, &NoProgress))
        .map_err(err)?;
    serde_json::to_string(&out).map_err(err)
}

/// The points of a grid (TOML text), each as JSON, in the grid's order.
#[pyfunction]
fn grid_points(grid_toml: &str) -> PyResult<Vec<String>> {
    let grid = Grid::parse(grid_toml).map_err(err)?;
    let points = grid.points().map_err(err)?;
    points
        .iter()
        .map(|p| serde_json::to_string(p).map_err(err))
        .collect()
}

/// The swept fields of a grid, in the table's column order.
#[pyfunction]
fn grid_swept(grid_toml: &str) -> PyResult<Vec<String>> {
    Ok(Grid::parse(grid_toml).map_err(err)?.swept())
}

/// Runs one point (JSON from `grid_points`); its metrics as a JSON list of [name, value].
#[pyfunction]
fn run_point(py: Python<'_>, point_json: &str) -> PyResult<String> {
    let p: Point = serde_json::from_str(point_json).map_err(err)?;
    let metrics = py.allow_threads(|| p.run()).map_err(err)?;
    serde_json::to_string(&metrics).map_err(err)
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(run_pressure, m)?)?;
    m.add_function(wrap_pyfunction!(grid_points, m)?)?;
    m.add_function(wrap_pyfunction!(grid_swept, m)?)?;
    m.add_function(wrap_pyfunction!(run_point, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
