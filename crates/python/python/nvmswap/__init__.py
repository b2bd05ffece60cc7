"""nvmswap from Python: run the simulator and seed 001's wear experiment, load any ``out/``
directory, and run sweeps on any ``concurrent.futures.Executor`` -- local processes, or a Dask
cluster through ``distributed.Client(...).get_executor()``.

Results are the JSON contract of the ``nvmswap`` command (``nvmswap.results/1``) as dicts, and
sweeps as the same long-format table ``nvmswap sweep`` writes (key, swept fields, seed, metric,
value) as a pandas DataFrame. The simulator is deterministic: a point gives the same numbers on
any machine, so a sweep on a cluster equals the same sweep run locally.
"""

import json
import os
from concurrent.futures import Executor, ProcessPoolExecutor

from . import _native

__version__ = _native.__version__
__all__ = ["run_sim", "run_wear", "points", "run_point", "sweep", "load_out", "to_frame"]


def run_sim(config, set=(), seed=1, scale=1.0, series=False, **params):
    """Runs the pressure test in sim on ``config`` (a bundled name or a TOML file) with ``set``
    overrides (``["discard.ram_swap_weight=1"]``) and the test's parameters as keywords
    (``max_tabs=50``). Returns the run's result dict (``series=True``: ``{"result", "series"}``)."""
    out = json.loads(
        _native.run_pressure(config, list(set), int(seed), float(scale), json.dumps(params))
    )
    return out if series else out["result"]


def run_wear(swap_mb=128, threshold=16, written_gb=1.0, seed=1, allocator="heap-wear", **params):
    """Seed 001's writer/reader wear experiment on an NVM swap area; its metrics as a dict."""
    wp = {"swap_mb": swap_mb, "threshold": threshold, "written_gb": written_gb,
          "allocator": allocator}
    wp.update(params)
    grid = "workload = \"wear\"\nseeds = [%d]\n[params]\n" % int(seed)
    grid += "".join('"workload.%s" = [%s]\n' % (k, json.dumps(v)) for k, v in wp.items())
    (point,) = points(grid)
    return dict(run_point(point))


def points(grid):
    """The points of a grid (TOML text or a path to a grid file), as JSON strings."""
    return _native.grid_points(_grid_text(grid))


def run_point(point):
    """Runs one point (from ``points``); its metrics as a list of (name, value)."""
    return [tuple(m) for m in json.loads(_native.run_point(point))]


def _run_point_rows(point):
    # Module-level, so executors can pickle it by reference.
    p = json.loads(point)
    return p["key"], p["swept"], p["seed"], run_point(point)


def sweep(grid, executor=None):
    """Runs every point of ``grid`` on ``executor`` (any ``concurrent.futures.Executor``; default a
    local ``ProcessPoolExecutor``) and returns the long-format table as a DataFrame, rows in the
    grid's order, as ``nvmswap sweep`` writes ``table.csv``."""
    import pandas as pd

    text = _grid_text(grid)
    swept = _native.grid_swept(text)
    pts = []
    seen = set()
    for p in _native.grid_points(text):
        key = json.loads(p)["key"]
        if key not in seen:
            seen.add(key)
            pts.append(p)
    own = executor is None
    if own:
        executor = ProcessPoolExecutor()
    if not isinstance(executor, Executor) and not hasattr(executor, "submit"):
        raise TypeError("executor must be a concurrent.futures.Executor")
    try:
        futures = [executor.submit(_run_point_rows, p) for p in pts]
        done = [f.result() for f in futures]
    finally:
        if own:
            executor.shutdown()
    rows = []
    for key, sw, seed, metrics in done:
        for metric, value in metrics:
            row = {"key": key}
            row.update({f: sw.get(f, "") for f in swept})
            row.update({"seed": seed, "metric": metric, "value": value})
            rows.append(row)
    return pd.DataFrame(rows, columns=["key"] + swept + ["seed", "metric", "value"])


def to_frame(report):
    """A ``nvmswap.results/1`` report (dict) or a list of run dicts as a DataFrame, one row per
    run, nested summaries flattened (``switch_latency_ms.p99``)."""
    import pandas as pd

    runs = report["runs"] if isinstance(report, dict) and "runs" in report else report
    return pd.json_normalize(runs)


def load_out(path):
    """Loads an ``out/`` directory of any command: ``results.json`` (as ``"report"`` and
    ``"runs"`` DataFrame), every CSV (as DataFrames by file stem) and, for a sweep,
    ``table.csv``/``summary.csv`` and the stored points."""
    import pandas as pd

    out = {}
    results = os.path.join(path, "results.json")
    if os.path.exists(results):
        with open(results) as f:
            report = json.load(f)
        out["report"] = report
        if isinstance(report, dict) and "runs" in report:
            out["runs"] = to_frame(report)
    for name in sorted(os.listdir(path)):
        if name.endswith(".csv"):
            out[name[:-4]] = pd.read_csv(os.path.join(path, name))
    pdir = os.path.join(path, "points")
    if os.path.isdir(pdir):
        pts = []
        for name in sorted(os.listdir(pdir)):
            if name.endswith(".json") and not name.startswith("."):
                with open(os.path.join(pdir, name)) as f:
                    pts.append(json.load(f))
        out["points"] = pts
    if not out:
        raise FileNotFoundError("%s holds no nvmswap results" % path)
    return out


def _grid_text(grid):
    if "\n" not in grid and grid.endswith(".toml") and os.path.exists(grid):
        with open(grid) as f:
            return f.read()
    return grid
