"""The PySpark engine: the same checks and the same Report as the local engine, at scale.

Parallel along independent keys only (anchors lesson 12): files are read one per task (a run
never spans files), conformance replays each run in a grouped map (`applyInArrow`, one run per
group, the local engine's `replay_run`), and the client-history checks are DataFrame
aggregations and windows keyed by run. Spark runs embedded (`local[*]`) unless a master URL
is given (`local-cluster[2,1,1024]` starts a real multi-process cluster on this machine;
`spark://host:7077` or `spark-submit` a real one).
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Iterator

import pyarrow as pa

from . import history, stores
from .conformance import replay_run
from .files import BadRecord, read_file
from .openchaos import read_history
from .schema import ARROW, TraceError
from .validate import Inputs, Report, conformance_violation, spans_error

DEFAULT_MASTER = "local[*]"
_EXTRA = [pa.field("_file", pa.string()), pa.field("_pos", pa.int64()), pa.field("_bad", pa.string())]
# Every column nullable: a bad record travels as a row with only _file, _pos and _bad.
EVENTS_READ = pa.schema([f.with_nullable(True) for f in ARROW] + _EXTRA)
HISTORY_READ = pa.schema([f.with_nullable(True) for f in history.SCHEMA] + _EXTRA)
VIOLATION = pa.schema(
    [("check", pa.string()), ("run", pa.string()), ("subject", pa.string()), ("count", pa.int64()), ("detail", pa.string())]
)


def session(master: str | None = None):
    """A Spark session; executors run this interpreter (so they import rmqcheck)."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master(master or DEFAULT_MASTER)
        .appName("rmqcheck validate")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "8")
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .config("spark.driver.extraJavaOptions", "-Dlog4j2.level=error")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def _tagged(batch: pa.RecordBatch | pa.Table, schema: pa.Schema, path: str, pos: int) -> pa.RecordBatch:
    n = batch.num_rows
    cols = list(batch.columns) + [pa.array([path] * n), pa.array([pos] * n, pa.int64()), pa.nulls(n, pa.string())]
    return pa.RecordBatch.from_arrays([pa.chunked_array([c]).combine_chunks() if isinstance(c, pa.ChunkedArray) else c for c in cols], schema=schema)


def _bad_row(schema: pa.Schema, bad: BadRecord, pos: int) -> pa.RecordBatch:
    row = {f.name: None for f in schema}
    row.update(_file=bad.path, _pos=pos, _bad=json.dumps(bad.to_json()))
    return pa.RecordBatch.from_pylist([row], schema=schema)


