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


REGISTRY = {
    "pkg/__init__.py": "",
    "pkg/registry.py": "HANDLERS = []\n\n\ndef dispatch(x):\n    return [h(x) for h in HANDLERS]\n",
    "pkg/extra.py": (
        "from pkg.registry import HANDLERS\n\n\ndef handle(x):\n    return x * 2\n\n\n"
        "HANDLERS.append(handle)\n"
    ),
    "pkg/core.py": "def core(x):\n    return x + 1\n",
    # test_a runs handle() only because test_b's module, imported at collection, registered it
    "tests/test_a.py": (
        "from pkg.core import core\nfrom pkg.registry import dispatch\n\n\n"
        "def test_a():\n    dispatch(1)\n    assert core(1) == 2\n"
    ),
    "tests/test_b.py": "import pkg.extra\n\n\ndef test_b():\n    assert pkg.extra.handle(1) == 2\n",
}


def test_re_measured_tests_see_what_every_test_module_s_import_set_up(
    tmp_path: Path, cli: Any
) -> None:
    repo = make_repo(tmp_path / "proj", REGISTRY)
    cli("ingest-coverage", str(repo))
    commit(repo, "pkg/core.py", "def core(x):\n    return 1 + x\n")  # test_a re-measured
    assert cli("ingest-coverage", str(repo))["incremental"] is True
    extra = repo / "pkg/extra.py"
    extra.write_text(extra.read_text().replace("x * 2", "x * 3"))
    # the whole suite runs test_a after test_b's import: it breaks with handle()
    assert set(cli("check", "--repo", str(repo))["tests"]) == {
        "tests/test_a.py::test_a",
        "tests/test_b.py::test_b",
    }


def test_what_a_single_run_cannot_carry_is_measured_whole(tmp_path: Path, cli: Any) -> None:
    repo = make_repo(tmp_path / "proj", FILES)
    cli("ingest-coverage", str(repo), "--runs", "2")  # a union of two runs
    commit(repo, "pkg/text.py", "def shout(s):\n    return s.upper() + ''\n")
    merged = cli("ingest-coverage", str(repo))
    assert merged["incremental"] is False and merged["tests"] == 3

    (repo / "pkg/calc.py").write_text(FILES["pkg/calc.py"].replace("x + 1", "1 + x"))
    dirty = cli("ingest-coverage", str(repo))  # evidence of HEAD is measured on HEAD's tree
    assert dirty["incremental"] is False
    assert dirty["full_because"] == "the working tree has uncommitted changes"
