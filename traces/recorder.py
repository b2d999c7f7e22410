"""The recorder: runs of the model with random faults, written as v1 event traces.

Run i of a corpus with seed S walks from the initial state with `random.Random(f"{S}:{i}")`,
taking a random enabled action at each step (faults within the configuration's budget), and
records every transition with the observable state after it (traces/schema.py). Runs cycle
through the named configurations, so a corpus covers several broker sets and settings.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, NamedTuple

from rmqcheck.model import configs
from rmqcheck.model import commitlog as cl
from rmqcheck.model.broker import max_phy
from rmqcheck.model.config import Config
from rmqcheck.model.step import ACTIONS, Action, candidates, initial_state
from rmqcheck.model.world import State
from rmqcheck.processes import workers

from .files import part_name, write_part
from .schema import RUN_END, RUN_START, VERSION
from .stores import FILE, format_epoch_file

# The configurations a corpus cycles through by default: the durable settings, under which no
# client guarantee may break, so a default corpus validates clean (duplicates aside).
CORPUS_CONFIGS: tuple[str, ...] = ("durable", "durable3")
_NODE_ARGS = ("broker", "slave")


def run_id(seed: int, index: int) -> str:
    return f"s{seed}-r{index:08d}"


def held_messages(s: State) -> list[int]:
    """Ids of the messages that some broker's commit log holds whole."""
    return [m.id for m in s.msgs if any(cl.has_message(b.log, m) for b in s.brokers)]


# The post-state fields of a transition record, in this order (traces/schema.py documents them).
STATE_FIELDS = (
    "node", "up", "role", "epoch", "max_offset", "flushed", "confirm", "sss", "sss_epoch", "last_epoch",
    "last_epoch_start", "msg", "queue", "queue_offset", "status", "ctrl_master", "ctrl_epoch", "ctrl_sss",
    "ctrl_sss_epoch",
)
_NO_BROKER = (None,) * 11
_NO_MESSAGE = (None,) * 4


def observe(before: State, action: Action, after: State) -> tuple:
    """What a transition record says about the state after `action`, in STATE_FIELDS order
    (None where a field does not apply): the recorder writes it, conformance compares it."""
    kind = action[0]
    spec_args = ACTIONS[kind].args
    if spec_args and spec_args[0] in _NODE_ARGS:
        b = after.brokers[action[1] - 1]
        entries = b.epochs.entries
        node = (
            b.id, b.up, b.role, b.master_epoch, max_phy(b), b.log.flushed, b.confirm, sorted(b.sss),
            b.sss_epoch, entries[-1][0] if entries else -1, entries[-1][1] if entries else None,
        )
    else:
        node = _NO_BROKER
    message = _NO_MESSAGE
    if kind == "send" and len(after.sends) > len(before.sends):
        r = after.sends[-1]
        if r.msg is None:
            message = (None, None, None, r.status)
        else:
            m = after.msgs[r.msg - 1]
            message = (m.id, m.queue, m.queue_offset, r.status)
    elif kind == "consume" and len(after.reads) > len(before.reads):
        r = after.reads[-1]
        message = (r.msg, r.queue, r.queue_offset, None)
    elif kind in ("put_complete", "put_timeout"):
        m = after.msgs[action[2] - 1]
        message = (m.id, m.queue, m.queue_offset, next(r.status for r in after.sends if r.msg == m.id))
    c = after.ctrl.applied
    return node + message + (c.master, c.master_epoch, sorted(c.sss), c.sss_epoch)


def transition_record(before: State, action: Action, after: State) -> dict[str, Any]:
    """The schema-v1 fields of one transition (without run, group, seq); None fields left out."""
    rec: dict[str, Any] = {"kind": action[0], "args": list(action[1:])}
    rec.update((k, v) for k, v in zip(STATE_FIELDS, observe(before, action, after)) if v is not None)
    return rec


def random_step(s: State, cfg: Config, rng: random.Random) -> tuple[Action, State]:
    """A random enabled action and its successor: candidates are tried in a random order
    (cheaper than computing every successor; `tick` is always enabled)."""
    options = candidates(s, cfg)
    while True:
        a = options.pop(rng.randrange(len(options)))
        nxt = ACTIONS[a[0]].rule(s, cfg, *a[1:])
        if nxt is not None:
            return a, nxt


