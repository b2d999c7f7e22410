"""Traces: the recorder, conformance replay, client-history and store checks, both engines giving
the same verdicts on corpora with injected violations, OpenChaos counts, and bad input for
every reader."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ci_results import junit_cases
from interrupts import INTERRUPTIBLE
from conftest import needs_rocketmq
from rmqcheck.cli import main
from rmqcheck.traces import files, stores
from rmqcheck.traces.openchaos import read_history
from rmqcheck.traces.recorder import STATE_FIELDS, Corpus, simulate
from rmqcheck.traces.schema import ARROW, TraceError, documented, json_schema
from rmqcheck.traces.validate import discover, validate_local

ROOT = Path(__file__).resolve().parents[1]
OPENCHAOS = ROOT / "tests" / "data" / "openchaos-queue-history"


@pytest.fixture(scope="module")
def spark(spark_python):
    """Left running: test_distributed, next on the same worker (conftest.SPARK_MODULES), goes on
    with it."""
    from rmqcheck.traces.spark import session

    return session("local[2]", spark_python)


def corpus(tmp: Path, fmt: str = "ndjson", **kw) -> Path:
    c = Corpus(**{"runs": 24, "steps": 60, "runs_per_file": 8, "fmt": fmt, "stores": True, **kw})
    simulate(c, tmp)
    return tmp


def ndjson_lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def write_lines(path: Path, records: list[dict]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))


def checks(report) -> set[str]:
    return {v.check for v in report.violations}


# --- the recorder and the clean corpus ---------------------------------------------------------


def test_a_recorded_corpus_conforms_and_breaks_no_guarantee(tmp_path):
    report = validate_local(discover([str(corpus(tmp_path))]))
    assert report.units["runs"] == 24 and report.units["events"] == 24 * 62
    assert checks(report) <= {"duplicate", "consistent_point"}  # the reported, non-safety findings
    assert not report.failed()


def test_ndjson_and_parquet_corpora_give_the_same_report(tmp_path):
    a = validate_local(discover([str(corpus(tmp_path / "a", "ndjson"))]))
    b = validate_local(discover([str(corpus(tmp_path / "b", "parquet"))]))
    assert a.violations == b.violations and a.units == b.units


def test_defaults_lose_acked_messages_in_conforming_runs(tmp_path):
    report = validate_local(discover([str(corpus(tmp_path, names=("default",), runs=40, steps=80))]))
    assert "lost_ack" in checks(report) and "conformance" not in checks(report)


def test_the_documented_schema_is_the_one_the_code_reads():
    schema = json_schema()
    assert set(schema["properties"]) == set(files.ARROW.names)
    assert json.loads((ROOT / "docs" / "trace-schema-v1.json").read_text()) == schema
    head = {"v", "run", "group", "seq", "kind", "args", "config", "events", "held"}
    assert set(STATE_FIELDS) == set(files.ARROW.names) - head  # every post-state field is observed
    guide = (ROOT / "docs" / "traces.md").read_text()
    assert documented(guide) == guide, "regenerate with: python -m rmqcheck.traces.schema"


# --- injected violations: each caught, both engines identical ------------------------------------


def inject_non_conforming(d: Path) -> str:
    part = d / "part-00000.ndjson"
    recs = ndjson_lines(part)
    rec = next(r for r in recs if r["kind"] == "send" and "msg" in r)
    rec["max_offset"] += 1
    write_lines(part, recs)
    return rec["run"]


def inject_lost_ack(d: Path) -> str:
    """Drop the read of an acked message whose queue was read further."""
    part = d / "part-00001.ndjson"
    recs = ndjson_lines(part)
    acked = {(r["run"], r["msg"]) for r in recs if r.get("status") == "PUT_OK"}
    reads = [r for r in recs if r["kind"] == "consume" and "msg" in r]
    victim = next(
        r for r in reads
        if (r["run"], r["msg"]) in acked
        and any(o["run"] == r["run"] and o["queue_offset"] > r["queue_offset"] and o["msg"] != r["msg"] for o in reads)
        and sum(o["run"] == r["run"] and o["msg"] == r["msg"] for o in reads) == 1
    )
    recs.remove(victim)
    write_lines(part, recs)
    return victim["run"]


def inject_duplicate(d: Path) -> str:
    """Read a message a second time just before the run ends."""
    part = d / "part-00002.ndjson"
    recs = ndjson_lines(part)
    read = next(r for r in recs if r["kind"] == "consume")
    end = next(i for i, r in enumerate(recs) if r["run"] == read["run"] and r["kind"] == "run_end")
    recs.insert(end, {**read, "seq": recs[end]["seq"]})
    recs[end + 1]["seq"] += 1
    write_lines(part, recs)
    return read["run"]


def inject_divergent_epoch_files(d: Path) -> str:
    """One replica claims a shared epoch started elsewhere (a well-formed file, crc included)."""
    for run_dir in sorted((d / "stores").iterdir()):
        files_ = sorted(run_dir.glob("*/" + stores.FILE))
        lists = [stores.load_epoch_file(f.parent)[0] for f in files_]
        if len(files_) >= 2 and lists[0] and lists[1] and lists[0][-1][1] > 0 and lists[0][-1][0] in dict(lists[1]):
            e, s = lists[0][-1]
            files_[1].write_text(stores.format_epoch_file([x for x in lists[1] if x[0] < e] + [(e, s + 1)]))
            return run_dir.name
    raise AssertionError("no run with a shared non-zero epoch start")


@pytest.mark.heavy
def test_each_injected_violation_is_caught_by_both_engines_identically(tmp_path, spark):
    from rmqcheck.traces.spark import validate_spark

    d = corpus(tmp_path, runs=40, steps=100, runs_per_file=10)
    expected = {
        ("conformance", inject_non_conforming(d)),
        ("lost_ack", inject_lost_ack(d)),
        ("duplicate", inject_duplicate(d)),
        ("epoch_agreement", inject_divergent_epoch_files(d)),
    }
    to_parquet(d / "part-00001.ndjson")  # one engine path per format
    inputs = discover([str(d), str(OPENCHAOS)])
    local = validate_local(inputs)
    found = {(v.check, v.run) for v in local.violations}
    assert expected <= found
    assert local.failed()
    remote = validate_spark(inputs, spark=spark)
    assert remote.violations == local.violations
    assert remote.units == local.units


@needs_rocketmq
def test_recorded_runs_of_the_real_classes_validate_on_both_engines(tmp_path, capsys, spark):
    """`conform --record`'s runs (tests/test_java_record.py has the rest of it) validate alike on both
    engines."""
    from rmqcheck.traces.spark import validate_spark

    corpus = tmp_path / "java"
    assert main(["conform", "--record", str(corpus), "--runs", "24", "--steps", "80", "--runs-per-file", "8",
                 "--format", "parquet"]) == 0
    text = capsys.readouterr().out
    assert "recorded 24 runs" in text and "calls into RocketMQ's classes" in text
    inputs = discover([str(corpus)])
    local = validate_local(inputs)
    assert not local.failed() and local.units["events"] == 24 * (80 + 2)  # with run_start and run_end
    assert validate_spark(inputs, spark=spark).violations == local.violations


@needs_rocketmq
def test_a_soak_of_the_cluster_is_recorded_in_parts_and_validates_alike_on_both_engines(tmp_path, capsys, spark,
                                                                                        monkeypatch):
    """`cluster --soak`: steady load and faults on RocketMQ's running code, the history in rotating
    parts (small ones here), then `validate` of the folder: one run, and the same report on Spark."""
    from rmqcheck.checkers.cluster import soak
    from rmqcheck.traces.spark import validate_spark

    monkeypatch.setattr(soak, "PART_LINES", 2000)
    out = tmp_path / "soak"
    code = main(["cluster", "--soak", "15", "--seed", "2", "--out", str(out), "--keep-stores"])
    text = capsys.readouterr().out
    assert code in (0, 1), text  # 1: a violation the configuration does not explain (listed, kept)
    record = json.loads((out / "soak-2" / "soak.json").read_text())
    assert record["kind"] == "rmqcheck cluster soak" and record["seed"] == 2 and record["seconds"] >= 15
    assert record["statuses"].get("PUT_OK", 0) > 100 and record["parts"] >= 2 and "events recorded" in text
    inputs = discover([str(out)])
    assert len(inputs.histories) == 1 and len(inputs.store_sets) == 1 and len(inputs.log_sets) == 1
    local = validate_local(inputs)
    assert local.units["history_records"] == record["events"] and local.units["histories"] == 1
    remote = validate_spark(inputs, spark=spark)
    assert remote.violations == local.violations and remote.units == local.units
    with pytest.raises(SystemExit) as exc:
        main(["cluster", "--soak", "0", "--out", str(tmp_path / "x")])
    assert exc.value.code == 2 and "the budget must be positive" in capsys.readouterr().err
    assert main(["cluster", "--soak", "5", "--baseline", str(tmp_path), "--out", str(tmp_path / "x")]) == 2
    assert "--soak is one run" in capsys.readouterr().err


def to_parquet(part: Path) -> Path:
    """The same records as a Parquet part file (the NDJSON one removed)."""
    target = part.with_suffix(".parquet")
    files.write_part(target, ndjson_lines(part), files.PARQUET)
    part.unlink()
    return target


@pytest.mark.heavy
def test_both_engines_stop_at_the_same_bad_record_or_skip_the_same_ones(tmp_path, spark):
    from rmqcheck.traces.spark import validate_spark

    d = corpus(tmp_path, stores=False)
    nd = d / "part-00002.ndjson"
    nd.write_text(nd.read_text() + json.dumps({**GOOD, "v": 3}) + "\n")
    recs = ndjson_lines(d / "part-00001.ndjson")
    recs[5]["kind"] = "explode"
    files.write_part(d / "part-00001.parquet", recs, files.PARQUET)
    (d / "part-00001.ndjson").unlink()
    inputs = discover([str(d)])
    with pytest.raises(TraceError) as local_error:
        validate_local(inputs)
    with pytest.raises(TraceError) as spark_error:
        validate_spark(inputs, spark=spark)
    assert str(local_error.value) == str(spark_error.value)
    assert "part-00001.parquet: row group 0 row 5: unknown event kind 'explode'" in str(local_error.value)
    local = validate_local(inputs, skip=True)
    remote = validate_spark(inputs, skip=True, spark=spark)
    assert [b.where for b in local.bad] == ["row group 0 row 5", f"line {len(ndjson_lines(nd))}"]
    assert remote.bad == local.bad and remote.violations == local.violations and remote.units == local.units
    assert "conformance" in checks(local)  # the skipped record leaves a gap: nothing silently lost


@pytest.mark.heavy
def test_a_damaged_cluster_run_record_stops_both_engines_alike(tmp_path, spark, monkeypatch):
    """A recorded cluster run is judged in a Spark task (traces/real_runs.py); its bad input comes
    back to the driver as the local engine's error, word for word (the path as given, relative)."""
    from rmqcheck.traces.spark import validate_spark

    run = shutil.copytree(Path(__file__).parent / "data" / "cluster-runs" / "durable3-seed-11", tmp_path / "run")
    lines = (run / "steps.jsonl").read_text().splitlines()
    (run / "steps.jsonl").write_text("\n".join(lines[:5] + ['{"step": 6, "op"'] + lines[6:]) + "\n")
    monkeypatch.chdir(tmp_path)
    inputs = discover(["run"])
    with pytest.raises(TraceError) as local_error:
        validate_local(inputs)
    with pytest.raises(TraceError) as spark_error:
        validate_spark(inputs, spark=spark)
    assert str(local_error.value) == str(spark_error.value) and str(local_error.value).startswith("run/steps.jsonl: line 6: not JSON")


