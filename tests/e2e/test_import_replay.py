"""Code that runs while the library is imported is charged to every test; the import probe
imports the modules as the base had them and as they are now, and selects the readers of what
changed instead (precision issue, causes 2-4). What start-up or a ``conftest.py`` import ran,
and an import that now fails, still select every test that relies on them."""

from __future__ import annotations

from pathlib import Path

import pytest

from guard_core.api import Guard
from tests.e2e.conftest import edit, ingested_project

FILES = {
    "pkg/__init__.py": "",
    "pkg/group.py": (
        "class Group:\n"
        "    KIND = 'group'\n\n"
        "    def __init__(self, name, hidden=False):\n"
        "        self.name = name\n"
        "        self.hidden = bool(hidden)\n\n"
        "    def describe(self):\n"
        "        return ('(hidden) ' if self.hidden else '') + self.name\n\n"
        "    def title(self, width=6):\n"
        "        return self.name.center(width)\n\n\n"
        "cli = Group('main')\n\n\n"
        "def is_group(x):\n    return isinstance(x, Group)\n"
    ),
    "pkg/limits.py": (
        "class Limits:\n    MAX = 3\n\n\ndef allowed(n):\n    return n <= Limits().MAX\n"
    ),
    "pkg/setup.py": "STATE = {}\n\n\ndef configure():\n    STATE['mode'] = 'test'\n",
    "pkg/other.py": "from pkg import group, limits  # noqa: F401\n\n\ndef one():\n    return 1\n",
    "pkg/modes.py": (
        "import os\n\n\ndef _test_config():\n    return {'debug': True}\n\n\n"
        "CONFIG = _test_config() if os.environ.get('PKG_MODE') == 'test' else {}\n"
        "if os.environ.get('PKG_MODE') == 'test':\n    LEVEL = 5\nelse:\n    LEVEL = 0\n\n\n"
        "def _load(mode):\n    return {'strict': mode == 'test'}\n\n\n"
        "SETTINGS = _load(os.environ.get('PKG_MODE', 'prod'))\n"
    ),
    "conftest.py": (
        "import os\n\nfrom pkg.setup import configure\n\n"
        "os.environ['PKG_MODE'] = 'test'\nconfigure()\n"
    ),
    "tests/__init__.py": "",
    "tests/test_group.py": (
        "from pkg.group import Group\n\n\n"
        "def test_hidden_group():\n    assert Group('x', hidden=1).describe() == '(hidden) x'\n"
    ),
    "tests/test_cli.py": (
        "from pkg.group import cli\n\n\ndef test_cli_name():\n    assert cli.describe() == 'main'\n"
        "\n\ndef test_cli_kind():\n    assert cli.KIND == 'group'\n"
        "\n\ndef test_cli_title():\n    assert cli.title() == ' main '\n"
        "\n\ndef test_is_group():\n    from pkg.group import is_group\n\n    assert is_group(cli)\n"
    ),
    "tests/test_limits.py": (
        "from pkg.limits import allowed\n\n\ndef test_allowed():\n    assert allowed(3)\n"
    ),
    "tests/test_setup.py": (
        "from pkg.setup import STATE\n\n\ndef test_mode():\n    assert STATE['mode'] == 'test'\n"
    ),
    "tests/test_modes.py": (
        "from pkg.modes import CONFIG, LEVEL\n\n\ndef test_debug():\n    assert CONFIG['debug']\n"
        "\n\ndef test_level():\n    assert LEVEL == 5\n\n\n"
        "def test_strict():\n    from pkg.modes import SETTINGS\n\n    assert SETTINGS['strict']\n"
    ),
    "tests/test_other.py": (
        "from pkg.other import one\n\n\ndef test_one():\n    assert one() == 1\n"
    ),
}
HIDDEN = "tests/test_group.py::test_hidden_group"
CLI = "tests/test_cli.py::test_cli_name"
KIND, TITLE = "tests/test_cli.py::test_cli_kind", "tests/test_cli.py::test_cli_title"
IS_GROUP = "tests/test_cli.py::test_is_group"
ALLOWED = "tests/test_limits.py::test_allowed"
MODE = "tests/test_setup.py::test_mode"
ONE = "tests/test_other.py::test_one"
DEBUG, LEVEL = "tests/test_modes.py::test_debug", "tests/test_modes.py::test_level"
STRICT = "tests/test_modes.py::test_strict"
EVERY = {HIDDEN, CLI, KIND, TITLE, IS_GROUP, ALLOWED, MODE, ONE, DEBUG, LEVEL, STRICT}


