"""Worker processes that leave Ctrl-C to the process that started them: it stops them all at
once (leaving the pool's `with` block terminates them), with one line and no worker's
traceback. Used by the matrix, the rediscovery table and `simulate --jobs`."""

from __future__ import annotations

import signal
from multiprocessing import Pool


def _ignore_interrupt() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def workers(jobs: int):
    return Pool(jobs, initializer=_ignore_interrupt)
