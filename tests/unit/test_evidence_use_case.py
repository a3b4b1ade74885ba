"""The coverage ingest use case against the in-memory store and a scripted collector."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import attrs
import pytest

from guard_core.errors import IngestError
from guard_core.evidence import RunEvidence, ingest_coverage
from guard_core.model import IngestInfo, TestOutcome
from guard_core.ports import FunctionFacts
from guard_core.testing import FakeStore

T1, T2 = "tests/test_a.py::test_one", "tests/test_a.py::test_two"


def _run(executed: dict[str, dict[str, frozenset[int]]], failed: str = "") -> RunEvidence:
    outcomes = {t: TestOutcome(t, "failed" if t == failed else "passed", 1.0, "") for t in executed}
    return RunEvidence(executed=executed, outcomes=outcomes, duration_ms=2.0)


@attrs.define
class Scripted:
    runs: list[RunEvidence]
    python: str = "/usr/bin/python3"
    asked: list[tuple[int, int]] = attrs.field(factory=list)

    def collect(self, *, run: int, runs: int, shard: tuple[int, int] | None) -> RunEvidence:
        self.asked.append((run, runs))
        return self.runs[run]


def test_two_runs_give_confidence_by_share_and_find_the_flaky_test() -> None:
    # the static index first: a store writes no edge of a function it does not have
    indexed = {f: FunctionFacts(f, "pkg/m.py", True, False) for f in ("pkg/m.py::f", "pkg/m.py::g")}
    store = FakeStore(info=IngestInfo(), functions=indexed)
    first = _run({T1: {"pkg/m.py::f": frozenset({3})}, T2: {"pkg/m.py::g": frozenset({7})}})
    second = _run({T1: {"pkg/m.py::f": frozenset({3})}, T2: {}}, failed=T2)
    report = ingest_coverage(store, Scripted([first, second]), sha="abc", runs=2)
    assert (report.tests, report.runs, report.failed) == (2, 2, (T2,))
    assert report.flaky == {T2: 0.5}
    edges = {(e.function, e.test): e.confidence for e in store.edges}
    assert edges == {("pkg/m.py::f", T1): 1.0, ("pkg/m.py::g", T2): 0.5}
    assert store.info.coverage_sha == "abc" and store.info.coverage_complete
    assert store.info.python == "/usr/bin/python3" and len(store.runs) == 2


def test_a_run_that_saw_no_test_writes_nothing() -> None:
    store = FakeStore()
    before = store.info
    with pytest.raises(IngestError, match="ran no test"):
        ingest_coverage(store, Scripted([_run({})]), sha="abc")
    assert store.info == before and store.edges == []


def test_a_shard_leaves_the_base_incomplete_until_every_shard_is_in() -> None:
    class Sharded(FakeStore):
        def mark_shard(self, sha: str, shard: int, shards: int, tests: int = 1) -> bool:
            return False

    store = Sharded(info=IngestInfo())
    ingest_coverage(store, Scripted([_run({T1: {"pkg/m.py::f": frozenset()}})]), sha="abc",
                    shard=(1, 2))  # fmt: skip
    assert store.info.coverage_sha == "abc" and not store.info.coverage_complete


def test_a_shard_that_finishes_first_never_undoes_the_last_ones_complete() -> None:
    class OtherShardLands(FakeStore):
        """Shard 1 is marked while shard 2 is not yet; shard 2 then lands and completes the
        base before shard 1's use case has returned."""

        def mark_shard(self, sha: str, shard: int, shards: int, tests: int = 1) -> bool:
            self.info = attrs.evolve(self.info, coverage_complete=True)  # shard 2's marking
            return False

    store = OtherShardLands(info=IngestInfo())
    ingest_coverage(store, Scripted([_run({T1: {"pkg/m.py::f": frozenset()}})]), sha="abc",
                    shard=(1, 2))  # fmt: skip
    assert store.info.coverage_complete and store.info.coverage_sha == "abc"


def test_a_shard_without_tests_is_marked_done_but_proves_nothing_alone() -> None:
    store = FakeStore(info=IngestInfo())
    ingest_coverage(store, Scripted([_run({})]), sha="abc", shard=(1, 1))  # no error
    assert store.info.coverage_sha == "abc" and not store.info.coverage_complete
    assert store.edges == []


def test_one_run_gives_the_edges_two_identical_runs_give() -> None:
    """The single-run shortcut keeps lines, unknown lines and shared set-up as merging does."""
    from guard_core.evidence import UNKNOWN_LINE, merge_runs

    run = attrs.evolve(
        _run(
            {
                T1: {"pkg/m.py::f": frozenset({3, 4}), "pkg/m.py::<module>": frozenset({1})},
                T2: {"pkg/m.py::g": frozenset({UNKNOWN_LINE, 7}), "data/x.json": frozenset()},
            }
        ),
        shared_only={T1: frozenset({"pkg/m.py::<module>"})},
    )
    once, flaky = merge_runs([run])
    twice, _ = merge_runs([run, run])
    assert flaky == {}
    assert once == [attrs.evolve(e, evidence_count=1) for e in twice]
    by_id = {(e.function, e.test): e for e in once}
    assert by_id["pkg/m.py::g", T2].lines == frozenset()  # unknown: any line may have run
    assert by_id["pkg/m.py::<module>", T1].shared and not by_id["pkg/m.py::f", T1].shared


def test_the_evidence_writes_run_inside_the_shield_the_caller_gives() -> None:
    """The CLI holds a Ctrl-C back there: every write lands, or none has started."""
    indexed = {"pkg/m.py::f": FunctionFacts("pkg/m.py::f", "pkg/m.py", True, False)}
    seen: list[str] = []

    class Watched(FakeStore):
        def update_ingest_info(self, **fields: object) -> None:
            seen.append(f"info {sorted(fields)} shielded={shielded_now}")
            super().update_ingest_info(**fields)

    shielded_now = False

    @contextlib.contextmanager
    def shield() -> Iterator[None]:
        nonlocal shielded_now
        shielded_now = True
        yield
        shielded_now = False

    store = Watched(info=IngestInfo(), functions=indexed)
    run = _run({T1: {"pkg/m.py::f": frozenset({3})}})
    ingest_coverage(store, Scripted([run]), sha="abc", shielded=shield)
    assert seen and all(s.endswith("shielded=True") for s in seen), seen
    assert store.info.coverage_complete and len(store.edges) == 1
