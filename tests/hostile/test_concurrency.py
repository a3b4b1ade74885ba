"""Concurrency and interruption: four checks and an ingest at once; Ctrl-C (SIGINT to the
foreground process group) at several points of an ingest leaves the previous evidence whole
(or the new one, complete), no traceback, no process and no file behind."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.hostile.conftest import Sample
from tests.hostile.harness import (
    SAMPLE,
    TRACEBACK,
    C,
    assert_no_traceback,
    assert_wider,
    git,
    graph_counts,
    replace,
    tree_changes,
    tree_state,
    write,
)

MUL = [C + "test_mul", C + "test_mul_param"]
COVERAGE_KEYS = {"covered_by", "coverage_sha", "runs", "failed_in"}
STATIC_KEYS = {"files", "functions", "tests", "calls", "imports", "static_sha"}


def spawn(sample: Sample, *args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "guard_adapters.cli", *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
        env=sample.env, start_new_session=True,
    )  # fmt: skip


def finish(proc: subprocess.Popen[bytes], timeout: float = 120) -> tuple[int, str, str]:
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        raise AssertionError(f"{proc.args} did not finish within {timeout:.0f}s") from None
    return proc.returncode, out.decode(errors="replace"), err.decode(errors="replace")


@pytest.fixture(scope="module")
def shared(sample_factory: Any) -> Sample:
    """The sample as `guard init` leaves it: `.guard/` in .gitignore (a CLI ingest and the
    checks after it keep interpreter facts there; see test_git for a repo without it)."""
    files = {**SAMPLE, ".gitignore": SAMPLE[".gitignore"] + ".guard/\n"}
    return sample_factory("concurrency", files)


@pytest.fixture(scope="module")
def next_commit(shared: Sample) -> Iterator[dict[str, Any]]:
    """A commit after the evidence's (a new function and its test), ingested once through the
    CLI to learn how long an ingest takes and what a complete one writes."""
    shared.reset()
    git(shared.repo, "checkout", "-q", "-b", "next")
    replace(
        shared.repo, "pkg/core.py", "def unused(a):",
        "def sub(a, b):\n    return a - b\n\n\ndef unused(a):",
    )  # fmt: skip
    write(
        shared.repo, "tests/test_sub.py",
        "from pkg.core import sub\n\n\ndef test_sub():\n    assert sub(3, 1) == 2\n",
    )  # fmt: skip
    git(shared.repo, "add", "-A")
    git(shared.repo, "commit", "-qm", "sub")
    started = time.perf_counter()
    # the whole suite: these scenarios interrupt and race full ingests (an incremental one
    # re-measures one test here, and is over before most interruptions)
    code, out, err = finish(spawn(shared, "ingest-coverage", str(shared.repo), "--json", "--full"))
    duration = time.perf_counter() - started
    assert code == 0, out + err
    info = {"sha": git(shared.repo, "rev-parse", "HEAD").strip(), "duration": duration}
    info["counts"] = graph_counts(shared.env, shared.repo)
    shared.restore_graph()
    shared.reset()
    yield info
    shared.reset()


@pytest.fixture
def sample(sample: Sample) -> Iterator[Sample]:
    yield sample
    sample.restore_graph()


@pytest.mark.parametrize("round_", [1, 2])
def test_four_checks_and_an_ingest_at_once(sample: Sample, round_: int) -> None:
    replace(sample.repo, "pkg/core.py", "return a * b", "return a * b + 1")
    before = tree_state(sample.repo)
    repo = str(sample.repo)
    procs = [spawn(sample, "ingest-coverage", repo, "--json")]
    procs += [spawn(sample, "check", "--repo", repo, "--json") for _ in range(4)]
    results = [finish(p) for p in procs]
    code, out, err = results[0]
    assert TRACEBACK not in out + err, err
    assert code in (0, 2), f"ingest exit {code}\n{out}\n{err}"
    for code, out, err in results[1:]:
        assert TRACEBACK not in out + err, err
        assert code == 0, f"check exit {code}\n{out}\n{err}"
        assert_wider(json.loads(out), MUL, sample.suite)
    changed = tree_changes(before, tree_state(sample.repo))
    assert not changed, f"the tree or index changed: {changed}"
    # and the graph the ingest left is whole: a check after it still selects the broken tests
    assert_wider(sample.check(), MUL, sample.suite)


@pytest.mark.parametrize("fraction", [0.1, 0.3, 0.5, 0.7, 0.9])
def test_ctrl_c_mid_ingest_keeps_the_evidence_whole(
    sample: Sample, next_commit: dict[str, Any], fraction: float
) -> None:
    git(sample.repo, "checkout", "-q", "next")
    before_tree = tree_state(sample.repo)
    old = graph_counts(sample.env, sample.repo)
    proc = spawn(sample, "ingest-coverage", str(sample.repo), "--json", "--full")
    time.sleep(fraction * next_commit["duration"])
    interrupted = proc.poll() is None
    if interrupted:
        os.killpg(proc.pid, signal.SIGINT)  # what a terminal's Ctrl-C does
    code, out, err = finish(proc, timeout=60)
    assert TRACEBACK not in out + err, f"a traceback after Ctrl-C (exit {code}):\n{err[-3000:]}"
    if interrupted and code != 0:
        assert err.strip(), "interrupted without a word"
        assert len(err.strip().splitlines()) <= 15, err
    # no process of the ingest survives it (pytest, the collector)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.killpg(proc.pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        os.killpg(proc.pid, signal.SIGKILL)
        raise AssertionError("processes of the interrupted ingest still run")
    after = graph_counts(sample.env, sample.repo)
    complete = next_commit["counts"]
    # whole means each part is one ingest's: the coverage evidence is the old one or the new
    # one, never a mix; the static index may be the new one ahead of it (ingest-static's state)
    coverage = [k for k in after if k in COVERAGE_KEYS]
    static = [k for k in after if k in STATIC_KEYS]

    def part(counts: dict[str, Any], keys: list[str]) -> dict[str, Any]:
        return {k: counts[k] for k in keys}

    assert part(after, coverage) in (part(old, coverage), part(complete, coverage)) and part(
        after, static
    ) in (part(old, static), part(complete, static)), (
        f"half an ingest: {after}\nbefore: {old}\ncomplete: {complete}"
    )
    if after["coverage_sha"] == complete["coverage_sha"]:
        assert after == complete, f"new coverage over an old index: {after}"
    replace(sample.repo, "pkg/core.py", "return a * b", "return a * b + 1")
    assert_wider(sample.check(), MUL, sample.suite)
    stats = sample.guard("stats", "--json", "--repo", str(sample.repo))
    assert_no_traceback(stats)
    assert stats.returncode == 0, stats.describe()
    git(sample.repo, "checkout", "-q", "--", "pkg/core.py")
    left = tree_changes(before_tree, tree_state(sample.repo))
    assert not left, f"the interrupted ingest left files behind: {left}"


def test_interrupted_ingest_then_ingest_again(sample: Sample, next_commit: dict[str, Any]) -> None:
    """After a Ctrl-C, the next ingest completes and writes what a clean one does."""
    git(sample.repo, "checkout", "-q", "next")
    proc = spawn(sample, "ingest-coverage", str(sample.repo), "--json", "--full")
    time.sleep(0.5 * next_commit["duration"])
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGINT)
    finish(proc, timeout=60)
    out = sample.guard("ingest-coverage", str(sample.repo), "--json", "--full")
    assert_no_traceback(out)
    assert out.returncode == 0, out.describe()
    counts, complete = graph_counts(sample.env, sample.repo), dict(next_commit["counts"])
    runs = complete.pop("runs")
    # a loaded machine may let the first ingest finish (and record its run) before the signal
    assert counts.pop("runs") in (runs, runs + 1)
    assert counts == complete


@pytest.mark.parametrize("fraction", [0.05, 0.15, 0.3])
def test_ctrl_c_mid_incremental_ingest_leaves_a_graph_that_selects_what_breaks(
    sample: Sample, next_commit: dict[str, Any], fraction: float
) -> None:
    """An incremental ingest interrupted anywhere (the check, the run, the writes) leaves the
    old evidence or a graph marked incomplete: the next check still selects what an edit breaks."""
    git(sample.repo, "checkout", "-q", "next")
    proc = spawn(sample, "ingest-coverage", str(sample.repo), "--json")
    time.sleep(fraction * next_commit["duration"])
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGINT)
    code, out, err = finish(proc, timeout=60)
    assert TRACEBACK not in out + err, f"a traceback after Ctrl-C (exit {code}):\n{err[-3000:]}"
    replace(sample.repo, "pkg/core.py", "return a * b", "return a * b + 1")
    assert_wider(sample.check(), MUL, sample.suite)
    git(sample.repo, "checkout", "-q", "--", "pkg/core.py")
