"""A class defined inside a function runs its body when that function runs, not when its
module is imported: a change to it selects the tests that ran the enclosing function (through
its old name after a rename), not every importer of the module (precision issue, fresh class:
a renamed class factory). A nested definition a decorator may register keeps the importers."""

from __future__ import annotations

from pathlib import Path

import pytest

from guard_core.api import Guard
from tests.e2e.conftest import edit

FILES = {
    "pkg/__init__.py": "",
    "pkg/patching.py": (
        "def wrap(box):\n"
        "    class Wrapped(type(box)):\n"
        "        kind = 'wrapped'\n\n"
        "        def get(self):\n"
        "            return self.kind + ':' + str(self.value)\n\n"
        "    box.__class__ = Wrapped\n"
        "    return box\n\n\n"
        "def register(table):\n"
        "    @table.setdefault('hooks', []).append\n"
        "    def hook():\n"
        "        return 'hooked'\n\n"
        "    return table\n\n\n"
        "def plain(x):\n    return x + 1\n"
    ),
    "pkg/box.py": (
        "class Box:\n"
        "    def __init__(self, value):\n        self.value = value\n\n"
        "    def get(self):\n        return self.value\n\n\n"
        "def wrapped(value):\n"
        "    from pkg.patching import wrap\n\n"
        "    return wrap(Box(value))\n"
    ),
    "tests/__init__.py": "",
    "tests/test_box.py": (
        "from pkg.box import Box, wrapped\n"
        "from pkg.patching import plain, register\n\n\n"
        "def test_wrapped():\n    assert wrapped(2).get() == 'wrapped:2'\n\n\n"
        "def test_hooks():\n    assert register({})['hooks'][0]() == 'hooked'\n\n\n"
        "def test_plain_box():\n    assert Box(3).get() == 3\n\n\n"
        "def test_plain():\n    assert plain(1) == 2\n"
    ),
}
T = "tests/test_box.py::"


RENAME_FACTORY = [
    ("pkg/patching.py", "def wrap(box)", "def wrap_box(box)"),
    ("pkg/box.py", "import wrap\n\n    return wrap(", "import wrap_box\n\n    return wrap_box("),
]
CHANGE_NESTED_BODY = [("pkg/patching.py", "kind = 'wrapped'", "kind = 'boxed'")]


@pytest.mark.parametrize(
    "edits", [RENAME_FACTORY, CHANGE_NESTED_BODY], ids=["renamed-factory", "changed-body"]
)
def test_a_nested_class_selects_the_tests_that_ran_its_function(
    guard: Guard, tree: Path, edits: list[tuple[str, str, str]]
) -> None:
    for path, old, new in edits:
        edit(tree, path, old, new)
    decision = guard.check()
    assert T + "test_wrapped" in decision.tests
    assert T + "test_plain" not in decision.tests, decision.reasons


def test_a_nested_registering_decorator_changed_keeps_the_importers(
    guard: Guard, tree: Path
) -> None:
    """What it registered may be read by tests that never ran the function (a test module
    calls it at import, another reads the table): the importers stay selected."""
    edit(tree, "pkg/patching.py", "@table.setdefault('hooks', []).append", "@print")
    decision = guard.check()
    assert T + "test_hooks" in decision.tests
    assert T + "test_plain" in decision.tests, decision.reasons


def test_a_nested_class_added_to_a_renamed_function_is_still_caught(
    guard: Guard, tree: Path
) -> None:
    kind = "        kind = 'wrapped'\n"
    edit(tree, "pkg/patching.py", kind, kind + "        size = 1 / 0\n")
    for path, old, new in RENAME_FACTORY:
        edit(tree, path, old, new)
    assert T + "test_wrapped" in guard.check().tests
