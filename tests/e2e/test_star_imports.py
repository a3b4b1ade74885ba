"""Star imports: ``from m import *`` binds only names the module defines nowhere itself (a
builtin, an import, nothing), so a statement of a package's ``__init__`` reads the names it
names, not every name of ``m``; a name the module bound before the star import is re-exported
from ``m`` under the module's name, and an import before it may be shadowed by it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from guard_core.api import Guard
from tests.e2e.conftest import edit, ingested_project

FILES = {
    "pyproject.toml": '[tool.pytest.ini_options]\ntestpaths = ["tests"]\n',
    "pkg/__init__.py": (
        '"""A package that re-exports its modules."""\n'
        "from pkg.base import *\nfrom pkg.more import *\n\n"
        "REGISTRY = setup()\ntriple = extra\n"
    ),
    "pkg/base.py": (
        "__all__ = ['RATE', 'compute', 'setup']\n\nRATE = 2\n\n\n"
        "def compute(x):\n    return x * RATE\n\n\n"
        "def setup():\n    return {}\n"
    ),
    "pkg/more.py": "FACTOR = 3\n\n\ndef extra():\n    return 'extra'\n",
    "pkg/other.py": "def extra():\n    return 'other'\n",
    "pkg/shadow.py": (
        "from pkg.more import extra\nfrom pkg.other import *  # noqa: F403\n\n\n"
        "def call():\n    return extra()\n"
    ),
    "pkg/late.py": (
        "RATE = 1\nfrom pkg.base import *  # noqa: E402\n\n\ndef rate():\n    return RATE\n"
    ),
    "tests/__init__.py": "",
    "tests/test_pkg.py": (
        "import pkg\n\n\n"
        "def test_compute():\n    assert pkg.compute(2) == 4\n\n\n"
        "def test_factor():\n    from pkg.more import FACTOR\n\n    assert FACTOR == 3\n\n\n"
        "def test_registry():\n    assert pkg.REGISTRY == {}\n\n\n"
        "def test_triple():\n    assert pkg.triple() == 'extra'\n\n\n"
        "def test_late_rate():\n    from pkg.late import rate\n\n    assert rate() == 2\n\n\n"
        "def test_shadow():\n    from pkg.shadow import call\n\n    assert call() == 'other'\n"
    ),
}
T = "tests/test_pkg.py::"
EVERY = {f"{T}test_{n}" for n in ("compute", "factor", "registry", "triple", "late_rate", "shadow")}


@pytest.fixture(scope="module")
def guard(tmp_path_factory: pytest.TempPathFactory, falkordb_url: str) -> Iterator[Guard]:
    with ingested_project(tmp_path_factory.mktemp("stars"), FILES, falkordb_url, "stars") as g:
        yield g


def test_a_constant_no_import_time_statement_names_selects_its_readers_only(
    guard: Guard, tree: Path
) -> None:
    edit(tree, "pkg/more.py", "FACTOR = 3", "FACTOR = 4")
    d = guard.check()
    assert f"{T}test_factor" in d.tests
    assert f"{T}test_compute" not in d.tests  # the package's import-time call reads setup
    assert list(guard.run(stream=False).failed) == [f"{T}test_factor"]


def test_a_name_an_import_time_call_reads_through_a_star_selects_every_importer(
    guard: Guard, tree: Path
) -> None:
    edit(tree, "pkg/base.py", "def setup():\n    return {}\n",
         "def setup():\n    return {}\n\n\nsetup = dict.fromkeys\n")  # fmt: skip
    assert set(guard.check().tests) >= EVERY


def test_a_name_a_star_import_rebinds_after_the_module_bound_it_selects_its_readers(
    guard: Guard, tree: Path
) -> None:
    edit(tree, "pkg/base.py", "RATE = 2", "RATE = 3")
    d = guard.check()
    assert {f"{T}test_compute", f"{T}test_late_rate"} <= set(d.tests)
    assert f"{T}test_triple" not in d.tests
    assert set(guard.run(stream=False).failed) == {f"{T}test_compute", f"{T}test_late_rate"}


def test_an_import_a_later_star_import_shadows_reads_the_star_module(
    guard: Guard, tree: Path
) -> None:
    edit(
        tree, "pkg/other.py", "    return 'other'\n", "    return 'other'\n\n\nextra = str.upper\n"
    )
    assert f"{T}test_shadow" in guard.check().tests
    assert list(guard.run(stream=False).failed) == [f"{T}test_shadow"]
