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


def test_splits_are_reported_apart_and_whole_suite_selections_are_counted() -> None:
    from evals.report import by_split

    def row(split: str, saved: float, size: int | None) -> dict:
        return {"kind": "k", "split": split, "failing": 1, "missed": {},
                "savings": {"guard": saved}, "sizes": {"guard": size}}  # fmt: skip

    rows = [row("fresh", 0.02, 90), row("dev", 0.8, 3), row("held-out", 0.0, None)]
    table = {e["class"]: e["strategies"]["guard"] for e in by_split(rows, ["guard"])}
    assert [e["class"] for e in by_split(rows, ["guard"])] == ["dev", "held-out", "fresh", "all"]
    assert (table["fresh"]["whole_suite"], table["fresh"]["run_all"]) == (1, 0)  # a subset of all
    assert (table["held-out"]["whole_suite"], table["held-out"]["run_all"]) == (1, 1)
    assert table["dev"]["whole_suite"] == 0 and table["all"]["whole_suite"] == 2


def test_fresh_edits_are_spread_over_the_kinds() -> None:
    from evals.edits import Edit
    from evals.fresh import spread

    edits = [Edit(f"t-{k}-{n}", "t", k, "dev", "", "", ()) for k in "abc" for n in range(3)]
    assert [e.kind for e in spread(edits, 5)] == ["a", "b", "c", "a", "b"]
    assert len(spread(edits, 50)) == 9
