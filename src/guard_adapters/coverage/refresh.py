"""Evidence refresh for ``guard run``: the tests it runs are measured by the collector, and when
they all pass the evidence base moves to the tree they ran on (a snapshot commit).

Why the rest of the evidence stays true: a test the decision left out executed none of the
changed code, so it runs the same code at the new tree; only the line numbers it recorded in
the changed files move, and they are re-mapped through the diff (a line that did not survive
makes that edge's lines unknown, which selects more, never less). The selected tests get new
edges. Edges of unchanged files are carried over as they are. Where evidence is kept per
commit (linked worktrees, or a shared server with ``refresh_evidence`` set), the refresh writes
a copy of the base it read as the new tree's own base (``GRAPH.COPY``), so the bases other
worktrees read stay as they were.

Anything unusual leaves the evidence where it was, which only makes later diffs larger: a
test failing that did not fail the same way at the base, a timed-out run, a tree edited while
the tests ran, a decision with problems, a renamed Python file, another interpreter than the
ingest's, a shared graph server (unless ``refresh_evidence`` is set), or any error while
writing (the graph is then marked incomplete, so the next decision runs everything).
"""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Iterable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import attrs

from guard_adapters.coverage.ingest import read_evidence
from guard_adapters.coverage.payload import CollectorPayload
from guard_adapters.git.diff import read_at
from guard_adapters.git.snapshot import snapshot_commit, working_tree_id
from guard_adapters.index.ingest import (
    Indexed,
    StaticPlan,
    index_planned,
    plan_static,
    write_static,
)
from guard_adapters.pytest.environment import environment_probe, interpreter
from guard_core.config import Settings
from guard_core.evidence import merge_runs, session_ran_field
from guard_core.lines import line_mapping, observers, remap_edge_lines
from guard_core.logs import get_logger
from guard_core.model import (
    ChangeKind,
    CoverEdge,
    Decision,
    FileKind,
    Level,
    OverrideKind,
    RegionKind,
    TestOutcome,
    failure_signature,
    test_function_id,
)
from guard_core.ports import REFRESHED, EvidenceBases, ForksBases, GraphStore, RunResult
from guard_core.selection import judged_id, module_region

log = get_logger("guard.refresh")
_FAILED = ("failed", "error")
_MAX_LINEAGE = 100


@attrs.frozen
class Session:
    decision: Decision
    tree: str  # the working tree's git tree id before the decision
    base: str | None  # the evidence base the decision diffed against
    full: bool  # the whole suite runs: the refresh replaces all evidence
    out: tempfile.TemporaryDirectory[str]
    known: Mapping[str, str]  # node ids failing at the base, and how
    lineage: tuple[str, ...]  # the bases the current one was refreshed from
    static: StaticPlan  # the files to re-index, indexed while the tests run:
    indexed: Future[Indexed]

    def known_failure(self, outcome: TestOutcome) -> bool:
        """Whether ``outcome`` is a failure the base already had: the same test (down to its
        parameters), failing the same way."""
        expected = self.known.get(outcome.test)
        return expected is not None and expected == failure_signature(outcome.message)

    def failures_after(self, result: RunResult, ran: Iterable[str]) -> dict[str, str]:
        """The known failures at the new base: those of this run, and (when only some tests
        ran) the base's failures of the tests that did not run."""
        now = {
            o.test: failure_signature(o.message)
            for o in result.record.outcomes
            if o.outcome in _FAILED
        }
        if self.full:
            return now
        ran_ids = set(ran)
        kept = {t: sig for t, sig in self.known.items() if test_function_id(t) not in ran_ids}
        return {**kept, **now}


