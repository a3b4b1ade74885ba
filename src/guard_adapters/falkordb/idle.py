"""Stops an embedded FalkorDB that nobody used for a while (``server_idle`` seconds).

Started detached beside the server (``python -m guard_adapters.falkordb.idle PID SOCKET
SECONDS DATA_DIR``). The server counts as used while a client other than this one is connected
(an MCP server or worker holding its connection) or commands other than this watchdog's own
arrive; one whose socket is gone, and that this watchdog cannot reach, is used by nobody. It
saves the graph and stops the server after ``SECONDS`` of neither, and exits as soon as the
server is gone, whoever stopped it.

With its state folder deleted the server cannot save, and SHUTDOWN fails: the watchdog then
stops it without saving (there is nowhere to save to), and by signal if that fails too.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from guard_adapters.falkordb.embedded import is_redis_server, terminate, wait_gone

_ALIVE_POLL_S = 0.5
_OWN_COMMANDS = 1  # the INFO below
_SHUTDOWN_WAIT_S = 10.0


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _activity(client: redis.Redis) -> tuple[int, int]:
    """(connected clients, commands processed so far), in one INFO."""
    info = client.info()
    return int(info.get("connected_clients", 0)), int(info.get("total_commands_processed", 0))


def watch(pid: int, socket: Path, idle_s: float, data_dir: Path) -> None:
    client = redis.Redis(
        unix_socket_path=str(socket), socket_timeout=10, retry=Retry(NoBackoff(), 0)
    )
    probe_every = max(1.0, min(30.0, idle_s / 10))
    last_active = time.monotonic()
    last_probe = 0.0
    commands = -1
    try:
        while _alive(pid):
            time.sleep(_ALIVE_POLL_S)
            now = time.monotonic()
            if now - last_probe < probe_every:
                continue
            last_probe = now
            try:
                clients, total = _activity(client)
            except (redis.RedisError, OSError):
                if socket.exists():
                    continue  # loading, or going away: the pid check decides
                clients, total = 1, commands  # nobody can connect to it any more
            if clients > 1 or (commands >= 0 and total - commands > _OWN_COMMANDS):
                last_active = now
            commands = total
            if now - last_active >= idle_s:
                if _still_unused(client, socket, total) and _stop(pid, client, socket, data_dir):
                    return
                last_active = now
    finally:
        client.close()


def _still_unused(client: redis.Redis, socket: Path, total: int) -> bool:
    try:
        clients, commands = _activity(client)
    except (redis.RedisError, OSError):
        return not socket.exists()
    return clients == 1 and commands - total <= 2 * _OWN_COMMANDS


def _stop(pid: int, client: redis.Redis, socket: Path, data_dir: Path) -> bool:
    """Stop the server, saving its graph where it can; whether it is gone. A server that
    cannot save although its folder and socket are there (a full disk) runs on, graph kept."""
    if _answers(client):
        if _shutdown(client, save=True) and wait_gone(pid, _SHUTDOWN_WAIT_S):
            return True
        if data_dir.exists() and socket.exists():
            return False
        if _shutdown(client, nosave=True) and wait_gone(pid, _SHUTDOWN_WAIT_S):
            return True
    if is_redis_server(pid):  # still the server this watchdog was started beside
        terminate(pid)
    return not _alive(pid)


def _shutdown(client: redis.Redis, **how: bool) -> bool:
    """Whether the server took the SHUTDOWN: it answers by closing the connection, and with an
    error when it cannot save."""
    try:
        client.shutdown(**how)
    except (redis.RedisError, OSError):
        return False
    return True


def _answers(client: redis.Redis) -> bool:
    try:
        return bool(client.ping())
    except (redis.RedisError, OSError):
        return False


def main(argv: list[str]) -> int:
    try:
        pid, socket, idle, data_dir = int(argv[0]), Path(argv[1]), float(argv[2]), Path(argv[3])
    except (IndexError, ValueError):
        print(
            "usage: python -m guard_adapters.falkordb.idle PID SOCKET SECONDS DATA_DIR",
            file=sys.stderr,
        )
        return 2
    watch(pid, socket, idle, data_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
