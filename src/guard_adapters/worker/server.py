"""The warm worker of one repository: answers ``guard check`` (and the other read-only
commands) for :mod:`guard_adapters.worker.client` with the imports already loaded.

``python -m guard_adapters.worker.server STATE_DIR``. One per state folder (a file lock); it
listens on a unix socket only its user can open, runs each request's command exactly as the
CLI would (the client's working directory and ``GUARD_*`` variables, output captured), one at
a time. It answers only a client whose environment (interpreter, ``PATH``, ``PYTHON*``,
``GIT_*``, ``HOME``...) is the one it started with, and steps aside for any other (which then
answers itself and starts a worker of its own). It exits when idle for ``GUARD_WORKER_IDLE``
seconds (default 600), when the embedded FalkorDB it was started beside stops, when asked to,
or when Guard's code or the installed packages changed.
"""

from __future__ import annotations

import contextlib
import fcntl
import importlib
import io
import os
import socket
import sys
import time
from pathlib import Path
from typing import Any

from guard_adapters.worker.client import (
    WORKER_COMMANDS,
    code_stamp,
    environment_stamp,
    receive,
    send,
    worker_socket,
)

_POLL_S = 0.5
_LOCK_TRIES = 20
_WARM = (
    "guard_adapters.cli.main",
    "guard_adapters.workspace",
    "guard_adapters.falkordb.store",
    "guard_adapters.python.slicer",
    "guard_core.engine",
    "guard_core.policy",
    "rich.table",
)


class Worker:
    def __init__(self, state_dir: Path, idle_s: float) -> None:
        self.state_dir = state_dir
        self.idle_s = idle_s
        self.stamp = code_stamp()
        self.environment = environment_stamp()
        self.packages = _installed()
        self.stopping = False
        self.server_pid = self._embedded_pid()
        for module in _WARM:  # what the first request would otherwise import
            with contextlib.suppress(ImportError):
                importlib.import_module(module)

    def _embedded_pid(self) -> int | None:
        from guard_adapters.falkordb.embedded import EmbeddedServer

        if os.environ.get("GUARD_FALKORDB_URL"):
            return None
        return EmbeddedServer(self.state_dir).pid()

    def _server_gone(self) -> bool:
        if self.server_pid is None:
            # the embedded server's folder, yet no server ran when this worker started (it was
            # stopped while the worker was starting): nothing to stay warm for
            embedded = (self.state_dir / "falkordb").is_dir()
            return embedded and not os.environ.get("GUARD_FALKORDB_URL")
        try:
            os.kill(self.server_pid, 0)
        except OSError:
            return True
        return False

    def serve(self, listener: socket.socket) -> None:
        listener.settimeout(_POLL_S)
        last = time.monotonic()
        while not self.stopping:
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                if time.monotonic() - last > self.idle_s or self._server_gone():
                    return
                continue
            with conn:
                conn.settimeout(30)
                with contextlib.suppress(OSError, ValueError, EOFError, TypeError):
                    request = receive(conn)
                    if isinstance(request, dict):
                        send(conn, self.answer(request))
            last = time.monotonic()

    def answer(self, request: dict[str, Any]) -> dict[str, Any]:
        if request.get("stop"):
            self.stopping = True
            return {"ok": True, "exit": 0, "stdout": "", "stderr": ""}
        if request.get("stamp") != self.stamp:
            self.stopping = True  # Guard was upgraded or edited: a new worker takes over
            return {"ok": False, "reason": "stale"}
        if request.get("environment") != self.environment:
            # the client answers in its own environment and starts a worker that has it
            self.stopping = True
            return {"ok": False, "reason": "environment"}
        if _installed() != self.packages:
            self.stopping = True  # a package was installed or removed under loaded modules
            return {"ok": False, "reason": "stale"}
        argv = request.get("argv") or []
        if not argv or argv[0] not in WORKER_COMMANDS:
            return {"ok": False, "reason": "not a worker command"}
        return {"ok": True, **run_command(argv, request.get("cwd", "."), request.get("env", {}))}


def _installed() -> str:
    """The distributions installed for this interpreter (the modules the worker has loaded
    come from them)."""
    from guard_adapters.pytest.environment import fingerprint

    try:
        return fingerprint(None)
    except (OSError, ValueError):
        return ""


def run_command(argv: list[str], cwd: str, env: dict[str, str]) -> dict[str, Any]:
    """Run one CLI command as the client would have, capturing what it prints."""
    from guard_adapters.cli.main import guard

    saved_env = dict(os.environ)
    saved_cwd = os.getcwd()
    out, err = io.StringIO(), io.StringIO()
    code: Any = 0
    try:
        for key in [k for k in os.environ if k.startswith("GUARD_")]:
            del os.environ[key]
        os.environ.update({k: v for k, v in env.items() if k.startswith("GUARD_")})
        os.chdir(cwd)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                guard.main(args=argv, prog_name="guard", standalone_mode=True)
            except SystemExit as exc:
                code = exc.code
            except Exception as exc:  # the command's own handler missed it: report, go on
                print(f"guard: internal error in the worker: {exc!r}", file=sys.stderr)
                code = 2
    finally:
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
    if code is None:
        code = 0
    elif not isinstance(code, int):
        err.write(f"{code}\n")
        code = 1
    return {"exit": code, "stdout": out.getvalue(), "stderr": err.getvalue()}


def main(state_dir: Path) -> None:
    from guard_adapters.files import ensure_state_dir

    ensure_state_dir(state_dir)
    lock = open(state_dir / "worker.lock", "w")  # noqa: SIM115 - held for the process' life
    for attempt in range(_LOCK_TRIES):  # a worker that just stepped aside may still be exiting
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except OSError:
            if attempt == _LOCK_TRIES - 1:
                return  # another worker serves this repository
            time.sleep(_POLL_S / 5)
    path = Path(worker_socket(state_dir))
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old_umask = os.umask(0o177)
    try:
        listener.bind(str(path))
    finally:
        os.umask(old_umask)
    listener.listen(16)
    pid_file = state_dir / "worker.pid"
    pid_file.write_text(str(os.getpid()))
    try:
        idle = float(os.environ.get("GUARD_WORKER_IDLE", "600"))
        Worker(state_dir, idle).serve(listener)
    finally:
        listener.close()
        for leftover in (path, pid_file):
            with contextlib.suppress(FileNotFoundError):
                leftover.unlink()


if __name__ == "__main__":
    main(Path(sys.argv[1]).resolve())
