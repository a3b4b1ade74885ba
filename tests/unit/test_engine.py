"""The decision engine and the default policy on in-memory fakes."""

from __future__ import annotations

from pathlib import Path

import attrs
import pytest

from guard_core.config import Settings
from guard_core.engine import Engine
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
    RegionKind,
)
from guard_core.policy import DefaultTrustPolicy
from guard_core.ports import FunctionFacts
from guard_core.testing import FakeSlicer, FakeStore
from guard_core.variant import Variant

F = "pkg/a.py::f"
G = "pkg/a.py::g"
MOD = "pkg/a.py::<module>"
TESTS = ["t/test_a.py::test_1", "t/test_a.py::test_2", "t/test_b.py::test_3"]


def change(*regions: ChangedRegion, files: tuple[ChangedFile, ...] | None = None) -> ChangeSet:
    files = (
        files
        if files is not None
        else (ChangedFile("pkg/a.py", FileKind.MODIFIED, FileRole.SOURCE),)
    )
    return ChangeSet(base="base", files=files, regions=regions)


def region(fid: str = F, **kw: object) -> ChangedRegion:
    return ChangedRegion(id=fid, file="pkg/a.py", kind=kw.pop("kind", ChangeKind.MODIFIED), **kw)  # type: ignore[arg-type]


def store(**kw: object) -> FakeStore:
    s = FakeStore(
        edges=[CoverEdge(F, TESTS[0], confidence=1.0, last_verified_sha="base"),
               CoverEdge(F, TESTS[2], confidence=1.0, last_verified_sha="base")],
        functions={F: FunctionFacts(F, "pkg/a.py", False, False),
                   G: FunctionFacts(G, "pkg/a.py", True, False),
                   MOD: FunctionFacts(MOD, "pkg/a.py", False, False)},
        tests=list(TESTS),
    )  # fmt: skip
    return attrs.evolve(s, **kw)


def engine(cs: ChangeSet, st: FakeStore | None = None, policies: list[object] | None = None,
           **variant: bool) -> Engine:  # fmt: skip
    return Engine(
        Settings(repo=Path(".")),
        st or store(),
        FakeSlicer(cs),  # type: ignore[arg-type]
        policies if policies is not None else [DefaultTrustPolicy()],
        variant=Variant(**variant),
    )


def test_covering_tests_are_the_subset() -> None:
    d = engine(change(region())).check()
    assert d.level is Level.SUBSET and d.tests == (TESTS[0], TESTS[2])
    assert d.trust == pytest.approx(1.0)


def test_low_confidence_drops_to_medium_and_adds_module_tests() -> None:
    st = store(
        edges=[
            CoverEdge(F, TESTS[0], confidence=0.4, last_verified_sha="base"),
            CoverEdge(G, TESTS[1], confidence=1.0, last_verified_sha="base"),
        ]
    )
    d = engine(change(region()), st).check()
    assert d.trust == pytest.approx(0.5 * 0.4 + 0.3 + 0.2)
    assert d.level is Level.MEDIUM
    assert set(d.tests) == {TESTS[0], TESTS[1]}
    assert engine(change(region()), st, use_confidence=False).check().level is Level.SUBSET


def test_stale_edges_lower_freshness() -> None:
    st = store(edges=[CoverEdge(F, TESTS[0], last_verified_sha="old")])
    d = engine(change(region()), st).check()
    assert d.components.freshness == 0.0 and d.level is Level.MEDIUM


def test_function_unknown_to_the_graph_is_run_all() -> None:
    d = engine(change(region("pkg/a.py::new_but_modified"))).check()
    assert d.level is Level.RUN_ALL and [o.kind for o in d.overrides] == ["no_evidence"]
    assert d.tests == tuple(TESTS)


def test_unexercised_function_needs_a_complete_ingest() -> None:
    assert engine(change(region(G))).check().tests == ()
    incomplete = store(info=attrs.evolve(store().info, coverage_complete=False))
    assert engine(change(region(G)), incomplete).check().level is Level.RUN_ALL


