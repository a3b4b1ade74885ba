"""A static read counts for a test only if the test ran the line that makes it (precision
issue, cause 1): a reflective fallback that every test's function holds, but only one test
runs, reads nothing for the others. Each rule keeps the edit it must still catch: string
dispatch broken by a rename, an attribute read only through ``vars(cls)``, a read on a
continuation line of a statement."""

from __future__ import annotations

from pathlib import Path

from guard_core.api import Guard
from tests.e2e.conftest import edit

FILES = {
    "pkg/__init__.py": "",
    "pkg/core.py": (
        "class Box:\n    size = 3\n    colour = 'red'\n\n\n"
        "class Config:\n    debug = False\n\n\n"
        "def describe(cls):\n    return dict(vars(cls))['debug']\n\n\n"
        "def doubled(n=Box.size):  # read where it is defined, not where it runs\n"
        "    return n * 2\n"
    ),
    "pkg/api.py": (
        "def lookup(obj, name, fallback=False):\n"
        "    if fallback:\n"
        "        return getattr(obj, name)  # by a computed name: any attribute\n"
        "    return 'plain'\n\n\n"
        "def size_of(box):\n    return box.size\n\n\n"
        "def total(box):\n    return sum(\n        [box.colour == 'red',\n         1]\n    )\n\n\n"
        "def greet(name='world'):\n    return 'hi ' + name\n\n\n"
        "def handlers():\n    return {'greet': greet}  # holds greet, never calls it\n\n\n"
        "def defaults_of(fn):\n    import inspect\n\n"
        "    return {k: p.default for k, p in inspect.signature(fn).parameters.items()}\n\n\n"
        "class Shell:\n"
        "    def dispatch(self, cmd):\n        return getattr(self, 'do_' + cmd)()\n\n"
        "    def do_greet(self):\n        return 'hi'\n"
    ),
    "tests/__init__.py": "",
    "tests/test_api.py": (
        "from pkg.api import Shell, defaults_of, greet, handlers, lookup, size_of, total\n"
        "from pkg.core import Box, Config, describe, doubled\n\n\n"
        "def test_lookup():\n    assert lookup(Box(), 'size') == 'plain'\n\n\n"
        "def test_fallback():\n    assert lookup(Box(), 'size', fallback=True) == 3\n\n\n"
        "def test_size():\n    assert size_of(Box()) == 3\n\n\n"
        "def test_total():\n    assert total(Box()) == 2\n\n\n"
        "def test_dispatch():\n    assert Shell().dispatch('greet') == 'hi'\n\n\n"
        "def test_describe():\n    assert describe(Config) is False\n\n\n"
        "def test_doubled():\n    assert doubled() == 6\n\n\n"
        "def test_handlers_listed():\n    assert 'greet' in handlers()\n\n\n"
        "def test_handlers_called():\n    assert handlers()['greet']() == 'hi world'\n\n\n"
        "def test_signature():\n    assert defaults_of(greet) == {'name': 'world'}\n"
    ),
}
T = "tests/test_api.py::"


def test_a_reflective_read_no_test_ran_here_reads_nothing(guard: Guard, tree: Path) -> None:
    edit(tree, "pkg/core.py", "size = 3", "size = 4")
    decision = guard.check()
    assert {T + "test_size", T + "test_fallback"} <= set(decision.tests), decision.reasons
    assert T + "test_lookup" not in decision.tests, decision.reasons  # ran lookup, not getattr


def test_a_default_argument_read_where_the_function_is_defined_is_still_caught(
    guard: Guard, tree: Path
) -> None:
    edit(tree, "pkg/core.py", "size = 3", "size = 4")
    assert T + "test_doubled" in guard.check().tests


def test_a_changed_default_selects_callers_and_introspection_not_holders(
    guard: Guard, tree: Path
) -> None:
    edit(tree, "pkg/api.py", "def greet(name='world')", "def greet(name='there')")
    decision = guard.check()
    assert {T + "test_handlers_called", T + "test_signature"} <= set(decision.tests)
    assert T + "test_handlers_listed" not in decision.tests, decision.reasons


def test_string_dispatch_broken_by_a_rename_is_still_caught(guard: Guard, tree: Path) -> None:
    edit(tree, "pkg/api.py", "def do_greet(self)", "def do_hello(self)")
    assert T + "test_dispatch" in guard.check().tests


def test_an_attribute_read_only_through_vars_is_still_caught(guard: Guard, tree: Path) -> None:
    edit(tree, "pkg/core.py", "debug = False", "debug = True")
    assert T + "test_describe" in guard.check().tests


def test_a_read_on_a_continuation_line_is_still_caught(guard: Guard, tree: Path) -> None:
    edit(tree, "pkg/core.py", "colour = 'red'", "colour = 'blue'")
    assert T + "test_total" in guard.check().tests
