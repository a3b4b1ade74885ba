"""An agent session on Flask 3.1.2 with and without `guard run`'s evidence refresh.

Eight harmless edits land one after another (each inserts a statement at the top of a covered
function, moving every line below it), with `guard run` after each. Without the refresh every
run diffs against the ingest commit, so the selection grows with the session; with it each run
diffs against the tree the previous run passed on. Then behaviour-changing edits on top of the
session's tree: Guard's selection after the refreshes is compared with the tests that really
fail (the whole suite run with the edit).

Run: python benchmarks/bench_refresh.py [BASE_PYTHON]   (the target's venv is made from
BASE_PYTHON, default this interpreter: the collector is cheaper on 3.12+, sys.monitoring)
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _targets import WORK, covered_edits, git, sdist_repo, target_venv

import guard_adapters
from guard_core.api import Guard

SPEC = "flask==3.1.2"
STEPS = 8


def apply(repo: Path, edit: tuple[str, str, str]) -> None:
    path, old, new = edit  # ``old`` is a whole line: match it at a line start
    text = "\n" + (repo / path).read_text(encoding="utf-8")
    assert "\n" + old in text, (path, old)
    (repo / path).write_text(text.replace("\n" + old, "\n" + new, 1)[1:], encoding="utf-8")


def harmless_edits(repo: Path, edits: list[tuple[str, str, str]]) -> list[tuple[str, str, str]]:
    """The same places as ``edits``, with a no-op statement inserted instead of a return."""
    out = []
    for path, old, new in edits:
        indent = new[: len(new) - len(new.lstrip())]
        out.append((path, old, f"{indent}_bench_noop = None  # noqa\n{old}"))
    return out


def ingest(guard_bin: str, repo: Path, python: Path) -> float:
    t0 = time.perf_counter()
    subprocess.run([guard_bin, "ingest-coverage", str(repo), "--python", str(python)],
                   check=True, capture_output=True)  # fmt: skip
    return time.perf_counter() - t0


def session(repo: Path, steps: list[tuple[str, str, str]], refresh: bool) -> list[dict]:
    rows = []
    with Guard.open(repo, refresh_evidence=refresh) as g:
        for edit in steps:
            apply(repo, edit)
            t0 = time.perf_counter()
            report = g.run(stream=False)
            rows.append({
                "selected": len(report.decision.tests), "level": report.decision.level.value,
                "exit": report.exit_code, "wall": time.perf_counter() - t0,
                "refreshed": report.refreshed,
            })  # fmt: skip
    return rows


def failing_tests(python: Path, repo: Path) -> set[str]:
    """Test functions that fail in a whole-suite run (outcomes from Guard's reporter plugin)."""
    plugin_root = str(Path(guard_adapters.__file__).resolve().parent.parent)
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        env = {**os.environ, "GUARD_REPORT": str(report), "PYTHONPATH": plugin_root}
        subprocess.run([str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p",
                        "guard_adapters.pytest.reporter"], cwd=repo, capture_output=True,
                       env=env)  # fmt: skip
        tests = json.loads(report.read_text())["tests"]
    return {t.split("[")[0] for t, info in tests.items() if info["outcome"] in ("failed", "error")}


def main() -> None:
    repo = sdist_repo(SPEC)
    base = sys.argv[1] if len(sys.argv) > 1 else None
    python = target_venv(repo, ("pytest<9", "coverage"), base=base)
    guard_bin = str(Path(sys.executable).parent / "guard")
    git(repo, "checkout", "-q", "--", ".")
    ingest_s = ingest(guard_bin, repo, python)
    with Guard.open(repo) as g:
        functions = [r[0] for r in g.store._read(
            "MATCH (f:Function)-[:COVERED_BY]->(:Test) WHERE f.file STARTS WITH 'src/' "
            "RETURN DISTINCT f.id ORDER BY f.id")]  # fmt: skip
    breaking = covered_edits(repo, functions[::2], STEPS + 6)
    steps = harmless_edits(repo, breaking[:STEPS])
    probes = breaking[STEPS:]

    without = session(repo, steps, refresh=False)
    git(repo, "checkout", "-q", "--", ".")
    refreshed = session(repo, steps, refresh=True)

    already = failing_tests(python, repo)  # the session's tree, before any probe
    escapes = misses = killable = 0
    missed: list[str] = []
    with Guard.open(repo, refresh_evidence=False) as g:
        for probe in probes:
            apply(repo, probe)
            picked = {t.split("[")[0] for t in g.check().tests}
            failing = failing_tests(python, repo) - already
            killable += bool(failing)
            escapes += bool(failing - picked)
            misses += len(failing - picked)
            missed += [f"{probe[0]}: {t}" for t in sorted(failing - picked)]
            path, old, new = probe
            apply(repo, (path, new, old))  # back to the session's tree
    git(repo, "checkout", "-q", "--", ".")
    git(repo, "clean", "-qfd", "--", "src")

    version = subprocess.run([str(python), "-c", "import sys; print(sys.version.split()[0])"],
                             capture_output=True, text=True).stdout.strip()  # fmt: skip
    print(f"target: {SPEC} on Python {version}; ingest {ingest_s:.1f} s; {STEPS} harmless "
          "edits in a row, guard run after each")  # fmt: skip
    print("step  no refresh: selected  wall s | refresh: selected  wall s  evidence")
    for i, (a, b) in enumerate(zip(without, refreshed, strict=True), 1):
        print(f"{i:>4}  {a['selected']:>20}  {a['wall']:6.2f} | {b['selected']:>17}  "
              f"{b['wall']:6.2f}  {b['refreshed'][:60]}")  # fmt: skip
    total_a = sum(r["wall"] for r in without)
    total_b = sum(r["wall"] for r in refreshed)
    median_a = statistics.median(r["selected"] for r in without)
    median_b = statistics.median(r["selected"] for r in refreshed)
    print(
        f"session wall: no refresh {total_a:.1f} s | refresh {total_b:.1f} s "
        f"(ratio {total_b / total_a:.2f}); median selected {median_a:.0f} vs {median_b:.0f}"
    )
    print(
        f"behaviour-changing edits after the refreshed session: {killable} killable of "
        f"{len(probes)}, {escapes} with a failing test not selected ({misses} tests)"
    )
    for line in missed:
        print(f"  missed: {line}")


if __name__ == "__main__":
    try:
        main()
    finally:
        subprocess.run([str(Path(sys.executable).parent / "guard"), "server", "stop", "--repo",
                        str(WORK / SPEC.replace("==", "-"))], capture_output=True)  # fmt: skip