def test_no_edges_in_a_module_never_imported_under_measurement_is_not_proof() -> None:
    st = store()
    st.functions[MOD] = FunctionFacts(MOD, "pkg/a.py", True, False)  # run only in a child?
    d = engine(change(region(G)), st).check()
    assert d.level is Level.RUN_ALL and [o.kind for o in d.overrides] == ["no_evidence"]


def test_tests_that_start_python_children_are_selected_for_any_code_change() -> None:
    st = store(spawners=[TESTS[1]])
    d = engine(change(region(G)), st).check()
    assert d.tests == (TESTS[1],) and d.reasons[TESTS[1]][0].rule == "spawns-python"
    assert TESTS[1] in engine(change(region()), st).check().tests
    assert engine(change(), st).check().tests == ()  # a comment-only edit changes no code


def test_no_evidence_at_all_is_run_all() -> None:
    empty = store(info=attrs.evolve(store().info, coverage_sha=None, coverage_complete=False))
    d = engine(change(region()), empty).check()
    assert d.level is Level.RUN_ALL and "ingest-coverage" in d.overrides[0].detail


def test_environment_files_are_run_all() -> None:
    files = (ChangedFile("x", FileKind.MODIFIED, FileRole.ENVIRONMENT),)
    assert engine(change(files=files)).check().level is Level.RUN_ALL


@pytest.mark.parametrize("role", [FileRole.TEST, FileRole.CONFTEST])
def test_test_files_are_run_all_only_under_the_seed_policy(role: FileRole) -> None:
    files = (ChangedFile("t/x.py", FileKind.MODIFIED, role),)
    assert engine(change(files=files), seed_policy=True).check().level is Level.RUN_ALL
    assert engine(change(files=files)).check().level is Level.SUBSET


def test_problem_in_change_set_is_run_all() -> None:
    cs = attrs.evolve(change(region()), problems=("pkg/a.py does not parse",))
    d = engine(cs).check()
    assert d.level is Level.RUN_ALL and d.overrides[0].kind == "unreadable_change"


class BrokenCovering(FakeStore):
    def covering_tests(self, function_ids: object, min_confidence: float = 0.0) -> list[CoverEdge]:
        raise RuntimeError("socket closed")


def test_store_failure_mid_decision_is_run_all_with_reason() -> None:
    base = store()
    st = BrokenCovering(edges=base.edges, functions=base.functions, tests=base.tests)
    d = engine(change(region()), st).check()
    assert d.level is Level.RUN_ALL and d.overrides[-1].kind == "internal_error"
    assert "socket closed" in d.overrides[-1].detail
    assert d.tests == tuple(TESTS)


class Raising:
    name = "raising"

    def vote(self, data: object) -> None:
        raise ValueError("bad policy")


def test_a_policy_that_raises_votes_run_all() -> None:
    d = engine(change(region()), policies=[DefaultTrustPolicy(), Raising()]).check()
    assert d.level is Level.RUN_ALL
    assert any(o.kind == "policy_error" and "bad policy" in o.detail for o in d.overrides)


def test_no_policy_at_all_is_run_all() -> None:
    assert engine(change(region()), policies=[]).check().level is Level.RUN_ALL


class Narrowing:
    def extra_votes(self, data: object) -> list[object]:
        return []

    def selection_rules(self) -> list[object]:
        return []

    def adjust_decision(self, decision: Decision, data: object) -> list[Decision]:
        return [attrs.evolve(decision, tests=())]


def test_plugins_cannot_narrow_a_decision() -> None:
    e = engine(change(region()))
    e.plugins = Narrowing()
    assert e.check().tests == (TESTS[0], TESTS[2])


