"""Stops an embedded FalkorDB that nobody used for a while (``server_idle`` seconds).

Started detached beside the server (``python -m guard_adapters.falkordb.idle PID SOCKET
SECONDS``). The server counts as used while a client other than this one is connected (an MCP
server or worker holding its connection) or commands other than this watchdog's own arrive. It
saves the graph and stops the server after ``SECONDS`` of neither, and exits as soon as the
server is gone, whoever stopped it.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from pathlib import Path

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

_ALIVE_POLL_S = 0.5
_OWN_COMMANDS = 1  # the INFO below


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


def watch(pid: int, socket: Path, idle_s: float) -> None:
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
                continue  # loading, or going away: the pid check decides
            if clients > 1 or (commands >= 0 and total - commands > _OWN_COMMANDS):
                last_active = now
            commands = total
            if now - last_active >= idle_s:
                with contextlib.suppress(redis.RedisError, OSError):
                    clients, commands = _activity(client)
                    if clients == 1 and commands - total <= 2 * _OWN_COMMANDS:  # still nobody
                        client.shutdown(save=True)  # it answers by closing the connection
                        return
                last_active = now
    finally:
        client.close()


def main(argv: list[str]) -> int:
    try:
        pid, socket, idle = int(argv[0]), Path(argv[1]), float(argv[2])
    except (IndexError, ValueError):
        print("usage: python -m guard_adapters.falkordb.idle PID SOCKET SECONDS", file=sys.stderr)
        return 2
    watch(pid, socket, idle)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
