"""Prepare benchmark targets from PyPI sdists: download, unpack, git init and commit."""

from __future__ import annotations

import subprocess
import sys
import tarfile
from pathlib import Path

WORK = Path(__file__).resolve().parent / ".work"


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=bench", "-c", "user.email=bench@example.invalid",
         *args], check=True, capture_output=True, text=True).stdout  # fmt: skip


def sdist_repo(spec: str) -> Path:
    """A git repository of ``spec``'s sdist (cached under benchmarks/.work)."""
    name = spec.replace("==", "-")
    target = WORK / name
    if (target / ".git").is_dir():
        git(target, "reset", "-q", "--hard")
        git(target, "clean", "-qfdx", "-e", ".guard")
        return target
    WORK.mkdir(parents=True, exist_ok=True)
    dl = WORK / "downloads"
    subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary",
                    ":all:", spec, "-d", str(dl)], check=True)  # fmt: skip
    archive = next(p for p in dl.iterdir() if p.name.lower().startswith(
        spec.split("==")[0].lower().replace("-", "_")) or p.name.lower().startswith(
        spec.split("==")[0].lower()))  # fmt: skip
    with tarfile.open(archive) as tar:
        top = tar.getnames()[0].split("/")[0]
        tar.extractall(WORK, filter="data")
    (WORK / top).rename(target)
    git(target, "init", "-q")
    git(target, "add", "-A")
    git(target, "commit", "-qm", "sdist")
    return target


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