def test_dynamic_dispatch_with_incomplete_evidence_widens_without_forcing_run_all() -> None:
    st = store(edges=[CoverEdge(F, TESTS[0], confidence=0.5, last_verified_sha="base"),
                      CoverEdge("pkg/a.py::h", TESTS[1], last_verified_sha="base")],
               functions={**store().functions, "pkg/a.py::h": FunctionFacts(
                   "pkg/a.py::h", "pkg/a.py", False, False)})  # fmt: skip
    d = engine(change(region(dynamic_dispatch=True)), st).check()
    assert "dynamic_widening" in [o.kind for o in d.overrides]
    assert d.components.uncertain_ratio == 1.0
    assert TESTS[1] in d.tests and d.level is not Level.RUN_ALL
    plain = engine(change(region(dynamic_dispatch=True)), st, widening=False).check()
    assert "dynamic_widening" not in [o.kind for o in plain.overrides]


def test_dynamic_dispatch_with_complete_evidence_selects_its_covering_tests_only() -> None:
    d = engine(change(region(dynamic_dispatch=True))).check()
    assert d.overrides == () and d.tests == (TESTS[0], TESTS[2])
    assert d.trust == pytest.approx(0.8) and d.level is Level.SUBSET  # 0.5 + 0.3 + 0
    seed = engine(change(region(dynamic_dispatch=True)), seed_policy=True).check()
    assert "dynamic_widening" in [o.kind for o in seed.overrides]


def test_empty_change_runs_nothing() -> None:
    d = engine(ChangeSet(base="base")).check()
    assert d.level is Level.SUBSET and d.tests == () and d.total_tests == 3


def test_module_change_with_side_effects_uses_import_time_evidence() -> None:
    mod = "pkg/a.py::<module>"
    st = store(edges=[CoverEdge(mod, t, last_verified_sha="base") for t in TESTS])
    st.functions[mod] = FunctionFacts(mod, "pkg/a.py", False, False)
    r = region(
        mod,
        region=RegionKind.MODULE,
        body_changed=False,
        definition_changed=True,
        side_effects=True,
    )
    d = engine(change(r), st).check()
    assert set(d.tests) == set(TESTS)
    assert all(d.reasons[t][0].rule == "import-time-code" for t in TESTS)


def _constant_change() -> ChangeSet:
    r = region("pkg/a.py::<module>", region=RegionKind.MODULE, body_changed=False,
               definition_changed=True, names=("pkg.a.LIMIT",))  # fmt: skip
    return change(r)


def _readers_store(dynamic: bool) -> FakeStore:
    holder, reader = "t/conftest.py::ns", "pkg/b.py::uses"
    st = store(
        edges=[CoverEdge(MOD, t, last_verified_sha="base") for t in TESTS]
        + [CoverEdge(holder, t, last_verified_sha="base") for t in TESTS]
        + [CoverEdge(reader, TESTS[1], last_verified_sha="base")],
        modules=["pkg", "pkg.a"],
        refs={holder: ["pkg"], reader: ["pkg.a.LIMIT"]},
    )
    st.functions[holder] = FunctionFacts(holder, "t/conftest.py", False, dynamic)
    return st  # fmt: skip


def test_holding_a_module_object_reads_none_of_its_names() -> None:
    d = engine(_constant_change(), _readers_store(dynamic=False)).check()
    assert d.tests == (TESTS[1],)
    assert d.reasons[TESTS[1]][0].rule == "reads-changed-name"


def test_holding_a_module_object_with_dynamic_access_reads_all_of_it() -> None:
    assert engine(_constant_change(), _readers_store(dynamic=True)).check().tests == tuple(TESTS)


def test_doctest_items_are_selected_for_definition_time_changes() -> None:
    st = _readers_store(dynamic=False)
    st.doctests = [TESTS[2]]
    d = engine(_constant_change(), st).check()
    assert d.tests == (TESTS[1], TESTS[2]) and d.reasons[TESTS[2]][0].rule == "doctest"
