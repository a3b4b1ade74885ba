"""Lifecycle of the embedded FalkorDB: persistence, reuse, the start race, clean stop."""

from __future__ import annotations

import fcntl
import multiprocessing
import os
import shutil
import signal
import threading
import time
from pathlib import Path

import pytest
import redis

from guard_adapters.falkordb.embedded import EmbeddedServer
from guard_adapters.falkordb.store import FalkorGraphStore, connect
from guard_core.errors import StoreUnavailable
from guard_core.index_model import FileIndex, FunctionNode


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
    # by its socket, which a long folder (under pytest-xdist) moves out of tmp_path
    running = [
        p
        for p in os.listdir("/proc")
        if p.isdigit()
        and b"redis-server" in _cmdline(p)
        and str(server.socket).encode() in _cmdline(p)
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


def test_stop_waits_for_the_start_lock(server: EmbeddedServer) -> None:
    server.ensure_running()
    pid = server.pid()
    with open(server.lock_file, "a+") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # a starter is at work
        stopper = threading.Thread(target=server.stop)
        stopper.start()
        stopper.join(1.0)
        assert stopper.is_alive(), "stop() went ahead under another process's start lock"
        assert server.pid() == pid and server.socket.exists()
        fcntl.flock(held, fcntl.LOCK_UN)
    stopper.join(30)
    assert not stopper.is_alive() and server.pid() is None


def test_a_server_that_answers_nobody_for_a_while_is_waited_for(server: EmbeddedServer) -> None:
    server.ensure_running()
    pid = server.pid()
    admin = redis.Redis(unix_socket_path=str(server.socket))
    admin.execute_command("CLIENT", "PAUSE", 5000, "ALL")
    admin.close()
    started = time.monotonic()
    EmbeddedServer(server.data_dir.parent).ensure_running()
    assert time.monotonic() - started > 3.0
    assert server.pid() == pid, "a busy server was killed and restarted"


class SlowLoading(EmbeddedServer):
    """The real server, loading its data slowly; silent while it loads unless it processes
    events every ``events_bytes``."""

    def __init__(self, state_dir: Path, events_bytes: int | None) -> None:
        super().__init__(state_dir)
        self.events_bytes = events_bytes

    def _server_args(self, server: str, module: str) -> list[str]:
        extra = ["--key-load-delay", "20000"]  # microseconds per key
        if self.events_bytes is not None:
            extra += ["--loading-process-events-interval-bytes", str(self.events_bytes)]
        return [*super()._server_args(server, module), *extra]


@pytest.mark.parametrize("events_bytes", [None, 1024], ids=["silent", "answers-loading"])
def test_a_server_loading_its_graph_is_waited_for_not_restarted(
    server: EmbeddedServer, events_bytes: int | None
) -> None:
    server.ensure_running()
    client = redis.Redis(unix_socket_path=str(server.socket))
    for i in range(250):  # 250 keys at 20 ms each: 5 s to load
        client.set(f"k{i}", "x" * 2048)
    client.close()
    assert server.stop()
    SlowLoading(server.data_dir.parent, events_bytes)._launch()  # its starter went away
    deadline = time.monotonic() + 5
    while (pid := server.pid()) is None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert pid is not None
    url = EmbeddedServer(server.data_dir.parent).ensure_running()
    assert server.pid() == pid, "a loading server was killed and restarted"
    client = redis.Redis.from_url(url)
    try:
        assert client.get("k249") == b"x" * 2048  # loaded: no LOADING error
    finally:
        client.close()


def _watchdogs(socket: Path) -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                argv = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if b"guard_adapters.falkordb.idle" in argv and os.fsencode(str(socket)) in argv:
                out.append(int(entry.name))
    return out


def _until(predicate, timeout: float) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return predicate()


def test_an_unused_server_stops_by_itself_and_keeps_its_graph(tmp_path: Path) -> None:
    srv = EmbeddedServer(tmp_path / "state", idle_s=2.0)
    try:
        store = FalkorGraphStore(connect(srv.ensure_running()), "g")
        store.ensure_schema()
        node = FunctionNode(id="a.py::f", file="a.py", name="f", qualname="f", start=1, end=2)
        store.write_files([FileIndex(path="a.py", sha="x", module="a", functions=(node,))])
        held_for = time.monotonic()
        while time.monotonic() - held_for < 4:  # a connected client keeps it up
            store.file_hashes()
            time.sleep(0.5)
        assert srv.pid() is not None
        store.close()
        assert _until(lambda: srv.pid() is None, 15), "an idle server should stop"
        assert _until(lambda: not _watchdogs(srv.socket), 5), "its watchdog should exit"
        store = FalkorGraphStore(connect(srv.ensure_running()), "g")  # saved before stopping
        assert store.file_hashes() == {"a.py": "x"}
        store.close()
    finally:
        srv.stop()
    assert _until(lambda: not _watchdogs(srv.socket), 5)


def _running(pid: int, program: bytes) -> bool:
    try:
        return program in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


@pytest.mark.parametrize("watchdog_connected", [True, False], ids=["connected", "cut-off"])
def test_an_unused_server_whose_state_folder_was_deleted_stops_all_the_same(
    tmp_path: Path, watchdog_connected: bool
) -> None:
    srv = EmbeddedServer(tmp_path / "state", idle_s=2.0)
    srv.ensure_running()
    pid = srv.pid()
    assert pid is not None
    assert _until(lambda: bool(_watchdogs(srv.socket)), 5)
    watchdogs = _watchdogs(srv.socket)
    client = redis.Redis(unix_socket_path=str(srv.socket))
    try:
        client.set("k", "v")  # something to save, and nowhere left to save it
        assert _until(lambda: client.info()["connected_clients"] == 2, 10), "no watchdog"
        shutil.rmtree(tmp_path / "state")
        if not watchdog_connected:  # it cannot reach the server again: its socket is gone
            client.client_kill_filter(_type="normal", skipme=True)
        client.close()
        assert _until(lambda: not _running(pid, b"redis-server"), 40), "the server leaked"
        assert _until(lambda: not _watchdogs(srv.socket), 5), "its watchdog should exit"
    finally:
        client.close()
        for started, program in [(pid, b"redis-server")] + [(w, b"idle") for w in watchdogs]:
            if _running(started, program):
                os.kill(started, signal.SIGKILL)


def test_a_server_without_an_idle_limit_has_no_watchdog(server: EmbeddedServer) -> None:
    server.ensure_running()
    assert not _watchdogs(server.socket)


def test_running_servers_lists_this_users_embedded_servers(server: EmbeddedServer) -> None:
    from guard_adapters.falkordb.embedded import running_servers

    server.ensure_running()
    mine = [s for s in running_servers() if s.pid == server.pid()]
    assert mine and mine[0].data_dir == str(server.data_dir) and mine[0].rss_mb > 0
