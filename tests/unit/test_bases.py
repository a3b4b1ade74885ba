"""Evidence per base commit: which base a check reads, which ones retention drops, and what the
engine does when no base can be read."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import attrs

from guard_core.bases import BaseChoice, Distance, EvidenceBase, choose_base, retired
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
    IngestInfo,
    Level,
)
from guard_core.plugins import Plugins, hookimpl, make_plugin_manager
from guard_core.policy import DefaultTrustPolicy
from guard_core.ports import EvidenceBases, FunctionFacts
from guard_core.testing import FakeSlicer, FakeStore

MAIN, OLD, BRANCH, NEW = "a" * 40, "b" * 40, "c" * 40, "d" * 40


def base(sha: str, complete: bool = True, at: float = 0.0) -> EvidenceBase:
    return EvidenceBase(sha, complete, at)


def distances(table: dict[str, Distance]):  # type: ignore[no-untyped-def]
    return lambda bases: {b.sha: table[b.sha] for b in bases if b.sha in table}


def test_the_nearest_ancestor_wins_over_a_nearer_commit_on_another_branch() -> None:
    table = {MAIN: Distance(3, 0), OLD: Distance(9, 0), BRANCH: Distance(1, 1)}
    choice = choose_base([base(OLD), base(BRANCH), base(MAIN)], distances(table))
    assert choice.sha == MAIN
    assert "nearest evidenced ancestor" in choice.reason and "3 behind" in choice.reason


def test_head_itself_is_named_as_such() -> None:
    choice = choose_base([base(MAIN), base(OLD)], distances({MAIN: Distance(0, 0),
                                                              OLD: Distance(2, 0)}))  # fmt: skip
    assert choice.sha == MAIN and "evidence of HEAD" in choice.reason


def test_a_complete_base_wins_over_a_nearer_one_still_being_written() -> None:
    table = {NEW: Distance(0, 0), MAIN: Distance(4, 0)}
    choice = choose_base([base(NEW, complete=False), base(MAIN)], distances(table))
    assert choice.sha == MAIN
    assert f"{NEW[:12]} is nearer but its ingest has not completed" in choice.reason


def test_an_incomplete_base_is_read_only_when_nothing_complete_is_in_the_clone() -> None:
    table = {NEW: Distance(0, 0)}
    choice = choose_base([base(NEW, complete=False), base(MAIN)], distances(table))
    assert choice.sha == NEW and "has not completed" in choice.reason


def test_without_an_ancestor_the_base_sharing_the_most_history_is_read() -> None:
    table = {MAIN: Distance(2, 5), BRANCH: Distance(1, 2)}
    choice = choose_base([base(MAIN), base(BRANCH)], distances(table))
    assert choice.sha == BRANCH and "no evidenced ancestor" in choice.reason


def test_equal_distances_go_to_the_newest_evidence() -> None:
    table = {MAIN: Distance(1, 0), OLD: Distance(1, 0)}
    assert choose_base([base(OLD, at=1.0), base(MAIN, at=2.0)], distances(table)).sha == MAIN


def test_no_base_in_the_clone_is_no_choice_with_the_reason() -> None:
    choice = choose_base([base(MAIN), base(OLD)], distances({}))
    assert choice.sha == "" and "none of the 2 evidenced commits is in this clone" in choice.reason
    assert choose_base([], distances({})).sha == ""


def test_retention_drops_the_oldest_complete_but_never_a_protected_base() -> None:
    bases = [base(OLD, at=1.0), base(MAIN, at=3.0), base(BRANCH, at=2.0), base(NEW, at=0.5)]
    assert retired(bases, keep=2) == [OLD, NEW]
    assert retired(bases, keep=2, protect=[NEW]) == [OLD]
    assert retired(bases, keep=5) == []
    assert retired(bases, keep=0) == [BRANCH, OLD, NEW]  # at least the newest stays


def test_an_ingest_still_running_is_not_pruned_but_a_dead_one_is() -> None:
    day = 86400.0
    running = base(BRANCH, complete=False, at=10 * day)
    bases = [base(MAIN, at=10 * day), base(OLD, at=9 * day), base(NEW, complete=False), running]
    assert retired(bases, keep=1, now=10 * day + 60) == [OLD, NEW]


# -- the engine -------------------------------------------------------------------------------

F = "pkg/a.py::f"
TESTS = ["t/test_a.py::test_1", "t/test_a.py::test_2"]


def fake(sha: str, test: str) -> FakeStore:
    return FakeStore(
        edges=[CoverEdge(F, test, confidence=1.0, last_verified_sha=sha)],
        functions={F: FunctionFacts(F, "pkg/a.py", False, False)},
        tests=list(TESTS),
        info=IngestInfo(coverage_sha=sha, coverage_complete=True),
    )


@attrs.define
class FakeBases(FakeStore):
    """Two bases, each its own store; ``pruned`` bases answer None once leased."""

    graphs: dict[str, FakeStore] = attrs.field(factory=dict)
    pruned: set[str] = attrs.field(factory=set)
    listed: int = 0
    list_fails: bool = False

    def evidence_bases(self) -> list[EvidenceBase]:
        if self.list_fails:
            raise OSError("down")
        self.listed += 1
        return [base(sha, at=float(i)) for i, sha in enumerate(self.graphs)]

    def at_base(self, sha: str) -> FakeStore | None:
        if sha in self.pruned:
            del self.graphs[sha]
            return None
        return self.graphs[sha]

    def writer_for(self, sha: str) -> FakeStore:
        return self.graphs.setdefault(sha, FakeStore())

    def carry_repairs(self, into: FakeStore, sha: str) -> int:
        return 0

    def prune_bases(self, protect: Sequence[str] = ()) -> list[str]:
        return []


class Ancestry:
    """A plug-in answering ``guard_commit_distances`` from a table (no git)."""

    def __init__(self, table: dict[str, Distance]) -> None:
        self.table = table

    @hookimpl
    def guard_commit_distances(
        self, repo: Path, bases: Sequence[EvidenceBase]
    ) -> dict[str, Distance]:
        return {b.sha: self.table[b.sha] for b in bases if b.sha in self.table}


def check(store: FakeBases, table: dict[str, Distance]) -> Decision:
    cs = ChangeSet(
        base="unused",
        files=(ChangedFile("pkg/a.py", FileKind.MODIFIED, FileRole.SOURCE),),
        regions=(ChangedRegion(id=F, file="pkg/a.py", kind=ChangeKind.MODIFIED),),
    )
    plugins = Plugins(make_plugin_manager(builtins=(), extra=[Ancestry(table)], autoload=False))
    engine = Engine(Settings(repo=Path(".")), store, FakeSlicer(cs), [DefaultTrustPolicy()],
                    plugins=plugins)  # fmt: skip
    return engine.check()


def test_the_engine_reads_the_chosen_base_and_diffs_from_it() -> None:
    assert isinstance(FakeBases(), EvidenceBases)
    store = FakeBases(graphs={MAIN: fake(MAIN, TESTS[0]), OLD: fake(OLD, TESTS[1])})
    decision = check(store, {MAIN: Distance(1, 0), OLD: Distance(5, 0)})
    assert decision.evidence is not None and decision.evidence.sha == MAIN
    assert decision.tests == (TESTS[0],)  # MAIN's evidence, not OLD's
    assert decision.change_set.base == MAIN
    assert decision.to_json()["evidence_base"]["sha"] == MAIN


def test_a_base_pruned_between_listing_and_reading_is_chosen_again() -> None:
    store = FakeBases(graphs={MAIN: fake(MAIN, TESTS[0]), OLD: fake(OLD, TESTS[1])}, pruned={MAIN})
    decision = check(store, {MAIN: Distance(1, 0), OLD: Distance(5, 0)})
    assert decision.evidence is not None and decision.evidence.sha == OLD
    assert decision.tests == (TESTS[1],) and store.listed == 2


def test_no_base_in_the_clone_runs_everything_and_says_why() -> None:
    store = FakeBases(graphs={MAIN: fake(MAIN, TESTS[0])})
    decision = check(store, {})
    assert decision.level is Level.RUN_ALL
    assert any("none of the 1 evidenced commits" in o.detail for o in decision.overrides)
    assert decision.evidence == BaseChoice("", decision.evidence.reason)  # type: ignore[union-attr]


def test_a_failing_listing_runs_everything() -> None:
    store = FakeBases(graphs={MAIN: fake(MAIN, TESTS[0])})
    store.list_fails = True
    decision = check(store, {MAIN: Distance(0, 0)})
    assert decision.level is Level.RUN_ALL
    assert any("cannot list the evidence bases" in o.detail for o in decision.overrides)


@attrs.define
class Vanishing(FakeStore):
    """A base whose graph is deleted after the check's first read of it."""

    reads: int = 0

    def ingest_info(self) -> IngestInfo:
        self.reads += 1
        return self.info if self.reads == 1 else IngestInfo()


def test_a_base_deleted_while_the_check_read_it_runs_everything() -> None:
    gone = Vanishing(
        edges=[CoverEdge(F, TESTS[0], confidence=1.0, last_verified_sha=MAIN)],
        functions={F: FunctionFacts(F, "pkg/a.py", False, False)},
        tests=list(TESTS),
        info=IngestInfo(coverage_sha=MAIN, coverage_complete=True),
    )
    decision = check(FakeBases(graphs={MAIN: gone}), {MAIN: Distance(0, 0)})
    assert decision.level is Level.RUN_ALL
    assert any("deleted or rewritten while read" in o.detail for o in decision.overrides)
