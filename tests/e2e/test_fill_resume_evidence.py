"""On Python >= 3.12 a line event fires once per context and stays off when a functools fill
returns (re-arming every event at each of tens of thousands of fills cost half the
collector's time). A line the fill ran first and its caller then ran again is in the fill's
lines only, so what the caller stores in a dict must still be charged to the fill's lines:
a test that only reads that entry depends on them."""

from __future__ import annotations

from pathlib import Path

from guard_core.api import Guard
from tests.e2e.conftest import edit, guard_by_each_collector

FILES = {
    "pyproject.toml": '[tool.pytest.ini_options]\ntestpaths = ["tests"]\n',
    "pkg/__init__.py": "",
    "pkg/table.py": (
        "import functools\n\n"
        "_TABLE = {}\n\n\n"
        "def helper(x):\n    return x * 2\n\n\n"
        "class Box:\n"
        "    @functools.cached_property\n"
        "    def doubled(self):\n        return helper(3)\n\n\n"
        "def register(name):\n"
        "    assert Box().doubled == 6  # helper runs first in the fill\n"
        "    _TABLE[name] = helper(5)  # then here, in the test's own context\n\n\n"
        "def lookup(name):\n    return _TABLE[name]\n"
    ),
    "pkg/other.py": "def value():\n    return 1\n",
    "tests/__init__.py": "",
    "tests/test_a_register.py": (
        "from pkg.table import lookup, register\n\n\n"
        "def test_register():\n    register('a')\n    assert lookup('a') == 10\n"
    ),
    "tests/test_b_lookup.py": (
        "from pkg.other import value\nfrom pkg.table import lookup\n\n\n"
        "def test_lookup():\n    assert lookup('a') == 10\n\n\n"
        "def test_unrelated():\n    assert value() == 1\n"
    ),
}
BOTH = {"tests/test_a_register.py::test_register", "tests/test_b_lookup.py::test_lookup"}


guard = guard_by_each_collector("resume")


def test_a_line_run_in_a_fill_and_then_by_the_writer_selects_the_reader(
    guard: Guard, tree: Path
) -> None:
    edit(tree, "pkg/table.py", "return x * 2", "return x * 3")
    d = guard.check()
    assert set(d.tests) >= BOTH
    assert "tests/test_b_lookup.py::test_unrelated" not in d.tests
    assert set(guard.run(stream=False).failed) == BOTH
