"""A changed signature is read by code that introspects functions (``fn.__defaults__``), so
its readers are selected; an import-time read of the same attribute through a standard-library
module (``getattr(tokenize.open, "__wrapped__")`` in a package's ``__init__``) reads no
repository function, and does not select every importer of the package."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from guard_core.api import Guard
from tests.e2e.conftest import edit, ingested_project

FILES = {
    "pyproject.toml": '[tool.pytest.ini_options]\ntestpaths = ["tests"]\n',
    "pkg/__init__.py": (
        "import tokenize\n\n"
        "if getattr(tokenize.open, '__wrapped__', None) is None:\n"
        "    OPEN = tokenize.open\n"
    ),
    "pkg/m.py": "def scale(x, factor=2):\n    return x * factor\n\n\ndef other():\n    return 1\n",
    "pkg/intro.py": "def default_of(fn):\n    return fn.__defaults__[0]\n",
    "tests/__init__.py": "",
    "tests/test_scale.py": (
        "from pkg.intro import default_of\nfrom pkg.m import scale\n\n\n"
        "def test_scale():\n    assert scale(1) == 2\n\n\n"
        "def test_default():\n    assert default_of(scale) == 2\n"
    ),
    "tests/test_other.py": (
        "from pkg.m import other\n\n\ndef test_other():\n    assert other() == 1\n"
    ),
}
CHANGED = {"tests/test_scale.py::test_scale", "tests/test_scale.py::test_default"}


@pytest.fixture(scope="module")
def guard(tmp_path_factory: pytest.TempPathFactory, falkordb_url: str) -> Iterator[Guard]:
    with ingested_project(tmp_path_factory.mktemp("stdlib"), FILES, falkordb_url, "std") as g:
        yield g


def test_a_changed_default_selects_its_introspecting_reader_not_every_importer(
    guard: Guard, tree: Path
) -> None:
    edit(tree, "pkg/m.py", "factor=2", "factor=3")
    d = guard.check()
    assert set(d.tests) >= CHANGED
    assert "tests/test_other.py::test_other" not in d.tests
    assert set(guard.run(stream=False).failed) >= CHANGED
