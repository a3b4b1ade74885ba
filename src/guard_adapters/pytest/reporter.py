"""A pytest plugin that writes each test's outcome to ``$GUARD_REPORT`` (loaded with ``-p`` by
``guard run``). Standard library and pytest only."""

from __future__ import annotations

import json
import os
from typing import Any

_results: dict[str, dict[str, Any]] = {}


def fold_phase(entry: dict[str, Any], report: Any) -> None:
    """Fold one phase report (setup, call, teardown) into a test's outcome: a failure in
    the call is "failed", anywhere else "error"; a skip counts only if nothing failed."""
    entry["duration_ms"] += report.duration * 1000
    if report.failed:
        entry["outcome"] = "failed" if report.when == "call" else "error"
        entry["message"] = str(report.longrepr)[-2000:]
    elif report.skipped and entry["outcome"] == "passed":
        entry["outcome"] = "skipped"


def pytest_runtest_logreport(report: Any) -> None:
    entry = _results.setdefault(
        report.nodeid, {"outcome": "passed", "duration_ms": 0.0, "message": ""}
    )
    fold_phase(entry, report)


def pytest_collectreport(report: Any) -> None:
    # a module that no longer imports is a failure the edit caused, not an infrastructure error
    if report.failed:
        _results[report.nodeid or "<collection>"] = {
            "outcome": "error",
            "duration_ms": 0.0,
            "message": str(report.longrepr)[-2000:],
        }


def pytest_sessionfinish(session: Any, exitstatus: int) -> None:
    target = os.environ.get("GUARD_REPORT")
    if target:
        with open(target, "w", encoding="utf-8") as handle:
            json.dump({"exitstatus": int(exitstatus), "tests": _results}, handle)
