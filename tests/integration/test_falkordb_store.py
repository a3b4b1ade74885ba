"""The FalkorDB store against the real embedded server: what is FalkorDB's own (Cypher
injection, batching, what an older writer leaves, the schema, the server). What the GraphStore
port does, the same for every store, is in test_store_contract.py."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from guard_adapters.falkordb.schema import META_KEY
from guard_adapters.falkordb.store import FalkorGraphStore, connect
from guard_core.errors import SchemaMismatch, StoreUnavailable
from guard_core.index_model import CallEdge, FileIndex, TestNode
from guard_core.model import CoverEdge
from tests.integration.test_store_contract import fn

HOSTILE = "pkg/we ird/\"quo'te{brace}\\back`tick ünï💥.py"


def small_graph(store: FalkorGraphStore) -> None:
    store.write_files(
        [
            FileIndex(
                path="pkg/a.py",
                sha="1",
                module="pkg.a",
                functions=(fn("pkg/a.py", "helper"), fn("pkg/a.py", "top"), fn("pkg/a.py", "root")),
                calls=(
                    CallEdge("pkg/a.py::top", "pkg.a.helper", 0.9),
                    CallEdge("pkg/a.py::root", "pkg.a.top", 0.5),
                ),
            ),
            FileIndex(
                path="tests/test_a.py",
                sha="2",
                module="tests.test_a",
                tests=(
                    TestNode(
                        "tests/test_a.py::test_one", "tests/test_a.py", "test_one", "test_one", 1, 3
                    ),
                ),
                imports=("pkg.a",),
            ),
        ]
    )


def test_hostile_ids_round_trip_verbatim(store: FalkorGraphStore) -> None:
    qual = "Cls.meth'\") DETACH DELETE n //"
    node = fn(HOSTILE, qual)
    store.write_files([FileIndex(path=HOSTILE, sha="abc", module=None, functions=(node,))])
    store.write_coverage(
        [CoverEdge(node.id, "tests/t.py::test_x[a\\b]")],
        sha="s1",
        tests=["tests/t.py::test_x[a\\b]"],
        replace=True,
    )
    assert store.file_hashes() == {HOSTILE: "abc"}
    facts = store.function_facts([node.id])
    assert list(facts) == [node.id] and facts[node.id].file == HOSTILE
    edges = store.covering_tests([node.id])
    assert [(e.function, e.test) for e in edges] == [(node.id, "tests/t.py::test_x[a\\b]")]
    assert store.stats().functions == 1  # the injected DETACH DELETE did not run


def test_a_stream_of_more_edges_than_a_batch_is_written_whole(store: FalkorGraphStore) -> None:
    # edges come from a generator and are written a batch at a time, never all held
    functions = tuple(fn("pkg/big.py", f"f{i}", start=i + 1, end=i + 1) for i in range(2600))
    store.write_files(
        [FileIndex(path="pkg/big.py", sha="1", module="pkg.big", functions=functions)]
    )
    tests = [f"tests/test_big.py::test_{k}" for k in range(3)]
    made: list[int] = []

    def stream() -> Iterator[CoverEdge]:
        for test in tests:
            for f in functions:
                made.append(1)
                yield CoverEdge(f.id, test, lines=frozenset({f.start, len(made) % 7 + 1}))
            yield CoverEdge("data/table.csv", test)

    store.write_coverage(stream(), sha="s1", tests=tests, replace=True)
    assert store.stats().covered_by == len(made) + len(tests) == 7803
    edges = store.covering_tests(["pkg/big.py::f2599", "data/table.csv"])
    assert {(e.function, e.test) for e in edges} == {
        (fid, t) for fid in ("pkg/big.py::f2599", "data/table.csv") for t in tests
    }
    helper = {e.test: e.lines for e in store.covering_tests(["pkg/big.py::f0"])}
    assert helper[tests[2]] == frozenset({1, (2 * 2600 + 1) % 7 + 1})  # its 5201st edge


def test_a_count_an_older_writer_left_stale_cuts_no_test(store: FalkorGraphStore) -> None:
    small_graph(store)
    tests = [f"tests/test_a.py::test_{n}" for n in ("one", "two", "three")]
    store.write_coverage(
        [*(CoverEdge("pkg/a.py::root", t) for t in tests), CoverEdge("pkg/a.py::top", tests[0])],
        sha="s1",
        tests=tests,
        replace=True,
    )
    wide = store.tests_covering(["pkg/a.py::top", "pkg/a.py::root"])
    assert {e.function for e in wide} == {"pkg/a.py::root"}  # root's edges answer for all
    # a writer that keeps no counts (an older Guard on a shared server) adds a test run only
    # by top: the stale count must not cut it from the answer
    store._query(
        "MATCH (f:Function {id: 'pkg/a.py::top'}) MERGE (t:Test {id: 'tests/test_a.py::test_new'}) "
        "CREATE (f)-[:COVERED_BY {source: 'coverage', confidence: 1.0}]->(t)"
    )
    wide = store.tests_covering(["pkg/a.py::top", "pkg/a.py::root"])
    assert {e.test for e in wide} == {*tests, "tests/test_a.py::test_new"}


def test_repair_edges_are_written_where_both_ends_exist(store: FalkorGraphStore) -> None:
    small_graph(store)
    one, ghost = "tests/test_a.py::test_one", "tests/test_b.py::test_new"
    pairs = [
        ("pkg/a.py::top", one),
        ("pkg/a.py::helper", one),
        ("pkg/a.py::helper", one),  # one edge per pair
        ("pkg/a.py::missing", one),
        ("pkg/a.py::top", ghost),
    ]
    assert store.write_repair_edges(pairs, "s2") == 2
    edges = store.covering_tests(["pkg/a.py::top", "pkg/a.py::helper", "pkg/a.py::root"])
    assert {(e.function, e.test, e.source, e.confidence, e.evidence_count, e.last_verified_sha)
            for e in edges} == {
        ("pkg/a.py::top", one, "miss_repair", 1.0, 1, "s2"),
        ("pkg/a.py::helper", one, "miss_repair", 1.0, 1, "s2"),
    }  # fmt: skip
    facts = store.function_facts(["pkg/a.py::top", "pkg/a.py::helper", "pkg/a.py::root"])
    assert [facts[f"pkg/a.py::{q}"].no_evidence for q in ("top", "helper", "root")] == [
        False,
        False,
        True,
    ]
    assert ghost not in store.all_tests()  # a repair never creates a test
    assert store.write_repair_edges([("pkg/a.py::top", one)], "s3") == 1
    [again] = store.covering_tests(["pkg/a.py::top"])
    assert (again.evidence_count, again.last_verified_sha) == (2, "s3")
    assert store.write_repair_edges([], "s3") == 0


def test_schema_version_mismatch_is_a_clear_error(store: FalkorGraphStore) -> None:
    store._query("MATCH (m:Meta {key: $k}) SET m.schema_version = 999", {"k": META_KEY})
    with pytest.raises(SchemaMismatch, match="schema version 999") as info:
        store.ensure_schema()
    assert "--reset" in (info.value.hint or "")


def test_foreign_graph_is_refused(falkordb_url: str) -> None:
    other = FalkorGraphStore(connect(falkordb_url), "test:foreign")
    other.graph.query("CREATE (:Person {name: 'x'})")
    try:
        with pytest.raises(SchemaMismatch, match="did not write"):
            other.ensure_schema()
    finally:
        other.clear()


def test_unreachable_server_is_store_unavailable(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(StoreUnavailable, match="unreachable"):
        store = FalkorGraphStore(connect(f"unix://{tmp_path}/nothing.sock"), "g")
        store.ensure_schema()
    with pytest.raises(StoreUnavailable):
        store = FalkorGraphStore(connect("redis://127.0.0.1:1"), "g")
        store.stats()
