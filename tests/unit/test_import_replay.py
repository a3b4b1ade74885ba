"""Import-time code replayed by the import probe (guard_core.import_replay), on the in-memory
store: the edges a test reached only through imports give way to the readers of what the
import built, and only when the probe could replay every one of them."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from pathlib import Path

import attrs
import pytest

from guard_core.config import Settings
from guard_core.import_replay import select_replaying_imports
from guard_core.model import (
    ChangedFile,
    ChangedRegion,
    ChangeKind,
    ChangeSet,
    CoverEdge,
    FileKind,
    FileRole,
    IngestInfo,
)
from guard_core.ports import ImportState, PolicyInput
from guard_core.rules import RuleInput, builtin_rules, run_rules
from guard_core.selection import Selection
from guard_core.testing import FakeStore

INIT = "pkg/group.py::Group.__init__"
READER = "pkg/use.py::show"
IMPORTER, CALLER, USER = (
    "t/test_a.py::test_import",
    "t/test_a.py::test_call",
    "t/test_b.py::test_use",
)


@attrs.define
class FakeProbe:
    state: ImportState
    asked: list[Collection[str]] = attrs.field(factory=list)

    def compare(self, change: ChangeSet, files: Sequence[str]) -> ImportState:
        self.asked.append(files)
        return self.state


def store(session: frozenset[str] | None = frozenset()) -> FakeStore:
    info = IngestInfo(coverage_sha="base", coverage_complete=True, session_ran=session)
    edges = [
        CoverEdge(INIT, IMPORTER, last_verified_sha="base", shared=True),  # cli = Group()
        CoverEdge(INIT, CALLER, last_verified_sha="base"),
        CoverEdge(READER, USER, last_verified_sha="base"),
    ]
    return FakeStore(edges=edges, tests=[IMPORTER, CALLER, USER], info=info)


def select(st: FakeStore, probe: FakeProbe | None, base: str = "base") -> set[str]:
    region = ChangedRegion(id=INIT, file="pkg/group.py", kind=ChangeKind.MODIFIED)
    cs = ChangeSet(
        base=base,
        files=(ChangedFile("pkg/group.py", FileKind.MODIFIED, FileRole.SOURCE),),
        regions=(region,),
    )
    evidence: dict[str, list[CoverEdge]] = {}
    for e in st.covering_tests([INIT]):
        evidence.setdefault(e.function, []).append(e)
    settings = Settings(repo=Path("."))
    policy = PolicyInput(cs, evidence, {}, frozenset(), "base", st.info, False)
    data = RuleInput(cs, st, settings, st.info, evidence, (), (), policy)

    def rules(data: RuleInput) -> Selection:
        selection = Selection()
        run_rules(data, selection, builtin_rules())
        return selection

    chosen, replayed = select_replaying_imports(probe, data, rules, lambda full: True)
    assert replayed == (chosen.reasons.keys() != {IMPORTER, CALLER})
    return set(chosen.reasons)


def test_what_only_the_import_ran_gives_way_to_the_readers_of_what_it_built() -> None:
    st = store()
    st.refs = {READER: ["pkg.group.cli"]}
    probe = FakeProbe(ImportState(frozenset({"pkg.group.cli"}), ran=frozenset({INIT})))
    assert select(st, probe) == {CALLER, USER}
    assert probe.asked


def test_an_import_that_built_the_same_selects_the_callers_only() -> None:
    probe = FakeProbe(ImportState(frozenset(), ran=frozenset({INIT})))
    assert select(store(), probe) == {CALLER}


@pytest.mark.parametrize(
    "probe, st, base",
    [
        (None, store(), "base"),
        (FakeProbe(ImportState(None, "importing pkg.group fails now")), store(), "base"),
        (FakeProbe(ImportState(frozenset(), ran=frozenset())), store(), "base"),  # not run
        (FakeProbe(ImportState(frozenset())), store(), "base"),  # not known what ran
        (FakeProbe(ImportState(frozenset(), ran=frozenset({INIT}))), store(None), "base"),
        (FakeProbe(ImportState(frozenset(), ran=frozenset({INIT}))), store({INIT}), "base"),
        (FakeProbe(ImportState(frozenset(), ran=frozenset({INIT}))), store(), "other"),
    ],
    ids=[
        "no-probe",
        "probe-cannot-compare",
        "probe-did-not-run-it",
        "probe-without-calls",
        "session-not-recorded",
        "start-up-ran-it",
        "diff-from-another-commit",
    ],
)
def test_import_edges_stay_everyones_unless_the_probe_replayed_them(
    probe: FakeProbe | None, st: FakeStore, base: str
) -> None:
    assert select(st, probe, base) == {IMPORTER, CALLER}
