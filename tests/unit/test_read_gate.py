"""Line-gated reads: which of a reader's tests ran a line that makes its read."""

from __future__ import annotations

from guard_core.index_model import INTROSPECTED
from guard_core.model import CoverEdge
from guard_core.selection import gated_edges, read_lines_of
from guard_core.testing import FakeStore

SIGNATURE_REF = f".{INTROSPECTED}"


def edge(test: str, lines: set[int]) -> CoverEdge:
    return CoverEdge("m.py::f", test, lines=frozenset(lines))


def test_an_edge_that_never_ran_the_reading_line_is_dropped() -> None:
    edges = [edge("t1", {1, 2}), edge("t2", {1, 5}), edge("unknown", set())]
    reads = {".x": frozenset({5}), ".y": frozenset({6})}
    kept = [e.test for e in gated_edges(edges, {".x", ".y"}, reads)]
    assert kept == ["t2", "unknown"]  # an edge without lines keeps its test
    assert len(gated_edges(edges, {".x", ".y"}, None)) == 3


def test_a_test_makes_only_the_reads_whose_lines_it_ran() -> None:
    """``inspect.signature(func)`` on line 3, recorded; ``func.__signature__`` on line 9, a
    plain read, in a fallback branch. A test that ran only line 3 is judged by what its run
    introspected; one that ran line 9 read the attribute, whatever it introspected."""
    refs = {SIGNATURE_REF, ".__signature__"}
    reads = {SIGNATURE_REF: frozenset({3}), ".__signature__": frozenset({9})}
    other = frozenset({"=pkg.m.other"})
    edges = [
        CoverEdge("m.py::f", "t_other", lines=frozenset({2, 3}), names=other),
        CoverEdge("m.py::f", "t_changed", lines=frozenset({3}), names=frozenset({"=pkg.m.g"})),
        CoverEdge("m.py::f", "t_fallback", lines=frozenset({3, 9}), names=other),
        CoverEdge("m.py::f", "t_no_lines", names=other),
    ]
    changed = {"pkg.m.g.__signature__"}
    kept = [e.test for e in gated_edges(edges, refs, reads, changed)]
    assert kept == ["t_changed", "t_fallback", "t_no_lines"]
    # the reads as a whole, without lines: the plain read makes every test a reader
    assert len(gated_edges(edges, refs, None, changed)) == 4


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
    assert gate == {
        "m.py::f": {"pkg.X": frozenset({3}), ".y": frozenset({7, 8})},
        "n.py::h": {"pkg.X": frozenset({9})},
    }
    assert "n.py::h" not in read_lines_of(store, reads, set(), frozenset({"n.py"}))
    assert "m.py::f" not in read_lines_of(store, reads, {"m.py::f"}, frozenset())
