"""Fuzz suite (issue 30): malformed inputs as mutations of valid files, for every reader and every
verb that reads them.

Each example starts from a valid file (a recorded NDJSON or Parquet corpus, an OpenChaos history,
a replica set's epoch files, a counterexample, a scenario, a configuration) and applies a short
list of mutations drawn by Hypothesis: truncation at a byte, bit flips, inserted bytes (invalid
UTF-8, NUL, CR, BOM), duplicated, dropped and reordered lines, numbers replaced by extreme ones
(2**63, -2**63-1, 10**30, 5,000 digits, 1e309, NaN, Infinity), JSON values replaced by another
type or by 10,000 nested lists or objects, unknown fields, Parquet columns of another type, deep
list types, duplicated or reordered rows, and so on. The mutations are data (tuples of small
integers and names), so a failing example prints short and shrinks.

The property, for every example: `main(argv)` returns a documented verdict (0 or 1), or returns 2
with a message on stderr naming the file (its path). It never raises (a traceback), never hangs
(WATCHDOG), never allocates without bound (MEMORY, a MemoryError here),
and never exits 2 without naming the file. `validate`, when it returns 0 or 1, reports as many
records as the input holds unless it says how many it skipped, and an input with no records at
all is refused (exit 2, "nothing to validate"). Where the issue names a wrong result, the oracle
checks it too: an epoch-file number Java's `Integer.parseInt`/`Long.parseLong` refuses must not
validate clean, and a counterexample or scenario naming a broker outside the configuration must
not replay (exit 2).

The default runs (`make test`) keep the whole file to well under a minute on two cores; the
`slow` variants (`pytest -m slow tests/test_fuzz.py`) draw many more examples, and hunt with the
default (stateful) method and `--budget 1`.
"""

from __future__ import annotations

import contextlib
import io
import json
import random
import re
import shutil
import signal
import tempfile
from pathlib import Path
from typing import Any, Callable, NamedTuple, Sequence

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, event, given, note, settings
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from rmqcheck.checkers.counterexamples import files as cxfiles
from rmqcheck.cli import main
from rmqcheck.model.step import ACTIONS

ROOT = Path(__file__).resolve().parents[1]
OPENCHAOS = ROOT / "tests" / "data" / "openchaos-queue-history"
# Every scenario but conform/ (those drive RocketMQ's classes in a JVM).
SCENARIOS = sorted(str(p.relative_to(ROOT / "scenarios")) for p in (ROOT / "scenarios").rglob("*.scn")
                   if p.parent.name != "conform")
# Scenarios written out as JSON counterexamples too: a liveness lasso (loop) and constructed start logs.
AS_JSON = ("toggles/heartbeat_ignored_without_entry--L1.scn", "toggles/truncation_max_end.scn")

# nested_given: `hunt --method stateful` runs Hypothesis itself, inside the example.
COMMON = dict(deadline=None, derandomize=True, database=None, print_blob=False,
              suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                     HealthCheck.data_too_large,
                                     *[h for h in (getattr(HealthCheck, "nested_given", None),) if h]])
WATCHDOG = 30.0  # seconds: a verb that takes longer on a small input hangs
MEMORY = 3 * 2**30  # bytes of address space a verb may add on a small input (a list of 2**31 queues, say)


# --- running the command line ------------------------------------------------------------------


class Hang(Exception):
    """The command did not return within the watchdog's time."""


class Ran(NamedTuple):
    status: int
    out: str
    err: str


@contextlib.contextmanager
def _watchdog(seconds: float):
    def fire(signum, frame):
        raise Hang(f"no exit status within {seconds:g} s")

    old = signal.signal(signal.SIGALRM, fire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


@contextlib.contextmanager
def _memory_limit(extra: int):
    """Address space capped at what the process has plus `extra` (Linux), so a verb allocating
    without bound raises MemoryError here instead of exhausting the machine."""
    try:
        import resource

        status = Path("/proc/self/status").read_text()
        size = int(re.search(r"VmSize:\s+(\d+) kB", status)[1]) * 1024
        old = resource.getrlimit(resource.RLIMIT_AS)
    except (ImportError, OSError, TypeError):
        yield
        return
    cap = size + extra if old[1] == resource.RLIM_INFINITY else min(size + extra, old[1])
    resource.setrlimit(resource.RLIMIT_AS, (cap, old[1]))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, old)


def cli(argv: Sequence[str], seconds: float = WATCHDOG) -> Ran:
    """`main(argv)` with stdout and stderr captured (rich's consoles write to sys.stdout/stderr as
    they are at the time). An exception propagates: a traceback is a failure of the property."""
    argv = [str(a) for a in argv]
    _note(f"argv: {argv}")
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), _watchdog(seconds), _memory_limit(MEMORY):
        try:
            status = main(argv)
        except SystemExit as exc:  # argparse; the console script would exit the same way
            status = exc.code if isinstance(exc.code, int) else 2
    ran = Ran(status, out.getvalue(), err.getvalue())
    with contextlib.suppress(InvalidArgument):
        event(f"{argv[0]} exit {status}")
    _note(f"exit {ran.status}; stderr: {ran.err[-600:]!r}")
    return ran


def _note(text: str) -> None:
    """Hypothesis's note() when drawing examples; nothing when making the seeds."""
    try:
        note(text)
    except InvalidArgument:
        pass


def _flat(text: str) -> str:
    return text.replace("\n", "").replace("\r", "")


