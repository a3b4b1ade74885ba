"""Never a pass for tests that did not run, never a traceback on a state folder that cannot be
written: `guard run`, `pytest --guard` and the Stop hook on a repository holding a second pytest
project, and every command on a read-only `.guard/`."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import git, make_repo
from tests.e2e.test_cli import guard

MONOREPO = {
    "pyproject.toml": '[tool.pytest.ini_options]\ntestpaths = ["tests"]\n',
    "pkg/__init__.py": "",
    "pkg/m.py": "def f(x):\n    return x + 1\n",
    "tests/test_m.py": "from pkg.m import f\n\n\ndef test_f():\n    assert f(1) == 2\n",
    # its own configuration: pytest at the root, with the root's testpaths, never runs these
    "services/api/pyproject.toml": (
        '[tool.pytest.ini_options]\ntestpaths = ["tests"]\npythonpath = ["."]\n'
    ),
    "services/api/api/__init__.py": "",
    "services/api/api/core.py": "def g(x):\n    return x * 2\n",
    "services/api/tests/test_core.py": (
        "from api.core import g\n\n\ndef test_g():\n    assert g(2) == 4\n\n\n"
        "def test_g0():\n    assert g(0) == 0\n"
    ),
}


@pytest.fixture(scope="module")
def monorepo(tmp_path_factory: pytest.TempPathFactory, falkordb_url: str) -> tuple[Path, dict]:
    repo = make_repo(tmp_path_factory.mktemp("mono") / "repo", MONOREPO)
    env = {"GUARD_FALKORDB_URL": falkordb_url, "GUARD_GRAPH": f"test:mono-{os.getpid()}"}
    assert guard("ingest-static", str(repo), "--include-tests", env=env).returncode == 0
    out = guard("ingest-coverage", str(repo), env=env)
    assert out.returncode == 0, out.stderr
    return repo, env


@pytest.fixture
def mono(monorepo: tuple[Path, dict]) -> tuple[Path, dict]:
    repo, env = monorepo
    yield repo, env
    git(repo, "checkout", "-q", "--", ".")
    git(repo, "clean", "-qfd")


def pytest_guard(repo: Path, env: dict, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "--guard", "-q", "-p", "no:cacheprovider", *args],
        cwd=repo, capture_output=True, text=True, timeout=120,
        env={**os.environ, **env, "GUARD_WORKER": "0"},
    )  # fmt: skip


def replace(repo: Path, path: str, old: str, new: str) -> None:
    file = repo / path
    file.write_text(file.read_text().replace(old, new))


def test_a_breaking_edit_in_the_subfolder_project_fails_guard_run(mono: tuple) -> None:
    repo, env = mono
    replace(repo, "services/api/api/core.py", "x * 2", "x * 3")
    run = guard("run", "--repo", str(repo), "--no-refresh", env=env)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "tests/test_core.py::test_g" in run.stdout  # run from its own folder, and it failed
    assert "Traceback" not in run.stderr


def test_a_breaking_edit_in_the_root_project_fails_guard_run(mono: tuple) -> None:
    repo, env = mono
    replace(repo, "pkg/m.py", "x + 1", "x + 5")
    run = guard("run", "--repo", str(repo), "--no-refresh", env=env)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "1 selected tests failed" in run.stderr


def test_a_run_all_passes_only_after_running_both_projects(mono: tuple) -> None:
    repo, env = mono
    replace(repo, "pyproject.toml", "[tool.pytest", "# changed\n[tool.pytest")  # run-all
    run = guard("run", "--repo", str(repo), "--no-refresh", env=env)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "2 passed" in run.stdout and "1 passed" in run.stdout  # one pytest run each


def test_selected_tests_the_project_configuration_leaves_out_are_no_pass(mono: tuple) -> None:
    repo, env = mono
    # the subfolder's own configuration now deselects what Guard selects
    replace(repo, "services/api/pyproject.toml", "pythonpath", 'addopts = "-k g0"\npythonpath')
    replace(repo, "services/api/api/core.py", "return x * 2", "y = x\n    return y * 2")
    run = guard("run", "--repo", str(repo), "--no-refresh", env=env)
    assert run.returncode == 2, run.stdout + run.stderr
    assert "services/api/tests/test_core.py::test_g" in run.stderr
    assert "did not run" in run.stderr


def test_pytest_guard_at_the_root_does_not_pass_for_the_other_project(mono: tuple) -> None:
    repo, env = mono
    replace(repo, "services/api/api/core.py", "x * 2", "x * 3")
    out = pytest_guard(repo, env)
    assert out.returncode == 2, out.stdout + out.stderr
    assert "services/api/tests/test_core.py::test_g" in out.stdout


def test_the_stop_hook_blocks_when_selected_tests_did_not_run(mono: tuple) -> None:
    repo, env = mono
    replace(repo, "services/api/pyproject.toml", "pythonpath", 'addopts = "-k g0"\npythonpath')
    replace(repo, "services/api/api/core.py", "return x * 2", "y = x\n    return y * 2")
    hook = subprocess.run(
        [sys.executable, "-m", "guard_adapters.cli", "hook", "claude-stop"],
        cwd=repo, input=json.dumps({"session_id": "s"}), capture_output=True, text=True,
        timeout=120, env={**os.environ, **env, "GUARD_REFRESH_EVIDENCE": "0"},
    )  # fmt: skip
    reply = json.loads(hook.stdout)
    assert reply.get("decision") == "block", reply
    assert "test_core.py::test_g" in reply["reason"]


def _read_only(folder: Path) -> list[str] | None:
    """A command prefix that runs its command with ``folder`` mounted read-only (root ignores
    permission bits, not a read-only mount), or None where mount namespaces are not allowed."""
    unshare = shutil.which("unshare")
    if unshare is None:
        return None
    d = str(folder)
    script = f'mount --bind "{d}" "{d}" && mount -o remount,ro,bind "{d}" "{d}" && exec "$@"'
    prefix = [unshare, "-m", "sh", "-c", script, "sh"]
    probe = subprocess.run([*prefix, "touch", str(folder / "probe")], capture_output=True)
    if probe.returncode == 0 or b"Read-only" not in probe.stderr:
        (folder / "probe").unlink(missing_ok=True)
        return None
    return prefix


def test_a_read_only_state_folder_widens_or_refuses_without_a_traceback(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "ro", {k: v for k, v in MONOREPO.items() if "services" not in k})
    (repo / ".guard").mkdir()
    prefix = _read_only(repo / ".guard")
    if prefix is None:
        pytest.skip("no mount namespace here to make a read-only folder that root respects")
    base = {k: v for k, v in os.environ.items() if not k.startswith("GUARD_")}

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*prefix, sys.executable, "-m", "guard_adapters.cli", *args], cwd=repo,
            capture_output=True, text=True, timeout=120, env={**base, "GUARD_WORKER": "0"},
        )  # fmt: skip

    replace(repo, "pkg/m.py", "x + 1", "x + 5")
    check = cli("check", "--repo", str(repo), "--json")
    assert check.returncode == 0 and "Traceback" not in check.stderr, check.stderr
    decision = json.loads(check.stdout)
    assert decision["level"] == "run-all" and decision["tests"] is None
    assert "state folder not writable" in json.dumps(decision["overrides"])
    run = cli("run", "--repo", str(repo))
    assert run.returncode == 1 and "Traceback" not in run.stderr, run.stderr  # ran, and failed
    for writing in (["ingest-static", str(repo)], ["ingest-coverage", str(repo)], ["stats"]):
        out = cli(*writing)
        assert out.returncode == 2, (writing, out.stdout, out.stderr)
        assert "Traceback" not in out.stderr and "state folder not writable" in out.stderr
    assert sorted(p.name for p in (repo / ".guard").iterdir()) == []  # nothing left behind


def test_pytest_guard_under_xdist_does_not_pass_for_the_other_project(mono: tuple) -> None:
    repo, env = mono
    replace(repo, "services/api/api/core.py", "return x * 2", "y = x\n    return y * 2")
    out = pytest_guard(repo, env, "-n", "2")
    assert out.returncode == 2, out.stdout + out.stderr
    assert "services/api/tests/test_core.py::test_g" in out.stdout


def test_a_test_pytest_never_collects_here_is_not_an_unrun_test(tmp_path: Path) -> None:
    """The static index lists a test pytest does not collect on this platform: a run-all
    that ran everything else passes."""
    files = {k: v for k, v in MONOREPO.items() if "services" not in k}
    files["tests/test_m.py"] += (
        "\n\nimport sys\n\nif sys.platform == 'nowhere':\n"
        "    def test_elsewhere():\n        assert False\n"
    )
    repo = make_repo(tmp_path / "plat", files)
    env = {"GUARD_REFRESH_EVIDENCE": "0"}  # the embedded server, stopped below
    out = guard("ingest-static", str(repo), "--include-tests", env=env)
    assert out.returncode == 0, out.stderr
    try:
        (repo / "pkg/m.py").write_text("def f(x):\n    return 1 + x\n")  # no evidence: run-all
        run = guard("run", "--repo", str(repo), env=env)
        assert "run-all" in run.stdout, run.stdout + run.stderr
        assert run.returncode == 0, run.stdout + run.stderr
    finally:
        guard("server", "stop", "--repo", str(repo))


def test_nested_projects_are_found_except_where_pytest_never_recurses(tmp_path: Path) -> None:
    from guard_adapters.pytest.projects import subprojects

    repo = make_repo(tmp_path / "nested", {
        "pyproject.toml": '[tool.pytest.ini_options]\nnorecursedirs = ["examples", ".*"]\n',
        "services/api/pytest.ini": "",  # an empty pytest.ini configures pytest too
        "services/web/setup.cfg": "[metadata]\nname = web\n",  # no pytest settings
        "services/cli/tox.ini": "[pytest]\naddopts = -q\n",
        "examples/demo/pytest.ini": "[pytest]\n",  # test data: pytest never goes there
    })  # fmt: skip
    assert subprojects(repo) == ("services/api", "services/cli")
