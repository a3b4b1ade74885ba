"""A repository of two pytest projects (the root's, and one in a subfolder with its own
configuration): the ingest measures each from its own folder, and a change in one project
selects its own tests and nothing of the other's."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import git, make_repo
from tests.e2e.test_cli import guard
from tests.e2e.test_never_a_false_pass import MONOREPO

API = "services/api/tests/test_core.py::"
FILES = {
    **MONOREPO,
    "services/api/api/core.py": "LIMIT = 10\n\n\ndef g(x):\n    return x * 2\n",
    "services/api/tests/test_core.py": MONOREPO["services/api/tests/test_core.py"]
    + "\n\ndef test_limit():\n    from api import core\n\n    assert core.LIMIT == 10\n",
}


@pytest.fixture(scope="module")
def mono(tmp_path_factory: pytest.TempPathFactory, falkordb_url: str) -> Iterator[tuple]:
    repo = make_repo(tmp_path_factory.mktemp("mono") / "repo", FILES)
    env = {"GUARD_FALKORDB_URL": falkordb_url, "GUARD_GRAPH": f"test:monorepo-{os.getpid()}"}
    assert guard("ingest-static", str(repo), "--include-tests", env=env).returncode == 0
    out = guard("ingest-coverage", str(repo), "--json", env=env)
    assert out.returncode == 0, out.stderr
    yield repo, env, json.loads(out.stdout)
    git(repo, "checkout", "-q", "--", ".")


def check(repo: Path, env: dict, path: str, old: str, new: str) -> dict:
    file = repo / path
    file.write_text(file.read_text().replace(old, new))
    try:
        out = guard("check", "--json", "--repo", str(repo), env=env)
        assert out.returncode == 0, out.stderr
        return dict(json.loads(out.stdout))
    finally:
        git(repo, "checkout", "-q", "--", ".")


def test_the_ingest_measures_every_project_from_its_own_folder(mono: tuple) -> None:
    _, _, report = mono
    assert report["tests"] == 4  # the root's test and the three of services/api


def test_a_change_in_the_subfolder_project_selects_its_tests_only(mono: tuple) -> None:
    repo, env, _ = mono
    decision = check(repo, env, "services/api/api/core.py", "x * 2", "x * 3")
    assert decision["level"] == "subset"
    assert decision["tests"] == [f"{API}test_g", f"{API}test_g0"]


def test_a_constant_of_the_subfolder_project_selects_its_reader(mono: tuple) -> None:
    repo, env, _ = mono
    decision = check(repo, env, "services/api/api/core.py", "LIMIT = 10", "LIMIT = 11")
    assert decision["level"] == "subset" and decision["tests"] == [f"{API}test_limit"]


def test_a_change_in_the_root_project_selects_nothing_of_the_subfolders(mono: tuple) -> None:
    repo, env, _ = mono
    decision = check(repo, env, "pkg/m.py", "x + 1", "x + 5")
    assert decision["level"] == "subset" and decision["tests"] == ["tests/test_m.py::test_f"]