def judge(ran: Ran, named: Sequence[Path | str], given: Path | str | None = None) -> None:
    """0 or 1, or 2 with a message on stderr naming one of `named` (the file mutated). The refusal
    of an input with nothing to validate (issue 30) may name the path given on the command line
    instead."""
    assert ran.status in (0, 1, 2), f"exit status {ran.status} is not a documented verdict; stderr: {ran.err[-600:]!r}"
    if ran.status == 2:
        flat = _flat(ran.err)
        assert ran.err.strip(), "exit 2 with nothing on stderr"
        if given is not None and "nothing to validate" in flat:
            named = [*named, given]
        assert any(str(p) in flat for p in named), (
            f"exit 2 without naming the file ({', '.join(map(str, named))}) on stderr: {ran.err[-600:]!r}")


def _words(text: str) -> str:
    return " ".join(text.split())


def reported_events(ran: Ran) -> int:
    m = re.search(r"([\d,]+) events in [\d,]+ runs", _words(ran.out))
    assert m, f"validate exited {ran.status} without reporting how many events it read: {ran.out[:400]!r}"
    return int(m[1].replace(",", ""))


def reported_skipped(ran: Ran) -> int:
    m = re.search(r"([\d,]+) bad records? (?:were )?skipped", _words(ran.out + " " + ran.err))
    return int(m[1].replace(",", "")) if m else 0


def line_records(data: bytes) -> int:
    """Records of a line-oriented file: its lines, a last one without newline included."""
    return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)


# --- mutations (data, applied by the test) -------------------------------------------------------

# Symbolic values, expanded when applied, so a failing example prints short.
DEEP_LIST = "<10,000 nested lists>"
DEEP_DICT = "<10,000 nested objects>"
DEEP_LIST_100K = "<100,000 nested lists>"
DIGITS = "<5,000 digits>"
LONG = "<100,000 characters>"
EXPANSIONS = {
    DEEP_LIST: "[" * 10_000 + "]" * 10_000,
    DEEP_DICT: '{"a":' * 10_000 + "1" + "}" * 10_000,
    DEEP_LIST_100K: "[" * 100_000 + "]" * 100_000,
    DIGITS: "1" * 5_000,
    LONG: "x" * 100_000,
}
RAW = (DEEP_LIST, DEEP_DICT, DEEP_LIST_100K, DIGITS)  # JSON tokens, not strings

EXTREME_INTS = [2**63, -(2**63) - 1, 10**30, 2**63 - 1, -(2**63), 2**31, -(2**31) - 1, 2**32, -1, 0]
NUMBER_TEXTS = ["9223372036854775808", "-9223372036854775809", "1" + "0" * 30, "2147483648", "-2147483649",
                "-1", "0", "00", "1e309", "-1e309", "1.5", "-0", "NaN", "Infinity", "-Infinity", DIGITS, "+1",
                "1_000", "0x10", " 1", "\u0663"]
JSON_VALUES = [*EXTREME_INTS, float("nan"), float("inf"), float("-inf"), 1e308, 0.5, -0.0, True, False, None,
               "", "NaN", "nan", "Infinity", "-inf", "1e309", "9223372036854775808", "\ud800", "\x00", "MASTER",
               [], {}, [1, 2], [2**63], [None], {"a": 1}, DEEP_LIST, DEEP_DICT, DEEP_LIST_100K, DIGITS, LONG]
NASTY_BYTES = [b"\xff", b"\x00", b"\xc3", b"\r", b"\n", b"\r\n", b"\xef\xbb\xbf", b"\t", b"-", b"{", b"}", b",", b"#",
               b"=", b" ", "\u2028".encode(), b"\xed\xa0\x80"]

pos = st.integers(min_value=0, max_value=2**16)
json_value = st.sampled_from(JSON_VALUES)

byte_op = st.one_of(
    st.tuples(st.just("truncate"), pos),
    st.tuples(st.just("flip"), pos, st.integers(0, 7)),
    st.tuples(st.just("insert"), pos, st.sampled_from(NASTY_BYTES)),
)
line_op = st.one_of(
    st.tuples(st.just("dup_line"), pos, pos),
    st.tuples(st.just("swap_lines"), pos, pos),
    st.tuples(st.just("drop_line"), pos),
    st.tuples(st.just("shuffle_lines"), st.integers(0, 2**16)),
    st.tuples(st.just("dup_all"), st.integers(2, 3)),
)
number_op = st.tuples(st.just("number"), pos, st.sampled_from(NUMBER_TEXTS))
json_op = st.one_of(
    st.tuples(st.just("json_set"), pos, pos, json_value),
    st.tuples(st.just("json_del"), pos, pos),
    st.tuples(st.just("json_add"), pos, pos, st.sampled_from(["zz", "", "v", "run", "actions"]), json_value),
)
config_field_op = st.tuples(st.just("json_config"), pos, pos, json_value)  # inside run_start's config string
scn_op = st.tuples(st.just("scn_value"), pos, st.sampled_from(
    ["-1", "0", "6", "9223372036854775808", "-9223372036854775809", "1" + "0" * 30, DIGITS, "nan", "", "true",
     "[", "[[1,2],3]", ",", "1,2", "x", "\u0663", DEEP_LIST, LONG]))
tsv_op = st.tuples(st.just("tsv_field"), pos, st.sampled_from(
    ["", "null", "SUCCESS", "FAILURE", "UNKNOWN", "REQUEST", "RESPONSE", "enqueue", "dequeue", "fault", "start",
     "-1", "9223372036854775808", "NaN", "\u0663", "m1", LONG, "a\tb"]))


def _expand_text(text: str) -> str:
    return EXPANSIONS.get(text, text)


def _lines(data: bytes) -> tuple[list[bytes], bytes]:
    """Complete lines (each with its newline) and the unterminated rest."""
    parts = data.split(b"\n")
    rest = parts.pop()
    return [p + b"\n" for p in parts], rest


