"""Tests a ``conftest.py`` makes: ``pytest_generate_tests`` parametrizes, ``pytest_collect_file``
collects files of its own. An edit to those hooks can make tests no index or evidence lists
yet, and they must run: the conftest's folder runs as the files of its tests."""

from __future__ import annotations

from pathlib import Path

from guard_core.api import Guard
from tests.e2e.conftest import edit

FILES = {
    "pkg/__init__.py": "",
    "pkg/calc.py": "def double(n):\n    return n * 2 if n < 5 else n * 3\n",
    "tests/cases/conftest.py": (
        "def pytest_generate_tests(metafunc):\n"
        "    if 'n' in metafunc.fixturenames:\n"
        "        metafunc.parametrize('n', [1, 2])\n"
    ),
    "tests/cases/test_double.py": (
        "from pkg.calc import double\n\n\ndef test_double(n):\n    assert double(n) == n + n\n"
    ),
    "tests/files/conftest.py": (
        "import pytest\n\n\n"
        "def pytest_collect_file(parent, file_path):\n"
        "    if file_path.suffix == '.case':\n"
        "        return CaseFile.from_parent(parent, path=file_path)\n\n\n"
        "class CaseFile(pytest.File):\n"
        "    def collect(self):\n"
        "        for i, line in enumerate(self.path.read_text().splitlines()):\n"
        "            yield CaseItem.from_parent(self, name=f'case{i}', line=line)\n\n\n"
        "class CaseItem(pytest.Item):\n"
        "    def __init__(self, *, line, **kwargs):\n"
        "        super().__init__(**kwargs)\n"
        "        self.line = line\n\n"
        "    def runtest(self):\n"
        "        from pkg.calc import double\n\n"
        "        n, want = map(int, self.line.split())\n"
        "        assert double(n) == want\n"
    ),
    "tests/files/one.case": "1 2\n2 4\n",
    "tests/test_other.py": "def test_other():\n    assert True\n",
}


def test_a_generated_case_the_edit_adds_runs(guard: Guard, tree: Path) -> None:
    edit(tree, "tests/cases/conftest.py", "[1, 2]", "[1, 2, 7]")
    d = guard.check()
    assert "tests/test_other.py::test_other" not in d.tests, d.reasons
    result = guard.run(stream=False)
    assert result.failed == ["tests/cases/test_double.py::test_double[7]"], d.tests


def test_a_new_file_a_conftest_collects_runs(guard: Guard, tree: Path) -> None:
    (tree / "tests/files/two.case").write_text("6 12\n")
    d = guard.check()
    assert "tests/test_other.py::test_other" not in d.tests, d.reasons
    assert guard.run(stream=False).failed == ["tests/files/two.case::case0"], d.tests


def test_a_new_line_in_a_file_a_conftest_collects_runs(guard: Guard, tree: Path) -> None:
    edit(tree, "tests/files/one.case", "2 4\n", "2 4\n8 16\n")
    d = guard.check()
    assert "tests/test_other.py::test_other" not in d.tests, d.reasons
    assert guard.run(stream=False).failed == ["tests/files/one.case::case2"], d.tests


def test_a_hook_that_collects_more_of_a_known_file_runs_it_whole(guard: Guard, tree: Path) -> None:
    edit(tree, "tests/files/conftest.py", "splitlines()", "splitlines() + ['3 5']")
    d = guard.check()
    assert "tests/test_other.py::test_other" not in d.tests, d.reasons
    assert guard.run(stream=False).failed == ["tests/files/one.case::case2"], d.tests
