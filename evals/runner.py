"""Evaluate every strategy on one target's frozen edits."""

from __future__ import annotations

import hashlib
import platform
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import attrs

from evals import strategies
from evals.coverage_select import CoverageSelector
from evals.edits import SPLIT, Edit, apply, revert
from evals.metrics import Outcome, Summary, summarise, time_saved
from evals.pytest_run import SuiteRun, SuiteTimeout, run_pytest
from evals.targets import WORK, Prepared, optional_install, prepare
from evals.truth import TRUTH, Truth, TruthCache, ground_truth, serial, suite

Log = Callable[[str], None]


@attrs.frozen
class TargetResult:
    target: str
    tests: int
    suite_seconds: float  # baseline wall of the whole suite
    ingest_seconds: float
    summaries: tuple[Summary, ...]
    rows: tuple[dict[str, Any], ...]  # per edit: kind, truth, per-strategy selection size
    split_sha256: str = ""  # sha256 of the split file's bytes: which frozen edits
    edits_sha256: str = ""  # sha256 of the measured edits (id and diff, in order): which subset
    guard_commit: str = ""  # the Guard commit measured, "+dirty" when src/ or evals/ differ
    guard_commit_end: str = ""  # the same, read when the run ended: equal, or no result
    python: str = ""  # the harness's interpreter (the target runs in its own venv)
    src_tree: str = ""  # the tree of Guard's src/ at guard_commit
    timed_out: tuple[str, ...] = ()  # edits whose whole suite did not finish: no truth
    # edits whose two truth runs disagreed, reported apart: rows as above, with both runs
    unstable: tuple[dict[str, Any], ...] = ()


ROOT = Path(__file__).resolve().parent.parent


def split_digest(path: Path = SPLIT) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def edits_digest(edits: Sequence[Edit]) -> str:
    digest = hashlib.sha256()
    for edit in edits:
        digest.update(f"{edit.id}\0{edit.diff}\0".encode())
    return digest.hexdigest()


def _git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True,
                          check=False).stdout.strip()  # fmt: skip


def guard_commit(root: Path = ROOT) -> str:
    """HEAD of Guard's repository, marked dirty when its code or harness has local changes
    (the truth cache and reports, which a run itself writes, don't count)."""
    head = _git(root, "rev-parse", "HEAD") or "unknown"
    dirty = _git(root, "status", "--porcelain", "--", "src", "evals", ":(exclude)evals/truth")
    return head + ("+dirty" if dirty else "")


def src_tree(commit: str, root: Path = ROOT) -> str:
    """The git tree of ``src/`` at ``commit`` ("" when unknown): two commits with the same
    tree measure the same Guard."""
    return _git(root, "rev-parse", f"{commit.removesuffix('+dirty')}:src")


def stop_server(repo: Path) -> None:
    """Stop the embedded FalkorDB that Guard started for ``repo`` (no-op in server mode)."""
    guard = Path(sys.executable).parent / "guard"
    subprocess.run([str(guard), "server", "stop", "--repo", str(repo)], capture_output=True,
                   check=False)  # fmt: skip


def ingest(prepared: Prepared) -> float:
    """Guard's static + per-test evidence ingest, through the CLI as a user runs it."""
    guard = Path(sys.executable).parent / "guard"
    started = time.perf_counter()
    subprocess.run(
        [
            str(guard),
            "ingest-coverage",
            str(prepared.repo),
            "--python",
            str(prepared.python),
            "--full",
        ],
        check=True,
        capture_output=True,
    )
    return time.perf_counter() - started


def evaluate(
    target_name: str,
    edits: Sequence[Edit],
    *,
    fresh_truth: bool = False,
    testmon: bool = True,
    log: Log = print,
    work: Path = WORK,
    truth_dir: Path = TRUTH,
    split: Path = SPLIT,
) -> TargetResult:
    from evals.targets import TARGETS

    commit = guard_commit()  # before the run writes its truth cache
    prepared = prepare(TARGETS[target_name], work)
    return measure(
        prepared, edits, commit, fresh_truth=fresh_truth, testmon=testmon, log=log, work=work,
        truth_dir=truth_dir, split=split,
    )  # fmt: skip