def test_a_constructor_edit_that_builds_the_same_at_import_selects_its_callers(
    guard: Guard, tree: Path
) -> None:
    """``cli = Group('main')`` ran ``__init__`` at import, and builds the same object after
    the edit: only the tests that call it with what changed are selected."""
    edit(tree, "pkg/group.py", "bool(hidden)", "hidden is True")
    d = guard.check()
    assert HIDDEN in d.tests
    assert not {ALLOWED, MODE, ONE, DEBUG, LEVEL, STRICT} & set(d.tests), d.reasons
    assert guard.run(stream=False).failed == [HIDDEN]


def test_a_constructor_edit_that_changes_what_import_built_selects_its_readers(
    guard: Guard, tree: Path
) -> None:
    edit(tree, "pkg/group.py", "self.name = name\n", "self.name = name.upper()\n")
    d = guard.check()
    assert {HIDDEN, CLI} <= set(d.tests), d.reasons
    assert not {ALLOWED, MODE, ONE} & set(d.tests), d.reasons
    assert sorted(guard.run(stream=False).failed) == [CLI, TITLE, HIDDEN]


def test_a_class_constant_read_through_instances_selects_the_tests_that_read_it(
    guard: Guard, tree: Path
) -> None:
    edit(tree, "pkg/limits.py", "MAX = 3", "MAX = 2")
    d = guard.check()
    assert ALLOWED in d.tests
    assert not {HIDDEN, CLI, MODE, ONE} & set(d.tests), d.reasons
    assert guard.run(stream=False).failed == [ALLOWED]


@pytest.mark.parametrize(
    "old, new, failing",
    [("KIND = 'group'", "KIND = 'command'", KIND), ("width=6", "width=8", TITLE)],
    ids=["class-constant", "method-default"],
)
def test_a_member_of_a_class_an_import_time_instance_holds_selects_who_reads_it(
    guard: Guard, tree: Path, old: str, new: str, failing: str
) -> None:
    """``cli = Group('main')`` holds the class, and reads none of its members: a changed
    constant or default selects the code that reads it through the instance (its name, its
    call), not every holder of ``cli``."""
    edit(tree, "pkg/group.py", old, new)
    d = guard.check()
    assert failing in d.tests, d.reasons
    assert not {CLI, ALLOWED, MODE, ONE, DEBUG, LEVEL, STRICT} & set(d.tests), d.reasons
    assert guard.run(stream=False).failed == [failing]


@pytest.mark.parametrize(
    "path, old, new",
    [
        ("pkg/group.py", "self.name = name\n", "self.name = name\n        assert name != 'main'\n"),
        ("pkg/setup.py", "'test'", "'prod'"),
        ("pkg/modes.py", "{'debug': True}", "{'debug': False}"),
        ("pkg/modes.py", "LEVEL = 5", "LEVEL = 6"),
    ],
    ids=[
        "import-now-fails",
        "conftest-import",
        "import-under-a-conftest-environment",
        "a-branch-under-a-conftest-environment",
    ],
)
def test_what_no_import_replays_still_selects_every_test_relying_on_it(
    guard: Guard, tree: Path, path: str, old: str, new: str
) -> None:
    """An import that now fails (every importer fails), code a ``conftest.py`` import ran
    (start-up: the probe imports the library only), and import-time code the tests' imports
    ran under what ``conftest.py`` set up, which the probe's import does not run."""
    edit(tree, path, old, new)
    d = guard.check()
    relying = ({LEVEL} if "LEVEL" in old else {DEBUG}) if path == "pkg/modes.py" else EVERY
    assert set(d.tests) >= relying, (relying - set(d.tests), d.reasons)


def test_a_value_built_under_a_conftest_environment_is_compared_in_it(
    guard: Guard, tree: Path
) -> None:
    """The probe imports as the tests' session does, after their ``conftest.py`` set the
    environment: the value the edit changes there is the one compared."""
    edit(tree, "pkg/modes.py", "mode == 'test'", "mode == 'testing'")
    d = guard.check()
    assert STRICT in d.tests, d.reasons
    assert guard.run(stream=False).failed == [STRICT]


