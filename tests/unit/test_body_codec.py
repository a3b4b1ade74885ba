"""A body's statements survive the store's string encoding, and what does not parse widens."""

from __future__ import annotations

from guard_adapters.falkordb.codec import decode_body, encode_bindings, encode_reads
from guard_core.index_model import StatementBinding, StatementRead


def test_bindings_and_reads_round_trip_by_statement_index() -> None:
    bindings = (StatementBinding(("A", "B"), False), StatementBinding((), True))
    reads = (StatementRead(1, "pkg.m.X"), StatementRead(0, "os.path"))
    body = decode_body(encode_bindings(bindings), encode_reads(reads))
    assert body.bindings == bindings
    assert set(body.reads) == set(reads)
    assert body.binding(0) == StatementBinding(("A", "B"), False)
    assert body.binding(2) is None and body.binding(-1) is None


def test_entries_that_do_not_parse_never_narrow() -> None:
    body = decode_body(["0\tA\t0", "2\tC", "x\tD\t0"], ["1\tpkg.X", "?\tpkg.Y"])
    assert body.binding(0) == StatementBinding(("A",), False)
    assert body.binding(1) is None  # missing: unknown
    binding = body.binding(2)
    assert binding is not None and binding.side_effects  # truncated: may do anything
    assert StatementRead(-1, "pkg.Y") in body.reads  # kept: bound to no known statement


def test_edge_lines_round_trip_and_unreadable_values_are_unknown() -> None:
    from guard_adapters.falkordb.codec import decode_lines, encode_lines

    assert encode_lines({9, 3, 4, 5}) == "3-5,9"
    assert decode_lines("3-5,9") == {3, 4, 5, 9}
    assert decode_lines("3-5,9") == {3, 4, 5, 9}  # a cached answer is the same
    for bad in (None, "", "3-x", [3, 4], 7):  # unknown: every line may have run
        assert decode_lines(bad) == frozenset()
