"""A module-level table read once into a lazily built singleton (a lexer whose keyword table
is copied from ``KEYWORDS`` the first time anyone asks for it): only the first test runs the
copy, every later test uses it. A change of the table must select every test that asked for
the singleton, not only the first (three real sqlparse bugs escaped this way)."""

from __future__ import annotations

from pathlib import Path

import pytest

from guard_core.api import Guard
from tests.e2e.conftest import edit

FILES = {
    "pkg/__init__.py": "",
    "pkg/keywords.py": "KEYWORDS = {\n    'SELECT': 'kw',\n    'FROM': 'kw',\n}\n",
    "pkg/lexer.py": (
        "from pkg import keywords\n\n\n"
        "class Lexer:\n"
        "    _default = None\n\n"
        "    @classmethod\n"
        "    def get_default(cls):\n"
        "        if cls._default is None:\n"
        "            cls._default = cls()\n"
        "            cls._default.setup()\n"
        "        return cls._default\n\n"
        "    def setup(self):\n"
        "        self.table = dict(keywords.KEYWORDS)\n\n"
        "    def kind(self, word):\n"
        "        return self.table.get(word.upper(), 'name')\n\n\n"
        "def kind(word):\n    return Lexer.get_default().kind(word)\n"
    ),
    "pkg/other.py": "def unrelated():\n    return 1\n",
    "pkg/grammar.py": "RULES = {'select': 1, 'from': 2}\n",
    "pkg/parser.py": (
        "from pkg import grammar\n\n_parser = None\n\n\n"
        "class Parser:\n"
        "    def load(self):\n"
        "        self.rules = dict(grammar.RULES)\n\n"
        "    def rank(self, word):\n"
        "        return self.rules.get(word, 0)\n\n\n"
        "def get_parser():\n"
        "    global _parser\n"
        "    if _parser is None:\n"
        "        _parser = Parser()\n"
        "        _parser.load()\n"
        "    return _parser\n\n\n"
        "def rank(word):\n    return get_parser().rank(word)\n"
    ),
    "tests/test_d_rank.py": (
        "from pkg.parser import rank\n\n\ndef test_rank():\n    assert rank('select') == 1\n"
    ),
    "tests/test_e_rank.py": (
        "from pkg.parser import rank\n\n\ndef test_rank_from():\n    assert rank('from') == 2\n"
    ),
    "tests/__init__.py": "",
    "tests/test_a_select.py": (
        "from pkg.lexer import kind\n\n\ndef test_select():\n    assert kind('select') == 'kw'\n"
    ),
    "tests/test_b_from.py": (
        "from pkg.lexer import kind\n\n\ndef test_from():\n    assert kind('from') == 'kw'\n"
    ),
    "tests/test_c_other.py": (
        "from pkg.other import unrelated\n\n\ndef test_unrelated():\n    assert unrelated() == 1\n"
    ),
}


@pytest.mark.parametrize(
    ("path", "old", "new", "users"),
    [
        # a table copied into a class attribute singleton (cls._default)
        ("pkg/keywords.py", "    'FROM': 'kw',\n", "", ("test_a_select.py::test_select",
                                                        "test_b_from.py::test_from")),
        # the same through a module global (global _parser)
        ("pkg/grammar.py", "'from': 2", "'from': 3", ("test_d_rank.py::test_rank",
                                                      "test_e_rank.py::test_rank_from")),
    ],
)  # fmt: skip
def test_a_table_copied_into_a_singleton_selects_every_user_of_it(
    guard: Guard, tree: Path, path: str, old: str, new: str, users: tuple[str, ...]
) -> None:
    edit(tree, path, old, new)
    decision = guard.check()
    assert {f"tests/{u}" for u in users} <= set(decision.tests), (
        decision.level, decision.tests, decision.reasons,
    )  # fmt: skip
    assert "tests/test_c_other.py::test_unrelated" not in decision.tests
