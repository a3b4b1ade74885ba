"""`guard check` latency on Flask 3.1.2 over 20 different edits: the whole CLI process and the
in-process API after warm-up, with `pytest --testmon` selection on the same edits beside it.

Run: python benchmarks/bench_check.py
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

from _targets import WORK, covered_edits, drop_testmon, git, sdist_repo, target_venv

from guard_adapters.worker.client import worker_socket
from guard_core.api import Guard

SPEC = "flask==3.1.2"


def apply(repo: Path, edit: tuple[str, str, str]) -> None:
    path, old, new = edit
    text = (repo / path).read_text(encoding="utf-8")
    (repo / path).write_text(text.replace(old, new, 1), encoding="utf-8")


def main() -> None:
    repo = sdist_repo(SPEC)
    python = target_venv(repo, ("pytest<9", "coverage", "pytest-testmon"))
    guard_bin = str(Path(sys.executable).parent / "guard")
    # byte-compile Guard as an installed copy would be (this machine sets DONTWRITEBYTECODE)
    import compileall

    import guard_adapters
    import guard_core

    for package in (guard_core, guard_adapters):
        compileall.compile_dir(str(Path(package.__file__).parent), quiet=1)
    subprocess.run([guard_bin, "ingest-coverage", str(repo), "--python", str(python)],
                   check=True, capture_output=True)  # fmt: skip
    with Guard.open(repo) as g:
        functions = [r[0] for r in g.store._read(
            "MATCH (f:Function)-[:COVERED_BY]->(:Test) WHERE f.file STARTS WITH 'src/' "
            "RETURN DISTINCT f.id ORDER BY f.id")]  # fmt: skip
    edits = covered_edits(repo, functions[::3], 20)
    # testmon's own database, built on the clean tree
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    drop_testmon(repo)
    subprocess.run([str(python), "-m", "pytest", "--testmon", "-q"],
                   cwd=repo, capture_output=True, env=env)  # fmt: skip
    cli, warm, api, testmon, sizes = [], [], [], [], []
    check = [guard_bin, "check", "--repo", str(repo), "--json"]
    cold_env = {**os.environ, "GUARD_WORKER": "0"}
    warm_env = {**os.environ, "GUARD_WORKER": "1"}
    subprocess.run(check, env=warm_env, capture_output=True)  # starts the repo's worker
    sock = Path(worker_socket(repo / ".guard"))
    for _ in range(100):
        if sock.exists():
            break
        time.sleep(0.1)
    with Guard.open(repo) as g:
        g.check()  # warm-up: connection, plugin manager, imports
        for edit in edits:
            apply(repo, edit)
            t0 = time.perf_counter()
            cold = subprocess.run(check, check=True, capture_output=True, env=cold_env)
            cli.append((time.perf_counter() - t0) * 1000)
            t0 = time.perf_counter()
            hot = subprocess.run(check, check=True, capture_output=True, env=warm_env)
            warm.append((time.perf_counter() - t0) * 1000)
            a, b = json.loads(cold.stdout), json.loads(hot.stdout)
            assert a["tests"] == b["tests"], "the worker answered differently"
            t0 = time.perf_counter()
            decision = g.check()
            api.append((time.perf_counter() - t0) * 1000)
            sizes.append(len(decision.tests))
            t0 = time.perf_counter()
            subprocess.run(
                [str(python), "-m", "pytest", "--testmon", "--collect-only", "-q"],
                cwd=repo,
                capture_output=True,
                env=env,
            )  # needs the cache plugin
            testmon.append((time.perf_counter() - t0) * 1000)
            git(repo, "checkout", "-q", "--", ".")
    drop_testmon(repo)

    def fmt(xs: list[float]) -> str:
        return f"p50 {statistics.median(xs):7.1f} ms   max {max(xs):7.1f} ms"

    print(f"target: {SPEC}, {len(edits)} edits (a covered function returns early)")
    print(f"guard check, CLI process    {fmt(cli)}   (fresh process, GUARD_WORKER=0)")
    print(f"guard check, CLI via worker {fmt(warm)}   (target p50 <= 350 ms)")
    print(f"guard check, in-process API {fmt(api)}   (target p50 <= 30 ms)")
    print(f"pytest --testmon selection  {fmt(testmon)}   (collect-only, same edits)")
    for name, xs in (("fresh CLI", cli), ("worker CLI", warm), ("API", api)):
        ratio = statistics.median(xs) / statistics.median(testmon)
        print(f"ratio {name} / testmon p50: {ratio:.3f}")
    print(f"tests selected per edit: median {statistics.median(sizes):.0f}, max {max(sizes)}")


if __name__ == "__main__":
    try:
        main()
    finally:  # the guard CLI started the target's embedded FalkorDB: stop it
        subprocess.run([str(Path(sys.executable).parent / "guard"), "server", "stop", "--repo",
                        str(WORK / SPEC.replace("==", "-"))], capture_output=True)  # fmt: skip
