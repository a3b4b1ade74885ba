"""Linked git worktrees (one per agent task) read the evidence ingested in the main worktree,
through its one embedded server: each diffs from its own HEAD, two checking at once get their
own answers, and a refresh in one keeps the other's evidence base."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.conftest import git, make_repo
from tests.e2e.test_cli import guard

FILES = {
    "pyproject.toml": '[tool.pytest.ini_options]\ntestpaths = ["tests"]\n',
    ".gitignore": ".guard/\n",
    "pkg/__init__.py": "",
    "pkg/m.py": "def f(x):\n    return x + 1\n\n\ndef g(x):\n    return x * 2\n",
    "tests/test_m.py": (
        "from pkg.m import f, g\n\n\ndef test_f():\n    assert f(1) == 2\n\n\n"
        "def test_g():\n    assert g(2) == 4\n"
    ),
}
ENV = {"GUARD_WORKER": "0"}


@pytest.fixture(scope="module")
def trees(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    root = tmp_path_factory.mktemp("worktrees")
    main = make_repo(root / "main", FILES)
    try:
        assert guard("ingest-static", str(main), "--include-tests", env=ENV).returncode == 0
        out = guard("ingest-coverage", str(main), env=ENV)
        assert out.returncode == 0, out.stderr
        for name in ("task-1", "task-2"):
            git(main, "worktree", "add", "-q", str(root / name), "-b", name)
        yield main, root / "task-1", root / "task-2"
    finally:
        guard("server", "stop", "--repo", str(main), env=ENV)


def check(tree: Path) -> dict:
    out = guard("check", "--json", "--repo", str(tree), env=ENV)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def replace(tree: Path, old: str, new: str) -> None:
    path = tree / "pkg" / "m.py"
    path.write_text(path.read_text().replace(old, new))


def test_a_linked_worktree_reads_the_main_evidence_and_diffs_from_its_own_head(
    trees: tuple[Path, Path, Path],
) -> None:
    main, one, _ = trees
    replace(one, "x + 1", "x + 2")
    try:
        decision = check(one)
        assert decision["level"] == "subset"
        assert decision["tests"] == ["tests/test_m.py::test_f"]
        assert not (one / ".guard").exists()  # no second server, no second evidence
        assert check(main)["tests"] == []  # the main worktree's tree has not changed
    finally:
        git(one, "checkout", "-q", "--", ".")


def test_two_worktrees_checking_at_once_get_their_own_answers(
    trees: tuple[Path, Path, Path],
) -> None:
    _, one, two = trees
    replace(one, "x + 1", "x + 2")
    replace(two, "x * 2", "x * 3")
    try:
        with ThreadPoolExecutor(2) as pool:
            first, second = pool.map(check, [one, two])
        assert first["tests"] == ["tests/test_m.py::test_f"]
        assert second["tests"] == ["tests/test_m.py::test_g"]
    finally:
        git(one, "checkout", "-q", "--", ".")
        git(two, "checkout", "-q", "--", ".")


def test_a_refresh_in_a_worktree_keeps_the_main_worktrees_base(
    trees: tuple[Path, Path, Path],
) -> None:
    main, _, two = trees
    replace(two, "x + 1", "1 + x")  # passes: the run measures it and refreshes
    git(two, "commit", "-q", "-am", "task-2 rewrites f")
    run = guard("run", "--repo", str(two), env=ENV)
    assert run.returncode == 0, run.stdout + run.stderr
    head = git(main, "rev-parse", "HEAD").strip()
    after = check(two)
    assert after["tests"] == [] and after["level"] == "subset"
    assert after["evidence_base"]["sha"] != head  # the run refreshed into a base of its own
    base = check(main)["evidence_base"]
    assert base["sha"] == head, base  # the main worktree still reads its own evidence


def test_a_worktree_whose_shared_state_is_gone_runs_everything(
    tmp_path: Path,
) -> None:
    main = make_repo(tmp_path / "main", FILES)
    linked = tmp_path / "linked"
    git(main, "worktree", "add", "-q", str(linked), "-b", "linked")
    try:
        replace(linked, "x + 1", "x + 2")
        decision = check(linked)  # nothing was ever ingested: no evidence to read
        assert decision["level"] == "run-all"
        assert any(o["kind"] == "stale_graph" for o in decision["overrides"])
    finally:
        guard("server", "stop", "--repo", str(main), env=ENV)
