"""ingest-static on real git repositories, against the real embedded FalkorDB."""

from __future__ import annotations

from pathlib import Path

from guard_adapters.falkordb.store import FalkorGraphStore
from guard_adapters.index.ingest import ingest_static
from tests.conftest import git, make_repo

FILES = {
    "src/pkg/__init__.py": "from .core import run as run\n",
    "src/pkg/core.py": (
        "from . import util\nfrom .util import LIMIT\n\n"
        "def run(x):\n    return util.clamp(x) + LIMIT\n\n"
        "class Engine:\n    speed = 2\n\n"
        "    def go(self):\n        return self.step() * self.speed\n\n"
        "    def step(self):\n        return run(1)\n"
    ),
    "src/pkg/util.py": "LIMIT = 3\n\ndef clamp(x):\n    return min(x, LIMIT)\n",
    "tests/test_core.py": (
        "from pkg.core import Engine, run\n\n"
        "def test_run():\n    assert run(1) == 4\n\n"
        "class TestEngine:\n    def test_go(self):\n        assert Engine().go()\n\n"
        "    def helper(self):\n        pass\n\n"
        "class TestWithInit:\n    def __init__(self):\n        pass\n\n    def test_no(self):\n"
        "        pass\n"
    ),
    "tests/check_more.py": "def test_other():\n    pass\n",
    "src/pkg/extra.py": "from .util import later\n\ndef use():\n    return later()\n",
    "pyproject.toml": '[tool.pytest.ini_options]\npython_files = ["test_*.py", "check_*.py"]\n',
}


def snapshot(store: FalkorGraphStore) -> dict[str, object]:
    q = store._read
    return {
        "files": sorted(map(tuple, q("MATCH (f:File) RETURN f.path, f.sha, f.module"))),
        "functions": sorted(
            map(
                tuple,
                q(
                    "MATCH (f:Function) RETURN f.id, f.start, f.end, f.dotted, f.refs, "
                    "f.has_dynamic_dispatch"
                ),
            )
        ),
        "tests": sorted(map(tuple, q("MATCH (t:Test) RETURN t.id, t.file"))),
        "calls": sorted(map(tuple, q("MATCH (a)-[c:CALLS]->(b) RETURN a.id, b.id, c.confidence"))),
        "imports": sorted(map(tuple, q("MATCH (a)-[:IMPORTS]->(b) RETURN a.path, b.path"))),
        "defined": sorted(map(tuple, q("MATCH (a)-[:DEFINED_IN]->(b) RETURN a.id, b.path"))),
    }


def test_index_contents(tmp_path: Path, store: FalkorGraphStore) -> None:
    repo = make_repo(tmp_path / "r", FILES)
    report = ingest_static(repo, store, include_tests=True)
    assert report.indexed == 6 and report.parse_errors == ()
    snap = snapshot(store)
    assert [t for t, _ in snap["tests"]] == [
        "tests/check_more.py::test_other",
        "tests/test_core.py::TestEngine::test_go",
        "tests/test_core.py::test_run",
    ]
    calls = {(a, b) for a, b, _ in snap["calls"]}
    assert ("src/pkg/core.py::run", "src/pkg/util.py::clamp") in calls
    assert ("src/pkg/core.py::Engine.go", "src/pkg/core.py::Engine.step") in calls
    assert ("tests/test_core.py::test_run", "src/pkg/core.py::run") in calls
    assert ("src/pkg/core.py", "src/pkg/util.py") in snap["imports"]
    assert ("tests/test_core.py", "src/pkg/core.py") in snap["imports"]
    refs = {f[0]: f[4] for f in snap["functions"]}
    assert "pkg.util.LIMIT" in refs["src/pkg/core.py::run"]
    assert "pkg.core.Engine.speed" in refs["src/pkg/core.py::Engine.go"]
    assert refs["src/pkg/util.py::<module>"] == []  # bindings are not reads


def test_without_include_tests_skips_test_files(tmp_path: Path, store: FalkorGraphStore) -> None:
    repo = make_repo(tmp_path / "r", FILES)
    ingest_static(repo, store)
    assert [p for p, *_ in snapshot(store)["files"]] == [
        "src/pkg/__init__.py",
        "src/pkg/core.py",
        "src/pkg/extra.py",
        "src/pkg/util.py",
    ]


def test_incremental_equals_fresh(
    tmp_path: Path, store: FalkorGraphStore, falkordb_url: str
) -> None:
    repo = make_repo(tmp_path / "r", FILES)
    ingest_static(repo, store, include_tests=True)
    # edit one file, delete one, rename one, add one that an unchanged file calls
    (repo / "src/pkg/util.py").write_text(
        "LIMIT = 4\n\ndef clamp(x):\n    return max(min(x, LIMIT), 0)\n\ndef later():\n"
        "    return 1\n"
    )
    git(repo, "rm", "-q", "tests/check_more.py")
    git(repo, "mv", "src/pkg/core.py", "src/pkg/engine.py")
    (repo / "src/pkg/__init__.py").write_text("from .engine import run as run\n")
    report = ingest_static(repo, store, include_tests=True)
    assert report.unchanged == 2 and report.removed == 2  # core.py and check_more.py
    incremental = snapshot(store)
    # extra.py was not re-read, yet its call to the new util.later is linked
    assert ("src/pkg/extra.py::use", "src/pkg/util.py::later", 0.9) in incremental["calls"]
    import uuid

    from guard_adapters.falkordb.store import FalkorGraphStore as Store
    from guard_adapters.falkordb.store import connect

    fresh = Store(connect(falkordb_url), f"test:{uuid.uuid4().hex[:8]}")
    fresh.ensure_schema()
    try:
        ingest_static(repo, fresh, include_tests=True)
        assert incremental == snapshot(fresh)
    finally:
        fresh.clear()
        fresh.close()


def test_ingest_without_tests_keeps_indexed_tests(tmp_path: Path, store: FalkorGraphStore) -> None:
    repo = make_repo(tmp_path / "r", FILES)
    ingest_static(repo, store, include_tests=True)
    before = snapshot(store)["tests"]
    report = ingest_static(repo, store)  # no --include-tests: nothing is dropped
    assert report.removed == 0 and snapshot(store)["tests"] == before


def test_unparsable_file_is_recorded(tmp_path: Path, store: FalkorGraphStore) -> None:
    repo = make_repo(tmp_path / "r", {"a.py": "def f(:\n", "b.py": "x = 1\n"})
    report = ingest_static(repo, store)
    assert len(report.parse_errors) == 1 and report.parse_errors[0].startswith("a.py:")
    assert store.functions_of_files(["b.py"]) == {"b.py": ["b.py::<module>"]}
