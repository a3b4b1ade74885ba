"""Why Guard missed a failing test: replays each escaped edit, runs the missed tests alone with
the edit applied, and sorts them into "fails alone" (the test can observe the edit by itself:
Guard's evidence missed it) and "fails only in the suite" (it fails because of what other tests
did first: shared caches, leaked state, an earlier failure)."""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from evals.edits import Edit, apply, revert
from evals.pytest_run import run_pytest
from evals.targets import Prepared
from guard_core.api import Guard
from guard_core.model import Level


@attrs.frozen
class Miss:
    edit: str
    missed: tuple[str, ...]
    fails_alone: tuple[str, ...]


def explain(
    prepared: Prepared, edits: Sequence[Edit], failing: dict[str, frozenset[str]]
) -> list[Miss]:
    """``failing``: the ground truth per edit id."""
    from evals.runner import stop_server

    out = []
    try:
        with Guard.open(prepared.repo) as guard:
            out = _replay(prepared, guard, edits, failing)
    finally:
        stop_server(prepared.repo)
    return out


def _replay(
    prepared: Prepared, guard: Guard, edits: Sequence[Edit], failing: dict[str, frozenset[str]]
) -> list[Miss]:
    out = []
    for edit in edits:
        if not failing.get(edit.id):
            continue
        apply(prepared.repo, edit)
        try:
            decision = guard.check()
            missed = sorted(failing[edit.id] - set(decision.tests))
            if decision.level is Level.RUN_ALL or not missed:
                continue
            alone = run_pytest(prepared.python, prepared.repo, missed, prepared.target.pytest_args)
            out.append(Miss(edit.id, tuple(missed), tuple(sorted(alone.failures(missed)))))
        finally:
            revert(prepared.repo)
    return out


def markdown(misses: Sequence[Miss]) -> str:
    if not misses:
        return "## Guard's misses\n\nNone: every failing test was selected.\n"
    lines = [
        "## Guard's misses, replayed",
        "",
        "Each missed test run alone with the edit applied. *Fails alone*: Guard's evidence did "
        "not connect the test to the edit. *Only in the suite*: the test fails because of "
        "what earlier tests did (shared caches, leaked state, an earlier failure), which "
        "per-test evidence cannot see.",
        "",
        "| edit | missed | fails alone | only in the suite |",
        "| --- | --- | --- | --- |",
    ]
    for m in misses:
        alone = ", ".join(m.fails_alone[:4]) + (" ..." if len(m.fails_alone) > 4 else "")
        lines.append(f"| {m.edit} | {len(m.missed)} | {len(m.fails_alone)} {alone} "
                     f"| {len(m.missed) - len(m.fails_alone)} |")  # fmt: skip
    return "\n".join(lines) + "\n"
