"""Where the first ingest's time goes, stage by stage, beside a plain pytest run of the same
suite (one run, side by side; the issue on the cost of evidence asks for this table).

Stages: interpreter start; pytest's start-up and collection; the plain run; the run under
Guard's collector (tracing, per-test context switching, the cache watchers), then the same
without the watchers; reading the collector's payload (merging, charging to tests); the static
index serially and on every core; the graph writes of the index and of the evidence;
and the whole `guard ingest-coverage` as a user runs it (the index parses during the run).

Run: python benchmarks/profile_ingest.py [pkg==version ...]   (default: flask==3.1.2)
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _targets import sdist_repo, target_venv
from evals.targets import TARGETS, python_of

from guard_adapters.coverage.ingest import read_evidence, run_collector
from guard_adapters.coverage.payload import CollectorPayload
from guard_adapters.falkordb.embedded import EmbeddedServer
from guard_adapters.falkordb.store import FalkorGraphStore, connect
from guard_adapters.index.ingest import index_planned, plan_static, write_static
from guard_core.evidence import iter_edges

T = TypeVar("T")
WATCHERS_OFF = {"GUARD_COLLECT_MEMO": "0", "GUARD_COLLECT_DICTS": "0"}


def timed(label: str, rows: list[tuple[str, float]], work: Callable[[], T]) -> T:
    started = time.perf_counter()
    out = work()
    rows.append((label, time.perf_counter() - started))
    return out


def command(cmd: list[str], cwd: Path, env: dict[str, str] | None = None) -> None:
    full = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", **(env or {})}
    subprocess.run(cmd, cwd=cwd, env=full, capture_output=True, check=False)


def collector_run(repo: Path, python: str, env: dict[str, str]) -> tuple[Path, CollectorPayload]:
    out = Path(tempfile.mkdtemp(prefix="guard-profile-"))
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        return out, run_collector(repo, python, [], None, out)
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def profile(spec: str, base: str | None) -> None:
    repo = sdist_repo(spec)
    # an eval target's own test dependencies (freezegun for itsdangerous, ...)
    deps = next((t.test_deps for t in TARGETS.values() if t.spec == spec), ("pytest<9",))
    python = str(target_venv(repo, (*deps, "coverage"), base))
    plain = [python, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    command(plain, repo)  # warm the file cache
    rows: list[tuple[str, float]] = []
    timed("interpreter start (python -c pass)", rows, lambda: command([python, "-c", "pass"], repo))
    timed("pytest start-up + collection", rows, lambda: command([*plain, "--collect-only"], repo))
    timed("plain pytest run", rows, lambda: command(plain, repo))
    timed("run under Guard's collector", rows, lambda: collector_run(repo, python, {}))
    out, payload = timed(
        "  the same, cache watchers off", rows, lambda: collector_run(repo, python, WATCHERS_OFF)
    )
    run = timed("read + charge the payload", rows, lambda: read_evidence(repo, out, payload))
    plan = plan_static(repo, {}, include_tests=True)
    timed(f"static index, 1 process ({len(plan.jobs)} files)", rows,
          lambda: index_planned(plan, workers=1))  # fmt: skip
    indexed = timed("static index, every core", rows, lambda: index_planned(plan))
    with tempfile.TemporaryDirectory(prefix="guard-profile-db-") as state:
        server = EmbeddedServer(Path(state))
        try:
            store = FalkorGraphStore(connect(server.ensure_running()), "profile")
            store.ensure_schema()
            timed("graph writes: the index", rows, lambda: write_static(store, plan, indexed))
            tests = sorted(run.executed)
            timed("graph writes: the evidence", rows, lambda: store.write_coverage(
                iter_edges(run), sha="profile", tests=tests, replace=True))  # fmt: skip
            edges = store.stats().covered_by
            store.close()
        finally:
            server.stop()
    guard = str(Path(sys.executable).parent / "guard")
    ingest = [guard, "ingest-coverage", str(repo), "--python", python]
    timed("guard ingest-coverage (whole, cold)", rows, lambda: command(ingest, repo))
    subprocess.run([guard, "server", "stop", "--repo", str(repo)], capture_output=True)
    version = subprocess.run([python, "-c", "import sys; print(sys.version.split()[0])"],
                             capture_output=True, text=True).stdout.strip()  # fmt: skip
    base_run = dict(rows)["plain pytest run"]
    print(f"\n{spec}, Python {version}: {len(tests)} tests, {edges} evidence edges")
    print("| stage | seconds | x plain run |\n| --- | ---: | ---: |")
    for label, seconds in rows:
        print(f"| {label} | {seconds:.2f} | {seconds / base_run:.2f} |")


def main() -> None:
    specs = sys.argv[1:] or ["flask==3.1.2"]
    for spec in specs:
        for minor in (11, 12):
            base = python_of(minor)
            if base is not None:
                profile(spec, base)


if __name__ == "__main__":
    main()
