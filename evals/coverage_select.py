"""The plain per-test line-coverage selector: the baseline Guard's precision is measured against.

What a few hundred lines of "pytest-cov contexts + an ``ast`` import graph" select, built on the
clean tree once per target and then judging each edit from its diff alone:

- a removed or changed line of a ``.py`` file selects the tests that executed it in the base
  version; a line no test executed (a ``def`` line, a docstring, a decorator: they run at import
  time) selects the tests that executed any line of its innermost enclosing function;
- added lines select the tests of the base function they are inserted into, or, between
  functions, of the lines right before and after them;
- a change at module or class level that no test executed (a module constant, a class
  attribute), and a changed file where nothing the change touches was covered, select every test
  whose module imports that file, transitively by the ``ast`` import graph (a ``conftest.py`` in
  the closure brings the tests under its folder); a deleted file the same;
- a non-Python file inside a package selects the tests importing that package; elsewhere it is
  unknown, and unknown selects every test.

No confidence, no widening, no dynamic-dispatch rules: deliberately the simple peer.
"""

from __future__ import annotations

import ast
import json
import shutil
import time
from collections import deque
from collections.abc import Iterable, Iterator
from pathlib import Path, PurePosixPath

import attrs

from evals.edits import Edit
from evals.pytest_run import function_id, run_pytest
from evals.strategies import Selection, Universe
from evals.targets import Prepared, git

Lines = dict[int, frozenset[str]]  # line -> test function ids that executed it


@attrs.frozen
class FileChange:
    """One file of a unified diff, in the base version's line numbers."""

    old: str | None  # None: a new file
    new: str | None  # None: a deleted file
    removed: frozenset[int]  # base lines removed or replaced
    inserted: frozenset[int]  # added lines go before these base lines

    @property
    def path(self) -> str:
        return self.old or self.new or ""


def parse_diff(diff: str) -> list[FileChange]:
    changes: list[FileChange] = []
    old: str | None = None
    new: str | None = None
    removed: set[int] = set()
    inserted: set[int] = set()
    line = 0

    def flush() -> None:
        if old is not None or new is not None:
            changes.append(FileChange(old, new, frozenset(removed), frozenset(inserted)))

    for text in diff.splitlines():
        if text.startswith("diff --git "):
            flush()
            old = new = None
            removed, inserted = set(), set()
        elif text.startswith("--- "):
            old = None if text[4:] == "/dev/null" else text[4:].removeprefix("a/")
        elif text.startswith("+++ "):
            new = None if text[4:] == "/dev/null" else text[4:].removeprefix("b/")
        elif text.startswith("@@ "):
            start, _, count = text.split()[1].removeprefix("-").partition(",")
            # "-a,0" is an empty range after line a: its insertions go before line a + 1
            line = int(start) + (count == "0")
        elif text.startswith("-"):
            removed.add(line)
            line += 1
        elif text.startswith("+"):
            inserted.add(line)
        elif text.startswith(" "):
            line += 1
    flush()
    return changes


def module_names(files: Iterable[str]) -> dict[str, str]:
    """File -> dotted module name: packages climb while ``__init__.py`` exists; a module outside
    any package is named by its stem (pytest's rootdir-relative import of test modules)."""
    all_files = set(files)
    names = {}
    for path in all_files:
        if not path.endswith(".py"):
            continue
        p = PurePosixPath(path)
        parts = [] if p.name == "__init__.py" else [p.stem]
        folder = p.parent
        while str(folder / "__init__.py") in all_files:
            parts.insert(0, folder.name)
            folder = folder.parent
        names[path] = ".".join(parts)
    return names


class ImportGraph:
    """Which files each file imports, read with ``ast`` (imports inside functions included)."""

    def __init__(self, trees: dict[str, ast.Module]) -> None:
        self.names = module_names(trees)
        self.files: dict[str, set[str]] = {}
        for path, name in self.names.items():
            self.files.setdefault(name, set()).add(path)
        self.importers: dict[str, set[str]] = {}
        for path, tree in trees.items():
            for module in self._imported(path, tree):
                for target in self.files.get(module, ()):
                    self.importers.setdefault(target, set()).add(path)
            parts = self.names[path].split(".")  # a module in a package runs its __init__s
            for i in range(1, len(parts)):
                for target in self.files.get(".".join(parts[:i]), ()):
                    if target.endswith("__init__.py") and target != path:
                        self.importers.setdefault(target, set()).add(path)

    def _imported(self, path: str, tree: ast.Module) -> Iterator[str]:
        package = self.names[path] if path.endswith("__init__.py") else (
            self.names[path].rpartition(".")[0]
        )  # fmt: skip
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                bases = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    anchor = package.split(".") if package else []
                    anchor = anchor[: len(anchor) - node.level + 1]
                    base = ".".join([*anchor, *([node.module] if node.module else [])])
                else:
                    base = node.module or ""
                bases = [base] + [f"{base}.{a.name}" if base else a.name for a in node.names]
            else:
                continue
            for name in bases:  # importing a.b.c runs a/__init__, a/b/__init__ and a/b/c
                parts = name.split(".")
                yield from (".".join(parts[:i]) for i in range(1, len(parts) + 1))

    def closure(self, path: str) -> set[str]:
        """``path`` and every file that imports it, transitively."""
        seen, todo = {path}, deque([path])
        while todo:
            for importer in self.importers.get(todo.popleft(), ()):
                if importer not in seen:
                    seen.add(importer)
                    todo.append(importer)
        return seen