def _read_traces(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    for b in batches:
        for path in b.column("path").to_pylist():
            for pos, item in enumerate(read_file(path, skip=True)):
                yield _bad_row(EVENTS_READ, item, pos) if isinstance(item, BadRecord) else _tagged(item, EVENTS_READ, path, pos)


def _read_histories(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    for b in batches:
        for path in b.column("path").to_pylist():
            try:
                table, bad = read_history(path, skip=True)
            except TraceError as exc:  # the file as a whole (unreadable)
                table, bad = history.SCHEMA.empty_table(), [BadRecord(path, exc.where, exc.what, "")]
            for pos, item in enumerate(bad):
                yield _bad_row(HISTORY_READ, item, pos)
            if table.num_rows:
                yield _tagged(table.combine_chunks().to_batches()[0], HISTORY_READ, path, len(bad))


def _replay(table: pa.Table) -> pa.Table:
    records = table.drop_columns(["_file", "_pos", "_bad"]).sort_by("seq").to_pylist()
    verdict = replay_run(records)
    if verdict.failed_seq is None:
        return VIOLATION.empty_table()
    return pa.Table.from_pylist([conformance_violation(verdict)._asdict()], schema=VIOLATION)


def _spark_schema(schema: pa.Schema):
    from pyspark.sql.pandas.types import from_arrow_schema

    return from_arrow_schema(schema)


def _paths(spark, paths: list[str]):
    return spark.sparkContext.parallelize([(p,) for p in paths], max(1, len(paths))).toDF("path string")


def _split_bad(df, skip: bool) -> tuple[object, list[BadRecord]]:
    """The good rows, and the bad records in file order; TraceError for the first without skip."""
    from pyspark.sql import functions as F

    rows = df.filter(F.col("_bad").isNotNull()).select("_file", "_pos", "_bad").orderBy("_file", "_pos").collect()
    bad = [BadRecord(**{("path" if k == "file" else k): v for k, v in json.loads(r["_bad"]).items()}) for r in rows]
    if bad and not skip:
        raise TraceError(bad[0].path, bad[0].where, bad[0].what)
    return df.filter(F.col("_bad").isNull()), bad


def history_rows(events):
    """traces/history.py `from_events` as DataFrame operations."""
    from pyspark.sql import functions as F

    kind, msg = F.col("kind"), F.col("msg")
    status = (
        F.when(F.col("status") == "PUT_OK", history.OK)
        .when(F.col("status") == "IN_SYNC_REPLICAS_NOT_ENOUGH", history.FAIL)
        .otherwise(history.INFO)
    )

    def rows(df, op: str, st):
        return df.select(
            "run", "seq", F.lit(op).alias("op"), msg.cast("string").alias("msg"), F.col("queue").cast("string").alias("key"),
            F.col("queue_offset").alias("offset"), st.alias("status"),
        )

    sends = rows(events.filter(kind.isin("send", "put_complete", "put_timeout") & msg.isNotNull()), history.SEND, status)
    reads = rows(events.filter((kind == "consume") & msg.isNotNull()), history.READ, F.lit(None).cast("string"))
    ends_df = events.filter(kind == "run_end")
    null_s, null_l = F.lit(None).cast("string"), F.lit(None).cast("long")
    ends = ends_df.select("run", "seq", F.lit(history.END).alias("op"), null_s.alias("msg"), null_s.alias("key"), null_l.alias("offset"), null_s.alias("status"))
    held = ends_df.select("run", "seq", F.explode("held").alias("m")).select(
        "run", "seq", F.lit(history.HELD).alias("op"), F.col("m").cast("string").alias("msg"), null_s.alias("key"), null_l.alias("offset"), null_s.alias("status")
    )
    return sends.unionByName(reads).unionByName(ends).unionByName(held)


def history_violations(h):
    """traces/history.py `_Run.check` as DataFrame operations; a DataFrame of violations."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    def dash(c):
        return F.coalesce(c.cast("string"), F.lit("-"))

    def out(df, check: str, subject, count, detail):
        return df.select(F.lit(check).alias("check"), "run", subject.alias("subject"), count.cast("long").alias("count"), detail.alias("detail"))

    reads = h.filter(F.col("op") == history.READ)
    sends = h.filter(F.col("op") == history.SEND).groupBy("run", "msg").agg(
        F.min("seq").alias("first"),
        F.max_by("status", "seq").alias("final"),
        F.min_by("key", "seq").alias("skey"),
        F.min_by("offset", "seq").alias("soffset"),
    )
    slots = reads.filter(F.col("offset").isNotNull())
    agreement = (
        slots.groupBy("run", "key", "offset").agg(F.array_sort(F.collect_set("msg")).alias("ms")).filter(F.size("ms") > 1)
    )
    v_agree = out(
        agreement, "offset_agreement", F.format_string("queue %s offset %d", dash(F.col("key")), F.col("offset")),
        F.size("ms"), F.concat(F.lit("messages "), F.array_join("ms", ",")),
    )
    top = slots.groupBy("run", "key").agg(F.max("offset").alias("top"))
    per_msg = reads.groupBy("run", "msg").agg(F.count(F.lit(1)).alias("n"), F.min("seq").alias("rseq"), F.min_by("key", "seq").alias("rkey"))
    lost = (
        sends.filter(F.col("final") == history.OK)
        .join(per_msg.select("run", "msg"), ["run", "msg"], "left_anti")
        .join(top.withColumnRenamed("run", "trun"), (F.col("run") == F.col("trun")) & F.col("skey").eqNullSafe(F.col("key")), "left")
        .filter(F.col("soffset").isNull() | (F.coalesce(F.col("top"), F.lit(-1)) > F.col("soffset")))
    )
    v_lost = out(
        lost, "lost_ack", F.concat(F.lit("message "), F.col("msg")), F.lit(1),
        F.format_string("queue %s offset %s, reads reached %s", dash(F.col("skey")), dash(F.col("soffset")), dash(F.col("top"))),
    )
    v_dup = out(
        per_msg.filter(F.col("n") > 1), "duplicate", F.concat(F.lit("message "), F.col("msg")), F.col("n") - 1,
        F.format_string("read %d times", F.col("n")),
    )
    read_sends = per_msg.join(sends, ["run", "msg"], "left")
    v_failed = out(
        read_sends.filter(F.col("final") == history.FAIL), "read_failed", F.concat(F.lit("message "), F.col("msg")), F.col("n"),
        F.format_string("send failed, read %d times", F.col("n")),
    )
    ended = h.filter(F.col("op") == history.END).select("run").distinct()
    held = h.filter(F.col("op") == history.HELD).select("run", "msg").distinct()
    truncated = per_msg.join(ended, "run").join(held, ["run", "msg"], "left_anti")
    v_trunc = out(
        truncated, "read_truncated", F.concat(F.lit("message "), F.col("msg")), F.col("n"),
        F.format_string("read %d times, held by no replica at the end", F.col("n")),
    )
    w = Window.partitionBy("run", "rkey").orderBy("rseq").rowsBetween(Window.unboundedPreceding, -1)
    firsts = read_sends.filter(F.col("final") == history.OK).withColumn("before", F.max("first").over(w))
    v_order = out(
        firsts.filter(F.col("first") < F.col("before")), "order", F.concat(F.lit("message "), F.col("msg")), F.lit(1),
        F.format_string("queue %s: first read after a message sent later", dash(F.col("rkey"))),
    )
    return v_agree.unionByName(v_lost).unionByName(v_dup).unionByName(v_failed).unionByName(v_trunc).unionByName(v_order)


def validate_spark(inputs: Inputs, skip: bool = False, master: str | None = None, spark=None) -> Report:
    from pyspark.sql import functions as F

    spark = spark or session(master)
    units: dict[str, int] = {"files": len(inputs.traces), "histories": len(inputs.histories), "store_sets": len(inputs.store_sets)}
    seconds: dict[str, float] = {}
    bad: list[BadRecord] = []
    violations = []
    hist_parts = []
    if inputs.traces:
        raw = _paths(spark, inputs.traces).mapInArrow(_read_traces, _spark_schema(EVENTS_READ)).cache()
        events, rejected = _split_bad(raw, skip)
        bad += rejected
        spans = events.groupBy("run").agg(F.array_sort(F.collect_set("_file")).alias("fs")).filter(F.size("fs") > 1)
        first = spans.orderBy("run").limit(1).collect()
        if first:
            raise spans_error(first[0]["run"], first[0]["fs"])
        counts = events.agg(F.count(F.lit(1)).alias("events"), F.countDistinct("run").alias("runs")).collect()[0]
        units.update(events=counts["events"], runs=counts["runs"])
        t = time.perf_counter()
        violations += events.groupBy("run").applyInArrow(_replay, _spark_schema(VIOLATION)).collect()
        seconds["conformance"] = time.perf_counter() - t
        hist_parts.append(history_rows(events))
    else:
        units.update(events=0, runs=0)
    if inputs.histories:
        raw_h = _paths(spark, inputs.histories).mapInArrow(_read_histories, _spark_schema(HISTORY_READ))
        good_h, rejected = _split_bad(raw_h, skip)
        bad += rejected
        hist_parts.append(good_h.select(*history.SCHEMA.names))
    t = time.perf_counter()
    if hist_parts:
        h = hist_parts[0]
        for part in hist_parts[1:]:
            h = h.unionByName(part)
        h = h.cache()
        units["client_ops"] = h.count()
        violations += history_violations(h).collect()
    else:
        units["client_ops"] = 0
    seconds["history"] = time.perf_counter() - t
    t = time.perf_counter()
    if inputs.store_sets:
        sc = spark.sparkContext
        slices = min(len(inputs.store_sets), 4 * sc.defaultParallelism)
        violations += sc.parallelize(inputs.store_sets, slices).flatMap(stores.check_set).collect()
    seconds["stores"] = time.perf_counter() - t
    found = sorted(history.Violation(r[0], r[1], r[2], int(r[3]), r[4]) for r in violations)
    return Report("spark", units, found, bad, seconds)
