"""Selection strategies: what an agent (or a tool) would run after an edit."""

from __future__ import annotations

import difflib
import os
import sqlite3
import time
from collections.abc import Callable, Collection, Iterable
from contextlib import closing
from pathlib import Path, PurePosixPath

import attrs

from evals.edits import Edit
from evals.pytest_run import run_pytest
from evals.targets import Prepared
from guard_adapters.pytest.node_ids import belongs_to, unmatched
from guard_core.api import Guard
from guard_core.model import Level
from guard_core.variant import Variant


@attrs.frozen
class Selection:
    tests: frozenset[str] | None  # None: the whole suite
    latency: float | None  # None: decided while running
    wall: float | None = None  # measured decide+run seconds, when the strategy ran its tests


def in_suite(pick: Selection, suite: Collection[str]) -> Selection:
    """The suite's test ids a selection runs: a file, a class or a test function (without its
    parameters) stands for every test of the suite inside it, as pytest runs them all; an id
    that matches no test stays as it is (it costs nothing and catches nothing)."""
    if pick.tests is None:
        return pick
    inside = {t for t in suite if belongs_to(t, pick.tests)}
    return attrs.evolve(pick, tests=frozenset(inside.union(unmatched(pick.tests, suite))))


def is_test_file(path: str) -> bool:
    name = PurePosixPath(path).name
    return name.endswith(".py") and (
        name.startswith("test_") or name.endswith("_test.py") or name == "conftest.py"
    )


class Universe:
    """The baseline suite: test function ids grouped by file."""

    def __init__(self, tests: Iterable[str]) -> None:
        self.all = frozenset(tests)
        self.by_file: dict[str, set[str]] = {}
        for test in self.all:
            self.by_file.setdefault(test.split("::", 1)[0], set()).add(test)

    def in_files(self, files: Iterable[str]) -> frozenset[str]:
        return frozenset(t for f in files for t in self.by_file.get(f, ()))


def _subject(path: str) -> str:
    p = PurePosixPath(path)
    return p.parent.name if p.stem == "__init__" else p.stem


def _by_file_name(
    edit: Edit, universe: Universe, guess: Callable[[str], Iterable[str]]
) -> Selection:
    """Touched test files themselves, plus the test files ``guess`` names for each other file."""
    started = time.perf_counter()
    wanted: set[str] = set()
    for path in edit.files:
        wanted.update([path] if is_test_file(path) else guess(path))
    return Selection(universe.in_files(wanted), time.perf_counter() - started)


def same_file(edit: Edit, universe: Universe) -> Selection:
    """``pkg/foo.py`` → ``test_foo.py``."""

    def guess(path: str) -> list[str]:
        names = {f"test_{_subject(path)}.py", f"{_subject(path)}_test.py"}
        return [f for f in universe.by_file if PurePosixPath(f).name in names]

    return _by_file_name(edit, universe, guess)


def naive_guess(edit: Edit, universe: Universe, per_file: int = 2) -> Selection:
    """The test files whose names look most like the changed files', as an agent would guess."""

    def guess(path: str) -> list[str]:
        subject = _subject(path).lower()

        def score(test_file: str) -> float:
            stem = PurePosixPath(test_file).stem.removeprefix("test_").removesuffix("_test")
            return difflib.SequenceMatcher(None, subject, stem.lower()).ratio()

        return sorted(universe.by_file, key=lambda f: (-score(f), f))[:per_file]

    return _by_file_name(edit, universe, guess)


GUARD_VARIANTS: dict[str, Variant] = {
    "guard": Variant(),
    "guard-no-confidence": Variant(use_confidence=False),
    "guard-no-widening": Variant(widening=False),
    "guard-no-lines": Variant(line_evidence=False),
    "guard-seed-policy": Variant(seed_policy=True),
}


def guard_variant(repo: Path, variant: Variant) -> Guard:
    """Guard as a user runs it, with the harness's variant (no setting switches one)."""
    guard = Guard.open(repo)
    guard.variant = variant
    return guard


def guard_selection(guard: Guard) -> Selection:
    started = time.perf_counter()
    decision = guard.check()
    latency = time.perf_counter() - started
    tests = None if decision.level is Level.RUN_ALL else frozenset(decision.tests)
    return Selection(tests, latency)


class Testmon:
    """pytest-testmon as a peer: it selects by running, from a database built on the clean
    tree and restored before every edit so each edit is judged alone."""

    def __init__(self, prepared: Prepared, work: Path) -> None:
        self.prepared = prepared
        self.data = work / f"{prepared.target.name}.testmondata"
        self.clean = work / f"{prepared.target.name}.testmondata.clean"

    def _run(self, tests: None = None) -> tuple[float, frozenset[str]]:
        os.environ["TESTMON_DATAFILE"] = str(self.data)
        try:
            run = run_pytest(
                self.prepared.python, self.prepared.repo, tests, ("--testmon",), cache=True
            )
        finally:
            del os.environ["TESTMON_DATAFILE"]
        return run.wall, frozenset(run.seconds)

    @staticmethod
    def _copy(source: Path, target: Path) -> None:
        """A consistent SQLite copy (testmon keeps a write-ahead log beside its database)."""
        for suffix in ("", "-wal", "-shm"):
            Path(f"{target}{suffix}").unlink(missing_ok=True)
        with closing(sqlite3.connect(source)) as src, closing(sqlite3.connect(target)) as dst:
            src.backup(dst)

    def build(self) -> None:
        for stale in (self.data, self.clean):
            for suffix in ("", "-wal", "-shm"):
                Path(f"{stale}{suffix}").unlink(missing_ok=True)
        self._run()
        self._copy(self.data, self.clean)

    def select(self) -> Selection:
        self._copy(self.clean, self.data)
        wall, ran = self._run()
        return Selection(ran, latency=None, wall=wall)
