"""The PySpark engine: the same checks and the same Report as the local engine, at scale.

Parallel along independent keys only (anchors lesson 12), never inside one causal history:
- reading: Parquet by Spark itself (records checked by the Spark form of `row_problem`, bad
  ones located through the footers), NDJSON and OpenChaos files one per task through the local
  readers, so bad input is reported word for word as the local engine reports it;
- conformance: one task per file (a file holds whole runs), each run replayed in seq order by
  the local engine's `replay_table`: no shuffle, and a Python call per file rather than per run;
- client history: DataFrame aggregations, joins and windows keyed by run (`history_violations`,
  the same rules as traces/history.py).
Spark runs embedded (`local[*]`) unless a master URL is given (`local-cluster[2,1,1024]` starts
a real multi-process cluster on this machine; `spark://host:7077` or `spark-submit` a real one).
"""

from __future__ import annotations

import json
import logging
import os
import signal
import sys
import tempfile
import threading
import time
import warnings
from functools import reduce
from pathlib import Path
from typing import Iterator
from urllib.parse import unquote

import pyarrow as pa
from pyspark import SparkConf, SparkContext
from pyspark.java_gateway import launch_gateway
from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema

from rmqcheck.model.world import IN_SYNC_REPLICAS_NOT_ENOUGH, PUT_OK

from . import history, logs, run_records, stores
from .conformance import replay_table
from .files import BadRecord, parquet_file, parquet_location, read_file, read_table
from .openchaos import count_records, read_history
from .schema import ARROW, FIELDS, KINDS, RUN_START, VERSION, TraceError, row_problem
from .validate import Inputs, Report, SparkUnavailable, conformance_violation, spans_error

DEFAULT_MASTER = "local[*]"
LOG_CONFIG = Path(__file__).with_name("log4j2.properties")
_EXTRA = [pa.field("_file", pa.string()), pa.field("_pos", pa.int64()), pa.field("_bad", pa.string())]
# Every column nullable: a bad record travels as a row with only _file, _pos and _bad.
EVENTS_READ = pa.schema([f.with_nullable(True) for f in ARROW] + _EXTRA)
HISTORY_READ = pa.schema([f.with_nullable(True) for f in history.SCHEMA] + _EXTRA)
VIOLATION = pa.schema(
    [("check", pa.string()), ("run", pa.string()), ("subject", pa.string()), ("count", pa.int64()), ("detail", pa.string())]
)


# More options for Spark's JVMs (driver and executors), which otherwise keep Java's defaults; for
# short runs on a small machine "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC" (docs/traces.md).
JAVA_OPTIONS = "RMQCHECK_SPARK_JAVA_OPTIONS"


def session(master: str | None = None, python: str | None = None, app: str = "rmqcheck validate"):
    """A Spark session; executors run this interpreter (so they import rmqcheck), or `python` (a
    command that runs it). SparkUnavailable when it cannot start."""
    try:
        return _session(master, python, app)
    except Exception as exc:  # Py4J's and PySpark's errors alike: Spark is not there
        first = next((line.strip() for line in str(exc).splitlines() if line.strip()), type(exc).__name__)
        said = [line.strip() for line in jvm_log_tail().splitlines() if line.strip()][-1:]
        raise SparkUnavailable(f"Spark did not start with master {master or DEFAULT_MASTER}: {first[:300]}"
                               + (f" (the JVM's last words: {said[0][:300]})" if said else "")) from None


