"""A pytest plugin that writes each test's outcome to ``$GUARD_REPORT`` (loaded with ``-p`` by
``guard run``). Standard library and pytest only."""

from __future__ import annotations

import json
import os
from typing import Any

_results: dict[str, dict[str, Any]] = {}
_collected: set[str] = set()  # files (and folders) pytest collected without error
_deselected: set[str] = set()  # ids -k, -m or a plug-in left out
_dirs = ["", ""]  # pytest's rootdir and $GUARD_ROOT: ids are reported from the latter


def pytest_configure(config: Any) -> None:
    _dirs[:] = [str(config.rootpath), os.environ.get("GUARD_ROOT", "")]


def repo_id(nodeid: str) -> str:
    """``nodeid`` (relative to pytest's rootdir) relative to the repository root instead."""
    rootdir, root = _dirs
    if not root or not nodeid or os.path.realpath(rootdir) == os.path.realpath(root):
        return nodeid
    path, sep, rest = nodeid.partition("::")
    full = os.path.join(rootdir, *path.split("/"))
    return os.path.relpath(full, root).replace(os.sep, "/") + sep + rest


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
        repo_id(report.nodeid), {"outcome": "passed", "duration_ms": 0.0, "message": ""}
    )
    fold_phase(entry, report)


def pytest_collectreport(report: Any) -> None:
    # a module that no longer imports is a failure the edit caused, not an infrastructure error;
    # a module skipped as a whole (importorskip) accounts for the tests it would have run
    if report.passed and report.nodeid:
        _collected.add(repo_id(report.nodeid))
    if report.failed or (report.skipped and report.nodeid):
        _results[repo_id(report.nodeid) or "<collection>"] = {
            "outcome": "error" if report.failed else "skipped",
            "duration_ms": 0.0,
            "message": str(report.longrepr)[-2000:],
        }


def pytest_deselected(items: list[Any]) -> None:
    _deselected.update(repo_id(item.nodeid) for item in items)


def pytest_sessionfinish(session: Any, exitstatus: int) -> None:
    target = os.environ.get("GUARD_REPORT")
    if target:
        payload = {
            "exitstatus": int(exitstatus),
            "tests": _results,
            "collected": sorted(_collected),
            "deselected": sorted(_deselected),
        }
        with open(target, "w", encoding="utf-8") as handle:
            json.dump(payload, handle)