# --- OpenChaos ---------------------------------------------------------------------------------


def test_an_openchaos_history_is_reported_with_exact_counts():
    report = validate_local(discover([str(OPENCHAOS)]))
    by = report.by_check()
    # the file: 6 enqueues (5 SUCCESS, 1 FAILURE), m3 and m5 never dequeued, m2 dequeued 3 times,
    # m4 twice, the failed m6 dequeued once; key k2 reads m4 before the earlier-sent m1... see the file
    assert sorted(v.subject for v in by["lost_ack"]) == ["message m3", "message m5"]
    assert sum(v.count for v in by["duplicate"]) == 3
    assert [v.subject for v in by["read_failed"]] == ["message m6"]
    assert [v.subject for v in by["order"]] == ["message m1"]
    assert by["offset_agreement"] == [] and by["read_truncated"] == []


# --- bad input ---------------------------------------------------------------------------------


GOOD = {"v": 1, "run": "r", "group": "g", "seq": 0, "kind": "run_start", "config": "{}"}


@pytest.mark.parametrize(
    "line, what",
    [
        ('{"v": 1, "run": "r"', "not JSON"),
        (json.dumps({**GOOD, "v": 2}), "unknown schema version 2"),
        (json.dumps({**GOOD, "seq": "0"}), "field 'seq' has '0'"),
        (json.dumps({**GOOD, "kind": "explode"}), "unknown event kind"),
        (json.dumps({**GOOD, "colour": 1}), "unknown field"),
        (json.dumps({k: v for k, v in GOOD.items() if k != "run"}), "missing required field 'run'"),
        ("[1, 2]", "must be a JSON object"),
    ],
)
def test_a_bad_ndjson_record_names_the_file_and_line(tmp_path, line, what):
    p = tmp_path / "part-00000.ndjson"
    p.write_text(json.dumps(GOOD) + "\n" + line + "\n")
    with pytest.raises(TraceError) as e:
        list(files.read_file(str(p)))
    assert e.value.where == "line 2" and what in e.value.what and str(p) in str(e.value)