def _json_paths(doc: Any, prefix: tuple = ()) -> list[tuple]:
    paths = [prefix]
    if isinstance(doc, dict):
        for k in doc:
            paths += _json_paths(doc[k], prefix + (k,))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            paths += _json_paths(v, prefix + (i,))
    return paths


def _dumps(doc: Any) -> str:
    text = json.dumps(doc, separators=(",", ":"))
    for sym in RAW:
        text = text.replace(json.dumps(sym), EXPANSIONS[sym])
    return text.replace(json.dumps(LONG), json.dumps(EXPANSIONS[LONG]))


def _mutate_json(text: str, op: tuple) -> str | None:
    """One JSON op on one document; None if the text is no longer JSON (an earlier op broke it)."""
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError):
        return None
    kind, k = op[0], op[2]
    paths = _json_paths(doc)
    path = paths[k % len(paths)]
    if kind == "json_del" and not path:
        return None
    if kind == "json_add":
        parents = [p for p in paths if isinstance(_get(doc, p), dict)]
        if not parents:
            return None
        _get(doc, parents[k % len(parents)])[op[3]] = op[4]
        return _dumps(doc)
    if not path:
        return _dumps(op[3])
    parent = _get(doc, path[:-1])
    if kind == "json_del":
        del parent[path[-1]]
    else:
        parent[path[-1]] = op[3]
    return _dumps(doc)


def _get(doc: Any, path: tuple) -> Any:
    for p in path:
        doc = doc[p]
    return doc


def _json_op_on(data: bytes, op: tuple, per_line: bool) -> bytes:
    if not per_line:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            return data
        new = _mutate_json(text, op)
        return data if new is None else new.encode("utf-8", "surrogatepass") + b"\n"
    lines, rest = _lines(data)
    if not lines:
        return data
    i = op[1] % len(lines)
    if op[0] == "json_config":  # the run_start record's `config`, itself JSON in a string
        starts = [j for j, line in enumerate(lines) if b'"config"' in line]
        if not starts:
            return data
        i = starts[op[1] % len(starts)]
        try:
            rec = json.loads(lines[i])
            inner = _mutate_json(rec["config"], ("json_set", 0, op[2], op[3]))
        except (ValueError, RecursionError, KeyError, TypeError):
            return data
        if inner is None:
            return data
        rec["config"] = inner
        new = json.dumps(rec, separators=(",", ":"))
    else:
        try:
            new = _mutate_json(lines[i].decode("utf-8"), op)
        except UnicodeDecodeError:
            return data
        if new is None:
            return data
    lines[i] = new.encode("utf-8", "surrogatepass") + b"\n"
    return b"".join(lines) + rest


def mutate(data: bytes, ops: Sequence[tuple], per_line_json: bool = True) -> bytes:
    """Apply the ops in order to a file's bytes."""
    for op in ops:
        kind = op[0]
        if kind == "truncate":
            data = data[: op[1] % (len(data) + 1)]
        elif kind == "flip" and data:
            b = bytearray(data)
            b[op[1] % len(b)] ^= 1 << op[2]
            data = bytes(b)
        elif kind == "insert":
            p = op[1] % (len(data) + 1)
            data = data[:p] + op[2] + data[p:]
        elif kind in ("dup_line", "swap_lines", "drop_line", "shuffle_lines", "dup_all"):
            lines, rest = _lines(data)
            if lines:
                n = len(lines)
                if kind == "dup_line":
                    lines.insert(op[2] % (n + 1), lines[op[1] % n])
                elif kind == "swap_lines":
                    i, j = op[1] % n, op[2] % n
                    lines[i], lines[j] = lines[j], lines[i]
                elif kind == "drop_line":
                    del lines[op[1] % n]
                elif kind == "shuffle_lines":
                    random.Random(op[1]).shuffle(lines)
                else:
                    lines = lines * op[1]
            data = b"".join(lines) + rest
        elif kind == "number":
            found = list(re.finditer(rb"-?\d+", data))
            if found:
                m = found[op[1] % len(found)]
                data = data[: m.start()] + _expand_text(op[2]).encode() + data[m.end():]
        elif kind in ("json_set", "json_del", "json_add", "json_config"):
            data = _json_op_on(data, op, per_line_json)
        elif kind == "scn_value":
            found = list(re.finditer(rb"=([^\s#]*)", data))
            if found:
                m = found[op[1] % len(found)]
                data = data[: m.start(1)] + _expand_text(op[2]).encode() + data[m.end(1):]
        elif kind == "tsv_field":
            found = list(re.finditer(rb"[^\t\n]+", data))
            if found:
                m = found[op[1] % len(found)]
                data = data[: m.start()] + _expand_text(op[2]).encode() + data[m.end():]
    return data


def _show(data: bytes) -> str:
    return repr(data[:300]) + (f" ... ({len(data):,} bytes)" if len(data) > 300 else "")


# --- the valid files, made once ------------------------------------------------------------------


class Seeds(NamedTuple):
    ndjson: bytes
    parquet: pa.Table
    history: bytes
    epoch_set: dict[str, bytes]  # <replica>/<file> -> bytes, of one replica set
    counterexamples: dict[str, bytes]  # name -> JSON
    configs: dict[str, bytes]  # name -> JSON


EPOCH_SET = {
    "broker-1": [(1, 0), (2, 40), (4, 95)],
    "broker-2": [(1, 0), (2, 40)],
    "broker-3": [(1, 0), (2, 40), (4, 95)],
}
CONFIG_SEEDS = {
    "durable3": {"brokers": 3, "all_ack": True, "flush": "SYNC_FLUSH"},
    "full": {"brokers": 3, "all_ack": True, "in_sync_replicas": 2, "min_in_sync_replicas": 1, "flush": "SYNC_FLUSH",
             "async_learners": [3], "unclean": False, "queues": 2, "message_sizes": [1, 2], "max_messages": 3,
             "batch_size": 2, "slave_timeout": 1, "heartbeat_timeout": 2, "not_catchup_time": 3,
             "faults": {"crashes": 1, "partitions": 1, "lost_responses": 0, "heartbeat_timeouts": 1,
                        "admin_elections": 0, "connection_resets": 1, "epoch_file_losses": 0,
                        "controller_failovers": 0, "consumer_restarts": 1},
             "bugs": ["ack_uses_local_sss_only"], "faithful_q1": True, "faithful_q2": False},
}


