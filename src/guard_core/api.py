"""The Python API for host tools: ``Guard.open(repo)`` then ``.check()``, ``.run()``,
``.feedback()``, ``.covering_tests()``, ``.callers()``.

One instance keeps its graph connection open between calls and starts no subprocess except
pytest itself in :meth:`Guard.run`. Nothing here configures logging.
"""

from __future__ import annotations

import contextlib
import difflib
from collections.abc import Iterable, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

import attrs

from guard_core.bootstrap import assemble
from guard_core.config import Settings
from guard_core.engine import Engine
from guard_core.errors import GuardError, StoreError, UnknownId
from guard_core.logs import get_logger
from guard_core.model import (
    ChangeSet,
    CoverEdge,
    Decision,
    Level,
    Override,
    OverrideKind,
    RunRecord,
    TrustComponents,
    split_id,
    test_function_id,
)
from guard_core.plugins import Plugins
from guard_core.ports import Caller, EvidenceRefresher, GraphStore, Runner, RunResult
from guard_core.unrun import unrun, unrun_note
from guard_core.variant import DEFAULT, Variant

log = get_logger("guard.api")

# pytest's exit codes for "usage error" (a given node id is not found) and "no tests collected"
_UNCOLLECTED = (4, 5)


@attrs.frozen
class RunReport:
    """What :meth:`Guard.run` did: the decision, and the pytest result (None when the
    decision selected nothing to run)."""

    decision: Decision
    result: RunResult | None
    refreshed: str = ""  # what happened to the evidence (empty: refresh not attempted)
    notes: tuple[str, ...] = ()  # selected ids that could not run, and what was run instead
    unrun: tuple[str, ...] = ()  # selected ids that pytest did not run: never a pass

    @property
    def failed(self) -> list[str]:
        if self.result is None:
            return []
        return [o.test for o in self.result.record.outcomes if o.outcome in ("failed", "error")]

    @property
    def exit_code(self) -> int:
        """0 when every selected test passed, 1 when one failed (or a test module no longer
        imports), 2 when pytest itself could not run or did not run every selected test."""
        if self.result is None:
            return 0
        code = self.result.exit_code
        if self.failed:  # failing tests, or a test module the edit broke at import
            return 1
        if self.unrun:
            return 2
        return code if code in (0, 1) else 2


@attrs.frozen
class RunPlan:
    """What :meth:`Guard.run` would do now, run nothing yet: the decision, the ids it would
    run (None: the whole suite), its notes about ids that cannot run, and whether it would
    re-measure them to refresh the evidence."""

    decision: Decision
    tests: tuple[str, ...] | None
    notes: tuple[str, ...]
    refreshes: bool


