"""pytest plugin (``-p outcomes_plugin``) writing every test's outcome and duration to
``$EVALS_OUTCOMES``. Deliberately independent of Guard's own reporter: it is the oracle."""

from __future__ import annotations

import json
import os
from typing import Any

_tests: dict[str, dict[str, Any]] = {}
_broken: list[str] = []  # collection errors: test modules that no longer import


def pytest_runtest_logreport(report: Any) -> None:
    entry = _tests.setdefault(report.nodeid, {"failed": False, "seconds": 0.0})
    entry["seconds"] += report.duration
    entry["failed"] = entry["failed"] or bool(report.failed)


def pytest_collectreport(report: Any) -> None:
    if report.failed:
        _broken.append(report.nodeid)


def pytest_sessionfinish(session: Any, exitstatus: int) -> None:
    with open(os.environ["EVALS_OUTCOMES"], "w", encoding="utf-8") as out:
        json.dump({"exit": int(exitstatus), "tests": _tests, "broken": _broken}, out)