def _session(master: str | None, python: str | None, app: str):
    if python:
        os.environ["PYSPARK_PYTHON"] = python
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    _quiet_gateway()

    builder = SparkSession.builder
    # Under spark-submit (which starts this interpreter with a gateway) its --master stands.
    if master or "PYSPARK_GATEWAY_PORT" not in os.environ:
        builder = builder.master(master or DEFAULT_MASTER)
    spark = (
        builder.appName(app)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "8")
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .config("spark.driver.extraJavaOptions", _driver_options())
        .config("spark.executor.extraJavaOptions", os.environ.get(JAVA_OPTIONS, ""))
        .getOrCreate()
    )
    if (master and spark.sparkContext.master != master) or (python and spark.sparkContext.pythonExec != python):
        spark.stop()  # getOrCreate found another session
        return _session(master, python, app)
    spark.sparkContext.setLogLevel("ERROR")
    if threading.current_thread() is threading.main_thread():
        # PySpark's own handler calls into the JVM from inside the interrupted call (py4j then logs
        # a reentrant-call traceback): Ctrl-C is a plain KeyboardInterrupt, the JVM exits with us.
        signal.signal(signal.SIGINT, signal.default_int_handler)
    return spark


# The JVM's own output (executor errors when a job is cancelled, start-up notices): kept here, not
# on the terminal, which gets one line from rmqcheck. Read back when Spark does not start.
_JVM_LOG = None


def _quiet_gateway() -> None:
    """Start PySpark's JVM gateway, once a process, with its output going to _JVM_LOG and the
    driver options Spark needs at launch; py4j's logging of an interrupted call silenced."""
    global _JVM_LOG
    for name in ("py4j", "py4j.java_gateway", "py4j.clientserver"):
        logging.getLogger(name).setLevel(logging.CRITICAL)
    if not logging.getLogger().handlers:  # py4j logs an interrupted call to the root logger
        logging.getLogger().addHandler(logging.NullHandler())
    if SparkContext._gateway is not None:
        return
    _JVM_LOG = tempfile.TemporaryFile(prefix="rmqcheck-spark-jvm-")
    conf = SparkConf(loadDefaults=False).set("spark.driver.extraJavaOptions", _driver_options())
    SparkContext._gateway = launch_gateway(conf, popen_kwargs={"stdout": _JVM_LOG, "stderr": _JVM_LOG})
    SparkContext._jvm = SparkContext._gateway.jvm


def _driver_options() -> str:
    return f"-Dlog4j2.configurationFile={LOG_CONFIG} {os.environ.get(JAVA_OPTIONS, '')}".strip()


def jvm_log_tail(limit: int = 2000) -> str:
    """The end of what Spark's JVM printed (for an error message)."""
    if _JVM_LOG is None:
        return ""
    _JVM_LOG.seek(0, os.SEEK_END)
    size = _JVM_LOG.tell()
    _JVM_LOG.seek(max(0, size - limit))
    return _JVM_LOG.read().decode("utf-8", "replace")


def _tagged(batch: pa.RecordBatch, schema: pa.Schema, path: str, pos: int) -> pa.RecordBatch:
    """Good records with their file and position (and no _bad)."""
    n = batch.num_rows
    tags = [pa.array([path] * n), pa.array([pos] * n, pa.int64()), pa.nulls(n, pa.string())]
    return pa.RecordBatch.from_arrays(list(batch.columns) + tags, schema=schema)


def _bad_row(schema: pa.Schema, bad: BadRecord, pos: int) -> pa.RecordBatch:
    row = {f.name: None for f in schema}
    row.update(_file=bad.path, _pos=pos, _bad=json.dumps(bad.to_json()))
    return pa.RecordBatch.from_pylist([row], schema=schema)


