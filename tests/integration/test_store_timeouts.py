"""Every call to FalkorDB is bounded in time, and a store that failed once fails fast after."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from guard_adapters.falkordb.embedded import EmbeddedServer
from guard_adapters.falkordb.store import FalkorGraphStore, connect
from guard_core.errors import StoreUnavailable


@pytest.fixture
def silent_url() -> Iterator[str]:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.1)
        while not stop.is_set():
            try:
                accepted.append(listener.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"redis://127.0.0.1:{listener.getsockname()[1]}"
    stop.set()
    thread.join(5)
    for conn in accepted:
        conn.close()
    listener.close()


def test_a_silent_server_fails_within_the_connect_timeout(silent_url: str) -> None:
    started = time.monotonic()
    with pytest.raises(StoreUnavailable, match="did not answer in time"):
        connect(silent_url, timeout=0.5)
    assert time.monotonic() - started < 2.0


@pytest.fixture
def embedded(tmp_path: Path) -> Iterator[EmbeddedServer]:
    server = EmbeddedServer(tmp_path / "state")
    server.ensure_running()
    yield server
    server.stop()


def test_a_query_that_outlasts_its_timeout_fails_and_later_calls_fail_at_once(
    embedded: EmbeddedServer,
) -> None:
    store = FalkorGraphStore(connect(embedded.url, query_timeout=0.5), "g")
    store.ensure_schema()
    admin = redis.Redis(unix_socket_path=str(embedded.socket))
    admin.execute_command("CLIENT", "PAUSE", 3000, "ALL")  # the server answers nobody for 3 s
    try:
        started = time.monotonic()
        with pytest.raises(StoreUnavailable, match="did not answer in time"):
            store.stats()
        assert time.monotonic() - started < 2.0
        started = time.monotonic()
        with pytest.raises(StoreUnavailable, match="did not answer in time"):
            store.file_hashes()
        assert time.monotonic() - started < 0.1
    finally:
        admin.execute_command("CLIENT", "UNPAUSE")
        admin.close()
        store.close()


def test_falkor_schemes_are_urls_and_garbage_is_not() -> None:
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    for scheme in ("falkor", "falkors", "redis"):
        with pytest.raises(StoreUnavailable, match="unreachable"):
            connect(f"{scheme}://127.0.0.1:{port}", timeout=1)
    with pytest.raises(StoreUnavailable, match="not a FalkorDB URL"):
        connect("notaurl")