class CoverageRefresher:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.repo = settings.repo

    # -- before the run -------------------------------------------------------------------------

    def observe(self) -> str | None:
        try:
            return working_tree_id(self.repo)
        except Exception as exc:  # the run goes on without a refresh
            log.info("refresh_skipped", reason=f"cannot snapshot the working tree: {exc}")
            return None

    def start(self, store: GraphStore, decision: Decision, observed: str) -> Session | None:
        base = _base_of(store, decision)
        why = self._unrefreshable(base, decision) if base is not None else "no evidence base"
        if why or base is None:
            log.info("refresh_skipped", reason=why)
            return None
        info = base.ingest_info()
        plan = plan_static(self.repo, base.file_hashes(), include_tests=True)
        pool = ThreadPoolExecutor(max_workers=1)  # pytest runs in another process meanwhile
        indexed = pool.submit(index_planned, plan, None, 1, base)
        pool.shutdown(wait=False)
        return Session(
            decision,
            observed,
            info.coverage_sha,
            decision.level is Level.RUN_ALL,
            tempfile.TemporaryDirectory(prefix="guard-refresh-"),
            dict(info.known_failures),
            info.lineage,
            plan,
            indexed,
        )

    def _unrefreshable(self, store: GraphStore, decision: Decision) -> str | None:
        info = store.ingest_info()
        if not info.python or info.python != interpreter(self.settings):
            return "the evidence was collected with another interpreter"
        if decision.level is Level.RUN_ALL:
            return None if _whole_suite(decision) else "the graph is unavailable"
        cs = decision.change_set
        if not info.coverage_complete or not info.coverage_sha or cs.base != info.coverage_sha:
            return "the decision does not diff against complete evidence"
        if info.coverage_runs > 1:  # a refresh measures once: the union of runs would shrink
            return f"the evidence merges {info.coverage_runs} runs of the suite"
        if cs.problems:
            return "the change could not be read fully"
        if _import_time_unrun(store, decision, info.session_ran):
            return "import-time code changed, and not every test whose imports ran it runs"
        if any(f.kind is FileKind.RENAMED and f.path.endswith(".py") for f in cs.files):
            return "a Python file was renamed"
        return None

    def collect_dir(self, session: object) -> Path:
        assert isinstance(session, Session)
        return Path(session.out.name)

    # -- after the run --------------------------------------------------------------------------

    def finish(self, store: GraphStore, session: object, result: RunResult) -> str:
        assert isinstance(session, Session)
        with session.out:
            why = self._not_refreshable_after(session, result)
            if why:
                return f"evidence not refreshed: {why}"
            try:
                sha = snapshot_commit(self.repo, session.tree)
                if not isinstance(store, EvidenceBases):
                    return self._write(store, session, result, sha)
                # evidence kept per commit: the refresh writes a copy of the base as the
                # tree's own base, and every other base (another worktree's) stays as it was
                target = (
                    store.fork_base(session.base, sha)
                    if isinstance(store, ForksBases) and session.base
                    else None
                )
                if target is None:
                    return "evidence not refreshed: the tree has evidence, or its base is gone"
                done = self._write(target, session, result, sha)
                # the repairs of `guard feedback` recorded on other bases, as a full ingest
                store.carry_repairs(target, sha)
                store.prune_bases(protect=[sha])
                return done
            except Exception as exc:  # the graph stays marked incomplete
                log.warning("refresh_failed", error=repr(exc), exc_info=True)
                return f"evidence not refreshed ({exc}); the next decision runs every test"

    def _not_refreshable_after(self, session: Session, result: RunResult) -> str | None:
        outcomes = result.record.outcomes
        if result.exit_code not in (0, 1) or not outcomes:
            return "the run did not complete"
        if any(not session.known_failure(o) for o in outcomes if o.outcome in _FAILED):
            return "not every test passed"
        try:
            if working_tree_id(self.repo) != session.tree:
                return "the working tree changed while the tests ran"
        except Exception as exc:
            return f"cannot snapshot the working tree: {exc}"
        return None

    def _write(self, store: GraphStore, session: Session, result: RunResult, sha: str) -> str:
        started = time.perf_counter()
        out = Path(session.out.name)
        payload = CollectorPayload.read(out)
        evidence = read_evidence(self.repo, out, payload)
        ran = sorted(evidence.executed)
        if not ran:
            return "evidence not refreshed: the collector recorded no test"
        if payload.collected is None and not session.full:
            return "evidence not refreshed: the run did not say which tests it collected"
        edges, _ = merge_runs([evidence])
        carried = [] if session.full else self._carry_lines(store, session, set(ran))
        known = json.dumps(session.failures_after(result, ran))
        read = time.perf_counter()
        indexed = session.indexed.result()
        waited = time.perf_counter()
        store.update_ingest_info(coverage_complete=False)  # until every write below has landed
        store.keep_tests(unlisted_tests(indexed, payload.collected or ()))
        write_static(store, session.static, indexed, tree_sha=sha)  # the tree measured
        store.set_test_kinds({t: (t in evidence.spawners, t in evidence.doctests) for t in ran})
        log.debug(
            "refresh_timings",
            read_s=round(read - started, 3),
            index_wait_s=round(waited - read, 3),
            static_write_s=round(time.perf_counter() - waited, 3),
        )
        if session.full:
            store.write_coverage(edges, sha=sha, tests=ran, replace=True)
            store.clear_unproven()
            store.update_ingest_info(
                coverage_sha=sha,
                coverage_complete=True,
                coverage_runs=1,
                environment=environment_probe(self.settings)(),
                known_failures=known,
                lineage=[],
                session_ran=session_ran_field(evidence.session_ran),
            )
            return f"{REFRESHED}: the whole suite re-measured at {sha[:12]}"
        assert session.base is not None
        store.set_edge_lines(carried)
        store.write_coverage(edges, sha=sha, tests=ran, replace=True)
        lineage = [*session.lineage, session.base]
        if len(lineage) > _MAX_LINEAGE:  # fold the old stamps into the new base, one query
            store.restamp_edges(lineage, sha)
            lineage = []
        # new code, and renamed code (its node is new, its old edges gone): no test that did
        # not run here proves it unexercised
        store.mark_unproven(
            r.id
            for r in session.decision.change_set.regions
            if r.kind in (ChangeKind.ADDED, ChangeKind.RENAMED)
        )
        store.update_ingest_info(
            coverage_sha=sha,
            coverage_complete=True,
            known_failures=known,
            lineage=lineage,
            session_ran=session_ran_field(evidence.session_ran, store.ingest_info().session_ran),
        )
        return (
            f"{REFRESHED} at {sha[:12]}: {len(ran)} tests re-measured, "
            f"{len(carried)} edges of other tests re-mapped"
        )

    def _carry_lines(self, store: GraphStore, session: Session, ran: set[str]) -> list[CoverEdge]:
        """The other tests' edges in each changed Python file, with their lines moved to the
        file's new numbering."""
        assert session.base is not None
        carried: list[CoverEdge] = []
        changed = [
            f.path
            for f in session.decision.change_set.files
            if f.kind is FileKind.MODIFIED and f.path.endswith(".py")
        ]
        ids_by_file = store.functions_of_files(changed)
        for path in changed:  # an unreadable side raises: then nothing is written
            old = read_at(self.repo, session.base, path).decode("utf-8").splitlines()
            new = (self.repo / path).read_text(encoding="utf-8").splitlines()
            mapping = line_mapping(old, new)
            for edge in store.covering_tests(ids_by_file.get(path, [])):
                if edge.test in ran or not edge.lines:  # repaired misses' lines move too
                    continue
                moved = remap_edge_lines(edge.lines, mapping)
                if moved != edge.lines:
                    carried.append(attrs.evolve(edge, lines=moved))
        return carried


