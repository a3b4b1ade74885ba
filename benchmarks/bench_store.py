"""Graph store benchmark: bulk writes, the covering-tests query, embedded cold start and restart.

Synthetic graph of 10k functions, 2k tests and 200k COVERED_BY edges on the embedded server.
Run: python benchmarks/bench_store.py
"""

from __future__ import annotations

import random
import statistics
import tempfile
import time
from pathlib import Path

from guard_adapters.falkordb.embedded import EmbeddedServer
from guard_adapters.falkordb.store import FalkorGraphStore, connect
from guard_core.index_model import FileIndex, FunctionNode, TestNode
from guard_core.model import CoverEdge

FUNCTIONS, TESTS, EDGES, FILES = 10_000, 2_000, 200_000, 500


def synthetic() -> tuple[list[FileIndex], list[CoverEdge], list[str]]:
    rng = random.Random(7)
    files = []
    per_file = FUNCTIONS // FILES
    for i in range(FILES):
        path = f"pkg/mod{i}.py"
        fns = tuple(
            FunctionNode(
                id=f"{path}::f{j}",
                file=path,
                name=f"f{j}",
                qualname=f"f{j}",
                start=j * 10 + 1,
                end=j * 10 + 9,
            )
            for j in range(per_file)
        )
        files.append(FileIndex(path=path, sha=str(i), module=f"pkg.mod{i}", functions=fns))
    tests = [f"tests/test_{i % 100}.py::test_{i}" for i in range(TESTS)]
    test_files: dict[str, list[TestNode]] = {}
    for t in tests:
        path, name = t.split("::")
        test_files.setdefault(path, []).append(TestNode(t, path, name, name, 1, 2))
    files += [
        FileIndex(path=p, sha="t", module=None, tests=tuple(ts)) for p, ts in test_files.items()
    ]
    fids = [fn.id for f in files for fn in f.functions]
    pairs = set()
    while len(pairs) < EDGES:
        pairs.add((rng.choice(fids), rng.choice(tests)))
    edges = [CoverEdge(f, t, confidence=1.0) for f, t in sorted(pairs)]
    return files, edges, fids


def main() -> None:
    files, edges, fids = synthetic()
    with tempfile.TemporaryDirectory(prefix="guard-bench-") as tmp:
        server = EmbeddedServer(Path(tmp))
        t0 = time.perf_counter()
        url = server.ensure_running()
        cold = time.perf_counter() - t0
        try:
            store = FalkorGraphStore(connect(url), "bench")
            store.ensure_schema()
            t0 = time.perf_counter()
            store.write_files(files)
            static_s = time.perf_counter() - t0

            t0 = time.perf_counter()
            store.write_coverage(edges, sha="s", tests=[], replace=True)
            cov_s = time.perf_counter() - t0

            rng = random.Random(1)
            lat = []
            for _ in range(300):
                change = rng.sample(fids, 5)
                t0 = time.perf_counter()
                store.covering_tests(change)
                lat.append((time.perf_counter() - t0) * 1000)
            lat.sort()
            server_ms = []
            for _ in range(300):
                result = store.graph.ro_query(
                    "UNWIND $ids AS id MATCH (:Function {id: id})-[c:COVERED_BY]->(t:Test) "
                    "RETURN id, collect([t.id, c.confidence])",
                    {"ids": rng.sample(fids, 5)},
                )
                server_ms.append(result.run_time_ms)
            store.close()
            server.stop()
            t0 = time.perf_counter()
            url = server.ensure_running()
            store = FalkorGraphStore(connect(url), "bench")
            store.ensure_schema()
            restart = time.perf_counter() - t0
            stats = store.stats()
            store.close()
        finally:
            server.stop()
    print(
        f"graph: {stats.functions} functions, {stats.tests} tests, "
        f"{stats.covered_by} COVERED_BY edges"
    )
    print(f"static write ({FUNCTIONS} functions): {static_s:.2f} s")
    print(f"COVERED_BY bulk write: {EDGES / cov_s:,.0f} edges/s ({cov_s:.2f} s, target >= 50,000)")
    print(
        f"covering-tests, 5-function change: p50 {statistics.median(lat):.2f} ms, "
        f"p99 {lat[int(len(lat) * 0.99)]:.2f} ms round trip; server execution p50 "
        f"{statistics.median(server_ms):.2f} ms (target p50 <= 1 ms)"
    )
    print(f"embedded cold start: {cold:.3f} s (target <= 0.5 s)")
    print(f"restart with graph loaded: {restart:.3f} s")


if __name__ == "__main__":
    main()
