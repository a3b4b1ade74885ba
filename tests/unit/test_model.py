from __future__ import annotations

import attrs
import pytest

from guard_core.bases import BaseChoice
from guard_core.decision_json import decision_from_json
from guard_core.model import (
    ChangedFile,
    ChangedRegion,
    ChangeKind,
    ChangeSet,
    CoverEdge,
    Decision,
    FileKind,
    FileRole,
    IntegrityFlag,
    Level,
    Override,
    OverrideKind,
    Reason,
    RegionKind,
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


def _full_decision(**fields: object) -> Decision:
    cs = ChangeSet(
        base="abc123",
        files=(
            ChangedFile("pkg/a.py", FileKind.MODIFIED, FileRole.SOURCE),
            ChangedFile("pkg/b.py", FileKind.RENAMED, FileRole.SOURCE, old_path="pkg/old.py"),
        ),
        regions=(
            ChangedRegion("pkg/a.py::C.f", "pkg/a.py", ChangeKind.MODIFIED, dynamic_dispatch=True),
            ChangedRegion(
                "pkg/b.py::<module>", "pkg/b.py", ChangeKind.RENAMED, RegionKind.MODULE, "x::y"
            ),
        ),
        problems=("cannot parse pkg/c.py",),
        integrity=(IntegrityFlag("t/test_a.py", "skip-added", "test_x skipped"),),
    )
    values: dict[str, object] = {
        "level": Level.MEDIUM,
        "trust": 0.625,
        "components": TrustComponents(0.5, 1.0, 0.25),
        "tests": ("t/test_a.py::test_1", "t/test_a.py::test_2"),
        "reasons": {
            "t/test_a.py::test_1": (Reason("covers", "pkg/a.py::C.f", 0.75),),
            "t/test_a.py::test_2": (Reason("dynamic-widening", "pkg/a.py"), Reason("x", "y")),
        },
        "total_tests": 7,
        "overrides": (
            Override(OverrideKind.DYNAMIC_WIDENING, "getattr in pkg/a.py::C.f"),
            Override("a-plugin-kind", "widened by a plug-in"),
        ),
        "change_set": cs,
        "skipped_summary": "5 of 7 tests skipped",
        "elapsed_ms": 12.5,
        "evidence": BaseChoice("abc123", "the nearest evidenced commit"),
    }
    return Decision(**(values | fields))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "fields",
    [
        {},
        {"level": Level.SUBSET, "tests": (), "reasons": {}, "evidence": None},
        {"level": Level.RUN_ALL, "whole_suite": True},
        {"evidence": BaseChoice("", "the graph holds no evidence yet")},
    ],
    ids=["medium", "empty-subset", "whole-suite", "no-base"],
)
def test_a_decision_reads_back_from_its_json(fields: dict[str, object]) -> None:
    d = _full_decision(**fields)
    back = decision_from_json(d.to_json())
    assert back == d  # every field the JSON keeps, with its real type
    assert back.overrides[0].kind is OverrideKind.DYNAMIC_WIDENING


@pytest.mark.parametrize(
    "change",
    [
        {"schema": "guard.decision/2"},
        {"level": "everything"},
        {"tests": [1]},
        {"tests": "t/test_a.py::test_1"},
        {"trust": "high"},
        {"total_tests": 1e400},  # inf: no int
        {"components": {"evidence_ratio": 2.0, "freshness": 1.0, "uncertain_ratio": 0.0}},
        {"overrides": [{"kind": "store"}]},
        {"changed": {"base": "HEAD", "files": [{"path": "a.py"}], "functions": []}},
        {"reasons": []},
    ],
)
def test_anything_but_a_decision_object_is_a_value_error(change: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        decision_from_json(_full_decision().to_json() | change)
    with pytest.raises(ValueError):
        decision_from_json([_full_decision().to_json()])
