"""Line-level evidence: which of a function's tests can observe a change in its body."""

from __future__ import annotations

import textwrap

import pytest

from guard_adapters.python.hunks import function_hunks
from guard_adapters.python.regions import extract_regions
from guard_core.lines import line_mapping, observers, observing_lines, remap_edge_lines
from guard_core.model import CoverEdge, Hunk

# def f(x):          1
#     y = x + 1      2
#     if x > 0:      3
#         y = 2 * y  4   <- only tests with x > 0
#     z = y - 1      5
#     return z       6
A = CoverEdge("m.py::f", "t_pos", lines=frozenset({2, 3, 4, 5, 6}))
B = CoverEdge("m.py::f", "t_neg", lines=frozenset({2, 3, 5, 6}))
C = CoverEdge("m.py::f", "t_unknown")  # no line data: always kept


def chosen(*hunks: Hunk) -> set[str]:
    return {e.test for e in observers([A, B, C], hunks)}


@pytest.mark.parametrize(
    ("hunks", "expected"),
    [
        ((Hunk(4, 5, opens_paths=False),), {"t_pos", "t_unknown"}),  # edit inside the branch
        ((Hunk(5, 6, opens_paths=False),), {"t_pos", "t_neg", "t_unknown"}),  # shared line
        ((Hunk(4, 4),), {"t_pos", "t_neg", "t_unknown"}),  # insertion before line 4: 3 and 4
        ((Hunk(5, 5),), {"t_pos", "t_neg", "t_unknown"}),  # insertion after the branch
        ((Hunk(4, 5, opens_paths=True),), {"t_pos", "t_neg", "t_unknown"}),  # dedents out
        ((Hunk(7, 7),), {"t_pos", "t_neg", "t_unknown"}),  # at the tail: everyone
        ((), {"t_pos", "t_neg", "t_unknown"}),  # no hunks known: everyone
    ],
)
def test_observers(hunks: tuple[Hunk, ...], expected: set[str]) -> None:
    assert chosen(*hunks) == expected


def test_an_unexecuted_first_line_needs_the_neighbours() -> None:
    # line 4 replaced, but no test ran it: tests passing lines 3 and 5 may reach the new code
    lines = observing_lines([Hunk(4, 5, opens_paths=False)], {2, 3, 5, 6})
    assert lines == {3, 4, 5}


def test_no_line_data_at_all_means_every_test() -> None:
    assert observing_lines([Hunk(4, 5)], ()) is None
    assert {e.test for e in observers([C], [Hunk(4, 5)])} == {"t_unknown"}


OLD = """\
def f(x):
    y = x + 1
    if x > 0:
        y = 2 * y
    z = y - 1
    return z
"""


def hunks(new: str) -> tuple[Hunk, ...]:
    before = extract_regions("m.py", OLD).regions["m.py::f"]
    after = extract_regions("m.py", textwrap.dedent(new)).regions["m.py::f"]
    return function_hunks(before, after)


@pytest.mark.parametrize(
    ("new", "expected"),
    [
        (OLD.replace("2 * y", "3 * y"), (Hunk(4, 5, opens_paths=False),)),
        (OLD.replace("    z = y - 1\n", ""), (Hunk(5, 6, opens_paths=False),)),
        (OLD.replace("    z = y - 1\n", "    y += 1\n    z = y - 1\n"), (Hunk(5, 5),)),
        (OLD.replace("        y = 2 * y\n", "        y = 2 * y\n    y = 0\n"), (Hunk(5, 5),)),
        (
            OLD.replace("        y = 2 * y\n", "        pass\n    y = 2 * y\n"),
            (Hunk(4, 5, opens_paths=True),),
        ),
        (OLD.replace("    return z\n", "    # done\n    return z\n"), ()),  # comment only
        (OLD.replace("        y = 2 * y\n", "        y = 2 * y\n    else:\n        y = 0\n"), ()),
    ],
)
def test_function_hunks(new: str, expected: tuple[Hunk, ...]) -> None:
    assert hunks(new) == expected


SOURCE = ["a = 1", "def f():", "    x = 1", "    return x", "", "def g():", "    return 2"]


@pytest.mark.parametrize(
    ("new", "recorded", "expected"),
    [
        # two lines inserted above: the recorded lines move down by two
        (["import os", "import re", *SOURCE], {3, 4}, {5, 6}),
        # the first line deleted: they move up
        (SOURCE[1:], {6, 7}, {5, 6}),
        # a recorded line itself replaced: what runs there now is unknown
        ([*SOURCE[:2], "    x = 2", *SOURCE[3:]], {3, 4}, set()),
        # a change elsewhere leaves them as they were
        ([*SOURCE[:6], "    return 3"], {3, 4}, {3, 4}),
        # no recorded lines stays unknown
        (["# c", *SOURCE], set(), set()),
    ],
)
def test_recorded_lines_follow_the_diff(
    new: list[str], recorded: set[int], expected: set[int]
) -> None:
    mapping = line_mapping(SOURCE, new)
    assert remap_edge_lines(frozenset(recorded), mapping) == frozenset(expected)


ELIF = """\
def g(x):
    if x > 0:
        y = 1
    elif x < -5:
        y = 2
    else:
        y = 3
    return y
"""


@pytest.mark.parametrize(
    ("new", "expected"),
    [
        # only the elif's condition: the tests that evaluated it ran line 4
        (ELIF.replace("elif x < -5:", "elif not (x < -5):"), (Hunk(4, 5, opens_paths=False),)),
        # the clause itself changes kind or moves: the whole function
        (ELIF.replace("    elif x < -5:\n        y = 2\n", ""), ()),
        (ELIF.replace("    else:\n", "    elif x == 0:\n"), ()),
    ],
)
def test_an_elif_condition_is_placed_on_its_line(new: str, expected: tuple[Hunk, ...]) -> None:
    before = extract_regions("m.py", ELIF).regions["m.py::g"]
    after = extract_regions("m.py", new).regions["m.py::g"]
    assert function_hunks(before, after) == expected
