"""``guard ingest-static``: index the repository's Python files into the graph, incrementally."""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import attrs

from guard_adapters.git.repo import git, repo_root, tracked_files
from guard_adapters.index.index import RawIndex, content_sha, index_file
from guard_adapters.index.shared_index import IndexJob, index_key, keep, lookup
from guard_adapters.interrupts import interrupts_deferred
from guard_adapters.pytest.layout import load_layout
from guard_adapters.python.modules import module_name
from guard_adapters.python.slicer import file_role
from guard_core.index_model import CallEdge, FileIndex
from guard_core.model import FileRole
from guard_core.ports import IndexWriter

Progress = Callable[[int, int], None]
_PARALLEL_FROM = 24  # below this many files a process pool costs more than it saves


@attrs.frozen
class StaticReport:
    indexed: int
    reused: int  # of those indexed, how many came from the shared index (not parsed)
    unchanged: int
    removed: int
    parse_errors: tuple[str, ...]
    functions: int
    tests: int


def _job(args: tuple[IndexJob, bytes]) -> RawIndex:
    (_, path, module, layout, is_test), data = args
    return index_file(path, data, module, layout, is_test)


def _to_file_index(raw: RawIndex) -> FileIndex:
    calls = tuple(
        CallEdge(caller, target, conf)
        for caller, targets in sorted(raw.calls.items())
        for target, conf in sorted(targets.items())
    )
    return attrs.evolve(raw.file, calls=calls, imports=raw.imports, aliases=raw.aliases)


@attrs.frozen
class Indexed:
    results: list[RawIndex]  # in plan order
    reused: int  # taken from the shared index, not parsed


@attrs.frozen
class StaticPlan:
    """Which files an incremental index has to (re)index and drop."""

    root: Path
    jobs: tuple[IndexJob, ...]
    removed: tuple[str, ...]
    unchanged: int


def plan_static(root: Path, known: dict[str, str], include_tests: bool) -> StaticPlan:
    """Files whose content differs from ``known`` (path -> content hash), and files gone."""
    layout = load_layout(root)
    wanted: dict[str, FileRole] = {}
    present = tracked_files(root)
    for path in present:
        if not path.endswith(".py"):
            continue
        role = file_role(path, layout)
        if role in (FileRole.TEST, FileRole.CONFTEST) and not include_tests:
            continue
        wanted[path] = role
    jobs = []
    unchanged = 0
    for path, role in sorted(wanted.items()):
        data = (root / path).read_bytes()
        if known.get(path) == content_sha(data):
            unchanged += 1
            continue
        jobs.append((str(root), path, module_name(root, path), layout, role is FileRole.TEST))
    # only files gone from the repository: a test file skipped for lack of --include-tests
    # keeps its tests and their evidence
    existing = set(present)
    removed = tuple(p for p in known if p.endswith(".py") and p not in existing)
    return StaticPlan(root, tuple(jobs), removed, unchanged)


def index_planned(
    plan: StaticPlan,
    progress: Progress | None = None,
    workers: int | None = None,
    shared: object = None,
) -> Indexed:
    """The index of each planned file, in plan order: taken from ``shared`` (a store that
    keeps indexes by content) where it holds the file's version, parsed otherwise, and what
    was parsed is kept there for every later ingest."""
    total = len(plan.jobs)
    data = [(Path(job[0]) / job[1]).read_bytes() for job in plan.jobs]
    keys = [index_key(job, content) for job, content in zip(plan.jobs, data, strict=True)]
    found = lookup(shared, keys)
    todo = [
        (job, content)
        for job, content, key in zip(plan.jobs, data, keys, strict=True)
        if key not in found
    ]
    parsed: dict[str, RawIndex] = {}
    done = total - len(todo)
    if progress and done:
        progress(done, total)
    workers = workers if workers is not None else min(os.cpu_count() or 1, 4)
    missing = (key for key in keys if key not in found)
    if workers > 1 and len(todo) >= _PARALLEL_FROM:
        with ProcessPoolExecutor(max_workers=workers) as pool:
            for key, raw in zip(missing, pool.map(_job, todo, chunksize=4), strict=False):
                parsed[key] = raw
                done += 1
                if progress:
                    progress(done, total)
    else:
        for key, args in zip(missing, todo, strict=False):
            parsed[key] = _job(args)
            done += 1
            if progress:
                progress(done, total)
    keep(shared, parsed)
    return Indexed([found[key] if key in found else parsed[key] for key in keys], len(found))


def write_static(
    store: IndexWriter, plan: StaticPlan, indexed: Indexed, tree_sha: str | None = None
) -> StaticReport:
    """Write the index; ``tree_sha``: the commit whose tree it parsed (default HEAD), which
    a check compares with the evidence's before trusting the index's lines."""
    results = indexed.results
    head = (
        tree_sha
        or str(git(plan.root, "rev-parse", "--verify", "--quiet", "HEAD", check=False)).strip()
    )
    files = [_to_file_index(r) for r in results]
    with interrupts_deferred():  # the index is the old one or the new one, never a mix
        store.remove_files(plan.removed)
        store.write_files(files)
        store.update_ingest_info(static_sha=head or None)
    return StaticReport(
        indexed=len(results),
        reused=indexed.reused,
        unchanged=plan.unchanged,
        removed=len(plan.removed),
        parse_errors=tuple(
            f"{r.file.path}: {r.file.parse_error}" for r in results if r.file.parse_error
        ),
        functions=sum(len(r.file.functions) for r in results),
        tests=sum(len(r.file.tests) for r in results),
    )


def ingest_static(
    repo: Path,
    store: IndexWriter,
    include_tests: bool = False,
    progress: Progress | None = None,
    workers: int | None = None,
) -> StaticReport:
    """Index changed files (content hash differs), drop deleted ones, record the commit."""
    plan = plan_static(repo_root(repo), store.file_hashes(), include_tests)
    return write_static(store, plan, index_planned(plan, progress, workers, shared=store))
