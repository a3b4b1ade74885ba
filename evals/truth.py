"""Ground truth: the tests an edit makes fail when the whole suite runs, cached per edit.

The cache (``evals/truth/<target>.json``) is keyed by the edit's diff and the interpreter
version, so a rerun on the same machine replays the frozen answers instead of paying a full
suite per edit; ``--fresh-truth`` recomputes them.
"""

from __future__ import annotations

import hashlib
import json
import platform
import subprocess
from pathlib import Path
from typing import Any

import attrs

from evals.edits import Edit
from evals.pytest_run import SuiteRun, run_pytest
from evals.targets import Prepared

TRUTH = Path(__file__).resolve().parent / "truth"


@attrs.frozen
class Truth:
    failing: frozenset[str]
    wall: float  # the whole suite with the edit applied, seconds
    cached: bool


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
        entry = self.entries.get(edit.id)
        if self.fresh or entry is None or entry["diff"] != self.digest(edit):
            return None
        return Truth(frozenset(entry["failing"]), entry["wall"], cached=True)

    def put(self, edit: Edit, truth: Truth) -> None:
        self.entries[edit.id] = {
            "diff": self.digest(edit),
            "failing": sorted(truth.failing),
            "wall": round(truth.wall, 2),
        }
        self.all[self.key] = self.entries
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_text(json.dumps(self.all, indent=1, sort_keys=True) + "\n")


def ground_truth(prepared: Prepared, baseline: SuiteRun, cache: TruthCache, edit: Edit) -> Truth:
    """Run the whole suite on the edited tree; failures the clean tree also has don't count."""
    found = cache.get(edit)
    if found is not None:
        return found
    universe = baseline.seconds.keys()
    # an edit that makes the suite hang (or eat the memory) has no truth: SuiteTimeout
    limit = max(120.0, 20 * baseline.wall)
    args = prepared.target.pytest_args
    run = run_pytest(prepared.python, prepared.repo, None, args, timeout=limit)
    failing = run.failures(universe) - baseline.failures(universe)
    truth = Truth(failing, run.wall, cached=False)
    cache.put(edit, truth)
    return truth
