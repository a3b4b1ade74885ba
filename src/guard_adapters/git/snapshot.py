"""A commit object holding the working tree exactly as it is, made without touching the
user's working tree, index, branch or stash: the base that refreshed evidence refers to.

Files are staged into a throw-away copy of the index (so git's stat cache spares rehashing
unchanged files), written as a tree, and wrapped in a commit whose parent is HEAD. The ref
``refs/guard/evidence`` keeps the latest one from garbage collection.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from guard_adapters.git.diff import STATE_DIR
from guard_adapters.git.repo import git, head_sha

EVIDENCE_REF = "refs/guard/evidence"
_IDENTITY = {
    "GIT_AUTHOR_NAME": "guard",
    "GIT_AUTHOR_EMAIL": "guard@localhost",
    "GIT_COMMITTER_NAME": "guard",
    "GIT_COMMITTER_EMAIL": "guard@localhost",
}


def working_tree_id(repo: Path) -> str:
    """The git tree id of the working tree (tracked and untracked, not ignored, without
    Guard's state folder and bytecode caches)."""
    out = git(repo, "rev-parse", "--path-format=absolute", "--git-path", "index")
    index = Path(str(out).strip())
    with tempfile.TemporaryDirectory(prefix="guard-index-") as tmp:
        scratch = Path(tmp) / "index"
        if index.exists():
            shutil.copy2(index, scratch)  # its mtime too: git tells racily clean entries by it
        env = {"GIT_INDEX_FILE": str(scratch)}
        # bytecode caches are no change of the code: without this exclusion every tree that
        # ran Python (and lacks a .gitignore for them) would differ from its commit
        git(repo, "add", "-A", "--", ".", f":(exclude){STATE_DIR.rstrip('/')}",
            ":(exclude,glob)**/__pycache__/**", ":(exclude,glob)**/*.py[co]", env=env)  # fmt: skip
        return str(git(repo, "write-tree", env=env)).strip()


def snapshot_commit(repo: Path, tree: str) -> str:
    """A commit for ``tree`` (HEAD itself when the tree is HEAD's), pinned by a ref."""
    head = head_sha(repo)
    if str(git(repo, "rev-parse", f"{head}^{{tree}}")).strip() == tree:
        return head
    message = "guard: evidence snapshot of the working tree"
    out = git(repo, "commit-tree", "--no-gpg-sign", tree, "-p", head, "-m", message, env=_IDENTITY)
    sha = str(out).strip()
    git(repo, "update-ref", EVIDENCE_REF, sha)
    return sha
