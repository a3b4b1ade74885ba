"""Static ingest and slicer benchmark on a large real project (networkx from its PyPI sdist).

Prints: full ingest-static time and files/s; a second clone's first index on the same server
and a new commit's base (the shared index by content: files parsed again); incremental
re-ingest after one changed file; in-process slicer latency for a 3-file diff.
Run: python benchmarks/bench_static.py [pkg==version]
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _targets import git, sdist_repo

from guard_adapters.falkordb.embedded import EmbeddedServer
from guard_adapters.falkordb.store import FalkorGraphStore, connect
from guard_adapters.index.ingest import ingest_static
from guard_adapters.python.slicer import GitSlicer

SPEC = sys.argv[1] if len(sys.argv) > 1 else "networkx==3.4.2"


def edit(path: Path, statement: str = "pass") -> None:
    """Insert ``statement`` before the first indented ``return`` (an always valid change; a
    ``pass`` changes the text only, an assignment the behaviour too)."""
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    for i, line in enumerate(lines):
        if line.startswith("    ") and line.lstrip().startswith("return "):
            indent = line[: len(line) - len(line.lstrip())]
            lines.insert(i, f"{indent}{statement}\n")
            break
    path.write_text("".join(lines), encoding="utf-8")


def main() -> None:
    repo = sdist_repo(SPEC)
    py_files = [p for p in git(repo, "ls-files", "*.py").split() if p]
    with tempfile.TemporaryDirectory(prefix="guard-bench-") as tmp:
        server = EmbeddedServer(Path(tmp))
        try:
            store = FalkorGraphStore(connect(server.ensure_running()), "bench")
            store.ensure_schema()
            t0 = time.perf_counter()
            report = ingest_static(repo, store, include_tests=True)
            full = time.perf_counter() - t0
            # another clone (or a new commit's base) against the same server: a new graph
            clone = FalkorGraphStore(store.db, "bench-clone")
            clone.ensure_schema()
            t0 = time.perf_counter()
            cloned = ingest_static(repo, clone, include_tests=True)
            clone_s = time.perf_counter() - t0
            sources = [p for p in py_files if "/tests/" not in p and not p.endswith("__init__.py")]
            edit(repo / sources[0])
            next_base = FalkorGraphStore(store.db, "bench-next")
            next_base.ensure_schema()
            t0 = time.perf_counter()
            moved = ingest_static(repo, next_base, include_tests=True)
            next_s = time.perf_counter() - t0
            t0 = time.perf_counter()
            again = ingest_static(repo, store, include_tests=True)
            incremental = time.perf_counter() - t0  # the changed file's index is shared now
            for p in sources[1:3]:
                edit(repo / p)
            slicer = GitSlicer()
            cs = slicer.slice(repo)
            lat = []
            for _ in range(20):
                t0 = time.perf_counter()
                slicer.slice(repo)
                lat.append((time.perf_counter() - t0) * 1000)
            stats = store.stats()
            store.close()
        finally:
            server.stop()
            git(repo, "checkout", "-q", "--", ".")
    print(f"target: {SPEC}, {len(py_files)} Python files")
    print(
        f"full ingest-static: {full:.2f} s, {report.indexed / full:.1f} files/s "
        f"({stats.functions} functions, {stats.tests} tests, {stats.calls} calls, "
        f"{stats.imports} imports; target < 15 s for ~500 files)"
    )
    print(
        f"a second clone's first index on the same server: {clone_s:.2f} s "
        f"({cloned.indexed - cloned.reused} of {cloned.indexed} files parsed; target: 0)"
    )
    print(
        f"a new commit's base after one changed file (new graph): {next_s:.2f} s "
        f"({moved.indexed - moved.reused} of {moved.indexed} files parsed)"
    )
    print(
        f"incremental after one changed file: {incremental:.3f} s "
        f"({again.indexed} re-indexed; target <= 0.3 s)"
    )
    print(
        f"slicer, 3-file diff ({len(cs.regions)} changed regions): p50 "
        f"{statistics.median(lat):.1f} ms, max {max(lat):.1f} ms (target <= 50 ms)"
    )


if __name__ == "__main__":
    main()
