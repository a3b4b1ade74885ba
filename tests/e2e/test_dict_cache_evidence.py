"""Evidence that plain dict caches hide, where no static rule sees the cache: a manager keeps
its modules in a dict reached through a class-level table and an instance alias, stores each
module before it finishes it, and a second test only ever reads the entry the first test
built (or an entry whose fill read one that the same test had filled before). Changing any
code the build ran selects both tests; an unrelated change neither. The same for a value kept
on an object (``node._kind``), which the static memo rule sees."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from guard_core.api import Guard
from tests.e2e.conftest import edit, ingested_project

FILES = {
    "pyproject.toml": '[tool.pytest.ini_options]\ntestpaths = ["tests"]\n',
    "pkg/__init__.py": "",
    "pkg/manager.py": (
        "from pkg import builder\n\n\n"
        "class Manager:\n"
        "    brain = {'modules': {}, 'limit': 10}\n\n"
        "    def __init__(self):\n"
        "        self.modules = Manager.brain['modules']\n\n"
        "    def load(self, name):\n"
        "        if name in self.modules:\n"
        "            return self.modules[name]\n"
        "        return builder.build(self, name)\n\n"
        "    def store(self, module):\n"
        "        self.modules.setdefault(module['name'], module)\n"
    ),
    "pkg/builder.py": (
        "def parse(name):\n    return {'name': name, 'body': name * 2}\n\n\n"
        "def transform(module):\n    module['body'] = module['body'].upper()\n\n\n"
        "def build(manager, name):\n"
        "    module = parse(name)\n"
        "    manager.store(module)\n"
        "    transform(module)  # finished after it is stored\n"
        "    return module\n"
    ),
    "pkg/handlers.py": (
        "_HANDLERS = {}\n\n\n"
        "def make(kind):\n    return [kind + '!']\n\n\n"
        "def handlers(kind):\n"
        "    found = _HANDLERS.get(kind)\n"
        "    if found is None:\n"
        "        found = _HANDLERS.setdefault(kind, [])\n"
        "        found.extend(make(kind))\n"
        "    return found\n"
    ),
    "pkg/kinds.py": (
        "class Node:\n    _kind = None\n\n    def __init__(self, name):\n"
        "        self.name = name\n\n\n"
        "def classify(name):\n    return 'exception' if name.endswith('Error') else 'class'\n\n\n"
        "def kind(node):\n"
        "    if node._kind is not None:\n"
        "        return node._kind\n"
        "    if node.name.startswith('_'):\n"
        "        node._kind = 'private'\n"
        "    else:\n"
        "        node._kind = classify(node.name)\n"
        "    return node._kind\n\n\n"
        "NODE = Node('ValueError')\n"
    ),
    "pkg/layers.py": (
        "_LOADED = {}\n\n\n"
        "def core():\n    return 'core'\n\n\n"
        "def load(name):\n"
        "    found = _LOADED.get(name)\n"
        "    if found is None:\n"
        "        found = core() if name == 'base' else name + ':' + load('base')\n"
        "        _LOADED[name] = found\n"
        "    return found\n"
    ),
    "pkg/instance.py": "from pkg.manager import Manager\n\nMANAGER = Manager()\n",
    "pkg/other.py": "def value():\n    return 1\n",
    "tests/__init__.py": "",
    "tests/test_a_build.py": (
        "from pkg.handlers import handlers\nfrom pkg.instance import MANAGER\n\n\n"
        "def test_build():\n    assert MANAGER.load('ab')['body'] == 'ABAB'\n\n\n"
        "def test_handlers_fill():\n    assert handlers('x') == ['x!']\n\n\n"
        "def test_kind_fill():\n    from pkg.kinds import NODE, kind\n\n"
        "    assert kind(NODE) == 'exception'\n\n\n"
        "def test_layers_fill():\n    from pkg.layers import load\n\n"
        "    assert load('base') == 'core'  # filled first, on its own\n"
        "    assert load('top') == 'top:core'  # its fill reads the entry above\n"
    ),
    "tests/test_b_read.py": (
        "from pkg.handlers import handlers\nfrom pkg.instance import MANAGER\n"
        "from pkg.other import value\n\n\n"
        "def test_read():\n    assert MANAGER.load('ab')['body'] == 'ABAB'\n\n\n"
        "def test_handlers_read():\n    assert handlers('x') == ['x!']\n\n\n"
        "def test_kind_read():\n    from pkg.kinds import NODE, kind\n\n"
        "    assert kind(NODE) == 'exception'\n\n\n"
        "def test_layers_read():\n    from pkg.layers import load\n\n"
        "    assert load('top') == 'top:core'\n\n\n"
        "def test_unrelated():\n    assert value() == 1\n"
    ),
}
MODULES = {"tests/test_a_build.py::test_build", "tests/test_b_read.py::test_read"}
HANDLERS = {"tests/test_a_build.py::test_handlers_fill", "tests/test_b_read.py::test_handlers_read"}
KINDS = {"tests/test_a_build.py::test_kind_fill", "tests/test_b_read.py::test_kind_read"}
LAYERS = {"tests/test_a_build.py::test_layers_fill", "tests/test_b_read.py::test_layers_read"}
UNRELATED = "tests/test_b_read.py::test_unrelated"


@pytest.fixture(scope="module")
def guard(tmp_path_factory: pytest.TempPathFactory, falkordb_url: str) -> Iterator[Guard]:
    with ingested_project(tmp_path_factory.mktemp("dicts"), FILES, falkordb_url, "dicts") as g:
        yield g


@pytest.mark.parametrize(
    ("path", "old", "new", "selected"),
    [
        ("pkg/builder.py", ".upper()", ".lower()", MODULES),  # runs after the store
        ("pkg/builder.py", "name * 2", "name * 3", MODULES),
        ("pkg/handlers.py", "kind + '!'", "kind + '?'", HANDLERS),
        ("pkg/kinds.py", "classify(node.name)", "classify(node.name.lower())", KINDS),
        ("pkg/kinds.py", "'exception' if", "'error' if", KINDS),  # what the kept value called
        # an entry the same test filled before, read while it fills another
        ("pkg/layers.py", "return 'core'", "return 'CORE'", LAYERS),
    ],
)
def test_changing_what_filled_a_dict_entry_selects_the_tests_that_only_read_it(
    guard: Guard, tree: Path, path: str, old: str, new: str, selected: set[str]
) -> None:
    edit(tree, path, old, new)
    d = guard.check()
    assert selected <= set(d.tests)
    assert UNRELATED not in d.tests
    assert selected <= set(guard.run(stream=False).failed)


def test_an_unrelated_change_selects_no_reader_of_the_dicts(guard: Guard, tree: Path) -> None:
    edit(tree, "pkg/other.py", "return 1", "return 2")
    assert guard.check().tests == (UNRELATED,)
