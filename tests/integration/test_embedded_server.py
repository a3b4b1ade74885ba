"""Lifecycle of the embedded FalkorDB: persistence, reuse, the start race, clean stop."""

from __future__ import annotations

import multiprocessing
import os
from pathlib import Path

import pytest

from guard_adapters.falkordb.embedded import EmbeddedServer
from guard_adapters.falkordb.store import FalkorGraphStore, connect
from guard_core.errors import StoreUnavailable
from guard_core.model import FileIndex, FunctionNode


@pytest.fixture
def server(tmp_path: Path):  # type: ignore[no-untyped-def]
    srv = EmbeddedServer(tmp_path / "state")
    yield srv
    srv.stop()
    assert srv.pid() is None


def test_graph_survives_a_restart(server: EmbeddedServer) -> None:
    store = FalkorGraphStore(connect(server.ensure_running()), "g")
    store.ensure_schema()
    node = FunctionNode(id="a.py::f", file="a.py", name="f", qualname="f", start=1, end=2)
    store.write_files([FileIndex(path="a.py", sha="x", module="a", functions=(node,))])
    store.close()
    first_pid = server.pid()
    assert server.stop()
    assert server.pid() is None and not server.ping()
    store = FalkorGraphStore(connect(server.ensure_running()), "g")
    store.ensure_schema()
    assert server.pid() != first_pid
    assert store.file_hashes() == {"a.py": "x"}
    store.close()


def test_running_server_is_reused(server: EmbeddedServer) -> None:
    server.ensure_running()
    pid = server.pid()
    server.ensure_running()
    assert server.pid() == pid
    assert server.status().running


def _start(state: str, queue: multiprocessing.Queue) -> None:  # type: ignore[type-arg]
    srv = EmbeddedServer(Path(state))
    srv.ensure_running()
    queue.put(srv.pid())


def test_racing_starters_share_one_server(server: EmbeddedServer, tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    procs = [ctx.Process(target=_start, args=(str(tmp_path / "state"), queue)) for _ in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    pids = {queue.get(timeout=5) for _ in procs}
    assert len(pids) == 1 and None not in pids
    assert server.pid() in pids
    running = [
        p
        for p in os.listdir("/proc")
        if p.isdigit() and b"redis-server" in _cmdline(p) and str(tmp_path).encode() in _cmdline(p)
    ]
    assert len(running) == 1


def _cmdline(pid: str) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def test_long_state_path_uses_a_short_socket(tmp_path: Path) -> None:
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    srv = EmbeddedServer(deep)
    try:
        srv.ensure_running()
        assert len(str(srv.socket)) < 100
        assert srv.ping()
    finally:
        srv.stop()


def test_broken_binary_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = tmp_path / "redis-server"
    fake.write_text("#!/bin/sh\necho 'bad binary' >&2\nexit 3\n")
    fake.chmod(0o755)
    monkeypatch.setattr(
        "guard_adapters.falkordb.embedded._binaries", lambda: (str(fake), "/nonexistent.so")
    )
    with pytest.raises(StoreUnavailable, match="exited with code 3: bad binary"):
        EmbeddedServer(tmp_path / "s").ensure_running()
