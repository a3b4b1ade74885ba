"""The evidence refresh of ``pytest --guard``, as ``guard run`` does it: the run is measured
from its start (conftest imports included), and when every test Guard selected ran and passed,
the evidence base moves to the tree they passed on.

Anything short of that leaves the evidence where it was: a run narrowed by ``-k``, ``-m`` or
node ids (a selected test that did not run would keep stale evidence for code it executes), a
failure, pytest-xdist (its workers measure apart), a shared graph server unless
``refresh_evidence`` is set, or any error on the way.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

import attrs
import pytest

from guard_core.logs import get_logger

log = get_logger("guard.pytest")


@attrs.define
class InRunRefresh:
    """One run's refresh: the collector measuring it, the tree it started on, and (once the
    decision is known) the refresher's session."""

    root: Path
    out: Path
    observed: str
    collector: Any
    session: Any = None
    refresher: Any = None
    narrowed: bool = False  # -k, -m, --lf or another plug-in deselected tests
    deselecting: bool = False  # Guard's own deselection is under way
    kept: tuple[str, ...] = ()  # the node ids left to run after Guard's own selection
    foreign: bool = False  # another Coverage took over the measurement
    note: str = ""

    @classmethod
    def begin(cls, config: Any) -> InRunRefresh | None:
        """Start measuring, when the settings want the evidence refreshed."""
        from guard_adapters.coverage.refresh import CoverageRefresher
        from guard_adapters.pytest.collector import GuardCollector
        from guard_adapters.workspace import load

        settings = load(config.rootpath, read_only=True, warn=False)
        if not settings.refreshes_evidence or _measured_by_others(config):
            return None
        observed = CoverageRefresher(settings).observe()
        if observed is None:
            return None
        out = Path(tempfile.mkdtemp(prefix="guard-pytest-"))
        collector = GuardCollector(settings.repo, out, None)
        config.pluginmanager.register(collector, "guard-collector")
        return cls(settings.repo, out, observed, collector)

    def start(self, guard: Any, decision: Any) -> None:
        try:
            self.refresher = guard.plugins.refresher(guard.settings)
            self.session = self.refresher.start(guard.store, decision, self.observed)
        except Exception as exc:  # the run goes on; only the refresh is lost
            log.warning("refresh_not_started", error=repr(exc))
            self.session = None

    def narrowed_by_others(self, config: Any, decision: Any, items: list[Any]) -> bool:
        """Whether ``-k``, ``-m``, paths or node ids, or another plug-in left out a test Guard
        selected (checked again when the run ends: ``--lf`` deselects later)."""
        from guard_core.model import split_id, test_function_id

        cov = getattr(self.collector, "cov", None)  # still ours while the tests run?
        self.foreign = cov is not None and _current_coverage() is not cov
        given = getattr(getattr(pytest.Config, "ArgsSource", None), "ARGS", None)
        explicit = given is None or getattr(config, "args_source", None) == given  # old pytest
        if self.narrowed or explicit:  # paths or node ids given: part of the suite at most
            return True
        here = {test_function_id(i.nodeid) for i in items}
        files = {split_id(t)[0] for t in here}
        return any(t not in here and t not in files for t in decision.tests)

    def unfinished(self) -> str | None:
        """Why the run does not speak for every test Guard selected, if it does not."""
        if self.narrowed:
            return "-k, -m, --lf or another plug-in left out selected tests"
        if self.foreign:
            return "another coverage tool measured this run"
        outcomes = {nodeid: info["outcome"] for nodeid, info in self.collector.tests.items()}
        missing = [n for n in self.kept if n not in outcomes]
        if missing:
            return f"{len(missing)} selected tests did not run (-x, --maxfail?)"
        if any(outcomes[n] == "skipped" for n in self.kept):
            return "a selected test was skipped here"
        return None

    def finish(self, exitstatus: int) -> str:
        """Refresh when the run passed; a line for the summary either way."""
        if self.session is not None and (why := self.unfinished()):
            self.session = None
            self.note = f"evidence not refreshed: {why}"
        if self.session is None:
            shutil.rmtree(self.out, ignore_errors=True)
            return ""
        try:
            return self._finish(exitstatus)
        except Exception as exc:
            log.warning("refresh_failed", error=repr(exc))
            return f"evidence not refreshed ({exc!r})"
        finally:
            shutil.rmtree(self.out, ignore_errors=True)

    def _finish(self, exitstatus: int) -> str:
        from guard_adapters.pytest.runner import run_record
        from guard_adapters.workspace import open_guard
        from guard_core.ports import RunResult

        record = run_record(self.root, self.collector.tests, 0.0)
        target = self.refresher.collect_dir(self.session)
        for part in self.out.iterdir():
            shutil.copy2(part, target / part.name)
        result = RunResult(int(exitstatus), record)
        with open_guard(self.root) as guard:
            return str(self.refresher.finish(guard.store, self.session, result))


def _current_coverage() -> Any:
    import sys

    module = sys.modules.get("coverage")
    return module.Coverage.current() if module is not None else None


def _measured_by_others(config: Any) -> bool:
    """Another tracer or coverage run (pytest-cov, ``coverage run``): a second measurement
    would pause one of them."""
    import sys

    cov_args = getattr(config.known_args_namespace, "cov_source", None)
    return bool(cov_args) or sys.gettrace() is not None or _current_coverage() is not None
