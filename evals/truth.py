"""Ground truth: the tests an edit makes fail when the whole suite runs, cached per edit.

Truth is by agreement: the whole suite runs twice per edit, once as the target is run (its own
pytest arguments, xdist included) and once in one process in file order; a test is failing when
it fails in both. An edit whose two runs disagree is *unstable*: reported apart, never silently
dropped nor kept. The cache (``evals/truth/<target>.json``) keeps both runs, keyed by the edit's
diff and the interpreter version, so a rerun on the same machine replays the frozen answers
instead of paying two suites per edit; ``--fresh-truth`` recomputes them.
"""

from __future__ import annotations

import hashlib
import json
import platform
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs

from evals.edits import Edit
from evals.pytest_run import SuiteRun, run_pytest
from evals.targets import Prepared

TRUTH = Path(__file__).resolve().parent / "truth"


@attrs.frozen
class Truth:
    runs: tuple[frozenset[str], frozenset[str]]  # failing tests: as run, then serial in order
    wall: float  # the whole suite with the edit applied as the target runs it, seconds
    cached: bool

    @property
    def failing(self) -> frozenset[str]:
        """The tests that failed in both runs."""
        return self.runs[0] & self.runs[1]

    @property
    def stable(self) -> bool:
        return self.runs[0] == self.runs[1]


def interpreter_version(python: Path) -> str:
    return subprocess.run(
        [str(python), "-c", "import platform; print(platform.python_version())"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()


class TruthCache:
    def __init__(self, prepared: Prepared, fresh: bool, folder: Path = TRUTH) -> None:
        self.path = folder / f"{prepared.target.name}.json"
        self.key = f"{interpreter_version(prepared.python)}/{platform.machine()}"
        self.fresh = fresh
        data = json.loads(self.path.read_text()) if self.path.exists() else {}
        self.entries: dict[str, dict[str, Any]] = data.get(self.key, {})
        self.all = data

    @staticmethod
    def digest(edit: Edit) -> str:
        return hashlib.sha256(edit.diff.encode()).hexdigest()[:16]

    def get(self, edit: Edit) -> Truth | None:
        """The cached truth of ``edit``; an entry from before truth by agreement (one run) is
        no truth: it is recomputed."""
        entry = self.entries.get(edit.id)
        if self.fresh or entry is None or entry["diff"] != self.digest(edit):
            return None
        if "runs" not in entry:
            return None
        first, second = (frozenset(run) for run in entry["runs"])
        return Truth((first, second), entry["wall"], cached=True)

    def put(self, edit: Edit, truth: Truth) -> None:
        self.entries[edit.id] = {
            "diff": self.digest(edit),
            "failing": sorted(truth.failing),
            "runs": [sorted(run) for run in truth.runs],
            "wall": round(truth.wall, 2),
        }
        self.all[self.key] = self.entries
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_text(json.dumps(self.all, indent=1, sort_keys=True) + "\n")


def serial(args: Sequence[str]) -> tuple[str, ...]:
    """The target's pytest arguments for one process in file order: no xdist workers, no
    random order."""
    out: list[str] = []
    skip = False
    for arg in args:
        if skip:
            skip = False
        elif arg in ("-n", "--numprocesses", "--dist"):
            skip = True
        elif not arg.startswith(("-n", "--numprocesses=", "--dist=")):
            out.append(arg)
    return (*out, "-p", "no:randomly", "-p", "no:xdist")


class HarnessError(Exception):
    """pytest refused the harness's own arguments: no run of the suite says anything."""


def suite(prepared: Prepared, args: Sequence[str], timeout: float | None = None) -> SuiteRun:
    """The whole suite with ``args``; a usage error (exit 4) is the harness's fault, never the
    edit's."""
    run = run_pytest(prepared.python, prepared.repo, None, tuple(args), timeout=timeout)
    if run.exit_code == 4 and not run.seconds:
        raise HarnessError(f"pytest refused {' '.join(args)!r} in {prepared.repo}")
    return run


def ground_truth(
    prepared: Prepared, baselines: tuple[SuiteRun, SuiteRun], cache: TruthCache, edit: Edit
) -> Truth:
    """Run the whole suite twice on the edited tree; failures the clean tree also has in the
    same kind of run (``baselines``: as run, serial) don't count."""
    found = cache.get(edit)
    if found is not None:
        return found
    universe = baselines[0].seconds.keys()
    # an edit that makes the suite hang (or eat the memory) has no truth: SuiteTimeout
    limit = max(120.0, 20 * baselines[0].wall)
    args = prepared.target.pytest_args
    run = suite(prepared, args, timeout=limit)
    in_order = suite(prepared, serial(args), timeout=2 * limit)
    runs = (
        run.failures(universe) - baselines[0].failures(universe),
        in_order.failures(universe) - baselines[1].failures(universe),
    )
    truth = Truth(runs, run.wall, cached=False)
    cache.put(edit, truth)
    return truth
