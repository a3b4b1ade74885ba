"""What changed between a base commit and the working tree, as git reports it."""

from __future__ import annotations

import hashlib
import os
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import attrs

from guard_adapters.git.repo import DIFF_FLAGS, git
from guard_core.errors import RepositoryError

STATE_DIR = ".guard/"  # Guard's own state is never part of a change


@attrs.frozen
class DiffEntry:
    status: str  # A, M, D, R, T (type change), U (unmerged), X (unknown)
    path: str
    old_path: str | None = None
    old_blob: str | None = None  # the base side's blob id, when there is one


_NULL_BLOB = re.compile(r"^0+$")


def diff_entries(repo: Path, base: str) -> list[DiffEntry]:
    """Tracked changes (staged and unstaged) against ``base``, plus untracked files."""
    with ThreadPoolExecutor(max_workers=2) as pool:  # the git processes run side by side
        others = pool.submit(
            git, repo, "ls-files", "-z", "--others", "--exclude-standard", binary=True
        )
        # Python files a user's own excludes hide still import: only the repository's
        # .gitignore decides for them
        hidden = pool.submit(
            git,
            repo,
            "-c",
            "core.excludesFile=/dev/null",
            "ls-files",
            "-z",
            "--others",
            "--exclude-per-directory=.gitignore",
            "--",
            "*.py",
            binary=True,
        )
        raw = git(repo, "diff", "--raw", *DIFF_FLAGS, "-M", "--no-abbrev", base, "--", binary=True)
        untracked = others.result()
        python = hidden.result()
    assert isinstance(raw, bytes) and isinstance(untracked, bytes) and isinstance(python, bytes)
    untracked = b"\0".join(
        sorted(
            {p for p in untracked.split(b"\0") if p}
            | {p for p in python.split(b"\0") if p and not _environment_path(repo, p)}
        )
    )
    fields = [os.fsdecode(f) for f in raw.split(b"\0")]
    if fields and fields[-1] == "":
        fields.pop()
    out: list[DiffEntry] = []
    i = 0
    while i < len(fields):
        meta = fields[i].split()
        if len(meta) != 5 or not meta[0].startswith(":"):
            raise RepositoryError(f"unexpected git diff output: {fields[i][:80]!r}")
        old_blob = None if _NULL_BLOB.match(meta[2]) else meta[2]
        code = meta[4][0]
        if code in "RC":
            if i + 2 >= len(fields):
                raise RepositoryError("truncated rename entry in git diff output")
            old, new = fields[i + 1], fields[i + 2]
            out.append(DiffEntry("R", new, old, old_blob) if code == "R" else DiffEntry("A", new))
            i += 3
        else:
            if i + 1 >= len(fields):
                raise RepositoryError("truncated entry in git diff output")
            out.append(DiffEntry(code, fields[i + 1], None, old_blob))
            i += 2
    out = _with_untracked(repo, out, [os.fsdecode(p) for p in untracked.split(b"\0") if p])
    return [e for e in out if not e.path.startswith(STATE_DIR)]


_ENVIRONMENT_PARTS = frozenset(
    {
        b"site-packages",
        b"dist-packages",
        b"node_modules",
        b".tox",
        b".nox",
        b".eggs",
        b"__pypackages__",
        b"__pycache__",
    }
)


def _environment_path(repo: Path, path: bytes) -> bool:
    """A file of an installed environment inside the repository (a virtualenv, tox)."""
    parts = path.split(b"/")
    if _ENVIRONMENT_PARTS.intersection(parts):
        return True
    return (repo / os.fsdecode(parts[0]) / "pyvenv.cfg").exists() if len(parts) > 1 else False


def _with_untracked(repo: Path, entries: list[DiffEntry], untracked: list[str]) -> list[DiffEntry]:
    """Untracked files are added, unless ``base`` already has them (an evidence snapshot of
    a working tree): git then reports them deleted, as they are not in the index, and they
    are really unchanged or modified."""
    new = set(untracked)
    deleted = {e.path: e for e in entries if e.status == "D" and e.path in new}
    out = [e for e in entries if e.path not in deleted]
    for path in untracked:
        was = deleted.get(path)
        if was is None:
            out.append(DiffEntry("A", path))
        elif was.old_blob != _blob_of(repo / path):
            out.append(DiffEntry("M", path, None, was.old_blob))
    return out


def _blob_of(path: Path) -> str | None:
    try:
        return blob_id(path.read_bytes())
    except OSError:
        return None


def blob_id(data: bytes) -> str:
    """The id git gives a blob with ``data`` (SHA-1 repositories)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


def read_at(repo: Path, rev: str, path: str) -> bytes:
    """The bytes of ``path`` at ``rev``, as stored (no textconv, no filter)."""
    out = git(repo, "cat-file", "blob", f"{rev}:{path}", binary=True)
    assert isinstance(out, bytes)
    return out


def is_binary(data: bytes) -> bool:
    return b"\0" in data[:8000]  # git's own heuristic
