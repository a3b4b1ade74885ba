"""``pytest --guard``'s decision from the repository's warm worker (see
:mod:`guard_adapters.worker`), when one runs: the check costs the worker's answer instead
of importing the graph client and assembling Guard inside pytest (Flask: about 0.2 s).

Only a clean subset is taken from the worker: any error, warning, run-all, unknown schema or
malformed answer returns None, and the caller decides in process as without a worker (where
a run-all gets its exact note, and an error its message).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from guard_core.decision_json import decision_from_json
from guard_core.model import Decision, Level


def ask(root: Path) -> Decision | None:
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


def parse(data: Any) -> Decision | None:
    """The decision of a ``guard.decision/1`` object; None unless a well-formed subset or
    medium decision."""
    try:
        decision = decision_from_json(data)
    except ValueError:
        return None
    if decision.level is Level.RUN_ALL or decision.whole_suite:
        return None
    return decision
