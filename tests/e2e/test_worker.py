"""The warm worker behind `guard check`: same answers as a fresh process, the client's own
environment, and no process left once the embedded server stops."""

from __future__ import annotations

import contextlib
import json
import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from guard_adapters.worker.client import receive, send, worker_socket
from tests.conftest import make_repo

FILES = {
    "pkg/__init__.py": "",
    "pkg/m.py": "def f(x):\n    return x + 1\n\n\ndef g(x):\n    return x\n",
    "tests/test_m.py": "from pkg.m import f, g\n\n\ndef test_f():\n    assert f(1) == 2\n\n\n"
    "def test_g():\n    assert g(1) == 1\n",
}
# runs the entry point and reports whether the answer needed the CLI's own imports
CLIENT = (
    "import sys\nfrom guard_adapters.cli.fast import main\nsys.argv = ['guard', *sys.argv[1:]]\n"
    "try:\n    main()\nexcept SystemExit as exc:\n    code = exc.code\n"
    "print('\\nLOCAL' if 'click' in sys.modules else '\\nWORKER', file=sys.stderr)\n"
    "sys.exit(code)\n"
)


def guard(repo: Path, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", CLIENT, *args], cwd=repo, env=env,
                          capture_output=True, text=True, timeout=120)  # fmt: skip


def wait_for(predicate, timeout: float = 30.0) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return False


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    return not Path(f"/proc/{pid}/status").read_text().count("State:\tZ")


@pytest.fixture
def repo(tmp_path: Path) -> Iterator[tuple[Path, dict[str, str]]]:
    root = make_repo(tmp_path / "w", FILES)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GUARD_")}
    env["GUARD_WORKER"] = "1"
    ingest = subprocess.run([sys.executable, "-m", "guard_adapters.cli", "ingest-coverage",
                             str(root)], env=env, capture_output=True, text=True)  # fmt: skip
    assert ingest.returncode == 0, ingest.stderr
    try:
        yield root, env
    finally:
        subprocess.run([sys.executable, "-m", "guard_adapters.cli", "server", "stop", "--repo",
                        str(root)], env=env, capture_output=True)  # fmt: skip


def test_the_worker_answers_like_a_fresh_process_and_stops_with_the_server(
    repo: tuple[Path, dict[str, str]],
) -> None:
    root, env = repo
    (root / "pkg/m.py").write_text("def f(x):\n    return x + 2\n\n\ndef g(x):\n    return x\n")
    state = root / ".guard"
    first = guard(root, "check", "--json", env=env)
    assert first.returncode == 0, first.stderr
    assert first.stderr.strip().endswith("LOCAL")
    assert wait_for(lambda: (state / "worker.pid").exists() and Path(worker_socket(state)).exists())
    pid = int((state / "worker.pid").read_text())
    status = subprocess.run(
        [sys.executable, "-m", "guard_adapters.cli", "server", "status", "--repo", str(root)],
        env=env, capture_output=True, text=True,
    )  # fmt: skip
    assert f"warm worker: running (pid {pid})" in status.stdout

    second = guard(root, "check", "--json", env=env)
    assert second.returncode == 0 and second.stderr.strip().endswith("WORKER")
    a, b = json.loads(first.stdout), json.loads(second.stdout)
    a.pop("elapsed_ms"), b.pop("elapsed_ms")
    assert a == b and b["tests"] == ["tests/test_m.py::test_f"]

    # the client's own GUARD_* variables and working directory hold, not the worker's
    elsewhere = guard(root / "pkg", "check", "--json", env={**env, "GUARD_GRAPH": "test:empty"})
    assert elsewhere.stderr.strip().endswith("WORKER")
    assert json.loads(elsewhere.stdout)["level"] == "run-all"
    errors = guard(root, "check", "--repo", "missing", env=env)
    assert errors.returncode == 2 and "does not exist" in errors.stderr

    stop = subprocess.run(
        [sys.executable, "-m", "guard_adapters.cli", "server", "stop", "--repo", str(root)],
        env=env, capture_output=True, text=True,
    )  # fmt: skip
    assert "stopped" in stop.stdout
    assert wait_for(lambda: not alive(pid), timeout=10)
    assert not Path(worker_socket(state)).exists()


def test_a_worker_of_other_code_steps_aside(repo: tuple[Path, dict[str, str]]) -> None:
    root, env = repo
    state = root / ".guard"
    guard(root, "stats", env=env)
    assert wait_for(lambda: (state / "worker.pid").exists() and Path(worker_socket(state)).exists())
    pid = int((state / "worker.pid").read_text())
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.connect(worker_socket(state))
        send(conn, {"argv": ["stats"], "stamp": "an older guard"})
        answer = receive(conn)
    assert answer == {"ok": False, "reason": "stale"}
    assert wait_for(lambda: not alive(pid), timeout=10)
    out = guard(root, "stats", "--json", env=env)  # answered here, as before
    assert out.returncode == 0 and out.stderr.strip().endswith("LOCAL")


def new_worker(state: Path, old: set[int]) -> int | None:
    """The pid of a worker that is not one of ``old``, once it listens."""
    found: list[int] = []

    def listening() -> bool:
        with contextlib.suppress(OSError, ValueError):
            pid = int((state / "worker.pid").read_text())
            if pid not in old and alive(pid) and Path(worker_socket(state)).exists():
                found.append(pid)
        return bool(found)

    return found[0] if wait_for(listening) else None


