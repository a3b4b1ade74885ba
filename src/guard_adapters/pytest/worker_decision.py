"""``pytest --guard``'s decision from the repository's warm worker (see
:mod:`guard_adapters.worker`), when one runs: the check costs the worker's answer instead
of importing the graph client and assembling Guard inside pytest (Flask: about 0.2 s).

Only a clean subset is taken from the worker: any error, warning, run-all, unknown schema or
malformed answer returns None, and the caller decides in process as without a worker (where
a run-all gets its exact note, and an error its message). The object has the attributes of
:class:`guard_core.model.Decision` that the plug-in reads.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, NamedTuple

_SCHEMA = "guard.decision/1"


class _Level(NamedTuple):
    value: str


class _Override(NamedTuple):
    kind_name: str
    detail: str


class _Evidence(NamedTuple):
    sha: str | None
    reason: str


class _Reason(NamedTuple):
    text: str


class WorkerDecision(NamedTuple):
    level: _Level
    trust: float
    tests: tuple[str, ...]
    reasons: dict[str, tuple[_Reason, ...]]
    skipped_summary: str
    overrides: tuple[_Override, ...]
    evidence: _Evidence | None


def ask(root: Path) -> WorkerDecision | None:
    """The worker's decision for the working tree of ``root``, or None to decide here."""
    if os.environ.get("GUARD_WORKER") == "0":
        return None
    try:
        from guard_adapters.worker.client import ask_worker

        answer = ask_worker(["check", "--json", "--repo", str(root)])
        if answer is None:
            return None
        code, out, err = answer
        if code != 0 or err.strip():
            return None
        return parse(json.loads(out))
    except Exception:  # anything unexpected: decide in process
        return None


def parse(data: Any) -> WorkerDecision | None:
    """A ``guard.decision/1`` object as the plug-in reads it; None unless a well-formed
    subset or medium decision."""
    if not isinstance(data, dict) or data.get("schema") != _SCHEMA:
        return None
    level, tests = data.get("level"), data.get("tests")
    if level not in ("subset", "medium") or not isinstance(tests, list):
        return None
    if not all(isinstance(t, str) for t in tests):
        return None
    reasons = {
        t: tuple(
            _Reason(f"{r.get('rule', '')} {r.get('via', '')}")
            for r in data.get("reasons", {}).get(t, ())
            if isinstance(r, dict)
        )
        for t in tests
    }
    base = data.get("evidence_base")
    return WorkerDecision(
        level=_Level(level),
        trust=float(data.get("trust", 0.0)),
        tests=tuple(tests),
        reasons=reasons,
        skipped_summary=str(data.get("skipped", "")),
        overrides=tuple(
            _Override(str(o.get("kind", "")), str(o.get("detail", "")))
            for o in data.get("overrides", ())
            if isinstance(o, dict)
        ),
        evidence=_Evidence(base.get("sha"), str(base.get("reason", "")))
        if isinstance(base, dict)
        else None,
    )