def _spans(tree: ast.Module) -> list[tuple[int, int]]:
    """Every function's lines, decorators included, innermost last among those containing a line."""
    spans = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            spans.append((start, node.end_lineno or node.lineno))
    return sorted(spans, key=lambda s: (s[0], -s[1]))


class CoverageSelector:
    def __init__(
        self,
        repo_files: Iterable[str],
        trees: dict[str, ast.Module],
        lines: dict[str, Lines],
        universe: Universe,
    ) -> None:
        self.repo_files = set(repo_files)
        self.trees, self.lines, self.universe = trees, lines, universe
        self.spans = {path: _spans(tree) for path, tree in trees.items()}
        self.graph = ImportGraph(trees)

    @classmethod
    def build(cls, prepared: Prepared, universe: Universe, work: Path) -> CoverageSelector:
        """Run the clean suite once under coverage.py with a context per test."""
        folder = work / f"{prepared.target.name}.contexts"
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        run_pytest(
            prepared.python,
            prepared.repo,
            None,
            ("-p", "contexts_plugin", *prepared.target.pytest_args),
            env={"EVALS_CONTEXTS": str(folder)},
        )
        lines: dict[str, dict[int, set[str]]] = {}
        root = prepared.repo.resolve()
        for dump in sorted(folder.glob("*.json")):
            for path, by_line in json.loads(dump.read_text()).items():
                try:
                    rel = Path(path).resolve().relative_to(root).as_posix()
                except ValueError:
                    continue
                for line, contexts in by_line.items():
                    tests = {function_id(c) for c in contexts if c} & universe.all
                    lines.setdefault(rel, {}).setdefault(int(line), set()).update(tests)
        files = [f for f in git(prepared.repo, "ls-files").split("\n") if f]
        trees = {}
        for f in files:
            if f.endswith(".py"):
                try:
                    trees[f] = ast.parse((prepared.repo / f).read_bytes())
                except SyntaxError:
                    continue
        frozen = {p: {n: frozenset(t) for n, t in ls.items()} for p, ls in lines.items()}
        return cls(files, trees, frozen, universe)

    def importing(self, path: str) -> frozenset[str]:
        """Tests whose module imports ``path`` (transitively) or sit under a conftest that does."""
        closure = self.graph.closure(path)
        folders = [str(PurePosixPath(f).parent) for f in closure if f.endswith("conftest.py")]
        return frozenset(
            t
            for t in self.universe.all
            if t.split("::", 1)[0] in closure
            or any(f == "." or t.startswith(f"{f}/") for f in folders)
        )

    def _hits(self, path: str, lines: Iterable[int]) -> set[str]:
        by_line = self.lines.get(path, {})
        return {t for n in lines for t in by_line.get(n, ())}

    def _function(self, path: str, inside: Iterable[int]) -> tuple[int, int] | None:
        """The innermost function of the base version spanning every line of ``inside``."""
        wanted = list(inside)
        found = None
        for start, end in self.spans.get(path, ()):
            if all(start <= n <= end for n in wanted):
                found = (start, end)  # sorted by start: later spans are nested deeper
        return found

    def _python(self, change: FileChange) -> frozenset[str]:
        path = change.path
        if change.old is None:  # a new module is read only by changed code (or a new conftest)
            if PurePosixPath(path).name == "conftest.py":
                folder = str(PurePosixPath(path).parent)
                return frozenset(
                    t for t in self.universe.all if folder == "." or t.startswith(f"{folder}/")
                )
            return frozenset()
        if change.new is None or path not in self.trees:
            return self.importing(path)
        tests: set[str] = set()
        module_level = False
        points = [(True, [n]) for n in change.removed]  # a replacement's added lines go with it
        points += [(False, [n - 1, n]) for n in change.inserted if n - 1 not in change.removed]
        for removed, around in points:  # added lines sit between two base lines
            hit = self._hits(path, around) if removed else set()
            if not hit:
                span = self._function(path, around)
                if span is not None:
                    hit = self._hits(path, range(span[0], span[1] + 1))
                else:
                    hit = self._hits(path, around)
                    module_level = module_level or not hit
            tests |= hit
        if module_level or not tests:
            tests |= self.importing(path)
        return frozenset(tests)

    def _data(self, change: FileChange) -> frozenset[str] | None:
        """A data file: the tests importing the nearest package around it, else unknown."""
        for folder in PurePosixPath(change.path).parents:
            init = "__init__.py" if str(folder) == "." else f"{folder}/__init__.py"
            if init in self.repo_files:
                return self.importing(init)
        return None

    def select(self, edit: Edit) -> Selection:
        started = time.perf_counter()
        tests: set[str] = set()
        for change in parse_diff(edit.diff):
            picked = self._python(change) if change.path.endswith(".py") else self._data(change)
            if picked is None:
                return Selection(None, time.perf_counter() - started)
            tests |= picked
        return Selection(frozenset(tests), time.perf_counter() - started)
