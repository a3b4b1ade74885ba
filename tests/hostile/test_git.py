"""Hostile git: user and repository config that changes what git prints, merge conflicts
(unmerged index entries), `--repo` in a subdirectory, no commits, no git, linked worktrees,
stashes and a caller's GIT_* environment."""

from __future__ import annotations

import shutil
import stat
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.hostile.conftest import Sample
from tests.hostile.harness import (
    SAMPLE,
    SUITE,
    C,
    assert_clear_error,
    assert_error_or_wider,
    assert_no_traceback,
    assert_wider,
    build_repo,
    git,
    guard_env,
    replace,
    run_guard,
    summary,
    tree_changes,
    tree_state,
    unique_graph,
    write,
)

MUL = [C + "test_mul", C + "test_mul_param"]
NEW = "tests/test_new.py::test_new_fails"
UNICODE_NEW = "tests/test_ünï_名前.py::test_unicode_fails"


def break_mul(repo: Path) -> None:
    replace(repo, "pkg/core.py", "return a * b", "return a * b + 1")


def new_failing_test(repo: Path) -> None:
    write(repo, "tests/test_new.py", "def test_new_fails():\n    assert 1 + 1 == 3\n")


def new_unicode_test(repo: Path) -> None:
    write(repo, "tests/test_ünï_名前.py", "def test_unicode_fails():\n    assert 'ü' == 'u'\n")


def rename_helpers(repo: Path) -> None:
    git(repo, "mv", "pkg/helpers.py", "pkg/helpers2.py")


def copy_and_break(repo: Path) -> None:
    shutil.copy(repo / "pkg/core.py", repo / "pkg/core_copy.py")
    git(repo, "add", "pkg/core_copy.py")
    break_mul(repo)


