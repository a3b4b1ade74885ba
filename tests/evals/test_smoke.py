"""The evaluation harness end to end on a small real project (itsdangerous from PyPI), a few
edits: preparation, ground truth, every strategy, the report. The full run is `python -m evals`."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from evals.edits import SPLIT, load_split
from evals.integrity import verify
from evals.runner import evaluate

from evals import report

EDITS = ("negate-condition-1", "harmless-1", "test-file-1")  # one per asserted outcome

pytestmark = pytest.mark.integration


def test_harness_measures_every_strategy(tmp_path: Path, guard_env: str) -> None:
    chosen = [e for e in load_split() if e.id in {f"itsdangerous-{k}" for k in EDITS}]
    assert len(chosen) == len(EDITS)
    result = evaluate("itsdangerous", chosen, work=tmp_path / "work",
                      truth_dir=tmp_path / "truth", log=lambda _: None)  # fmt: skip
    by_name = {s.strategy: s for s in result.summaries}
    assert {"run-all", "same-file", "naive-guess", "guard", "guard-no-confidence",
            "guard-no-widening", "coverage"} <= set(by_name)  # fmt: skip
    rows = {r["edit"].removeprefix("itsdangerous-"): r for r in result.rows}
    assert rows["harmless-1"]["failing"] == 0  # a comment breaks nothing
    assert rows["test-file-1"]["failing"] >= 1  # a flipped assertion fails its test
    assert rows["negate-condition-1"]["failing"] >= 1
    assert rows["test-file-1"]["sizes"]["guard"] == 1  # a test edit runs that test
    assert rows["harmless-1"]["sizes"]["guard"] == 0
    # the plain per-test coverage selector answers every edit here with a list of tests
    assert all(type(r["sizes"]["coverage"]) is int for r in rows.values())
    assert rows["test-file-1"]["sizes"]["coverage"] >= 1  # at least the edited test ran the line
    assert by_name["coverage"].fallback_rate == 0
    assert all(set(r["savings"]) == set(r["sizes"]) for r in rows.values())
    run_all = by_name["run-all"]
    assert (run_all.fallback_rate, run_all.test_time_savings, run_all.escaped_edits) == (1, 0, ())
    assert by_name["guard"].escaped_edits == by_name["guard"].silent_edits == ()
    assert by_name["guard"].test_time_savings > 0
    path = report.write(result, "smoke", tmp_path / "reports")
    text = path.read_text()
    assert "| guard |" in text and "| same-file |" in text and "itsdangerous-harmless-1" in text
    assert "| coverage |" in text and "## Per edit class" in text and "| **all** |" in text
    assert result.split_sha256 == hashlib.sha256(SPLIT.read_bytes()).hexdigest()
    assert result.split_sha256 in text and result.guard_commit.split("+")[0] in text
    raw = json.loads((tmp_path / "reports" / "itsdangerous.json").read_text())
    classes = {c["class"]: c for c in raw["classes"]}
    assert set(classes) == {*(r["kind"] for r in rows.values()), "all"}
    assert classes["all"]["edits"] == len(EDITS)
    assert set(classes["all"]["strategies"]) >= {"guard", "coverage"}
    assert (tmp_path / "reports" / "itsdangerous.png").read_bytes()[:4] == b"\x89PNG"
    # the report is a function of its JSON, and its figures are its rows' (a working tree with
    # local changes is the one problem a developer's run may have)
    problems = verify(tmp_path / "reports" / "itsdangerous.json").problems
    assert [p for p in problems if "dirty" not in p] == []
