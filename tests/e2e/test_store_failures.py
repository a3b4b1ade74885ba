"""A graph server that is closed, silent, not Redis, or named by a malformed URL: every command
answers quickly, `check` with run-all and `run` with the whole suite, and none prints a
traceback."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.conftest import make_repo

FILES = {
    "pkg/__init__.py": "",
    "pkg/m.py": "def f(x):\n    return x + 1\n",
    "tests/test_m.py": "from pkg.m import f\n\n\ndef test_f():\n    assert f(1) == 2\n\n\n"
                       "def test_other():\n    assert True\n",
}  # fmt: skip
QUICK_S = 10.0


def guard(repo: Path, *args: str, url: str) -> tuple[subprocess.CompletedProcess[str], float]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GUARD_")}
    env.update(GUARD_WORKER="0", GUARD_FALKORDB_URL=url, GUARD_GRAPH="test:unreachable")
    started = time.monotonic()
    out = subprocess.run(
        [sys.executable, "-m", "guard_adapters.cli", *args, "--repo", str(repo)],
        capture_output=True, text=True, env=env, timeout=30,
    )  # fmt: skip
    return out, time.monotonic() - started


@contextlib.contextmanager
def tcp_server(answer: Callable[[socket.socket], None]) -> Iterator[str]:
    """A local TCP server that hands every connection to ``answer``; its URL."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    listener.settimeout(0.1)
    stop = threading.Event()
    held: list[socket.socket] = []

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                continue
            held.append(conn)
            with contextlib.suppress(OSError):
                answer(conn)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"redis://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        stop.set()
        thread.join(5)
        for conn in held:
            conn.close()
        listener.close()


def silent(conn: socket.socket) -> None:
    """Accept and never answer."""


def http(conn: socket.socket) -> None:
    conn.settimeout(2)
    conn.recv(65536)
    conn.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n\x00\xff")
    conn.close()


def wrong_resp(conn: socket.socket) -> None:
    """Well-formed RESP, but answers no Redis client expects (a plain string to HELLO)."""
    conn.settimeout(2)
    while conn.recv(65536):
        conn.sendall(b"+OK\r\n*1\r\n$3\r\nabc\r\n:12\r\n")


def closed_port() -> str:
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    return f"redis://127.0.0.1:{port}"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = make_repo(tmp_path / "r", FILES)
    (root / "pkg/m.py").write_text("def f(x):\n    return x + 2\n")
    return root


def assert_run_all(out: subprocess.CompletedProcess[str], elapsed: float) -> dict[str, object]:
    assert elapsed < QUICK_S, f"took {elapsed:.1f}s"
    assert "Traceback" not in out.stderr + out.stdout
    assert out.returncode == 0, out.stderr
    decision = json.loads(out.stdout)
    assert decision["level"] == "run-all"
    assert any(o["kind"] == "store" for o in decision["overrides"]), decision["overrides"]
    return decision


@pytest.mark.parametrize("answer", [silent, http, wrong_resp], ids=["silent", "http", "resp"])
def test_check_on_a_server_that_does_not_speak_redis_is_run_all(
    repo: Path, answer: Callable[[socket.socket], None]
) -> None:
    with tcp_server(answer) as url:
        assert_run_all(*guard(repo, "check", "--json", url=url))


@pytest.mark.parametrize(
    "url",
    [closed_port(), "notaurl", "redis://", "http://127.0.0.1:6379", "redis://h:notaport"],
    ids=["closed-port", "notaurl", "no-host", "http", "bad-port"],  # one id in every xdist worker
)
def test_check_on_an_unusable_url_is_run_all(repo: Path, url: str) -> None:
    assert_run_all(*guard(repo, "check", "--json", url=url))


def test_run_on_a_silent_server_runs_the_whole_suite(repo: Path) -> None:
    with tcp_server(silent) as url:
        out, elapsed = guard(repo, "run", url=url)
    assert "Traceback" not in out.stderr + out.stdout
    assert elapsed < 3 * QUICK_S
    assert "1 failed, 1 passed" in out.stdout, out.stdout + out.stderr
    assert out.returncode == 1


@pytest.mark.parametrize("command", [["stats"], ["covering-tests", "pkg/m.py::f"]])
def test_queries_on_a_silent_server_are_a_clear_error(repo: Path, command: list[str]) -> None:
    with tcp_server(silent) as url:
        out, elapsed = guard(repo, *command, url=url)
    assert elapsed < QUICK_S, f"took {elapsed:.1f}s"
    assert out.returncode == 2
    assert "Traceback" not in out.stderr
    assert "FalkorDB" in out.stderr and "did not answer" in out.stderr, out.stderr
