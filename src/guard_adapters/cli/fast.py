"""The ``guard`` entry point: answer read-only commands through the repository's warm worker
when one runs, else run the command here (and start a worker for the next call).

A fresh process spends most of a ``guard check`` importing the graph client; the worker (see
:mod:`guard_adapters.cli.worker`) keeps those imports loaded. This module imports only the
standard library so that asking the worker costs a few milliseconds. The worker's answer is
exactly what the command prints and exits with here; anything unexpected (no worker, another
Guard version, a timeout) falls back to running the command in this process.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

FAST_COMMANDS = frozenset({"check", "covering-tests", "callers", "stats"})
_MAX_SOCKET_PATH = 100
_ANSWER_TIMEOUT_S = 600.0


def code_stamp() -> str:
    """Changes whenever Guard's code does (an upgrade, an edit of an editable install)."""
    digest = hashlib.sha256()
    for package in ("guard_core", "guard_adapters"):
        root = Path(__file__).resolve().parents[2] / package
        for path in sorted(root.rglob("*.py")):
            stat = path.stat()
            digest.update(f"{path}:{stat.st_mtime_ns}:{stat.st_size};".encode())
    return digest.hexdigest()[:24]


def worker_socket(state_dir: Path) -> Path:
    path = state_dir / "worker.sock"
    if len(os.fsencode(str(path))) > _MAX_SOCKET_PATH:
        digest = hashlib.sha256(os.fsencode(str(state_dir))).hexdigest()[:16]
        path = Path(tempfile.gettempdir()) / f"guard-{os.getuid()}-{digest}-worker.sock"
    return path


def state_dir_for(argv: list[str], cwd: Path) -> Path | None:
    """The state folder of the repository ``argv`` names with ``--repo`` (default: here)."""
    if os.environ.get("GUARD_STATE_DIR"):
        return Path(os.environ["GUARD_STATE_DIR"]).expanduser().resolve()
    repo = "."
    for i, arg in enumerate(argv):
        if arg == "--repo" and i + 1 < len(argv):
            repo = argv[i + 1]
        elif arg.startswith("--repo="):
            repo = arg.split("=", 1)[1]
    path = (cwd / repo).resolve()
    for folder in (path, *path.parents):
        if (folder / ".git").exists():
            return folder / ".guard"
    return None


def guard_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k.startswith("GUARD_")}


def ask_worker(argv: list[str]) -> tuple[int, str, str] | None:
    """(exit code, stdout, stderr) from the worker, or None to run the command here."""
    cwd = Path.cwd()
    state = state_dir_for(argv, cwd)
    if state is None:
        return None
    request = {"argv": argv, "cwd": str(cwd), "env": guard_env(), "stamp": code_stamp()}
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.settimeout(0.5)
            conn.connect(str(worker_socket(state)))
            conn.settimeout(_ANSWER_TIMEOUT_S)
            conn.sendall(json.dumps(request).encode())
            conn.shutdown(socket.SHUT_WR)
            answer = json.loads(_read_all(conn))
    except (OSError, ValueError):
        return None
    if not isinstance(answer, dict) or not answer.get("ok"):
        return None
    return int(answer["exit"]), str(answer["stdout"]), str(answer["stderr"])


def _read_all(conn: socket.socket) -> bytes:
    chunks = []
    while chunk := conn.recv(1 << 16):
        chunks.append(chunk)
    return b"".join(chunks)


def start_worker(argv: list[str]) -> None:
    """Start a worker for the repository in the background (it exits on its own when idle
    or when the embedded FalkorDB stops); a second one exits at once."""
    state = state_dir_for(argv, Path.cwd())
    if state is None or not state.is_dir():
        return
    with contextlib.suppress(OSError):
        subprocess.Popen(
            [sys.executable, "-m", "guard_adapters.cli.worker", str(state)],
            cwd=state.parent, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, start_new_session=True, close_fds=True,
        )  # fmt: skip


def main() -> None:
    argv = sys.argv[1:]
    fast = bool(argv) and argv[0] in FAST_COMMANDS and os.environ.get("GUARD_WORKER") != "0"
    if fast:
        answer = ask_worker(argv)
        if answer is not None:
            code, out, err = answer
            sys.stdout.write(out)
            sys.stderr.write(err)
            sys.stdout.flush()
            sys.exit(code)
    from guard_adapters.cli.main import main as run_here

    try:
        run_here()
    finally:
        if fast:
            start_worker(argv)
