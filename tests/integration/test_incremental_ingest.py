"""A new commit's `guard ingest-coverage` re-measures only what changed since the evidence it
starts from, through the real CLI, pytest, git and FalkorDB: on a shared TCP server (evidence
kept per commit) and on the session's server over a unix socket."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from guard_adapters.git.repo import head_sha
from tests.conftest import git, make_repo

FILES = {
    "pkg/__init__.py": "",
    "pkg/calc.py": "def one(x):\n    return x + 1\n\n\ndef two(x):\n    return x + 2\n",
    "pkg/text.py": "def shout(s):\n    return s.upper()\n",
    "tests/test_calc.py": (
        "from pkg.calc import one, two\n\n\n"
        "def test_one():\n    assert one(1) == 2\n\n\n"
        "def test_two():\n    assert two(1) == 3\n"
    ),
    "tests/test_text.py": (
        "from pkg.text import shout\n\n\ndef test_shout():\n    assert shout('a') == 'A'\n"
    ),
}
T = "tests/test_calc.py::test_"


@pytest.fixture(params=["tcp_url", "falkordb_url"])
def cli(request: pytest.FixtureRequest) -> Any:
    url = request.getfixturevalue(request.param)
    graph = f"incr:{uuid.uuid4().hex[:8]}"

    def run(*args: str) -> dict[str, Any]:
        done = subprocess.run(
            [sys.executable, "-m", "guard_adapters.cli", *args, "--json"],
            env={**os.environ, "GUARD_FALKORDB_URL": url, "GUARD_GRAPH": graph,
                 "GUARD_WORKER": "0"},
            capture_output=True, text=True, timeout=240,
        )  # fmt: skip
        assert done.returncode in (0, 1), done.stderr
        assert "Traceback" not in done.stderr, done.stderr
        return dict(json.loads(done.stdout))

    return run


def commit(repo: Path, path: str, text: str) -> None:
    (repo / path).write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", f"change {path}")


def test_a_new_commit_re_measures_only_what_its_change_selects(tmp_path: Path, cli: Any) -> None:
    repo = make_repo(tmp_path / "proj", FILES)
    first = cli("ingest-coverage", str(repo))
    assert (first["incremental"], first["tests"]) == (False, 3)
    assert "no coverage evidence" in first["full_because"]

    # one() now calls a new helper: only test_one ran changed code
    commit(repo, "pkg/calc.py", "def _inc(x):\n    return x + 1\n\n\ndef one(x):\n"
           "    return _inc(x)\n\n\ndef two(x):\n    return x + 2\n")  # fmt: skip
    second = cli("ingest-coverage", str(repo))
    assert (second["incremental"], second["tests"]) == (True, 1), second

    # the evidence is HEAD's now: the new helper is covered by the test that ran it ...
    calc = repo / "pkg/calc.py"
    calc.write_text(calc.read_text().replace("return x + 1", "return x + 1 + 0"))
    decision = cli("check", "--repo", str(repo))
    assert decision["tests"] == [f"{T}one"]
    assert decision["reasons"][f"{T}one"][0]["via"] == "pkg/calc.py::_inc"
    git(repo, "checkout", "-q", "--", ".")
    # ... and the evidence of the tests it did not re-measure was carried over
    text = repo / "pkg/text.py"
    text.write_text(text.read_text().replace("s.upper()", "s.upper().strip()"))
    assert cli("check", "--repo", str(repo))["tests"] == ["tests/test_text.py::test_shout"]
    git(repo, "checkout", "-q", "--", ".")

    # a new test is measured with the commit that adds it
    tests = repo / "tests/test_calc.py"
    commit(repo, "tests/test_calc.py",
           tests.read_text() + "\n\ndef test_both():\n    assert two(one(0)) == 3\n")  # fmt: skip
    third = cli("ingest-coverage", str(repo))
    assert third["incremental"] is True and third["tests"] >= 1
    calc.write_text(calc.read_text().replace("return x + 2", "return x + 1 + 1"))
    assert set(cli("check", "--repo", str(repo))["tests"]) == {f"{T}two", f"{T}both"}
    git(repo, "checkout", "-q", "--", ".")


def test_a_failing_test_or_full_measures_the_whole_suite(tmp_path: Path, cli: Any) -> None:
    repo = make_repo(tmp_path / "proj", FILES)
    cli("ingest-coverage", str(repo))
    commit(repo, "pkg/text.py", "def shout(s):\n    return s.lower()\n")  # breaks test_shout
    broken = cli("ingest-coverage", str(repo))
    assert (broken["incremental"], broken["tests"]) == (False, 3)
    assert "not every test passed" in broken["full_because"]
    assert broken["failed"] == ["tests/test_text.py::test_shout"]
    sha = head_sha(repo)
    decision = cli("check", "--repo", str(repo))
    assert decision["level"] != "run-all" and decision["tests"] == []
    again = cli("ingest-coverage", str(repo), "--full")
    assert (again["incremental"], again["full_because"]) == (False, "asked for")
    assert head_sha(repo) == sha
