"""`rmqcheck report`: one self-contained HTML page (images inlined as data URIs, no scripts
fetched) with the guarantee matrix, the bug table and, for each counterexample, its steps, a
message-sequence diagram, a per-replica timeline and a link to its page to step through
(stepper.py, written beside the report)."""

from __future__ import annotations

import base64
import html
from pathlib import Path
from typing import Any, Iterable

from rmqcheck.checkers.search import modes
from rmqcheck.checkers.tables.rediscovery import METHODS
from rmqcheck.checkers.counterexamples.files import Counterexample, CounterexampleError, read
from rmqcheck.checkers.counterexamples.replay import ReplayError, replay
from rmqcheck.invariants.catalogue import BY_ID
from rmqcheck.model.step import format_action

from . import diagrams

STYLE = """
body { font-family: sans-serif; margin: 2em; color: #222; max-width: 1400px; }
table { border-collapse: collapse; margin: 1em 0; font-size: 13px; }
th, td { border: 1px solid #ccc; padding: 3px 7px; text-align: center; }
th { background: #eee; }
td.held { background: #d5f5e3; } td.none { color: #888; }
td.expected { background: #fdebd0; } td.defect { background: #e8daef; } td.unexplained { background: #f5b7b1; font-weight: bold; }
td.missed { background: #f5b7b1; font-weight: bold; }
ol.steps { font-family: monospace; font-size: 12px; } li.violated { background: #f9e79f; }
section.cx { border-top: 2px solid #ddd; margin-top: 2em; }
img { max-width: 100%; }
"""

# After load: count images that failed to decode, so a headless browser's DOM dump shows it.
CHECK_SCRIPT = """
window.addEventListener('load', () => {
  const broken = [...document.images].filter(i => !i.complete || i.naturalWidth === 0).length;
  document.body.dataset.images = String(document.images.length);
  document.body.dataset.broken = String(broken);
});
"""


def _e(text: Any) -> str:
    return html.escape(str(text))


def _img(png: bytes, alt: str) -> str:
    return f'<img alt="{_e(alt)}" src="data:image/png;base64,{base64.b64encode(png).decode()}">'


def matrix_section(rows: list[dict[str, Any]]) -> str:
    parts = ["<h2>Guarantee matrix</h2>"]
    for mode in dict.fromkeys(r["mode"] for r in rows):
        group = [r for r in rows if r["mode"] == mode]
        keys = list(group[0]["settings"])
        invs = [c["invariant"] for c in group[0]["cells"]]
        head = "".join(f"<th>{_e(k)}</th>" for k in [*keys, "explored", *invs])
        body = []
        for r in group:
            tds = [f"<td>{_e(r['settings'][k])}</td>" for k in keys]
            reach = "all" if r["exhaustive"] else f"depth {r['depth']}"
            hunted = f", hunted {r['hunt_steps']:,} steps" if r["hunt_steps"] else ""
            tds.append(f"<td>{r['states']:,} states ({reach}){hunted}</td>")
            for c in r["cells"]:
                if c["kind"] is None:
                    cls, text = ("held", "✓") if c["promised"] else ("none", "·")
                else:
                    cls = {"expected": "expected", "snapshot defect": "defect", "bug toggle": "defect"}.get(c["kind"], "unexplained")
                    text = f"✗{c['steps']}"
                title = _e(c["message"] or ("held" if c["kind"] is None else c["kind"]))
                tds.append(f'<td class="{cls}" title="{title}">{text}</td>')
            body.append("<tr>" + "".join(tds) + "</tr>")
        parts.append(f"<h3>{_e(mode)}</h3><table><tr>{head}</tr>{''.join(body)}</table>")
    parts.append("<p>✓ promised and held; · not promised, none found; ✗n violated, shortest counterexample found "
                 "n steps (orange: not promised; purple: a known snapshot defect or a bug toggle; red: unexplained).</p>")
    return "\n".join(parts)


