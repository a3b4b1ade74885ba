"""The plain coverage selector's rules on a made-up project: pure, no pytest run."""

from __future__ import annotations

import ast

from evals.coverage_select import CoverageSelector, ImportGraph, parse_diff
from evals.edits import Edit
from evals.strategies import Universe

PKG = '''\
LIMIT = 3


def used(x):
    """Doc."""
    if x > LIMIT:
        return 1
    return 0


def unused():
    return 2
'''
FILES = {
    "src/pkg/__init__.py": "from .core import used\n",
    "src/pkg/core.py": PKG,
    "src/pkg/data.txt": "",
    "tests/conftest.py": "",
    "tests/test_core.py": "from pkg.core import used\n\ndef test_a():\n    assert used(5)\n",
    "tests/test_other.py": "def test_b():\n    assert True\n",
    "README.md": "",
}
TESTS = ["tests/test_core.py::test_a", "tests/test_other.py::test_b"]
A = frozenset({TESTS[0]})


def selector() -> CoverageSelector:
    trees = {p: ast.parse(t) for p, t in FILES.items() if p.endswith(".py")}
    lines = {"src/pkg/core.py": {6: A, 7: A}, "tests/test_core.py": {4: A}}
    return CoverageSelector(FILES, trees, lines, Universe(TESTS))


def diff(path: str, old: int, removed: list[str], added: list[str]) -> Edit:
    body = [f"-{t}" for t in removed] + [f"+{t}" for t in added]
    text = (
        f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n"
        f"@@ -{old},{len(removed)} +{old},{len(added)} @@\n" + "\n".join(body) + "\n"
    )
    return Edit("t-x-1", "t", "x", "dev", "", text, (path,))


def test_parse_diff_counts_base_lines() -> None:
    (change,) = parse_diff(diff("a.py", 5, ["x"], ["y", "z"]).diff)
    assert (change.removed, change.inserted) == ({5}, {6})
    (pure,) = parse_diff(diff("a.py", 4, [], ["y"]).diff)
    assert (pure.removed, pure.inserted) == (frozenset(), {5})  # "-4,0": after line 4


def test_import_graph_follows_packages_and_relative_imports() -> None:
    graph = ImportGraph({p: ast.parse(t) for p, t in FILES.items() if p.endswith(".py")})
    assert graph.names["src/pkg/core.py"] == "pkg.core"
    assert graph.names["tests/test_core.py"] == "test_core"
    assert graph.closure("src/pkg/core.py") == {
        "src/pkg/core.py", "src/pkg/__init__.py", "tests/test_core.py"
    }  # fmt: skip


def test_rules() -> None:
    s = selector()

    def picked(edit: Edit) -> frozenset[str] | None:
        return s.select(edit).tests

    assert picked(diff("src/pkg/core.py", 7, ["        return 1"], ["        return 2"])) == A
    # a docstring no test executes: the tests of its function
    assert picked(diff("src/pkg/core.py", 5, ['    """Doc."""'], ['    """Docs."""'])) == A
    # a module constant runs at import: every test whose module imports the file
    assert picked(diff("src/pkg/core.py", 1, ["LIMIT = 3"], ["LIMIT = 4"])) == A
    # a function nobody ran, in a file with no covered changed line: importers again
    assert picked(diff("src/pkg/core.py", 12, ["    return 2"], ["    return 3"])) == A
    assert picked(diff("tests/test_core.py", 4, ["    assert used(5)"], ["    assert 0"])) == A
    assert picked(diff("tests/conftest.py", 1, [], ["X = 1"])) == frozenset(TESTS)
    assert picked(diff("src/pkg/data.txt", 1, [], ["x"])) == A  # importers of its package
    assert picked(diff("README.md", 1, [], ["x"])) is None  # unknown: the whole suite
