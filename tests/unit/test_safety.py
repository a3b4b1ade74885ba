"""The engine's non-negotiable rules: overrides no policy can remove, plug-ins that can only
widen, and a run-all that a consumer can follow."""

from __future__ import annotations

import attrs

from guard_core.model import (
    ChangedFile,
    ChangeSet,
    Decision,
    Dependent,
    FileKind,
    FileRole,
    Level,
    Reason,
    TrustComponents,
)
from guard_core.ports import PolicyInput, Vote
from guard_core.testing import FakeStore
from tests.unit.test_engine import TESTS, change, engine, region, store


class VotesSubset:
    name = "mine"

    def vote(self, data: PolicyInput) -> Vote:
        return Vote(Level.SUBSET, 1.0, TrustComponents(1.0, 1.0, 0.0), (), self.name)


def test_a_policy_voting_subset_cannot_remove_a_hard_override() -> None:
    files = (
        ChangedFile("t/test_a.py", FileKind.MODIFIED, FileRole.TEST, collects=True),
        ChangedFile("t/conftest.py", FileKind.MODIFIED, FileRole.CONFTEST),
        ChangedFile("pyproject.toml", FileKind.MODIFIED, FileRole.ENVIRONMENT),
    )
    d = engine(change(files=files), policies=[VotesSubset()]).check()
    assert d.level is Level.RUN_ALL
    assert "environment" in {o.kind for o in d.overrides}
    assert set(d.tests) >= {"t/test_a.py", TESTS[2]}


def test_a_policy_voting_subset_cannot_skip_a_function_without_evidence() -> None:
    d = engine(change(region("pkg/a.py::unknown")), policies=[VotesSubset()]).check()
    assert d.level is Level.RUN_ALL and [o.kind for o in d.overrides] == ["no_evidence"]


class Adds:
    """A ``guard_adjust_decision`` plug-in facade: each proposal adds one test."""

    def __init__(self, *proposals: object) -> None:
        self.proposals = proposals

    def extra_votes(self, data: object) -> list[object]:
        return []

    def selection_rules(self) -> list[object]:
        return []

    def adjust_decision(self, decision: Decision, data: object) -> list[object]:
        out = []
        for p in self.proposals:
            if callable(p):
                out.append(p(decision))
        return out


def _plus(test: str):  # type: ignore[no-untyped-def]
    return lambda d: attrs.evolve(
        d, tests=(*d.tests, test), reasons={**d.reasons, test: (Reason("team", "always"),)}
    )


def test_two_plugins_adding_tests_both_stand() -> None:
    e = engine(change(region()))
    e.plugins = Adds(_plus("t/test_x.py::a"), _plus("t/test_y.py::b"))
    d = e.check()
    assert {"t/test_x.py::a", "t/test_y.py::b", TESTS[0], TESTS[2]} <= set(d.tests)
    assert d.reasons["t/test_x.py::a"][0].rule == "team"


def test_a_proposal_that_drops_an_override_or_raises_trust_is_refused() -> None:
    e = engine(change(region(dynamic_dispatch=True)), seed_policy=True)
    base = e.check()
    assert base.overrides
    e.plugins = Adds(
        lambda d: attrs.evolve(d, overrides=(), tests=(*d.tests, "t/test_z.py::z")),
        lambda d: attrs.evolve(d, trust=1.0, tests=(*d.tests, "t/test_w.py::w")),
    )
    d = e.check()
    assert "t/test_z.py::z" not in d.tests and "t/test_w.py::w" not in d.tests
    assert d.overrides == base.overrides


def test_run_all_lists_new_and_changed_test_files_by_path() -> None:
    files = (
        ChangedFile("t/test_new.py", FileKind.ADDED, FileRole.TEST, collects=True),
        ChangedFile("t/test_a.py", FileKind.MODIFIED, FileRole.TEST, collects=True),
        ChangedFile("pyproject.toml", FileKind.MODIFIED, FileRole.ENVIRONMENT),
    )
    d = engine(change(files=files)).check()
    assert d.level is Level.RUN_ALL and not d.whole_suite
    assert d.tests == ("t/test_a.py", TESTS[2], "t/test_new.py")
    assert d.to_json()["tests"] == list(d.tests)


def test_run_all_without_a_graph_means_the_whole_suite() -> None:
    d = engine(change(region()), FakeStore(fail=RuntimeError("down"))).check()
    assert d.level is Level.RUN_ALL and d.whole_suite
    assert d.to_json()["tests"] is None


def test_run_all_on_partial_evidence_means_the_whole_suite() -> None:
    partial = store(info=attrs.evolve(store().info, coverage_complete=False))
    d = engine(change(region()), partial).check()
    assert d.level is Level.RUN_ALL and d.to_json()["tests"] is None


def test_a_new_test_file_is_selected_by_path_in_a_subset() -> None:
    files = (
        ChangedFile("pkg/a.py", FileKind.MODIFIED, FileRole.SOURCE),
        ChangedFile("t/test_new.py", FileKind.ADDED, FileRole.TEST, collects=True),
    )
    cs = change(region(), files=files)
    d = engine(cs).check()
    assert "t/test_new.py" in d.tests


def test_code_naming_a_new_module_selects_its_tests() -> None:
    cs = attrs.evolve(
        ChangeSet(base="base", files=(ChangedFile("pkg/extra.py", FileKind.ADDED,
                                                  FileRole.SOURCE),)),
        dependents=(Dependent("pkg/a.py::f", "pkg/a.py:3 names pkg/extra.py"),),
    )  # fmt: skip
    d = engine(cs).check()
    assert d.tests == (TESTS[0], TESTS[2])
    assert d.reasons[TESTS[0]][0].rule == "names-new-module"


def test_a_shadowing_module_is_run_all() -> None:
    cs = ChangeSet(
        base="base",
        files=(ChangedFile("t/json.py", FileKind.ADDED, FileRole.TEST),),
        hazards=("new module t/json.py shadows the importable name 'json'",),
    )
    d = engine(cs).check()
    assert d.level is Level.RUN_ALL and d.overrides[0].kind == "shadowing"


def test_run_all_of_a_project_with_doctests_runs_new_modules_as_files() -> None:
    files = (
        ChangedFile("pkg/new.py", FileKind.ADDED, FileRole.SOURCE),
        ChangedFile("pyproject.toml", FileKind.MODIFIED, FileRole.ENVIRONMENT),
    )
    st = store()
    assert "pkg/new.py" not in engine(change(files=files), st).check().tests  # no doctests
    st.doctests = [TESTS[2]]
    d = engine(change(files=files), st).check()
    assert d.level is Level.RUN_ALL and "pkg/new.py" in d.tests and not d.whole_suite
