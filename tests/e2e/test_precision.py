"""Precision rules on a real project (git, pytest with doctests, coverage, FalkorDB): each rule
selects the tests the edit can break, and leaves the others out."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from guard_adapters.coverage.ingest import ingest_coverage
from guard_core.api import Guard
from guard_core.model import Level
from tests.conftest import make_repo

FILES = {
    "pyproject.toml": (
        '[tool.pytest.ini_options]\ntestpaths = ["tests", "pkg"]\n'
        'addopts = "--doctest-modules"\n'
    ),
    "pkg/__init__.py": "from pkg.shapes import AREA_UNIT, Square, area\n",
    "pkg/shapes.py": (
        'AREA_UNIT = "cm2"\nSCALE = 2\n\n\n'
        "def area(side):\n"
        '    """The area of a square.\n\n    >>> area(3)\n    9\n    """\n'
        "    return side * side\n\n\n"
        "def label(side):\n    return f'{area(side)} {AREA_UNIT}'\n\n\n"
        "def scaled(side):\n    return side * SCALE\n\n\n"
        "class Square:\n    sides = 4\n\n"
        "    def __init__(self, side):\n        self.side = side\n\n"
        "    def perimeter(self):\n        return self.sides * self.side\n"
    ),
    "pkg/docs.py": (
        "import inspect\n\nfrom pkg.shapes import scaled\n\n\n"
        "def help_of(fn):\n    return inspect.getdoc(fn) or ''\n"
    ),
    "tests/__init__.py": "",
    "tests/conftest.py": (
        "import pytest\n\nimport pkg\n\n\n"
        "@pytest.fixture(autouse=True)\n"
        "def namespace(doctest_namespace):\n    doctest_namespace['pkg'] = pkg\n"
    ),
    "tests/test_shapes.py": (
        "from pkg.shapes import Square, area, label, scaled\n\n\n"
        "def test_area():\n    assert area(2) == 4\n\n\n"
        "def test_label():\n    assert label(2) == '4 cm2'\n\n\n"
        "def test_scaled():\n    assert scaled(2) == 4\n\n\n"
        "def test_perimeter():\n    assert Square(1).perimeter() == 4\n"
    ),
    "tests/test_docs.py": (
        "from pkg.docs import help_of\nfrom pkg.shapes import area\n\n\n"
        "def test_help():\n    assert help_of(area).startswith('The area')\n"
    ),
}
AREA, LABEL = "tests/test_shapes.py::test_area", "tests/test_shapes.py::test_label"
SCALED, PERIM = "tests/test_shapes.py::test_scaled", "tests/test_shapes.py::test_perimeter"
HELP = "tests/test_docs.py::test_help"
DOCTEST = "pkg/shapes.py::pkg.shapes.area"


@pytest.fixture(scope="module")
def guard(tmp_path_factory: pytest.TempPathFactory, falkordb_url: str) -> Iterator[Guard]:
    repo = make_repo(tmp_path_factory.mktemp("precision") / "proj", FILES)
    env = {"GUARD_FALKORDB_URL": falkordb_url, "GUARD_GRAPH": f"test:precision-{os.getpid()}"}
    with Guard.open(repo, env=env) as g:
        g.store.clear()
        g.store.ensure_schema()
        ingest_coverage(repo, g.store)
        assert DOCTEST in g.store.all_tests()
        yield g
        g.store.clear()


@pytest.fixture
def tree(guard: Guard) -> Iterator[Path]:
    repo = guard.settings.repo
    yield repo
    subprocess.run(["git", "-C", str(repo), "checkout", "-q", "--", "."], check=True)
    subprocess.run(["git", "-C", str(repo), "clean", "-qfd"], check=True)


def edit(repo: Path, path: str, old: str, new: str) -> None:
    file = repo / path
    text = file.read_text()
    assert old in text, old
    file.write_text(text.replace(old, new, 1))


def test_a_fixture_holding_the_package_does_not_read_every_name(
    guard: Guard, tree: Path
) -> None:
    edit(tree, "pkg/shapes.py", "SCALE = 2", "SCALE = 3")
    d = guard.check()
    assert d.level is not Level.RUN_ALL
    assert SCALED in d.tests
    assert not {AREA, LABEL, PERIM, HELP} & set(d.tests)
    assert guard.run(stream=False).failed == [SCALED]


def test_a_doctest_that_reads_a_name_through_its_namespace_is_selected(
    guard: Guard, tree: Path
) -> None:
    edit(tree, "pkg/shapes.py", "    >>> area(3)\n    9\n",
         "    >>> area(3)\n    9\n    >>> pkg.AREA_UNIT\n    'cm2'\n")  # fmt: skip
    subprocess.run(["git", "-C", str(tree), "commit", "-qam", "doctest reads the namespace"],
                   check=True)  # fmt: skip
    try:
        edit(tree, "pkg/shapes.py", 'AREA_UNIT = "cm2"', 'AREA_UNIT = "m2"')
        d = guard.check(base="HEAD")
        assert DOCTEST in d.tests and LABEL in d.tests
        assert not {AREA, SCALED, PERIM} & set(d.tests)
    finally:
        subprocess.run(["git", "-C", str(tree), "reset", "-q", "--hard", "HEAD~1"], check=True)
