"""ingest-coverage on a real sample project: real pytest, real coverage, real FalkorDB."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from guard_adapters.coverage.ingest import ingest_coverage
from guard_adapters.falkordb.store import FalkorGraphStore, connect
from guard_core.errors import IngestError
from tests.conftest import make_repo
from tests.integration.sample_project import FILES

TESTS = [
    "tests/test_a.py::test_add", "tests/test_a.py::test_const", "tests/test_a.py::test_flaky",
    "tests/test_a.py::test_param", "tests/test_a.py::test_template",
    "tests/test_b.py::TestCalc::test_double", "tests/test_b.py::TestCalc::test_ready",
]  # fmt: skip


@pytest.fixture
def sample(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("FLAKY_COUNTER", str(tmp_path / "counter"))
    return make_repo(tmp_path / "sample", FILES)


def covering(store: FalkorGraphStore, fid: str) -> list[str]:
    return sorted({e.test for e in store.covering_tests([fid])})


def test_edges_fixtures_imports_and_data_files(sample: Path, store: FalkorGraphStore) -> None:
    ticks: list[tuple[int, int]] = []
    report = ingest_coverage(sample, store, progress=lambda d, t: ticks.append((d, t)))
    assert ticks[-1] == (8, 8)  # tests done / total, parametrisations included
    assert report.tests == len(TESTS)
    assert report.failed == ()
    assert covering(store, "pkg/core.py::add") == ["tests/test_a.py::test_add"]
    # mul: called by test_param (parametrisations collapse) and Calc.double
    assert covering(store, "pkg/core.py::mul") == [
        "tests/test_a.py::test_param",
        "tests/test_b.py::TestCalc::test_double",
    ]
    # a session fixture's setup is charged to every test that requests it, not the first only
    assert covering(store, "pkg/core.py::Calc.setup") == [
        "tests/test_a.py::test_add",
        "tests/test_b.py::TestCalc::test_double",
        "tests/test_b.py::TestCalc::test_ready",
    ]
    # import-time code (module bodies, the registration call) is charged to every test
    assert covering(store, "pkg/registry.py::register") == TESTS
    assert covering(store, "pkg/core.py::<module>") == TESTS
    # a test that only reads a constant still reaches the module that defines it
    assert "tests/test_a.py::test_const" in covering(store, "pkg/core.py::<module>")
    # a template the code opens is evidence for the test that rendered it
    assert covering(store, "pkg/templates/page.html") == ["tests/test_a.py::test_template"]
    facts = store.function_facts(["pkg/core.py::unused", "pkg/core.py::add"])
    assert facts["pkg/core.py::unused"].no_evidence and not facts["pkg/core.py::add"].no_evidence
    info = store.ingest_info()
    assert info.coverage_complete and info.coverage_sha


def test_xdist_workers_give_the_same_edges(
    sample: Path, store: FalkorGraphStore, falkordb_url: str, tmp_path: Path
) -> None:
    pytest.importorskip("xdist")
    ingest_coverage(sample, store)
    (tmp_path / "counter").unlink()  # the flaky test passes again
    # edge for edge: the lines each test ran and whether only shared set-up reached them
    query = (
        "MATCH (f)-[c:COVERED_BY]->(t) "
        "RETURN coalesce(f.id, f.path), t.id, c.lines, coalesce(c.shared, false)"
    )
    serial = sorted(store._read(query))
    parallel = FalkorGraphStore(connect(falkordb_url), f"test:{uuid.uuid4().hex[:8]}")
    parallel.ensure_schema()
    try:
        report = ingest_coverage(sample, parallel, pytest_args=["-n", "2"])
        assert report.tests == len(TESTS)
        assert sorted(parallel._read(query)) == serial
    finally:
        parallel.clear()
        parallel.close()


SPAWNING = {
    "pkg/__init__.py": "",
    "pkg/cli.py": "def main():\n    print('ok')\n\n\nif __name__ == '__main__':\n    main()\n",
    "tests/test_cli.py": (
        "import subprocess\nimport sys\n\n\n"
        "def test_child():\n"
        "    subprocess.run([sys.executable, '-m', 'pkg.cli'], check=True)\n\n\n"
        "def test_isolated():\n"  # -I ignores PYTHONPATH: Guard cannot measure this child
        "    subprocess.run([sys.executable, '-I', '-c', 'print(1)'], check=True)\n\n\n"
        "def test_plain():\n    assert True\n"
    ),
}


def test_xdist_workers_are_not_children_of_the_tests(
    tmp_path: Path, store: FalkorGraphStore
) -> None:
    """pytest-xdist's controller starts its workers as Python processes: that is no test's
    doing, and marking every test a spawner would select the whole suite for any change."""
    pytest.importorskip("xdist")
    repo = make_repo(tmp_path / "spawning", SPAWNING)
    ingest_coverage(repo, store, pytest_args=["-n", "2"])
    assert store.spawning_tests() == ["tests/test_cli.py::test_isolated"]
    # the measured child's lines are its test's evidence, in a worker as in one process
    assert covering(store, "pkg/cli.py::main") == ["tests/test_cli.py::test_child"]


def test_a_child_the_xdist_controller_starts_itself_is_a_spawn_of_every_test(
    tmp_path: Path, store: FalkorGraphStore
) -> None:
    """A controller-only hook that runs repository code in a child (a code generator whose
    output every test reads) is the whole session's spawn, under xdist as without it."""
    pytest.importorskip("xdist")
    conftest = (
        "import subprocess\nimport sys\n\n\n"
        "def pytest_configure(config):\n"
        "    if not hasattr(config, 'workerinput'):\n"
        "        subprocess.run([sys.executable, '-m', 'pkg.cli'], check=True)\n"
        "        subprocess.run([sys.executable, '-I', '-c', 'print(1)'], check=True)\n"
    )
    repo = make_repo(tmp_path / "hooked", {**SPAWNING, "conftest.py": conftest})
    ingest_coverage(repo, store, pytest_args=["-n", "2"])
    everyone = [
        "tests/test_cli.py::test_child",
        "tests/test_cli.py::test_isolated",
        "tests/test_cli.py::test_plain",
    ]
    assert store.spawning_tests() == everyone  # the unmeasured child is the session's
    assert covering(store, "pkg/cli.py::main") == everyone  # the measured one ran for all


