"""The slicer: the diff of the working tree against a base commit, as a change set.

Both sides of every changed Python file are parsed afresh (never through line ranges stored at
ingest time), and regions are compared by their normalised code, so every changed line lands
in a function, a class body or the module body. Anything that cannot be read becomes a problem
in the change set, which the decision turns into run-all.
"""

from __future__ import annotations

import ast
import re
from collections import OrderedDict
from pathlib import Path, PurePosixPath

import attrs

from guard_adapters.git.diff import DiffEntry, diff_entries, is_binary, read_at
from guard_adapters.git.repo import head_sha, repo_root, resolve_rev
from guard_adapters.pytest.layout import PytestLayout, load_layout
from guard_adapters.python.bases import BaseResolver, ParsedFiles
from guard_adapters.python.compare import compare_modules
from guard_adapters.python.decorators import through_decorators, wrapping_decorators
from guard_adapters.python.integrity import integrity_flags
from guard_adapters.python.modules import from_imports, module_name, star_import_breaks
from guard_adapters.python.new_modules import new_module_effects
from guard_adapters.python.regions import ModuleRegions, extract_regions
from guard_adapters.python.test_functions import collected_test_ids
from guard_core.config import Settings
from guard_core.errors import RepositoryError
from guard_core.model import (
    CLASS_BODY,
    MODULE_SCOPE,
    ChangedFile,
    ChangedRegion,
    ChangeSet,
    FileKind,
    FileRole,
    IntegrityFlag,
    RegionKind,
    node_id,
)

ENVIRONMENT_NAMES = frozenset(
    {
        "pyproject.toml",
        "setup.cfg",
        "setup.py",
        "tox.ini",
        "pytest.ini",
        "noxfile.py",
        "Pipfile",
        "Pipfile.lock",
        "poetry.lock",
        "uv.lock",
        "pdm.lock",
        "MANIFEST.in",
        ".python-version",
        "environment.yml",
        "conda-lock.yml",
        ".coveragerc",
    }
)
COMPILED_SUFFIXES = frozenset({".c", ".h", ".cc", ".cpp", ".pyx", ".pxd", ".rs", ".so", ".pyd"})

_BASE_CACHE = 256  # parsed base-side files kept per slicer
_FULL_SHA = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")

_KINDS = {"A": FileKind.ADDED, "D": FileKind.DELETED, "R": FileKind.RENAMED}
_CODE_ROLES = (FileRole.SOURCE, FileRole.TEST, FileRole.CONFTEST)


def file_role(path: str, layout: PytestLayout) -> FileRole:
    p = PurePosixPath(path)
    name = p.name
    if name == "conftest.py":
        return FileRole.CONFTEST
    if (
        name in ENVIRONMENT_NAMES
        or p.suffix in COMPILED_SUFFIXES
        or (name.startswith(("requirements", "constraints")) and p.suffix in (".txt", ".in"))
        or (p.parent.name == "requirements" and p.suffix in (".txt", ".in"))
        or name.endswith(".lock")
    ):
        return FileRole.ENVIRONMENT
    if p.suffix == ".py":
        if layout.is_test_file(path) or layout.in_test_tree(path):
            return FileRole.TEST
        return FileRole.SOURCE
    return FileRole.DATA


def parse_regions(path: str, data: bytes) -> ModuleRegions:
    """Regions of one version of a file; raises ValueError with a readable reason."""
    if is_binary(data):
        raise ValueError(f"{path} is binary")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path} is not UTF-8 ({exc.reason} at byte {exc.start})") from exc
    try:
        tree = ast.parse(text, filename=path)
        return extract_regions(path, text, tree)
    except (SyntaxError, ValueError) as exc:
        line = getattr(exc, "lineno", None)
        raise ValueError(f"{path} does not parse" + (f" (line {line})" if line else "")) from exc
    except (RecursionError, MemoryError) as exc:  # a generated, deeply nested expression
        raise ValueError(f"{path} is too deeply nested to parse ({type(exc).__name__})") from exc