# The scratch directory and the seeds, set by the module's fixture (not passed to the tests, so a
# failing example prints only its mutations).
WORK: list[Path] = []
SEEDS: list[Seeds] = []


@pytest.fixture(scope="module", autouse=True)
def _setup(tmp_path_factory):
    """A scratch directory for the examples, also the working directory (no command writes into the
    checkout, whatever its defaults), with no GitHub step summary to append to; and the seeds."""
    base = tmp_path_factory.mktemp("fuzz")
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(base)
        mp.delenv("GITHUB_STEP_SUMMARY", raising=False)
        WORK.append(base)
        SEEDS.append(make_seeds(base))
        yield
        WORK.clear()
        SEEDS.clear()


def make_seeds(work: Path) -> Seeds:
    from rmqcheck.traces.stores import BAK, FILE, format_epoch_file

    made = work / "seeds"
    assert cli(["simulate", "--runs", "4", "--out", made / "nd", "--steps", "20"]).status == 0
    assert cli(["simulate", "--runs", "4", "--out", made / "pq", "--steps", "20", "--format", "parquet"]).status == 0
    ndjson, = (made / "nd").glob("*.ndjson")
    parquet, = (made / "pq").glob("*.parquet")
    hunt = made / "hunt.json"
    assert cli(["hunt", "--bug", "ack_uses_local_sss_only", "--method", "guided", "--budget", "20",
                "--out", hunt]).status == 1
    cxs = {"hunt": hunt.read_bytes()}
    for name in AS_JSON:
        p = cxfiles.write(cxfiles.read(ROOT / "scenarios" / name), made / (Path(name).stem + ".json"))
        cxs[Path(name).stem] = p.read_bytes()
    epoch = {f"{r}/{FILE}": format_epoch_file(e).encode() for r, e in EPOCH_SET.items()}
    epoch[f"broker-2/{BAK}"] = epoch[f"broker-2/{FILE}"]
    seeds = Seeds(ndjson.read_bytes(), pq.read_table(parquet), OPENCHAOS.read_bytes(), epoch, cxs,
                  {k: json.dumps(v, indent=1).encode() + b"\n" for k, v in CONFIG_SEEDS.items()})
    # The seeds themselves are valid: each verb gives a verdict on them.
    assert validate(made / "nd", made).status == 0
    assert validate(made / "pq", made).status == 0
    for name, data in seeds.epoch_set.items():
        (made / "stores" / "set-a" / name).parent.mkdir(parents=True, exist_ok=True)
        (made / "stores" / "set-a" / name).write_bytes(data)
    assert validate(made / "stores", made).status == 0
    assert validate(OPENCHAOS, made).status in (0, 1)
    for name in cxs:
        assert cli(["replay", made / f"{name}.json", "--quiet"]).status == 1
    return seeds


def validate(path: Path, out: Path, *extra: str) -> Ran:
    """`rmqcheck validate PATH` on the local engine, its outputs under `out`."""
    return cli(["validate", path, "--engine", "local", "--quiet", "--violations", out / "violations.ndjson",
                "--rejected", out / "rejected.ndjson", *extra])


@contextlib.contextmanager
def example_dir():
    d = Path(tempfile.mkdtemp(dir=WORK[0], prefix="ex"))
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


def fuzz(max_examples: int, slow: int, **strategies) -> Callable:
    """Two tests of one body: `make test`'s (max_examples) and a `slow` one (slow examples)."""

    def make(body):
        fast = settings(max_examples=max_examples, **COMMON)(given(**strategies)(body))
        many = pytest.mark.slow(settings(max_examples=slow, **COMMON)(given(**strategies)(body)))
        return fast, many

    return make


# --- NDJSON trace corpora --------------------------------------------------------------------------


def _ndjson(ops, skip):
    seeds = SEEDS[0]
    with example_dir() as d:
        corpus = d / "corpus"
        corpus.mkdir()
        part = corpus / "part-00000.ndjson"
        data = mutate(seeds.ndjson, ops)
        part.write_bytes(data)
        note(f"part file: {_show(data)}")
        ran = validate(corpus, d, *(["--skip-bad-records"] if skip else []))
        records = line_records(data)
        judge(ran, [part], corpus)
        if ran.status in (0, 1):
            assert records, f"a corpus with no records validated (exit {ran.status}): expected 2, nothing to validate"
            events, skipped = reported_events(ran), reported_skipped(ran)
            assert events + skipped == records, (
                f"the part file holds {records} records; validate reports {events} events and {skipped} skipped")


_ndjson_ops = st.lists(st.one_of(byte_op, line_op, number_op, json_op, config_field_op), min_size=1, max_size=3)
test_ndjson_corpus, test_ndjson_corpus_slow = fuzz(400, 5000, ops=_ndjson_ops, skip=st.booleans())(_ndjson)


# --- Parquet trace corpora -------------------------------------------------------------------------

PARQUET_TYPES = ["string", "float64", "int64", "uint64", "int8", "bool", "null", "binary", "list<int64>",
                 "list<string>", "decimal"]