def _read_traces(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """NDJSON files, one per task, through the local reader (bad records as rows; a file-level
    error, such as an unreadable file, at position -1)."""
    for b in batches:
        for path in b.column("path").to_pylist():
            try:
                for pos, item in enumerate(read_file(path, skip=True)):
                    yield _bad_row(EVENTS_READ, item, pos) if isinstance(item, BadRecord) else _tagged(item, EVENTS_READ, path, pos)
            except TraceError as exc:
                yield _bad_row(EVENTS_READ, BadRecord(path, exc.where, exc.what, ""), -1)


def _read_histories(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """OpenChaos files, one per task, through the local adapter (as `_read_traces`)."""
    for b in batches:
        for path in b.column("path").to_pylist():
            try:
                table, bad = read_history(path, skip=True)
            except TraceError as exc:
                yield _bad_row(HISTORY_READ, BadRecord(path, exc.where, exc.what, ""), -1)
                continue
            for pos, item in enumerate(bad):
                yield _bad_row(HISTORY_READ, item, pos)
            if table.num_rows:
                yield _tagged(table.combine_chunks().to_batches()[0], HISTORY_READ, path, len(bad))


def _replay_files(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Conformance of the runs of each file (a file holds whole runs), one file per task: the
    records the readers accept, replayed run by run in seq order, as the local engine does."""
    for b in batches:
        for path in b.column("path").to_pylist():
            table, _ = read_table(path, skip=True)  # the bad records were reported by the reading stage
            rows = [conformance_violation(v)._asdict() for v in replay_table(table) if v.failed_seq is not None]
            if rows:
                yield pa.RecordBatch.from_pylist(rows, schema=VIOLATION)


Located = list[tuple[int, int, BadRecord]]  # (file index, position, record)


class _Files:
    """Input files as the user named them, in order. Executors get absolute paths (a cluster's
    workers run elsewhere), and every path they report is mapped back to the user's name, so
    messages read as the local engine's."""

    def __init__(self, paths: list[str]):
        self.paths = paths
        self.order = {p: i for i, p in enumerate(paths)}
        self._by_real = {str(Path(p).resolve()): p for p in paths}

    def name(self, path: str) -> str:
        """The user's name of a file an executor or Spark (as file:/abs/path) reports."""
        p = unquote(path[len("file:") :]) if path.startswith("file:") else path
        return self._by_real.get(str(Path(p).resolve()), p)

    def frame(self, spark, subset: list[str] | None = None) -> DataFrame:
        """One row per file (absolute path), one partition per file."""
        paths = [str(Path(p).resolve()) for p in (self.paths if subset is None else subset)]
        return spark.sparkContext.parallelize([(p,) for p in paths], max(1, len(paths))).toDF("path string")

    def read(self, spark, reader, schema: pa.Schema, subset: list[str]) -> tuple[DataFrame, Located, Located]:
        """Files read by a Python reader on the executors: (good rows, file-level errors, bad records)."""
        raw = self.frame(spark, subset).mapInArrow(reader, from_arrow_schema(schema)).cache()
        fatal: Located = []
        bad: Located = []
        for r in raw.filter(F.col("_bad").isNotNull()).select("_pos", "_bad").collect():
            b = BadRecord.from_json(json.loads(r["_bad"]))
            b = b._replace(path=self.name(b.path))
            (fatal if r["_pos"] < 0 else bad).append((self.order[b.path], r["_pos"], b))
        good = raw.filter(F.col("_bad").isNull())
        return good, fatal, bad


def _stop(fatal: Located, bad: Located, skip: bool) -> None:
    """Raise the first error in (file, position) order, as the local engine meets it: file-level
    errors always, bad records unless skipped."""
    stops = fatal + ([] if skip else bad)
    if stops:
        b = min(stops, key=lambda e: e[:2])[2]
        raise TraceError(b.path, b.where, b.what)


def _suspect():
    """The Spark form of `schema.row_problem`: true for exactly the records it rejects."""
    c = F.col
    cond = c("v").isNull() | (c("v") != VERSION) | c("kind").isNull() | ~c("kind").isin(*KINDS) | (c("seq") < 0)
    cond = cond | ((c("kind") == RUN_START) & c("config").isNull())
    for f in FIELDS:
        if f.required:
            cond = cond | c(f.name).isNull()
    return F.coalesce(cond, F.lit(True))


def _events(spark, files: _Files, skip: bool) -> tuple[DataFrame, dict[str, int], list[BadRecord]]:
    """(events, {events, runs} counts, skipped records). Parquet is read by Spark itself, its
    records checked by `_suspect` and located through the footers; NDJSON goes through the
    local reader. Stops at the first error in file order, as the local engine does."""
    fatal: Located = []
    bad: Located = []
    frames, located = [], []  # located: (run, _file) of every good record
    footers = {}
    for p in files.paths:
        if p.endswith(".parquet"):
            try:
                footers[p] = parquet_file(p)
            except TraceError as exc:
                fatal.append((files.order[p], -1, BadRecord(p, exc.where, exc.what, "")))
    if footers:
        df = spark.read.schema(from_arrow_schema(ARROW)).parquet(*(str(Path(p).resolve()) for p in footers))
        suspects = df.select("*", F.col("_metadata.file_path").alias("_file"), F.col("_metadata.row_index").alias("_pos"))
        found = suspects.filter(_suspect()).collect()
        for r in found:
            rec = {name: r[name] for name in ARROW.names}
            path = files.name(r["_file"])
            where = parquet_location(footers[path], r["_pos"])
            bad.append((files.order[path], r["_pos"], BadRecord(path, where, row_problem(rec) or "", json.dumps(rec))))
        # Filter only when there is something to filter: the filter reads every required column.
        good = df.filter(~_suspect()) if found else df
        frames.append(good)
        located.append(good.select("run", F.col("_metadata.file_path").alias("_file")))
    ndjson = [p for p in files.paths if p not in footers and not p.endswith(".parquet")]
    if ndjson:
        good, f, b = files.read(spark, _read_traces, EVENTS_READ, ndjson)
        fatal, bad = fatal + f, bad + b
        frames.append(good.drop("_bad", "_file", "_pos"))
        located.append(good.select("run", "_file"))
    _stop(fatal, bad, skip)
    per_run = (
        reduce(DataFrame.unionByName, located)
        .groupBy("run")
        .agg(F.count(F.lit(1)).alias("n"), F.collect_set("_file").alias("fs"))
        .cache()
    )
    first = per_run.filter(F.size("fs") > 1).orderBy("run").limit(1).collect()
    if first:
        raise spans_error(first[0]["run"], [files.name(f) for f in first[0]["fs"]])
    totals = per_run.agg(F.sum("n").alias("events"), F.count(F.lit(1)).alias("runs")).collect()[0]
    per_run.unpersist()
    counts = {"events": totals["events"] or 0, "runs": totals["runs"]}
    return reduce(DataFrame.unionByName, frames), counts, [b for _, _, b in sorted(bad, key=lambda x: x[:2])]


def _histories(spark, files: _Files, skip: bool) -> tuple[DataFrame, list[BadRecord]]:
    good, fatal, bad = files.read(spark, _read_histories, HISTORY_READ, files.paths)
    _stop(fatal, bad, skip)
    return good.select(*history.SCHEMA.names), [b for _, _, b in sorted(bad, key=lambda x: x[:2])]


def history_rows(events) -> tuple[DataFrame, DataFrame]:
    """traces/history.py `from_events` as DataFrame operations: the send and read rows, and
    per run_end the messages held then (a list per run rather than a row per message)."""
    kind, msg = F.col("kind"), F.col("msg")
    client = events.filter(kind.isin("send", "put_complete", "put_timeout", "consume") & msg.isNotNull())
    op = F.when(kind == "consume", history.READ).otherwise(history.SEND)
    status = (
        F.when(F.col("status") == PUT_OK, history.OK)
        .when(F.col("status") == IN_SYNC_REPLICAS_NOT_ENOUGH, history.FAIL)
        .otherwise(history.INFO)
    )
    rows = client.select(
        "run",
        "seq",
        op.alias("op"),
        msg.cast("string").alias("msg"),
        F.col("queue").cast("string").alias("key"),
        F.col("queue_offset").alias("offset"),
        F.when(op == history.SEND, status).alias("status"),
    )
    ends = events.filter(kind == "run_end").select("run", F.col("held").cast("array<string>").alias("held"))
    return rows, ends


def history_violations(h: DataFrame, ends: DataFrame) -> DataFrame:
    """traces/history.py `check_runs` as DataFrame operations: `h` (send and read rows,
    partitioned by run) aggregated once per (run, message), joined with the run's watermark per
    queue and its held messages, then filtered; `order` is a window over first reads."""
    c = F.col
    is_send, is_read = c("op") == history.SEND, c("op") == history.READ
    send_seq, read_seq = F.when(is_send, c("seq")), F.when(is_read, c("seq"))

    def dash(col):
        return F.coalesce(col.cast("string"), F.lit("-"))

    def out(df, check: str, subject, count, detail):
        return df.select(F.lit(check).alias("check"), "run", subject.alias("subject"), count.cast("long").alias("count"), detail.alias("detail"))

    message = F.concat(F.lit("message "), c("msg"))
    # the highest offset read in each queue: acked sends below it must have been read
    tops = h.filter(is_read).groupBy("run", "key").agg(F.max("offset").alias("stop")).withColumnRenamed("run", "trun")
    per_msg = (
        h.groupBy("run", "msg")
        .agg(
            F.min(send_seq).alias("first"),
            F.max_by("status", send_seq).alias("final"),
            F.min_by("key", send_seq).alias("skey"),
            F.min_by("offset", send_seq).alias("soffset"),
            F.count(read_seq).alias("n"),
            F.min(read_seq).alias("rseq"),
            F.min_by("key", read_seq).alias("rkey"),
        )
        .join(ends, "run", "left")
        .join(tops, (c("run") == c("trun")) & c("skey").eqNullSafe(c("key")), "left")
        .cache()
    )
    slots = h.filter(is_read & c("offset").isNotNull()).groupBy("run", "key", "offset").agg(F.array_sort(F.collect_set("msg")).alias("ms"))
    v_agree = out(
        slots.filter(F.size("ms") > 1), "offset_agreement", F.format_string("queue %s offset %d", dash(c("key")), c("offset")),
        F.size("ms"), F.concat(F.lit("messages "), F.array_join("ms", ",")),
    )
    lost = per_msg.filter((c("final") == history.OK) & (c("n") == 0) & (c("soffset").isNull() | (F.coalesce(c("stop"), F.lit(-1)) > c("soffset"))))
    v_lost = out(
        lost, "lost_ack", message, F.lit(1),
        F.format_string("queue %s offset %s, reads reached %s", dash(c("skey")), dash(c("soffset")), dash(c("stop"))),
    )
    v_dup = out(per_msg.filter(c("n") > 1), "duplicate", message, c("n") - 1, F.format_string("read %d times", c("n")))
    v_failed = out(
        per_msg.filter((c("n") > 0) & (c("final") == history.FAIL)), "read_failed", message, c("n"),
        F.format_string("send failed, read %d times", c("n")),
    )
    v_trunc = out(
        per_msg.filter((c("n") > 0) & c("held").isNotNull() & ~F.array_contains("held", c("msg"))), "read_truncated", message,
        c("n"), F.format_string("read %d times, held by no replica at the end", c("n")),
    )
    w = Window.partitionBy("run", "rkey").orderBy("rseq").rowsBetween(Window.unboundedPreceding, -1)
    firsts = per_msg.filter((c("n") > 0) & (c("final") == history.OK)).withColumn("before", F.max("first").over(w))
    v_order = out(
        firsts.filter(c("first") < c("before")), "order", message, F.lit(1),
        F.format_string("queue %s: first read after a message sent later", dash(c("rkey"))),
    )
    return reduce(DataFrame.unionByName, [v_agree, v_lost, v_dup, v_failed, v_trunc, v_order])


def _judge_run(path: str):
    """run_records.judge_run in a task; its bad input comes back as the TraceError, raised on the
    driver (an exception in a task would reach it as Spark's error)."""
    try:
        return run_records.judge_run(path)
    except TraceError as exc:
        return exc


def validate_spark(inputs: Inputs, skip: bool = False, master: str | None = None, spark=None) -> Report:
    """The Report of the local engine, computed on Spark (a session of its own unless given)."""
    if spark is None:
        spark = session(master)
        try:
            return validate_spark(inputs, skip, spark=spark)
        finally:
            with warnings.catch_warnings():  # after a Ctrl-C the JVM may be gone: PySpark warns of it
                warnings.filterwarnings("ignore", "Unable to cleanly shutdown Spark JVM", RuntimeWarning)
                spark.stop()
    units: dict[str, int] = {"files": len(inputs.traces), "histories": len(inputs.histories), "store_sets": len(inputs.store_sets),
                             "log_sets": len(inputs.log_sets), "log_records": 0, "real_runs": len(inputs.real_runs),
                             "real_run_steps": 0, "real_run_steps_explained": 0}
    seconds: dict[str, float] = {}
    bad: list[BadRecord] = []
    violations = []
    hist_parts = []
    if inputs.traces:
        t = time.perf_counter()
        traces = _Files(inputs.traces)
        events, counts, rejected = _events(spark, traces, skip)
        bad += rejected
        units.update(counts)
        seconds["read"] = time.perf_counter() - t
        t = time.perf_counter()
        violations += traces.frame(spark).mapInArrow(_replay_files, from_arrow_schema(VIOLATION)).collect()
        seconds["conformance"] = time.perf_counter() - t
        rows, ends = history_rows(events)
        hist_parts.append(rows)
    else:
        units.update(events=0, runs=0)
        ends = spark.createDataFrame([], "run string, held array<string>")
    units["history_records"] = 0
    if inputs.histories:
        good_h, rejected = _histories(spark, _Files(inputs.histories), skip)
        bad += rejected
        hist_parts.append(good_h)
        units["history_records"] = sum(map(count_records, inputs.histories))
    t = time.perf_counter()
    if hist_parts:
        # One shuffle by run; the aggregations and windows that follow are keyed by run, so
        # Spark keeps this partitioning instead of shuffling again for each.
        h = reduce(DataFrame.unionByName, hist_parts).repartition(spark.sparkContext.defaultParallelism * 2, "run").cache()
        units["client_ops"] = h.count()
        violations += history_violations(h, ends).collect()
    else:
        units["client_ops"] = 0
    seconds["history"] = time.perf_counter() - t
    t = time.perf_counter()
    if inputs.store_sets:
        sc = spark.sparkContext
        slices = min(len(inputs.store_sets), 4 * sc.defaultParallelism)
        sets = [str(Path(p).resolve()) for p in inputs.store_sets]
        violations += sc.parallelize(sets, slices).flatMap(stores.check_set).collect()
    seconds["stores"] = time.perf_counter() - t
    t = time.perf_counter()
    if inputs.log_sets:  # a task a set, as the store sets
        sc = spark.sparkContext
        sets = [str(Path(p).resolve()) for p in inputs.log_sets]
        judged = sc.parallelize(sets, min(len(sets), 4 * sc.defaultParallelism)).map(logs.judge_set).collect()
        violations += [v for found, _ in judged for v in found]
        units["log_records"] = sum(records for _, records in judged)
    seconds["logs"] = time.perf_counter() - t
    t = time.perf_counter()
    if inputs.real_runs:  # a task a run: the model follows each record on its own
        sc = spark.sparkContext
        runs = [str(Path(p).resolve()) for p in inputs.real_runs]
        judged = sc.parallelize(runs, min(len(runs), 4 * sc.defaultParallelism)).map(_judge_run).collect()
        for resolved, given, j in zip(runs, inputs.real_runs, judged):
            if isinstance(j, TraceError):  # named as the local engine names it: by the path given
                raise TraceError(given + j.path[len(resolved):] if j.path.startswith(resolved) else j.path, j.where, j.what)
        violations += [v for found, _, _ in judged for v in found]
        units["real_run_steps"] = sum(steps for _, steps, _ in judged)
        units["real_run_steps_explained"] = sum(explained for _, _, explained in judged)
    seconds["real runs"] = time.perf_counter() - t
    spark.catalog.clearCache()  # the read records, client ops and per-message aggregates cached above
    found = sorted(history.Violation(r[0], r[1], r[2], int(r[3]), r[4]) for r in violations)
    return Report("spark", units, found, bad, seconds)
