"""Evidence-collection overhead, side by side in one run: a plain `pytest` of the suite, the
same suite under Guard's collector (`guard ingest-coverage --full`; also without its cache
watchers, and without its record of reflective calls), and under
`pytest --testmon`; then a second commit's ingest after a one-file change (`guard
ingest-coverage` carries the evidence of the tests the change does not select).

Run: python benchmarks/bench_ingest.py [pkg==version ...]   (default: flask==3.1.2)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _targets import drop_testmon, git, sdist_repo, target_venv
from bench_static import edit
from evals.targets import python_of


def timed(cmd: list[str], cwd: Path, **extra: str) -> float:
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", **extra}
    t0 = time.perf_counter()
    out = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=env, check=False)
    elapsed = time.perf_counter() - t0
    lines = (out.stdout + out.stderr).strip().splitlines()
    print(
        f"  {Path(cmd[0]).name} {' '.join(cmd[1:4])}...: {elapsed:.1f} s  "
        f"[{lines[-1] if lines else 'no output'}]"
    )
    return elapsed


def bench(spec: str, base: str | None = None) -> None:
    repo = sdist_repo(spec)
    python = str(target_venv(repo, ("pytest<9", "coverage", "pytest-testmon"), base))
    guard_bin = str(Path(sys.executable).parent / "guard")
    plain = [python, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    timed(plain, repo)  # warm the file cache
    subprocess.run([guard_bin, "ingest-static", str(repo), "--include-tests"], check=True,
                   capture_output=True)  # fmt: skip
    rows = []
    ingest = [guard_bin, "ingest-coverage", str(repo), "--python", python, "--full"]
    for _ in range(2):
        base = timed(plain, repo)
        guard = timed(ingest, repo)
        # without the cache watchers (functools caches and plain dicts)
        unwatched = timed(ingest, repo, GUARD_COLLECT_MEMO="0", GUARD_COLLECT_DICTS="0")
        # without recording what reflective calls were given (getattr's names...)
        unrecorded = timed(ingest, repo, GUARD_COLLECT_REFLECT="0")
        drop_testmon(repo)
        testmon = timed([python, "-m", "pytest", "-q", "--testmon"], repo)  # needs the cache
        rows.append((base, guard, unwatched, unrecorded, testmon))
    drop_testmon(repo)
    # a change of one function that some tests run: the first module of the package (under
    # src/ where the project has one) whose edit a check answers with a subset of tests
    files = sorted(git(repo, "ls-files", "*.py").split())
    package = [p for p in files if p.startswith("src/")] or files
    selected = 0
    for source in package:
        if source.startswith(("docs/", "doc/", "tests/", "examples/")) or "test" in source:
            continue
        edit(repo / source, "_bench_marker = None")  # a change of behaviour
        check = subprocess.run([guard_bin, "check", "--repo", str(repo), "--json"],
                               capture_output=True, text=True,
                               env={**os.environ, "GUARD_PYTHON": python})  # fmt: skip
        decision = json.loads(check.stdout or "{}")
        selected = len(decision.get("tests") or ())
        if decision.get("level") not in (None, "run-all") and selected:
            break
        git(repo, "checkout", "-q", "--", ".")
    else:
        source, second = "", {}
    if source:
        git(repo, "commit", "-qam", "bench: one changed function")
        try:
            out = subprocess.run([*ingest[:-1], "--json"], capture_output=True, text=True, env={
                **os.environ, "PYTHONDONTWRITEBYTECODE": "1"})  # fmt: skip
            second = json.loads(out.stdout)
        finally:
            git(repo, "reset", "-q", "--hard", "HEAD~1")
    subprocess.run([guard_bin, "server", "stop", "--repo", str(repo)], capture_output=True)
    base, guard, unwatched, unrecorded, testmon = (min(col) for col in zip(*rows, strict=True))
    version = subprocess.run([python, "-c", "import sys; print(sys.version.split()[0])"],
                             capture_output=True, text=True).stdout.strip()  # fmt: skip
    print(
        f"{spec} on Python {version}: plain pytest {base:.1f} s | "
        f"guard ingest-coverage {guard:.1f} s ({guard / base:.2f}x; "
        f"{unwatched:.1f} s without the cache watchers, +{guard / unwatched - 1:.0%}; "
        f"{unrecorded:.1f} s without the reflection record, +{guard / unrecorded - 1:.0%}) | "
        f"pytest --testmon {testmon:.1f} s ({testmon / base:.2f}x)"
        f"   (best of 2; target <= 1.3x)"
    )
    if not second:
        print("  second commit: no one-function edit found that a check answers with a subset")
        return
    how = (f"{second['tests']} tests re-measured" if second.get("incremental")
           else f"whole suite: {second.get('full_because')}")  # fmt: skip
    print(
        f"  second commit, one function changed in {source} (a check selects {selected} "
        f"tests): guard ingest-coverage "
        f"{second['elapsed_s']:.1f} s ({second['elapsed_s'] / base:.2f}x plain; {how}; "
        f"target <= 0.3x)"
    )


if __name__ == "__main__":
    newer = python_of(12) or python_of(13)
    for target in sys.argv[1:] or ["flask==3.1.2"]:
        bench(target)  # coverage.py line tracing with per-test contexts
        if newer:
            bench(target, newer)  # the sys.monitoring collector