def _arrow_type(name: str) -> pa.DataType:
    return {"string": pa.string(), "float64": pa.float64(), "int64": pa.int64(), "uint64": pa.uint64(),
            "int8": pa.int8(), "bool": pa.bool_(), "null": pa.null(), "binary": pa.binary(),
            "list<int64>": pa.list_(pa.int64()), "list<string>": pa.list_(pa.string()),
            "decimal": pa.decimal128(38, 0)}[name]


def _convert(v: Any, name: str) -> Any:
    try:
        return _convert_value(v, name)
    except (ValueError, OverflowError, TypeError):
        return None


def _convert_value(v: Any, name: str) -> Any:
    if v is None:
        return None
    if name in ("string", "binary"):
        s = v if isinstance(v, str) else json.dumps(v)
        return s.encode() if name == "binary" else s
    if name.startswith("list<"):
        items = v if isinstance(v, list) else [v]
        if name == "list<string>":
            return [json.dumps(x) for x in items]
        return [int(x) if isinstance(x, (int, float)) else 0 for x in items]
    if isinstance(v, list):
        v = len(v)
    if isinstance(v, str):
        v = len(v)
    if name == "bool":
        return bool(v)
    if name == "float64":
        return float(v)
    if name == "int8":
        return int(v) % 128
    if name == "uint64":
        return abs(int(v))
    return int(v)


def _column(values: list, prefer: pa.DataType) -> pa.Array:
    """The values as a column, in the preferred type when they fit, else the first that holds them."""
    for t in (prefer, None, pa.uint64(), pa.decimal128(38, 0), pa.float64()):
        try:
            return pa.array(values, type=t)
        except (pa.ArrowException, OverflowError, TypeError, ValueError):
            continue
    text = [None if v is None else v if isinstance(v, str) else json.dumps(v, default=repr) for v in values]
    return pa.array(text, type=pa.string())


def _values(col) -> list:
    """A column's values; a string column that is not UTF-8 (an earlier op) as bytes decoded with
    replacement characters."""
    try:
        return col.to_pylist()
    except UnicodeDecodeError:
        return [None if v is None else v.decode("utf-8", "replace") for v in col.cast(pa.binary()).to_pylist()]


def _nested(depth: int) -> tuple[pa.DataType, Any]:
    t, v = pa.int32(), 1
    for _ in range(depth):
        t, v = pa.list_(t), [v]
    return t, v


def mutate_table(table: pa.Table, ops: Sequence[tuple]) -> tuple[pa.Table, int | None]:
    """Apply table ops; (table, row group size to write with)."""
    group = None
    for op in ops:
        kind, n = op[0], table.num_rows
        cols = table.column_names
        if kind == "retype":
            i = op[1] % len(cols)
            values = _values(table.column(i))
            col = _column([_convert(v, op[2]) for v in values], _arrow_type(op[2])) if op[2] != "null" \
                else pa.nulls(n)
            table = table.set_column(i, cols[i], col)
        elif kind == "set" and n:
            i = op[2] % len(cols)
            values = _values(table.column(i))
            value = op[3]
            if value == LONG:
                value = EXPANSIONS[LONG]
            values[op[1] % n] = value
            table = table.set_column(i, cols[i], _column(values, table.schema.field(i).type))
        elif kind == "bad_utf8" and n:  # a string cell that is not UTF-8 (Parquet does not check)
            strings = [j for j, f in enumerate(table.schema) if pa.types.is_string(f.type)]
            if strings:
                i = strings[op[2] % len(strings)]
                values = table.column(i).cast(pa.binary()).to_pylist()
                values[op[1] % n] = op[3]
                raw = pa.array(values, type=pa.binary())
                col = pa.StringArray.from_buffers(len(raw), raw.buffers()[1], raw.buffers()[2], raw.buffers()[0])
                table = table.set_column(i, table.schema.field(i).name, col)
        elif kind == "deep" and n:
            i = op[2] % len(cols)
            t, v = _nested(op[3])
            values = [None] * n
            values[op[1] % n] = v
            table = table.set_column(i, cols[i], pa.array(values, type=t))
        elif kind == "drop_column":
            table = table.remove_column(op[1] % len(cols))
        elif kind == "extra_column":
            table = table.append_column(op[1], pa.array([0] * n, type=pa.int32()))
        elif kind in ("dup_row", "drop_row", "swap_rows", "shuffle_rows") and n:
            idx = list(range(n))
            if kind == "dup_row":
                idx.insert(op[2] % (n + 1), op[1] % n)
            elif kind == "drop_row":
                del idx[op[1] % n]
            elif kind == "swap_rows":
                i, j = op[1] % n, op[2] % n
                idx[i], idx[j] = idx[j], idx[i]
            else:
                random.Random(op[1]).shuffle(idx)
            table = table.take(pa.array(idx, type=pa.int64()))
        elif kind == "concat":
            table = pa.concat_tables([table] * op[1]) if op[1] else table.slice(0, 0)
        elif kind == "row_groups":
            group = op[1]
    return table, group


table_op = st.one_of(
    st.tuples(st.just("retype"), pos, st.sampled_from(PARQUET_TYPES)),
    st.tuples(st.just("set"), pos, pos, st.sampled_from([*EXTREME_INTS, float("nan"), float("inf"), -0.0, "NaN",
                                                         "Infinity", "", None, True, [], [2**63], LONG])),
    st.tuples(st.just("bad_utf8"), pos, pos, st.sampled_from([b"\xff", b"\xed\xa0\x80", b"MASTER\xc3"])),
    st.tuples(st.just("deep"), pos, pos, st.sampled_from([2, 10, 40])),
    st.tuples(st.just("drop_column"), pos),
    st.tuples(st.just("extra_column"), st.sampled_from(["zz", "v", ""])),
    st.tuples(st.just("dup_row"), pos, pos),
    st.tuples(st.just("drop_row"), pos),
    st.tuples(st.just("swap_rows"), pos, pos),
    st.tuples(st.just("shuffle_rows"), st.integers(0, 2**16)),
    st.tuples(st.just("concat"), st.integers(0, 2)),
    st.tuples(st.just("row_groups"), st.integers(1, 30)),
)


