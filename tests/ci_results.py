"""Reading what a judging command wrote for CI, as a CI system would: the JUnit XML through
junitparser (a JUnit reader; it refuses what is not JUnit), the summary through its JSON Schema."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
from junitparser import Error, Failure, JUnitXml, Skipped

from rmqcheck.report.ci import SCHEMA


def junit_cases(path: Path) -> dict[str, tuple[str, str, str]]:
    """{suite/case: (outcome, message, text)} of a JUnit file."""
    xml = JUnitXml.fromfile(str(path))
    cases = {}
    for suite in xml:
        total = 0
        for case in suite:
            total += 1
            outcome, message, text = "passed", "", ""
            for r in case.result:
                outcome = {Failure: "failed", Error: "error", Skipped: "skipped"}[type(r)]
                message, text = r.message or "", r.text or ""
            cases[f"{suite.name}/{case.name}"] = (outcome, message, text)
        assert suite.tests == total, f"{path}: suite {suite.name} says {suite.tests} tests, holds {total}"
    return cases


def summary(path: Path) -> dict:
    data = json.loads(path.read_text())
    jsonschema.Draft202012Validator(json.loads(SCHEMA.read_text())).validate(data)
    return data
