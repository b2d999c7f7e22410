"""Worker processes that leave Ctrl-C to the process that started them: it stops them all at
once (leaving the pool's `with` block terminates them), with one line and no worker's
traceback. Used by the matrix, the rediscovery table and `simulate --jobs`."""

from __future__ import annotations

import signal
from multiprocessing import Pool


def _ignore_interrupt() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def workers(jobs: int):
    # Ctrl-C is held back while the workers are forked: CPython runs the fork's after-in-parent
    # callbacks (logging's lock release among them), and a KeyboardInterrupt raised in one of
    # those is printed as "Exception ignored" and lost, so the run went on for ever. Held back,
    # it arrives when the pool exists, where `with` stops the workers.
    held = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        pool = Pool(jobs, initializer=_ignore_interrupt)
    except BaseException:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)
        raise
    try:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)  # a Ctrl-C held back is raised here
    except KeyboardInterrupt:
        pool.terminate()
        raise
    return pool
