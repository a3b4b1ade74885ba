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