def test_a_truncated_ndjson_file_names_the_last_line(tmp_path):
    p = tmp_path / "part-00000.ndjson"
    p.write_text(json.dumps(GOOD) + "\n" + json.dumps(GOOD)[:-3])
    with pytest.raises(TraceError, match="line 2: truncated"):
        list(files.read_file(str(p)))


def test_a_bad_parquet_row_names_the_row_group_and_row(tmp_path):
    p = tmp_path / "part-00000.parquet"
    rows = [GOOD, {**GOOD, "seq": 1, "v": 7}]
    pq.write_table(pa.Table.from_pylist(rows, schema=files.ARROW.remove(0).insert(0, pa.field("v", pa.int32()))), p)
    with pytest.raises(TraceError) as e:
        list(files.read_file(str(p)))
    assert e.value.where == "row group 0 row 1" and "unknown schema version 7" in e.value.what
    items = list(files.read_file(str(p), skip=True))
    assert sum(isinstance(i, files.BadRecord) for i in items) == 1
    assert sum(i.num_rows for i in items if not isinstance(i, files.BadRecord)) == 1


@pytest.mark.parametrize(
    "make, what",
    [
        (lambda p: p.write_bytes(b"PAR1 not really"), "not a readable Parquet file"),
        (lambda p: pq.write_table(pa.table({"run": ["r"]}), p), "missing required column"),
        (lambda p: pq.write_table(pa.Table.from_pylist([{**GOOD, "extra": 1}]), p), "unknown column"),
    ],
)
def test_a_bad_parquet_file_is_named(tmp_path, make, what):
    p = tmp_path / "part-00000.parquet"
    make(p)
    with pytest.raises(TraceError, match=what):
        list(files.read_file(str(p)))