def write_stores(s: State, run_dir: Path) -> None:
    """Each broker's epochFileCheckpoint as the store directory would hold it (an empty list is
    never written: quirk Q2)."""
    for b in s.brokers:
        if b.epochs.disk:
            store = run_dir / f"broker-{b.id}"
            store.mkdir(parents=True, exist_ok=True)
            (store / FILE).write_text(format_epoch_file(b.epochs.disk))


Amend = Callable[[dict[str, Any]], dict[str, Any]]


def run_records(
    cfg: Config, run: str, group: str, start: State, steps: Iterable[tuple[Action, State, "Amend | None"]]
) -> Iterator[dict[str, Any]]:
    """The records of one run from `start`: run_start, one per (action, state after, amend), run_end.
    `amend(record)` gives fields that replace the model's observation (None: leave it out), for
    records whose fields another implementation decided."""
    head = {"v": VERSION, "run": run, "group": group}
    yield {**head, "seq": 0, "kind": RUN_START, "config": json.dumps(configs.to_dict(cfg), sort_keys=True)}
    s, seq = start, 0
    for action, nxt, amend in steps:
        seq += 1
        rec = {**head, "seq": seq, **transition_record(s, action, nxt)}
        for field, value in (amend(rec) if amend else {}).items():
            if value is None:
                rec.pop(field, None)
            else:
                rec[field] = value
        yield rec
        s = nxt
    yield {**head, "seq": seq + 1, "kind": RUN_END, "events": seq, "held": held_messages(s)}


def record_run(
    cfg: Config, run: str, group: str, rng: random.Random, steps: int, stores: Path | None = None
) -> Iterator[dict[str, Any]]:
    """The records of one run: run_start, `steps` transitions, run_end (and its stores' epoch
    files under `stores/<run>/` when asked)."""
    start = initial_state(cfg)
    end = [start]

    def walk() -> Iterator[tuple[Action, State, dict[str, Any]]]:
        s = start
        for _ in range(steps):
            a, s = random_step(s, cfg, rng)
            end[0] = s
            yield a, s, None

    yield from run_records(cfg, run, group, start, walk())
    if stores is not None:
        write_stores(end[0], stores / run)


class Corpus(NamedTuple):
    """What `rmqcheck simulate` records."""

    seed: int = 0
    runs: int = 100
    steps: int = 100  # transitions per run
    names: tuple[str, ...] = CORPUS_CONFIGS  # named configurations, cycled through
    snapshot: bool = False  # keep the snapshot's known defects on (default: the intended model)
    fmt: str = "ndjson"
    runs_per_file: int = 1000
    stores: bool = False  # also write each run's epoch files under stores/<run>/

    def config(self, index: int) -> tuple[str, Config]:
        name = self.names[index % len(self.names)]
        return name, configs.with_bugs(configs.load(name), frozenset(), self.snapshot)


def record(corpus: Corpus, first: int, count: int, stores: Path | None = None) -> Iterator[dict[str, Any]]:
    """Runs first .. first+count-1 of the corpus."""
    for i in range(first, first + count):
        name, cfg = corpus.config(i)
        rng = random.Random(f"{corpus.seed}:{i}")
        yield from record_run(cfg, run_id(corpus.seed, i), f"broker-{name}", rng, corpus.steps, stores)


def _write(args: tuple[Corpus, Path, int]) -> int:
    corpus, out, part = args
    first = part * corpus.runs_per_file
    count = min(corpus.runs_per_file, corpus.runs - first)
    stores = out / "stores" if corpus.stores else None
    return write_part(out / part_name(part, corpus.fmt), record(corpus, first, count, stores), corpus.fmt)


def simulate(corpus: Corpus, out: Path, jobs: int = 1) -> int:
    """Write the corpus to `out` as part files, `jobs` processes at a time; the event count."""
    out.mkdir(parents=True, exist_ok=True)
    parts = [(corpus, out, p) for p in range(-(-corpus.runs // corpus.runs_per_file))]
    if jobs <= 1 or len(parts) == 1:
        return sum(map(_write, parts))
    with workers(jobs) as pool:
        return sum(pool.imap(_write, parts))
