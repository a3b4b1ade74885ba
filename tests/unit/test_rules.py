"""The selection rules one by one (guard_core.rules), on the in-memory store, and the
pipeline: its order, the seed-policy ablation, and plug-in rules through the hook."""

from __future__ import annotations

from pathlib import Path

import attrs

from guard_core import hookimpl
from guard_core.config import Settings
from guard_core.engine import Engine
from guard_core.model import (
    ChangedFile,
    ChangedRegion,
    ChangeKind,
    ChangeSet,
    CoverEdge,
    FileKind,
    FileRole,
    Level,
    OverrideKind,
    Reason,
    RegionKind,
)
from guard_core.plugins import Plugins, make_plugin_manager
from guard_core.policy import DefaultTrustPolicy
from guard_core.ports import FunctionFacts, PolicyInput
from guard_core.rules import Rule, RuleInput, builtin_rules, run_rules
from guard_core.rules.calls import dynamic_widening, memoised_callers
from guard_core.rules.code import changed_regions, changed_test_code, removed_names
from guard_core.rules.files import data_file_readers, doctests, folder_listers, spawners
from guard_core.selection import Selection
from guard_core.testing import FakeSlicer, FakeStore, FileNode
from guard_core.variant import Variant

F = "pkg/a.py::f"
MOD = "pkg/a.py::<module>"
T1, T2, T3 = "t/test_a.py::test_1", "t/test_a.py::test_2", "t/test_b.py::test_3"
SOURCE = ChangedFile("pkg/a.py", FileKind.MODIFIED, FileRole.SOURCE)


def edge(fid: str, test: str) -> CoverEdge:
    return CoverEdge(fid, test, confidence=1.0, last_verified_sha="base")


def rule_input(cs: ChangeSet, st: FakeStore, **variant: bool) -> RuleInput:
    evidence: dict[str, list[CoverEdge]] = {}
    for e in st.edges:
        evidence.setdefault(e.function, []).append(e)
    v = Variant(**variant)
    policy = PolicyInput(cs, evidence, {}, frozenset(), "base", st.info, v.seed_policy)
    return RuleInput(cs, st, Settings(repo=Path(".")), st.info, evidence, (), (), policy, variant=v)


def selected(rule: object, cs: ChangeSet, st: FakeStore, **variant: bool) -> dict[str, str]:
    sel = Selection()
    rule(rule_input(cs, st, **variant), sel)  # type: ignore[operator]
    return {t: rs[0].rule for t, rs in sel.reasons.items()}


def function(kind: ChangeKind = ChangeKind.MODIFIED, **kw: object) -> ChangedRegion:
    return ChangedRegion(id=F, file="pkg/a.py", kind=kind, **kw)  # type: ignore[arg-type]


def test_changed_code_selects_the_tests_that_ran_it() -> None:
    st = FakeStore(edges=[edge(F, T1), edge(F, T3)], tests=[T1, T2, T3])
    cs = ChangeSet(base="base", files=(SOURCE,), regions=(function(),))
    assert selected(changed_regions, cs, st) == {T1: "covers", T3: "covers"}


def test_a_changed_module_body_with_side_effects_selects_its_importers() -> None:
    body = ChangedRegion(
        id=MOD, file="pkg/a.py", kind=ChangeKind.MODIFIED, region=RegionKind.MODULE,
        side_effects=True,
    )  # fmt: skip
    st = FakeStore(edges=[edge(MOD, T2)], tests=[T1, T2, T3])
    cs = ChangeSet(base="base", files=(SOURCE,), regions=(body,))
    assert selected(changed_regions, cs, st) == {T2: "import-time-code"}


