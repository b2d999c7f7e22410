"""What a CI system reads: every judging command's verdicts as test cases, written as JUnit XML
(`--junit`), as a versioned JSON summary (`--summary-json`, schema in summary.schema.json) and,
when `GITHUB_STEP_SUMMARY` is set, as Markdown appended to GitHub's job summary.

A case is one configuration, toggle, proof, invariant or validation check. Its outcome:
`passed`, `failed` (a violation the configuration promises against, or a divergence from
RocketMQ's code: exit status 1), `skipped` (not run, and why), or `error` (bad usage or input:
exit status 2). A failure names the invariant and the file that shows it, with its replay
command."""

from __future__ import annotations

import json
import os
import socket
import time
import xml.etree.ElementTree as ET
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Sequence

from rmqcheck.outputs import OutputError, write_atomically

SCHEMA_VERSION = 1
SCHEMA = Path(__file__).with_name("summary.schema.json")
OUTCOMES = ("passed", "failed", "skipped", "error")
VERDICTS = {0: "passed", 1: "violated", 2: "error", 130: "interrupted"}
# Longest message kept in a case (CI pages show the first lines; the files hold the rest).
MESSAGE_LIMIT = 2000


@dataclass
class Case:
    suite: str
    name: str
    outcome: str = "passed"
    message: str = ""
    invariant: str | None = None
    file: str | None = None
    seconds: float | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def replay(self) -> str | None:
        """Counterexamples (.json) and scenarios (.scn) replay; a violations file (.ndjson) is read."""
        return f"rmqcheck replay {self.file}" if self.file and self.file.endswith((".json", ".scn")) else None

    def text(self) -> str:
        """The failure text: the message, then the invariant, the file and the replay command."""
        parts = [self.message] if self.message else []
        if self.invariant:
            parts.append(f"invariant: {self.invariant}")
        if self.file:
            parts.append(f"file: {self.file}" + (f"   (replay: {self.replay})" if self.replay else ""))
        return "\n".join(parts)


def _clip(text: str) -> str:
    if len(text) <= MESSAGE_LIMIT:
        return text
    return f"{text[:MESSAGE_LIMIT]}... ({len(text):,} characters in all)"


class Results:
    """The cases one command run judged. Commands add cases; the command line writes them."""

    def __init__(self, command: str, argv: Sequence[str]) -> None:
        self.command = command
        self.argv = list(argv)
        self.started = datetime.now(timezone.utc)
        self._clock = time.perf_counter()
        self.cases: list[Case] = []

    def add(self, suite: str, name: str, outcome: str = "passed", message: str = "", *,
            invariant: str | None = None, file: str | Path | None = None, seconds: float | None = None,
            notes: Sequence[str] = ()) -> Case:
        if outcome not in OUTCOMES:
            raise ValueError(f"outcome {outcome!r} is not one of {OUTCOMES}")
        case = Case(suite, name, outcome, _clip(message), invariant, None if file is None else str(file), seconds,
                    [_clip(n) for n in notes])
        self.cases.append(case)
        return case

    def counts(self) -> dict[str, int]:
        return {o: sum(c.outcome == o for c in self.cases) for o in OUTCOMES}

    # --- the three forms -------------------------------------------------------------------------

    def summary(self, status: int) -> dict:
        from rmqcheck import __version__

        return {
            "schema": "rmqcheck-summary",
            "schema_version": SCHEMA_VERSION,
            "rmqcheck_version": __version__,
            "command": self.command,
            "argv": self.argv,
            "started": self.started.isoformat(timespec="seconds"),
            "seconds": round(time.perf_counter() - self._clock, 3),
            "exit_status": status,
            "verdict": VERDICTS.get(status, "error"),
            "counts": self.counts(),
            "cases": [{**asdict(c), "replay": c.replay} for c in self.cases],
        }

    def junit(self, status: int) -> str:
        seconds = time.perf_counter() - self._clock
        counts = self.counts()
        root = ET.Element("testsuites", name=f"rmqcheck {self.command}", tests=str(len(self.cases)),
                          failures=str(counts["failed"]), errors=str(counts["error"]),
                          skipped=str(counts["skipped"]), time=f"{seconds:.3f}")
        suites: dict[str, list[Case]] = {}
        for c in self.cases:
            suites.setdefault(c.suite, []).append(c)
        for name, cases in suites.items():
            per = {o: sum(c.outcome == o for c in cases) for o in OUTCOMES}
            suite = ET.SubElement(root, "testsuite", name=name, tests=str(len(cases)), failures=str(per["failed"]),
                                  errors=str(per["error"]), skipped=str(per["skipped"]),
                                  time=f"{sum(c.seconds or 0 for c in cases):.3f}",
                                  timestamp=self.started.strftime("%Y-%m-%dT%H:%M:%S"),
                                  hostname=socket.gethostname())
            for c in cases:
                case = ET.SubElement(suite, "testcase", classname=f"rmqcheck.{self.command}.{name}", name=c.name,
                                     time=f"{c.seconds or 0:.3f}")
                if c.outcome == "failed":
                    ET.SubElement(case, "failure", message=c.message.splitlines()[0] if c.message else "failed",
                                  type=c.invariant or "violation").text = c.text()
                elif c.outcome == "error":
                    ET.SubElement(case, "error", message=c.message.splitlines()[0] if c.message else "error",
                                  type="error").text = c.text()
                elif c.outcome == "skipped":
                    ET.SubElement(case, "skipped", message=c.message)
                if c.notes:
                    ET.SubElement(case, "system-out").text = "\n".join(c.notes)
        ET.indent(root)
        return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"

    def markdown(self, status: int) -> str:
        counts = self.counts()
        icon = {"passed": "✅", "failed": "❌", "skipped": "⏭️", "error": "⚠️"}
        lines = [f"### rmqcheck {self.command}: {VERDICTS.get(status, 'error')} (exit {status})", "",
                 ", ".join(f"{n} {o}" for o, n in counts.items() if n) or "no cases", "",
                 "| | suite | case | what |", "|---|---|---|---|"]
        for c in self.cases:
            what = c.text().replace("|", "\\|").replace("\n", "<br>")
            lines.append(f"| {icon[c.outcome]} | {c.suite} | {c.name} | {what} |")
        return "\n".join(lines) + "\n\n"


def write_all(results: Results, status: int, junit: Path | None, summary_json: Path | None) -> None:
    """The results for CI; OutputError naming the option and path of one that cannot be written."""
    for option, path, text in (("--junit", junit, lambda: results.junit(status)),
                               ("--summary-json", summary_json,
                                lambda: json.dumps(results.summary(status), indent=1) + "\n")):
        if path is not None:
            try:
                write_atomically(path, text())
            except OSError as exc:
                raise OutputError(f"{option} {path}: cannot be written: {exc.strerror or exc}") from None
    step_summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if step_summary:
        try:
            with open(step_summary, "a", encoding="utf-8") as f:
                f.write(results.markdown(status))
        except OSError as exc:
            raise OutputError(f"$GITHUB_STEP_SUMMARY {step_summary}: cannot be written: {exc.strerror or exc}") from None
