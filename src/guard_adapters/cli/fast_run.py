"""``guard run`` through the repository's warm worker, when the run does not refresh the
evidence (``--no-refresh``, or a shared server): the worker decides and renders the decision
(``guard run-plan``), pytest runs here, streaming to the terminal exactly as ``guard run``
runs it, and the worker keeps the outcomes (``guard record-run``). A run that refreshes, runs
the whole suite or runs nothing, no worker, or an answer this client does not expect: the
command runs in this process as before.

Standard library only, imported after the worker answered: the point is not to import the
graph client and the engine in a process that only starts pytest.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time

from guard_adapters.worker.client import ask_worker

_SCHEMA = "guard.run-plan/1"
_UNCOLLECTED = (4, 5)  # pytest's "usage error" (an id not found) and "no tests collected"


def _plan(argv: list[str]) -> dict | None:
    answer = ask_worker(["run-plan", *argv[1:]])
    if answer is None:
        return None
    code, out, err = answer
    if code != 0:
        return None  # the command here gives the error its own message and exit code
    try:
        plan = json.loads(out)
    except ValueError:
        return None
    if not isinstance(plan, dict) or plan.get("schema") != _SCHEMA or plan.get("plan") != "pytest":
        return None
    if not _well_formed(plan):
        return None
    sys.stderr.write(err)  # a configuration warning, as the command here prints it
    return plan


def _strings(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _well_formed(plan: dict) -> bool:
    env = plan.get("env", {})
    return (
        all(_strings(plan.get(k)) for k in ("command", "whole_suite", "notes"))
        and _strings(plan.get("expect", []))
        and bool(plan["command"])
        and bool(plan["whole_suite"])
        and isinstance(plan.get("cwd"), str)
        and isinstance(plan.get("decision", ""), str)
        and isinstance(env, dict)
        and all(isinstance(k, str) and isinstance(v, str) for k, v in env.items())
        and isinstance(plan.get("trust", 0.0), int | float)
        and (plan.get("min_trust") is None or isinstance(plan["min_trust"], int | float))
    )


def _pytest(command: list[str], plan: dict, report: str) -> tuple[int | None, float]:
    """pytest's exit code (None: it could not start) and its wall time in ms."""
    env = {**os.environ, **plan.get("env", {}), "GUARD_REPORT": report}
    started = time.perf_counter()
    code: int | None
    try:
        code = subprocess.run(command, cwd=plan["cwd"], env=env, check=False).returncode
    except OSError as exc:
        sys.stderr.write(f"guard: cannot start pytest: {exc}\n")
        code = None
    return code, (time.perf_counter() - started) * 1000


def _failed(report: str) -> list[str]:
    try:
        with open(report, encoding="utf-8") as f:
            tests = json.load(f).get("tests", {})
    except (OSError, ValueError):
        return []
    return [t for t, info in tests.items() if info.get("outcome") in ("failed", "error")]


def _unrun(plan: dict, report: str) -> list[str]:
    """The selected ids the run did not run (its outcomes are in the reporter's file)."""
    from guard_core.unrun import unrun  # stdlib only: the core's package loads lazily

    try:
        with open(report, encoding="utf-8") as f:
            data = json.load(f)
        ran, collected = list(data.get("tests", {})), data.get("collected", [])
        deselected = data.get("deselected", [])
    except (OSError, ValueError, AttributeError):
        ran, collected, deselected = [], [], []
    return unrun(plan.get("expect", []), ran, collected, deselected)


def run_through_worker(argv: list[str]) -> int | None:
    """The exit code of ``guard run`` (argv as given to ``guard``) run through the worker, or
    None to run the command in this process. What it prints comes in the command's order:
    pytest's output, then the decision, the notes, the verdict."""
    try:
        plan = _plan(argv)
        if plan is None:
            return None
        return _run(plan)
    except KeyboardInterrupt:
        sys.stderr.write("guard: interrupted\n")
        return 130


def _run(plan: dict) -> int:
    notes = list(plan["notes"])
    with tempfile.TemporaryDirectory(prefix="guard-run-") as tmp:
        report = os.path.join(tmp, "report.json")
        code, elapsed = _pytest(plan["command"], plan, report)
        if code in _UNCOLLECTED:
            notes.append(
                f"pytest could not collect every selected id (exit {code}): "
                "ran the whole suite instead"
            )
            with contextlib.suppress(FileNotFoundError):
                os.unlink(report)  # the whole suite's outcomes, not the first run's
            code, elapsed = _pytest(plan["whole_suite"], plan, report)
        if code is None:
            return 2
        failed = _failed(report)
        missing = _unrun(plan, report)
        record = ["record-run", "--repo", plan["cwd"], "--report", report]
        ask_worker([*record, "--elapsed-ms", f"{elapsed:.3f}"])  # best effort, as in process
    sys.stdout.write(plan.get("decision", ""))
    sys.stdout.flush()
    if missing:
        from guard_core.unrun import unrun_note

        notes.append(unrun_note(missing))
    for note in notes:
        sys.stderr.write(f"guard: {note}\n")
    if failed:
        sys.stderr.write(f"guard: {len(failed)} selected tests failed\n")
        return 1
    if missing:
        sys.stderr.write("guard: not every selected test ran: no pass\n")
        return 2
    code = code if code in (0, 1) else 2
    min_trust, trust = plan.get("min_trust"), plan.get("trust", 0.0)
    if code == 0 and isinstance(min_trust, (int, float)) and trust < min_trust:
        sys.stderr.write(f"guard: trust {trust:.2f} is below --min-trust {min_trust}\n")
        return 1
    return code
