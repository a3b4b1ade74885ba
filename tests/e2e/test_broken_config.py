"""A target pyproject.toml that no longer parses: read-only commands warn once and read the
intact graph with the default settings, `check` decides run-all, and commands that write
refuse with a short error."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import make_repo

FILES = {
    "pyproject.toml": '[project]\nname = "demo"\n\n[tool.guard]\nmin-confidence = 0\n',
    "pkg/__init__.py": "",
    "pkg/m.py": "def f(x):\n    return x + 1\n\n\ndef g(x):\n    return f(x)\n",
    "tests/test_m.py": "from pkg.m import f, g\n\n\ndef test_f():\n    assert f(1) == 2\n\n\n"
                       "def test_g():\n    assert g(1) == 2\n",
}  # fmt: skip
BROKEN = {
    "unparsable": '[project\nname = "demo"\n',
    "not-utf8": b'[project]\nname = "d\xe9mo"\n',
    "unknown-key": "[tool.guard]\nno-such-setting = 1\n",
    "bad-value": '[tool.guard]\nsubset-threshold = "high"\n',
}


def guard(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "guard_adapters.cli", *args],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip


@pytest.fixture
def ingested(tmp_path: Path, guard_env: str) -> tuple[Path, dict[str, int]]:
    repo = make_repo(tmp_path / "r", FILES)
    out = guard("ingest-coverage", str(repo), "--json")
    assert out.returncode == 0, out.stderr
    stats = json.loads(guard("stats", "--json", "--repo", str(repo)).stdout)
    return repo, stats


def break_config(repo: Path, kind: str) -> None:
    content = BROKEN[kind]
    data = content if isinstance(content, bytes) else content.encode()
    (repo / "pyproject.toml").write_bytes(data)


def warned_once(out: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in out.stderr + out.stdout
    warnings = [line for line in out.stderr.splitlines() if "warning" in line]
    assert len(warnings) == 1, out.stderr
    assert "pyproject.toml" in warnings[0] and "defaults" in warnings[0]


@pytest.mark.parametrize("kind", list(BROKEN))
def test_read_only_commands_warn_and_read_the_intact_graph(
    ingested: tuple[Path, dict[str, int]], kind: str
) -> None:
    repo, before = ingested
    break_config(repo, kind)

    stats = guard("stats", "--json", "--repo", str(repo))
    assert stats.returncode == 0, stats.stderr
    warned_once(stats)
    assert json.loads(stats.stdout) == before

    covering = guard("covering-tests", "pkg/m.py::f", "--repo", str(repo))
    assert covering.returncode == 0, covering.stderr
    warned_once(covering)
    assert "tests/test_m.py::test_f" in covering.stdout

    callers = guard("callers", "pkg/m.py::f", "--repo", str(repo))
    assert callers.returncode == 0, callers.stderr
    warned_once(callers)

    status = guard("server", "status", "--repo", str(repo))
    assert status.returncode == 0, status.stderr
    warned_once(status)

    doctor = guard("doctor", "--repo", str(repo))
    assert "Traceback" not in doctor.stderr
    assert "FAIL configuration" in doctor.stdout and "pyproject.toml" in doctor.stdout
    assert "ok   FalkorDB" in doctor.stdout, doctor.stdout


@pytest.mark.parametrize("kind", list(BROKEN))
def test_check_with_a_broken_pyproject_is_run_all(
    ingested: tuple[Path, dict[str, int]], kind: str
) -> None:
    repo, _ = ingested
    break_config(repo, kind)
    out = guard("check", "--json", "--repo", str(repo))
    assert out.returncode == 0, out.stderr
    warned_once(out)
    decision = json.loads(out.stdout)
    assert decision["level"] == "run-all"
    assert "pyproject.toml" in json.dumps(decision["overrides"])


def test_commands_that_write_refuse_a_broken_pyproject(
    ingested: tuple[Path, dict[str, int]],
) -> None:
    repo, before = ingested
    break_config(repo, "unparsable")
    for command in (["ingest-static", str(repo)], ["init", "--repo", str(repo)]):
        out = guard(*command)
        assert out.returncode == 2, out.stdout + out.stderr
        assert "Traceback" not in out.stderr
        assert "pyproject.toml" in out.stderr
    (repo / "pyproject.toml").write_text(FILES["pyproject.toml"])
    assert json.loads(guard("stats", "--json", "--repo", str(repo)).stdout) == before


def test_a_settings_variable_with_a_bad_value_is_also_only_a_warning(
    ingested: tuple[Path, dict[str, int]],
) -> None:
    repo, before = ingested
    env = {**os.environ, "GUARD_MIN_CONFIDENCE": "lots"}
    out = subprocess.run(
        [sys.executable, "-m", "guard_adapters.cli", "stats", "--json", "--repo", str(repo)],
        capture_output=True, text=True, timeout=120, env=env,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "GUARD_MIN_CONFIDENCE" in out.stderr and "Traceback" not in out.stderr
    assert json.loads(out.stdout) == before
