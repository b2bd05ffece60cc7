"""Tests of the nvmswap Python package (run by tests/python.rs, or directly with
``python -m unittest discover crates/python/tests`` after ``maturin develop``)."""

import os
import tempfile
import unittest
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor

import nvmswap

GRID = """
workload = "pressure"
config = ["optane-zswap"]
seeds = [1, 2]
scale = 0.03
[params]
"discard.ram_swap_weight" = [1, 4]
"""


class Package(unittest.TestCase):
    def test_a_sim_point_is_a_dict_and_deterministic(self):
        a = nvmswap.run_sim("nand", seed=2, scale=0.03, max_tabs=10)
        self.assertEqual(a["config"], "nand")
        self.assertLessEqual(a["tabs_opened"], 10)
        b = nvmswap.run_sim("nand", seed=2, scale=0.03, max_tabs=10)
        a.pop("wall_s"), b.pop("wall_s")
        self.assertEqual(a, b)
        df = nvmswap.to_frame([a])
        self.assertIn("switch_latency_ms.p99", df.columns)

    def test_bad_input_is_a_value_error(self):
        with self.assertRaises(ValueError):
            nvmswap.run_sim("nand", set=["bogus=1"], scale=0.03)

    def test_wear(self):
        w = nvmswap.run_wear(swap_mb=4, threshold=16, written_gb=0.05)
        self.assertGreater(w["writes"], 0)
        self.assertGreaterEqual(w["exchange_write_us"], w["regular_write_us"])

    def test_sweep_on_local_processes_and_threads_agree(self):
        local = nvmswap.sweep(GRID, executor=ProcessPoolExecutor(2))
        self.assertEqual(list(local.columns[:2]), ["key", "discard.ram_swap_weight"])
        self.assertEqual(local["key"].nunique(), 4)
        threads = nvmswap.sweep(GRID, executor=ThreadPoolExecutor(2))
        self.assertTrue(local.equals(threads))

    def test_load_out_reads_a_sweep_directory(self):
        d = tempfile.mkdtemp()
        df = nvmswap.sweep(GRID, executor=ThreadPoolExecutor(1))
        df.to_csv(os.path.join(d, "table.csv"), index=False)
        out = nvmswap.load_out(d)
        self.assertEqual(len(out["table"]), len(df))
        with self.assertRaises(FileNotFoundError):
            nvmswap.load_out(tempfile.mkdtemp())


class Dask(unittest.TestCase):
    def test_a_sweep_on_a_local_dask_cluster_equals_the_local_run(self):
        try:
            from distributed import Client, LocalCluster
        except ImportError as e:
            self.skipTest("Dask distributed is not installed (%s); scripts/install-deps installs it" % e)
        local = nvmswap.sweep(GRID, executor=ThreadPoolExecutor(2))
        with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                          dashboard_address=None) as cluster, Client(cluster) as client:
            self.assertEqual(len(client.scheduler_info()["workers"]), 2)
            remote = nvmswap.sweep(GRID, executor=client.get_executor())
        self.assertTrue(local.equals(remote), "%s\n%s" % (local, remote))


if __name__ == "__main__":
    unittest.main()
