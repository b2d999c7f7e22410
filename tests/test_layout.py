"""The layout (issue 25): commands on top, then the report, then checkers and traces side by
side, then the invariants, the model at the ground floor; no import goes back up, and every
module stays under 500 lines unless its docstring says why one rule set belongs together."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = {"model": "rmqcheck.model", "invariants": "rmqcheck.invariants", "checkers": "rmqcheck.checkers",
           "traces": "rmqcheck.traces", "report": "rmqcheck.report", "rmqcheck": "rmqcheck"}

# (floor, column): an import must go to a lower floor, or stay in its own column on the same floor.
FLOORS = [
    ("rmqcheck.commands", 6, "commands"),
    ("rmqcheck.cli", 6, "commands"),
    ("rmqcheck.__main__", 6, "commands"),
    ("rmqcheck.pytest_plugin", 6, "commands"),
    ("rmqcheck.report", 5, "report"),
    ("rmqcheck.checkers.tables", 4, "checkers"),
    ("rmqcheck.checkers.search", 3, "checkers"),
    ("rmqcheck.checkers.proofs", 3, "checkers"),
    ("rmqcheck.checkers.java", 3, "checkers"),
    ("rmqcheck.checkers.cluster", 3, "checkers"),
    ("rmqcheck.checkers.counterexamples", 2, "checkers"),
    ("rmqcheck.checkers", 2, "checkers"),  # the package itself
    ("rmqcheck.traces", 2.5, "traces"),
    ("rmqcheck.invariants", 1, "invariants"),
    ("rmqcheck.model", 0, "model"),
    # Utilities every floor above the model may use: writing files whole, worker processes.
    ("rmqcheck.outputs", 0, "utilities"),
    ("rmqcheck.processes", 0, "utilities"),
    ("rmqcheck", 0, "model"),  # rmqcheck/__init__.py: only the version
]


def place(module: str) -> tuple[float, str]:
    for prefix, floor, column in FLOORS:
        if module == prefix or module.startswith(prefix + "."):
            return floor, column
    raise AssertionError(f"{module} has no place in the layout")


def modules() -> dict[str, Path]:
    out = {}
    for folder, package in FOLDERS.items():
        for path in sorted((ROOT / folder).rglob("*.py")):
            rel = path.relative_to(ROOT / folder).with_suffix("")
            if folder == "rmqcheck" and rel.parts[0] in FOLDERS:
                continue  # the links to the concern folders
            parts = [p for p in rel.parts if p != "__init__"]
            out[".".join([package, *parts])] = path
    return out


def imports(module: str, path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            found.add(base)
            found |= {f"{base}.{a.name}" for a in node.names}
    return {m for m in found if m == "rmqcheck" or m.startswith("rmqcheck.")}


def test_no_import_goes_back_up():
    mods = modules()
    bad = []
    for module, path in mods.items():
        floor, column = place(module)
        for target in imports(module, path):
            if target not in mods and target.rpartition(".")[0] in mods:
                target = target.rpartition(".")[0]  # `from package import name` of a non-module
            if target not in mods or target == module:
                continue
            t_floor, t_column = place(target)
            if t_floor > floor or (t_floor == floor and t_column != column) or \
                    {column, t_column} == {"checkers", "traces"}:
                bad.append(f"{module} imports {target}")
    assert not bad, "imports against the layout:\n" + "\n".join(bad)


def test_the_model_imports_only_itself():
    mods = modules()
    for module, path in mods.items():
        if module.startswith("rmqcheck.model"):
            outside = {t for t in imports(module, path) if not t.startswith("rmqcheck.model")}
            assert not outside, f"{module} imports {outside}"


def test_modules_are_small_or_say_why():
    for module, path in modules().items():
        lines = len(path.read_text().splitlines())
        doc = ast.get_docstring(ast.parse(path.read_text())) or ""
        assert lines < 500 or "One module on purpose" in doc, f"{path.relative_to(ROOT)}: {lines} lines"


def test_the_layout_check_can_fail(tmp_path, monkeypatch):
    """A model module importing a checker is caught."""
    fake = {"rmqcheck.model.bad": tmp_path / "bad.py", "rmqcheck.checkers.search.walk": tmp_path / "walk.py"}
    fake["rmqcheck.model.bad"].write_text("from rmqcheck.checkers.search import walk\n")
    fake["rmqcheck.checkers.search.walk"].write_text("")
    monkeypatch.setattr(__import__(__name__), "modules", lambda: fake)
    try:
        test_no_import_goes_back_up()
    except AssertionError as exc:
        assert "rmqcheck.model.bad imports rmqcheck.checkers.search.walk" in str(exc)
    else:
        raise AssertionError("the layout check let a model module import a checker")
