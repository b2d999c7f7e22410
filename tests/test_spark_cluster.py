"""The Spark engine on a real multi-process cluster: local-cluster[2,1,1024] starts a driver and
two executor JVMs with their own Python workers, talking over loopback, as on a real cluster
(their working directories differ from ours, so relative input paths must survive)."""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow.parquet as pq

from rmqcheck.traces import files
from rmqcheck.traces.recorder import Corpus, simulate
from rmqcheck.traces.spark import validate_spark
from rmqcheck.traces.validate import discover, validate_local

OPENCHAOS = Path(__file__).resolve().parent / "data" / "openchaos-queue-history"


def test_a_multi_process_spark_cluster_gives_the_same_report(tmp_path):
    simulate(Corpus(runs=24, steps=60, runs_per_file=8, fmt="parquet", stores=True), tmp_path)
    part = tmp_path / "part-00002.parquet"
    recs = pq.read_table(part).to_pylist()
    recs[3]["seq"] = 99  # a gap: one run stops conforming
    files.write_part(part, recs, files.PARQUET)
    inputs = discover([os.path.relpath(tmp_path), os.path.relpath(OPENCHAOS)])
    local = validate_local(inputs)
    assert {v.check for v in local.violations} >= {"conformance", "lost_ack"}
    remote = validate_spark(inputs, master="local-cluster[2,1,1024]")
    assert remote.violations == local.violations and remote.units == local.units
