"""Decorators named through their module (``@helpers.traced``): one that only wraps is seen
through as a bare ``@traced`` is, so a literal default changed under it selects the tests that
ran the function and the code that reads signatures (``inspect.signature``), not every
importer; what one that registers did is compared by importing the module before and after
(the import probe), so the registry's readers are selected when the registry changes."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from guard_core.api import Guard
from tests.e2e.conftest import edit, ingested_project

FILES = {
    "pkg/__init__.py": "",
    "pkg/helpers.py": (
        "import functools\n\nREGISTRY = []\n\n\n"
        "def traced(f):\n    @functools.wraps(f)\n    def wrapper(*a, **k):\n"
        "        return f(*a, **k)\n    return wrapper\n\n\n"
        "def register(f):\n    REGISTRY.append(f.__name__)\n    return f\n"
    ),
    "pkg/ops.py": (
        "from pkg import helpers\n\n\n"
        "@helpers.traced\ndef scale(x, factor=2):\n    return x * factor\n\n\n"
        "@helpers.register\ndef shout(word='hi'):\n    return word.upper()\n\n\n"
        "def unrelated():\n    return 1\n"
    ),
    "pkg/options.py": (
        "import inspect\n\n\ndef defaults(fn):\n"
        "    return {p.name: p.default for p in inspect.signature(fn).parameters.values()\n"
        "            if p.default is not p.empty}\n"
    ),
    "tests/test_options.py": (
        "from pkg.ops import scale\nfrom pkg.options import defaults\n\n\n"
        "def test_defaults():\n    assert defaults(scale) == {'factor': 2}\n"
    ),
    "tests/__init__.py": "",
    "tests/test_ops.py": (
        "from pkg.ops import scale, shout\n\n\n"
        "def test_scale():\n    assert scale(3) == 6\n\n\n"
        "def test_shout():\n    assert shout() == 'HI'\n"
    ),
    "tests/test_registry.py": (
        "import pkg.ops\nfrom pkg import helpers\n\n\n"
        "def test_registered():\n    assert helpers.REGISTRY == ['shout']\n"
    ),
    "tests/test_other.py": (
        "from pkg.ops import unrelated\n\n\ndef test_unrelated():\n    assert unrelated() == 1\n"
    ),
}
SCALE, SHOUT = "tests/test_ops.py::test_scale", "tests/test_ops.py::test_shout"
REGISTERED = "tests/test_registry.py::test_registered"
UNRELATED = "tests/test_other.py::test_unrelated"
DEFAULTS = "tests/test_options.py::test_defaults"


@pytest.fixture(scope="module")
def guard(tmp_path_factory: pytest.TempPathFactory, falkordb_url: str) -> Iterator[Guard]:
    with ingested_project(tmp_path_factory.mktemp("decorators"), FILES, falkordb_url,
                          "decorators") as g:  # fmt: skip
        yield g


def test_a_default_changed_under_a_wrapping_module_decorator_selects_its_tests(
    guard: Guard, tree: Path
) -> None:
    edit(tree, "pkg/ops.py", "factor=2", "factor=3")
    d = guard.check()
    assert SCALE in d.tests
    assert DEFAULTS in d.tests  # reads the signature through inspect, never runs the body
    assert not {UNRELATED, REGISTERED} & set(d.tests)  # importers of pkg.ops
    assert sorted(guard.run(stream=False).failed) == [SCALE, DEFAULTS]


def test_a_default_changed_under_a_registering_module_decorator_selects_its_readers(
    guard: Guard, tree: Path
) -> None:
    """What the decorator registered is compared by importing before and after (the import
    probe): the registry is unchanged, so its readers are not selected, nor the importers."""
    edit(tree, "pkg/ops.py", "word='hi'", "word='yo'")
    d = guard.check()
    assert SHOUT in d.tests
    assert not {REGISTERED, UNRELATED} & set(d.tests), d.reasons
    assert guard.run(stream=False).failed == [SHOUT]


def test_a_registering_decorator_removed_selects_the_registry_readers(
    guard: Guard, tree: Path
) -> None:
    edit(tree, "pkg/ops.py", "@helpers.register\n", "")
    d = guard.check()
    assert REGISTERED in d.tests, d.reasons
    assert UNRELATED not in d.tests
    assert guard.run(stream=False).failed == [REGISTERED]
