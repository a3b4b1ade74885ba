"""An older suite's layout: ``unittest.TestCase`` classes that pytest collects, tests inside
the package, pytest's configuration in ``setup.cfg``, and a root ``conftest.py`` shim that puts
the source folder on ``sys.path``. Ids, set-up code as evidence (``setUp`` per test,
``setUpClass`` once per class) and test-file edits must hold as they do for plain pytest."""

from __future__ import annotations

from pathlib import Path

from guard_core.api import Guard
from tests.e2e.conftest import edit

FILES = {
    "setup.cfg": "[metadata]\nname = calc\n\n[tool:pytest]\ntestpaths = lib/calc/tests\n",
    "conftest.py": (
        "import os\nimport sys\n\n"
        "sys.path.insert(0, os.path.join(os.path.dirname(__file__), 'lib'))\n"
    ),
    "lib/calc/__init__.py": "",
    "lib/calc/ops.py": (
        "class Calculator:\n"
        "    def __init__(self):\n"
        "        self.memory = 0\n\n"
        "    def add(self, a, b):\n"
        "        return a + b\n\n"
        "    def mul(self, a, b):\n"
        "        return a * b\n"
    ),
    "lib/calc/tables.py": "def load_table():\n    return {'pi': 3}\n",
    "lib/calc/other.py": "def negate(x):\n    return -x\n",
    "lib/calc/tests/__init__.py": "",
    "lib/calc/tests/test_ops.py": (
        "import unittest\n\n"
        "from calc.ops import Calculator\n\n\n"
        "class OpsTest(unittest.TestCase):\n"
        "    def setUp(self):\n"
        "        self.calc = Calculator()\n\n"
        "    def test_add(self):\n"
        "        self.assertEqual(self.calc.add(2, 3), 5)\n\n"
        "    def test_mul(self):\n"
        "        self.assertEqual(self.calc.mul(2, 3), 6)\n"
    ),
    "lib/calc/tests/test_tables.py": (
        "import unittest\n\n"
        "from calc.tables import load_table\n\n\n"
        "class TablesTest(unittest.TestCase):\n"
        "    @classmethod\n"
        "    def setUpClass(cls):\n"
        "        cls.table = load_table()\n\n"
        "    def test_pi(self):\n"
        "        self.assertEqual(self.table['pi'], 3)\n\n"
        "    def test_size(self):\n"
        "        self.assertEqual(len(self.table), 1)\n"
    ),
    "lib/calc/tests/test_other.py": (
        "import unittest\n\n"
        "from calc.other import negate\n\n\n"
        "class OtherTest(unittest.TestCase):\n"
        "    def test_negate(self):\n"
        "        self.assertEqual(negate(2), -2)\n"
    ),
}

ADD = "lib/calc/tests/test_ops.py::OpsTest::test_add"
MUL = "lib/calc/tests/test_ops.py::OpsTest::test_mul"
PI = "lib/calc/tests/test_tables.py::TablesTest::test_pi"
SIZE = "lib/calc/tests/test_tables.py::TablesTest::test_size"
NEGATE = "lib/calc/tests/test_other.py::OtherTest::test_negate"


def test_the_evidence_names_every_test_case_by_its_pytest_id(guard: Guard) -> None:
    assert set(guard.store.all_tests()) == {ADD, MUL, PI, SIZE, NEGATE}


def test_a_method_body_selects_the_test_methods_that_ran_it(guard: Guard, tree: Path) -> None:
    edit(tree, "lib/calc/ops.py", "return a + b", "return a - b")
    decision = guard.check()
    assert ADD in decision.tests, (decision.level, decision.reasons)
    assert NEGATE not in decision.tests and PI not in decision.tests


def test_code_run_by_set_up_selects_every_test_of_the_class(guard: Guard, tree: Path) -> None:
    edit(tree, "lib/calc/ops.py", "self.memory = 0", "self.memory = None")
    decision = guard.check()
    assert {ADD, MUL} <= set(decision.tests), (decision.level, decision.reasons)
    assert NEGATE not in decision.tests


def test_code_run_once_by_set_up_class_selects_every_test_of_the_class(
    guard: Guard, tree: Path
) -> None:
    edit(tree, "lib/calc/tables.py", "{'pi': 3}", "{'pi': 3, 'e': 2}")
    decision = guard.check()
    assert {PI, SIZE} <= set(decision.tests), (decision.level, decision.reasons)
    assert NEGATE not in decision.tests and ADD not in decision.tests


def test_an_edited_test_method_selects_itself(guard: Guard, tree: Path) -> None:
    edit(tree, "lib/calc/tests/test_ops.py", "mul(2, 3), 6", "mul(2, 3), 7")
    decision = guard.check()
    assert MUL in decision.tests, (decision.level, decision.reasons)
    assert NEGATE not in decision.tests
