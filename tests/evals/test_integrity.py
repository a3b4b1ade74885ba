"""A report is trusted only when it was measured at one clean commit, its markdown is what its
JSON renders, its edits are those of its commit's split and its figures those of its rows."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from evals.edits import Edit, save_split
from evals.integrity import DirtyTree, clean_head, verify
from evals.metrics import Outcome, summarise
from evals.runner import TargetResult, edits_digest, split_digest, src_tree
from evals.truth import Truth, serial

from evals import report

EDITS = [
    Edit(f"pkg-kind-{n}", "pkg", "kind", "dev", "an edit", f"diff {n}\n", ("pkg/a.py",))
    for n in (1, 2)
]
SECONDS = {"tests/test_a.py::test_a": 1.0, "tests/test_b.py::test_b": 3.0}


def git(repo: Path, *args: str) -> str:
    out = subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *args],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    return out.stdout.strip()


@pytest.fixture
def guard_repo(tmp_path: Path) -> Path:
    """A stand-in for Guard's repository: src/, and the split its commit holds."""
    repo = tmp_path / "guard"
    (repo / "src").mkdir(parents=True)
    (repo / "evals").mkdir()
    (repo / "src" / "guard.py").write_text("x = 1\n")
    save_split(EDITS, 1, repo / "evals" / "split.json")
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "one")
    return repo


def measured(repo: Path, **changes: object) -> TargetResult:
    """A result as the runner makes it: edit 1 breaks test_a and Guard selects it; edit 2
    breaks nothing and Guard selects nothing."""
    commit = git(repo, "rev-parse", "HEAD")
    picks = {"pkg-kind-1": frozenset({"tests/test_a.py::test_a"}), "pkg-kind-2": frozenset()}
    failing = {"pkg-kind-1": frozenset({"tests/test_a.py::test_a"}), "pkg-kind-2": frozenset()}
    outcomes = [Outcome(e, picks[e], failing[e], 0.01, 1.0, True) for e in picks]
    rows = [
        {"edit": e, "kind": "kind", "split": "dev", "failing": len(failing[e]),
         "sizes": {"guard": len(picks[e])}, "savings": {"guard": 0.75 if picks[e] else 1.0},
         "missed": {}, "latency": {"guard": 0.01}, "wall": {"guard": 1.0}}
        for e in picks
    ]  # fmt: skip
    result = TargetResult(
        "pkg", 2, 4.0, 1.0, (summarise("guard", outcomes, SECONDS, dict.fromkeys(picks, 4.0)),),
        tuple(rows), split_sha256=split_digest(repo / "evals" / "split.json"),
        edits_sha256=edits_digest(EDITS), guard_commit=commit, guard_commit_end=commit,
        src_tree=src_tree(commit, repo), python="3.12.1",
    )  # fmt: skip
    return TargetResult(**{**vars_of(result), **changes})


def vars_of(result: TargetResult) -> dict[str, object]:
    import attrs

    return {f.name: getattr(result, f.name) for f in attrs.fields(TargetResult)}


def written(repo: Path, tmp_path: Path, result: TargetResult) -> Path:
    report.write(result, "pkg: 2 edits", tmp_path / "reports")
    return tmp_path / "reports" / "pkg.json"


def test_a_report_from_one_clean_commit_verifies(guard_repo: Path, tmp_path: Path) -> None:
    path = written(guard_repo, tmp_path, measured(guard_repo))
    verdict = verify(path, guard_repo)
    assert verdict.problems == ()
    assert verdict.at_head
    (guard_repo / "src" / "guard.py").write_text("x = 2\n")
    git(guard_repo, "commit", "-qam", "two")
    later = verify(path, guard_repo)
    assert later.problems == () and not later.at_head  # trustworthy, but of an older Guard


def test_a_hand_edited_markdown_fails(guard_repo: Path, tmp_path: Path) -> None:
    path = written(guard_repo, tmp_path, measured(guard_repo))
    md = path.with_suffix(".md")
    md.write_text(md.read_text().replace("87.5%", "97.5%"))
    assert any("is not what its JSON renders" in p for p in verify(path, guard_repo).problems)


