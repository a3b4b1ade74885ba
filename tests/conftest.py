"""Shared fixtures: one real embedded FalkorDB per test session, one fresh graph per test."""

from __future__ import annotations

import os
import subprocess
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
import redis
from evals.targets import python_of

from guard_adapters.falkordb.embedded import EmbeddedServer

# CLI subprocesses must not leave warm workers behind; tests of the worker turn it back on
os.environ["GUARD_WORKER"] = "0"
from guard_adapters.falkordb.store import FalkorGraphStore, connect

# Under pytest-xdist (the README's test command) these name this process a worker; the pytest
# runs the tests start are not workers of anything (Guard's plug-ins read them)
for _name in ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_XDIST_TESTRUNUID"):
    os.environ.pop(_name, None)
# The pytest runs the tests start load every plug-in this environment installs; Hypothesis's
# imports all of Hypothesis at the end of each run (over a second here, most of a small run's
# time), and the sample projects have no Hypothesis test
os.environ["PYTEST_ADDOPTS"] = " ".join(
    filter(None, (os.environ.get("PYTEST_ADDOPTS"), "-p no:hypothesispytest"))
)


@pytest.fixture(scope="session", autouse=True)
def _own_cache_folder(tmp_path_factory: pytest.TempPathFactory) -> None:
    """What Guard remembers per user (the fast path's state folders) stays in this session."""
    os.environ["XDG_CACHE_HOME"] = str(tmp_path_factory.mktemp("cache"))


@pytest.fixture(scope="session")
def falkordb_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    server = EmbeddedServer(tmp_path_factory.mktemp("falkordb"))
    url = server.ensure_running()
    # No periodic snapshots: a background save forked while GRAPH.COPY forks (the hostile
    # suite copies graphs) leaves FalkorDB unable to fork again, and it stops answering.
    client = redis.Redis(unix_socket_path=str(server.socket))
    client.config_set("save", "")
    client.close()
    yield url
    server.stop()


@pytest.fixture
def store(falkordb_url: str) -> Iterator[FalkorGraphStore]:
    graph = FalkorGraphStore(connect(falkordb_url), f"test:{uuid.uuid4().hex[:12]}")
    graph.ensure_schema()
    yield graph
    graph.clear()
    graph.close()


def git(repo: Path, *args: str) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com",
    }  # fmt: skip
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True, env=env
    ).stdout


def make_repo(root: Path, files: dict[str, str], commit: bool = True) -> Path:
    """A real git repository with ``files`` committed."""
    root.mkdir(parents=True, exist_ok=True)
    git(root, "init", "-q", "-b", "main")
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    if commit:
        git(root, "add", "-A")
        git(root, "commit", "-q", "-m", "initial")
    return root


@pytest.fixture
def guard_env(falkordb_url: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """Point Guard (in-process and subprocesses) at the session server with a fresh graph, kept
    as one graph like the embedded server's (evidence per commit has its own tests)."""
    graph = f"test:{uuid.uuid4().hex[:12]}"
    monkeypatch.setenv("GUARD_FALKORDB_URL", falkordb_url)
    monkeypatch.setenv("GUARD_GRAPH", graph)
    monkeypatch.setenv("GUARD_EVIDENCE_BASES", "1")
    return graph


def venv_with_pytest(tmp_path_factory: pytest.TempPathFactory, minors: Sequence[int]) -> str:
    """A virtualenv of the first Python 3.``minor`` found, with pytest and coverage (skips
    the test when there is none, or nothing can be installed)."""
    base = next(filter(None, map(python_of, minors)), None)
    if base is None:
        pytest.skip(f"no Python 3.{'/3.'.join(map(str, minors))} on this machine")
    venv = tmp_path_factory.mktemp("py") / "venv"
    subprocess.run([base, "-m", "venv", str(venv)], check=True)
    pip = subprocess.run([str(venv / "bin/python"), "-m", "pip", "install", "-q", "pytest<9",
                          "coverage"], capture_output=True, text=True)  # fmt: skip
    if pip.returncode != 0:
        pytest.skip(f"cannot install pytest for {base}: {pip.stderr[-200:]}")
    return str(venv / "bin/python")


@pytest.fixture(scope="session")
def monitoring_python(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A Python >= 3.12 with pytest and coverage: the collector uses ``sys.monitoring``."""
    return venv_with_pytest(tmp_path_factory, (12, 13, 14))


@pytest.fixture(scope="session", params=[10, 13], ids=lambda minor: f"py3{minor}")
def matrix_python(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> str:
    """The oldest and the newest Python Guard supports here besides this one (3.10: the
    coverage.py tracer; 3.13: sys.monitoring), with pytest and coverage."""
    return venv_with_pytest(tmp_path_factory, (request.param,))