def _parquet(table_ops, byte_ops, skip):
    seeds = SEEDS[0]
    with example_dir() as d:
        corpus = d / "corpus"
        corpus.mkdir()
        part = corpus / "part-00000.parquet"
        table, group = mutate_table(seeds.parquet, table_ops)
        try:
            pq.write_table(table, part, row_group_size=group)
        except (pa.ArrowException, OSError) as exc:  # a table pyarrow will not write is no input
            note(f"pyarrow cannot write it: {exc}")
            return
        if byte_ops:
            part.write_bytes(mutate(part.read_bytes(), byte_ops))
        try:
            records = pq.ParquetFile(part).metadata.num_rows
        except Exception:  # noqa: BLE001 - whatever pyarrow says, the file has no readable row count
            records = None
        note(f"schema: {table.schema}; rows: {records}")
        ran = validate(corpus, d, *(["--skip-bad-records"] if skip else []))
        judge(ran, [part], corpus)
        if ran.status in (0, 1):
            assert records is not None, "validate accepted a Parquet file whose footer pyarrow cannot read"
            assert records, f"a corpus with no records validated (exit {ran.status}): expected 2, nothing to validate"
            events, skipped = reported_events(ran), reported_skipped(ran)
            assert events + skipped == records, (
                f"the part file holds {records} rows; validate reports {events} events and {skipped} skipped")


test_parquet_corpus, test_parquet_corpus_slow = fuzz(
    300, 3000, table_ops=st.lists(table_op, max_size=3),
    byte_ops=st.lists(st.one_of(st.tuples(st.just("truncate"), pos),
                                st.tuples(st.just("flip"), pos, st.integers(0, 7))), max_size=1),
    skip=st.booleans())(_parquet)


# --- OpenChaos histories ---------------------------------------------------------------------------


def _history(ops, skip):
    seeds = SEEDS[0]
    with example_dir() as d:
        path = d / "openchaos-queue-history"
        data = mutate(seeds.history, ops)
        path.write_bytes(data)
        note(f"history: {_show(data)}")
        ran = validate(path, d, *(["--skip-bad-records"] if skip else []))
        judge(ran, [path], path)
        if ran.status in (0, 1):
            records = line_records(data)
            assert records, f"an empty OpenChaos history validated (exit {ran.status}): expected 2, nothing to validate"
            skipped = reported_skipped(ran)
            counts = {f"{n:,}" for n in (records, records - skipped)}
            said = re.findall(r"(?<![\d,.])([\d,]+)\s+(?:[\w-]+\s+){0,2}?(?:records?|lines?|entries|operations?)\b",
                              _words(ran.out))
            assert counts & set(said), (
                f"the history holds {records} records ({skipped} skipped); validate reports no such count: "
                f"{_words(ran.out)[:300]!r}")


test_openchaos_history, test_openchaos_history_slow = fuzz(
    300, 4000, ops=st.lists(st.one_of(byte_op, line_op, number_op, tsv_op), min_size=1, max_size=3),
    skip=st.booleans())(_history)


# --- epoch files -----------------------------------------------------------------------------------

def to_int(text: str) -> int:
    """A decimal integer of any length (Python refuses to convert more than 4,300 digits; beyond 100
    digits the magnitude is all that matters here)."""
    digits = text.lstrip("+-")
    if len(digits) > 100:
        return -(10**100) if text.startswith("-") else 10**100
    return int(text)


INT32 = (-(2**31), 2**31 - 1)
INT64 = (-(2**63), 2**63 - 1)


def java_refuses(data: bytes) -> bool:
    """Whether RocketMQ's CheckpointFile.read (Integer.parseInt count and crc lines) and
    EpochEntrySerializer.fromLine (Integer.parseInt epoch, Long.parseLong start) throw
    NumberFormatException on a plain decimal number out of range, so the store cannot start.
    Only for clean ASCII text with \\n line ends, where line splitting agrees."""
    try:
        text = data.decode("ascii")
    except UnicodeDecodeError:
        return False
    if "\r" in text:
        return False
    lines = text.split("\n")
    if len(lines) < 2 or not all(re.fullmatch(r"-?\d+", x) for x in lines[:2]):
        return False
    if any(not INT32[0] <= to_int(x) <= INT32[1] for x in lines[:2]):
        return True
    for line in lines[2:]:
        m = re.fullmatch(r"(\d+)-(\d+)", line)
        if m and (to_int(m[1]) > INT32[1] or to_int(m[2]) > INT64[1]):
            return True
    return False


def _unchecked(data: bytes) -> bytes:
    """Count and crc lines rewritten so the entries are read (count of `a-b` lines, crc 0: unchecked)."""
    lines = data.split(b"\n")
    entries = [x for x in lines[2:] if len(x.split(b"-")) == 2]
    return b"\n".join([str(len(entries)).encode(), b"0", *lines[2:]])


