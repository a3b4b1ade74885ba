"""The evaluation harness end to end on a small real project (itsdangerous from PyPI), a few
edits: preparation, ground truth, every strategy, the report. The full run is `python -m evals`."""

from __future__ import annotations

from pathlib import Path

import pytest
from evals.edits import load_split
from evals.runner import evaluate

from evals import report

EDITS = ("negate-condition-1", "harmless-1", "test-file-1", "new-helper-1")

pytestmark = pytest.mark.integration


def test_harness_measures_every_strategy(tmp_path: Path, guard_env: str) -> None:
    chosen = [e for e in load_split() if e.id in {f"itsdangerous-{k}" for k in EDITS}]
    assert len(chosen) == len(EDITS)
    result = evaluate("itsdangerous", chosen, work=tmp_path / "work",
                      truth_dir=tmp_path / "truth", log=lambda _: None)  # fmt: skip
    by_name = {s.strategy: s for s in result.summaries}
    assert {"run-all", "same-file", "naive-guess", "guard", "guard-no-confidence",
            "guard-no-widening"} <= set(by_name)  # fmt: skip
    rows = {r["edit"].removeprefix("itsdangerous-"): r for r in result.rows}
    assert rows["harmless-1"]["failing"] == 0  # a comment breaks nothing
    assert rows["test-file-1"]["failing"] >= 1  # a flipped assertion fails its test
    assert rows["negate-condition-1"]["failing"] >= 1
    assert rows["test-file-1"]["sizes"]["guard"] == 1  # a test edit runs that test
    assert rows["harmless-1"]["sizes"]["guard"] == 0
    run_all = by_name["run-all"]
    assert (run_all.fallback_rate, run_all.test_time_savings, run_all.escaped_edits) == (1, 0, ())
    assert by_name["guard"].escaped_edits == by_name["guard"].silent_edits == ()
    assert by_name["guard"].test_time_savings > 0
    path = report.write(result, "smoke", tmp_path / "reports")
    text = path.read_text()
    assert "| guard |" in text and "| same-file |" in text and "itsdangerous-harmless-1" in text
    assert (tmp_path / "reports" / "itsdangerous.png").read_bytes()[:4] == b"\x89PNG"
