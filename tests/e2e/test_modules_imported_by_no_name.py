"""Helper modules a test imports in ways the index does not name: a folder put on
``sys.path`` and ``import plain``, ``__import__``, ``importlib.import_module`` by a literal or
a computed name. Their bodies run under the test, charged to every test like any import, and
the import probe replays them; the readers of what they built must still be found, whether
the edit is to the helper or to code its import ran. So must those of a module imported by
name elsewhere first and fetched again by a computed name (no loader sees that)."""

from __future__ import annotations

from pathlib import Path

import pytest

from guard_core.api import Guard
from tests.e2e.conftest import edit, guard_by_each_collector

HELPER = "from pkg.core import build\n\nVALUES = build({n})\n"
FILES = {
    "pkg/__init__.py": "",
    "pkg/core.py": "def build(n):\n    out = [n]\n    out.append(n * 2)\n    return out\n",
    "pkg/late.py": (
        "from pkg.core import build\n\nTABLE = build(7)\n\n\ndef size():\n    return 1\n"
    ),
    "pkg/cached.py": (
        "from pkg.core import build\n\nROWS = build(9)\n\n\ndef count():\n    return 2\n"
    ),
    "pkg/other.py": "def one():\n    return 1\n",
    "pkg/limits.py": "LIMIT = 3\n",
    "pkg/loader.py": (
        "def load(name):\n    return __import__(name, globals(), None, ['ROWS'], 1).ROWS\n"
    ),
    "tests/apps/reexport.py": "from pkg.limits import LIMIT  # noqa: F401\n",
    "tests/__init__.py": "",
    "tests/apps/on_path.py": HELPER.format(n=1),
    "tests/apps/by_call.py": HELPER.format(n=2),
    "tests/apps/by_literal.py": HELPER.format(n=3),
    "tests/apps/computed.py": HELPER.format(n=4),
    "tests/test_apps.py": (
        "import importlib\nimport sys\nfrom pathlib import Path\n\n"
        "APPS = str(Path(__file__).parent / 'apps')\n\n\n"
        "def test_on_path():\n    sys.path.insert(0, APPS)\n    import on_path\n\n"
        "    assert on_path.VALUES == [1, 2]\n\n\n"
        "def test_by_call():\n    sys.path.insert(0, APPS)\n"
        "    assert __import__('by_call').VALUES == [2, 4]\n\n\n"
        "def test_by_literal():\n"
        "    assert importlib.import_module('tests.apps.by_literal').VALUES == [3, 6]\n\n\n"
        "def test_computed():\n    name = 'tests.apps.' + 'computed'\n"
        "    assert importlib.import_module(name).VALUES == [4, 8]\n"
    ),
    # pkg.late and pkg.cached are imported by name at collection; tests fetch them again
    # from sys.modules, by a literal or a computed name
    "tests/test_late.py": (
        "from pkg.cached import count\nfrom pkg.late import size\n\n\n"
        "def test_size():\n    assert size() + count() == 3\n"
    ),
    "tests/test_fetched.py": (
        "import importlib\n\n\ndef test_fetched():\n"
        "    assert importlib.import_module('pkg.late').TABLE == [7, 14]\n\n\n"
        "def test_fetched_by_computed_name():\n"
        "    assert importlib.import_module('pkg.' + 'cached').ROWS == [9, 18]\n\n\n"
        "def test_imported_by_computed_name():\n"
        "    assert __import__('pkg.' + 'cached', fromlist=['x']).ROWS == [9, 18]\n\n\n"
        "def test_fetched_another_module():\n"
        "    assert importlib.import_module('pkg.' + 'other').one() == 1\n"
    ),
    "tests/test_reexport.py": (
        "import sys\nfrom pathlib import Path\n\n\n"
        "def test_reexport():\n    sys.path.insert(0, str(Path(__file__).parent / 'apps'))\n"
        "    from reexport import LIMIT\n\n    assert LIMIT == 3\n"
    ),
    "tests/test_loader.py": (
        "from pkg.loader import load\n\n\n"
        "def test_relative():\n    assert load('cached') == [9, 18]\n"
    ),
    "tests/test_other.py": (
        "from pkg.other import one\n\n\ndef test_one():\n    assert one() == 1\n"
    ),
}
ON_PATH = "tests/test_apps.py::test_on_path"
BY_CALL = "tests/test_apps.py::test_by_call"
BY_LITERAL = "tests/test_apps.py::test_by_literal"
COMPUTED = "tests/test_apps.py::test_computed"
FETCHED = {
    "tests/test_fetched.py::test_fetched",
    "tests/test_fetched.py::test_fetched_by_computed_name",
    "tests/test_fetched.py::test_imported_by_computed_name",
    "tests/test_loader.py::test_relative",  # __import__ with a level: any module
}
ANOTHER = "tests/test_fetched.py::test_fetched_another_module"
SIZE = "tests/test_late.py::test_size"
ONE = "tests/test_other.py::test_one"
HELPERS = {"on_path": ON_PATH, "by_call": BY_CALL, "by_literal": BY_LITERAL, "computed": COMPUTED}


guard = guard_by_each_collector("unnamed")


def test_an_edit_to_code_their_import_ran_selects_the_tests_that_read_what_it_built(
    guard: Guard, tree: Path
) -> None:
    edit(tree, "pkg/core.py", "    out.append(n * 2)\n", "")
    d = guard.check()
    assert {*HELPERS.values(), *FETCHED} <= set(d.tests), d.reasons
    assert not {SIZE, ONE, ANOTHER} & set(d.tests), d.reasons
    assert {*HELPERS.values(), *FETCHED} <= set(guard.run(stream=False).failed)


@pytest.mark.parametrize("helper", sorted(HELPERS))
def test_an_edit_to_the_helper_selects_the_test_that_imports_it(
    guard: Guard, tree: Path, helper: str
) -> None:
    n = list(HELPERS).index(helper) + 1
    edit(tree, f"tests/apps/{helper}.py", f"build({n})", f"build({n + 10})")
    d = guard.check()
    assert HELPERS[helper] in d.tests, d.reasons
    # __import__ by a computed name may import any module (unrecorded): not import_module
    fetched = FETCHED - {
        "tests/test_fetched.py::test_imported_by_computed_name",
        "tests/test_loader.py::test_relative",
    }
    assert not {SIZE, ONE, ANOTHER, *fetched} & set(d.tests), d.reasons
    assert HELPERS[helper] in guard.run(stream=False).failed


def test_a_name_the_helper_imports_is_read_under_its_shorter_name(guard: Guard, tree: Path) -> None:
    edit(tree, "pkg/limits.py", "LIMIT = 3", "LIMIT = 4")
    d = guard.check()
    assert "tests/test_reexport.py::test_reexport" in d.tests, d.reasons
    assert "tests/test_reexport.py::test_reexport" in guard.run(stream=False).failed