def _external_diff(tmp: Path) -> str:
    script = tmp / "garbage-diff.sh"
    script.write_text("#!/bin/sh\necho 'diff --git a/nothing b/nothing'\necho '+++ garbage'\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return str(script)


def _textconv(tmp: Path) -> dict[str, str]:
    attributes = tmp / "attributes"
    attributes.write_text("*.py diff=hostile\n*.txt diff=hostile\n")
    return {"core.attributesFile": str(attributes), "diff.hostile.textconv": "echo converted"}


def _excludes(tmp: Path) -> dict[str, str]:
    excludes = tmp / "excludes"
    excludes.write_text("test_new.py\nextra.py\n")
    return {"core.excludesFile": str(excludes)}


# name -> (config, given a temp dir; the edit; the tests it breaks; the new tests it adds)
CONFIGS: dict[
    str, tuple[Callable[[Path], dict[str, str]], Callable[[Path], None], list[str], list[str]]
] = {
    "color.ui=always": (lambda t: {"color.ui": "always"}, break_mul, MUL, []),
    "color.diff+status=always": (
        lambda t: {"color.diff": "always", "color.status": "always", "color.ui": "always"},
        lambda r: (break_mul(r), new_failing_test(r)),
        [*MUL, NEW],
        [NEW],
    ),
    "diff.noprefix": (lambda t: {"diff.noprefix": "true"}, break_mul, MUL, []),
    "diff.mnemonicPrefix": (lambda t: {"diff.mnemonicPrefix": "true"}, break_mul, MUL, []),
    "diff.src+dstPrefix": (
        lambda t: {"diff.srcPrefix": "x y/", "diff.dstPrefix": "b/a/"},
        break_mul,
        MUL,
        [],
    ),
    "diff.external": (lambda t: {"diff.external": _external_diff(t)}, break_mul, MUL, []),
    "diff.textconv": (_textconv, break_mul, MUL, []),
    "diff.renames=copies:rename": (
        lambda t: {"diff.renames": "copies", "status.renames": "copies"},
        rename_helpers,
        list(SUITE),
        [],
    ),
    "diff.renames=copies:copy": (
        lambda t: {"diff.renames": "copies", "status.renames": "copies"},
        copy_and_break,
        MUL,
        [],
    ),
    "status.showUntrackedFiles=no:test": (
        lambda t: {"status.showUntrackedFiles": "no"},
        new_failing_test,
        [NEW],
        [NEW],
    ),
    "status.showUntrackedFiles=no:module": (
        lambda t: {"status.showUntrackedFiles": "no"},
        lambda r: (write(r, "pkg/extra.py", "EXTRA = 1\n"), break_mul(r)),
        [*MUL, "tests/test_optional.py::test_extra_absent"],
        [],
    ),
    "diff.relative": (lambda t: {"diff.relative": "true"}, break_mul, MUL, []),
    "core.quotePath=true": (
        lambda t: {"core.quotePath": "true"},
        new_unicode_test,
        [UNICODE_NEW],
        [UNICODE_NEW],
    ),
    "core.quotePath=false": (
        lambda t: {"core.quotePath": "false"},
        new_unicode_test,
        [UNICODE_NEW],
        [UNICODE_NEW],
    ),
    "core.excludesFile": (_excludes, new_failing_test, [NEW], [NEW]),
    "diff.context=0": (
        lambda t: {"diff.context": "0", "diff.interHunkContext": "0"},
        break_mul,
        MUL,
        [],
    ),
    "core.autocrlf": (
        lambda t: {"core.autocrlf": "true", "core.safecrlf": "true"},
        break_mul,
        MUL,
        [],
    ),
    "log+format": (
        lambda t: {
            "format.pretty": "oneline %H junk",
            "log.showSignature": "true",
            "log.decorate": "full",
            "core.abbrev": "4",
        },
        break_mul,
        MUL,
        [],
    ),
}


def _write_config(path: Path, config: dict[str, str]) -> None:
    for key, value in config.items():
        git(path.parent, "config", "--file", str(path), key, value)


@pytest.mark.parametrize("scope", ["global", "local"])
@pytest.mark.parametrize("name", list(CONFIGS))
def test_hostile_git_config(sample: Sample, tmp_path: Path, name: str, scope: str) -> None:
    make, edit, must, new = CONFIGS[name]
    config = make(tmp_path)
    env: dict[str, str] = {}
    if scope == "global":
        _write_config(tmp_path / "gitconfig", config)
        env["GIT_CONFIG_GLOBAL"] = str(tmp_path / "gitconfig")
    else:
        _write_config(sample.repo / ".git" / "config", config)
    edit(sample.repo)
    cwd = sample.repo / "tests" if name == "diff.relative" else None
    out = sample.guard("check", "--repo", str(sample.repo), "--json", env=env, cwd=cwd)
    assert_no_traceback(out)
    assert out.returncode == 0, out.describe()
    decision = out.json()
    assert_wider(decision, must, [*SUITE, *new])
    sample.assert_graph_unchanged()
    if scope == "global":
        sample.assert_run_fails(env=env)


# -- merge conflicts -----------------------------------------------------------------------


def _conflict(repo: Path, path: str, old: str, ours: str, theirs: str) -> None:
    git(repo, "checkout", "-q", "-B", "theirs")
    replace(repo, path, old, theirs)
    git(repo, "commit", "-qam", "theirs")
    git(repo, "checkout", "-q", "main")
    replace(repo, path, old, ours)
    git(repo, "commit", "-qam", "ours")
    git(repo, "merge", "-q", "theirs", check=False)
    assert "U" in git(repo, "status", "--porcelain").split()[0], "no conflict was made"


def test_merge_conflict_markers_in_module(sample: Sample) -> None:
    _conflict(sample.repo, "pkg/core.py", "return a * b", "return a * b + 2", "return a * b + 3")
    decision = sample.check()
    assert_wider(decision, SUITE, SUITE)  # conftest imports pkg.core: every test breaks
    sample.assert_graph_unchanged()
    sample.assert_run_fails()


def test_merge_conflict_resolved_in_tree_but_unmerged_in_index(sample: Sample) -> None:
    _conflict(sample.repo, "pkg/core.py", "return a * b", "return a * b + 2", "return a * b + 3")
    text = (sample.repo / "pkg/core.py").read_text()
    start, end = text.index("<<<<<<<"), text.index(">>>>>>>")
    end = text.index("\n", end) + 1
    write(sample.repo, "pkg/core.py", text[:start] + "    return a * b + 5\n" + text[end:])
    decision = sample.check()
    assert_wider(decision, MUL, SUITE)
    sample.assert_graph_unchanged()
    sample.assert_run_fails()


def test_merge_conflict_in_data_file(sample: Sample) -> None:
    _conflict(sample.repo, "pkg/data/words.txt", "beta", "gamma", "delta")
    decision = sample.check()
    assert_wider(decision, ["tests/test_text.py::test_words"], SUITE)
    sample.assert_graph_unchanged()
    sample.assert_run_fails()


# -- where the repository is, and what it is -----------------------------------------------


@pytest.mark.parametrize("sub", ["pkg", "tests", "tests/deep"])
def test_repo_option_points_into_a_subdirectory(sample: Sample, sub: str) -> None:
    break_mul(sample.repo)
    out = sample.guard("check", "--repo", str(sample.repo / sub), "--json")
    assert_error_or_wider(out, MUL, SUITE)
    sample.assert_run_fails(repo=sample.repo / sub)


def test_repo_dot_from_a_subdirectory(sample: Sample) -> None:
    break_mul(sample.repo)
    out = sample.guard("check", "--repo", ".", "--json", cwd=sample.repo / "tests")
    assert_error_or_wider(out, MUL, SUITE)


def _unrelated_repo(
    tmp_path: Path, falkordb_url: str, *, git_init: bool, commit: bool
) -> tuple[Path, dict[str, str]]:
    files = {**SAMPLE, "tests/test_new.py": "def test_new_fails():\n    assert 1 + 1 == 3\n"}
    repo = tmp_path / "repo"
    if git_init:
        build_repo(repo, files, commit=commit)
    else:
        for name, text in files.items():
            write(repo, name, text)
    return repo, guard_env(falkordb_url, unique_graph("nogit"))


@pytest.mark.parametrize(
    ("git_init", "commit"), [(True, False), (False, False)], ids=["no-commits", "not-a-git-repo"]
)
def test_repository_without_history(
    tmp_path: Path, falkordb_url: str, git_init: bool, commit: bool
) -> None:
    repo, env = _unrelated_repo(tmp_path, falkordb_url, git_init=git_init, commit=commit)
    before = tree_state(repo)
    out = run_guard(env, "check", "--repo", str(repo), "--json")
    assert_no_traceback(out)
    if out.returncode == 2:
        assert_clear_error(out)
    else:
        assert out.returncode == 0, out.describe()
        decision = out.json()
        assert decision["level"] == "run-all", summary(decision)
        assert_wider(decision, [NEW], [*SUITE, NEW])
    run = run_guard(env, "run", "--repo", str(repo))
    assert_no_traceback(run, guard_frames_only=True)
    assert run.returncode != 0, "false pass\n" + run.describe()
    for command in (
        ("stats", "--json"),
        ("callers", "pkg/core.py::mul"),
        ("covering-tests", "pkg/core.py::mul"),
    ):
        out = run_guard(env, command[0], "--repo", str(repo), *command[1:])
        assert_no_traceback(out)
        assert out.returncode in (0, 2), out.describe()
    assert not tree_changes(before, tree_state(repo))


def test_detached_head(sample: Sample) -> None:
    git(sample.repo, "checkout", "-q", "--detach")
    break_mul(sample.repo)
    assert_wider(sample.check(), MUL, SUITE)
    sample.assert_graph_unchanged()


def test_committed_edit_on_top_of_the_evidence(sample: Sample) -> None:
    break_mul(sample.repo)
    git(sample.repo, "commit", "-qam", "break mul")
    assert_wider(sample.check(), MUL, SUITE)
    sample.assert_run_fails()


def test_linked_worktree(sample: Sample, tmp_path: Path) -> None:
    linked = tmp_path / "linked tree"
    git(sample.repo, "worktree", "add", "-q", "--detach", str(linked))
    try:
        break_mul(linked)
        out = sample.guard("check", "--repo", str(linked), "--json")
        assert_error_or_wider(out, MUL, SUITE)
    finally:
        git(sample.repo, "worktree", "remove", "--force", str(linked))


def test_existing_stash_and_staged_edit(sample: Sample) -> None:
    replace(sample.repo, "pkg/helpers.py", "return x * 2", "return x * 3")
    git(sample.repo, "stash", "-q")
    break_mul(sample.repo)
    git(sample.repo, "add", "pkg/core.py")
    replace(sample.repo, "pkg/core.py", "return clamp(a + b", "return clamp(a - b")
    decision = sample.check()
    assert_wider(decision, [*MUL, C + "test_add"], SUITE)
    sample.assert_run_fails()


@pytest.mark.parametrize("variable", ["GIT_DIR", "GIT_INDEX_FILE", "GIT_WORK_TREE"])
def test_caller_git_environment(sample: Sample, tmp_path: Path, variable: str) -> None:
    other = build_repo(tmp_path / "other", {"a.py": "x = 1\n"})
    value = {
        "GIT_DIR": str(other / ".git"),
        "GIT_INDEX_FILE": str(tmp_path / "empty-index"),
        "GIT_WORK_TREE": str(other),
    }[variable]
    break_mul(sample.repo)
    out = sample.guard("check", "--repo", str(sample.repo), "--json", env={variable: value})
    assert_error_or_wider(out, MUL, SUITE)
    sample.assert_graph_unchanged()


def test_check_after_a_cli_ingest_leaves_git_status_clean(
    tmp_path: Path, falkordb_url: str
) -> None:
    """A repository ingested with `guard ingest-coverage` (shared server, no `guard init`):
    a later `guard check` must not make Guard's state show up in `git status`."""
    repo = build_repo(tmp_path / "repo", SAMPLE)
    env = guard_env(falkordb_url, unique_graph("status"))
    out = run_guard(env, "ingest-coverage", str(repo), "--json")
    assert out.returncode == 0, out.describe()
    git(repo, "clean", "-qfdx")
    break_mul(repo)
    before = tree_state(repo)
    out = run_guard(env, "check", "--repo", str(repo), "--json")
    assert out.returncode == 0, out.describe()
    assert_wider(out.json(), MUL, SUITE)
    changed = tree_changes(before, tree_state(repo))
    assert not changed, f"guard check changed what git shows: {changed}"
