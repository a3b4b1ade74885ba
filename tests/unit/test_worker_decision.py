"""The worker's ``guard.decision/1`` answer, as ``pytest --guard`` takes it or leaves it."""

from __future__ import annotations

from typing import Any

import pytest

from guard_adapters.pytest.worker_decision import parse
from guard_core.bases import BaseChoice
from guard_core.model import (
    Decision,
    Level,
    Override,
    OverrideKind,
    Reason,
    TrustComponents,
)

T = "tests/test_a.py::test_one"


def _answer(**fields: Any) -> dict[str, Any]:
    decision = Decision(
        level=Level.SUBSET,
        trust=0.9,
        components=TrustComponents(1.0, 1.0, 0.5),
        tests=(T,),
        reasons={T: (Reason("covers", "pkg/m.py::f", 1.0),)},
        total_tests=2,
        overrides=(Override(OverrideKind.DYNAMIC_WIDENING, "a caller changed"),),
        skipped_summary="1 of 2 tests skipped",
        evidence=BaseChoice("abc", "the last base"),
    )
    return decision.to_json() | fields


def test_a_subset_answer_is_the_decision_itself() -> None:
    d = parse(_answer())
    assert isinstance(d, Decision)
    assert (d.level, d.tests, d.trust) == (Level.SUBSET, (T,), 0.9)
    assert [r.text for r in d.reasons[T]] == ["covers pkg/m.py::f"]
    assert d.overrides[0].kind is OverrideKind.DYNAMIC_WIDENING
    assert d.evidence == BaseChoice("abc", "the last base")
    medium = parse(_answer(level="medium", tests=[], reasons={}))
    assert medium is not None and medium.level is Level.MEDIUM and medium.tests == ()


@pytest.mark.parametrize(
    "change",
    [
        {"level": "run-all"},  # its note needs the in-process detail
        {"tests": None},  # the whole suite: as a subset it would deselect every test
        {"schema": "guard.decision/2"},
        {"tests": [1]},
        {"level": "all"},
        {"total_tests": 1e400},
        {"components": None},
        {"reasons": {T: [{"rule": "covers"}]}},
    ],
)
def test_anything_but_a_clean_subset_is_decided_in_process(change: dict[str, Any]) -> None:
    assert parse(_answer(**change)) is None


def test_an_answer_that_is_no_object_is_decided_in_process() -> None:
    assert parse([]) is None
    assert parse(None) is None
    assert parse("guard.decision/1") is None