def measure(
    prepared: Prepared,
    edits: Sequence[Edit],
    commit: str,
    *,
    fresh_truth: bool = False,
    testmon: bool = True,
    log: Log = print,
    work: Path = WORK,
    truth_dir: Path = TRUTH,
    split: Path = SPLIT,
) -> TargetResult:
    """Every strategy on ``edits`` of a prepared repository (``commit``: Guard's, read before
    anything was written)."""
    target_name = prepared.target.name
    log(f"[{target_name}] baseline suite")
    baseline = suite(prepared, prepared.target.pytest_args)
    universe = strategies.Universe(baseline.seconds)
    peer = None  # installed before Guard's ingest: a new package afterwards widens to run-all
    if testmon and prepared.target.testmon and optional_install(prepared.python, "pytest-testmon"):
        peer = strategies.Testmon(prepared, work)
        peer.build()
    log(f"[{target_name}] {len(baseline.seconds)} tests, {baseline.wall:.1f} s; per-test coverage")
    coverage = CoverageSelector.build(prepared, universe, work)
    log(f"[{target_name}] guard ingest")
    ingest_seconds = ingest(prepared)
    cache = TruthCache(prepared, fresh_truth, truth_dir)
    serial_baseline = baseline  # the clean tree run serially, for the truth still to compute
    if any(cache.get(edit) is None for edit in edits):
        serial_baseline = suite(prepared, serial(prepared.target.pytest_args))
    guards = {
        name: strategies.guard_variant(prepared.repo, variant)
        for name, variant in strategies.GUARD_VARIANTS.items()
    }
    for g in guards.values():
        g.check()  # warm: connection, plugin manager, imports
    outcomes: dict[str, list[Outcome]] = {}
    rows, run_all_wall = [], {}
    timed_out: list[str] = []
    unstable: list[dict[str, Any]] = []
    try:
        for n, edit in enumerate(edits, 1):
            apply(prepared.repo, edit)
            try:
                try:
                    truth = ground_truth(prepared, (baseline, serial_baseline), cache, edit)
                except SuiteTimeout as exc:  # no truth to judge against: reported apart
                    timed_out.append(edit.id)
                    log(f"[{target_name}] {n}/{len(edits)} {edit.id}: left out ({exc})")
                    continue
                # the denominator is this run's own whole-suite time, not the cached truth
                # run's (measured earlier, maybe on a busier machine)
                run_all_wall[edit.id] = baseline.wall
                picks = {
                    "run-all": strategies.Selection(None, 0.0, baseline.wall),
                    "same-file": strategies.same_file(edit, universe),
                    "naive-guess": strategies.naive_guess(edit, universe),
                }
                for name, g in guards.items():
                    picks[name] = strategies.guard_selection(g)
                picks["guard"] = _measured(prepared, picks["guard"], baseline.wall)
                picks["coverage"] = coverage.select(edit)
                if peer is not None:
                    picks["testmon"] = peer.select()
            finally:
                revert(prepared.repo)
            # judged by the tests each selection runs (a selected file: every test in it)
            picks = {k: strategies.in_suite(p, baseline.seconds) for k, p in picks.items()}
            overhead = max(baseline.wall - sum(baseline.seconds.values()), 0.0)
            judged = {k: _outcome(edit, p, truth, baseline, overhead) for k, p in picks.items()}
            row = _row(edit, picks, judged, baseline)
            if truth.stable:
                for name, outcome in judged.items():
                    outcomes.setdefault(name, []).append(outcome)
                rows.append(row)
            else:  # judged against either run's failures, kept out of the figures
                unstable.append({**row, "runs": [sorted(run) for run in truth.runs]})
            log(
                f"[{target_name}] {n}/{len(edits)} {edit.id}: {len(truth.failing)} failing"
                f"{' (cached)' if truth.cached else ''}; guard "
                f"{'run-all' if picks['guard'].tests is None else len(picks['guard'].tests)}"
            )
    finally:
        for g in guards.values():
            g.close()
        stop_server(prepared.repo)
    summaries = tuple(
        summarise(name, outs, baseline.seconds, run_all_wall) for name, outs in outcomes.items()
    )
    return TargetResult(
        target_name,
        len(baseline.seconds),
        baseline.wall,
        ingest_seconds,
        summaries,
        tuple(rows),
        split_sha256=split_digest(split),
        edits_sha256=edits_digest(edits),
        guard_commit=commit,
        guard_commit_end=guard_commit(),
        python=platform.python_version(),
        src_tree=src_tree(commit),
        timed_out=tuple(timed_out),
        unstable=tuple(unstable),
    )


def _row(
    edit: Edit,
    picks: dict[str, strategies.Selection],
    judged: dict[str, Outcome],
    baseline: SuiteRun,
) -> dict[str, Any]:
    return {
        "edit": edit.id,
        "kind": edit.kind,
        "split": edit.split,
        "failing": len(next(iter(judged.values())).failing),
        "sizes": {k: None if p.tests is None else len(p.tests) for k, p in picks.items()},
        "savings": {k: round(time_saved(p.tests, baseline.seconds), 4) for k, p in picks.items()},
        "missed": {k: sorted(o.escaped()) for k, o in judged.items() if o.escaped()},
        # seconds to decide, and to decide and run where that was measured: the cost per edit
        "latency": {k: round(p.latency, 4) for k, p in picks.items() if p.latency is not None},
        "wall": {k: round(o.wall, 3) for k, o in judged.items() if o.wall_measured},
    }


def _measured(
    prepared: Prepared, pick: strategies.Selection, run_all: float
) -> strategies.Selection:
    """Guard's wall time is measured: its selection really runs (run-all reuses the truth run)."""
    if pick.tests is None:
        return attrs.evolve(pick, wall=(pick.latency or 0.0) + run_all)
    run = run_pytest(prepared.python, prepared.repo, pick.tests, prepared.target.pytest_args)
    return attrs.evolve(pick, wall=(pick.latency or 0.0) + run.wall)


def _outcome(
    edit: Edit,
    pick: strategies.Selection,
    truth: Truth,
    baseline: SuiteRun,
    overhead: float,
) -> Outcome:
    seconds = baseline.seconds
    wall, measured = pick.wall, pick.wall is not None
    if pick.tests is None:  # the whole suite, as timed by this run's baseline
        wall, measured = (pick.latency or 0.0) + baseline.wall, True
    elif wall is None:  # estimated: pytest's start-up plus the selected tests' baseline time
        ran = sum(seconds.get(t, 0.0) for t in pick.tests)
        wall = (pick.latency or 0.0) + (overhead + ran if ran else 0.0)
    # an unstable edit is judged against what failed in either run
    failing = truth.failing if truth.stable else truth.runs[0] | truth.runs[1]
    return Outcome(edit.id, pick.tests, failing, pick.latency, wall, measured)
