"""Guard inside pytest beside pytest-testmon, in one run on one machine (issue 16's figures):

1. a plain `pytest` of the suite, `pytest --testmon`'s collection run, Guard's static index
   (cold) and coverage ingest — each with its ratio to the plain run;
2. on the same edits (a covered function returns early): `pytest --guard` and
   `pytest --testmon`, wall time side by side;
3. `guard run`'s overhead over `pytest <the same node ids>`;
4. in-process `Guard.check()` latency, p50 and max.

Guard is installed into the target's virtualenv (as a user of `pytest --guard` does).

Run: python benchmarks/bench_pytest_guard.py [pkg==version]   (default: flask==3.1.2)
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _targets import covered_edits, drop_testmon, git, sdist_repo, target_venv

from guard_core.api import Guard

ROOT = Path(__file__).resolve().parent.parent
EDITS = 10
# byte-compiled imports, as on a user's machine (this one sets PYTHONDONTWRITEBYTECODE); the
# repository's warm worker on, as by default (the first `pytest --guard` starts it)
ENV = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "GUARD_WORKER")}


def timed(cmd: list[str], repo: Path) -> tuple[float, subprocess.CompletedProcess[str]]:
    t0 = time.perf_counter()
    out = subprocess.run(cmd, cwd=repo, capture_output=True, text=True, env=ENV, check=False)
    return time.perf_counter() - t0, out


def apply(repo: Path, edit: tuple[str, str, str]) -> None:
    path, old, new = edit
    text = (repo / path).read_text(encoding="utf-8")
    (repo / path).write_text(text.replace(old, new, 1), encoding="utf-8")


def last_line(out: subprocess.CompletedProcess[str]) -> str:
    lines = (out.stdout + out.stderr).strip().splitlines()
    return lines[-1] if lines else "no output"


def main() -> None:
    spec = sys.argv[1] if len(sys.argv) > 1 else "flask==3.1.2"
    repo = sdist_repo(spec)
    python = str(target_venv(repo, ("pytest<9", "coverage", "pytest-testmon")))
    subprocess.run([python, "-m", "pip", "install", "-q", "-e", str(ROOT)], check=True)
    guard = str(Path(python).parent / "guard")
    pytest = [python, "-m", "pytest", "-q", "-p", "no:randomly"]
    drop_testmon(repo)
    timed([*pytest, "--collect-only"], repo)  # writes the byte code of the target and Guard
    timed([guard, "--help"], repo)
    plain, out = timed(pytest, repo)
    print(f"target: {spec}; plain pytest {plain:.2f} s [{last_line(out)}]")
    figures = {"testmon collection": timed([*pytest, "--testmon"], repo)}
    subprocess.run([guard, "stats", "--repo", str(repo)], capture_output=True, env=ENV)
    # the server runs (its start is not counted); the graph is emptied first
    figures["guard static index, cold"] = timed(
        [guard, "ingest-static", str(repo), "--reset", "--include-tests"], repo
    )
    figures["guard static index, unchanged"] = timed(
        [guard, "ingest-static", str(repo), "--include-tests"], repo
    )
    figures["guard coverage ingest"] = timed(
        [guard, "ingest-coverage", str(repo), "--python", python], repo
    )
    for name, (seconds, done) in figures.items():
        print(f"{name:32} {seconds:6.2f} s  {seconds / plain:5.2f}x plain  [{last_line(done)}]")

    with Guard.open(repo) as g:
        functions = [
            r[0]
            for r in g.store._read(  # type: ignore[attr-defined]
                "MATCH (f:Function)-[:COVERED_BY]->(:Test) WHERE NOT f.file STARTS WITH 'tests' "
                "RETURN DISTINCT f.id ORDER BY f.id"
            )
        ]
    edits = covered_edits(repo, functions[::5], EDITS)
    rows = []
    latency: list[float] = []
    timed([*pytest, "--guard", "--guard-no-refresh", "--collect-only"], repo)  # starts the worker
    with Guard.open(repo) as g:
        g.check()  # warm-up: the connection, the plug-ins, the imports
        for edit in edits:
            apply(repo, edit)
            t0 = time.perf_counter()
            decision = g.check()
            latency.append((time.perf_counter() - t0) * 1000)
            ids = list(decision.tests)
            guarded, run = timed([*pytest, "--guard", "--guard-no-refresh"], repo)
            testmon, _ = timed([*pytest, "--testmon"], repo)
            same_ids, _ = timed([*pytest, *ids], repo) if ids else (0.0, run)
            guard_run, _ = timed([guard, "run", "--repo", str(repo), "--no-refresh"], repo)
            rows.append((len(ids), guarded, testmon, same_ids, guard_run, last_line(run)))
            git(repo, "checkout", "-q", "--", ".")
            timed([*pytest, "--testmon"], repo)  # testmon re-learns the clean tree (untimed)
    print(f"\n{len(edits)} edits (a covered function returns early), wall seconds:")
    print(" tests  pytest --guard  pytest --testmon  pytest <ids>  guard run  (pytest --guard)")
    for n, a, b, c, d, summary in rows:
        print(f"{n:6}  {a:14.2f}  {b:16.2f}  {c:12.2f}  {d:9.2f}  [{summary}]")
    med = [statistics.median(col) for col in zip(*(r[1:5] for r in rows), strict=True)]
    print(
        f"median  {med[0]:14.2f}  {med[1]:16.2f}  {med[2]:12.2f}  {med[3]:9.2f}\n"
        f"pytest --guard / pytest --testmon: {med[0] / med[1]:.2f}; "
        f"guard run - pytest <ids>: {med[3] - med[2]:+.2f} s (check included); "
        f"pytest --guard - pytest <ids>: {med[0] - med[2]:+.2f} s"
    )
    print(f"in-process check: p50 {statistics.median(latency):.1f} ms, max {max(latency):.1f} ms")
    result = Path(__file__).resolve().parent / ".work" / "bench_pytest_guard.json"
    result.write_text(json.dumps({"plain_s": plain, "rows": rows, "latency_ms": latency}))


if __name__ == "__main__":
    try:
        main()
    finally:
        target = sdist_repo(sys.argv[1] if len(sys.argv) > 1 else "flask==3.1.2")
        drop_testmon(target)
        subprocess.run(
            [sys.executable, "-m", "guard_adapters.cli", "server", "stop", "--repo", str(target)],
            capture_output=True,
        )
