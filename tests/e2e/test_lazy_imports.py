"""Code that runs while a module is imported: a module first imported during a test serves
that test and every later one (a registry it fills is there for them); the tests that ran
before it worked without it. A module imported at collection or start-up serves everyone."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from guard_core.api import Guard
from tests.e2e.conftest import edit, ingested_project

FILES = {
    "pyproject.toml": '[tool.pytest.ini_options]\ntestpaths = ["tests"]\n',
    "pkg/__init__.py": "",
    "pkg/core.py": "REGISTRY = {}\n\n\ndef value():\n    return 1\n",
    "pkg/plugin.py": (
        "from pkg.core import REGISTRY\n\n\n"
        "def build():\n    return 'plugin'\n\n\n"
        "REGISTRY['plugin'] = build()\nLIMIT = 10\n"
    ),
    "pkg/eager.py": (
        "from pkg.core import REGISTRY\n\n\n"
        "def setup():\n    return 'eager'\n\n\n"
        "REGISTRY['eager'] = setup()\n"
    ),
    "tests/__init__.py": "",
    "tests/test_a.py": (
        "def test_early():\n    from pkg.core import value\n\n    assert value() == 1\n"
    ),
    "tests/test_b.py": (
        "import pkg.eager  # imported while pytest collects: before any test\n\n\n"
        "def test_lazy():\n    import pkg.plugin\n\n    assert pkg.plugin.LIMIT == 10\n"
    ),
    "tests/test_c.py": (
        "def test_later_reads_the_registry():\n    from pkg.core import REGISTRY\n\n"
        "    assert REGISTRY['plugin'] == 'plugin'\n    assert REGISTRY['eager'] == 'eager'\n"
    ),
}
EARLY = "tests/test_a.py::test_early"
LAZY = "tests/test_b.py::test_lazy"
LATER = "tests/test_c.py::test_later_reads_the_registry"


@pytest.fixture(scope="module")
def guard(tmp_path_factory: pytest.TempPathFactory, falkordb_url: str) -> Iterator[Guard]:
    with ingested_project(tmp_path_factory.mktemp("lazy"), FILES, falkordb_url, "lazy") as g:
        yield g


def test_code_a_test_first_imported_selects_it_and_the_tests_after_it(
    guard: Guard, tree: Path
) -> None:
    edit(tree, "pkg/plugin.py", "return 'plugin'", "return 'other'")
    d = guard.check()
    assert {LAZY, LATER} <= set(d.tests)
    assert EARLY not in d.tests  # it ran before the plugin was imported, and without it
    assert list(guard.run(stream=False).failed) == [LATER]


def test_a_constant_of_a_lazily_imported_module_selects_its_readers(
    guard: Guard, tree: Path
) -> None:
    edit(tree, "pkg/plugin.py", "LIMIT = 10", "LIMIT = 11")
    d = guard.check()
    assert LAZY in d.tests
    assert EARLY not in d.tests


def test_code_run_by_an_import_at_collection_selects_every_test(
    guard: Guard, tree: Path
) -> None:
    edit(tree, "pkg/eager.py", "return 'eager'", "return 'other'")
    assert {EARLY, LAZY, LATER} <= set(guard.check().tests)
