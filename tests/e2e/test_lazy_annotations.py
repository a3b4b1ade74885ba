"""Annotations deferred by ``from __future__ import annotations`` are still read: code handed
the function or class evaluates them later (``singledispatch.register`` by its first
parameter's annotation, a loader using ``typing.get_type_hints``), so an edit of a name used
only in annotations must select the tests of that code (from a review of a change that dropped
those reads)."""

from __future__ import annotations

from pathlib import Path

from guard_core.api import Guard
from tests.e2e.conftest import edit

FILES = {
    "pkg/__init__.py": "",
    "pkg/types.py": "Num = int\nUserId = int\n",
    "pkg/show.py": (
        "from __future__ import annotations\n\n"
        "from functools import singledispatch\n\n"
        "from pkg.types import Num\n\n\n"
        "@singledispatch\ndef show(x):\n    return 'any'\n\n\n"
        "def _show_num(x: Num) -> str:\n    return 'num'\n\n\n"
        "show.register(_show_num)\n"
    ),
    "pkg/model.py": (
        "from __future__ import annotations\n\n"
        "from dataclasses import dataclass\n\n"
        "from pkg.types import UserId\n\n\n"
        "@dataclass\nclass User:\n    id: UserId\n"
    ),
    "pkg/load.py": (
        "import typing\n\n\n"
        "def load(cls, data):\n"
        "    hints = typing.get_type_hints(cls)\n"
        "    return cls(**{k: hints[k](v) for k, v in data.items()})\n"
    ),
    "tests/__init__.py": "",
    "tests/test_use.py": (
        "from pkg.load import load\nfrom pkg.model import User\nfrom pkg.show import show\n\n\n"
        "def test_show():\n    assert show(1) == 'num'\n\n\n"
        "def test_load():\n    assert load(User, {'id': '7'}).id == 7\n\n\n"
        "def test_other():\n    assert show('x') == 'any'\n"
    ),
}
T = "tests/test_use.py::"


def test_a_name_read_by_a_dispatch_registration_of_its_annotation(guard: Guard, tree: Path) -> None:
    edit(tree, "pkg/types.py", "Num = int", "Num = float")
    assert T + "test_show" in guard.check().tests


def test_a_name_read_by_get_type_hints_of_a_dataclass(guard: Guard, tree: Path) -> None:
    edit(tree, "pkg/types.py", "UserId = int", "UserId = str")
    assert T + "test_load" in guard.check().tests