class Guard:
    """Test selection for one repository."""

    # the evaluation harness sets another before the first check, to measure a refinement
    variant: Variant = DEFAULT

    def __init__(self, settings: Settings, plugins: Plugins) -> None:
        self.settings = settings
        self.plugins = plugins
        self._store: GraphStore | None = None
        self._engine: Engine | None = None
        self._store_failure: StoreError | None = None  # set only while one run() lasts
        self._in_run = False

    @classmethod
    def open(
        cls,
        repo: str | Path = ".",
        *,
        env: Mapping[str, str] | None = None,
        plugins: Iterable[object] = (),
        tolerant: bool = False,
        **settings: Any,
    ) -> Guard:
        """Guard for the repository holding ``repo`` (any folder inside it); ``settings``
        override ``[tool.guard]`` and ``GUARD_*`` (``env`` defaults to ``os.environ``). Extra
        pluggy ``plugins`` are registered too, and win a name clash with a built-in adapter.
        ``tolerant`` goes on past a broken configuration with the defaults."""
        loaded, wired = assemble(repo, env=env, plugins=plugins, tolerant=tolerant, **settings)
        return cls(loaded, wired)

    @property
    def store(self) -> GraphStore:
        if self._store is None:
            if self._store_failure is not None:
                raise self._store_failure
            try:
                self._store = self.plugins.store(self.settings)
            except StoreError as exc:
                if self._in_run:  # one run waits for an unreachable server once, not per step
                    self._store_failure = exc
                raise
        return self._store

    @property
    def engine(self) -> Engine:
        if self._engine is None:
            store = self.store
            if self.settings.python is None:  # test with the interpreter the evidence came from
                try:
                    recorded = store.ingest_info().python
                except GuardError:
                    recorded = None
                if recorded:
                    self.settings = attrs.evolve(self.settings, python=recorded)
            self._engine = Engine(
                self.settings,
                store,
                self.plugins.slicer(self.settings),
                self.plugins.trust_policies(self.settings),
                plugins=self.plugins,
                environment=self.plugins.environment(self.settings),
                imports=self.plugins.import_probe(self.settings),
                variant=self.variant,
            )
        return self._engine

    def check(self, base: str | None = None) -> Decision:
        """Which tests the working tree's changes need, with a reason for each.

        When the graph cannot be reached the answer is run-all with that reason and
        ``whole_suite`` set: the suite itself is the selection (``tests`` is null in JSON)."""
        try:
            engine = self.engine
        except StoreError as exc:
            return Decision(
                level=Level.RUN_ALL,
                trust=0.0,
                components=TrustComponents(0.0, 0.0, 0.0),
                tests=(),
                reasons={},
                total_tests=0,
                overrides=(Override(OverrideKind.STORE, f"graph unavailable: {exc}"),),
                change_set=ChangeSet(base=base or "HEAD"),
                skipped_summary="nothing skipped: the whole suite runs",
                whole_suite=True,
            )
        return engine.check(base)

    def run(
        self, base: str | None = None, *, stream: bool = True, timeout: float | None = None
    ) -> RunReport:
        """Check, then run the selected tests (the whole suite on run-all) and record the run.

        ``stream`` shows pytest's output live; past ``timeout`` seconds pytest is stopped and
        :class:`~guard_core.errors.RunnerError` raised."""
        self._in_run = True
        try:
            return self._run(base, stream=stream, timeout=timeout)
        finally:
            self._in_run = False
            self._store_failure = None

    def _run(self, base: str | None, *, stream: bool, timeout: float | None) -> RunReport:
        with contextlib.suppress(GuardError):
            self.engine  # noqa: B018 - settles the interpreter (the evidence's) first
        runner = self.plugins.runner(self.settings)
        refresher = self._refresher(runner)
        # the tree is observed before the decision: an edit made after it is never refreshed
        observed = refresher.observe() if refresher is not None else None
        decision = self.check(base)
        if decision.level is not Level.RUN_ALL and not decision.tests:
            return RunReport(decision, None)
        notes: list[str] = []
        tests = None if decision.level is Level.RUN_ALL else self._runnable(decision, notes)
        expected = decision.tests if decision.level is Level.RUN_ALL else tests or ()
        session = self._start_refresh(refresher, decision, observed)
        repo = self.settings.repo
        collect_to = refresher.collect_dir(session) if refresher and session is not None else None
        result = runner.run(repo, tests, stream=stream, timeout=timeout, collect_to=collect_to)
        if tests is not None and result.exit_code in _UNCOLLECTED:
            notes.append(
                f"pytest could not collect every selected id (exit {result.exit_code}): "
                "ran the whole suite instead"
            )
            if refresher is not None and session is not None:  # discards it: it did not pass
                refresher.finish(self.store, session, result)
                session = None
            result = runner.run(repo, None, stream=stream, timeout=timeout)
        refreshed = ""
        if refresher is not None and session is not None:
            refreshed = refresher.finish(self.store, session, result)
        self.record_run(result.record)
        missing = self.unrun_in(expected, result)
        if missing:
            notes.append(unrun_note(missing))
        return RunReport(decision, result, refreshed, tuple(notes), tuple(missing))

    @staticmethod
    def unrun_in(expected: Iterable[str], result: RunResult) -> list[str]:
        """The ``expected`` ids that the run of ``result`` did not run (see
        :func:`guard_core.unrun.unrun`)."""
        ran = (o.test for o in result.record.outcomes)
        return unrun(expected, ran, result.collected, result.deselected)

    def plan_run(self, base: str | None = None) -> RunPlan:
        """What :meth:`run` would do now, without running anything (for a caller that runs
        pytest itself and then calls :meth:`record_run`)."""
        refreshes = self._refresher(self.plugins.runner(self.settings)) is not None
        decision = self.check(base)
        notes: list[str] = []
        tests = None if decision.level is Level.RUN_ALL else self._runnable(decision, notes)
        return RunPlan(decision, None if tests is None else tuple(tests), tuple(notes), refreshes)

    def record_run(self, record: RunRecord) -> None:
        """Keep a run's outcomes, as :meth:`run` does (best effort: the result stands)."""
        with contextlib.suppress(Exception):
            self.store.record_run(record)

    def _runnable(self, decision: Decision, notes: list[str]) -> list[str] | None:
        """The selected ids whose test file still exists (None: the whole suite, when none
        does); each dropped id gets a note. Ids of a file that exists but no longer defines
        them are left to pytest, whose usage error widens the run."""
        kept = []
        for test in decision.tests:
            path = split_id(test)[0]
            if (self.settings.repo / path).is_file():
                kept.append(test)
            else:
                notes.append(f"not run: {test} ({path} no longer exists)")
        if decision.tests and not kept:
            notes.append("no selected test still exists: ran the whole suite instead")
            return None
        return kept

    def _refresher(self, runner: Runner) -> EvidenceRefresher | None:
        """The evidence refresher, when the runner can measure and the settings want it."""
        if not getattr(runner, "measures", False) or not self.settings.refreshes_evidence:
            return None
        try:
            return self.plugins.refresher(self.settings)
        except GuardError:
            return None

    def _start_refresh(
        self, refresher: EvidenceRefresher | None, decision: Decision, observed: str | None
    ) -> object | None:
        """A refresh session for this run, or None; a refresher that fails never stops the
        tests from running."""
        if refresher is None or observed is None:
            return None
        try:
            return refresher.start(self.store, decision, observed)
        except Exception as exc:  # the run goes on unmeasured
            log.warning("refresh_not_started", error=repr(exc))
            return None

    def feedback(self, function: str, test: str, sha: str = "") -> None:
        """Record that ``test`` failed when ``function`` changed and Guard did not select it.

        Both ids must be in the graph (a parametrised ``t.py::test_x[1]`` names the test
        ``t.py::test_x``); an unknown one raises :class:`~guard_core.errors.UnknownId` with
        the nearest known ids and the graph is left as it was."""
        test = test_function_id(test)
        self._require_function(function)
        self._require_test(test)
        self.store.add_repair_edge(function, test, sha)

    def covering_tests(self, function: str) -> list[CoverEdge]:
        """The tests that executed ``function`` (or a data file's path), most confident
        first; :class:`~guard_core.errors.UnknownId` when the graph holds no such node."""
        if "::" in function:
            self._require_function(function)
        else:
            self._require("file", function, list(self.store.file_hashes()))
        return self.store.covering_tests([function])

    def callers(self, function: str, hops: int = 2, min_confidence: float = 0.0) -> list[Caller]:
        """Functions that call ``function`` within ``hops`` static call edges;
        :class:`~guard_core.errors.UnknownId` when the graph holds no such function."""
        self._require_function(function)
        return self.store.callers(function, hops, min_confidence)

    def _require_function(self, function: str) -> None:
        if not self.store.function_facts([function]):
            self._require("function", function, self.store.all_functions())

    def _require_test(self, test: str) -> None:
        self._require("test", test, self.store.all_tests())

    @staticmethod
    def _require(kind: str, ident: str, known: list[str]) -> None:
        if ident in known:
            return
        near = difflib.get_close_matches(ident, known, n=3, cutoff=0.5)
        if near:
            hint = "did you mean " + ", ".join(repr(n) for n in near) + "?"
        elif kind == "test":
            hint = (
                "test ids are pytest node ids (path/to/test_x.py::test_name); run "
                "`guard ingest-coverage` first if the test is new"
            )
        else:
            hint = (
                "ids look like path/to/file.py::Class.method; run `guard ingest-static` "
                "first if it is new"
            )
        raise UnknownId(f"{kind} {ident!r} is not in the graph", hint=hint)

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None
            self._engine = None

    def __enter__(self) -> Guard:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
