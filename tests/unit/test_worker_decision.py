"""The worker's ``guard.decision/1`` answer, as ``pytest --guard`` takes it or leaves it."""

from __future__ import annotations

from typing import Any

from guard_adapters.pytest.worker_decision import parse

T = "tests/test_a.py::test_one"


def _answer(**fields: Any) -> dict[str, Any]:
    base = {
        "schema": "guard.decision/1",
        "level": "subset",
        "trust": 0.9,
        "tests": [T],
        "reasons": {T: [{"rule": "covers", "via": "pkg/m.py::f", "confidence": 1.0}]},
        "skipped": "1 of 2 tests skipped",
        "overrides": [{"kind": "widened", "detail": "a caller changed"}],
        "evidence_base": {"sha": "abc", "reason": "the last base"},
    }
    return base | fields


def test_a_subset_answer_reads_like_a_decision() -> None:
    d = parse(_answer())
    assert d is not None
    assert (d.level.value, d.tests, d.trust) == ("subset", (T,), 0.9)
    assert [r.text for r in d.reasons[T]] == ["covers pkg/m.py::f"]
    assert d.overrides[0].kind_name == "widened" and d.evidence.sha == "abc"
    assert parse(_answer(level="medium", tests=[])) is not None


def test_anything_but_a_clean_subset_is_decided_in_process() -> None:
    assert parse(_answer(level="run-all")) is None  # its note needs the in-process detail
    assert parse(_answer(tests=None)) is None  # the whole suite
    assert parse(_answer(schema="guard.decision/2")) is None
    assert parse(_answer(tests=[1])) is None
    assert parse([]) is None
