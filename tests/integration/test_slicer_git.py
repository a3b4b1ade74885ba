"""The slicer on real git repositories made in a temp dir."""

from __future__ import annotations

from pathlib import Path

import pytest

from guard_adapters.python.slicer import GitSlicer
from guard_core.errors import RepositoryError
from guard_core.model import ChangeKind, FileKind, FileRole
from tests.conftest import git, make_repo

SRC = "def f(x):\n    return x + 1\n\n\ndef g(x):\n    return f(x) * 2\n"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "r", {
        "pkg/__init__.py": "",
        "pkg/mod.py": SRC,
        "tests/test_mod.py": "from pkg.mod import g\n\ndef test_g():\n    assert g(1) == 4\n",
        "pkg/templates/page.html": "<p>hi</p>\n",
    })  # fmt: skip


def sliced(repo: Path, base: str | None = None) -> tuple[dict, dict, tuple[str, ...]]:
    cs = GitSlicer().slice(repo, base)
    return (
        {f.path: (f.kind, f.role) for f in cs.files},
        {r.id: r.kind for r in cs.regions},
        cs.problems,
    )


def test_clean_tree_is_empty(repo: Path) -> None:
    assert GitSlicer().slice(repo).is_empty


def test_staged_unstaged_and_untracked_are_all_seen(repo: Path) -> None:
    (repo / "pkg/mod.py").write_text(SRC.replace("x + 1", "x + 2"))
    git(repo, "add", "pkg/mod.py")
    (repo / "pkg/mod.py").write_text(SRC.replace("x + 1", "x + 2").replace("* 2", "* 3"))
    (repo / "pkg/new.py").write_text("def h():\n    return 0\n")
    files, regions, problems = sliced(repo)
    assert files == {
        "pkg/mod.py": (FileKind.MODIFIED, FileRole.SOURCE),
        "pkg/new.py": (FileKind.ADDED, FileRole.SOURCE),
    }
    assert regions == {
        "pkg/mod.py::f": ChangeKind.MODIFIED,
        "pkg/mod.py::g": ChangeKind.MODIFIED,
        "pkg/new.py::<module>": ChangeKind.ADDED,
        "pkg/new.py::h": ChangeKind.ADDED,
    }
    assert problems == ()


def test_a_reused_slicer_gives_the_same_answer(repo: Path) -> None:
    """The base side is cached by blob: a second slice must not differ from the first."""
    slicer = GitSlicer()
    (repo / "pkg/mod.py").write_text(SRC.replace("x + 1", "x + 2"))
    first = slicer.slice(repo)
    (repo / "pkg/mod.py").write_text(SRC.replace("* 2", "* 3"))
    second = slicer.slice(repo)
    assert [r.id for r in first.regions] == ["pkg/mod.py::f"]
    assert [(r.id, r.kind) for r in second.regions] == [("pkg/mod.py::g", ChangeKind.MODIFIED)]
    assert second == GitSlicer().slice(repo)


def test_deleted_file_maps_through_the_old_side(repo: Path) -> None:
    (repo / "pkg/mod.py").unlink()
    files, regions, _ = sliced(repo)
    assert files == {"pkg/mod.py": (FileKind.DELETED, FileRole.SOURCE)}
    assert regions == {
        "pkg/mod.py::<module>": ChangeKind.DELETED,
        "pkg/mod.py::f": ChangeKind.DELETED,
        "pkg/mod.py::g": ChangeKind.DELETED,
    }


def test_renamed_file_keeps_old_ids(repo: Path) -> None:
    git(repo, "mv", "pkg/mod.py", "pkg/moved.py")
    cs = GitSlicer().slice(repo)
    [changed] = cs.files
    assert (changed.kind, changed.old_path) == (FileKind.RENAMED, "pkg/mod.py")
    assert [(r.id, r.old_id) for r in cs.regions] == [
        ("pkg/moved.py::<module>", "pkg/mod.py::<module>")
    ]


def test_roles_of_test_conftest_environment_and_data(repo: Path) -> None:
    (repo / "tests/test_mod.py").write_text("def test_g():\n    assert True\n")
    (repo / "tests/conftest.py").write_text("")
    (repo / "pyproject.toml").write_text("[project]\nname='x'\n")
    (repo / "pkg/templates/page.html").write_text("<p>bye</p>\n")
    (repo / "requirements-dev.txt").write_text("pytest\n")
    files, _, _ = sliced(repo)
    assert {p: role for p, (_, role) in files.items()} == {
        "tests/test_mod.py": FileRole.TEST,
        "tests/conftest.py": FileRole.CONFTEST,
        "pyproject.toml": FileRole.ENVIRONMENT,
        "requirements-dev.txt": FileRole.ENVIRONMENT,
        "pkg/templates/page.html": FileRole.DATA,
    }


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        (b"def f(:\n", "does not parse (line 1)"),
        (b"x = '\xff\xfe'\n", "is not UTF-8"),
        (b"\x00\x01binary", "is binary"),
    ],
)
def test_unreadable_source_is_a_problem(repo: Path, data: bytes, problem: str) -> None:
    (repo / "pkg/mod.py").write_bytes(data)
    _, regions, problems = sliced(repo)
    assert regions == {}
    assert len(problems) == 1 and problem in problems[0] and "pkg/mod.py" in problems[0]


def test_hostile_paths(repo: Path) -> None:
    name = 'pkg/we ird "quo\'te" ünï.py'
    (repo / name).write_text("def f():\n    return 1\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "hostile")
    (repo / name).write_text("def f():\n    return 2\n")
    files, regions, problems = sliced(repo)
    assert list(files) == [name] and problems == ()
    assert regions == {f"{name}::f": ChangeKind.MODIFIED}


def test_base_revision(repo: Path) -> None:
    first = git(repo, "rev-parse", "HEAD").strip()
    (repo / "pkg/mod.py").write_text(SRC.replace("* 2", "* 5"))
    git(repo, "commit", "-qam", "second")
    assert GitSlicer().slice(repo).is_empty
    _, regions, _ = sliced(repo, base=first)
    assert regions == {"pkg/mod.py::g": ChangeKind.MODIFIED}
    with pytest.raises(RepositoryError, match="unknown revision"):
        GitSlicer().slice(repo, base="no-such-rev")


def test_not_a_repository_and_no_commits(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(RepositoryError, match="not inside a git repository"):
        GitSlicer().slice(plain)
    empty = make_repo(tmp_path / "empty", {"a.py": "x = 1\n"}, commit=False)
    with pytest.raises(RepositoryError, match="no commits"):
        GitSlicer().slice(empty)
