"""Reads by computed names, judged by what each test's run looked up: ``getattr(obj, key)``
reads, for one test, the attribute names its run gave it, and ``inspect.signature(f)`` the
signatures of the objects its run gave it — not every name and every signature. The edits
that these reads do reach (a dispatch broken by a rename, a looked-up constant, a signature
read by the test that introspects it) still select their tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from guard_core.api import Guard
from tests.e2e.conftest import edit, ingested_project

FILES = {
    "pkg/__init__.py": "",
    "pkg/lookup.py": (
        "class Settings:\n"
        "    colour = 'red'\n"
        "    size = 3\n\n\n"
        "def lookup(obj, key):\n"
        "    return getattr(obj, key)\n\n\n"
        "class Shell:\n"
        "    def run(self, cmd):\n"
        "        return getattr(self, 'do_' + cmd)()\n\n"
        "    def do_greet(self):\n"
        "        return 'hi'\n\n"
        "    def do_leave(self):\n"
        "        return 'bye'\n"
    ),
    "pkg/introspect.py": (
        "import inspect\n\n\n"
        "def arity(fn):\n"
        "    return len(inspect.signature(fn).parameters)\n\n\n"
        "def scale(x, factor=2):\n"
        "    return x * factor\n\n\n"
        "def defaults(fn):\n"
        "    return [p.default for p in inspect.signature(fn).parameters.values()]\n"
    ),
    # a reader in a module of its own: readers in a changed file are never line-gated
    "pkg/describe.py": (
        "import inspect\n\n\n"
        "def declared(fn, own=False):\n"
        "    if own:\n"
        "        return str(fn.__signature__)\n"
        "    return str(inspect.signature(fn))\n"
    ),
    "pkg/defaults.py": (
        "class Conf:\n    mode = 'fast'\n    other = 1\n\n\nKEY = 'mode'\n\n\n"
        "def pick(value=getattr(Conf, KEY)):\n    return value\n"
    ),
    "tests/test_defaults.py": (
        "from pkg.defaults import pick\n\n\ndef test_pick():\n    assert pick() == 'fast'\n"
    ),
    "tests/__init__.py": "",
    "tests/test_lookup.py": (
        "from pkg.lookup import Settings, Shell, lookup\n\n\n"
        "def test_colour():\n    assert lookup(Settings, 'colour') == 'red'\n\n\n"
        "def test_size():\n    assert lookup(Settings, 'size') == 3\n\n\n"
        "def test_greet():\n    assert Shell().run('greet') == 'hi'\n\n\n"
        "def test_leave():\n    assert Shell().run('leave') == 'bye'\n"
    ),
    "tests/test_introspect.py": (
        "from pkg.describe import declared\nfrom pkg.introspect import arity, defaults, scale\n\n\n"
        "def test_arity_of_a_lambda():\n    assert arity(lambda x: x) == 1\n\n\n"
        "def test_defaults_of_scale():\n    assert defaults(scale)[1] == 2\n\n\n"
        "def test_scale():\n    assert scale(3, 1) == 3\n\n\n"
        "def test_declared_of_a_lambda():\n    assert declared(lambda x: x) == '(x)'\n\n\n"
        "def test_declared_of_a_spec():\n"
        "    from unittest import mock\n\n"
        "    spec = mock.create_autospec(scale)\n"
        "    assert declared(spec, own=True) == '(x, factor=2)'\n"
    ),
}


def _tests(names: tuple[str, ...]) -> set[str]:
    return {f"tests/{n}" for n in names}


@pytest.mark.parametrize(
    ("path", "old", "new", "must", "not_"),
    [
        # a constant looked up by a computed name: the test that looked it up, not the other
        ("pkg/lookup.py", "colour = 'red'", "colour = 'blue'",
         ("test_lookup.py::test_colour",), ("test_lookup.py::test_size",)),
        # a rename under string dispatch breaks the test whose command reached it
        ("pkg/lookup.py", "def do_leave", "def do_exit",
         ("test_lookup.py::test_leave",), ("test_lookup.py::test_colour",)),
        # a changed default: read by the test that introspects scale, not by the lambda's;
        # a test that ran the reader's plain `fn.__signature__` read (a spec of scale) read
        # it whatever its run introspected, the lambda's test ran only the recorded call
        ("pkg/introspect.py", "factor=2", "factor=5",
         ("test_introspect.py::test_defaults_of_scale",
          "test_introspect.py::test_declared_of_a_spec"),
         ("test_introspect.py::test_arity_of_a_lambda",
          "test_introspect.py::test_declared_of_a_lambda")),
        # a default looked up where the function is defined: not in the function's own record
        ("pkg/defaults.py", "mode = 'fast'", "mode = 'slow'", ("test_defaults.py::test_pick",),
         ()),
    ],
)  # fmt: skip
def test_a_read_by_computed_name_reads_what_the_run_looked_up(
    guard: Guard,
    tree: Path,
    path: str,
    old: str,
    new: str,
    must: tuple[str, ...],
    not_: tuple[str, ...],
) -> None:
    edit(tree, path, old, new)
    decision = guard.check()
    assert _tests(must) <= set(decision.tests), (decision.level, decision.tests, decision.reasons)
    assert not _tests(not_) & set(decision.tests), decision.reasons


LOOKUP_ONLY = {k: v for k, v in FILES.items() if k in ("pkg/__init__.py", "pkg/lookup.py")}


@pytest.mark.parametrize(
    ("files", "test"),
    [
        # getattr replaced for one test (and put back at its teardown): the calls it made
        # went past the record
        (
            {},
            "import builtins\nfrom pkg.lookup import Settings, lookup\n\n\n"
            "def test_it(monkeypatch):\n"
            "    real = builtins.getattr\n"
            "    monkeypatch.setattr(builtins, 'getattr', lambda *a: real(*a))\n"
            "    assert lookup(Settings, 'colour') == 'red'\n",
        ),
        # replaced and put back inside the test itself
        (
            {},
            "import builtins\nimport pytest\nfrom pkg.lookup import Settings, lookup\n\n\n"
            "def test_it():\n"
            "    real = builtins.getattr\n"
            "    with pytest.MonkeyPatch.context() as patch:\n"
            "        patch.setattr(builtins, 'getattr', lambda *a: real(*a))\n"
            "        assert lookup(Settings, 'colour') == 'red'\n",
        ),
        # a module outside the repository binds the real builtins in its namespace at its
        # first call (the record's bypass); a repository module that star-imports it binds
        # them too, and its own getattr calls skip the record
        (
            {
                "pkg/starred.py": (
                    "from extlib import *\n\n\n"
                    "def lookup(obj, key):\n    return getattr(obj, key)\n"
                ),
            },
            "from pkg.lookup import Settings\nfrom pkg.starred import lookup\n\n\n"
            "def test_it():\n    assert lookup(Settings, 'colour') == 'red'\n",
        ),
    ],
    ids=["monkeypatched-getattr", "patched-within-the-test", "star-import-of-a-bypassed-module"],
)
def test_calls_that_went_past_the_record_read_every_name(
    tmp_path: Path, falkordb_url: str, files: dict[str, str], test: str
) -> None:
    ext = tmp_path / "ext"
    ext.mkdir()
    (ext / "extlib.py").write_text(
        "def peek(obj, key):\n    return getattr(obj, key)\n\n\npeek(object, '__name__')\n"
    )
    project = {**LOOKUP_ONLY, **files, "tests/__init__.py": "", "tests/test_it.py": test}
    with ingested_project(
        tmp_path, project, falkordb_url, "past-the-record", environ={"PYTHONPATH": str(ext)}
    ) as g:
        edit(g.settings.repo, "pkg/lookup.py", "colour = 'red'", "colour = 'blue'")
        decision = g.check()
        assert "tests/test_it.py::test_it" in decision.tests, (decision.level, decision.reasons)