class GitSlicer:
    """Slices the working tree of a git repository (staged, unstaged and untracked changes).

    The base side of a file is parsed once per blob and kept: an agent checks the same base
    again and again while only the working tree moves.
    """

    def __init__(self, settings: Settings | None = None) -> None:
        self.settings = settings
        self._base_regions: OrderedDict[tuple[str, str], ModuleRegions] = OrderedDict()
        self._roots: dict[Path, Path] = {}
        self._resolved: set[tuple[Path, str]] = set()
        self._parsed_files = ParsedFiles()

    def _old_side(
        self, root: Path, base: str, entry: DiffEntry
    ) -> tuple[bytes | None, ModuleRegions | None]:
        path = entry.old_path or entry.path
        key = (path, entry.old_blob or "")
        if entry.old_blob and key in self._base_regions:
            self._base_regions.move_to_end(key)
            return None, self._base_regions[key]
        return read_at(root, base, path), None

    def _remember(self, entry: DiffEntry, regions: ModuleRegions) -> None:
        if entry.old_blob:
            self._base_regions[(entry.old_path or entry.path, entry.old_blob)] = regions
            while len(self._base_regions) > _BASE_CACHE:
                self._base_regions.popitem(last=False)

    def slice(self, repo: Path, base: str | None = None) -> ChangeSet:
        root = self._roots.get(repo) or self._roots.setdefault(repo, repo_root(repo))
        # a clear error without commits; one git call either way (checks run on a hot path)
        if base and _FULL_SHA.fullmatch(base) and (root, base) in self._resolved:
            base_sha = base  # a commit id once verified names the same commit for good
        else:
            base_sha = resolve_rev(root, base) if base else head_sha(root)
            if base and _FULL_SHA.fullmatch(base):
                self._resolved.add((root, base))
        try:
            entries = diff_entries(root, base_sha)
        except RepositoryError as exc:
            return ChangeSet(base=base_sha, problems=(f"cannot read the diff: {exc.message}",))
        layout = load_layout(root)
        files: list[ChangedFile] = []
        regions: list[ChangedRegion] = []
        problems: list[str] = []
        flags: list[IntegrityFlag] = []
        parsed: dict[str, ModuleRegions] = {}
        for entry in entries:
            changed, found, problem = self._entry(root, base_sha, entry, layout, flags, parsed)
            files.append(changed)
            regions += found
            if problem:
                problems.append(problem)
        if any(r.removed for r in regions):  # which changed files still import a gone name
            files = [
                attrs.evolve(
                    f,
                    imports_after=from_imports(parsed[f.path], module_name(root, f.path)),
                    star_breaks=star_import_breaks(parsed[f.path]),
                )
                if f.path in parsed
                else f
                for f in files
            ]
        hazards, dependents = new_module_effects(root, files)
        return ChangeSet(
            base=base_sha,
            files=tuple(files),
            regions=tuple(regions),
            problems=tuple(problems),
            integrity=tuple(flags),
            hazards=tuple(hazards),
            dependents=tuple(dependents),
        )

    def _entry(
        self,
        root: Path,
        base: str,
        entry: DiffEntry,
        layout: PytestLayout,
        flags: list[IntegrityFlag],
        parsed: dict[str, ModuleRegions],
    ) -> tuple[ChangedFile, list[ChangedRegion], str | None]:
        kind = _KINDS.get(entry.status, FileKind.MODIFIED)
        role = file_role(entry.path, layout)
        if entry.old_path and role is not FileRole.TEST:
            old_role = file_role(entry.old_path, layout)
            role = old_role if old_role is not FileRole.SOURCE else role
        collects = role is FileRole.TEST and layout.is_test_file(entry.path)
        new_data = old_data = None
        cached: ModuleRegions | None = None
        try:
            if kind is not FileKind.DELETED:
                new_data = (root / entry.path).read_bytes()
            if kind is not FileKind.ADDED:
                old_data, cached = self._old_side(root, base, entry)
        except (OSError, RepositoryError) as exc:
            changed = ChangedFile(entry.path, kind, role, entry.old_path, collects=collects)
            return changed, [], f"cannot read {entry.path}: {exc}"
        binary = any(d is not None and is_binary(d) for d in (old_data, new_data))
        changed = ChangedFile(
            entry.path, kind, role, entry.old_path, binary=binary, collects=collects
        )
        if entry.status not in "AMDRT":
            return changed, [], f"{entry.path}: unknown change kind {entry.status!r}"
        if role is FileRole.TEST and entry.path.endswith(".py") and cached is None:
            flags += integrity_flags(entry.path, old_data, new_data)
        if role not in _CODE_ROLES or not entry.path.endswith(".py"):
            return changed, [], None
        try:
            old = cached
            if old is None and old_data is not None:
                old = parse_regions(entry.old_path or entry.path, old_data)
                self._remember(entry, old)
            new = parse_regions(entry.path, new_data) if new_data is not None else None
        except ValueError as exc:
            return changed, [], str(exc)
        if new is not None:
            parsed[entry.path] = new
        module = module_name(root, entry.path)
        resolver = BaseResolver(root, self._parsed_files)
        pure, through = _wrapping(resolver, module, old, new)
        found = _with_classes(
            compare_modules(old, new, module, pure, through), module, resolver, new, old
        )
        if collects or (entry.old_path and layout.is_test_file(entry.old_path)):
            found = _with_test_ids(found, layout, old, new)
        return changed, found, None


