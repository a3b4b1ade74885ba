"""A class deriving from code outside the repository, held at import time: a changed default
of one of its methods selects the method's covering tests, not every holder (precision issue,
cause 3); a renamed hook method that the outside base calls by name still selects the tests
that ran it."""

from __future__ import annotations

from pathlib import Path

from guard_core.api import Guard
from tests.e2e.conftest import edit

FILES = {
    "pkg/__init__.py": "",
    "pkg/codec.py": (
        "import json\n\n\n"
        "class Encoder(json.JSONEncoder):\n"
        "    def default(self, o):  # json calls it by name for what it cannot encode\n"
        "        return sorted(o)\n\n"
        "    def describe(self, prefix='enc'):\n        return prefix + ':' + type(self).__name__\n"
        "\n\nENCODER = Encoder()  # held at import by the module\n"
    ),
    "pkg/use.py": (
        "from pkg.codec import ENCODER\n\n\n"
        "def dump(value):\n    return ENCODER.encode(value)\n\n\n"
        "def label():\n    return ENCODER.describe()\n"
    ),
    "pkg/tags.py": "class Tag(dict):\n    @property\n    def label(self):\n        return 'x'\n",
    "tests/__init__.py": "",
    "tests/test_tags.py": (
        "from pkg.tags import Tag\n\n\n"
        "def test_format():  # str.format reads .label by name, running the getter\n"
        "    assert '{0.label}'.format(Tag()) == 'x'\n"
    ),
    "tests/test_use.py": (
        "from pkg.use import dump, label\n\n\n"
        "def test_dump_list():\n    assert dump([1]) == '[1]'\n\n\n"
        "def test_dump_set():\n    assert dump({2, 1}) == '[1, 2]'\n\n\n"
        "def test_label():\n    assert label() == 'enc:Encoder'\n"
    ),
}
T = "tests/test_use.py::"


def test_a_changed_default_of_an_open_class_method_selects_its_callers(
    guard: Guard, tree: Path
) -> None:
    edit(tree, "pkg/codec.py", "prefix='enc'", "prefix='codec'")
    decision = guard.check()
    assert T + "test_label" in decision.tests
    assert T + "test_dump_list" not in decision.tests, decision.reasons


def test_a_renamed_hook_the_outside_base_calls_by_name_is_still_caught(
    guard: Guard, tree: Path
) -> None:
    edit(tree, "pkg/codec.py", "def default(self, o)", "def fallback(self, o)")
    assert T + "test_dump_set" in guard.check().tests


def test_a_property_outside_code_reads_made_a_method_selects_the_tests_that_read_it(
    guard: Guard, tree: Path
) -> None:
    """``str.format`` reads ``.label`` by a name no index sees: each read ran the getter."""
    edit(tree, "pkg/tags.py", "    @property\n    def label(", "    def label(")
    assert "tests/test_tags.py::test_format" in guard.check().tests
    assert guard.run(stream=False).failed == ["tests/test_tags.py::test_format"]