def test_a_class_body_nested_in_a_function_selects_the_tests_that_ran_the_function() -> None:
    nested = ChangedRegion(
        id="pkg/a.py::g.<locals>.C.<body>", file="pkg/a.py", kind=ChangeKind.ADDED,
        region=RegionKind.CLASS_BODY, side_effects=True,
    )  # fmt: skip
    renamed = ChangedRegion(
        id="pkg/a.py::g", file="pkg/a.py", kind=ChangeKind.RENAMED, old_id=F, body_changed=False
    )
    st = FakeStore(edges=[edge(MOD, T1), edge(MOD, T2), edge(F, T3)], tests=[T1, T2, T3])
    cs = ChangeSet(base="base", files=(SOURCE,), regions=(nested, renamed))
    # through the old name of its renamed function; never the importers of the module
    assert selected(changed_regions, cs, st) == {T3: "runs-enclosing-function"}
    # an enclosing function no test ran: the importers, as for any definition
    st = FakeStore(edges=[edge(MOD, T1), edge(MOD, T2)], tests=[T1, T2, T3])
    assert selected(changed_regions, cs, st) == {T1: "import-time-code", T2: "import-time-code"}
    # a class a decorator may register: whoever reads the registry, not only those tests
    registered = attrs.evolve(nested, registers=True)
    cs = ChangeSet(base="base", files=(SOURCE,), regions=(registered, renamed))
    st = FakeStore(edges=[edge(MOD, T1), edge(MOD, T2), edge(F, T3)], tests=[T1, T2, T3])
    assert selected(changed_regions, cs, st) == {T1: "import-time-code", T2: "import-time-code"}


def test_changed_test_code_selects_that_test_and_what_pytest_reads() -> None:
    test = ChangedRegion(id=T1, file="t/test_a.py", kind=ChangeKind.MODIFIED, test_id=T1)
    files = (ChangedFile("t/test_a.py", FileKind.MODIFIED, FileRole.TEST),)
    st = FakeStore(tests=[T1, T2, T3])
    got = selected(changed_test_code, ChangeSet(base="base", files=files, regions=(test,)), st)
    assert got == {T1: "changed-test"}
    conftest = ChangedFile("t/conftest.py", FileKind.MODIFIED, FileRole.CONFTEST)
    body = ChangedRegion(
        id="t/conftest.py::<module>", file="t/conftest.py", kind=ChangeKind.MODIFIED,
        region=RegionKind.MODULE, side_effects=True,
    )  # fmt: skip
    got = selected(
        changed_test_code, ChangeSet(base="base", files=(conftest,), regions=(body,)), st
    )
    # their files run whole: the conftest's hooks may make tests no index lists
    assert got == {"t/test_a.py": "conftest-code", "t/test_b.py": "conftest-code"}


def test_a_removed_name_selects_the_tests_of_its_importers() -> None:
    gone = function(ChangeKind.DELETED, removed=("pkg.a.f",))
    st = FakeStore(
        edges=[edge("pkg/b.py::<module>", T3)],
        tests=[T1, T2, T3],
        refs={"pkg/b.py::<module>": ["pkg.a.f"]},
        # importers are the files with a `from pkg.a import f` (their aliases), as in the graph
        files={"pkg/b.py": FileNode("pkg/b.py", "1", "pkg.b", aliases=(("pkg.b.f", "pkg.a.f"),))},
    )
    cs = ChangeSet(base="base", files=(SOURCE,), regions=(gone,))
    assert selected(removed_names, cs, st) == {T3: "imports-removed-name"}


def test_data_files_and_listed_folders_select_their_readers() -> None:
    st = FakeStore(edges=[edge("pkg/data.json", T1), edge("pkg/", T2)], tests=[T1, T2, T3])
    data = attrs.evolve(
        rule_input(ChangeSet(base="base"), st), data_files=("pkg/data.json",), listed=("pkg/",)
    )
    sel = Selection()
    data_file_readers(data, sel)
    folder_listers(data, sel)
    assert {t: rs[0].rule for t, rs in sel.reasons.items()} == {
        T1: "reads-data-file",
        T2: "lists-changed-folder",
    }


def test_doctests_of_a_file_whose_docstring_changed() -> None:
    doc = "pkg/a.py::pkg.a.f"
    other = "pkg/b.py::pkg.b.g"
    st = FakeStore(tests=[doc, other], doctests=[doc, other])
    cs = ChangeSet(base="base", files=(SOURCE,), regions=(function(doc_changed=True),))
    assert set(selected(doctests, cs, st)) == {doc, "pkg/a.py"}


