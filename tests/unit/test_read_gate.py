"""Line-gated reads: which of a reader's tests ran a line that makes its read."""

from __future__ import annotations

from guard_core.model import CoverEdge
from guard_core.selection import gated_edges, read_lines_of
from guard_core.testing import FakeStore


def edge(test: str, lines: set[int]) -> CoverEdge:
    return CoverEdge("m.py::f", test, lines=frozenset(lines))


def test_an_edge_that_never_ran_the_reading_line_is_dropped() -> None:
    edges = [edge("t1", {1, 2}), edge("t2", {1, 5}), edge("unknown", set())]
    kept = [e.test for e in gated_edges(edges, frozenset({5, 6}))]
    assert kept == ["t2", "unknown"]  # an edge without lines keeps its test
    assert len(gated_edges(edges, None)) == 3 and len(gated_edges(edges, frozenset())) == 3


def test_a_reader_is_gated_only_when_every_read_has_lines() -> None:
    store = FakeStore(
        lines_read={
            "m.py::f": {"pkg.X": frozenset({3}), ".y": frozenset({7, 8})},
            "m.py::g": {"pkg.X": frozenset({4})},
            "n.py::h": {"pkg.X": frozenset({9})},
        }
    )
    reads = {
        "m.py::f": {"pkg.X", ".y"},
        "m.py::g": {"pkg.X", "pkg.X.*"},  # a star-bound name: no lines
        "n.py::h": {"pkg.X"},
        "m.py::k": {"pkg.X"},  # nothing indexed
    }
    gate = read_lines_of(store, reads, ungated=set(), changed_files=frozenset())
    assert gate == {"m.py::f": frozenset({3, 7, 8}), "n.py::h": frozenset({9})}
    assert "n.py::h" not in read_lines_of(store, reads, set(), frozenset({"n.py"}))
    assert "m.py::f" not in read_lines_of(store, reads, {"m.py::f"}, frozenset())