def workers_of(state: Path) -> set[int]:
    """The worker processes of ``state``: serving, or waiting for the one serving to leave."""
    found = set()
    for entry in Path("/proc").iterdir():
        with contextlib.suppress(OSError):
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            if b"guard_adapters.worker.server" in argv and str(state).encode() in argv:
                found.add(int(entry.name))
    return {pid for pid in found if alive(pid)}


def answer(out: subprocess.CompletedProcess[str]) -> tuple[int, str, str]:
    """Exit code, stdout and stderr without the client's LOCAL/WORKER marker and timings."""
    stdout = out.stdout
    with contextlib.suppress(ValueError):
        data = json.loads(stdout)
        data.pop("elapsed_ms", None)
        stdout = json.dumps(data)
    return out.returncode, stdout, out.stderr.rstrip().rpartition("\n")[0]


def test_a_client_in_another_environment_gets_a_fresh_process_answer(
    repo: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    root, env = repo
    state = root / ".guard"
    guard(root, "check", "--json", env=env)
    assert wait_for(lambda: (state / "worker.pid").exists() and Path(worker_socket(state)).exists())
    pid = int((state / "worker.pid").read_text())
    assert guard(root, "check", "--json", env=env).stderr.strip().endswith("WORKER")

    # git is told to read another repository: answered by a fresh process, which reads that one
    elsewhere = {**env, "GIT_DIR": str(tmp_path / "no-such-git-dir")}
    asked = guard(root, "check", "--json", env=elsewhere)
    fresh = guard(root, "check", "--json", env={**elsewhere, "GUARD_WORKER": "0"})
    assert asked.stderr.strip().endswith("LOCAL")
    assert answer(asked) == answer(fresh) and fresh.returncode == 2
    assert guard(root, "check", "--json", env=env).stderr.strip().endswith("WORKER")  # still
    # the worker the other client started finds this one serving, and gives up
    assert wait_for(lambda: workers_of(state.resolve()) == {pid}, timeout=15)

    # another module search path: answered here, then by a worker started with it
    (tmp_path / "extra").mkdir()
    other = {**env, "PYTHONPATH": os.pathsep.join(
        p for p in (env.get("PYTHONPATH"), str(tmp_path / "extra")) if p)}  # fmt: skip
    first = guard(root, "check", "--json", env=other)
    assert first.stderr.strip().endswith("LOCAL"), first.stderr
    assert wait_for(lambda: not alive(pid), timeout=10)  # it stepped aside
    assert new_worker(state, {pid})
    second = guard(root, "check", "--json", env=other)
    assert second.stderr.strip().endswith("WORKER")
    fresh = guard(root, "check", "--json", env={**other, "GUARD_WORKER": "0"})
    assert answer(first) == answer(second) == answer(fresh) and fresh.returncode == 0
    back = guard(root, "check", "--json", env=env)  # the first environment again: not this one
    assert back.stderr.strip().endswith("LOCAL") and answer(back)[0] == 0


def without_timings(text: str) -> str:
    return re.sub(r"\d+(\.\d+)? ?m?s\b", "T", text)


def test_guard_run_without_refresh_runs_pytest_here_on_the_workers_plan(
    repo: tuple[Path, dict[str, str]],
) -> None:
    root, env = repo
    state = root / ".guard"
    (root / "pkg/m.py").write_text("def f(x):\n    return x + 2\n\n\ndef g(x):\n    return x\n")
    guard(root, "check", env=env)
    assert wait_for(lambda: (state / "worker.pid").exists() and Path(worker_socket(state)).exists())

    def runs() -> int:
        return int(json.loads(guard(root, "stats", "--json", env=env).stdout)["runs"])

    before = runs()
    asked = guard(root, "run", "--no-refresh", env=env)
    assert asked.stderr.strip().endswith("WORKER"), asked.stderr
    fresh = guard(root, "run", "--no-refresh", env={**env, "GUARD_WORKER": "0"})
    assert asked.returncode == fresh.returncode == 1
    for out in (asked, fresh):
        assert "subset: 1 of 2 tests" in out.stdout and "1 failed" in out.stdout
        assert "guard: 1 selected tests failed" in out.stderr
    assert without_timings(asked.stdout.split("=")[0]) == without_timings(
        fresh.stdout.split("=")[0]
    )
    assert runs() == before + 2  # the worker kept its outcomes too

    # below --min-trust: the same verdict either way
    (root / "pkg/m.py").write_text("def f(x):\n    return x + 1\n\n\ndef g(x):\n    return x * 1\n")
    strict = guard(root, "run", "--no-refresh", "--min-trust", "1", env=env)
    plain = guard(root, "run", "--no-refresh", "--min-trust", "1", env={**env, "GUARD_WORKER": "0"})
    assert strict.stderr.strip().endswith("WORKER")
    assert strict.returncode == plain.returncode
    # a run that refreshes the evidence is the command's own, in this process
    refreshing = guard(root, "run", env=env)
    assert refreshing.stderr.strip().endswith("LOCAL")
