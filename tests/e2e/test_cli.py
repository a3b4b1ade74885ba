"""The `guard` command itself, in subprocesses, on fresh repositories."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import make_repo


def guard(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items()
            if not k.startswith("GUARD_") or k == "GUARD_WORKER"}  # fmt: skip
    return subprocess.run([sys.executable, "-m", "guard_adapters.cli", *args],
                          capture_output=True, text=True, env={**base, **(env or {})},
                          timeout=120)  # fmt: skip


def test_stats_starts_the_embedded_server_and_reports_zero(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "new", {"a.py": "x = 1\n"})
    try:
        out = guard("stats", "--json", "--repo", str(repo))
        assert out.returncode == 0, out.stderr
        data = json.loads(out.stdout)
        assert data["schema"] == "guard.stats/1"
        assert (data["files"], data["functions"], data["covered_by"]) == (0, 0, 0)
        status = guard("server", "status", "--repo", str(repo))
        assert "running" in status.stdout
        assert (repo / ".guard" / ".gitignore").exists()  # state never shows in a diff
        doctor = guard("doctor", "--repo", str(repo))
        assert doctor.returncode == 1
        assert "FAIL static index" in doctor.stdout and "guard ingest-static" in doctor.stdout
    finally:
        stopped = guard("server", "stop", "--repo", str(repo))
    assert "stopped" in stopped.stdout
    assert "stopped" in guard("server", "status", "--repo", str(repo)).stdout


def test_ingest_and_check_json_through_the_cli(tmp_path: Path, falkordb_url: str) -> None:
    repo = make_repo(tmp_path / "r", {
        "pkg/__init__.py": "",
        "pkg/m.py": "def f(x):\n    return x + 1\n\n\ndef g(x):\n    return x\n",
        "tests/test_m.py": "from pkg.m import f, g\n\n\ndef test_f():\n    assert f(1) == 2\n\n\n"
                           "def test_g():\n    assert g(1) == 1\n",
    })  # fmt: skip
    env = {"GUARD_FALKORDB_URL": falkordb_url, "GUARD_GRAPH": f"test:cli-{os.getpid()}"}
    out = guard("ingest-coverage", str(repo), "--json", env=env)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["tests"] == 2
    (repo / "pkg/m.py").write_text("def f(x):\n    return x + 2\n\n\ndef g(x):\n    return x\n")
    out = guard("check", "--repo", str(repo), "--json", env=env)
    decision = json.loads(out.stdout)
    assert decision["tests"] == ["tests/test_m.py::test_f"]
    assert decision["reasons"]["tests/test_m.py::test_f"][0]["via"] == "pkg/m.py::f"
    shown = guard("check", "--repo", str(repo), env=env)  # a subset lists its tests and why
    assert "tests/test_m.py::test_f" in shown.stdout and "covers pkg/m.py::f" in shown.stdout
    run = guard("run", "--repo", str(repo), env=env)
    assert run.returncode == 1 and "1 selected tests failed" in run.stderr
    bad = guard("check", "--repo", str(tmp_path / "missing"), env=env)
    assert bad.returncode == 2 and "does not exist" in bad.stderr
    assert "Traceback" not in bad.stderr
    guard("ingest-static", str(repo), "--reset", env=env)  # leaves a clean graph behind


def test_changes_slices_with_the_slicer_the_settings_name(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", {"pkg/m.py": "def f():\n    return 1\n"})
    (repo / "pkg/m.py").write_text("def f():\n    return 2\n")
    shown = guard("changes", "--repo", str(repo), "--json")
    assert shown.returncode == 0, shown.stderr
    assert [f["path"] for f in json.loads(shown.stdout)["files"]] == ["pkg/m.py"]
    other = guard("changes", "--repo", str(repo), env={"GUARD_SLICER": "elsewhere"})
    assert other.returncode != 0
    assert "no slicer adapter named 'elsewhere'" in other.stderr + other.stdout
