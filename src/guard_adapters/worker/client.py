"""The client side of the warm worker (:mod:`guard_adapters.worker.server`): where its
socket is, the stamps it checks, asking it a command, starting and stopping it.

The CLI's entry point (:mod:`guard_adapters.cli.fast`), ``guard run``'s fast path and
``pytest --guard`` ask through this module. It imports only built-in modules (``_socket``,
``marshal``, and :mod:`guard_adapters.sockets`: no pathlib, json or socket wrappers), so asking
the worker costs a few milliseconds over the interpreter's own start. Anything unexpected (no
worker, another Guard version, another environment, a timeout) answers None: the caller runs
the command in its own process.
"""

from __future__ import annotations

import _socket
import marshal
import os
import sys

from guard_adapters.sockets import digest, socket_path
from guard_adapters.worker.state_cache import recall

FAST_COMMANDS = frozenset({"check", "covering-tests", "callers", "stats"})
# what the worker also answers: ``guard run``'s plan and record (see fast_run.py)
WORKER_COMMANDS = FAST_COMMANDS | {"run-plan", "record-run"}
_ANSWER_TIMEOUT_S = 600.0
_PACKAGES = ("guard_core", "guard_adapters")


def code_stamp() -> str:
    """Changes whenever Guard's code (or the Python version running it) does: an upgrade, an
    edit of an editable install."""
    src = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    parts = [sys.version]
    pending = [os.path.join(src, package) for package in _PACKAGES]
    while pending:
        with os.scandir(pending.pop()) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False) and entry.name != "__pycache__":
                    pending.append(entry.path)
                elif entry.name.endswith(".py"):
                    stat = entry.stat()
                    parts.append(f"{entry.path}:{stat.st_mtime_ns}:{stat.st_size}")
    return digest("\n".join(sorted(parts)))


# what can change a decision besides the command line, the working directory and GUARD_*
# (which the worker applies per request): a worker answers only a client whose stamp is its own
_ENV_NAMES = ("PATH", "VIRTUAL_ENV", "HOME", "TMPDIR", "LANG")
_ENV_PREFIXES = ("GIT_", "PYTHON", "XDG_", "CONDA_", "LC_")


def environment_stamp() -> str:
    """The interpreter (its path, and when it or its virtualenv changed) and every variable
    that can change what Guard reads: git's, Python's, the search path, the home folder."""
    parts = [sys.executable, sys.prefix]
    for path in (sys.executable, os.path.join(sys.prefix, "pyvenv.cfg")):
        try:
            parts.append(str(os.stat(path).st_mtime_ns))
        except OSError:
            parts.append("-")
    for key in sorted(os.environ):
        if key in _ENV_NAMES or key.startswith(_ENV_PREFIXES):
            parts.append(f"{key}={os.environ[key]}")
    return digest("\0".join(parts))


def worker_socket(state_dir: str | os.PathLike[str]) -> str:
    return socket_path(state_dir, "worker.sock")


def state_dir_for(argv: list[str], cwd: str) -> str | None:
    """The state folder of the repository ``argv`` names with ``--repo`` (default: here), as
    the bootstrap last decided it for that folder (:mod:`guard_adapters.worker.state_cache`);
    None until a command ran there in process, or once what it read has changed."""
    repo = "."
    for i, arg in enumerate(argv):
        if arg == "--repo" and i + 1 < len(argv):
            repo = argv[i + 1]
        elif arg.startswith("--repo="):
            repo = arg.split("=", 1)[1]
    return recall(os.path.realpath(os.path.join(cwd, os.path.expanduser(repo))))


def send(conn: _socket.socket, message: dict) -> None:
    conn.sendall(marshal.dumps(message))
    conn.shutdown(_socket.SHUT_WR)


def receive(conn: _socket.socket) -> object:
    chunks = []
    while chunk := conn.recv(1 << 16):
        chunks.append(chunk)
    return marshal.loads(b"".join(chunks))


def ask_worker(argv: list[str]) -> tuple[int, str, str] | None:
    """(exit code, stdout, stderr) from the worker, or None to run the command here."""
    cwd = os.getcwd()
    state = state_dir_for(argv, cwd)
    if state is None:
        return None
    env = {k: v for k, v in os.environ.items() if k.startswith("GUARD_")}
    request = {
        "argv": argv,
        "cwd": cwd,
        "env": env,
        "stamp": code_stamp(),
        "environment": environment_stamp(),
    }
    conn = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        conn.settimeout(0.5)
        conn.connect(worker_socket(state))
        conn.settimeout(_ANSWER_TIMEOUT_S)
        send(conn, request)
        answer = receive(conn)
    except (OSError, ValueError, EOFError, TypeError):
        return None
    finally:
        conn.close()
    if not isinstance(answer, dict) or not answer.get("ok"):
        return None
    return int(answer["exit"]), str(answer["stdout"]), str(answer["stderr"])


def start_worker(argv: list[str]) -> None:
    """Start a worker for the repository in the background (it exits on its own when idle
    or when the embedded FalkorDB stops); a second one exits at once."""
    import subprocess

    state = state_dir_for(argv, os.getcwd())
    if state is None or not os.path.isdir(state):
        return
    try:
        subprocess.Popen(
            [sys.executable, "-m", "guard_adapters.worker.server", state],
            cwd=os.path.dirname(state),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            close_fds=True,
        )
    except OSError:
        return


def worker_pid(state_dir: str | os.PathLike[str]) -> int | None:
    """The pid of the repository's worker, if one is alive."""
    try:
        with open(os.path.join(state_dir, "worker.pid")) as f:
            pid = int(f.read().strip())
        os.kill(pid, 0)
    except (OSError, ValueError):
        return None
    return pid


def stop_worker(state_dir: str | os.PathLike[str]) -> bool:
    """Ask the worker of ``state_dir`` to exit; False when none answered."""
    conn = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        conn.settimeout(2)
        conn.connect(worker_socket(state_dir))
        send(conn, {"stop": True})
        receive(conn)
    except (OSError, ValueError, EOFError):
        return False
    finally:
        conn.close()
    return True
