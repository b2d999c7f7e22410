"""`rmqcheck cluster --soak SECONDS`: one long run of the cluster under steady load and a fault
every few seconds (checkers/cluster/soak.py), then its record validated and judged as a seeded
run's is (cluster_runs.check_run, without the model's path: a soak records no steps). Not a
command of its own: cluster.py calls it."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

from rich.table import Table

from rmqcheck.checkers.cluster.harness import ClusterError
from rmqcheck.checkers.cluster.node import NodeError
from rmqcheck.checkers.cluster.soak import ACTIVITIES, soak
from rmqcheck.checkers.java.build import BuildError
from rmqcheck.checkers.java.driver import DriverError
from rmqcheck.model.config import Config
from rmqcheck.outputs import output_folder

from .cluster_runs import check_run
from .common import Bar, UsageError, out


def run_soak(args, cfg: Config) -> int:
    name = f"soak-{args.seed}"
    failed: Exception | None = None
    try:
        with Bar("soak", args.soak, timed=True) as bar, output_folder(args.out, "rmqcheck cluster") as partial:
            folder = partial / name
            try:
                r = soak(cfg, args.seed, args.soak, folder, args.rocketmq_src,
                         on_progress=lambda s, n: bar.update(f"{n:,} events, {n / max(s, 1e-9):,.0f}/s"))
            except (ClusterError, NodeError, OSError) as exc:  # kept with its logs (a full disk too)
                failed = exc
            else:
                started = time.perf_counter()
                found = [v for v in check_run(folder, cfg, by_model=False, shapes=True) if v[1] != "reported"]
                checked = time.perf_counter() - started
                if not found and not args.keep_stores:
                    shutil.rmtree(folder / "stores", ignore_errors=True)
    except (BuildError, DriverError) as exc:
        raise UsageError(f"the cluster could not start: {exc}") from None
    if failed is not None:
        raise UsageError(f"the soak's harness failed: {failed} (its files and logs: {Path(args.out) / name})")
    _print(r, checked, Path(args.out) / name)
    bad = [v for v in found if v[1] == "unexplained"]
    for c, kind, subject, detail in found[:20]:
        out.print(f"{c} ({kind}) {subject}: {detail}")
    if len(found) > 20:
        out.print(f"... and {len(found) - 20} more (rmqcheck validate {Path(args.out) / name} lists them all)")
    notes = [f"{len(r.undecodable)} reads served bytes that are not a message"] if r.undecodable else []
    notes += [f"a broker's command failed (killed and restarted): {t}" for t in r.troubles]
    if bad:
        c, _, subject, detail = bad[0]
        args.results.add("cluster", name, "failed", f"{c} violated (unexplained): {subject}: {detail}",
                         invariant=c, file=Path(args.out) / name, seconds=r.seconds, notes=notes)
        out.print(f"[bold red]{len(bad)} violations the configuration does not explain[/]")
        return 1
    args.results.add("cluster", name, seconds=r.seconds, notes=notes)
    return 0


def _print(r, checked: float, folder: Path) -> None:
    table = Table(title=f"rmqcheck cluster --soak: seed {r.seed}, {r.seconds:.0f} s of load")
    table.add_column("what")
    table.add_column("measured", overflow="fold")
    rate = r.events / max(r.seconds, 1e-9)
    table.add_row("events recorded", f"{r.events:,} ({rate:,.0f}/s) in {r.parts} history parts")
    table.add_row("puts", f"{r.sends:,}: " + ", ".join(f"{k} {v:,}" for k, v in sorted(r.statuses.items())))
    unread = f" ({len(r.undecodable)} reads not a message)" if r.undecodable else ""
    table.add_row("messages read", f"{r.reads:,}{unread}")
    table.add_row("faults", ", ".join(f"{k} {v}" for k, v in sorted(r.faults.items())) or "-")
    table.add_row("broker troubles", "\n".join(r.troubles) or "none (a broker whose command fails is restarted)")
    table.add_row("time spent", ", ".join(f"{a} {r.time_spent[a]:.0f} s" for a in ACTIVITIES))
    table.add_row("driver memory", ", ".join(f"{k} {v:.0f} MB" for k, v in r.rss_mb.items() if v is not None))
    table.add_row("validated", f"{r.events:,} events in {checked:.1f} s ({r.events / max(checked, 1e-9):,.0f}/s)")
    out.print(table)
    out.print(f"written to {folder}")