@pytest.mark.parametrize(
    "line, what",
    [
        ("0\tenqueue\tREQUEST\tm1\tnull\n", "6 or 7 fields"),
        ("0\tenqueue\tRESPONSE\tMAYBE\tm1\tnull\t1\t1\tnull\t0\n", "unknown result 'MAYBE'"),
        ("x\tenqueue\tREQUEST\tm1\tnull\t1\tnull\n", "expected clientId"),
        ("0\tpeek\tREQUEST\tm1\tnull\t1\tnull\n", "unknown operation"),
        ("fault\tkill\tmaybe\t1\n", "a fault record"),
        ("0\tenqueue\tRESPONSE\tSUCCESS\tm1\tnull\t1\t1\tnull\t0\n", "without a request"),
    ],
)
def test_a_bad_openchaos_line_is_named(tmp_path, line, what):
    p = tmp_path / "run-history"
    p.write_text("fault\tkill\tstart\t1\n" + line)
    with pytest.raises(TraceError) as e:
        read_history(str(p))
    assert e.value.where == "line 2" and what in e.value.what
    table, bad = read_history(str(p), skip=True)
    assert len(bad) == 1 and bad[0].where == "line 2"


@pytest.mark.parametrize(
    "main_text, bak_text, what",
    [
        ("2\n0\n1-0\n", None, "count line says 2"),
        ("1\n5\n1-0\n", None, "crc 5 does not match"),
        # a 0-byte main file (a torn write) is a NumberFormatException: no .bak fallback (reference §1.5)
        ("", "1\n0\n1-0\n", "the count line is missing"),
        (None, "1\n0\n1-0\n", None),  # no main file: the .bak is read
        ("2\n0\n2-5\n1-0\n", None, "does not follow"),
        # Long.parseLong and Integer.parseInt refuse what a Python int() takes: the store does not start
        ("1\n0\n1-9223372036854775808\n", None, "start offset of line 3 '9223372036854775808' is not a long"),
        ("1\n0\n2147483648-0\n", None, "epoch of line 3 '2147483648' is not an int"),
        ("1\n0\n1- 5\n", None, "' 5' is not a long"),
        ("1\n0\n1-5_0\n", None, "'5_0' is not a long"),
        ("1\n0\r\n1-5-\r\n", None, None),  # readLine takes \r\n; String.split drops the trailing empty part
        (b"\xff\xfe", "1\n0\n1-0\n", None),  # not UTF-8: an IOException, the .bak is read
        ("dir", "1\n0\n1-0\n", None),  # a directory in its place: the same
        (b"\xff\xfe", None, "not UTF-8 (byte 0): MalformedInputException); no .bak"),
    ],
)
def test_bad_epoch_files_are_store_findings(tmp_path, main_text, bak_text, what):
    store = tmp_path / "set" / "broker-1"
    store.mkdir(parents=True)
    if main_text == "dir":
        (store / stores.FILE).mkdir()
    elif isinstance(main_text, bytes):
        (store / stores.FILE).write_bytes(main_text)
    elif main_text is not None:
        (store / stores.FILE).write_text(main_text)
    if bak_text is not None:
        (store / stores.BAK).write_text(bak_text)
    found = stores.check_set(str(tmp_path / "set"))
    if what is None:
        assert found == []
    else:
        assert [v.check for v in found] == ["epoch_file"] and what in found[0].detail