ORDER_FILES = {
    "pkg/__init__.py": "",
    "pkg/handlers.py": "HANDLERS = {}\n",
    "pkg/alpha.py": (
        "from pkg.handlers import HANDLERS\n\n\ndef _alpha():\n    return 'alpha'\n\n\n"
        "HANDLERS['default'] = _alpha()\n"
    ),
    "pkg/beta.py": "from pkg.handlers import HANDLERS\n\nHANDLERS['default'] = 'beta'\n",
    "tests/__init__.py": "",
    "tests/test_a.py": "import pkg.beta  # noqa: F401\n\n\ndef test_beta_loaded():\n    pass\n",
    "tests/test_z.py": (
        "import pkg.alpha  # noqa: F401\nfrom pkg.handlers import HANDLERS\n\n\n"
        "def test_handler():\n    assert HANDLERS['default'] == 'alpha'\n"
    ),
}


def test_the_import_is_replayed_in_the_order_the_tests_import(
    tmp_path_factory: pytest.TempPathFactory, falkordb_url: str
) -> None:
    """The last registration wins: pytest imports beta (through test_a) before alpha, sorted
    module names would import alpha first and let beta's value hide the edit."""
    root = tmp_path_factory.mktemp("order")
    with ingested_project(root, ORDER_FILES, falkordb_url, "order") as g:
        edit(g.settings.repo, "pkg/alpha.py", "return 'alpha'", "return 'ALPHA'")
        d = g.check()
        assert "tests/test_z.py::test_handler" in d.tests, d.reasons
        assert g.run(stream=False).failed == ["tests/test_z.py::test_handler"]


BRANCH_FILES = {
    "pkg/__init__.py": "",
    "pkg/impl.py": (
        "FAST = True\n\n"
        "if FAST:\n\n    def compute(x):\n        return x * 2\n\n"
        "else:\n\n    def compute(x):\n        return x + x + 1\n\n\n"
        "def make(flag):\n    if flag:\n\n        def step():\n            return 'up'\n\n"
        "    else:\n\n        def step():\n            return 'down'\n\n    return step\n\n\n"
        "STEP = make(FAST)\nPICK = (lambda: 1) if FAST else (lambda: 2)\n"
    ),
    "tests/__init__.py": "",
    "tests/test_impl.py": (
        "from pkg.impl import PICK, STEP, compute\n\n\n"
        "def test_compute():\n    assert compute(2) == 4\n\n\n"
        "def test_step():\n    assert STEP() == 'up'\n\n\n"
        "def test_pick():\n    assert PICK() == 1\n"
    ),
    "tests/test_other.py": "import pkg.impl  # noqa: F401\n\n\ndef test_other():\n    pass\n",
}


def test_a_flag_that_picks_another_same_named_definition_selects_its_callers(
    tmp_path_factory: pytest.TempPathFactory, falkordb_url: str
) -> None:
    """Two definitions of one name (a function, a nested function, a lambda) in the branches
    of an ``if``: flipping the flag binds the other one, though the qualified names, defaults
    and closures are alike; the tests that call what is bound are selected."""
    root = tmp_path_factory.mktemp("branches")
    with ingested_project(root, BRANCH_FILES, falkordb_url, "branches") as g:
        edit(g.settings.repo, "pkg/impl.py", "FAST = True", "FAST = False")
        d = g.check()
        calling = {f"tests/test_impl.py::test_{n}" for n in ("compute", "step", "pick")}
        assert calling <= set(d.tests), (calling - set(d.tests), d.reasons)
        assert sorted(g.run(stream=False).failed) == sorted(calling)


def test_a_changed_default_of_a_method_python_calls_is_read_by_its_calls_not_its_holders(
    guard: Guard, tree: Path
) -> None:
    """``cli = Group('main')`` holds the class and ran ``__init__`` once at import, with the
    same arguments either way: the import builds the same ``cli``, and the default's readers
    are the calls that ran ``__init__`` in its evidence, not every reader of ``cli``."""
    edit(tree, "pkg/group.py", "hidden=False", "hidden=None")
    d = guard.check()
    assert HIDDEN in d.tests
    assert not {CLI, KIND, TITLE, IS_GROUP, ALLOWED, MODE, ONE} & set(d.tests), d.reasons
    assert guard.run(stream=False).failed == []
