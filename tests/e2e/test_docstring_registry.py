"""A hand-written registering decorator that copies ``fn.__doc__`` into a module-level table,
which a help function prints later: a docstring edit must select the help test, with no click
or other library to recognise (precision issue, cause 5)."""

from __future__ import annotations

from pathlib import Path

from guard_core.api import Guard
from tests.e2e.conftest import edit

FILES = {
    "pkg/__init__.py": "",
    "pkg/registry.py": (
        "COMMANDS = {}\n\n\n"
        "def command(fn):\n    COMMANDS[fn.__name__] = fn.__doc__\n    return fn\n\n\n"
        "def help_text():\n"
        "    return '\\n'.join(f'{k}: {v}' for k, v in sorted(COMMANDS.items()))\n"
    ),
    "pkg/cmds.py": (
        "from pkg.registry import command\n\n\n"
        '@command\ndef greet():\n    """Say hello."""\n    return \'hello\'\n\n\n'
        'def plain():\n    """Not registered."""\n    return \'plain\'\n'
    ),
    "pkg/other.py": "def unrelated():\n    return 1\n",
    "tests/__init__.py": "",
    "tests/test_help.py": (
        "from pkg import cmds  # noqa: F401 - registers the commands\n"
        "from pkg.registry import help_text\n\n\n"
        "def test_help():\n    assert help_text() == 'greet: Say hello.'\n"
    ),
    "tests/test_cmds.py": (
        "from pkg.cmds import greet, plain\n\n\n"
        "def test_greet():\n    assert greet() == 'hello'\n\n\n"
        "def test_plain():\n    assert plain() == 'plain'\n"
    ),
    "tests/test_other.py": (
        "from pkg.other import unrelated\n\n\ndef test_unrelated():\n    assert unrelated() == 1\n"
    ),
}
HELP = "tests/test_help.py::test_help"


def test_a_registered_docstring_edit_selects_the_help_test(guard: Guard, tree: Path) -> None:
    edit(tree, "pkg/cmds.py", "Say hello.", "Say hi.")
    decision = guard.check()
    assert HELP in decision.tests, (decision.level, decision.tests, decision.reasons)