def test_the_bak_file_stands_in_for_a_corrupt_main_file(tmp_path):
    store = tmp_path / "broker-1"
    store.mkdir()
    (store / stores.FILE).write_text("1\n0\n")  # count 1, no entry: IOException
    (store / stores.BAK).write_text(stores.format_epoch_file([(1, 0), (2, 100)]))
    entries, note = stores.load_epoch_file(store)
    assert entries == [(1, 0), (2, 100)] and ".bak used" in note


def test_the_crc_matches_the_javadoc_example():
    assert stores.crc([(7, 7000), (8, 8000)]) == 773307083
    assert stores.crc([(1, 100), (2, 300), (3, 500)]) == 453994644


def test_a_run_split_over_two_files_is_bad_input(tmp_path):
    d = corpus(tmp_path, stores=False)
    a, b = tmp_path / "part-00000.ndjson", tmp_path / "part-00001.ndjson"
    lines = a.read_text().splitlines(keepends=True)
    a.write_text("".join(lines[:-1]))
    b.write_text(lines[-1] + b.read_text())
    with pytest.raises(TraceError, match="a run must stay in one file"):
        validate_local(discover([str(d)]))


# --- the command line ---------------------------------------------------------------------------


def test_validate_exit_statuses_and_the_side_file(tmp_path, capsys):
    d = corpus(tmp_path / "c", stores=False)
    out = tmp_path / "violations.ndjson"
    assert main(["validate", str(d), "--violations", str(out), "--quiet"]) == 0
    assert "conformance" in capsys.readouterr().out
    inject_non_conforming(d)
    assert main(["validate", str(d), "--violations", str(out), "--quiet", "--junit", str(tmp_path / "j.xml")]) == 1
    assert any(json.loads(line)["check"] == "conformance" for line in out.read_text().splitlines())
    cases = junit_cases(tmp_path / "j.xml")  # a case a check; the failure names the violations file
    outcome, message, text = cases["validate/conformance/conformance"]
    assert outcome == "failed" and "matched" in message and f"file: {out}" in text and "replay" not in text
    assert sum(o == "failed" for o, _, _ in cases.values()) == 1
    part = d / "part-00001.ndjson"
    part.write_text(part.read_text() + '{"v": 1, "run": \n')
    assert main(["validate", str(d), "--violations", str(out), "--quiet"]) == 2
    assert f"{part}: line" in capsys.readouterr().err
    rejected = tmp_path / "rejected.ndjson"
    code = main(["validate", str(d), "--skip-bad-records", "--rejected", str(rejected), "--violations", str(out), "--quiet"])
    assert code == 1 and "1 bad records skipped" in capsys.readouterr().out
    assert json.loads(rejected.read_text())["file"] == str(part)


def test_validate_names_a_missing_path(tmp_path, capsys):
    assert main(["validate", str(tmp_path / "nope")]) == 2
    assert "no such file or directory" in capsys.readouterr().err


def test_an_openchaos_history_alone_validates_on_the_local_engine(tmp_path, capsys):
    """It crashed after checking (KeyError: 'events', issue 30): every unit is reported."""
    history = Path(__file__).parent / "data" / "openchaos-queue-history"
    assert main(["validate", str(history), "--violations", str(tmp_path / "v.ndjson"), "--quiet"]) == 1
    out = capsys.readouterr().out
    assert "0 events in 0 runs, 1 OpenChaos histories (24 records)" in out and "lost_ack" in out


