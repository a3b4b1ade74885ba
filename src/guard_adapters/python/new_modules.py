"""What a new Python module can change without any existing line changing.

Code that already names the module (``try: from pkg.extra import X except ImportError``,
``import_module("pkg.extra")``, ``__import__``) behaves differently once the file exists; a
module outside any package (a tests folder, the repository root, ``src/``) can shadow a
top-level name that other code imports (a ``json.py``, a second ``helpers.py``). The first
are *dependents* (their tests are selected); the second are *hazards* (run-all).
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path, PurePosixPath

from guard_adapters.git.repo import git
from guard_adapters.python.regions import ModuleRegions, extract_regions
from guard_core.errors import RepositoryError
from guard_core.model import MODULE_SCOPE, ChangedFile, Dependent, FileKind, node_id

_MAX_HITS = 5000  # past this many mentions, charge whole modules instead of parsing each


@functools.lru_cache(maxsize=1)
def _installed_names() -> frozenset[str]:
    names = set(sys.stdlib_module_names) | set(sys.builtin_module_names)
    with contextlib.suppress(Exception):  # broken metadata: the standard library still counts
        names |= set(metadata.packages_distributions())
    return frozenset(names)


def _python_files(root: Path) -> list[str]:
    out = git(
        root,
        "ls-files",
        "-z",
        "--cached",
        "--others",
        "--exclude-standard",
        "--",
        "*.py",
        binary=True,
    )
    assert isinstance(out, bytes)
    return sorted({os.fsdecode(p) for p in out.split(b"\0") if p})


def _top_level(path: str, packages: set[str]) -> tuple[str, str]:
    """(the name under which ``path``'s outermost package or module imports, the folder that
    must be on ``sys.path`` for that)."""
    p = PurePosixPath(path)
    name = p.stem if p.name != "__init__.py" else ""
    folder = p.parent
    while folder.as_posix() != "." and (
        folder.as_posix() in packages or folder.parent.as_posix() in packages
    ):  # a package, or a namespace subpackage inside one
        name = folder.name
        folder = folder.parent
    return name, folder.as_posix()


def _new_paths(files: Iterable[ChangedFile]) -> list[str]:
    return sorted(
        f.path
        for f in files
        if f.path.endswith(".py") and f.kind in (FileKind.ADDED, FileKind.RENAMED)
    )


def new_module_effects(
    root: Path, files: Iterable[ChangedFile]
) -> tuple[list[str], list[Dependent]]:
    """Hazards and dependents of the modules that appeared in ``files``."""
    files = list(files)
    added = _new_paths(files)
    if not added:
        return [], []
    try:
        every = _python_files(root)
    except RepositoryError as exc:
        return [f"cannot list the repository's modules: {exc.message}"], []
    packages = {str(PurePosixPath(p).parent) for p in every if p.endswith("/__init__.py")}
    if any(PurePosixPath(p).name == "__init__.py" and "/" not in p for p in every):
        packages.add(".")
    fresh = set(added)
    owners: dict[str, set[str]] = {}  # top-level name -> folders it imports from, before
    for path in every:
        name, folder = _top_level(path, packages)
        if name and path not in fresh:
            owners.setdefault(name, set()).add(folder)
    hazards: list[str] = []
    words: dict[str, list[str]] = {}
    siblings: list[Dependent] = []
    for path in added:
        p = PurePosixPath(path)
        if p.name == "conftest.py":
            continue  # a new conftest.py is test code of its folder, judged as such
        name, folder = _top_level(path, packages)
        known_here = folder in owners.get(name, set())
        clashes = owners.get(name, set()) - {folder}
        if name and not known_here and (name in _installed_names() or clashes):
            where = (
                "an installed or standard module"
                if not clashes
                else ", ".join(sorted(f"{c}/{name}" for c in clashes))
            )
            hazards.append(f"new module {path} shadows the importable name {name!r} ({where})")
        word = p.parent.name if p.name == "__init__.py" else p.stem
        if word:
            words.setdefault(word, []).append(path)
        if p.name == "__init__.py":  # a namespace package becomes a regular one
            folder_path = p.parent.as_posix()
            for other in every:
                if other not in fresh and PurePosixPath(other).parent.as_posix() == folder_path:
                    siblings.append(Dependent(node_id(other, MODULE_SCOPE), f"{path} appeared"))
    dependents = siblings + _mentions(root, words, fresh)
    return hazards, sorted(set(dependents), key=lambda d: (d.id, d.via))


def _mentions(root: Path, words: dict[str, list[str]], exclude: set[str]) -> list[Dependent]:
    """The regions of existing modules whose code names one of ``words``."""
    if not words:
        return []
    args = ["grep", "-z", "-n", "-w", "-I", "-F", "--no-color", "--full-name"]
    for word in sorted(words):
        args += ["-e", word]
    try:
        out = git(root, *args, "--", "*.py", check=False, binary=True)
    except RepositoryError:
        out = b""
    assert isinstance(out, bytes)
    hits: dict[str, list[tuple[int, str]]] = {}
    for line in out.split(b"\n"):
        parts = line.split(b"\0", 2)
        if len(parts) != 3 or not parts[1].isdigit():
            continue
        path = os.fsdecode(parts[0])
        if path not in exclude:
            hits.setdefault(path, []).append((int(parts[1]), os.fsdecode(parts[2])))
    many = sum(len(v) for v in hits.values()) > _MAX_HITS
    found: list[Dependent] = []
    for path, lines in sorted(hits.items()):
        regions = None if many else _regions(root, path)
        for number, text in lines:
            word = next((w for w in words if w in text), "")
            via = f"{path}:{number} names {', '.join(words.get(word, [word]))}"
            owner = regions.owner(number) if regions is not None else node_id(path, MODULE_SCOPE)
            found.append(Dependent(owner, via))
    return found


def _regions(root: Path, path: str) -> ModuleRegions | None:
    try:
        return extract_regions(path, (root / path).read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):
        return None
