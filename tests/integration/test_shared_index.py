"""The static index by content, shared on one real FalkorDB server: a second graph (another
clone, a new commit's base) parses only the files whose versions the server has not seen."""

from __future__ import annotations

import base64
import json
import uuid
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import redis

from guard_adapters.falkordb.shared_index import PREFIX
from guard_adapters.falkordb.store import FalkorGraphStore, connect
from guard_adapters.index import index, ingest, shared_index
from guard_adapters.index.index import RawIndex
from guard_adapters.index.ingest import ingest_static
from guard_adapters.index.shared_index import decode, encode, index_key, lookup
from guard_adapters.pytest.layout import PytestLayout
from tests.conftest import git, make_repo
from tests.integration.test_ingest_static import FILES, snapshot


@pytest.fixture
def graphs(falkordb_url: str) -> Iterator[Callable[[], FalkorGraphStore]]:
    """New graphs on the test's server, as other clones or bases would have."""
    made: list[FalkorGraphStore] = []

    def new() -> FalkorGraphStore:
        graph = FalkorGraphStore(connect(falkordb_url), f"test:{uuid.uuid4().hex[:12]}")
        graph.ensure_schema()
        made.append(graph)
        return graph

    yield new
    for graph in made:
        graph.clear()
        graph.close()


@pytest.fixture
def parsed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The paths libcst parses (in this process: these repositories are below the pool's
    threshold)."""
    seen: list[str] = []
    real = ingest.index_file

    def counting(path: str, *args: object) -> RawIndex:
        seen.append(path)
        return real(path, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(ingest, "index_file", counting)
    return seen


def unique_repo(root: Path) -> Path:
    # other tests on this server may have indexed FILES already: these versions are new
    mark = f"# {uuid.uuid4().hex}\n"
    return make_repo(root, {p: text + mark if p.endswith(".py") else text
                            for p, text in FILES.items()})  # fmt: skip


def test_a_second_graph_parses_no_file_the_server_has_indexed(
    tmp_path: Path, graphs: Callable[[], FalkorGraphStore], parsed: list[str]
) -> None:
    repo = unique_repo(tmp_path / "r")
    first = graphs()
    report = ingest_static(repo, first, include_tests=True)
    assert (report.indexed, report.reused, len(parsed)) == (6, 0, 6)

    parsed.clear()
    clone = graphs()
    report = ingest_static(repo, clone, include_tests=True)
    assert (report.indexed, report.reused, parsed) == (6, 6, [])
    assert snapshot(clone) == snapshot(first)

    core = repo / "src/pkg/core.py"
    core.write_text(core.read_text().replace("* self.speed", "* self.speed * 2"))
    git(repo, "commit", "-qam", "faster")
    next_commit = graphs()
    report = ingest_static(repo, next_commit, include_tests=True)
    assert (report.reused, parsed) == (5, ["src/pkg/core.py"])
    ingest_static(repo, first, include_tests=True)  # the first graph, updated in place
    assert snapshot(next_commit) == snapshot(first)


def test_damaged_entries_are_parsed_again(
    tmp_path: Path,
    graphs: Callable[[], FalkorGraphStore],
    parsed: list[str],
    falkordb_url: str,
) -> None:
    repo = unique_repo(tmp_path / "r")
    first = graphs()
    ingest_static(repo, first, include_tests=True)
    client = first.db.connection
    assert isinstance(client, redis.Redis)
    layout = PytestLayout(python_files=("test_*.py", "check_*.py"))
    for path in ("src/pkg/core.py", "src/pkg/util.py"):
        job = (str(repo), path, "pkg." + Path(path).stem, layout, False)
        key = PREFIX + index_key(job, (repo / path).read_bytes())
        assert client.get(key) is not None, "the key the ingest used is the one computed here"
        client.set(key, "not an index" if path.endswith("core.py") else encode_foreign())

    parsed.clear()
    again = graphs()
    report = ingest_static(repo, again, include_tests=True)
    assert sorted(parsed) == ["src/pkg/core.py", "src/pkg/util.py"] and report.reused == 4
    assert snapshot(again) == snapshot(first)


def encode_foreign() -> str:
    """A readable compressed JSON entry of another shape (an older codec)."""
    return base64.b64encode(zlib.compress(json.dumps({"file": {"path": 1}}).encode())).decode()


def test_codec_round_trip_and_keys(tmp_path: Path) -> None:
    repo = unique_repo(tmp_path / "r")
    from guard_adapters.index.index import index_file

    data = (repo / "src/pkg/core.py").read_bytes()
    raw = index_file("src/pkg/core.py", data, "pkg.core", PytestLayout(), False)
    assert decode(encode(raw)) == raw
    assert decode("\x00garbage") is None
    job = (str(repo), "src/pkg/core.py", "pkg.core", PytestLayout(), False)
    key = index_key(job, data)
    # the same bytes indexed as another path, module, role or layout are another entry
    assert key != index_key(
        (str(repo), "src/pkg/other.py", "pkg.core", PytestLayout(), False), data
    )
    assert key != index_key((str(repo), "src/pkg/core.py", "core", PytestLayout(), False), data)
    assert key != index_key((str(repo), "src/pkg/core.py", "pkg.core", PytestLayout(), True), data)
    other_layout = PytestLayout(python_functions=("check",))
    assert key != index_key((str(repo), "src/pkg/core.py", "pkg.core", other_layout, False), data)
    # the checkout's folder is not part of it: every clone shares the entry
    assert key == index_key(
        ("/elsewhere", "src/pkg/core.py", "pkg.core", PytestLayout(), False), data
    )
    assert key != index_key(job, data + b"\n")
    assert lookup(object(), [key]) == {}  # a store that keeps no indexes: everything is parsed


def test_a_graph_indexed_by_another_indexer_is_indexed_again(
    tmp_path: Path,
    graphs: Callable[[], FalkorGraphStore],
    parsed: list[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An upgraded Guard (other indexing code, the same index version) re-indexes unchanged
    files: the facts an older indexer wrote may lack what a check now relies on."""
    repo = unique_repo(tmp_path / "r")
    graph = graphs()
    ingest_static(repo, graph, include_tests=True)
    parsed.clear()
    assert ingest_static(repo, graph, include_tests=True).indexed == 0  # nothing changed
    for module in (index, shared_index):
        monkeypatch.setattr(module, "indexer_digest", lambda: b"another indexer")
    report = ingest_static(repo, graph, include_tests=True)
    assert report.indexed == 6 and len(parsed) == 6  # the server's entries are another's too
