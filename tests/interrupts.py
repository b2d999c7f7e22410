"""Child processes that a test interrupts with SIGINT. pytest-xdist's workers ignore SIGINT (the
controller handles Ctrl-C), and an ignored signal stays ignored across exec: Python then never
installs its KeyboardInterrupt handler, so a child started from a worker would not see Ctrl-C at
all. A test that sends SIGINT starts its child with `**INTERRUPTIBLE`."""

from __future__ import annotations

import signal


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


INTERRUPTIBLE = {"preexec_fn": _default_sigint}