def test_a_history_in_rotating_parts_is_one_run_and_a_missing_part_is_named(tmp_path):
    """`cluster --soak` writes its history in parts; a send's request and response may sit in two
    of them. Read in order they are the one file, violation for violation; a gap is bad input."""
    whole = Path(__file__).parent / "data" / "openchaos-queue-history"
    lines = whole.read_text().splitlines(keepends=True)
    assert lines[7].split("\t")[2] == "REQUEST" and lines[8].split("\t")[2] == "RESPONSE"  # m4's, cut between
    for i, (a, b) in enumerate([(0, 8), (8, 15), (15, len(lines))]):
        (tmp_path / f"{whole.name}.{i:05d}").write_text("".join(lines[a:b]))
    local = validate_local(discover([str(tmp_path)]))
    assert local.violations == validate_local(discover([str(whole)])).violations
    assert local.units["histories"] == 1 and local.units["history_records"] == len(lines)
    (tmp_path / f"{whole.name}.00001").unlink()
    with pytest.raises(TraceError, match="part 00001 of this rotated history is missing"):
        validate_local(discover([str(tmp_path)]))
    (tmp_path / f"{whole.name}.00000").unlink()
    with pytest.raises(TraceError, match="whose first part, openchaos-queue-history.00000, is missing"):
        discover([str(tmp_path)])


@pytest.mark.parametrize("make", ["empty-trace", "empty-history", "no-events"])
def test_inputs_with_no_record_are_nothing_to_validate(tmp_path, capsys, make):
    if make == "empty-trace":
        target = tmp_path / "part-00000.ndjson"
        target.write_text("")
    elif make == "empty-history":
        target = tmp_path / "queue-history"
        target.write_text("")
    else:
        target = tmp_path / "corpus"
        target.mkdir()
        pq.write_table(pa.Table.from_pylist([], schema=ARROW), target / "part-00000.parquet")
    v = str(tmp_path / "v.ndjson")
    assert main(["validate", str(target), "--violations", v, "--quiet"]) == 2
    assert "nothing to validate" in capsys.readouterr().err
    assert main(["validate", str(target), "--violations", v, "--quiet", "--allow-empty"]) == 0


def test_every_file_under_a_folder_is_read_or_reported(tmp_path, capsys, monkeypatch):
    """Dangling links, link loops and unreadable files were silently dropped (issue 30)."""
    d = corpus(tmp_path / "c", stores=False)
    v = str(tmp_path / "v.ndjson")
    dangling = d / "part-00009.ndjson"
    dangling.symlink_to(tmp_path / "gone.ndjson")
    assert main(["validate", str(d), "--violations", v, "--quiet"]) == 2
    assert f"{dangling}: file: a symbolic link to nothing (dangling)" in capsys.readouterr().err
    dangling.unlink()
    (d / "sub").mkdir()
    (d / "sub" / "up").symlink_to(d)
    assert main(["validate", str(d), "--violations", v, "--quiet"]) == 2
    assert f"{d / 'sub' / 'up'}: folder: a symbolic link loop" in capsys.readouterr().err
    (d / "sub" / "up").unlink()
    (d / "self").symlink_to(d / "self")
    assert main(["validate", str(d), "--violations", v, "--quiet"]) == 2
    assert "self: file: cannot be read: Too many levels of symbolic links" in capsys.readouterr().err
    (d / "self").unlink()
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda p, mode: not str(p).endswith("part-00001.ndjson") and real_access(p, mode))
    assert main(["validate", str(d), "--violations", v, "--quiet"]) == 2  # as a user without the right to read it
    assert "part-00001.ndjson: file: cannot be read: permission denied" in capsys.readouterr().err
    monkeypatch.undo()
    (d / "twin.ndjson").symlink_to(d / "part-00000.ndjson")  # one file by two names: read once
    assert main(["validate", str(d), "--violations", v, "--quiet"]) == 0


def test_a_path_named_twice_is_refused_saying_so(tmp_path, capsys):
    d = corpus(tmp_path / "c", stores=False)
    v = str(tmp_path / "v.ndjson")
    assert main(["validate", str(d), str(d), "--violations", v]) == 2
    assert "named twice" in capsys.readouterr().err
    assert main(["validate", str(d), str(d / "part-00000.ndjson"), "--violations", v]) == 2
    assert f"named twice: {d} already includes it" in capsys.readouterr().err


