"""Evaluation targets: a PyPI sdist made into a git repository with its own virtualenv."""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import attrs

# outside Guard's own tree: pytest looks for its configuration in the parent folders of a
# target that has none (toolz), and would find Guard's pyproject.toml
WORK = Path(os.environ.get("GUARD_EVALS_WORK", Path.home() / ".cache" / "guard-evals"))


@attrs.frozen
class Target:
    name: str
    spec: str  # the sdist, pinned
    test_deps: tuple[str, ...]
    sources: tuple[str, ...]  # where generated edits go (package directories)
    pytest_args: tuple[str, ...] = ()
    python: str = "3.12"  # sys.monitoring makes per-test evidence cheap; falls back to this one
    testmon: bool = True  # compare with pytest-testmon (it re-traces every selected test)
    min_edits: int = 0  # top the generated split up to this many edits (generate.top_up)


TARGETS = {
    t.name: t
    for t in (
        Target("flask", "flask==3.1.2", ("pytest<9",), ("src/flask",)),
        # a 100 s suite: every pytest run of it (truth, selections) uses both cores
        Target(
            "astroid",
            "astroid==3.3.8",
            ("pytest<9", "setuptools", "pytest-xdist"),
            ("astroid",),
            pytest_args=("-n", "2"),
            testmon=False,  # minutes per edit under its tracer: out of the 20-minute budget
        ),
        # the CI smoke target: a real project whose suite takes about a second
        Target(
            "itsdangerous",
            "itsdangerous==2.2.0",
            ("pytest<9", "freezegun"),
            ("src/itsdangerous",),
            min_edits=45,  # its small code base gives under 3 of some kinds: 38 without
        ),
        # layouts and code unlike the Pallets projects, to see Guard generalise: tests inside
        # the package and a curried namespace built at import time (toolz), a flat package
        # whose lexer and keyword tables are module-level state (sqlparse), a large module of
        # small functions with unittest-style tests (more-itertools)
        Target("toolz", "toolz==1.0.0", ("pytest<9",), ("toolz",), min_edits=45),
        Target("sqlparse", "sqlparse==0.5.3", ("pytest<9",), ("sqlparse",), min_edits=45),
        Target(
            "more-itertools",
            "more-itertools==10.5.0",
            ("pytest<9",),
            ("more_itertools",),
            min_edits=45,
        ),
    )
}


@attrs.frozen
class Prepared:
    target: Target
    repo: Path
    python: Path  # the target venv's interpreter


def git(repo: Path, *args: str, check: bool = True) -> str:
    return subprocess.run(
        [
            "git",
            "-C",
            str(repo),
            "-c",
            "user.name=evals",
            "-c",
            "user.email=evals@example.invalid",
            *args,
        ],
        check=check,
        capture_output=True,
        text=True,
    ).stdout


def sdist_repo(spec: str, work: Path = WORK) -> Path:
    """A clean git repository of ``spec``'s sdist (downloaded once, reset on reuse)."""
    target = work / spec.replace("==", "-")
    if (target / ".git").is_dir():
        git(target, "reset", "-q", "--hard")
        git(target, "clean", "-qfdx", "-e", ".guard")
        return target
    downloads = work / "downloads"
    downloads.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "-q",
            "--no-deps",
            "--no-binary",
            ":all:",
            spec,
            "-d",
            str(downloads),
        ],
        check=True,
    )
    name, _, version = spec.partition("==")
    stem = f"{name.replace('-', '_')}-{version}"
    archive = next(
        p
        for p in downloads.iterdir()
        if p.name.lower().startswith((stem.lower(), f"{name}-{version}".lower()))
    )
    with tarfile.open(archive) as tar:
        top = tar.getnames()[0].split("/")[0]
        tar.extractall(work, filter="data")
    (work / top).rename(target)
    git(target, "init", "-q")
    # what any real checkout ignores (sdists ship no .gitignore)
    (target / ".git" / "info" / "exclude").write_text(
        "__pycache__/\n*.pyc\n.pytest_cache/\n.coverage*\n.testmondata*\n", encoding="utf-8"
    )
    git(target, "add", "-A")
    git(target, "commit", "-qm", f"{spec} sdist")
    return target


def python_of(minor: int) -> str | None:
    """A Python 3.``minor`` on this machine (pyenv's versions, then PATH), or None."""
    candidates = sorted(glob.glob(os.path.expanduser(f"~/.pyenv/versions/3.{minor}.*/bin/python3")))
    candidates += [shutil.which(f"python3.{minor}") or "", f"/usr/bin/python3.{minor}"]
    check = f"import sys; assert sys.version_info[:2] == (3, {minor})"
    for candidate in filter(None, candidates):
        try:
            probe = subprocess.run([candidate, "-c", check], capture_output=True, timeout=30)
        except (OSError, subprocess.SubprocessError):
            continue
        if probe.returncode == 0:
            return candidate
    return None


def base_python(minor: str) -> str:
    """An interpreter of version ``minor`` ("3.12"), else the running one."""
    return python_of(int(minor.split(".")[1])) or sys.executable


def target_venv(repo: Path, deps: tuple[str, ...], base: str) -> Path:
    """A virtualenv next to ``repo`` with the target installed (editable) and ``deps``."""
    venv = repo.parent / f"{repo.name}-venv"
    python = venv / "bin" / "python"
    marker = venv / "evals-deps.txt"
    wanted = "\n".join(deps)
    if not python.exists():
        subprocess.run([base, "-m", "venv", str(venv)], check=True)
    if not marker.exists() or marker.read_text() != wanted:
        subprocess.run(
            [str(python), "-m", "pip", "install", "-q", "-e", str(repo), *deps], check=True
        )
        marker.write_text(wanted)
    return python


def optional_install(python: Path, package: str) -> bool:
    """Install ``package`` into the target venv if the registry has it; False otherwise."""
    probe = subprocess.run(
        [str(python), "-m", "pip", "install", "-q", package], capture_output=True, check=False
    )
    return probe.returncode == 0


def prepare(target: Target, work: Path = WORK) -> Prepared:
    repo = sdist_repo(target.spec, work)
    python = target_venv(repo, ("coverage", *target.test_deps), base_python(target.python))
    if git(repo, "status", "--porcelain").strip():  # an editable install rewrote egg-info
        git(repo, "add", "-A")
        git(repo, "commit", "-qm", "installed")
    return Prepared(target, repo, python)
