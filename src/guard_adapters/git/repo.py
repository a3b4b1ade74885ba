"""Thin, safe wrappers around the git command line (no shell, paths passed as arguments)."""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
from pathlib import Path

from guard_core.errors import RepositoryError

_ENV = {"GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C", "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_ATTR_NOSYSTEM": "1"}  # fmt: skip
# variables that would change what git prints or which paths a pathspec names
_DROPPED = (
    "GIT_EXTERNAL_DIFF", "GIT_DIFF_OPTS", "GIT_DIFF_PATH_COUNTER", "GIT_DIFF_PATH_TOTAL",
    "GIT_LITERAL_PATHSPECS", "GIT_GLOB_PATHSPECS", "GIT_NOGLOB_PATHSPECS",
    "GIT_ICASE_PATHSPECS", "GIT_ATTR_SOURCE",
)  # fmt: skip
# config that a user, a tool or a repository can set and that changes git's output: given on
# the command line, these win over every config file and GIT_CONFIG_PARAMETERS
_CONFIG = (
    "core.quotePath=false", "color.ui=false", "color.diff=false", "color.status=false",
    "diff.noprefix=false", "diff.mnemonicPrefix=false", "diff.relative=false",
    "diff.renames=true", "diff.renameLimit=1000", "diff.ignoreSubmodules=none",
    "diff.orderFile=/dev/null", "core.autocrlf=false", "core.safecrlf=false", "core.eol=lf",
    "core.fsmonitor=false", f"core.attributesFile={os.devnull}", "add.ignoreErrors=false",
    "status.showUntrackedFiles=all", "status.renames=true",
)  # fmt: skip
CONFIG_ARGS = tuple(arg for item in _CONFIG for arg in ("-c", item))
# the flags of every `git diff` Guard reads: raw, NUL-separated, whole-tree, no drivers
DIFF_FLAGS = ("--no-color", "--no-ext-diff", "--no-textconv", "--no-relative", "-z")


def git_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment git runs in: the user's (GIT_DIR and the like hold), without what
    would change its output."""
    env = {k: v for k, v in os.environ.items() if k not in _DROPPED}
    return {**env, **_ENV, **(extra or {})}


def git(
    repo: Path,
    *args: str,
    check: bool = True,
    binary: bool = False,
    env: dict[str, str] | None = None,
) -> str | bytes:
    """Run ``git -C repo args`` with a hardened config and environment (``env`` adds
    variables); raise :class:`RepositoryError` with git's message on failure."""
    try:
        proc = subprocess.run(
            ["git", "-C", str(repo), *CONFIG_ARGS, *args],
            capture_output=True,
            env=git_env(env),
            check=False,
            timeout=120,
        )
    except FileNotFoundError as exc:
        raise RepositoryError("git is not installed", hint="install git") from exc
    except subprocess.TimeoutExpired as exc:
        raise RepositoryError(f"git {args[0]} timed out in {repo}") from exc
    if check and proc.returncode != 0:
        message = proc.stderr.decode("utf-8", "replace").strip()
        raise RepositoryError(f"git {' '.join(args[:2])} failed in {repo}: {message}")
    return proc.stdout if binary else proc.stdout.decode("utf-8", "surrogateescape")


def repo_root(path: Path) -> Path:
    """The top of the work tree that contains ``path``."""
    if not path.exists():
        raise RepositoryError(f"{path} does not exist")
    try:
        out = git(path, "rev-parse", "--show-toplevel")
    except RepositoryError as exc:
        raise RepositoryError(
            f"{path} is not inside a git repository", hint="run `git init` and commit first"
        ) from exc
    return Path(str(out).strip())


def head_sha(repo: Path) -> str:
    """The commit HEAD points at; a clear error for a repository without commits."""
    out = git(repo, "rev-parse", "--verify", "--quiet", "HEAD^{commit}", check=False)
    sha = str(out).strip()
    if not re.fullmatch(r"[0-9a-f]{40,64}", sha):
        raise RepositoryError(
            f"{repo} has no commits yet", hint="commit once so Guard has a base to diff against"
        )
    return sha


def resolve_rev(repo: Path, rev: str) -> str:
    out = git(repo, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}", check=False)
    sha = str(out).strip()
    if not sha:
        raise RepositoryError(f"unknown revision {rev!r} in {repo}")
    return sha


def main_worktree(repo: Path) -> Path | None:
    """The main worktree of a repository that has linked worktrees (``git worktree add``),
    whichever of them ``repo`` is; None when it has only one. Evidence and the embedded
    server live there, shared by every worktree. A bare repository's folder stands in for its
    main worktree."""
    out = str(git(repo, "worktree", "list", "--porcelain", check=False))
    trees = [line[len("worktree ") :] for line in out.splitlines() if line.startswith("worktree ")]
    if len(trees) < 2:
        return None
    return Path(trees[0])


def repo_identity(repo: Path) -> str:
    """A name for the repository that is the same in every clone: its first root commit, or
    the absolute path when there are no commits yet."""
    out = str(git(repo, "rev-list", "--max-parents=0", "HEAD", check=False)).split()
    if out:
        return sorted(out)[0][:16]
    return hashlib.sha256(str(repo.resolve()).encode()).hexdigest()[:16]


def tracked_files(repo: Path) -> list[str]:
    """Tracked files plus untracked files that are not ignored, repo-relative, NUL-safe."""
    raw = git(repo, "ls-files", "-z", "--cached", "--others", "--exclude-standard", binary=True)
    assert isinstance(raw, bytes)
    names = {os.fsdecode(p) for p in raw.split(b"\0") if p}
    return sorted(n for n in names if (repo / n).is_file())
