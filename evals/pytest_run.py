"""Run a target's pytest suite (or part of it) and read what each test did."""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path

import attrs

HERE = Path(__file__).resolve().parent


def function_id(nodeid: str) -> str:
    """Parametrisations collapse into their test function, as in Guard's graph."""
    return nodeid.split("[", 1)[0]


@attrs.frozen
class SuiteRun:
    """One pytest process: per test function, its summed duration and whether it failed."""

    exit_code: int
    wall: float  # seconds, the whole process
    seconds: dict[str, float]
    failed: frozenset[str]
    broken: tuple[str, ...]  # collection errors

    def failures(self, universe: Iterable[str]) -> frozenset[str]:
        """Failed tests, with every test under a module that no longer collects, and the
        whole ``universe`` when pytest could not run at all."""
        universe = list(universe)
        if self.exit_code not in (0, 1, 5) and not self.seconds:
            return frozenset(universe)
        out = set(self.failed)
        for prefix in self.broken:
            out.update(t for t in universe if not prefix or t.startswith(prefix))
        return frozenset(out)


class SuiteTimeout(Exception):
    """A pytest run that did not finish in its time (an edit that makes the suite hang)."""


def run_pytest(
    python: Path,
    repo: Path,
    tests: Iterable[str] | None,
    extra: tuple[str, ...] = (),
    cache: bool = False,  # pytest-testmon needs the cache plugin
    env: dict[str, str] | None = None,  # added to the environment of the pytest process
    timeout: float | None = None,
) -> SuiteRun:
    """``tests=None`` runs the whole suite; an empty selection runs nothing. Past ``timeout``
    seconds pytest is killed and :class:`SuiteTimeout` raised."""
    selected = None if tests is None else sorted(set(tests))
    if selected == []:
        return SuiteRun(0, 0.0, {}, frozenset(), ())
    with tempfile.TemporaryDirectory(prefix="evals-") as tmp:
        out = Path(tmp) / "outcomes.json"
        env = {
            **os.environ,
            "EVALS_OUTCOMES": str(out),
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONPATH": os.pathsep.join(filter(None, (str(HERE), os.environ.get("PYTHONPATH")))),
            **(env or {}),
        }
        cmd = [
            str(python),
            "-m",
            "pytest",
            "-q",
            "-p",
            "outcomes_plugin",
            *(() if cache else ("-p", "no:cacheprovider")),
            *extra,
        ]
        if selected is not None:
            cmd += ["--", *selected]
        started = time.perf_counter()
        try:
            proc = subprocess.run(
                cmd, cwd=repo, env=env, capture_output=True, check=False, timeout=timeout
            )
        except subprocess.TimeoutExpired as exc:
            raise SuiteTimeout(f"pytest did not finish in {timeout:.0f} s") from exc
        wall = time.perf_counter() - started
        data = json.loads(out.read_text()) if out.exists() else {"tests": {}, "broken": []}
    seconds: dict[str, float] = {}
    failed = set()
    for nodeid, entry in data["tests"].items():
        fid = function_id(nodeid)
        seconds[fid] = seconds.get(fid, 0.0) + entry["seconds"]
        if entry["failed"]:
            failed.add(fid)
    return SuiteRun(proc.returncode, wall, seconds, frozenset(failed), tuple(data["broken"]))
