"""Explorer throughput (`make bench`): distinct states/s, transitions/s and bytes per state on
std3 for BENCH_SECONDS, the state reduction from symmetry on a depth-bounded 3-broker space, and
the transitions sleep sets skip (and the time that saves) on depth-bounded std2 and std3.
One process, so one core."""

from __future__ import annotations

import os
import resource

from rmqcheck.checkers.search.explore import Explorer
from rmqcheck.checkers.search.named import STANDARD

from stateful import machine  # noqa: E402  (bench/ is on sys.path when run as a script)

SECONDS = float(os.environ.get("BENCH_SECONDS", "30"))


def rss_bytes() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def throughput(name: str) -> None:
    std = STANDARD[name]
    before = rss_bytes()
    r = Explorer(std.cfg, std.bounds).run(SECONDS)
    grown = rss_bytes() - before
    print(
        f"  explore {name} ({'symmetry' if std.bounds.symmetry else 'no symmetry'}): {r.states / r.seconds:8,.0f} "
        f"distinct states/s, {r.transitions / r.seconds:9,.0f} transitions/s, {grown / max(r.states, 1):,.0f} "
        f"bytes/state (peak RSS growth incl. the BFS queue), {r.states:,} states in {r.seconds:.0f}s ({r.stopped})",
        flush=True,
    )


def symmetry_factor() -> None:
    std = STANDARD["std3"]
    counts = {}
    for sym in (False, True):
        r = Explorer(std.cfg, std.bounds._replace(max_depth=12, symmetry=sym)).run()
        counts[sym] = (r.states, r.seconds)
    (plain, t0), (reduced, t1) = counts[False], counts[True]
    print(
        f"  symmetry on std3 to depth 12: {plain:,} -> {reduced:,} states ({plain / reduced:.2f}x fewer); "
        f"time {t0:.1f}s -> {t1:.1f}s"
    )


def sleep_set_factor(name: str, depth: int) -> None:
    std = STANDARD[name]
    runs = [Explorer(std.cfg, std.bounds._replace(max_depth=depth, sleep_sets=sleep)).run() for sleep in (False, True)]
    plain, reduced = runs
    assert reduced.levels == plain.levels
    print(
        f"  sleep sets on {name} to depth {depth}: {plain.states:,} states either way; transitions taken "
        f"{plain.transitions:,} -> {reduced.transitions:,} ({reduced.slept / plain.transitions:.0%} asleep); "
        f"time {plain.seconds:.1f}s -> {reduced.seconds:.1f}s ({plain.seconds / reduced.seconds:.2f}x)"
    )


def in_child(fn, *args) -> None:
    """Run in a forked process, so peak RSS is this measurement's own."""
    pid = os.fork()
    if pid == 0:
        fn(*args)
        os._exit(0)
    os.waitpid(pid, 0)


if __name__ == "__main__":
    print(f"rmqcheck explorer bench on {machine()}", flush=True)
    for name in ("std2", "std3"):
        in_child(throughput, name)
    symmetry_factor()
    sleep_set_factor("std2", 14)
    sleep_set_factor("std3", 11)
