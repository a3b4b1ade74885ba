"""``pytest --guard`` on a real project: real pytest subprocesses, real FalkorDB."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from guard_adapters.coverage.ingest import ingest_coverage
from guard_core.api import Guard
from tests.conftest import make_repo
from tests.integration.sample_project import FILES

PROJECT = {
    **FILES,
    "tests/test_a.py": FILES["tests/test_a.py"].replace("assert n % 2 == 0", "assert True"),
}


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory, falkordb_url: str) -> Iterator[dict]:
    root = tmp_path_factory.mktemp("plugin")
    repo = make_repo(root / "sample", PROJECT)
    env = {
        **os.environ,
        "GUARD_FALKORDB_URL": falkordb_url,
        "GUARD_WORKER": "0",
        "GUARD_GRAPH": f"test:plugin-{os.getpid()}",
        "FLAKY_COUNTER": str(root / "n"),
    }
    with Guard.open(repo, env=env) as g:
        g.store.clear()
        g.store.ensure_schema()
        os.environ["FLAKY_COUNTER"] = env["FLAKY_COUNTER"]
        ingest_coverage(repo, g.store)
        yield {"repo": repo, "env": env}
        g.store.clear()


@pytest.fixture
def repo(project: dict) -> Iterator[Path]:
    yield project["repo"]
    subprocess.run(["git", "-C", str(project["repo"]), "checkout", "-q", "--", "."], check=True)


def pytest_in(project: dict, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
        cwd=project["repo"], env={**project["env"], **env}, capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip


def break_mul(repo: Path) -> None:
    core = repo / "pkg/core.py"
    core.write_text(core.read_text().replace("return a * b", "return a * b + 1"))


def test_a_breaking_edit_runs_the_failing_tests_and_deselects_the_rest(
    project: dict, repo: Path
) -> None:
    break_mul(repo)
    out = pytest_in(project, "--guard", "-q")
    assert out.returncode == 1, out.stdout + out.stderr
    assert "3 failed" in out.stdout and "deselected" in out.stdout  # test_param[1,2], double
    assert "test_add" not in out.stdout.replace("deselected", "")


def test_no_edit_runs_nothing_and_passes(project: dict, repo: Path) -> None:
    out = pytest_in(project, "--guard", "-q")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "passed" not in out.stdout and "deselected" in out.stdout


def test_k_narrows_the_selection_further(project: dict, repo: Path) -> None:
    break_mul(repo)
    out = pytest_in(project, "--guard", "-q", "-k", "double")
    assert out.returncode == 1 and "1 failed" in out.stdout, out.stdout


def test_the_ini_option_turns_it_on_and_explain_says_why(project: dict, repo: Path) -> None:
    break_mul(repo)
    out = pytest_in(project, "-q", "-o", "guard=true", "--guard-explain")
    assert out.returncode == 1 and "deselected" in out.stdout
    assert "covers pkg/core.py::mul" in out.stdout


def test_an_unreachable_graph_runs_every_test_with_one_warning(project: dict, repo: Path) -> None:
    break_mul(repo)
    out = pytest_in(project, "--guard", "-q", GUARD_FALKORDB_URL="redis://127.0.0.1:1")
    assert out.returncode == 1
    assert "deselected" not in out.stdout and "guard: " in out.stdout
    assert "Traceback" not in out.stdout + out.stderr
    assert "3 failed, 5 passed" in out.stdout  # every test ran


def test_xdist_workers_select_the_same_tests(project: dict, repo: Path) -> None:
    break_mul(repo)
    out = pytest_in(project, "--guard", "-q", "-n", "2")
    assert out.returncode == 1 and "3 failed" in out.stdout, out.stdout
    assert "passed" not in out.stdout


@pytest.fixture
def fresh(tmp_path: Path, falkordb_url: str) -> Iterator[dict]:
    """A project with a graph of its own: a refresh moves its evidence base."""
    repo = make_repo(tmp_path / "sample", PROJECT)
    env = {**os.environ, "GUARD_FALKORDB_URL": falkordb_url, "GUARD_WORKER": "0",
           "GUARD_GRAPH": f"test:plugin-refresh-{tmp_path.name}", "GUARD_REFRESH_EVIDENCE": "1",
           "FLAKY_COUNTER": str(tmp_path / "n")}  # fmt: skip
    with Guard.open(repo, env=env) as g:
        g.store.clear()
        g.store.ensure_schema()
        ingest_coverage(repo, g.store)
        yield {"repo": repo, "env": env, "guard": g}
        g.store.clear()


def swap_mul(repo: Path) -> None:
    core = repo / "pkg/core.py"
    core.write_text(core.read_text().replace("return a * b", "return b * a"))


def test_a_passing_run_refreshes_the_evidence_so_the_next_check_is_small(fresh: dict) -> None:
    guard = fresh["guard"]
    before = guard.store.ingest_info().coverage_sha
    swap_mul(fresh["repo"])
    assert guard.check().tests  # the edit needs tests
    out = pytest_in(fresh, "--guard", "-q")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "evidence refreshed" in out.stdout, out.stdout
    assert guard.store.ingest_info().coverage_sha != before
    assert guard.check().tests == ()  # the evidence base holds the edit now


def test_a_narrowed_or_failing_run_keeps_the_evidence(fresh: dict) -> None:
    guard = fresh["guard"]
    before = guard.store.ingest_info().coverage_sha
    swap_mul(fresh["repo"])
    out = pytest_in(fresh, "--guard", "-q", "-k", "double")
    assert out.returncode == 0 and "evidence not refreshed" in out.stdout, out.stdout
    out = pytest_in(fresh, "--guard", "-q", "tests/test_b.py")  # a path: part of the suite
    assert out.returncode == 0 and "evidence not refreshed" in out.stdout, out.stdout
    out = pytest_in(fresh, "--guard", "-q", "--guard-no-refresh")
    assert out.returncode == 0 and "refreshed" not in out.stdout, out.stdout
    subprocess.run(["git", "-C", str(fresh["repo"]), "checkout", "-q", "--", "."], check=True)
    break_mul(fresh["repo"])
    out = pytest_in(fresh, "--guard", "-q")
    assert out.returncode == 1 and "evidence not refreshed" in out.stdout, out.stdout
    assert guard.store.ingest_info().coverage_sha == before


def test_a_warm_worker_answers_the_next_run_with_the_same_selection(
    project: dict, repo: Path
) -> None:
    from guard_adapters.worker.client import stop_worker, worker_pid, worker_socket

    state = repo / ".guard"
    state.mkdir(exist_ok=True)  # as `guard init` leaves it: the worker's socket lives there
    break_mul(repo)
    args = ("--guard", "-q", "--guard-no-refresh", "--guard-explain")
    try:
        here = pytest_in(project, *args, GUARD_WORKER="1")  # decides here, starts a worker
        for _ in range(100):
            if Path(worker_socket(state)).exists():
                break
            time.sleep(0.1)
        pid = worker_pid(state)
        assert pid is not None, "no worker started"
        warm = pytest_in(project, *args, GUARD_WORKER="1")
        assert worker_pid(state) == pid  # it answered: a worker that steps aside exits
        for out in (here, warm):
            assert out.returncode == 1 and "3 failed" in out.stdout, out.stdout
            assert "deselected" in out.stdout and "covers pkg/core.py::mul" in out.stdout
        assert warm.stdout.count("covers") == here.stdout.count("covers")
    finally:
        stop_worker(state)
        for _ in range(50):
            if worker_pid(state) is None:
                break
            time.sleep(0.1)
    assert worker_pid(state) is None


def test_the_ci_step_summary_says_what_ran_and_why(
    project: dict, repo: Path, tmp_path: Path
) -> None:
    from guard_adapters.summary import markdown_summary

    break_mul(repo)
    with Guard.open(repo, env=project["env"]) as g:
        decision = g.check()
    assert decision.level.value == "subset" and decision.tests
    cli = subprocess.run(
        [sys.executable, "-m", "guard_adapters.cli", "check", "--format", "markdown"],
        cwd=repo, env=project["env"], capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert cli.returncode == 0, cli.stderr
    assert cli.stdout == markdown_summary(decision)  # the real decision, rendered
    title = f"### Guard: {len(decision.tests)} tests selected (subset"
    assert title in cli.stdout
    assert "| skipped |" in cli.stdout and "no evidence that they execute" in cli.stdout
    assert f"| evidence | {decision.evidence.reason}" in cli.stdout

    for args in ((), ("-n", "2")):  # under xdist the controller writes it from a worker's
        summary = tmp_path / f"summary{len(args)}.md"
        summary.write_text("earlier step\n")
        out = pytest_in(project, "--guard", "-q", *args, GITHUB_STEP_SUMMARY=str(summary))
        assert out.returncode == 1, out.stdout + out.stderr
        text = summary.read_text()
        assert text.startswith("earlier step\n")  # appended, never replaced
        assert title in text
        assert "**Result:** 3 failed" in text, text
        assert "covers" in text and "`tests/" in text


def test_the_step_summary_of_a_run_guard_could_not_decide(project: dict, tmp_path: Path) -> None:
    summary = tmp_path / "summary.md"
    env = {"GUARD_FALKORDB_URL": "redis://127.0.0.1:1", "GUARD_STORE_TIMEOUT": "1"}
    out = pytest_in(project, "--guard", "-q", GITHUB_STEP_SUMMARY=str(summary), **env)
    assert out.returncode == 0, out.stdout + out.stderr
    text = summary.read_text()
    assert "### Guard: every test ran" in text and "cannot decide" in text
    assert "**Result:**" in text and "passed" in text