def test_spawners_run_for_a_code_change_not_for_an_empty_one() -> None:
    st = FakeStore(tests=[T1, T2], spawners=[T2])
    cs = ChangeSet(base="base", files=(SOURCE,), regions=(function(),))
    assert selected(spawners, cs, st) == {T2: "spawns-python"}
    assert selected(spawners, ChangeSet(base="base", files=(SOURCE,)), st) == {}


def test_dynamic_dispatch_without_full_evidence_widens_to_the_module_tests() -> None:
    g = "pkg/a.py::g"
    st = FakeStore(
        # the module's tests: those that ran its functions; importing it (T3) makes none
        edges=[edge(MOD, T3), edge(g, T2), edge(F, T1)],
        tests=[T1, T2, T3],
        functions={
            F: FunctionFacts(F, "pkg/a.py", True, False),
            g: FunctionFacts(g, "pkg/a.py", False, False),
            MOD: FunctionFacts(MOD, "pkg/a.py", False, False),
        },
    )
    region = function(ChangeKind.ADDED, dynamic_dispatch=True)
    cs = ChangeSet(base="base", files=(SOURCE,), regions=(region,))
    assert selected(dynamic_widening, cs, st) == {T1: "dynamic-widening", T2: "dynamic-widening"}
    assert selected(dynamic_widening, cs, st, widening=False) == {}


def test_memoised_callers_need_a_memo_caller() -> None:
    st = FakeStore(edges=[edge(F, T1)], tests=[T1])
    cs = ChangeSet(base="base", files=(SOURCE,), regions=(function(),))
    assert selected(memoised_callers, cs, st) == {}  # the fake has no memo function


def test_the_seed_policy_runs_only_the_seed_rules() -> None:
    names = [r.name for r in builtin_rules()]
    assert names[0] == "changed-code"  # the covering edges first: their reasons lead
    seed = [r.name for r in builtin_rules() if not r.refinement]
    assert "test-code" not in seed and "doctests" not in seed and "changed-code" in seed
    calls: list[str] = []
    rules = [Rule(n, lambda d, s, n=n: calls.append(n), refinement=n != "a") for n in "ab"]
    st = FakeStore()
    run_rules(rule_input(ChangeSet(base="base"), st, seed_policy=True), Selection(), rules)
    assert calls == ["a"]


class ExtraRule:
    """A team plug-in: a changed file under pkg/ always runs one smoke test."""

    @hookimpl
    def guard_selection_rules(self) -> list[Rule]:
        def smoke(data: RuleInput, selection: Selection) -> None:
            if any(f.path.startswith("pkg/") for f in data.change.files):
                selection.add(T2, Reason("smoke", "the team's smoke test"))

        return [Rule("smoke", smoke)]


class BrokenRule:
    @hookimpl
    def guard_selection_rules(self) -> list[Rule]:
        def broken(data: RuleInput, selection: Selection) -> None:
            selection.add(T2, Reason("broken", "half done"))
            raise RuntimeError("rule bug")

        return [Rule("broken", broken)]


def plugged_engine(plugin: object) -> Engine:
    st = FakeStore(
        edges=[edge(F, T1)],
        tests=[T1, T2, T3],
        functions={F: FunctionFacts(F, "pkg/a.py", False, False)},
    )
    cs = ChangeSet(base="base", files=(SOURCE,), regions=(function(),))
    plugins = Plugins(make_plugin_manager(builtins=(), extra=[plugin], autoload=False))
    return Engine(Settings(repo=Path(".")), st, FakeSlicer(cs), [DefaultTrustPolicy()], plugins)


def test_a_plugin_rule_adds_tests_with_its_reason() -> None:
    d = plugged_engine(ExtraRule()).check()
    assert d.level is Level.SUBSET and d.tests == (T1, T2)
    assert d.reasons[T2][0].rule == "smoke"


def test_a_plugin_rule_that_raises_runs_everything() -> None:
    d = plugged_engine(BrokenRule()).check()
    assert d.level is Level.RUN_ALL and set(d.tests) == {T1, T2, T3}
    assert any(o.kind is OverrideKind.POLICY_ERROR and "rule bug" in o.detail for o in d.overrides)