def unlisted_tests(indexed: Indexed, collected: Iterable[str]) -> set[str]:
    """The tests pytest collects from the re-indexed files that their index does not list
    (inherited from a base class elsewhere, built by a call): they keep their evidence."""
    listed = {t.id for r in indexed.results for t in r.file.tests}
    paths = {r.file.path for r in indexed.results}
    out: set[str] = set()
    for nodeid in collected:
        test = test_function_id(nodeid)
        if test not in listed and nodeid.split("::", 1)[0] in paths:
            out.update((nodeid, test))
    return out


def _import_time_unrun(
    store: GraphStore, decision: Decision, session_ran: frozenset[str] | None
) -> bool:
    """Whether changed code ran at import for a test the decision does not run, where the
    rules charge that run to the test (the import probe replayed it instead): that test's
    import-time evidence would stay the old code's. A body that only binds names is charged
    to the readers of those names, whatever ran it, as without the probe."""
    selected = set(decision.tests)
    for region in decision.change_set.regions:
        body = region.region is not RegionKind.FUNCTION
        if body and region.names and not region.side_effects:
            continue
        ids = [judged_id(region)]
        if region.side_effects:  # the rules select every importer of its module
            ids.append(module_region(region.file))
        edges = [
            e
            for e in store.covering_tests(ids)
            if e.shared and e.function not in (session_ran or ())
        ]
        if region.hunks and not region.definition_changed and not region.side_effects:
            edges = observers(edges, region.hunks)
        if any(e.test not in selected for e in edges):
            return True
    return False


def _base_of(store: GraphStore, decision: Decision) -> GraphStore | None:
    """The graph the decision read: the store itself, or with evidence kept per commit the
    base it chose (None when that base is gone, or the decision read none)."""
    if not isinstance(store, EvidenceBases):
        return store
    sha = decision.evidence.sha if decision.evidence is not None else None
    if not sha:
        return None
    store.evidence_bases()
    return store.at_base(sha)


def _whole_suite(decision: Decision) -> bool:
    return not any(o.kind is OverrideKind.STORE for o in decision.overrides)
