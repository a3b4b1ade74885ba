"""Every entry point resolves the repository root the same way, once."""

from __future__ import annotations

from pathlib import Path

import pytest

from guard_adapters.worker.client import state_dir_for
from guard_adapters.workspace import load, open_guard
from guard_core import Guard, hookimpl
from guard_core.errors import RepositoryError
from tests.conftest import git, make_repo


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "proj", {"pkg/__init__.py": "", "pkg/sub/m.py": "X = 1\n"})


def test_guard_open_from_a_subfolder_uses_the_repositorys_one_state_folder(repo: Path) -> None:
    with Guard.open(repo / "pkg" / "sub", env={}) as guard:
        assert guard.settings.repo == repo.resolve()
        assert guard.settings.guard_dir == repo.resolve() / ".guard"
    assert open_guard(repo / "pkg").settings.guard_dir == repo.resolve() / ".guard"
    assert load(repo / "pkg" / "sub").repo == repo.resolve()
    assert state_dir_for([], str(repo / "pkg" / "sub")) == str(repo.resolve() / ".guard")


def test_a_configured_state_folder_is_relative_to_the_repository(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (repo / "pyproject.toml").write_text('[tool.guard]\nstate_dir = "build/guard-state"\n')
    monkeypatch.chdir(repo / "pkg")
    monkeypatch.delenv("GUARD_STATE_DIR", raising=False)
    expected = repo.resolve() / "build" / "guard-state"
    assert Guard.open(".", env={}).settings.guard_dir == expected
    assert load("sub").guard_dir == expected
    assert state_dir_for(["check", "--repo", "sub"], str(repo / "pkg")) == str(expected)
    monkeypatch.setenv("GUARD_STATE_DIR", "elsewhere")  # a variable is relative to here
    assert load(repo).guard_dir == (repo / "pkg" / "elsewhere").resolve()


def test_the_fast_path_knows_a_state_folder_only_while_what_the_bootstrap_read_holds(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GUARD_STATE_DIR", raising=False)
    sub = repo / "pkg" / "sub"
    assert state_dir_for([], str(sub)) is None  # nothing opened here yet: run in process
    assert load(sub).guard_dir == repo.resolve() / ".guard"
    assert state_dir_for([], str(sub)) == str(repo.resolve() / ".guard")
    assert state_dir_for(["check", "--repo", str(sub)], "/") == str(repo.resolve() / ".guard")

    (repo / "pyproject.toml").write_text('[tool.guard]\nstate_dir = "moved"\n')
    assert state_dir_for([], str(sub)) is None  # the configuration changed
    assert load(sub).guard_dir == repo.resolve() / "moved"
    assert state_dir_for([], str(sub)) == str(repo.resolve() / "moved")

    monkeypatch.setenv("GUARD_STATE_DIR", str(repo / "from-env"))
    assert state_dir_for([], str(sub)) is None  # another variable: another answer
    monkeypatch.delenv("GUARD_STATE_DIR")
    assert state_dir_for([], str(sub)) == str(repo.resolve() / "moved")

    git(repo / "pkg", "init", "-q")  # a repository of its own, nearer than the old root
    assert state_dir_for([], str(sub)) is None
    assert load(sub).guard_dir == (repo / "pkg").resolve() / ".guard"
    assert state_dir_for([], str(sub)) == str((repo / "pkg").resolve() / ".guard")


def test_a_moved_state_folder_is_not_remembered_for_the_folder(repo: Path) -> None:
    assert load(repo, state_dir=repo / "elsewhere").guard_dir == repo / "elsewhere"
    assert state_dir_for([], str(repo)) is None


def test_a_folder_outside_any_repository_is_its_own_root(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    assert Guard.open(plain, env={}).settings.repo == plain.resolve()
    with pytest.raises(RepositoryError, match="does not exist"):
        Guard.open(tmp_path / "missing", env={})


def test_a_plugin_can_answer_the_root(repo: Path) -> None:
    class Monorepo:
        @hookimpl
        def guard_repository_root(self, start: Path) -> Path | None:
            return start if start.name == "sub" else None

    sub = repo / "pkg" / "sub"
    assert Guard.open(sub, env={}, plugins=[Monorepo()]).settings.repo == sub.resolve()
    assert Guard.open(repo / "pkg", env={}, plugins=[Monorepo()]).settings.repo == repo.resolve()


def test_linked_worktrees_share_the_main_worktrees_state_and_keep_several_bases(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GUARD_STATE_DIR", raising=False)
    alone = load(repo)
    assert alone.guard_dir == repo.resolve() / ".guard" and alone.kept_bases == 1
    linked = tmp_path / "task-1"
    git(repo, "worktree", "add", "-q", str(linked), "-b", "task-1")
    for folder in (linked, linked / "pkg" / "sub"):
        settings = load(folder)
        assert settings.repo == linked.resolve()  # diffs and runs in its own tree
        assert settings.guard_dir == repo.resolve() / ".guard"  # one server, one evidence
        assert settings.kept_bases > 1  # a refresh here keeps the main worktree's base
        assert state_dir_for([], str(folder)) == str(repo.resolve() / ".guard")  # the worker
    main = load(repo)
    assert main.guard_dir == repo.resolve() / ".guard" and main.kept_bases > 1
    (linked / "pyproject.toml").write_text('[tool.guard]\nstate_dir = "own"\nevidence_bases = 2\n')
    configured = load(linked)
    assert (configured.guard_dir, configured.kept_bases) == (linked.resolve() / "own", 2)
    assert state_dir_for([], str(linked)) == str(linked.resolve() / "own")
