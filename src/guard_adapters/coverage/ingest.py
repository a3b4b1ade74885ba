"""``guard ingest-coverage``'s adapter half: run the suite under the collector plugin, map
executed lines to region ids, and charge shared setup (and cache fills) to every test that
depends on it. The use case itself — runs, merge, writes — is :mod:`guard_core.evidence`.

Nothing is written until every run has finished: a suite that fails to collect, a crash or
Ctrl-C leaves the previous evidence as it was.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from posixpath import relpath
from typing import Any

import attrs
from coverage import CoverageData

from guard_adapters.coverage.charges import charge_consumed
from guard_adapters.coverage.payload import CollectorPayload
from guard_adapters.coverage.reflected import NameCodes, recorded_files
from guard_adapters.git.repo import head_sha, repo_root
from guard_adapters.index.ingest import index_planned, plan_static, write_static
from guard_adapters.interrupts import interrupts_deferred
from guard_adapters.pytest.child import PREFIX as CHILD_PREFIX
from guard_adapters.pytest.labels import COLLECT, FILL, IMPORT, MEMO, OWN, SEGMENT, SESSION
from guard_adapters.pytest.projects import nested_in, subprojects
from guard_adapters.pytest.runner import plugins_path
from guard_adapters.python.regions import ModuleRegions, extract_regions
from guard_core.errors import GuardError, IngestError
from guard_core.evidence import UNKNOWN_LINE, CoverageReport, RunEvidence
from guard_core.evidence import ingest_coverage as record_coverage
from guard_core.logs import get_logger
from guard_core.model import (
    TestOutcome,
    failure_signature,
    test_function_id,
)
from guard_core.ports import EvidenceBases, GraphStore, store_for_commit

log = get_logger("guard.coverage")

Progress = Callable[[int, int], None]
_SHARED = (SESSION, IMPORT)


Executed = dict[str, set[int]]  # region id or data-file path -> lines executed in it
Lines = dict[str, frozenset[int]]  # the same, frozen


def _progress_of(out: Path) -> tuple[int, int]:
    """(tests finished, tests to run) as the collector processes report them."""
    total = done = 0
    for path in out.glob("total-*"):
        with contextlib.suppress(OSError, ValueError):
            total = max(total, int(path.read_text() or 0))
    for path in out.glob("done-*"):
        with contextlib.suppress(OSError):
            done += path.stat().st_size
    return done, total


def run_collector(
    root: Path,
    python: str,
    pytest_args: Sequence[str],
    shard: tuple[int, int] | None,
    out: Path,
    progress: Progress | None = None,
    project: str = "",
    may_be_empty: bool = False,
) -> CollectorPayload:
    """Run pytest once under the collector plugin, from the folder of ``project`` (a
    subfolder with its own pytest configuration; "" the root's); return its payload.
    ``may_be_empty``: a run that collects no test is no failure (one project of several)."""
    env = {
        **os.environ,
        "GUARD_REPO": str(root),
        "GUARD_COLLECT_OUT": str(out),
        "PYTHONPATH": plugins_path(),
    }
    cmd = [
        python,
        "-m",
        "pytest",
        "-p",
        "guard_adapters.pytest.collector",
        "-p",
        "no:cacheprovider",
        "-q",
        "--no-header",
        *pytest_args,
    ]
    if shard:
        cmd.append(f"--guard-shard={shard[0]}/{shard[1]}")
    log = out / "pytest.log"
    try:
        with open(log, "w+b") as sink:
            proc = subprocess.Popen(
                cmd, cwd=root / project, env=env, stdout=sink, stderr=subprocess.STDOUT
            )
            try:
                while True:
                    if progress:
                        progress(*_progress_of(out))
                    try:
                        proc.wait(timeout=0.2)  # returns as soon as pytest exits
                        break
                    except subprocess.TimeoutExpired:
                        continue
            except BaseException:  # Ctrl-C: stop pytest; nothing has been written yet
                proc.kill()
                proc.wait()
                raise
            if progress:
                progress(*_progress_of(out))
    except OSError as exc:
        raise IngestError(
            f"cannot start pytest with {python}: {exc}",
            hint="pass --python with the interpreter that runs the tests",
        ) from exc
    results = sorted(out.glob("tests-*.json"))
    # a shard may hold no test at all (more shards than test files), and so may one project
    # of several: pytest's "no tests"
    done = (0, 1, 5) if shard or may_be_empty else (0, 1)
    if proc.returncode not in done or not results:
        output = log.read_text(encoding="utf-8", errors="replace")
        tail = "\n".join(output.strip().splitlines()[-15:])
        raise IngestError(
            f"pytest exited with code {proc.returncode} before the run completed; "
            f"the previous evidence is kept.\n{tail}",
            hint="fix the collection error above, or pass the test arguments with --pytest-args",
        )
    return CollectorPayload.read(out)


def _regions(root: Path, path: str, cache: dict[str, ModuleRegions | None]) -> ModuleRegions | None:
    if path not in cache:
        try:
            cache[path] = extract_regions(path, (root / path).read_text(encoding="utf-8"))
        except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):
            cache[path] = None
    return cache[path]


def _placed(regions: ModuleRegions, line: int) -> tuple[str, int]:
    """The region that owns an executed line, and the line; a line of no statement the file
    has (an empty module runs "line 1" on Python 3.10, "line 0" later) says only that the
    module ran: an unknown line."""
    if regions.has_code and 1 <= line <= len(regions.owners):
        return regions.owner(line), line
    return regions.owner(line), UNKNOWN_LINE


def _executed() -> defaultdict[str, Executed]:
    return defaultdict(lambda: defaultdict(set))


def _merge(into: Executed, other: Executed) -> None:
    for rid, lines in other.items():
        into[rid] |= lines


def _combine(parts: Sequence[Lines]) -> Lines:
    """The union of ``parts`` (largest first: a dict copy is cheap, a loop is not); a line set
    only one part has is that part's own object, not a copy."""
    if not parts:
        return {}
    ordered = sorted(parts, key=len, reverse=True)
    out = dict(ordered[0])
    for part in ordered[1:]:
        for rid, lines in part.items():
            have = out.get(rid)
            out[rid] = lines if have is None or have is lines else have | lines
    return out


def read_evidence(root: Path, out: Path, payload: CollectorPayload) -> RunEvidence:
    """Executed ids and lines per context from the collector's data, then charged to tests."""
    by_context = _executed()
    cache: dict[str, ModuleRegions | None] = {}
    for db in sorted(out.glob("coverage-*.db")):
        data = CoverageData(basename=str(db))
        data.read()
        for measured in data.measured_files():
            if not measured.endswith(".py"):
                continue  # e.g. compiled templates: they are data-file evidence instead
            try:
                rel = Path(measured).resolve().relative_to(root).as_posix()
            except ValueError:
                continue
            regions = _regions(root, rel, cache)
            if regions is None:
                continue
            for line, contexts in data.contexts_by_lineno(measured).items():
                owner, line = _placed(regions, line)
                for ctx in contexts:
                    by_context[ctx][owner].add(line)
    for ctx, files in payload.lines.items():  # lines the collector kept itself
        for rel, lines in files.items():
            regions = _regions(root, rel, cache)
            if regions is not None:
                for line in lines:
                    owner, line = _placed(regions, line)
                    by_context[ctx][owner].add(line)
    names = NameCodes()
    for ctx, by_file in payload.reflected.items():
        for rel, by_line in by_file.items():
            regions = _regions(root, rel, cache)
            if regions is not None:
                for at, found in by_line.items():
                    owner, _ = _placed(regions, int(at))
                    by_context[ctx][owner].update(names.encode(found))
    for path in payload.preloaded:
        regions = _regions(root, path, cache)
        if regions is not None:
            for rid in regions.regions:
                by_context[SESSION][rid].add(UNKNOWN_LINE)
    for ctx, paths in payload.opened.items():
        for path in paths:  # data files are evidence under their own path
            by_context[ctx][path].add(UNKNOWN_LINE)
    spawned = set(payload.spawned) | _child_lines(root, out, payload, by_context, cache)
    # what each context read from a cache another context filled: the fill's lines too
    charge_consumed(by_context, payload.consumed, spawned, (MEMO, SEGMENT, FILL, OWN), OWN)
    shared: Executed = defaultdict(set)
    session_ran: set[str] = set()
    collected: list[str] = []  # node id prefixes whose collection ran code
    for ctx, ran in by_context.items():
        if ctx.startswith(_SHARED):
            _merge(shared, ran)
            if not ctx.startswith(IMPORT):
                session_ran.update(ran)
        elif ctx.startswith(COLLECT):
            collected.append(ctx[len(COLLECT) :])
    frozen_contexts: dict[str, Lines] = {}

    def frozen(ctx: str) -> Lines:
        """A context's lines, frozen once: a fixture's are shared by every test using it."""
        found = frozen_contexts.get(ctx)
        if found is None:
            ran = by_context[ctx]
            found = frozen_contexts[ctx] = {rid: frozenset(lines) for rid, lines in ran.items()}
        return found

    executed: dict[str, Lines] = {}
    outcomes: dict[str, TestOutcome] = {}
    failures: dict[str, str] = {}
    everyone_spawns = any(ctx.startswith(_SHARED) for ctx in spawned)  # a session-wide child
    spawners: set[str] = set()
    doctests: set[str] = set()
    total_ms = 0.0
    for nodeid, info in payload.tests.items():
        tid = test_function_id(nodeid)
        if (
            everyone_spawns
            or nodeid in spawned
            or spawned.intersection(info.fixtures)
            or any(
                ctx.startswith(COLLECT) and _under(nodeid, ctx[len(COLLECT) :]) for ctx in spawned
            )
        ):
            spawners.add(tid)
        if info.doctest:
            doctests.add(tid)
        parts = [frozen(nodeid)] if nodeid in by_context else []
        parts.extend(frozen(COLLECT + prefix) for prefix in collected if _under(nodeid, prefix))
        parts.extend(frozen(f) for f in info.fixtures if f in by_context)
        if tid in executed:  # another parametrisation of the same test function
            parts.append(executed[tid])
        executed[tid] = _combine(parts)
        total_ms += info.duration_ms
        previous = outcomes.get(tid)
        outcome = info.outcome
        if outcome in ("failed", "error"):
            failures[nodeid] = failure_signature(info.message)
        if previous is None or outcome in ("failed", "error"):
            outcomes[tid] = TestOutcome(tid, outcome, info.duration_ms, info.message)
    shared_only: dict[str, frozenset[str]] = {}
    everyone = {rid: frozenset(lines) for rid, lines in shared.items()}
    reflected: dict[str, dict[str, frozenset[str]]] = {}
    for tid, mine in executed.items():
        shared_only[tid] = frozenset(everyone.keys() - mine.keys())
        executed[tid], reflected[tid] = names.decode(_combine([everyone, mine]))
    return RunEvidence(
        executed=executed,
        outcomes=outcomes,
        duration_ms=total_ms,
        shared_only=shared_only,
        failures=failures,
        spawners=frozenset(spawners),
        doctests=frozenset(doctests),
        reflected={tid: found for tid, found in reflected.items() if found},
        recorded_files=recorded_files(payload, executed, spawned, (MEMO, SEGMENT, FILL, OWN)),
        session_ran=frozenset(session_ran),
    )


def merge_projects(parts: Sequence[RunEvidence]) -> RunEvidence:
    """The evidence of one run of each project: their tests are apart, so is each one's."""
    return RunEvidence(
        executed={t: lines for p in parts for t, lines in p.executed.items()},
        outcomes={t: o for p in parts for t, o in p.outcomes.items()},
        duration_ms=sum(p.duration_ms for p in parts),
        shared_only={t: ids for p in parts for t, ids in p.shared_only.items()},
        failures={t: f for p in parts for t, f in p.failures.items()},
        spawners=frozenset().union(*(p.spawners for p in parts)),
        doctests=frozenset().union(*(p.doctests for p in parts)),
        reflected={t: found for p in parts for t, found in p.reflected.items()},
        # a file one project did not record is recorded for none (their tests share it)
        recorded_files=frozenset.intersection(*(p.recorded_files for p in parts))
        if parts
        else frozenset(),
        session_ran=None
        if any(p.session_ran is None for p in parts)
        else frozenset[str]().union(*(p.session_ran or () for p in parts)),
    )


def _child_lines(
    root: Path,
    out: Path,
    payload: CollectorPayload,
    by_context: defaultdict[str, Executed],
    cache: dict[str, ModuleRegions | None],
) -> set[str]:
    """Charge what each measured child process ran to the context that started it; return
    the contexts whose children were not all measured (no file: killed, isolated mode, an
    environment of its own; or a child that started processes of its own)."""
    found: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for path in out.glob(f"{CHILD_PREFIX}*.json"):
        with contextlib.suppress(OSError, ValueError):
            part = json.loads(path.read_text(encoding="utf-8"))
            found[str(part.get("token"))].append(part)
    unmeasured: set[str] = set()
    for token, ctx in payload.children.items():
        parts = found.get(token, [])
        if not parts or any(p.get("spawned", True) for p in parts):
            unmeasured.add(ctx)
            continue
        for part in parts:
            for rel, lines in part.get("lines", {}).items():
                regions = _regions(root, rel, cache)
                if regions is not None:
                    for line in lines:
                        owner, line = _placed(regions, line)
                        by_context[ctx][owner].add(line)
    return unmeasured


def _under(nodeid: str, prefix: str) -> bool:
    """Whether the collector node ``prefix`` contains the test ``nodeid``."""
    if not prefix or prefix == ".":
        return True
    return nodeid == prefix or nodeid.startswith((prefix + "::", prefix.rstrip("/") + "/"))


@attrs.define
class _IndexedFirst:
    """A collector that writes the static index (parsed while the first run goes on) before
    it hands over any evidence; the index is written even when the run fails, as it was
    written before the run when it came first."""

    inner: CoverageCollector
    write_index: Callable[[], None]
    python: str = attrs.field(init=False)
    written: bool = False

    def __attrs_post_init__(self) -> None:
        self.python = self.inner.python

    def collect(self, *, run: int, runs: int, shard: tuple[int, int] | None) -> RunEvidence:
        evidence = self.inner.collect(run=run, runs=runs, shard=shard)
        self.settle()
        return evidence

    def settle(self) -> None:
        if not self.written:
            self.written = True
            self.write_index()


@attrs.define
class CoverageCollector:
    """Runs pytest under the collector plug-in, in ``python``, and reads what it measured."""

    root: Path
    python: str
    pytest_args: Sequence[str] = ()
    progress: Progress | None = None

    def collect(self, *, run: int, runs: int, shard: tuple[int, int] | None) -> RunEvidence:
        """One run of the suite: of every pytest project in the repository, each from its
        own folder (the root's run leaves the subfolder projects out)."""
        projects = subprojects(self.root)

        def tick(done: int, total: int) -> None:
            if self.progress and total:
                self.progress(run * total + done, runs * total)

        parts = []
        for project in ("", *projects):
            nested = nested_in(project, projects)
            args = [*self.pytest_args, *(f"--ignore={relpath(p, project or '.')}" for p in nested)]
            with tempfile.TemporaryDirectory(prefix="guard-cov-") as tmp:
                out = Path(tmp)
                payload = run_collector(
                    self.root, self.python, args, shard, out, tick, project, bool(projects)
                )
                parts.append(read_evidence(self.root, out, payload))
        return parts[0] if len(parts) == 1 else merge_projects(parts)


def ingest_coverage(
    repo: Path,
    store: GraphStore,
    *,
    runs: int = 1,
    python: str | None = None,
    pytest_args: Sequence[str] = (),
    shard: tuple[int, int] | None = None,
    progress: Progress | None = None,
    environment: str | None = None,
) -> CoverageReport:
    """The coverage ingest of ``repo`` at HEAD: :func:`guard_core.evidence.ingest_coverage`,
    with the static index parsed during the first run and written before the evidence (the
    evidence's ids must match the code that runs)."""
    root = repo_root(repo)
    sha = head_sha(root)
    started = time.perf_counter()
    target = store_for_commit(store, sha)
    plan = plan_static(root, target.file_hashes(), include_tests=True)
    with ThreadPoolExecutor(max_workers=1) as pool:
        # the index parses while pytest runs (on the core it leaves free, then on every core),
        # and is written before any evidence
        indexed = pool.submit(index_planned, plan, None, None, target)

        def write_index() -> None:
            write_static(target, plan, indexed.result())
            if isinstance(store, EvidenceBases):  # before the evidence below can be complete
                store.carry_repairs(target, sha)

        inner = CoverageCollector(root, python or sys.executable, pytest_args, progress)
        collector = _IndexedFirst(inner, write_index)
        try:
            report = record_coverage(
                target, collector, sha=sha, runs=runs, shard=shard, environment=environment,
                shielded=interrupts_deferred,
            )  # fmt: skip
        except Exception:
            try:
                collector.settle()
            except Exception as exc:  # the run's own error is the one to report
                log.warning("static_index_failed", error=str(exc))
            raise
    if isinstance(store, EvidenceBases) and target.ingest_info().coverage_complete:
        try:
            store.prune_bases(protect=[sha])
        except GuardError as exc:  # the evidence is written; old bases stay a while longer
            log.warning("prune_failed", error=str(exc))
    return attrs.evolve(report, duration_s=time.perf_counter() - started)