@pytest.mark.parametrize("broker", [-1, 0, 7])
def test_a_trace_naming_a_broker_outside_its_configuration_does_not_conform(tmp_path, broker):
    """broker -1 once indexed the broker list from the end and conformed (issue 30)."""
    d = corpus(tmp_path, stores=False)
    part = d / "part-00000.ndjson"
    recs = ndjson_lines(part)
    rec = next(r for r in recs if r["kind"] == "heartbeat")
    rec["args"] = [broker]
    write_lines(part, recs)
    found = [v for v in validate_local(discover([str(d)])).violations if v.check == "conformance"]
    assert len(found) == 1 and f"heartbeat(broker={broker}): broker {broker} is outside this configuration" in found[0].detail


@pytest.mark.heavy
@pytest.mark.parametrize("engine", ["local", "spark"])
def test_integers_beyond_their_column_and_deep_nesting_are_bad_records(tmp_path, capsys, engine):
    """OverflowError and RecursionError tracebacks once (issue 30)."""
    d = corpus(tmp_path / "c", stores=False, runs=8, runs_per_file=8)
    part = d / "part-00000.ndjson"
    lines = part.read_text().splitlines()
    rec = json.loads(lines[1])
    rec["max_offset"] = 2**70
    part.write_text("\n".join([lines[0], json.dumps(rec), "[" * 100_000 + "]" * 100_000, *lines[2:]]) + "\n")
    v = str(tmp_path / "v.ndjson")
    assert main(["validate", str(d), "--violations", v, "--quiet", "--engine", engine]) == 2
    err = capsys.readouterr().err
    assert f"{part}: line 2: field 'max_offset' has 1180591620717411303424, expected integer of int64 range" in err
    rejected = tmp_path / "rejected.ndjson"
    code = main(["validate", str(d), "--violations", v, "--quiet", "--engine", engine, "--skip-bad-records",
                 "--rejected", str(rejected)])
    assert code == 1  # the runs the bad records belong to no longer conform
    whats = [json.loads(line)["what"] for line in rejected.read_text().splitlines()]
    assert whats == ["field 'max_offset' has 1180591620717411303424, expected integer of int64 range",
                     "not a record: JSON nested too deeply"]


def test_a_huge_field_is_clipped_in_messages_and_violations(tmp_path, capsys):
    d = corpus(tmp_path / "c", stores=False, runs=8, runs_per_file=8)
    part = d / "part-00000.ndjson"
    recs = ndjson_lines(part)
    next(r for r in recs if r["kind"] == "send" and "status" in r)["status"] = "x" * 5_000_000
    write_lines(part, recs)
    v = tmp_path / "v.ndjson"
    assert main(["validate", str(d), "--violations", str(v), "--quiet"]) == 1
    assert len(capsys.readouterr().out) < 20_000 and v.stat().st_size < 2_000
    assert "(5,000,002 characters)" in v.read_text()


@pytest.mark.heavy
@pytest.mark.parametrize("engine", ["local", "spark"])
def test_store_files_alone_validate(tmp_path, capsys, engine):
    """A folder of epochFileCheckpoint sets alone crashed after checking (KeyError, issue 30)."""
    for replica, text in (("broker-1", stores.format_epoch_file([(1, 0), (2, 5)])),
                          ("broker-2", stores.format_epoch_file([(1, 0), (2, 7)]))):
        (tmp_path / "sets" / "set-a" / replica).mkdir(parents=True)
        (tmp_path / "sets" / "set-a" / replica / stores.FILE).write_text(text)
    code = main(["validate", str(tmp_path / "sets"), "--violations", str(tmp_path / "v.ndjson"), "--quiet",
                 "--engine", engine])
    out = capsys.readouterr().out
    assert code == 1 and "0 events in 0 runs, 0 OpenChaos histories (0 records), 1 store sets" in out
    assert "epoch_agreement" in (tmp_path / "v.ndjson").read_text()


# --- issue 40: what hostile input still broke ----------------------------------------------------


def test_a_repeated_record_names_the_seq_repeated(tmp_path):
    """A duplicated record was reported as the seq after it ("seq 7 repeated" when 6 was)."""
    d = corpus(tmp_path, stores=False)
    part = d / "part-00000.ndjson"
    records = ndjson_lines(part)
    i = next(k for k, r in enumerate(records) if r["seq"] == 6)
    write_lines(part, records[: i + 1] + [records[i]] + records[i + 1:])
    (v,) = [v for v in validate_local(discover([str(d)])).violations if v.check == "conformance"]
    assert v.subject == "seq 6" and "seq 6 repeated" in v.detail


