"""Charging what a context consumed: through chains and cycles of fills, once per line."""

from __future__ import annotations

from collections import defaultdict

from guard_adapters.coverage.charges import charge_consumed


def test_a_reader_gets_the_lines_of_every_fill_it_reaches_through_other_fills() -> None:
    by = defaultdict(dict)
    by["t1"] = {"a.py::f": {1}}
    by["<fill>1"] = {}
    by["<seg>1"] = {"a.py::g": {5, 6}}
    by["<seg>2"] = {"b.py::h": {9}, "data.json": {0}}
    consumed = {"t1": ["<fill>1"], "<fill>1": ["<seg>1"], "<seg>1": ["<seg>2"], "t2": []}
    spawned = {"<seg>2"}
    charge_consumed(by, consumed, spawned, ("<fill>", "<seg>"))
    assert by["t1"] == {"a.py::f": {1}, "a.py::g": {5, 6}, "b.py::h": {9}, "data.json": {0}}
    assert "t1" in spawned and "t2" not in spawned
    assert by["<seg>1"] == {"a.py::g": {5, 6}}  # charged to others, not charged itself


def test_a_cycle_charges_every_member_to_every_reader() -> None:
    by = defaultdict(dict)
    by["<memo>a"] = {"m.py::a": {1}}
    by["<memo>b"] = {"m.py::b": {2}}
    by["<memo>c"] = {"m.py::c": {3}}
    consumed = {
        "<memo>a": ["<memo>b"],
        "<memo>b": ["<memo>c"],
        "<memo>c": ["<memo>a"],
        "t": ["<memo>b"],
        "u": ["<memo>c", "t"],
    }
    charge_consumed(by, consumed, set(), ("<memo>",))
    want = {"m.py::a": {1}, "m.py::b": {2}, "m.py::c": {3}}
    assert by["t"] == want
    assert by["u"] == want
    assert by["<memo>a"] == {"m.py::a": {1}}


def test_a_context_that_reads_nothing_keeps_its_own_lines() -> None:
    by = defaultdict(dict)
    by["t"] = {"a.py::f": {3, 4}}
    charge_consumed(by, {"t": []}, set(), ())
    assert by["t"] == {"a.py::f": {3, 4}}


def test_a_long_chain_is_walked_without_recursion() -> None:
    by = defaultdict(dict)
    n = 20_000
    consumed = {f"<seg>{i}": [f"<seg>{i + 1}"] for i in range(n)}
    consumed["t"] = ["<seg>0"]
    by[f"<seg>{n}"] = {"deep.py::f": {7}}
    charge_consumed(by, consumed, set(), ("<seg>",))
    assert by["t"] == {"deep.py::f": {7}}


def test_own_lines_are_what_a_context_ran_itself_and_the_fills_given_to_them() -> None:
    by = defaultdict(dict)
    by["t1"] = {"a.py::f": {1}}
    by["<memo>m"] = {"a.py::m": {2}}  # run in a fill: its lines were seen there, not in t1
    by["<seg>1"] = {"a.py::g": {3}}
    by["<memo>n"] = {"a.py::n": {4}}  # read by t1, not run in its stead
    consumed = {
        "t1": ["<memo>m", "<seg>1", "<memo>n"],
        "<own>t1": ["<memo>m"],
        "<fill>1": ["<own>t1"],
        "t2": ["<fill>1"],
    }
    charge_consumed(by, consumed, set(), ("<memo>", "<seg>", "<fill>", "<own>"), "<own>")
    assert by["t2"] == {"a.py::f": {1}, "a.py::m": {2}}
    assert "<own>t1" not in by  # a part of t1, not a context
