"""Time each proof of `rmqcheck prove` (checkers/proofs/truncation.py) at K = 8 and K = 10, and the
unbounded obligations. Prints seconds per check and the machine; no assertions.

    .venv/bin/python bench/prove.py
"""

from __future__ import annotations

import time

from stateful import machine  # bench/ is the script's directory

from rmqcheck.checkers.proofs import truncation as proofs


def main() -> None:
    print(f"machine: {machine()}")
    for k in (8, 10):
        started = time.perf_counter()
        for o in proofs.run_all(k):
            print(f"K={k:2d}  {o.id:45s} {o.result:15s} {o.seconds:7.2f}s")
        print(f"K={k:2d}  all checks: {time.perf_counter() - started:.1f}s")
    for line in proofs.unbounded_report():
        print(line)


if __name__ == "__main__":
    main()
