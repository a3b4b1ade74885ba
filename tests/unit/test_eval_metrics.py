"""The evaluation metrics on hand-made outcomes."""

from __future__ import annotations

import pytest
from evals.metrics import Outcome, summarise

SECONDS = {"t1": 1.0, "t2": 1.0, "t3": 2.0}  # 4 s in all


def outcome(edit: str, selected: set[str] | None, failing: set[str], wall: float) -> Outcome:
    chosen = None if selected is None else frozenset(selected)
    return Outcome(edit, chosen, frozenset(failing), 0.01, wall, True)


def test_escapes_recall_fallback_and_savings() -> None:
    outs = [
        outcome("e1", {"t1"}, {"t1"}, 1.0),  # caught, 75% saved
        outcome("e2", {"t1"}, {"t2", "t3"}, 1.0),  # escaped, both failures missed
        outcome("e3", None, {"t3"}, 4.0),  # run-all: caught, nothing saved
        outcome("e4", set(), set(), 0.0),  # nothing to run, nothing breaks
    ]
    s = summarise("x", outs, SECONDS, {"e1": 4.0, "e2": 4.0, "e3": 4.0, "e4": 4.0})
    assert (s.edits, s.killable, s.escaped_edits, s.silent_edits) == (4, 3, ("e2",), ("e2",))
    assert s.escape_rate == pytest.approx(1 / 3)
    assert s.recall == pytest.approx(2 / 4)
    assert s.fallback_rate == pytest.approx(1 / 4)
    assert s.test_time_savings == pytest.approx((0.75 + 0.75 + 0 + 1) / 4)
    assert s.wall_savings == pytest.approx((0.75 + 0.75 + 0 + 1) / 4)


def test_no_killable_edit_means_no_escape_rate_to_divide() -> None:
    s = summarise("x", [outcome("e", {"t1"}, set(), 1.0)], SECONDS, {"e": 4.0})
    assert (s.killable, s.escape_rate, s.recall) == (0, 0.0, 1.0)


def test_a_missed_test_beside_a_caught_one_is_an_escape_but_not_silent() -> None:
    s = summarise("x", [outcome("e", {"t1"}, {"t1", "t2"}, 1.0)], SECONDS, {"e": 4.0})
    assert (s.escaped_edits, s.silent_edits) == (("e",), ())
