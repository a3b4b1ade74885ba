"""A decision as a short Markdown summary, for people reading a CI step summary or a pull
request: how many tests ran and why, how many were skipped and why, the evidence it read,
its trust, and what forced any widening.

It reads only the attributes that ``pytest --guard``'s decisions have too (the worker's
answer as well as :class:`guard_core.model.Decision`), so the pytest plug-in can write it
without importing the graph client.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

_LISTED = 30  # tests listed by name; the rest are counted


def _cell(text: object) -> str:
    """Text that stays inside one Markdown table cell."""
    return str(text).replace("|", "\\|").replace("\n", " ").strip()


def _rule(reasons: tuple[Any, ...]) -> str:
    return reasons[0].text.split(" ", 1)[0] if reasons else "selected"


def markdown_summary(
    decision: Any, *, note: str = "", outcomes: Mapping[str, int] | None = None
) -> str:
    """The summary of ``decision`` (None: Guard could not decide, ``note`` says why), with
    the run's outcome counts when tests ran (``{"passed": 3, "failed": 1, ...}``)."""
    lines: list[str] = []
    if decision is None:
        lines += ["### Guard: every test ran", "", f"Guard: {_cell(note) or 'no decision'}."]
        return "\n".join([*lines, *outcome_lines(outcomes), ""])
    level = decision.level.value
    tests = tuple(decision.tests)
    if level == "run-all":
        title = "every test ran (run-all)"
    else:
        count = f"{len(tests)} test" + ("" if len(tests) == 1 else "s")
        title = f"{count} selected ({level}, trust {decision.trust:.2f})"
    lines += [f"### Guard: {title}", "", "| | |", "| --- | --- |"]
    evidence = getattr(decision, "evidence", None)
    if evidence is not None and evidence.sha:
        lines.append(f"| evidence | {_cell(evidence.reason)} |")
    if level != "run-all":
        rules = Counter(_rule(tuple(decision.reasons.get(t, ()))) for t in tests)
        why = ", ".join(f"{rule} ({n})" for rule, n in sorted(rules.items()))
        lines.append(f"| selected | {len(tests)}: {_cell(why) or 'none'} |")
    lines.append(f"| skipped | {_cell(decision.skipped_summary or 'nothing skipped')} |")
    for override in decision.overrides:
        lines.append(f"| widened by | `{override.kind_name}`: {_cell(override.detail)} |")
    if level != "run-all" and tests:
        lines += ["", "<details><summary>Why each test runs</summary>", ""]
        lines += ["| test | why |", "| --- | --- |"]
        for test in tests[:_LISTED]:
            why = "; ".join(r.text for r in tuple(decision.reasons.get(test, ()))[:2])
            lines.append(f"| `{_cell(test)}` | {_cell(why)} |")
        if len(tests) > _LISTED:
            lines.append(f"| ... | {len(tests) - _LISTED} more (`guard check --json`) |")
        lines += ["", "</details>"]
    return "\n".join([*lines, *outcome_lines(outcomes), ""])


def outcome_lines(outcomes: Mapping[str, int] | None) -> list[str]:
    """The run's result as a line of the summary (none without outcomes)."""
    if not outcomes:
        return []
    counts = ", ".join(f"{n} {what}" for what, n in outcomes.items() if n)
    return ["", f"**Result:** {counts or 'no test ran'}"]
