"""`guard run` through the worker takes only a well-formed pytest plan; anything else runs the
command in process (None)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from guard_adapters.cli import fast_run

PLAN = {
    "schema": "guard.run-plan/1",
    "plan": "pytest",
    "decision": "subset: 1 of 2 tests\n",
    "notes": [],
    "command": ["python", "-m", "pytest", "--", "tests/test_m.py::test_f"],
    "whole_suite": ["python", "-m", "pytest"],
    "cwd": ".",
    "env": {},
    "trust": 0.9,
    "min_trust": None,
}


def answering(monkeypatch: pytest.MonkeyPatch, answer: Any) -> list[list[str]]:
    asked: list[list[str]] = []

    def ask(argv: list[str]) -> Any:
        asked.append(argv)
        return answer

    monkeypatch.setattr(fast_run, "ask_worker", ask)
    return asked


@pytest.mark.parametrize(
    "answer",
    [
        None,  # no worker
        (2, json.dumps(PLAN), ""),  # the command failed there: its message is the command's
        (0, "not json", ""),
        (0, json.dumps({**PLAN, "schema": "guard.run-plan/0"}), ""),
        (0, json.dumps({**PLAN, "plan": "here"}), ""),  # a refresh, a run-all, nothing to run
        (0, json.dumps({**PLAN, "command": "python -m pytest"}), ""),
        (0, json.dumps({**PLAN, "command": []}), ""),
        (0, json.dumps({k: v for k, v in PLAN.items() if k != "cwd"}), ""),
        (0, json.dumps({**PLAN, "env": ["PYTHONPATH=x"]}), ""),
        (0, json.dumps({**PLAN, "decision": 3}), ""),
        (0, json.dumps({**PLAN, "min_trust": "high"}), ""),
        (0, json.dumps([PLAN]), ""),
    ],
)
def test_anything_but_a_well_formed_pytest_plan_runs_the_command_here(
    monkeypatch: pytest.MonkeyPatch, answer: Any
) -> None:
    asked = answering(monkeypatch, answer)
    assert fast_run.run_through_worker(["run", "--no-refresh", "--base", "HEAD~1"]) is None
    assert asked == [["run-plan", "--no-refresh", "--base", "HEAD~1"]]  # and pytest never ran
