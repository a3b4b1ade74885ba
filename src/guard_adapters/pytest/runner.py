"""Runs pytest in the target's interpreter, streaming its output, and reads the outcomes."""

from __future__ import annotations

import json
import os
import posixpath
import subprocess
import tempfile
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import guard_adapters
from guard_adapters.git.repo import head_sha
from guard_adapters.pytest.environment import interpreter
from guard_adapters.pytest.node_ids import MEASURED_IDS
from guard_adapters.pytest.projects import (
    group_by_project,
    nested_in,
    relative_to_project,
    subprojects,
)
from guard_core.config import Settings
from guard_core.errors import RunnerError, RunTimedOut
from guard_core.model import RunRecord, TestOutcome
from guard_core.ports import RunResult


class PytestRunner:
    """``python -m pytest [ids]``; ``tests=None`` runs the whole suite."""

    measures = True

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def command(self, tests: Sequence[str] | None, *, measuring: bool) -> list[str]:
        """The command line that runs ``tests`` (a wrapping runner extends this)."""
        cmd = [interpreter(self.settings), "-m", "pytest", "-p", "guard_adapters.pytest.reporter"]
        if measuring:
            # after the reporter, which the collector imports: loaded the other way round,
            # pytest warns that it cannot rewrite it (an error under filterwarnings=error)
            cmd += ["-p", "guard_adapters.pytest.collector"]
        cmd += self.settings.pytest_args
        if tests is not None and tests:
            cmd += ["--", *tests]
        return cmd

    def environment(self, report: Path, repo: Path, collect_to: Path | None) -> dict[str, str]:
        """The variables pytest runs with: the reporter's output file and the repository root
        its ids are relative to, Guard's plug-ins on the path, and the collector's folder when
        measuring."""
        env = {
            **os.environ,
            "GUARD_REPORT": str(report),
            "GUARD_ROOT": str(repo),
            "PYTHONPATH": plugins_path(),
        }
        if collect_to is not None:
            env.update(GUARD_REPO=str(repo), GUARD_COLLECT_OUT=str(collect_to))
        return env

    def projects(self, repo: Path, tests: Sequence[str] | None) -> dict[str, list[str] | None]:
        """Each pytest project the run needs ("" the root's) and its ids from its own folder
        (None: its whole suite). The whole suite is every project's."""
        found = subprojects(repo)
        if tests is None:
            return {project: None for project in ("", *found)}
        return {
            project: [relative_to_project(t, project) for t in ids]
            for project, ids in group_by_project(tests, found).items()
        }

    def run(
        self,
        repo: Path,
        tests: Sequence[str] | None,
        *,
        stream: bool = True,
        timeout: float | None = None,
        collect_to: Path | None = None,
    ) -> RunResult:
        projects = self.projects(repo, tests)
        found = tuple(p for p in projects if p)
        if found:  # the collector keys tests from the root's rootdir only: no refresh
            collect_to = None
        codes: list[int] = []
        payload: dict[str, Any] = {"tests": {}, "collected": set(), "deselected": set()}
        elapsed = 0.0
        for project, ids in projects.items():
            code, report, ms = self._run_project(
                repo, project, ids, nested_in(project, found), stream, timeout, collect_to
            )
            codes.append(code)
            payload["tests"].update(report.get("tests", {}))
            payload["collected"].update(report.get("collected", ()))
            payload["deselected"].update(report.get("deselected", ()))
            elapsed += ms
        return RunResult(
            exit_code=combined_exit(codes),
            record=run_record(repo, payload["tests"], elapsed),
            collected=frozenset(payload["collected"]),
            deselected=frozenset(payload["deselected"]),
        )

    def _run_project(
        self,
        repo: Path,
        project: str,
        tests: Sequence[str] | None,
        ignore: Sequence[str],
        stream: bool,
        timeout: float | None,
        collect_to: Path | None,
    ) -> tuple[int, dict[str, Any], float]:
        """pytest's exit code, the reporter's file (repo-relative ids) and wall time for one
        project."""
        with tempfile.TemporaryDirectory(prefix="guard-run-") as tmp:
            report = Path(tmp) / "report.json"
            env = self.environment(report, repo, collect_to)
            folder = repo / project if project else repo
            if collect_to is not None and tests:
                # measured: collect the whole suite and run only ``tests``, so that the code
                # every test module's import runs is there, as in the ingest's whole run
                measured = Path(tmp) / "measured.txt"
                measured.write_text("\n".join(tests), encoding="utf-8")
                env[MEASURED_IDS] = str(measured)
                tests = None
            cmd = self.command(tests, measuring=collect_to is not None)
            if not tests:  # the whole suite: other projects inside this one run on their own
                cmd += [f"--ignore={posixpath.relpath(p, project or '.')}" for p in ignore]
            output = None if stream else subprocess.PIPE
            started = time.perf_counter()
            try:
                proc = subprocess.run(
                    cmd,
                    cwd=folder,
                    env=env,
                    check=False,
                    stdout=output,
                    stderr=None if stream else subprocess.STDOUT,
                    timeout=timeout,
                )
            except subprocess.TimeoutExpired as exc:
                raise RunTimedOut(
                    f"pytest timed out after {timeout:.0f} s",
                    hint="run `guard run` outside the hook",
                ) from exc
            except OSError as exc:
                raise RunnerError(
                    f"cannot start pytest: {exc}", hint="set --python / GUARD_PYTHON"
                ) from exc
            elapsed = (time.perf_counter() - started) * 1000
            payload = json.loads(report.read_text()) if report.exists() else {"tests": {}}
        return proc.returncode, payload, elapsed


def combined_exit(codes: Sequence[int]) -> int:
    """One exit code for several pytest runs: the first that is neither a pass, a test
    failure nor "no tests" (an error), else a failure, else a pass; "no tests" only when no
    run had any."""
    if not codes:
        return 5
    errors = [c for c in codes if c not in (0, 1, 5)]
    if errors:
        return errors[0]
    if 1 in codes:
        return 1
    return 0 if 0 in codes else 5


def plugins_path() -> str:
    """``PYTHONPATH`` with the folder holding ``guard_adapters`` first: pytest imports Guard's
    plug-ins from there, whatever the target's environment has installed."""
    root = str(Path(guard_adapters.__file__).resolve().parent.parent)
    return os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)


def read_record(repo: Path, report: Path, elapsed_ms: float) -> RunRecord:
    """The run record of a pytest run from the reporter's file (no file: no outcomes)."""
    payload = json.loads(report.read_text()) if report.exists() else {"tests": {}}
    return run_record(repo, payload.get("tests", {}), elapsed_ms)


def run_record(repo: Path, tests: dict[str, Any], elapsed_ms: float) -> RunRecord:
    """A run of ``tests`` (node id -> the reporter's outcome, duration and message) at the
    commit ``repo`` has checked out."""
    outcomes = tuple(
        TestOutcome(
            test=nodeid,
            outcome=info["outcome"],
            duration_ms=info["duration_ms"],
            message=info["message"],
        )
        for nodeid, info in sorted(tests.items())
    )
    return RunRecord(
        id=uuid.uuid4().hex,
        timestamp=time.time(),
        commit_sha=head_sha(repo),
        duration_ms=elapsed_ms,
        outcomes=outcomes,
    )
