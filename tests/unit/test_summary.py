"""The Markdown step summary of a decision: counts, reasons by rule, widenings, and text that
cannot break the table."""

from __future__ import annotations

from guard_adapters.pytest.worker_decision import parse
from guard_adapters.summary import markdown_summary
from guard_core.model import (
    Decision,
    Level,
    Override,
    OverrideKind,
    Reason,
    TrustComponents,
)

COMPONENTS = TrustComponents(1.0, 1.0, 0.0)


def decision(level: Level, tests: tuple[str, ...], **kw: object) -> Decision:
    reasons = {t: (Reason("covers", "pkg/m.py::f"),) for t in tests}
    return Decision(level, 0.9, COMPONENTS, tests, reasons, 10, **kw)  # type: ignore[arg-type]


def test_a_subset_counts_its_tests_by_rule_and_lists_them() -> None:
    tests = ("t/test_a.py::test_1", "t/test_a.py::test_2[a|b]")
    d = decision(Level.SUBSET, tests, skipped_summary="8 of 10 tests skipped: no evidence")
    text = markdown_summary(d, outcomes={"passed": 2, "failed": 0})
    assert text.startswith("### Guard: 2 tests selected (subset, trust 0.90)\n")
    assert "| selected | 2: covers (2) |" in text
    assert "| skipped | 8 of 10 tests skipped: no evidence |" in text
    assert "`t/test_a.py::test_2[a\\|b]`" in text  # a pipe in an id stays in its cell
    assert text.rstrip().endswith("**Result:** 2 passed")


def test_a_run_all_says_what_forced_it_and_lists_nothing() -> None:
    why = Override(OverrideKind.ENVIRONMENT, "environment files changed: uv.lock")
    d = decision(Level.RUN_ALL, ("t/test_a.py::test_1",), overrides=(why,))
    text = markdown_summary(d)
    assert text.startswith("### Guard: every test ran (run-all)")
    assert "| widened by | `environment`: environment files changed: uv.lock |" in text
    assert "<details>" not in text and "**Result:**" not in text


def test_a_long_selection_lists_thirty_and_counts_the_rest() -> None:
    tests = tuple(f"t/test_a.py::test_{i:02}" for i in range(45))
    text = markdown_summary(decision(Level.SUBSET, tests))
    assert text.count("| `t/test_a.py::test_") == 30
    assert "| ... | 15 more (`guard check --json`) |" in text


def test_the_workers_answer_renders_as_the_decision_does() -> None:
    d = decision(Level.SUBSET, ("t/test_a.py::test_1",), skipped_summary="9 skipped")
    assert markdown_summary(parse(d.to_json())) == markdown_summary(d)
