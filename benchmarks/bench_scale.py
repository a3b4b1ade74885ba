"""A monorepo-sized graph on one FalkorDB: write throughput, check-query latency and server
memory as the suite grows from 5k to 50k tests (about 100 edges per test, 20k functions at the
top size, ~5M COVERED_BY edges), each size in a fresh graph of one embedded server.

Run: python benchmarks/bench_scale.py [max tests]   (default 50000)
"""

from __future__ import annotations

import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

from guard_adapters.falkordb.embedded import EmbeddedServer
from guard_adapters.falkordb.store import FalkorGraphStore, connect
from guard_core.index_model import FileIndex, FunctionNode
from guard_core.model import CoverEdge

EDGES_PER_TEST = 100
FUNCTIONS_PER_TEST = 0.4  # 20k functions for 50k tests
PER_FILE = 20


def functions(count: int) -> tuple[list[FileIndex], list[str]]:
    files, ids = [], []
    for i in range(max(1, count // PER_FILE)):
        path = f"pkg/sub{i % 50}/mod{i}.py"
        fns = tuple(
            FunctionNode(id=f"{path}::f{j}", file=path, name=f"f{j}", qualname=f"f{j}",
                         start=j * 10 + 1, end=j * 10 + 9)
            for j in range(PER_FILE)
        )  # fmt: skip
        files.append(FileIndex(path=path, sha=str(i), module=f"pkg.sub{i % 50}.mod{i}",
                               functions=fns))  # fmt: skip
        ids += [f.id for f in fns]
    return files, ids


def edges_for(tests: list[str], fids: list[str], rng: random.Random) -> list[CoverEdge]:
    """Each test runs a few hot functions (shared set-up) and a spread of others."""
    hot = fids[:20]
    out = []
    for test in tests:
        for fid in {*hot, *rng.sample(fids, EDGES_PER_TEST - len(hot))}:
            start = rng.randrange(1, 200)
            out.append(CoverEdge(fid, test, lines=frozenset(range(start, start + 4))))
    return out


def measure(store: FalkorGraphStore, n_tests: int, rng: random.Random) -> dict[str, float]:
    files, fids = functions(int(n_tests * FUNCTIONS_PER_TEST))
    tests = [f"tests/area{i % 200}/test_{i // 200}.py::test_{i}" for i in range(n_tests)]
    t0 = time.perf_counter()
    store.write_files(files)
    static_s = time.perf_counter() - t0
    written = 0
    t0 = time.perf_counter()
    for start in range(0, n_tests, 2000):  # as an ingest writes: per batch of tests
        batch = tests[start : start + 2000]
        edges = edges_for(batch, fids, rng)
        store.write_coverage(edges, sha="s", tests=batch, replace=False)
        written += len(edges)
    write_s = time.perf_counter() - t0
    lat, wide = [], []
    for _ in range(100):  # a change of 5 ordinary functions
        t0 = time.perf_counter()
        store.covering_tests(rng.sample(fids[20:], 5))
        lat.append((time.perf_counter() - t0) * 1000)
    for _ in range(10):  # a name read by 30 functions, hot ones among them
        t0 = time.perf_counter()
        store.tests_covering([*fids[:3], *rng.sample(fids, 27)])
        wide.append((time.perf_counter() - t0) * 1000)
    memory = store.db.connection.info("memory")["used_memory"] / 2**20
    return {
        "tests": n_tests, "functions": len(fids), "edges": written, "static_s": static_s,
        "write_s": write_s, "edges_per_s": written / write_s, "p50_ms": statistics.median(lat),
        "max_ms": max(lat), "wide_p50_ms": statistics.median(wide), "wide_max_ms": max(wide),
        "memory_mb": memory,
    }  # fmt: skip


def main() -> None:
    top = int(sys.argv[1]) if len(sys.argv) > 1 else 50_000
    sizes = [s for s in (5_000, 20_000, 50_000) if s <= top] or [top]
    rng = random.Random(11)
    with tempfile.TemporaryDirectory(prefix="guard-scale-") as tmp:
        server = EmbeddedServer(Path(tmp))
        url = server.ensure_running()
        try:
            rows = []
            for n in sizes:
                store = FalkorGraphStore(connect(url, query_timeout=600), f"scale:{n}")
                store.ensure_schema()
                rows.append(measure(store, n, rng))
                store.clear()
                store.close()
                r = rows[-1]
                print(
                    f"{r['tests']:>6} tests {r['functions']:>6} functions {r['edges']:>8} edges: "
                    f"write {r['edges_per_s']:>8.0f} edges/s ({r['write_s']:.1f} s), static "
                    f"{r['static_s']:.1f} s; covering_tests p50 {r['p50_ms']:.1f} / max "
                    f"{r['max_ms']:.1f} ms; wide read p50 {r['wide_p50_ms']:.1f} / max "
                    f"{r['wide_max_ms']:.1f} ms; server memory {r['memory_mb']:.0f} MB",
                    flush=True,
                )
            first, last = rows[0], rows[-1]
            grow = last["tests"] / first["tests"]
            print(
                f"growth x{grow:.0f} in tests: write rate x"
                f"{last['edges_per_s'] / first['edges_per_s']:.2f}, covering_tests p50 x"
                f"{last['p50_ms'] / first['p50_ms']:.2f}, memory x"
                f"{last['memory_mb'] / first['memory_mb']:.1f}"
            )
        finally:
            server.stop()


if __name__ == "__main__":
    main()
