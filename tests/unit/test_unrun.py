"""What counts as "ran" when a run is compared with the selection it was asked for."""

from __future__ import annotations

from guard_adapters.pytest.projects import group_by_project, project_of, relative_to_project
from guard_adapters.pytest.runner import combined_exit
from guard_core.unrun import unrun


def test_a_selected_test_without_an_outcome_did_not_run() -> None:
    assert unrun(["a.py::t1", "b/c.py::t2"], ["a.py::t1"]) == ["b/c.py::t2"]


def test_parametrisations_classes_and_whole_modules_account_for_their_tests() -> None:
    ran = ["a.py::test_p[1]", "a.py::C::test_m", "skipped_module.py"]
    expected = ["a.py::test_p", "a.py::C", "a.py::C::test_m", "skipped_module.py::test_x"]
    assert unrun(expected, ran) == []


def test_another_test_of_the_same_file_does_not_account_for_it() -> None:
    assert unrun(["a.py::test_x"], ["a.py::test_y"]) == ["a.py::test_x"]


def test_a_selected_file_needs_no_outcome() -> None:
    assert unrun(["tests/test_new.py"], []) == []


def test_several_runs_pass_only_when_each_passed_or_had_no_tests() -> None:
    assert combined_exit([0, 5]) == 0
    assert combined_exit([0, 1]) == 1
    assert combined_exit([1, 4]) == 4  # pytest could not run one project: an error
    assert combined_exit([5, 5]) == 5
    assert combined_exit([]) == 5


def test_tests_belong_to_the_deepest_project_holding_them() -> None:
    projects = ("services/api", "services/api/sub")
    assert project_of("tests/test_a.py::t", projects) == ""
    assert project_of("services/api/tests/t.py::t", projects) == "services/api"
    assert project_of("services/api/sub/t.py::t", projects) == "services/api/sub"
    assert project_of("services/apix/t.py::t", projects) == ""
    groups = group_by_project(["a.py::t", "services/api/t.py::t"], projects)
    assert groups == {"": ["a.py::t"], "services/api": ["services/api/t.py::t"]}
    assert relative_to_project("services/api/t.py::C::t[1]", "services/api") == "t.py::C::t[1]"


def test_a_test_gone_from_a_collected_file_is_accounted_one_left_out_is_not() -> None:
    ran = ["tests/test_a.py::test_kept"]
    collected = ["tests", "tests/test_a.py"]
    expected = [
        "tests/test_a.py::test_renamed_since",  # gone from a file pytest collected
        "tests/test_a.py::test_slow",  # deselected by the project's addopts
        "services/api/tests/test_c.py::test_y",  # a file this run never collected
    ]
    missing = unrun(expected, ran, collected, deselected=["tests/test_a.py::test_slow[1]"])
    assert missing == ["services/api/tests/test_c.py::test_y", "tests/test_a.py::test_slow"]
