"""Independent, long checks (matrix rows, benchmark runs) spread over processes."""

from __future__ import annotations

from typing import Callable, Iterable, TypeVar

from rmqcheck.processes import workers

T = TypeVar("T")
R = TypeVar("R")


def ordered_map(fn: Callable[[T], R], tasks: Iterable[T], jobs: int = 1,
                on_result: Callable[[R], None] | None = None) -> list[R]:
    """`fn` over `tasks`, `jobs` processes at a time (in this process when jobs <= 1); results
    in task order, each handed to `on_result` as it comes."""
    results: list[R] = []
    with workers(jobs) if jobs > 1 else _Inline() as pool:
        for r in pool.imap(fn, tasks):
            results.append(r)
            if on_result:
                on_result(r)
    return results


class _Inline:
    """The executor interface, run in this process (no pickling, simple tracebacks)."""

    def __enter__(self) -> _Inline:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    @staticmethod
    def imap(fn: Callable, tasks: Iterable):
        return map(fn, tasks)
