"""Import-time code replayed by the import probe (guard_core.import_replay), on the in-memory
store: the edges a test reached only through imports give way to the readers of what the
import built, and only when the probe could replay every one of them."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from pathlib import Path

import attrs
import pytest

from guard_core.config import Settings
from guard_core.evidence import UNKNOWN_LINE
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


def store(
    session: frozenset[str] | None = frozenset(), lines: frozenset[int] = frozenset({3})
) -> FakeStore:
    info = IngestInfo(coverage_sha="base", coverage_complete=True, session_ran=session)
    edges = [
        CoverEdge(INIT, IMPORTER, last_verified_sha="base", shared=True, lines=lines),
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


def replayed(changed: frozenset[str] | None, lines: frozenset[int] = frozenset({3})) -> FakeProbe:
    """A probe whose import of the base ran ``lines`` of pkg/group.py."""
    return FakeProbe(ImportState(changed, ran=frozenset({INIT}), lines={"pkg/group.py": lines}))


def test_what_only_the_import_ran_gives_way_to_the_readers_of_what_it_built() -> None:
    st = store()
    st.refs = {READER: ["pkg.group.cli"]}
    probe = replayed(frozenset({"pkg.group.cli"}))
    assert select(st, probe) == {CALLER, USER}
    assert probe.asked


def test_an_import_that_built_the_same_selects_the_callers_only() -> None:
    assert select(store(), replayed(frozenset())) == {CALLER}


@pytest.mark.parametrize(
    "probe, st, base",
    [
        (None, store(), "base"),
        (replayed(None), store(), "base"),
        (replayed(frozenset(), lines=frozenset()), store(), "base"),
        (replayed(frozenset()), store(lines=frozenset({UNKNOWN_LINE})), "base"),
        (replayed(frozenset()), store(None), "base"),
        (replayed(frozenset()), store({INIT}), "base"),
        (replayed(frozenset()), store(), "other"),
    ],
    ids=[
        "no-probe",
        "probe-cannot-compare",
        "probe-did-not-run-it",
        "lines-not-recorded",
        "session-not-recorded",
        "start-up-ran-it",
        "diff-from-another-commit",
    ],
)
def test_import_edges_stay_everyones_unless_the_probe_replayed_them(
    probe: FakeProbe | None, st: FakeStore, base: str
) -> None:
    assert select(st, probe, base) == {IMPORTER, CALLER}


def test_the_lines_the_tests_imports_ran_must_have_run_in_the_probe() -> None:
    """A branch the tests' imports took (set up by their ``conftest.py``) and the probe's
    import did not: what it built was not compared."""
    took = replayed(frozenset(), lines=frozenset({3, 4}))
    assert select(store(lines=frozenset({3, 4})), took) == {CALLER}
    missed = replayed(frozenset(), lines=frozenset({3}))
    assert select(store(lines=frozenset({3, 4})), missed) == {IMPORTER, CALLER}
