"""Precision rules on a real project (git, pytest with doctests, coverage, FalkorDB): each rule
selects the tests the edit can break, and leaves the others out."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from guard_core.api import Guard
from guard_core.model import Level
from tests.e2e.conftest import edit, ingested_project, without_import_probe

FILES = {
    "pyproject.toml": (
        '[tool.pytest.ini_options]\ntestpaths = ["tests", "pkg"]\naddopts = "--doctest-modules"\n'
    ),
    "pkg/__init__.py": "from pkg.shapes import AREA_UNIT, Square, area\n",
    "pkg/shapes.py": (
        'import functools\n\nAREA_UNIT = "cm2"\nSCALE = 2\n\n\n'
        "def area(side):\n"
        '    """The area of a square.\n\n    >>> area(3)\n    9\n    """\n'
        "    return side * side\n\n\n"
        "def label(side):\n    return f'{area(side)} {AREA_UNIT}'\n\n\n"
        "def scaled(side):\n    return side * SCALE\n\n\n"
        "def logged(f):\n    @functools.wraps(f)\n    def wrapper(*a, **k):\n"
        "        return f(*a, **k)\n    return wrapper\n\n\n"
        "class Square:\n    sides = 4\n\n"
        "    def __init__(self, side, unit=1):\n        self.side = side * unit\n\n"
        "    @logged\n    def perimeter(self):\n        return self.sides * self.side\n\n"
        "    @property\n    def corners(self):\n        return 4\n"
    ),
    "pkg/grid.py": "class Grid:\n    corners = 0\n\n\ndef corners_of(g):\n    return g.corners\n",
    "tests/test_corners.py": (
        "from pkg.grid import Grid, corners_of\nfrom pkg.shapes import Square\n\n\n"
        "def test_square_corners():\n    assert Square(1).corners == 4\n\n\n"
        "def test_corners_is_a_property():\n    assert isinstance(Square.corners, property)\n\n\n"
        "def test_grid_corners():\n    assert corners_of(Grid()) == 0\n\n\n"
        "def test_corners_through_type():\n    from pkg.kinds import KINDS\n\n"
        "    assert type(KINDS['square'](1)).corners.fset is None\n\n\n"
        "def test_corners_read_only():\n    import pytest\n\n"
        "    with pytest.raises(AttributeError):\n        Square(1).corners = 5\n\n\n"
        "def test_needs_a_side():\n    import pytest\n\n"
        "    with pytest.raises(TypeError):\n        Square()\n"
    ),
    "pkg/docs.py": (
        "import inspect\n\nfrom pkg.shapes import scaled\n\n\n"
        "def help_of(fn):\n    return inspect.getdoc(fn) or ''\n"
    ),
    "pkg/codec.py": (
        "import json\n\n\nclass Compact(json.JSONEncoder):\n    item_separator = ','\n\n\n"
        "def dump(x):\n    return Compact().encode(x)\n"
    ),
    "pkg/solids.py": (
        "from pkg.shapes import Square\n\n\n"
        "class Cube(Square):\n    def edges(self):\n        return self.sides * 3\n"
    ),
    "tests/test_more.py": (
        "from pkg.codec import dump\nfrom pkg.solids import Cube\n\n\n"
        "def test_dump():\n    assert dump([1, 2]) == '[1,2]'\n\n\n"
        "def test_edges():\n    assert Cube(1).edges() == 12\n\n\n"
        "def test_cube_built():\n    assert isinstance(Cube(2), Cube)\n"
    ),
    "pkg/cli.py": (
        "import click\n\n\n@click.command()\ndef hello():\n"
        '    """Say hello."""\n    click.echo("hello")\n'
    ),
    "tests/test_cli.py": (
        "from click.testing import CliRunner\n\nfrom pkg.cli import hello\n\n\n"
        "def test_help():\n"
        "    assert 'Say hello.' in CliRunner().invoke(hello, ['--help']).output\n"
    ),
    "pkg/consts.py": "RATE = 2\nOTHER = 1\n",
    "pkg/api.py": "from pkg.consts import *\n\n\ndef charge(x):\n    return x * RATE\n",
    "tests/test_api.py": (
        "from pkg.api import RATE, charge\n\n\n"
        "def test_charge():\n    assert charge(1) == 2\n\n\n"
        "def test_rate():\n    assert RATE == 2\n"
    ),
    "pkg/store.py": (
        "import functools\n\n\ndef checked(f):\n    @functools.wraps(f)\n"
        "    def wrapper(self, *a, **k):\n        if self.closed:\n"
        "            raise RuntimeError('closed')\n        return f(self, *a, **k)\n"
        "    return wrapper\n\n\ndef soft(f):\n    @functools.wraps(f)\n"
        "    def wrapper(self, *a, **k):\n        if self.closed:\n            return None\n"
        "        return f(self, *a, **k)\n    return wrapper\n\n\n"
        "class Store:\n    closed = False\n\n"
        "    def __init__(self):\n        self.data = {}\n\n"
        "    @checked\n    def get(self, key):\n        return self.data.get(key)\n\n"
        "    @soft\n    def peek(self, key):\n        return self.data[key]\n\n"
        "    def close(self):\n        self.closed = True\n\n"
        "    @property\n    def size(self):\n        return len(self.data)\n\n"
        "    @size.setter\n    def size(self, value):\n        raise AttributeError('size')\n\n\n"
        "def lookup(d, key):\n    return d.get(key)\n"
    ),
    "tests/test_store.py": (
        "import pytest\n\nfrom pkg.store import Store, lookup\n\n\n"
        "def test_get():\n    assert Store().get('x') is None\n\n\n"
        "def test_lookup():\n    assert lookup({'a': 1}, 'a') == 1\n\n\n"
        "def test_closed():\n    s = Store()\n    s.close()\n"
        "    with pytest.raises(RuntimeError):\n        s.get('x')\n\n\n"
        "def test_wrong_call():\n    with pytest.raises(TypeError):\n"
        "        Store().get('x', None)\n\n\n"
        "def test_peek_closed():\n    s = Store()\n    s.close()\n    assert s.peek('x') is None\n"
    ),
    "pkg/kinds.py": "from pkg.shapes import Square\n\nKINDS = {'square': Square}\n",
    "tests/test_kinds.py": (
        "from pkg.kinds import KINDS\n\n\ndef test_kinds():\n    assert 'square' in KINDS\n"
    ),
    "tests/__init__.py": "",
    "tests/conftest.py": (
        "import pytest\n\nimport pkg\n\n\n"
        "@pytest.fixture(autouse=True)\n"
        "def namespace(doctest_namespace):\n    doctest_namespace['pkg'] = pkg\n"
    ),
    "tests/test_shapes.py": (
        "from pkg.shapes import Square, area, label, scaled\n\n\n"
        "def test_area():\n    assert area(2) == 4\n\n\n"
        "def test_label():\n    assert label(2) == '4 cm2'\n\n\n"
        "def test_scaled():\n    assert scaled(2) == 4\n\n\n"
        "def test_perimeter():\n    assert Square(1).perimeter() == 4\n"
    ),
    "tests/test_docs.py": (
        "from pkg.docs import help_of\nfrom pkg.shapes import area\n\n\n"
        "def test_help():\n    assert help_of(area).startswith('The area')\n"
    ),
}
AREA, LABEL = "tests/test_shapes.py::test_area", "tests/test_shapes.py::test_label"
SCALED, PERIM = "tests/test_shapes.py::test_scaled", "tests/test_shapes.py::test_perimeter"
HELP = "tests/test_docs.py::test_help"
DUMP, EDGES = "tests/test_more.py::test_dump", "tests/test_more.py::test_edges"
BUILT = "tests/test_more.py::test_cube_built"
CLI_HELP = "tests/test_cli.py::test_help"
GET, LOOKUP = "tests/test_store.py::test_get", "tests/test_store.py::test_lookup"
CLOSED, WRONG_CALL = "tests/test_store.py::test_closed", "tests/test_store.py::test_wrong_call"
DOCTEST = "pkg/shapes.py::pkg.shapes.area"


@pytest.fixture(scope="module")
def guard(tmp_path_factory: pytest.TempPathFactory, falkordb_url: str) -> Iterator[Guard]:
    root = tmp_path_factory.mktemp("precision")
    with ingested_project(root, FILES, falkordb_url, "precision") as g:
        assert DOCTEST in g.store.all_tests()
        yield g


def rename_area(repo: Path, *paths: str) -> None:
    """Rename ``area`` to ``surface`` in ``paths`` (the files left out keep the old name)."""
    for path in paths:
        file = repo / path
        file.write_text(file.read_text().replace("area", "surface"))


def test_a_fixture_holding_the_package_does_not_read_every_name(guard: Guard, tree: Path) -> None:
    edit(tree, "pkg/shapes.py", "SCALE = 2", "SCALE = 3")
    d = guard.check()
    assert d.level is not Level.RUN_ALL
    assert SCALED in d.tests
    assert not {AREA, LABEL, PERIM, HELP} & set(d.tests)
    assert guard.run(stream=False).failed == [SCALED]


def test_a_doctest_that_reads_a_name_through_its_namespace_is_selected(
    guard: Guard, tree: Path
) -> None:
    edit(tree, "pkg/shapes.py", "    >>> area(3)\n    9\n",
         "    >>> area(3)\n    9\n    >>> pkg.AREA_UNIT\n    'cm2'\n")  # fmt: skip
    subprocess.run(["git", "-C", str(tree), "commit", "-qam", "doctest reads the namespace"],
                   check=True)  # fmt: skip
    try:
        edit(tree, "pkg/shapes.py", 'AREA_UNIT = "cm2"', 'AREA_UNIT = "m2"')
        d = guard.check(base="HEAD")
        assert DOCTEST in d.tests and LABEL in d.tests
        assert not {AREA, SCALED, PERIM} & set(d.tests)
    finally:
        subprocess.run(["git", "-C", str(tree), "reset", "-q", "--hard", "HEAD~1"], check=True)


def test_a_class_attribute_selects_the_readers_of_that_attribute_not_the_class_users(
    guard: Guard, tree: Path
) -> None:
    edit(tree, "pkg/shapes.py", "    sides = 4\n", "    sides = 5\n")
    d = guard.check()
    assert {PERIM, EDGES} <= set(d.tests)  # self.sides in Square and in its subclass Cube
    assert not {AREA, LABEL, SCALED, BUILT, DUMP} & set(d.tests)
    assert set(guard.run(stream=False).failed) == {PERIM, EDGES}


def test_an_attribute_read_by_a_base_outside_the_repository_selects_the_class_users(
    guard: Guard, tree: Path
) -> None:
    edit(tree, "pkg/codec.py", "item_separator = ','", "item_separator = ';'")
    d = guard.check()
    assert DUMP in d.tests  # json.JSONEncoder reads it: no reader in the repository
    assert guard.run(stream=False).failed == [DUMP]


def test_a_docstring_edit_selects_its_readers_and_doctests_not_its_callers(
    guard: Guard, tree: Path
) -> None:
    edit(tree, "pkg/shapes.py", "The area of a square.", "Area of a square.")
    d = guard.check()
    assert HELP in d.tests  # inspect.getdoc
    assert "pkg/shapes.py" in d.tests  # the file's doctests, old and new
    assert not {AREA, LABEL, SCALED, PERIM, CLI_HELP} & set(d.tests)
    assert guard.run(stream=False).failed == [HELP]


def test_a_docstring_that_a_registering_decorator_copies_selects_the_command_users(
    guard: Guard, tree: Path
) -> None:
    edit(tree, "pkg/cli.py", "Say hello.", "Greet.")
    d = guard.check()
    assert CLI_HELP in d.tests
    assert guard.run(stream=False).failed == [CLI_HELP]


def test_a_new_keyword_parameter_with_a_default_selects_the_covering_tests_only(
    guard: Guard, tree: Path
) -> None:
    edit(tree, "pkg/shapes.py", "def scaled(side):", "def scaled(side, *, factor=None):")
    d = guard.check()
    assert d.tests == (SCALED,)


def test_a_new_required_parameter_selects_the_callers(guard: Guard, tree: Path) -> None:
    edit(tree, "pkg/shapes.py", "def label(side):", "def label(side, unit):")
    d = guard.check()
    assert LABEL in d.tests
    assert guard.run(stream=False).failed == [LABEL]


def test_a_rename_with_every_use_updated_is_not_run_all(guard: Guard, tree: Path) -> None:
    edit(tree, "pkg/shapes.py", "def label(side):", "def describe(side):")
    test = tree / "tests/test_shapes.py"
    test.write_text(test.read_text().replace("label", "describe"))
    d = guard.check()
    assert d.level is not Level.RUN_ALL
    # the test module's import line: the module runs whole (test_describe in it), no other
    assert "tests/test_shapes.py" in d.tests
    assert not {DUMP, EDGES, HELP} & set(d.tests)
    assert guard.run(stream=False).exit_code == 0


def test_a_rename_that_leaves_a_use_behind_selects_it(guard: Guard, tree: Path) -> None:
    edit(tree, "pkg/shapes.py", "def scaled(side):", "def doubled(side):")
    d = guard.check()
    assert SCALED in d.tests
    assert guard.run(stream=False).exit_code == 1


def test_a_name_re_exported_by_a_star_import_selects_its_readers(guard: Guard, tree: Path) -> None:
    edit(tree, "pkg/consts.py", "RATE = 2", "RATE = 3")
    d = guard.check()
    assert {"tests/test_api.py::test_charge", "tests/test_api.py::test_rate"} <= set(d.tests)
    assert not {AREA, SCALED, PERIM, DUMP} & set(d.tests)
    assert len(guard.run(stream=False).failed) == 2


def test_removing_a_decorator_that_only_wraps_selects_the_callers_not_every_importer(
    guard: Guard, tree: Path
) -> None:
    edit(tree, "pkg/shapes.py", "    @logged\n    def perimeter(self):", "    def perimeter(self):")
    d = guard.check()
    assert PERIM in d.tests  # calls of perimeter() now skip the wrapper
    assert not {AREA, LABEL, SCALED, DUMP, HELP} & set(d.tests)


def test_removing_a_registering_decorator_selects_the_readers_of_what_it_built(
    guard: Guard, tree: Path
) -> None:
    """Without the import probe every importer runs; with it, ``hello`` (no longer a command)
    is what importing built otherwise, and its readers run."""
    edit(tree, "pkg/cli.py", "@click.command()\ndef hello():", "def hello():")
    d = guard.check()
    assert CLI_HELP in d.tests
    with without_import_probe(guard) as plain:
        assert len(plain.check().tests) > 3
    assert guard.run(stream=False).failed == [CLI_HELP]


def test_a_method_of_a_common_name_is_not_read_by_every_call_of_that_name(
    guard: Guard, tree: Path
) -> None:
    edit(tree, "pkg/store.py", "    @checked\n    def get(", "    def get(")
    d = guard.check()
    assert GET in d.tests  # calls that reached Store.get: its evidence
    assert CLOSED in d.tests  # a call the wrapper stopped, under pytest.raises: a value read
    assert LOOKUP not in d.tests  # d.get(key) on a dict
    assert not {AREA, LABEL, DUMP} & set(d.tests)
    assert guard.run(stream=False).failed == [CLOSED]


def test_a_new_parameter_selects_the_test_that_calls_it_wrongly_on_purpose(
    guard: Guard, tree: Path
) -> None:
    edit(tree, "pkg/store.py", "def get(self, key):", "def get(self, key, default=None):")
    d = guard.check()
    assert {GET, WRONG_CALL} <= set(d.tests)
    assert LOOKUP not in d.tests
    assert guard.run(stream=False).failed == [WRONG_CALL]


def test_a_renamed_re_export_with_every_importer_updated_is_not_every_importer(
    guard: Guard, tree: Path
) -> None:
    rename_area(tree, "pkg/__init__.py", "pkg/shapes.py", "pkg/docs.py", "tests/test_shapes.py",
                "tests/test_docs.py")  # fmt: skip
    d = guard.check()
    assert d.level is not Level.RUN_ALL
    assert not {DUMP, EDGES, BUILT, GET, LOOKUP} & set(d.tests)  # they import pkg, not area
    assert guard.run(stream=False).exit_code == 0


def test_a_renamed_re_export_with_an_importer_left_behind_selects_its_tests(
    guard: Guard, tree: Path
) -> None:
    rename_area(tree, "pkg/__init__.py", "pkg/shapes.py", "tests/test_shapes.py")
    d = guard.check()
    assert HELP in d.tests  # tests/test_docs.py still imports pkg.shapes.area
    failed = guard.run(stream=False).failed  # an import error: the module fails to collect
    assert any(t.startswith("tests/test_docs.py") for t in failed)


def test_a_property_turned_into_a_method_selects_the_importers_of_its_class(
    guard: Guard, tree: Path
) -> None:
    edit(tree, "pkg/store.py", "    @property\n    def size(", "    def size(")
    d = guard.check()  # `@size.setter` in the class body now fails while importing
    assert LOOKUP in d.tests
    failed = guard.run(stream=False).failed
    assert any(t.startswith("tests/test_store.py") for t in failed)


def test_a_decorator_that_may_return_without_calling_keeps_the_callers_as_readers(
    guard: Guard, tree: Path
) -> None:
    edit(tree, "pkg/store.py", "    @soft\n    def peek(", "    def peek(")
    d = guard.check()  # the closed store's call never ran peek's body: no evidence shows it
    assert "tests/test_store.py::test_peek_closed" in d.tests
    assert "tests/test_store.py::test_peek_closed" in guard.run(stream=False).failed


def test_a_changed_default_of_a_method_python_calls_selects_the_tests_that_called_it(
    guard: Guard, tree: Path
) -> None:
    """``Square(1)`` runs ``__init__``: its callers are in its evidence. The holders of
    ``Square`` (a re-export, a subclass's base, a table) read none of its defaults."""
    edit(tree, "pkg/shapes.py", "unit=1", "unit=2")
    d = guard.check()
    assert {PERIM, EDGES, BUILT} <= set(d.tests), d.reasons
    holders = {"tests/test_kinds.py::test_kinds"}
    assert not {AREA, LABEL, SCALED, HELP, DUMP, CLI_HELP, GET, *holders} & set(d.tests), d.reasons
    assert guard.run(stream=False).failed == [PERIM]


def test_a_property_made_a_method_selects_who_read_it_not_every_reader_of_its_name(
    guard: Guard, tree: Path
) -> None:
    """Every read of ``Square(1).corners`` ran the getter (its evidence); a read through the
    class (by its name, ``type(x)``) runs none, nor does setting it in a test that holds the
    class. ``corners_of(Grid())`` reads ``.corners`` of another class: not a reader."""
    edit(tree, "pkg/shapes.py", "    @property\n    def corners(", "    def corners(")
    d = guard.check()
    failing = {
        "tests/test_corners.py::test_square_corners",  # ran the getter
        "tests/test_corners.py::test_corners_is_a_property",  # names the class
        "tests/test_corners.py::test_corners_through_type",  # a class object: type(x).corners
        "tests/test_corners.py::test_corners_read_only",  # holds the class, sets .corners
    }
    assert failing <= set(d.tests), d.reasons
    assert "tests/test_corners.py::test_grid_corners" not in d.tests, d.reasons
    assert set(guard.run(stream=False).failed) == failing


def test_an_optional_parameter_made_so_selects_the_test_that_called_it_wrongly_on_purpose(
    guard: Guard, tree: Path
) -> None:
    """``Square()`` raised TypeError before ``__init__``'s body ran: not in its evidence. A
    changed body and signature keep the holders of the class as readers of ``__init__``."""
    edit(
        tree,
        "pkg/shapes.py",
        "def __init__(self, side, unit=1):\n        self.side = side * unit",
        "def __init__(self, side=None, unit=1):\n        self.side = (side or 1) * unit",
    )
    d = guard.check()
    assert "tests/test_corners.py::test_needs_a_side" in d.tests, d.reasons
    assert "tests/test_corners.py::test_needs_a_side" in guard.run(stream=False).failed
