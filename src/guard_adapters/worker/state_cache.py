"""Where the bootstrap put a folder's state, remembered for the ``guard`` fast path (standard
library only: it is read before anything else is imported).

The root and the state folder are decided once, by :func:`guard_core.bootstrap.assemble` (git's
top level, ``[tool.guard] state_dir``, ``GUARD_STATE_DIR``, a linked worktree's main worktree).
Every command that runs in process records that answer here, with a stamp of each file the
answer depends on; the fast path reads it back and trusts it only while every stamp still
holds. Anything missing, stale or unreadable answers None: the command then runs in process,
which records the answer again.
"""

from __future__ import annotations

import marshal
import os

from guard_adapters.sockets import digest

_FORMAT = 1
# what the bootstrap reads besides the folders' files: git's variables can move the root
_ENV_PREFIXES = ("GIT_", "GUARD_STATE_DIR")


def cache_folder() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "guard", "roots")


def _key(start: str) -> tuple[str, ...]:
    env = sorted(f"{k}={v}" for k, v in os.environ.items() if k.startswith(_ENV_PREFIXES))
    return (start, *env)


def _entry_path(key: tuple[str, ...]) -> str:
    return os.path.join(cache_folder(), digest("\0".join(key)))


def _signature(path: str) -> tuple[int, int, int] | None:
    """What a change of ``path`` changes: a file's kind, size and time; a folder's kind only
    (a ``.git`` folder's time moves with every git command, its meaning does not)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    kind = st.st_mode & 0o170000
    if kind == 0o040000:
        return (kind, 0, 0)
    return (kind, st.st_size, st.st_mtime_ns)


def _stamp_paths(start: str, root: str) -> list[str]:
    """The files the answer for ``start`` depends on: ``.git`` in every folder from ``start``
    up to the root (all the way up outside a repository: a new repository above would own it),
    the root's ``pyproject.toml``."""
    paths = []
    folder = start
    inside = os.path.exists(os.path.join(root, ".git"))
    while True:
        paths.append(os.path.join(folder, ".git"))
        parent = os.path.dirname(folder)
        if (inside and folder == root) or parent == folder:
            break
        folder = parent
    paths.append(os.path.join(root, "pyproject.toml"))
    return paths


def remember(start: str | os.PathLike[str], root: str | os.PathLike[str], state: str) -> None:
    """Record that the bootstrap, started at ``start``, chose ``root`` and the state folder
    ``state`` (best effort: a read-only home only costs the fast path)."""
    start, root = os.path.realpath(start), os.path.realpath(root)
    if not (start == root or start.startswith(root.rstrip(os.sep) + os.sep)):
        return  # a plug-in's root outside the start's folders: nothing here can check it
    key = _key(start)
    stamps = [(p, _signature(p)) for p in _stamp_paths(start, root)]
    entry = (_FORMAT, key, os.fspath(state), stamps)
    path = _entry_path(key)
    try:
        with open(path, "rb") as f:
            if marshal.load(f) == entry:
                return
    except (OSError, ValueError, EOFError, TypeError):
        pass
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        partial = f"{path}.{os.getpid()}"
        with open(partial, "wb") as f:
            marshal.dump(entry, f)
        os.replace(partial, path)
    except OSError:
        return


def _recalled(folder: str) -> str | None:
    key = _key(folder)
    try:
        with open(_entry_path(key), "rb") as f:
            version, recorded, state, stamps = marshal.load(f)
    except (OSError, ValueError, EOFError, TypeError):
        return None
    if version != _FORMAT or tuple(recorded) != key:
        return None
    for path, signature in stamps:
        if _signature(path) != signature:
            return None
    return str(state)


def recall(start: str) -> str | None:
    """The state folder the bootstrap chose for ``start`` (a real path), or for the nearest
    folder above it with no ``.git`` between them (git finds the same root from both), while
    nothing it read has changed; else None."""
    folder = start
    while True:
        state = _recalled(folder)
        if state is not None:
            return state
        if os.path.lexists(os.path.join(folder, ".git")):
            return None  # a root of its own, never opened
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent
