"""A selection is judged by the suite's tests it runs: a selected file, class or test function
costs, and catches, every test of the suite inside it."""

from __future__ import annotations

from evals.metrics import time_saved
from evals.strategies import Selection, in_suite

SUITE = {
    "t/test_a.py::test_x[1]": 1.0,
    "t/test_a.py::test_x[2]": 1.0,
    "t/test_a.py::TestK::test_y": 2.0,
    "t/test_b.py::test_z": 4.0,
}


def test_a_file_a_class_or_a_parametrised_function_stands_for_the_tests_inside_it() -> None:
    assert in_suite(Selection(frozenset({"t/test_a.py"}), 0.0), SUITE).tests == {
        "t/test_a.py::test_x[1]", "t/test_a.py::test_x[2]", "t/test_a.py::TestK::test_y"
    }  # fmt: skip
    picked = in_suite(Selection(frozenset({"t/test_a.py::test_x", "t/test_a.py::TestK"}), 0.0),
                      SUITE)  # fmt: skip
    assert time_saved(picked.tests, SUITE) == 0.5
    # a file id alone used to cost nothing: the whole file's time now
    assert time_saved(in_suite(Selection(frozenset({"t/test_b.py"}), 0.0), SUITE).tests,
                      SUITE) == 0.5  # fmt: skip


def test_an_id_of_no_test_stays_and_the_whole_suite_stays_whole() -> None:
    gone = in_suite(Selection(frozenset({"t/test_c.py::test_gone"}), 0.0), SUITE)
    assert gone.tests == {"t/test_c.py::test_gone"}
    assert in_suite(Selection(None, 0.0), SUITE).tests is None