def test_a_row_that_disagrees_with_the_headline_fails(guard_repo: Path, tmp_path: Path) -> None:
    path = written(guard_repo, tmp_path, measured(guard_repo))
    raw = json.loads(path.read_text())
    raw["rows"][1]["savings"]["guard"] = 0.5
    path.write_text(json.dumps(raw))
    assert any("guard: savings" in p for p in verify(path, guard_repo).problems)


def test_a_dirty_or_moving_tree_is_no_result(guard_repo: Path, tmp_path: Path) -> None:
    head = git(guard_repo, "rev-parse", "HEAD")
    dirty = written(guard_repo, tmp_path, measured(guard_repo, guard_commit=head + "+dirty"))
    assert any("dirty" in p for p in verify(dirty, guard_repo).problems)
    moved = written(guard_repo, tmp_path, measured(guard_repo, guard_commit_end="f" * 40))
    assert any("changed during the run" in p for p in verify(moved, guard_repo).problems)


def test_edits_that_are_not_the_splits_fail(guard_repo: Path, tmp_path: Path) -> None:
    path = written(guard_repo, tmp_path, measured(guard_repo, edits_sha256="0" * 64))
    assert any("edits_sha256" in p for p in verify(path, guard_repo).problems)
    (guard_repo / "evals" / "split.json").write_text("{}")
    git(guard_repo, "commit", "-qam", "split gone")
    other = written(guard_repo, tmp_path, measured(guard_repo))
    problems = verify(other, guard_repo).problems
    assert any("split_sha256" in p or "not in the split" in p or "neither" in p for p in problems)


def test_all_refuses_a_dirty_tree(guard_repo: Path) -> None:
    assert clean_head(guard_repo) == git(guard_repo, "rev-parse", "HEAD")
    (guard_repo / "src" / "guard.py").write_text("x = 3\n")
    with pytest.raises(DirtyTree, match=r"src/guard\.py"):
        clean_head(guard_repo)


def test_truth_is_what_both_runs_agree_on() -> None:
    a, b = frozenset({"t1", "t2"}), frozenset({"t2"})
    flaky = Truth((a, b), 1.0, cached=False)
    assert flaky.failing == {"t2"} and not flaky.stable
    assert Truth((a, a), 1.0, cached=False).stable


def test_the_second_truth_run_is_serial_and_in_file_order() -> None:
    assert serial(("-n", "2", "-q", "--dist=loadfile", "-x")) == (
        "-q", "-x", "-p", "no:randomly", "-p", "no:xdist",
    )  # fmt: skip
    assert serial(("-n2",))[:1] == ("-p",)


def test_latencies_are_those_of_the_rows_when_rows_keep_them(
    guard_repo: Path, tmp_path: Path
) -> None:
    path = written(guard_repo, tmp_path, measured(guard_repo))
    raw = json.loads(path.read_text())
    raw["rows"][0]["latency"]["guard"] = 2.5  # the slowest check left out of the headline
    path.write_text(json.dumps(raw))
    assert any("latency p50 / max" in p for p in verify(path, guard_repo).problems)
    for row in raw["rows"]:  # a report from before rows kept their latency
        del row["latency"]
    path.write_text(json.dumps(raw))
    assert not any("latency" in p for p in verify(path, guard_repo).problems)


def test_tables_and_headlines_other_than_savings_are_checked(
    guard_repo: Path, tmp_path: Path
) -> None:
    path = written(guard_repo, tmp_path, measured(guard_repo))
    raw = json.loads(path.read_text())
    raw["splits"][0]["strategies"]["guard"]["escapes"] = 5
    raw["summaries"][0]["killable"] = 2
    path.write_text(json.dumps(raw))
    problems = verify(path, guard_repo).problems
    assert any("splits table" in p for p in problems)
    assert any("killable" in p for p in problems)
    path.write_text("{not json")
    assert verify(path, guard_repo).problems[0].startswith("unreadable")


def test_safe_savings_leave_out_the_edits_a_strategy_escaped() -> None:
    rows = [
        {"savings": {"guard": 0.2, "coverage": 0.99}, "missed": {"coverage": ["t::a"]}},
        {"savings": {"guard": 0.6, "coverage": 0.5}, "missed": {}},
    ]
    assert report._safe_savings(rows, "coverage") == report._pct(0.5)
    assert report._safe_savings(rows, "guard") == report._pct(0.4)
    assert report._safe_savings(rows[:1], "coverage") == "—"
