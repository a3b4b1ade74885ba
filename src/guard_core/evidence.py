"""The coverage ingest as a use case: run the suite under a collector (once, or several times
to find flaky tests), merge what the runs saw into ``COVERED_BY`` evidence, and write it. The
evidence base counts as complete only once every write has landed (and, sharded, once every
shard has)."""

from __future__ import annotations

import json
import time
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, nullcontext

import attrs

from guard_core.errors import IngestError
from guard_core.model import CoverEdge, IngestInfo, RunRecord, TestOutcome
from guard_core.ports import Collector, EvidenceWriter

UNKNOWN_LINE = 0  # "some of its lines": code that ran unseen (plugins' imports), data files


@attrs.frozen
class RunEvidence:
    """What one pytest run showed: per test, the ids it executed (with their lines) and its
    outcome."""

    executed: dict[str, dict[str, frozenset[int]]]
    outcomes: dict[str, TestOutcome]
    duration_ms: float
    # per test, the ids it reached only through shared set-up (start-up, first imports)
    shared_only: dict[str, frozenset[str]] = attrs.field(factory=dict)
    failures: dict[str, str] = attrs.field(factory=dict)  # node id -> failure signature
    # tests that started a Python child process: code it ran is not in their evidence
    spawners: frozenset[str] = frozenset()
    # doctest items: the code they run lives in docstrings, and reads names no index sees
    doctests: frozenset[str] = frozenset()
    # per test and function, what its recorded reflective calls were given (CoverEdge.names),
    # in the files where the run recorded every such call; elsewhere nothing is known
    reflected: dict[str, dict[str, frozenset[str]]] = attrs.field(factory=dict)
    recorded_files: frozenset[str] = frozenset()
    # ids run under ``<session>`` (start-up, plugins, conftest imports); None: not recorded
    session_ran: frozenset[str] | None = None

    def names(self, test: str, function: str) -> frozenset[str] | None:
        """``CoverEdge.names`` of one edge: None where the run did not record them all (a
        file it did not watch, a test whose child processes ran code, a data file)."""
        known = self.reflected.get(test, {}).get(function)
        if known is not None:
            return known
        path, sep, _ = function.partition("::")
        if not sep or path not in self.recorded_files or test in self.spawners:
            return None
        return frozenset()


@attrs.frozen
class CoverageReport:
    tests: int
    edges: int
    runs: int
    flaky: dict[str, float]
    failed: tuple[str, ...]
    duration_s: float


def merge_runs(runs: Sequence[RunEvidence]) -> tuple[list[CoverEdge], dict[str, float]]:
    """Edges with confidence = share of runs that saw them, and the flaky tests (outcome or
    executed set varies between runs) with their flake rate. An edge only some runs saw is
    kept at its lower confidence: the code it reached may be reached again. An edge's lines
    are every line any run saw; unknown when any run ran the code unseen."""
    n = len(runs)
    if n == 1:
        return _edges_of(runs[0]), {}
    tests = sorted({t for r in runs for t in r.executed})
    edges: list[CoverEdge] = []
    flaky: dict[str, float] = {}
    for test in tests:
        ran = [r.executed.get(test, {}) for r in runs]
        sets = [set(ids) for ids in ran]
        outcomes = [r.outcomes[test].outcome if test in r.outcomes else "missing" for r in runs]
        counts: dict[str, int] = defaultdict(int)
        lines: dict[str, set[int]] = defaultdict(set)
        for ids in ran:
            for fid, seen_lines in ids.items():
                counts[fid] += 1
                lines[fid] |= seen_lines
        deviating = sum(
            1 for s, o in zip(sets, outcomes, strict=True) if s != sets[0] or o != outcomes[0]
        )
        if deviating:
            flaky[test] = round(deviating / n, 4)
        for fid, seen in sorted(counts.items()):
            known = frozenset() if UNKNOWN_LINE in lines[fid] else frozenset(lines[fid])
            saw = [r for r in runs if fid in r.executed.get(test, {})]
            shared = all(fid in r.shared_only.get(test, ()) for r in saw)
            recorded = [r.names(test, fid) for r in saw]
            edges.append(
                CoverEdge(
                    function=fid,
                    test=test,
                    confidence=seen / n,
                    evidence_count=seen,
                    lines=known,
                    shared=shared,
                    names=None
                    if any(r is None for r in recorded)
                    else frozenset().union(*recorded),  # type: ignore[arg-type]
                )
            )
    return edges, flaky


def _edges_of(run: RunEvidence) -> list[CoverEdge]:
    """:func:`merge_runs` of one run (no flake to find): its edges as they are, without
    copying a million line sets on a large suite."""
    return list(iter_edges(run))