def test_flaky_test_is_detected_and_its_partial_edges_kept_at_their_confidence(
    sample: Path, store: FalkorGraphStore
) -> None:
    report = ingest_coverage(sample, store, runs=2)
    assert set(report.flaky) == {"tests/test_a.py::test_flaky"}
    rate = store._read(
        "MATCH (t:Test {id: $id}) RETURN t.flake_rate", {"id": "tests/test_a.py::test_flaky"}
    )[0][0]
    assert rate == 0.5
    # the flaky test called mul() in one run only: it may call it again, at confidence 0.5
    partial = [e for e in store.covering_tests(["pkg/core.py::mul"])
               if e.test == "tests/test_a.py::test_flaky"]  # fmt: skip
    assert [(e.confidence, e.evidence_count) for e in partial] == [(0.5, 1)]
    stable = [e for e in store.covering_tests(["pkg/core.py::add"])]
    assert [(e.confidence, e.evidence_count) for e in stable] == [(1.0, 2)]


def test_shards_merge_to_the_full_ingest(
    sample: Path, store: FalkorGraphStore, falkordb_url: str, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    ingest_coverage(sample, store)
    full = sorted(store._read("MATCH (f)-[c:COVERED_BY]->(t) RETURN coalesce(f.id, f.path), t.id"))
    sharded = FalkorGraphStore(connect(falkordb_url), f"test:{uuid.uuid4().hex[:8]}")
    sharded.ensure_schema()
    try:
        for k in (1, 2):
            monkeypatch.setenv("FLAKY_COUNTER", str(tmp_path / "counter"))
            (tmp_path / "counter").unlink(missing_ok=True)
            ingest_coverage(sample, sharded, shard=(k, 2))
            assert sharded.ingest_info().coverage_complete is (k == 2)
        got = sorted(
            sharded._read("MATCH (f)-[c:COVERED_BY]->(t) RETURN coalesce(f.id, f.path), t.id")
        )
        assert got == full
    finally:
        sharded.clear()
        sharded.close()


def test_failed_collection_keeps_previous_evidence(sample: Path, store: FalkorGraphStore) -> None:
    ingest_coverage(sample, store)
    before = store.stats()
    (sample / "tests/test_broken.py").write_text("import nonexistent_module_xyz\n")
    with pytest.raises(IngestError, match="previous evidence is kept"):
        ingest_coverage(sample, store)
    after = store.stats()
    assert (after.covered_by, after.tests) == (before.covered_by, before.tests)
    assert store.ingest_info().coverage_complete


def test_a_failed_first_collection_still_indexes_the_code(
    tmp_path: Path, store: FalkorGraphStore
) -> None:
    # the index is parsed while pytest runs; it is written even when the run fails, as it was
    # when it ran first
    files = {**FILES, "tests/test_broken.py": "import nonexistent_module_xyz\n"}
    repo = make_repo(tmp_path / "broken", files)
    with pytest.raises(IngestError, match="previous evidence is kept"):
        ingest_coverage(repo, store)
    assert store.function_facts(["pkg/core.py::add"])
    assert "tests/test_a.py::test_add" in store.all_tests()
    assert store.stats().covered_by == 0


def test_monitoring_collector_matches_line_coverage(
    sample: Path, store: FalkorGraphStore, falkordb_url: str, monitoring_python: str,
    tmp_path: Path,
) -> None:  # fmt: skip
    """On Python >= 3.12 the sys.monitoring collector gives the same edges as coverage.py."""
    ingest_coverage(sample, store)
    # edge for edge: the lines each test ran and whether only shared set-up reached them
    query = (
        "MATCH (f)-[c:COVERED_BY]->(t) "
        "RETURN coalesce(f.id, f.path), t.id, c.lines, coalesce(c.shared, false)"
    )
    by_coverage = sorted(store._read(query))
    other = FalkorGraphStore(connect(falkordb_url), f"test:{uuid.uuid4().hex[:8]}")
    other.ensure_schema()
    try:
        (tmp_path / "counter").unlink()
        ingest_coverage(sample, other, python=monitoring_python)
        assert sorted(other._read(query)) == by_coverage
    finally:
        other.clear()
        other.close()
