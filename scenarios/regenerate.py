"""Regenerate the regression scenarios from seeded hunts.

    .venv/bin/python scenarios/regenerate.py [--budget SECONDS] [NAME ...]

toggles/<toggle>.scn: the minimal counterexample of a hunt of the intended baseline plus that
toggle (and the toggles it needs), under the toggle's exposing configuration. toggles/<toggle>--<invariant>.scn: the same
hunt for one end-to-end invariant only (minimal counterexamples stop at the first, usually an
early-warning one). expected/<name>.scn: a guarantee that a configuration gives up, found by
hunting that configuration for one invariant. A hunt that finds nothing leaves the existing
file alone and says so.

The consistent-point variants of `rmqcheck prove` (checkers/proofs/truncation.py) get toggles/<toggle>.scn
from their Z3 counterexample instead: a start built from the two epoch lists (`replica` lines),
then the handshake. What a hunt from the empty cluster finds for them goes to
toggles/<toggle>--<invariant>.scn.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rmqcheck.model import configs
from rmqcheck.checkers.proofs import truncation as proofs
from rmqcheck.checkers.counterexamples.files import format_scenario
from rmqcheck.checkers.search.hunting import find
from rmqcheck.invariants.catalogue import expected_ids
from rmqcheck.model.bugs import BY_NAME, TOGGLES

HERE = Path(__file__).parent

# End-to-end invariants shown on a toggle, hunted for that invariant alone.
TARGETED = (
    ("ack_uses_local_sss_only", "I1"),
    ("confirm_min_over_connected_only", "I3"),
    ("confirm_min_over_connected_only", "I11"),
)

# Guarantees the snapshot gives up under a configuration, hunted as (config, invariant).
EXPECTED = {
    "defaults-lose-acked-messages": (
        {},
        "I1",
        "the defaults (allAckInSyncStateSet=false, inSyncReplicas=1, ASYNC_FLUSH) ack before "
        "anything is durable or replicated",
    ),
    "async-flush-divergent-replicas": (
        {"bugs": []}, "I5", "ASYNC_FLUSH: a master re-confirmed at its epoch after a crash rewrites offsets whose lost "
                  "bytes a slave still holds under the same (epoch, start); the handshake keeps them"),
    "c4-deposed-master-acks-alone": (
        {"flush": "SYNC_FLUSH"},
        "I1",
        "C4 / apache/rocketmq#7017: even with SYNC_FLUSH, inSyncReplicas=1 lets a master ack what no other replica has",
    ),
}


def main(argv=None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--budget", type=float, default=120)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("names", nargs="*")
    args = p.parse_args(argv)
    missing = 0
    for t in TOGGLES:
        if args.names and t.name not in args.names:
            continue
        variant = proofs.VARIANT_BY_TOGGLE.get(t.name)
        proved_one = variant is not None and variant.breaks.startswith("3")
        if proved_one:
            outcome = proofs.refute(variant, 8)
            cx = proofs.counterexample(outcome, variant)
            path = HERE / "toggles" / f"{t.name}.scn"
            title = (f"{t.name} ({t.ref}): the Z3 counterexample to {variant.breaks}, as logs the handshake meets: "
                     f"{cx.message}")
            path.write_text(format_scenario(cx, title))
            print(f"{t.name}: {cx.invariant} from a constructed start in {len(cx.actions)} steps -> {path}")
        cfg = configs.exposing(frozenset({t.name}))
        finding, result = find(cfg, expected_ids(cfg), args.budget, args.seed)
        if finding is None:
            print(f"{t.name}: nothing found in {result.seconds:.0f}s; file left alone")
            missing += not proved_one
            continue
        title = f"{t.name} ({t.ref}, {t.source}): {finding.counterexample.message}"
        name = f"{t.name}--{finding.counterexample.invariant}" if proved_one else t.name
        path = HERE / "toggles" / f"{name}.scn"
        path.parent.mkdir(exist_ok=True)
        path.write_text(format_scenario(finding.counterexample, title))
        print(f"{t.name}: {finding.counterexample.invariant} in {len(finding.counterexample.actions)} steps -> {path}")
    for toggle, inv in TARGETED:
        name = f"{toggle}--{inv}"
        if args.names and name not in args.names:
            continue
        t = BY_NAME[toggle]
        cfg = configs.exposing(frozenset({toggle}))
        finding, result = find(cfg, {inv}, args.budget, args.seed)
        if finding is None:
            print(f"{name}: nothing found in {result.seconds:.0f}s; file left alone")
            missing += 1
            continue
        path = HERE / "toggles" / f"{name}.scn"
        title = f"{toggle} ({t.ref}, {t.source}) seen end to end: {finding.counterexample.message}"
        path.write_text(format_scenario(finding.counterexample, title))
        print(f"{name}: {len(finding.counterexample.actions)} steps -> {path}")
    for name, (overrides, inv, why) in EXPECTED.items():
        if args.names and name not in args.names:
            continue
        cfg = configs.from_dict(overrides, name)
        finding, result = find(cfg, {inv}, args.budget, args.seed)
        if finding is None:
            print(f"{name}: nothing found in {result.seconds:.0f}s; file left alone")
            missing += 1
            continue
        path = HERE / "expected" / f"{name}.scn"
        path.parent.mkdir(exist_ok=True)
        path.write_text(format_scenario(finding.counterexample, f"{why}: {finding.counterexample.message}"))
        print(f"{name}: {inv} in {len(finding.counterexample.actions)} steps -> {path}")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