def iter_edges(run: RunEvidence) -> Iterator[CoverEdge]:
    """The edges of one run, test by test, made as they are consumed: a store that writes
    them a batch at a time never holds them all (astroid: 1.26M)."""
    for test in sorted(run.executed):
        shared_only = run.shared_only.get(test, frozenset())
        for fid, seen in sorted(run.executed[test].items()):
            yield CoverEdge(
                function=fid,
                test=test,
                lines=frozenset() if UNKNOWN_LINE in seen else frozenset(seen),
                shared=fid in shared_only,
                names=run.names(test, fid),
            )


def session_ran_field(*recorded: frozenset[str] | None) -> str | None:
    """The ids several runs ran under ``<session>``, as stored: their union (more ids only keep
    more edges everyone's). None, not recorded, when any of them was not."""
    if any(r is None for r in recorded):
        return None
    return json.dumps(sorted(frozenset[str]().union(*(r for r in recorded if r is not None))))


def _recorded_session(info: IngestInfo) -> frozenset[str] | None:
    return info.session_ran if info.coverage_sha else frozenset()  # none: a first shard


def _counted(edges: Iterable[CoverEdge], count: list[int]) -> Iterator[CoverEdge]:
    for edge in edges:
        count[0] += 1
        yield edge


def ingest_coverage(
    store: EvidenceWriter,
    collector: Collector,
    *,
    sha: str,
    runs: int = 1,
    shard: tuple[int, int] | None = None,
    environment: str | None = None,
    shielded: Callable[[], AbstractContextManager[object]] = nullcontext,
) -> CoverageReport:
    """Collect ``runs`` times and write the evidence of commit ``sha``; the previous evidence
    stands (whole) when no run completes. The writes run inside ``shielded()`` (the CLI holds
    a Ctrl-C back there, so that the evidence is the old one or the new one)."""
    started = time.perf_counter()
    n = max(1, runs)
    evidence = [collector.collect(run=i, runs=n, shard=shard) for i in range(n)]
    if shard is None and not any(e.executed for e in evidence):  # a shard may hold none
        raise IngestError(
            "pytest ran no test; the previous evidence is kept",
            hint="check the test arguments (--pytest-args)",
        )
    flaky: dict[str, float] = {}
    if n == 1:
        edges: Iterable[CoverEdge] = iter_edges(evidence[0])  # streamed to the store
    else:
        edges, flaky = merge_runs(evidence)
    tests = sorted({t for e in evidence for t in e.executed})
    fields: dict[str, object] = {
        "coverage_sha": sha,
        "coverage_runs": n,
        "environment": environment,
        "python": collector.python,
        "known_failures": json.dumps(evidence[-1].failures),
        "lineage": [],
    }
    with shielded():
        written = _write_evidence(store, evidence, edges, flaky, tests, fields, shard)
    last = evidence[-1].outcomes
    failed = tuple(sorted(t for t, o in last.items() if o.outcome in ("failed", "error")))
    return CoverageReport(
        tests=len(tests),
        edges=written,
        runs=len(evidence),
        flaky=flaky,
        failed=failed,
        duration_s=time.perf_counter() - started,
    )


def _write_evidence(
    store: EvidenceWriter,
    evidence: Sequence[RunEvidence],
    edges: Iterable[CoverEdge],
    flaky: dict[str, float],
    tests: list[str],
    fields: dict[str, object],
    shard: tuple[int, int] | None,
) -> int:
    """The evidence's writes, the graph marked incomplete until the last has landed; how many
    edges were written."""
    sha = str(fields["coverage_sha"])
    store.update_ingest_info(coverage_complete=False)
    written = [0]
    store.write_coverage(_counted(edges, written), sha=sha, tests=tests, replace=True)
    store.set_flake_rates({t: flaky.get(t, 0.0) for t in tests})
    spawners = {t for e in evidence for t in e.spawners}
    doctests = {t for e in evidence for t in e.doctests}
    store.set_test_kinds({t: (t in spawners, t in doctests) for t in tests})
    for e in evidence:
        store.record_run(
            RunRecord(
                id=uuid.uuid4().hex,
                timestamp=time.time(),
                commit_sha=sha,
                duration_ms=e.duration_ms,
                outcomes=tuple(e.outcomes.values()),
            )
        )
    fields["session_ran"] = session_ran_field(
        *(e.session_ran for e in evidence),
        *([_recorded_session(store.ingest_info())] if shard else []),  # the other shards'
    )
    if shard is None:
        store.update_ingest_info(**fields, coverage_complete=True)
    else:  # completeness is the shard marker's to say, atomically with the marking
        store.update_ingest_info(**fields)
        store.mark_shard(sha, shard[0], shard[1], tests=len(tests))
    return written[0]
