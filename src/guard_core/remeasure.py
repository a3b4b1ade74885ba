"""A new commit's coverage ingest from the evidence of an earlier one: re-measure only the
tests a check selects for the change since that evidence (new and changed tests among them)
and carry every other test's evidence over, as ``guard run``'s refresh does.

Why it is sound: it is the refresh's argument (``guard_adapters.coverage.refresh``), with the
check's own safety floor — whatever the check cannot justify makes it run-all, and then the
whole suite is measured. Anything else unusual (no complete evidence, a failing test, another
interpreter, a renamed file) also declines, with the reason, and the caller measures the whole
suite: the incremental path may only ever be skipped, never trusted past its evidence.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs

from guard_core.errors import GuardError
from guard_core.logs import get_logger
from guard_core.model import Level, split_id
from guard_core.ports import REFRESHED

if TYPE_CHECKING:
    from guard_core.api import Guard

log = get_logger("guard.remeasure")


@attrs.frozen
class Remeasured:
    base: str  # the commit whose evidence it started from
    tests: int  # how many tests it re-measured
    message: str  # what the refresher wrote


def remeasure_changed(guard: Guard) -> Remeasured | str:
    """Move the evidence to the working tree by re-measuring what changed; the reason when it
    cannot (the caller then measures the whole suite)."""
    try:
        runner = guard.plugins.runner(guard.settings)
        refresher = guard.plugins.refresher(guard.settings)
    except GuardError as exc:
        return exc.message
    if not getattr(runner, "measures", False):
        return "the test runner cannot measure"
    if refresher is None:
        return "no evidence refresher is installed"
    observed = refresher.observe()
    if observed is None:
        return "the working tree cannot be snapshotted"
    decision = guard.check()
    if decision.level is Level.RUN_ALL:
        why = "; ".join(o.detail for o in decision.overrides) or "its trust is too low"
        return f"a check of the change since the evidence runs every test ({why})"
    base = decision.change_set.base
    if not decision.tests:
        return Remeasured(base, 0, "no test needs re-measuring: the evidence stays where it is")
    if any(not (guard.settings.repo / split_id(t)[0]).is_file() for t in decision.tests):
        return "a selected test's file is gone"
    session = refresher.start(guard.store, decision, observed)
    if session is None:
        return "the evidence cannot be refreshed from here (see the log)"
    result = runner.run(
        guard.settings.repo,
        list(decision.tests),
        stream=False,
        timeout=None,
        collect_to=refresher.collect_dir(session),
    )
    message = refresher.finish(guard.store, session, result)
    if not message.startswith(REFRESHED):
        return message
    guard.record_run(result.record)
    log.info("remeasured", base=base[:12], tests=len(decision.tests))
    return Remeasured(base, len(decision.tests), message)
