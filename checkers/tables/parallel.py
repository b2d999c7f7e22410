"""Independent, long checks (matrix rows, benchmark runs) spread over processes, or over a
Spark cluster's tasks."""

from __future__ import annotations

from typing import Any, Callable, Iterable, TypeVar

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


def spark_map(fn: Callable[[T], R], tasks: Iterable[T], spark: Any,
              on_result: Callable[[R], None] | None = None) -> list[R]:
    """`ordered_map` with one Spark task a check, scheduled as the cluster's cores allow;
    results in task order (handed to `on_result` when the job ends)."""
    items = list(tasks)
    if not items:
        return []
    rdd = spark.sparkContext.parallelize(list(enumerate(items)), len(items))
    pairs = sorted(rdd.map(lambda it: (it[0], fn(it[1]))).collect(), key=lambda p: p[0])
    results = [r for _, r in pairs]
    if on_result is not None:
        for r in results:
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