def bugs_section(measures: list[dict[str, Any]]) -> str:
    toggles: dict[tuple[str, str], dict[str, dict]] = {}
    for m in measures:
        toggles.setdefault((m["toggle"], m["mode"]), {})[m["method"]] = m
    rows = []
    for (toggle, mode), by_method in sorted(toggles.items(), key=lambda kv: any(
            v["median_seconds"] is not None for v in kv[1].values())):
        found = any(v["median_seconds"] is not None for v in by_method.values())
        tds = [f"<td>{_e(toggle)}</td><td>{_e(mode)}</td>",
               f'<td class="{"held" if found else "missed"}">{"found" if found else "NOT FOUND"}</td>']
        for k in METHODS:
            m = by_method.get(k)
            if m is None:
                tds.append('<td class="none">-</td>')
            elif m["median_seconds"] is None:
                tds.append(f'<td class="missed">not found in {m["budget"]:g}s ({m["found"]}/{m["runs"]})</td>')
            else:
                tds.append(f'<td>{m["median_seconds"]:.1f}s, {_e(m["invariant"])}, {m["steps"]} steps '
                           f'({m["found"]}/{m["runs"]})</td>')
        rows.append("<tr>" + "".join(tds) + "</tr>")
    head = "".join(f"<th>{h}</th>" for h in ("toggle", "mode", "status", *METHODS))
    return f"<h2>Bug rediscovery</h2><table><tr>{head}</tr>{''.join(rows)}</table>"


def counterexample_section(path: Path, cx: Counterexample, steps_href: str | None = None) -> str:
    try:
        r = replay(cx.config, cx.actions, start=cx.start)
    except ReplayError as exc:
        return f'<section class="cx"><h3>{_e(path.name)}</h3><p>does not replay: {_e(exc)}</p></section>'
    hit = r.first(cx.invariant) if cx.invariant else r.first()
    at = hit[0] if hit else None
    title = f"{cx.invariant} {BY_ID[cx.invariant].name}" if cx.invariant in BY_ID else (cx.invariant or "no violation")
    verdict = f"violated at step {at}: {_e(hit[1].message)}" if hit else "not reproduced"
    steps = "".join(
        f'<li{" class=violated" if i == at else ""}>{_e(format_action(a))}</li>'
        for i, a in enumerate(cx.actions, start=1)
    )
    toggles = ", ".join(sorted(cx.config.bugs)) or "none (intended baseline)"
    link = "" if steps_href is None else f'<br><a class="steps" href="{_e(steps_href)}">step through it</a>'
    return (
        f'<section class="cx"><h3>{_e(path.name)}: {_e(title)}</h3>'
        f"<p>{_e(verdict)}<br>toggles: {_e(toggles)}; {cx.config.brokers} brokers; {len(cx.actions)} steps{link}</p>"
        f'<ol class="steps">{steps}</ol>'
        f"{_img(diagrams.sequence_diagram(cx.config, cx.actions, r.states, at), 'message-sequence diagram')}"
        f"{_img(diagrams.timeline(cx.config, r.states, at), 'per-replica timeline')}</section>"
    )


def counterexamples(paths: Iterable[Path]) -> list[tuple[Path, Counterexample]]:
    """The controller-mode counterexamples among `paths` (other modes' scenarios and truncation
    counterexamples have no broker lanes to draw); a file that cannot be read is an error."""
    out = []
    for p in paths:
        if p.suffix == ".scn" and modes.is_mode_file(p):
            continue
        cx = read(p)
        if cx.truncation is None:
            out.append((p, cx))
    return out


def page(matrix_rows: list[dict] | None, measures: list[dict] | None, cxs: list[tuple[Path, Counterexample]],
         title: str = "rmqcheck report", steps: dict[Path, str] | None = None) -> str:
    """The report; `steps` links each counterexample's path to its step-through page."""
    sections = [
        matrix_section(matrix_rows) if matrix_rows else "<h2>Guarantee matrix</h2><p>not given (rmqcheck matrix --json)</p>",
        bugs_section(measures) if measures else "<h2>Bug rediscovery</h2><p>not given (rmqcheck bugs --measure --json)</p>",
        f"<h2>Counterexamples ({len(cxs)})</h2>",
        *(counterexample_section(p, cx, (steps or {}).get(p)) for p, cx in cxs),
    ]
    return (
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{_e(title)}</title>'
        f"<style>{STYLE}</style><script>{CHECK_SCRIPT}</script></head>"
        f"<body><h1>{_e(title)}</h1>{''.join(sections)}</body></html>\n"
    )


__all__ = ["page", "counterexamples", "CounterexampleError"]
