"""Rules for what a call hides: cached results computed by changed code, misses the feedback
repaired, and dynamic dispatch whose evidence is incomplete."""

from __future__ import annotations

from guard_core.memo import select_memoised_callers
from guard_core.model import ChangedRegion, Reason, RegionKind
from guard_core.rules.base import Rule, RuleInput
from guard_core.safety import needs_widening
from guard_core.selection import Selection, judged_id, needs_evidence


def _changed_functions(data: RuleInput) -> list[ChangedRegion]:
    return [r for r in data.change.regions if r.region is RegionKind.FUNCTION and needs_evidence(r)]


def memoised_callers(data: RuleInput, selection: Selection) -> None:
    changed = [judged_id(r) for r in _changed_functions(data)]
    select_memoised_callers(data.store, changed, selection, data.floor)


def repaired_callees(data: RuleInput, selection: Selection) -> None:
    bodies = [judged_id(r) for r in _changed_functions(data)]
    if bodies:
        selection.add_edges(data.store.repair_tests_of_callees(bodies), "repaired-callee")


def tests_of_files(data: RuleInput, files: list[str]) -> list[str]:
    if not files:
        return []
    return sorted({t for ts in data.store.tests_of_files(files).values() for t in ts})


def dynamic_widening(data: RuleInput, selection: Selection) -> None:
    if not data.variant.widening:
        return
    for region in data.change.regions:
        if region.dynamic_dispatch and needs_widening(region, data.policy):
            for test in tests_of_files(data, [region.file]):
                selection.add(test, Reason("dynamic-widening", region.id))


CALL_RULES = (
    Rule("memoised-callers", memoised_callers),
    Rule("repaired-callees", repaired_callees, refinement=False),
    Rule("dynamic-widening", dynamic_widening, refinement=False),
)