def _epoch(target, ops, header, special):
    from rmqcheck.traces.stores import FILE

    seeds = SEEDS[0]
    with example_dir() as d:
        root = d / "stores"
        for name, content in seeds.epoch_set.items():
            (root / "set-a" / name).parent.mkdir(parents=True, exist_ok=True)
            (root / "set-a" / name).write_bytes(content)
        names = sorted(seeds.epoch_set)
        name = names[target % len(names)]
        path = root / "set-a" / name
        data = mutate(path.read_bytes(), ops)
        if header == "unchecked":
            data = _unchecked(data)
        path.write_bytes(data)
        if special == "directory":
            path.unlink()
            path.mkdir()
        elif special == "empty":
            data = b""
            path.write_bytes(data)
        note(f"{name}: {_show(data)}")
        ran = validate(root, d)
        judge(ran, [path], root)
        if ran.status in (0, 1):
            m = re.search(r"([\d,]+) store sets", _words(ran.out))
            assert m and int(m[1]) == 1, f"one replica set given; validate reports {m and m[0]!r}"
        if special is None and name.endswith(FILE) and java_refuses(data):
            assert ran.status != 0, (
                "RocketMQ's parseInt/parseLong refuse a number of this epoch file (the store would not start), "
                "yet validate exits 0")


test_epoch_files, test_epoch_files_slow = fuzz(
    300, 4000, target=st.integers(0, 10), ops=st.lists(st.one_of(byte_op, line_op, number_op), min_size=1, max_size=3),
    header=st.sampled_from(["keep", "unchecked"]), special=st.sampled_from([None, None, None, "directory", "empty"]),
)(_epoch)


# --- counterexample JSON and scenario text: replay and scenario -----------------------------------

BROKER_ARGS = ("broker", "slave")


def _out_of_range_broker_json(data: bytes) -> str | None:
    """An action naming a broker outside 1..brokers of the file's configuration, if the file is a
    counterexample as far as that goes."""
    try:
        doc = json.loads(data)
    except (ValueError, RecursionError):
        return None
    if not isinstance(doc, dict) or not isinstance(doc.get("config"), dict) or not isinstance(doc.get("actions"), list):
        return None
    brokers = doc["config"].get("brokers", 2)
    if type(brokers) is not int or not 1 <= brokers <= 5:
        return None
    for a in doc["actions"]:
        if isinstance(a, dict) and isinstance(a.get("action"), str) and a["action"] in ACTIONS:
            for k in BROKER_ARGS:
                v = a.get(k)
                if type(v) is int and not 1 <= v <= brokers:
                    return f"{a['action']} {k}={v} with {brokers} brokers"
    return None


def _out_of_range_broker_scn(data: bytes) -> str | None:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    brokers, found = 2, []
    for raw in text.splitlines():
        words = raw.split("#", 1)[0].split()
        if not words:
            continue
        head, rest = words[0], words[1:]
        if head == "mode":
            return None  # classic, DLedger and recovery scenarios number their nodes otherwise
        if head == "config":
            for w in rest:
                if w.startswith("brokers=") and re.fullmatch(r"[1-5]", w[8:]):
                    brokers = int(w[8:])
        elif head in ACTIONS:
            for w in rest:
                k, _, v = w.partition("=")
                if k in BROKER_ARGS and re.fullmatch(r"-?\d+", v):
                    found.append((head, k, to_int(v)))
    for action, k, v in found:
        if not 1 <= v <= brokers:
            return f"{action} {k}={v} with {brokers} brokers"
    return None


def _counterexample(seed, ops, verb):
    seeds = SEEDS[0]
    with example_dir() as d:
        path = d / f"{seed}.json"
        data = mutate(seeds.counterexamples[seed], ops, per_line_json=False)
        path.write_bytes(data)
        note(f"counterexample: {_show(data)}")
        argv = ["replay", path, "--quiet"] if verb == "replay" else ["scenario", path]
        ran = cli(argv)
        judge(ran, [path])
        wrong = _out_of_range_broker_json(data)
        if verb == "replay" and wrong:
            assert ran.status == 2, f"a counterexample naming a broker outside the configuration ({wrong}) replayed " \
                                    f"with exit {ran.status}"


_cx_ops = st.lists(st.one_of(json_op, json_op, byte_op, line_op, number_op), min_size=1, max_size=3)
test_counterexample_json, test_counterexample_json_slow = fuzz(
    400, 5000, seed=st.sampled_from(["hunt", *(Path(n).stem for n in AS_JSON)]), ops=_cx_ops,
    verb=st.sampled_from(["replay", "scenario"]))(_counterexample)


def _scenario(seed, ops, verb):
    seeds = SEEDS[0]
    with example_dir() as d:
        path = d / Path(seed).name
        data = mutate((ROOT / "scenarios" / seed).read_bytes(), ops)
        path.write_bytes(data)
        note(f"scenario: {_show(data)}")
        argv = ["replay", path, "--quiet"] if verb == "replay" else ["scenario", path]
        ran = cli(argv)
        judge(ran, [path])
        wrong = _out_of_range_broker_scn(data)
        if verb == "replay" and wrong:
            assert ran.status == 2, f"a scenario naming a broker outside the configuration ({wrong}) replayed " \
                                    f"with exit {ran.status}"


test_scenario_text, test_scenario_text_slow = fuzz(
    500, 6000, seed=st.sampled_from(SCENARIOS),
    ops=st.lists(st.one_of(scn_op, scn_op, byte_op, line_op, number_op), min_size=1, max_size=3),
    verb=st.sampled_from(["replay", "scenario"]))(_scenario)


# --- configuration JSON: hunt --config and simulate --config --------------------------------------

_config_ops = st.lists(st.one_of(json_op, json_op, byte_op, number_op), min_size=1, max_size=3)


def _config(seed, ops, verb, hunt_args):
    seeds = SEEDS[0]
    with example_dir() as d:
        path = d / f"{seed}.json"
        data = mutate(seeds.configs[seed], ops, per_line_json=False)
        path.write_bytes(data)
        note(f"configuration: {_show(data)}")
        if verb == "hunt":
            ran = cli(["hunt", "--config", path, *hunt_args, "--out", d / "found.json"])
        else:
            ran = cli(["simulate", "--config", path, "--runs", "1", "--out", d / "corpus", "--steps", "20"])
        judge(ran, [path])


