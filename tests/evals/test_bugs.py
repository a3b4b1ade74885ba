"""Real bugs from a project's history: a fix commit that changed source and tests is a bug when
reverting its source diff makes tests fail, twice; the eval then requires those tests."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import attrs
import pytest
from evals.bugs import MissingMirror, Project, candidates, evaluate_bugs, verify_bug
from evals.integrity import verify

from evals import report

ADD = "def add(a, b):\n    return a {op} b\n"
TESTS = "from pkg.calc import add\n\n\ndef test_zero():\n    assert add(0, 0) == 0\n"
TEST_ADD = "\n\ndef test_add():\n    assert add(2, 2) == 4\n"


def commit(repo: Path, files: dict[str, str], subject: str) -> str:
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    run = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*run, "add", "-A"], check=True)
    subprocess.run([*run, "commit", "-qm", subject], check=True)
    return subprocess.run([*run, "rev-parse", "HEAD"], check=True, capture_output=True,
                          text=True).stdout.strip()  # fmt: skip


@pytest.fixture
def history(tmp_path: Path) -> tuple[Project, dict[str, str]]:
    """A project whose history has a bug fix with its test, a large refactor and a docs change."""
    mirror = tmp_path / "mirrors" / "someone+calc" / "repo"
    mirror.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(mirror)], check=True)
    start = {"pkg/__init__.py": "", "pkg/calc.py": ADD.format(op="-"), "tests/test_calc.py": TESTS}
    fix = {"pkg/calc.py": ADD.format(op="+"), "tests/test_calc.py": TESTS + TEST_ADD}
    shas = {"start": commit(mirror, start, "start"), "fix": commit(mirror, fix, "Fix add")}
    big = "".join(f"def f{n}():\n    return {n}\n" for n in range(40))
    shas["refactor"] = commit(mirror, {"pkg/more.py": big, "tests/test_more.py": "x = 1\n"}, "big")
    shas["docs"] = commit(mirror, {"README": "calc\n"}, "docs")
    return Project("calc", "someone/calc", ("pkg",), python="", since="2000-01-01"), shas


@pytest.fixture
def mirrors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("evals.bugs.MIRRORS", tmp_path / "mirrors")


def test_a_missing_mirror_says_to_fetch_it(mirrors: None) -> None:
    with pytest.raises(MissingMirror, match="fetch github:someone/gone"):
        list(candidates(Project("gone", "someone/gone", ("pkg",), python="")))


def test_a_fix_with_tests_and_a_small_source_diff_is_a_candidate(
    history: tuple[Project, dict[str, str]], mirrors: None
) -> None:
    project, shas = history
    found = list(candidates(project))
    assert [(sha, files) for sha, _, files in found] == [(shas["fix"], ("pkg/calc.py",))]


def test_a_bug_is_verified_by_the_tests_its_revert_fails(
    history: tuple[Project, dict[str, str]], mirrors: None, tmp_path: Path
) -> None:
    project, shas = history
    bug = verify_bug(project, shas["fix"], "Fix add", ("pkg/calc.py",), tmp_path / "work")
    assert bug is not None
    assert bug.failing == ("tests/test_calc.py::test_add",)  # test_zero passes either way
    assert (
        "-    return a + b\n+    return a - b" in bug.edit(tmp_path / "work" / "bugs" / "calc").diff
    )
    # a commit whose revert breaks nothing is no bug
    assert verify_bug(project, shas["docs"], "docs", ("README",), tmp_path / "work") is None


@pytest.mark.integration
def test_the_bug_eval_requires_the_fixed_tests(
    history: tuple[Project, dict[str, str]], mirrors: None, tmp_path: Path, guard_env: str
) -> None:
    project, shas = history
    bug = verify_bug(project, shas["fix"], "Fix add", ("pkg/calc.py",), tmp_path / "work")
    assert bug is not None
    result = evaluate_bugs(
        project, [bug], log=lambda _: None, work=tmp_path / "work", truth_dir=tmp_path / "truth"
    )
    assert not result.unstable, result.unstable
    (row,) = result.rows
    assert row["edit"] == bug.id and row["failing"] == 1 and row["split"] == "real-bug"
    assert "guard" not in row["missed"] and row["sizes"]["guard"] >= 1
    guard = next(s for s in result.summaries if s.strategy == "guard")
    assert guard.escaped_edits == () and guard.killable == 1
    report.write(result, "calc: 1 real bug", tmp_path / "reports", "calc-bugs")
    raw = json.loads((tmp_path / "reports" / "calc-bugs.json").read_text())
    assert raw["splits"][0]["class"] == "real-bug"
    problems = verify(tmp_path / "reports" / "calc-bugs.json").problems
    # the sample's bug is in no committed bugs.json: that, and a dirty tree, are the only ones
    assert [p for p in problems if "dirty" not in p and "neither" not in p] == []


def test_a_bug_with_unstable_truth_leaves_the_others_figures_whole() -> None:
    from evals.bugs import combine
    from evals.metrics import Outcome, summarise
    from evals.runner import TargetResult

    row = {"edit": "p-bug-2", "kind": "real-bug", "split": "real-bug", "failing": 1,
           "sizes": {"guard": 1}, "savings": {"guard": 0.5}, "missed": {}}  # fmt: skip
    caught = Outcome("p-bug-2", frozenset({"t"}), frozenset({"t"}), 0.01, 1.0, True)
    flaky = {**row, "edit": "p-bug-1", "runs": [["t"], []]}
    unstable = TargetResult("p-bugs", 3, 1.0, 1.0, (), (), guard_commit="c", guard_commit_end="c",
                            unstable=(flaky,))  # fmt: skip
    guard_summary = summarise("guard", [caught], {"t": 1.0, "u": 1.0}, {"p-bug-2": 2.0})
    stable = TargetResult("p-bugs", 5, 3.0, 1.0, (guard_summary,), (row,), guard_commit="c",
                          guard_commit_end="c")  # fmt: skip
    combined = combine("p-bugs", [unstable, stable])
    (guard,) = combined.summaries
    assert (guard.edits, guard.killable, guard.recall) == (1, 1, 1.0)
    assert [u["edit"] for u in combined.unstable] == ["p-bug-1"]
    assert combined.guard_commit_end == "c" and combined.tests == 4  # the median bug's suite
    moved = attrs.evolve(stable, guard_commit_end="d")
    assert combine("p-bugs", [unstable, moved]).guard_commit_end != "c"
