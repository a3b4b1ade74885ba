"""Module-level ``if``/``try`` blocks (a version check, an ``ImportError`` fallback) bind what
their branches bind: a change to a name they read at import time follows those names to
their readers, not to every importer; a condition that calls something runs code, which the
import probe replays."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from guard_core.api import Guard
from tests.e2e.conftest import edit, ingested_project, without_import_probe

FILES = {
    "pyproject.toml": '[tool.pytest.ini_options]\ntestpaths = ["tests"]\n',
    "pkg/__init__.py": "",
    "pkg/compat.py": (
        "import sys\n\n\n"
        "def _scale(x, n=1):\n    return x * n\n\n\n"
        "def _probe():\n    return False\n\n\n"
        "if sys.version_info >= (3, 99):\n"
        "    def scale(x, n=1):\n        return x\nelse:\n    scale = _scale\n"
        "    scale.__doc__ = _scale.__doc__\n\n"
        "try:\n    from json import loads\nexcept ImportError:\n    loads = None\n\n"
        "if _probe():\n    MODE = 'probe'\nelse:\n    MODE = 'plain'\n\n\n"
        "def other():\n    return 'other'\n"
    ),
    "tests/__init__.py": "",
    "tests/test_compat.py": (
        "from pkg import compat\n\n\n"
        "def test_scale():\n    assert compat.scale(2) == 2\n\n\n"
        "def test_other():\n    assert compat.other() == 'other'\n"
    ),
}
SCALE, OTHER = "tests/test_compat.py::test_scale", "tests/test_compat.py::test_other"


@pytest.fixture(scope="module")
def guard(tmp_path_factory: pytest.TempPathFactory, falkordb_url: str) -> Iterator[Guard]:
    with ingested_project(tmp_path_factory.mktemp("branch"), FILES, falkordb_url, "if") as g:
        yield g


def test_a_default_a_version_branch_rebinds_selects_the_readers_of_the_rebound_name(
    guard: Guard, tree: Path
) -> None:
    edit(tree, "pkg/compat.py", "def _scale(x, n=1):", "def _scale(x, n=2):")
    d = guard.check()
    assert SCALE in d.tests
    assert OTHER not in d.tests
    assert list(guard.run(stream=False).failed) == [SCALE]


def test_a_function_a_branch_condition_calls_selects_what_importing_shows(
    guard: Guard, tree: Path
) -> None:
    """The condition runs code: without the import probe every importer runs; with it, the
    module imported before and after binds the same, so nothing is selected."""
    edit(tree, "pkg/compat.py", "def _probe():", "def _probe(strict=False):")
    assert guard.check().tests == ()
    with without_import_probe(guard) as plain:
        assert {SCALE, OTHER} <= set(plain.check().tests)
