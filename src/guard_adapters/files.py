"""Reading and rewriting files that belong to the user (``.gitignore``, ``AGENTS.md``, an
agent's settings) and Guard's own small state files, so that no reader ever sees half a file
and a failure leaves the old content in place."""

from __future__ import annotations

import contextlib
import fcntl
import os
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

from guard_core.errors import GuardError


def read_text(path: Path) -> str:
    """The file's text exactly as stored (line endings kept), or "" when it does not exist."""
    try:
        with open(path, encoding="utf-8", newline="") as handle:
            return handle.read()
    except FileNotFoundError:
        return ""
    except UnicodeDecodeError as exc:
        raise GuardError(
            f"{path} is not UTF-8 text ({exc.reason} at byte {exc.start}); not touching it",
            hint="fix or convert the file, then run the command again",
        ) from exc
    except OSError as exc:
        raise GuardError(f"cannot read {path}: {exc.strerror or exc}") from exc


def ensure_state_dir(path: Path) -> Path:
    """Guard's state folder (``.guard/``), created with a ``.gitignore`` that keeps all of it
    out of every diff and ``git status``, as virtualenvs do."""
    path.mkdir(parents=True, exist_ok=True)
    ignore = path / ".gitignore"
    if not ignore.exists():
        with contextlib.suppress(OSError):
            ignore.write_text("# created by guard\n*\n", encoding="utf-8")
    return path


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_atomic(path: Path, text: str) -> None:
    """Replace the content of ``path`` in one step: write a temporary file beside it, then
    ``os.replace`` it over the old one. The file keeps its permission bits (a new one gets the
    umask's), and a symlink keeps pointing at the file it names, which is the one rewritten."""
    target = Path(os.path.realpath(path))
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            mode = stat.S_IMODE(target.stat().st_mode)
        except FileNotFoundError:
            mode = 0o666 & ~_umask()
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
                handle.write(text)
                handle.flush()
                os.fsync(handle.fileno())
            os.chmod(tmp, mode)
            os.replace(tmp, target)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            raise
    except OSError as exc:
        raise GuardError(f"cannot write {path}: {exc.strerror or exc}") from exc


@contextlib.contextmanager
def locked(lock_file: Path) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``lock_file`` (created if needed) for a read-modify-write
    that other processes do too."""
    lock_file.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_file, "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
