"""Which collected items a selection stands for, in a measured run that collects everything."""

from __future__ import annotations

from guard_adapters.pytest.node_ids import belongs_to, unmatched

ITEMS = [
    "tests/test_a.py::test_one",
    "tests/test_a.py::test_p[1]",
    "tests/test_a.py::test_p[2]",
    "tests/test_b.py::TestK::test_m",
]


def test_an_id_selects_itself_its_parametrisations_and_what_a_file_or_class_holds() -> None:
    kept = {n for n in ITEMS if belongs_to(n, {"tests/test_a.py::test_p"})}
    assert kept == {"tests/test_a.py::test_p[1]", "tests/test_a.py::test_p[2]"}
    assert belongs_to("tests/test_b.py::TestK::test_m", {"tests/test_b.py::TestK"})
    assert belongs_to("tests/test_b.py::TestK::test_m", {"tests/test_b.py"})
    assert not belongs_to("tests/test_a.py::test_one", {"tests/test_a.py::test_on"})
    assert not belongs_to("tests/test_a.py::test_p[1]", {"tests/test_a.py::test_p[2]"})


def test_ids_that_no_item_stands_for_are_named() -> None:
    wanted = {"tests/test_a.py::test_p", "tests/test_b.py::TestK", "tests/test_a.py::test_gone",
              "tests/test_c.py", "tests/test_a.py::test_p[3]"}  # fmt: skip
    assert unmatched(wanted, ITEMS) == [
        "tests/test_a.py::test_gone",
        "tests/test_a.py::test_p[3]",
        "tests/test_c.py",
    ]
    assert unmatched(set(), ITEMS) == []
