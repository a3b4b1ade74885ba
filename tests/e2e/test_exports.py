"""A module's ``__all__`` and the star imports of it: a rename that keeps ``__all__`` in step
selects the code that names the old or new name, not every importer; a removal that leaves
``__all__`` naming what is gone breaks every ``from m import *``, and a removal breaks every
``from m import name``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from guard_core.api import Guard
from tests.e2e.conftest import edit, ingested_project

FILES = {
    "pyproject.toml": '[tool.pytest.ini_options]\ntestpaths = ["tests"]\n',
    "pkg/__init__.py": "from pkg.core import *\n",
    "pkg/core.py": (
        "__all__ = ['alpha', 'beta']\n\n\n"
        "def alpha():\n    return 'a'\n\n\n"
        "def beta():\n    return 'b'\n"
    ),
    "pkg/extra.py": "def gamma():\n    return 'g'\n",
    "pkg/named.py": "from pkg.core import beta\n\n\ndef twice():\n    return beta() * 2\n",
    "pkg/again.py": "from pkg import beta\n\n\ndef thrice():\n    return beta() * 3\n",
    "tests/__init__.py": "",
    "tests/test_pkg.py": (
        "import pkg\nfrom pkg.extra import gamma\n\n\n"
        "def test_alpha():\n    assert pkg.alpha() == 'a'\n\n\n"
        "def test_gamma():\n    assert gamma() == 'g'\n"
    ),
    "tests/test_z_named.py": (  # runs last: what it imports serves it alone
        "def test_twice():\n    from pkg.named import twice\n\n    assert twice() == 'bb'\n\n\n"
        "def test_thrice():\n    from pkg.again import thrice\n\n    assert thrice() == 'bbb'\n"
    ),
}
ALPHA, GAMMA = "tests/test_pkg.py::test_alpha", "tests/test_pkg.py::test_gamma"
TWICE = "tests/test_z_named.py::test_twice"
THRICE = "tests/test_z_named.py::test_thrice"


@pytest.fixture(scope="module")
def guard(tmp_path_factory: pytest.TempPathFactory, falkordb_url: str) -> Iterator[Guard]:
    with ingested_project(tmp_path_factory.mktemp("exports"), FILES, falkordb_url, "all") as g:
        yield g


def test_a_rename_kept_in_step_with_all_selects_its_users_only(guard: Guard, tree: Path) -> None:
    edit(tree, "pkg/core.py", "['alpha', 'beta']", "['alpha2', 'beta']")
    edit(tree, "pkg/core.py", "def alpha():", "def alpha2():")
    edit(tree, "tests/test_pkg.py", "pkg.alpha()", "pkg.alpha2()")
    d = guard.check()
    assert ALPHA in d.tests
    assert not {GAMMA, TWICE} & set(d.tests)
    assert guard.run(stream=False).exit_code == 0


def test_a_removal_that_all_still_names_breaks_every_star_import(guard: Guard, tree: Path) -> None:
    edit(tree, "pkg/core.py", "def alpha():\n    return 'a'\n", "")
    d = guard.check()
    assert {ALPHA, GAMMA, TWICE} <= set(d.tests)
    assert guard.run(stream=False).exit_code != 0  # tests/test_pkg.py no longer collects


def test_a_removal_breaks_the_modules_that_import_the_name(guard: Guard, tree: Path) -> None:
    edit(tree, "pkg/core.py", "['alpha', 'beta']", "['alpha']")
    edit(tree, "pkg/core.py", "def beta():\n    return 'b'\n", "")
    d = guard.check()
    assert {TWICE, THRICE} <= set(d.tests)  # pkg.named imports beta, pkg.again pkg's beta
    assert set(guard.run(stream=False).failed) == {TWICE, THRICE}


def test_a_name_all_no_longer_lists_is_gone_from_the_star_importers(
    guard: Guard, tree: Path
) -> None:
    edit(tree, "pkg/core.py", "['alpha', 'beta']", "['alpha']")
    d = guard.check()
    assert THRICE in d.tests  # `from pkg import beta`: pkg bound it through `import *`
    assert list(guard.run(stream=False).failed) == [THRICE]
