from __future__ import annotations

import attrs
import pytest

from guard_core.model import (
    ChangedFile,
    ChangedRegion,
    ChangeKind,
    ChangeSet,
    CoverEdge,
    Decision,
    FileKind,
    FileRole,
    Level,
    Reason,
    TrustComponents,
    split_id,
)


def test_trust_formula_weights() -> None:
    assert TrustComponents(1.0, 1.0, 0.0).trust == pytest.approx(1.0)
    assert TrustComponents(0.0, 0.0, 1.0).trust == pytest.approx(0.0)
    assert TrustComponents(0.6, 0.5, 0.25).trust == pytest.approx(0.3 + 0.15 + 0.15)


def test_levels_order_from_narrow_to_wide() -> None:
    levels = [Level.RUN_ALL, Level.SUBSET, Level.MEDIUM]
    assert sorted(levels, key=lambda level: level.rank) == [
        Level.SUBSET,
        Level.MEDIUM,
        Level.RUN_ALL,
    ]


def test_values_are_frozen_and_validated() -> None:
    edge = CoverEdge("a.py::f", "t.py::test")
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        edge.confidence = 0.1  # type: ignore[misc]
    with pytest.raises(ValueError, match="within"):
        CoverEdge("a.py::f", "t.py::test", confidence=1.5)
    with pytest.raises(ValueError, match="empty"):
        ChangedFile(path="", kind=FileKind.ADDED, role=FileRole.SOURCE)


def test_split_id_keeps_colons_in_params() -> None:
    assert split_id("tests/t.py::TestX::test_y[a::b]") == ("tests/t.py", "TestX::test_y[a::b]")
    assert split_id("data/x.json") == ("data/x.json", "")


def test_decision_json_has_the_contract_keys() -> None:
    cs = ChangeSet(
        base="HEAD",
        files=(ChangedFile("a.py", FileKind.MODIFIED, FileRole.SOURCE),),
        regions=(ChangedRegion("a.py::f", "a.py", ChangeKind.MODIFIED),),
    )
    d = Decision(
        level=Level.SUBSET,
        trust=0.9,
        components=TrustComponents(1, 1, 0.5),
        tests=("t.py::test_a",),
        reasons={"t.py::test_a": (Reason("covers", "a.py::f", 0.75),)},
        total_tests=3,
        change_set=cs,
    )
    out = d.to_json()
    assert out["schema"] == "guard.decision/1"
    assert {
        "level",
        "trust",
        "components",
        "overrides",
        "changed",
        "tests",
        "reasons",
        "total_tests",
        "elapsed_ms",
    } <= set(out)
    assert out["changed"]["functions"] == [
        {"id": "a.py::f", "kind": "modified", "region": "function"}
    ]
    assert out["reasons"]["t.py::test_a"] == [
        {"rule": "covers", "via": "a.py::f", "confidence": 0.75}
    ]


def test_failure_signature_ignores_where_the_lines_moved_but_not_what_failed() -> None:
    from guard_core.model import failure_signature

    at_base = (
        "    def f():\n>       raise RuntimeError('x')\nE       RuntimeError: x\n\n"
        "src/m.py:12: RuntimeError"
    )
    moved = at_base.replace("src/m.py:12", "src/m.py:15")
    other = at_base.replace("RuntimeError: x", "ZeroDivisionError: division by zero")
    assert failure_signature(at_base) == failure_signature(moved) == "E       RuntimeError: x"
    assert failure_signature(other) != failure_signature(at_base)
    assert failure_signature("no E lines\nlast line\n") == "last line"


def test_evidence_carried_through_refreshes_stays_fresh_only_at_the_current_base() -> None:
    from guard_core.model import IngestInfo

    info = IngestInfo.from_mapping({"coverage_sha": "c3", "lineage": ["c1", "c2"]})
    assert info.fresh_shas("c3") == {"c1", "c2", "c3"}
    assert info.fresh_shas("other") == {"other"}  # a --base of the user's: no carry-over
    assert IngestInfo.from_mapping({"lineage": "garbage"}).lineage == ()