def test_a_skipped_openchaos_line_leaves_no_knock_on_and_says_what_it_may_change(tmp_path, capsys):
    """With --skip-bad-records, the valid response after a skipped request was rejected too, and
    nothing said which verdicts the skipped lines could change."""
    lines = OPENCHAOS.read_text().splitlines(keepends=True)
    assert lines[0].startswith("0\tenqueue\tREQUEST\tm1") and lines[3].startswith("1\tenqueue\tRESPONSE\tSUCCESS\tm2")
    lines[0] = "0\tenqueue\tREQUEST\tm1\n"  # a request cut short: its response follows
    lines[3] = "1\tenqueue\tRESPONSE\tSUCCESS\n"  # a response cut short: the client sends again later
    p = tmp_path / "run-history"
    p.write_text("".join(lines))
    table, bad = read_history(str(p), skip=True)
    assert [b.where for b in bad] == ["line 1", "line 4"]  # no knock-on rejection of lines 2 and 6
    sends = {r["msg"]: r["status"] for r in table.to_pylist() if r["op"] == "send"}
    assert sends["m1"] == "ok" and sends["m2"] == "info"  # the response stands; a lost response is unknown
    assert bad[0].affects == ("run-history", ("lost_ack", "order", "read_failed"))
    code = main(["validate", str(p), "--skip-bad-records", "--violations", str(tmp_path / "v.ndjson"),
                 "--rejected", str(tmp_path / "r.ndjson"), "--quiet"])
    text = " ".join(capsys.readouterr().out.split())
    assert code == 1 and "may differ: skipped records in run-history (2)" in text
    assert "(records of this run were skipped: it may be their consequence)" in text
    assert json.loads((tmp_path / "r.ndjson").read_text().splitlines()[0])["affects"]["run"] == "run-history"


def _lines_run(fn, *args) -> int:
    """Python lines (and calls) `fn(*args)` executes: a count of work that does not depend on the
    machine's speed or load."""
    import sys

    count = 0

    def tracer(frame, event, arg):
        nonlocal count
        count += 1
        return tracer

    sys.settrace(tracer)
    try:
        fn(*args)
    finally:
        sys.settrace(None)
    return count


def test_validating_long_epoch_files_grows_no_faster_than_n_log_n(tmp_path):
    """Two replicas with long epoch files took time in the product of their lengths (2 x 10,000
    entries: 79 s), the consistent-point search being the proofs' nested loop. Measured in lines
    executed, not seconds: n log n from 500 to 4,000 entries is a factor of 10.7; n^2 is 64."""
    def store_set(n: int) -> str:
        master = [(i + 1, 10 * i) for i in range(n)]
        replica = master[:-1] + [(n + 5, 10 * (n - 1) + 3)]
        for name, entries in (("broker-1", master), ("broker-2", replica)):
            (tmp_path / f"s{n}" / "run" / name).mkdir(parents=True)
            (tmp_path / f"s{n}" / "run" / name / stores.FILE).write_text(stores.format_epoch_file(entries))
        return str(tmp_path / f"s{n}" / "run")

    small, large = store_set(500), store_set(4000)
    assert stores.check_set(small) == []
    growth = _lines_run(stores.check_set, large) / _lines_run(stores.check_set, small)
    assert growth < 12, growth


INTERRUPT_SPARK = """
import os, signal, sys, threading, time
from rmqcheck.traces import spark as engine

started = threading.Event()
real = engine._events

def slow(spark, traces, skip):  # the first Spark job, on the driver, outlasts the interrupt
    started.set()
    spark.range(10**13).selectExpr("sum(id)").collect()
    return real(spark, traces, skip)

def interrupt():
    started.wait(300)
    time.sleep(1)
    os.kill(os.getpid(), signal.SIGINT)

engine._events = slow
threading.Thread(target=interrupt, daemon=True).start()
from rmqcheck.cli import main
sys.exit(main(["validate", sys.argv[1], "--engine", "spark", "--master", "local[1]", "--quiet",
               "--violations", sys.argv[2]]))
"""


@pytest.mark.heavy
def test_ctrl_c_during_spark_validation_is_one_line(tmp_path):
    """Ctrl-C while Spark ran printed about 5 KB of py4j and Java traces before the one line."""
    import subprocess
    import sys

    d = corpus(tmp_path / "c", stores=False)
    done = subprocess.run([sys.executable, "-c", INTERRUPT_SPARK, str(d), str(tmp_path / "v.ndjson")],
                          capture_output=True, text=True, timeout=300, **INTERRUPTIBLE)
    assert (done.returncode, done.stderr, done.stdout) == (130, "rmqcheck: interrupted\n", "")
