"""Prepare benchmark targets from PyPI sdists: download, unpack, git init and commit."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the evals package

from evals.targets import git
from evals.targets import sdist_repo as _sdist_repo

WORK = Path(__file__).resolve().parent / ".work"
__all__ = ["WORK", "covered_edits", "drop_testmon", "git", "sdist_repo", "target_venv"]


def sdist_repo(spec: str) -> Path:
    """A git repository of ``spec``'s sdist (cached under benchmarks/.work)."""
    return _sdist_repo(spec, WORK)


def target_venv(
    repo: Path, extra: tuple[str, ...] = ("pytest<9", "coverage"), base: str | None = None
) -> Path:
    """A virtualenv (from ``base``, default this interpreter) with the target installed
    (editable) and its test tools."""
    suffix = "" if base is None else "-" + Path(base).parent.parent.name
    venv = repo.parent / f"{repo.name}-venv{suffix}"
    python = venv / "bin" / "python"
    if not python.exists():
        subprocess.run([base or sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", "-e", str(repo), *extra],
                       check=True)  # fmt: skip
    return python


def covered_edits(repo: Path, ids: list[str], count: int) -> list[tuple[str, str, str]]:
    """Up to ``count`` (path, old text, new text) edits, one per function in ``ids``: the
    function returns None before its last statement (a behaviour change)."""
    import ast

    edits = []
    for fid in ids:
        path, _, qual = fid.partition("::")
        if "<" in qual or "." in qual:
            continue
        source = (repo / path).read_text(encoding="utf-8")
        node = next((n for n in ast.parse(source).body
                     if isinstance(n, ast.FunctionDef) and n.name == qual), None)  # fmt: skip
        if node is None or len(node.body) < 2:
            continue
        lines = source.splitlines(keepends=True)
        last = node.body[-1]
        old = lines[last.lineno - 1]
        new = " " * last.col_offset + "return None\n" + old
        edits.append((path, old, new))
        if len(edits) == count:
            break
    return edits


def drop_testmon(repo: Path) -> None:
    """Forget pytest-testmon's database (a SQLite file and its journals)."""
    for path in repo.glob(".testmondata*"):
        path.unlink()