def _wrapping(
    resolver: BaseResolver, module: str | None, *sides: ModuleRegions | None
) -> tuple[frozenset[str], frozenset[str]]:
    """Decorators that only wrap, on every side of the file that applies them; and those of
    them that return only through a call of the wrapped function."""
    pure: set[str] = set()
    impure: set[str] = set()
    trees = []
    for side in sides:
        tree = side.regions[node_id(side.path, MODULE_SCOPE)].node if side else None
        if isinstance(tree, ast.Module):
            trees.append(tree)
            wrapping, applied = wrapping_decorators(resolver, tree, module)
            pure |= wrapping
            impure |= applied - wrapping
    wraps = frozenset(pure - impure)
    through = [through_decorators(resolver, tree, module, wraps) for tree in trees]
    return wraps, frozenset.intersection(*through) if through else frozenset()


def _with_classes(
    found: list[ChangedRegion],
    module: str | None,
    resolver: BaseResolver,
    *sides: ModuleRegions | None,
) -> list[ChangedRegion]:
    """Each class body or method with its class, and whether that class has a base outside
    the repository."""
    out = []
    for r in found:
        side = next((s for s in sides if s is not None and r.id in s.regions), None)
        region = side.regions[r.id] if side is not None else None
        owner = (
            region
            if region is not None and region.kind is RegionKind.CLASS_BODY
            else (side.regions.get(region.parent or "") if side is not None and region else None)
        )
        if side is None or owner is None or owner.kind is not RegionKind.CLASS_BODY:
            out.append(r)
            continue
        qual = owner.qualname.removesuffix(f".{CLASS_BODY}")
        tree = side.regions[node_id(side.path, MODULE_SCOPE)].node
        is_open = not isinstance(tree, ast.Module) or resolver.is_open(tree, module, qual)
        dotted = f"{module}.{qual}" if module else qual
        out.append(attrs.evolve(r, owner_class=dotted, open_class=is_open))
    return out


def _with_test_ids(
    found: list[ChangedRegion], layout: PytestLayout, *sides: ModuleRegions | None
) -> list[ChangedRegion]:
    ids: dict[str, str] = {}
    for side in sides:
        if side is not None and layout.is_test_file(side.path):
            ids.update(collected_test_ids(side.path, side, layout))
    return [attrs.evolve(r, test_id=ids[r.id]) if r.id in ids else r for r in found]
