"""Integrity flags for test-file edits: the ways an agent can make a suite pass by changing it."""

from __future__ import annotations

import pytest

from guard_adapters.python.integrity import integrity_flags

BASE = (
    "import pytest\n\n\n"
    "def test_a():\n    assert f(1) == 2\n    assert f(2) == 3\n\n\n"
    "class TestB:\n    def test_b(self):\n        with pytest.raises(ValueError):\n"
    "            f(-1)\n"
)


def kinds(new: str | None, old: str = BASE) -> set[str]:
    return {
        flag.kind
        for flag in integrity_flags(
            "tests/test_x.py", old.encode(), None if new is None else new.encode()
        )
    }


@pytest.mark.parametrize(
    ("new", "expected"),
    [
        (BASE, set()),
        (BASE + "\n\ndef test_c():\n    assert g()\n", set()),  # a new test is fine
        (BASE.replace("    assert f(1) == 2\n", "    assert f(1) == 2  # checked\n"), set()),
        (BASE.replace("    assert f(2) == 3\n", ""), {"assertions-weakened"}),
        (BASE.replace("assert f(1) == 2", "assert True"), {"assertions-weakened"}),
        (
            BASE.replace("with pytest.raises(ValueError):\n            f(-1)", "f(-1)"),
            {"assertions-weakened"},
        ),
        (BASE.replace("def test_a", "@pytest.mark.skip\ndef test_a"), {"skip-added"}),
        (BASE.replace("def test_a", "@pytest.mark.xfail(reason='x')\ndef test_a"), {"skip-added"}),
        (
            BASE.replace(
                "        with pytest", "        pytest.skip('later')\n        with pytest"
            ),
            {"skip-added"},
        ),
        (BASE + "\npytestmark = pytest.mark.skip\n", {"skip-added"}),
        (BASE.split("\n\nclass")[0] + "\n", {"tests-removed"}),
        (None, {"tests-removed"}),  # the file was deleted
        ("def broken(:\n", set()),  # unparsable: the slicer already widens to run-all
    ],
)
def test_flags(new: str | None, expected: set[str]) -> None:
    assert kinds(new) == expected


def test_the_detail_names_the_tests() -> None:
    flags = integrity_flags(
        "t.py", BASE.encode(), BASE.replace("def test_a", "@pytest.mark.skip\ndef test_a").encode()
    )
    assert flags[0].file == "t.py" and "test_a" in flags[0].detail


def test_a_new_file_has_nothing_to_compare() -> None:
    assert integrity_flags("t.py", None, BASE.encode()) == []
