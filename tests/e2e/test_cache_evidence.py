"""Evidence that caches hide: a test that reads a value an earlier test computed depends on
that computation. Each cache here is filled by one test and only read by the next; changing
the computation selects both, an unrelated change selects neither."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from guard_core.api import Guard
from tests.e2e.conftest import ingested_project

FILES = {
    "pyproject.toml": '[tool.pytest.ini_options]\ntestpaths = ["tests"]\n',
    "pkg/__init__.py": "",
    "pkg/compute.py": (
        "import functools\nfrom functools import cache, cached_property, lru_cache\n\n\n"
        "def double(x):\n    return x * 2\n\n\n"
        "def triple(x):\n    return x * 3\n\n\n"
        "def halve(x):\n    return x // 2\n\n\n"
        "@lru_cache(maxsize=None)\ndef cached_double(x):\n    return double(x)\n\n\n"
        "@cache\ndef cached_halve(x):\n    return halve(x)\n\n\n"
        "class Config:\n    @cached_property\n    def scale(self):\n        return triple(10)\n\n"
        "    @functools.lru_cache\n    def offset(self):\n        return halve(100)\n\n\n"
        "CONFIG = Config()\n\n\n"
        "def unrelated():\n    return 1\n"
    ),
    "pkg/registry.py": (
        "_SQUARES = {}\n\n\ndef square(x):\n    return x * x\n\n\n"
        "def cached_square(x):\n    if x not in _SQUARES:\n        _SQUARES[x] = square(x)\n"
        "    return _SQUARES[x]\n\n\n"
        "def make_handler(name):\n    return name.upper()\n\n\n"
        "class Registry:\n    _handlers = {}\n\n    @classmethod\n    def get(cls, name):\n"
        "        if name not in cls._handlers:\n"
        "            cls._handlers[name] = make_handler(name)\n"
        "        return cls._handlers[name]\n"
    ),
    "pkg/kinds.py": (
        "from functools import cached_property, lru_cache\n\n\n"
        "def alpha():\n    return 'a'\n\n\n"
        "def beta():\n    return 'b'\n\n\n"
        "@lru_cache(maxsize=None)\ndef compute(kind):\n"
        "    return alpha() if kind == 'a' else beta()\n\n\n"
        "class Named:\n    def __init__(self, kind):\n        self.kind = kind\n\n"
        "    @cached_property\n    def value(self):\n"
        "        return alpha() if self.kind == 'a' else beta()\n\n\n"
        "NAMED_A, NAMED_B = Named('a'), Named('b')\n"
    ),
    "tests/__init__.py": "",
    "tests/test_fill.py": (
        "from pkg.compute import CONFIG, cached_double, cached_halve, unrelated\n"
        "from pkg.registry import Registry, cached_square\n\n\n"
        "def test_fill_lru():\n    assert cached_double(2) == 4\n\n\n"
        "def test_fill_cache():\n    assert cached_halve(8) == 4\n\n\n"
        "def test_fill_property():\n    assert CONFIG.scale == 30\n\n\n"
        "def test_fill_method():\n    assert CONFIG.offset() == 50\n\n\n"
        "def test_unrelated():\n    assert unrelated() == 1\n\n\n"
        "def test_fill_dict():\n    assert cached_square(3) == 9\n\n\n"
        "def test_fill_registry():\n    assert Registry.get('a') == 'A'\n\n\n"
        "def test_fill_alpha():\n    from pkg.kinds import compute\n"
        "    assert compute('a') == 'a'\n\n\n"
        "def test_fill_beta():\n    from pkg.kinds import compute\n"
        "    assert compute('b') == 'b'\n\n\n"
        "def test_fill_named_alpha():\n    from pkg.kinds import NAMED_A\n"
        "    assert NAMED_A.value == 'a'\n\n\n"
        "def test_fill_named_beta():\n    from pkg.kinds import NAMED_B\n"
        "    assert NAMED_B.value == 'b'\n"
    ),
    "tests/test_read.py": (
        "from pkg.compute import CONFIG, cached_double, cached_halve\n"
        "from pkg.registry import Registry, cached_square\n\n\n"
        "def test_read_dict():\n    assert cached_square(3) == 9\n\n\n"
        "def test_read_alpha():\n    from pkg.kinds import compute\n"
        "    assert compute('a') == 'a'\n\n\n"
        "def test_read_named_alpha():\n    from pkg.kinds import NAMED_A\n"
        "    assert NAMED_A.value == 'a'\n\n\n"
        "def test_read_registry():\n    assert Registry.get('a') == 'A'\n\n\n"
        "def test_read_lru():\n    assert cached_double(2) == 4\n\n\n"
        "def test_read_cache():\n    assert cached_halve(8) == 4\n\n\n"
        "def test_read_property():\n    assert CONFIG.scale == 30\n\n\n"
        "def test_read_method():\n    assert CONFIG.offset() == 50\n\n\n"
        "def test_subclasses_and_slots_keep_their_behaviour():\n"
        "    import functools\n    import pytest\n\n"
        "    class twice(functools.cached_property):\n"
        "        def __init__(self, n):\n            self.n = n\n\n"
        "        def __call__(self, func):\n            super().__init__(func)\n"
        "            return self\n\n"
        "    class Slotted:\n        __slots__ = ()\n\n"
        "        @functools.cached_property\n        def x(self):\n            return 1\n\n"
        "    with pytest.raises(TypeError):\n        Slotted().x\n\n"
        "    class Box:\n        @twice(2)\n        def y(self):\n            return 3\n\n"
        "    assert Box().y == 3\n\n\n"
        "def test_cache_api_still_works():\n"
        "    cached_double(7)\n    cached_double(7)\n"
        "    assert cached_double.cache_info().hits >= 1\n"
        "    assert cached_double.__wrapped__(3) == 6\n"
        "    assert type(CONFIG).scale.attrname == 'scale'\n"
    ),
}
UNRELATED = "tests/test_fill.py::test_unrelated"


def pair(name: str) -> set[str]:
    return {f"tests/test_fill.py::test_fill_{name}", f"tests/test_read.py::test_read_{name}"}


@pytest.fixture(scope="module")
def guard(tmp_path_factory: pytest.TempPathFactory, falkordb_url: str) -> Iterator[Guard]:
    with ingested_project(tmp_path_factory.mktemp("caches"), FILES, falkordb_url, "cache") as g:
        yield g


def edit(repo: Path, old: str, new: str) -> None:
    file = next(repo / f"pkg/{name}.py" for name in ("registry", "kinds", "compute")
                if old in (repo / f"pkg/{name}.py").read_text())  # fmt: skip
    text = file.read_text()
    assert old in text, old
    file.write_text(text.replace(old, new, 1))


@pytest.mark.parametrize(
    ("old", "new", "selected"),
    [
        ("return x * 2", "return x * 5", pair("lru")),
        ("return x * 3", "return x * 5", pair("property")),
        ("return x // 2", "return x // 4", pair("cache") | pair("method")),
        ("return x * x", "return x * x + 1", pair("dict")),
        ("_SQUARES[x] = square(x)", "_SQUARES[x] = square(x) + 1", pair("dict")),
        ("return name.upper()", "return name.lower()", pair("registry")),
    ],
)
def test_changing_a_cached_computation_selects_the_tests_that_read_the_cache(
    guard: Guard, tree: Path, old: str, new: str, selected: set[str]
) -> None:
    edit(tree, old, new)
    d = guard.check()
    assert selected <= set(d.tests)
    assert UNRELATED not in d.tests
    assert selected <= set(guard.run(stream=False).failed)


def test_an_unrelated_change_selects_no_cache_reader(guard: Guard, tree: Path) -> None:
    edit(tree, "    return 1\n", "    return 2\n")
    d = guard.check()
    assert d.tests == (UNRELATED,)


def test_the_watched_caches_behave_like_the_real_ones(guard: Guard, tree: Path) -> None:
    test = tree / "tests/test_read.py"
    test.write_text(
        test.read_text().replace(
            "    assert type(CONFIG)", "    assert cached_halve(8) == 4\n    assert type(CONFIG)"
        )
    )
    d = guard.check()
    assert d.tests == ("tests/test_read.py::test_cache_api_still_works",)
    report = guard.run(stream=False)  # measured, under the watched decorators
    assert report.exit_code == 0, report.failed


def test_a_hit_depends_on_the_fill_of_its_own_entry_only(guard: Guard, tree: Path) -> None:
    # an lru_cache entry, and a cached_property's value on one instance of two
    edit(tree, "return 'b'", "return 'B'")  # only the entry for 'b' computed it
    d = set(guard.check().tests)
    assert {"tests/test_fill.py::test_fill_beta", "tests/test_fill.py::test_fill_named_beta"} <= d
    readers = {"tests/test_read.py::test_read_alpha", "tests/test_read.py::test_read_named_alpha"}
    assert not readers & d
    edit(tree, "return 'a'", "return 'A'")
    alpha = pair("alpha") | pair("named_alpha")
    assert alpha <= set(guard.check().tests)
    assert alpha <= set(guard.run(stream=False).failed)