@pytest.mark.heavy
@settings(max_examples=100, **COMMON)
@given(seed=st.sampled_from(sorted(CONFIG_SEEDS)), ops=_config_ops, verb=st.sampled_from(["hunt", "simulate"]))
def test_config_json(seed, ops, verb):
    """hunt --config FILE (walk, a 0.2 s budget, to keep `make test` short) and simulate --config FILE."""
    _config(seed, ops, verb, hunt_args=("--method", "walk", "--budget", "0.2"))


@pytest.mark.slow
@settings(max_examples=300, **COMMON)
@given(seed=st.sampled_from(sorted(CONFIG_SEEDS)), ops=_config_ops, verb=st.sampled_from(["hunt", "simulate"]))
def test_config_json_slow(seed, ops, verb):
    """As test_config_json, with hunt's default (stateful) method and `--budget 1`: a hunt that
    overruns its budget by far (WATCHDOG) fails as a hang."""
    _config(seed, ops, verb, hunt_args=("--budget", "1"))


# --- output paths (issue 40) -------------------------------------------------------------------------
#
# Every output option of a verb gets a path drawn from a pool of the careless and the hostile: an
# input of the same command, a symbolic link to it, a character or block device (nodes of our own,
# made as root; /dev/null otherwise), a folder, a file that exists, a link to nothing, a path below a
# file, or the path another output option was given. The oracle: no input changes, no special file or
# link changes type, and the exit status is 0, 1 or 2 with a message.

OUTPUT_KINDS = ("new", "existing", "input", "input_link", "link", "dangling", "char", "block", "folder",
                "below_file", "corpus", "same")
VERBS = {
    "validate": ("--violations", "--rejected", "--junit", "--summary-json"),
    "hunt": ("--out", "--junit", "--summary-json"),
    "simulate": ("--out",),
    "report": ("--out",),
}


def _pool(d: Path) -> dict[str, Path]:
    import os
    import stat

    corpus = d / "corpus"
    corpus.mkdir()
    (corpus / "part-00000.ndjson").write_bytes(SEEDS[0].ndjson)
    (corpus / "cx.scn").write_bytes((ROOT / "scenarios" / SCENARIOS[0]).read_bytes())
    (d / "existing.txt").write_text("keep")
    (d / "folder").mkdir()
    (d / "folder" / "inside.txt").write_text("keep")
    (d / "input_link").symlink_to(corpus / "part-00000.ndjson")
    (d / "link").symlink_to(d / "existing.txt")
    (d / "dangling").symlink_to(d / "nowhere" / "x")
    pool = {"new": d / "new.out", "existing": d / "existing.txt", "input": corpus / "part-00000.ndjson",
            "input_link": d / "input_link", "link": d / "link", "dangling": d / "dangling", "folder": d / "folder",
            "below_file": d / "existing.txt" / "x", "corpus": corpus, "char": Path(os.devnull), "block": None}
    if os.geteuid() == 0:
        os.mknod(d / "char", 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        os.mknod(d / "block", 0o600 | stat.S_IFBLK, os.makedev(7, 200))
        pool["char"], pool["block"] = d / "char", d / "block"
    return pool


def _kinds(pool: dict[str, Path | None]) -> dict[Path, str]:
    """What each existing path of the pool is (links not followed), to compare after the run."""
    import stat

    out = {}
    for p in pool.values():
        if p is not None and (p.exists() or p.is_symlink()):
            mode = p.lstat().st_mode
            out[p] = next(name for test, name in ((stat.S_ISLNK, "link"), (stat.S_ISCHR, "char"),
                                                 (stat.S_ISBLK, "block"), (stat.S_ISFIFO, "fifo"),
                                                 (stat.S_ISDIR, "folder"), (stat.S_ISREG, "file")) if test(mode))
    return out


def _inputs(d: Path, verb: str) -> dict[Path, bytes]:
    """The files `verb` reads: every file of the corpus (validate), its counterexample (report)."""
    files = {"validate": (d / "corpus").rglob("*"), "report": [d / "corpus" / "cx.scn"]}.get(verb, [])
    return {p: p.read_bytes() for p in files if p.is_file()}


def _outputs(verb, kinds, force):
    with example_dir() as d:
        pool = _pool(d)
        chosen: list[Path] = []
        argv: list[Any] = [verb]
        for option, kind in zip(VERBS[verb], kinds):
            path = chosen[-1] if kind == "same" and chosen else pool[kind if kind != "same" else "new"]
            if path is None:  # no block device without root
                path = pool["new"]
            chosen.append(path)
            argv += [option, path]
        if verb == "validate":
            argv += [pool["corpus"], "--quiet"]
        elif verb == "hunt":
            argv += ["--method", "walk", "--budget", "0.2"]
        elif verb == "simulate":
            argv += ["--runs", "2", "--steps", "10", *(["--force"] if force else [])]
        else:
            argv += ["--counterexamples", pool["corpus"] / "cx.scn"]
        note(f"outputs: {list(zip(VERBS[verb], kinds))}")
        before_kinds, before = _kinds(pool), _inputs(d, verb)
        ran = cli(argv)
        judge(ran, [*chosen, pool["corpus"]])
        assert _inputs(d, verb) == before, "an input changed"
        after = _kinds(pool)
        assert {p: after.get(p) for p in before_kinds} == before_kinds, "a special file, link or folder changed type"


test_output_paths, test_output_paths_slow = fuzz(
    60, 600, verb=st.sampled_from(sorted(VERBS)), kinds=st.lists(st.sampled_from(OUTPUT_KINDS), min_size=4, max_size=4),
    force=st.booleans())(_outputs)
