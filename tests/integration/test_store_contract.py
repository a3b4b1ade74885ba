"""One contract for every implementation of the GraphStore port: the FalkorDB store on the
session's embedded server, and the in-memory FakeStore the unit tests use. Each test writes
through the port and asserts what the reads return, the same for both (FalkorDB's own
behaviour, injection, schema and batching, is in test_falkordb_store.py). Every method of
the port runs on both stores: none needed to be left to FalkorDB alone."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from guard_core.errors import UnknownId
from guard_core.index_model import (
    COMPUTED,
    INTROSPECTED,
    BodyStatements,
    CallEdge,
    FileIndex,
    FunctionNode,
    StatementBinding,
    StatementRead,
    TestNode,
)
from guard_core.model import CoverEdge, GraphStats, IngestInfo, RunRecord, TestOutcome
from guard_core.ports import Caller, FunctionFacts, GraphStore
from guard_core.testing import FakeStore

A, B, T = "pkg/a.py", "pkg/b.py", "tests/test_a.py"
HELPER, TOP, ROOT = f"{A}::helper", f"{A}::top", f"{A}::root"
ONE, TWO, THREE = f"{T}::test_one", f"{T}::test_two", f"{T}::test_three"


@pytest.fixture(params=["fake", "falkordb"])
def contract_store(request: pytest.FixtureRequest) -> Iterator[GraphStore]:
    """A fresh, empty graph of each store (the fake's default ``info`` is a unit test's
    complete evidence; a fresh graph has none), each with every method of the port."""
    store: GraphStore = (
        FakeStore(info=IngestInfo())
        if request.param == "fake"
        else request.getfixturevalue("store")  # tests/conftest.py: the session's server
    )
    assert isinstance(store, GraphStore)
    yield store


def fn(path: str, qual: str, start: int = 1, end: int = 2, **kw: object) -> FunctionNode:
    return FunctionNode(
        id=f"{path}::{qual}",
        file=path,
        name=qual.split(".")[-1],
        qualname=qual,
        start=start,
        end=end,
        **kw,
    )  # type: ignore[arg-type]


def tnode(path: str, name: str) -> TestNode:
    return TestNode(f"{path}::{name}", path, name, name, 1, 3)


def a_file(sha: str = "1", *names: str, calls: tuple[CallEdge, ...] | None = None) -> FileIndex:
    """pkg/a.py: helper <- top <- root (confidences 0.9 and 0.5) unless told otherwise."""
    quals = names or ("helper", "top", "root")
    if calls is None:
        calls = (CallEdge(TOP, "pkg.a.helper", 0.9), CallEdge(ROOT, "pkg.a.top", 0.5))
    return FileIndex(A, sha, "pkg.a", functions=tuple(fn(A, q) for q in quals), calls=calls)


def t_file(*names: str, imports: tuple[str, ...] = ("pkg.a",)) -> FileIndex:
    return FileIndex(
        T, "2", "tests.test_a", tests=tuple(tnode(T, n) for n in names), imports=imports
    )


def small_graph(store: GraphStore) -> None:
    store.write_files([a_file(), t_file("test_one")])


def cover(store: GraphStore, edges: list[CoverEdge], tests: list[str], sha: str = "s1") -> None:
    store.write_coverage(edges, sha=sha, tests=tests, replace=True)


def counts(store: GraphStore) -> tuple[int, ...]:
    s = store.stats()
    return (s.files, s.functions, s.tests, s.calls, s.imports, s.covered_by)


# -- the static index -------------------------------------------------------------------------


def test_write_is_idempotent_and_keeps_evidence_on_rewrite(contract_store: GraphStore) -> None:
    store = contract_store
    small_graph(store)
    cover(store, [CoverEdge(HELPER, ONE)], [ONE])
    small_graph(store)
    assert counts(store) == (2, 3, 1, 2, 1, 1)
    assert not store.function_facts([HELPER])[HELPER].no_evidence
    assert store.function_facts([TOP])[TOP].no_evidence
    assert store.file_hashes() == {A: "1", T: "2"}


def test_rewrite_drops_functions_that_left_the_file(contract_store: GraphStore) -> None:
    store = contract_store
    small_graph(store)
    cover(store, [CoverEdge(HELPER, ONE), CoverEdge(ROOT, ONE)], [ONE])
    store.write_files([a_file("3", "helper", "top", calls=(CallEdge(TOP, "pkg.a.helper"),))])
    assert sorted(store.functions_of_files([A])[A]) == [HELPER, TOP]
    assert store.all_functions() == [HELPER, TOP]
    assert store.covering_tests([ROOT]) == [] and store.function_facts([ROOT]) == {}
    assert store.stats().calls == 1 and store.stats().covered_by == 1
    assert store.file_hashes() == {A: "3", T: "2"}
    store.write_files([a_file("4", "helper", calls=())])
    assert store.stats().calls == 0
    store.remove_files([A])
    assert store.file_hashes() == {T: "2"}
    assert counts(store) == (1, 0, 1, 0, 0, 0)
    assert store.functions_of_files([A]) == {}
    store.remove_files([])  # nothing to do


def test_function_facts_as_written_and_as_evidence_changes(contract_store: GraphStore) -> None:
    store = contract_store
    store.write_files(
        [
            FileIndex(
                A,
                "1",
                "pkg.a",
                functions=(
                    fn(A, "plain"),
                    fn(A, "dynamic", has_dynamic_dispatch=True),
                    fn(A, "cached", memo=True),
                ),
            )
        ]
    )
    ids = [f"{A}::plain", f"{A}::dynamic", f"{A}::cached", f"{A}::missing"]
    assert store.function_facts(ids) == {
        f"{A}::plain": FunctionFacts(f"{A}::plain", A, True, False, False),
        f"{A}::dynamic": FunctionFacts(f"{A}::dynamic", A, True, True, False),
        f"{A}::cached": FunctionFacts(f"{A}::cached", A, True, False, True),
    }
    cover(store, [CoverEdge(f"{A}::plain", ONE)], [ONE])
    facts = store.function_facts(ids)
    assert [facts[i].no_evidence for i in ids[:3]] == [False, True, True]
    # a function added since the last full ingest: no edges is no proof no test runs it
    store.mark_unproven([f"{A}::dynamic", f"{A}::missing"])
    assert not store.function_facts([f"{A}::dynamic"])[f"{A}::dynamic"].no_evidence
    assert store.function_facts([f"{A}::missing"]) == {}  # marking creates no function
    store.clear_unproven()
    assert store.function_facts([f"{A}::dynamic"])[f"{A}::dynamic"].no_evidence
    # coverage that no longer runs it: recounted on the next evidence write
    cover(store, [CoverEdge(f"{A}::cached", ONE)], [ONE])
    facts = store.function_facts(ids)
    assert [facts[i].no_evidence for i in ids[:3]] == [True, True, False]


def test_calls_into_a_file_are_linked_whichever_file_is_written_first(
    contract_store: GraphStore,
) -> None:
    store = contract_store
    user = f"{B}::user"
    calls = (CallEdge(user, "pkg.a.helper", 0.7), CallEdge(user, "pkg.nowhere"))
    b = FileIndex(B, "1", "pkg.b", functions=(fn(B, "user"),), calls=calls)
    store.write_files([b])  # pkg.a.helper is not in the graph yet
    assert store.stats().calls == 0
    store.write_files([a_file()])
    assert [(c.id, c.hops) for c in store.callers(HELPER, 1, 0.0)] == [(TOP, 1), (user, 1)]
    assert store.stats().calls == 3
    store.remove_files([A])
    assert store.stats().calls == 0 and store.callers(HELPER, 3, 0.0) == []
    store.write_files([a_file()])  # back: the call from pkg/b.py is linked again
    found = store.callers(HELPER, 1, 0.0)
    assert [(c.id, round(c.confidence, 2)) for c in found] == [(TOP, 0.9), (user, 0.7)]
    # a rewrite of pkg/b.py without the call drops it, the calls inside pkg/a.py stay
    store.write_files([FileIndex(B, "2", "pkg.b", functions=(fn(B, "user"),))])
    assert [c.id for c in store.callers(HELPER, 1, 0.0)] == [TOP]
    assert store.stats().calls == 2


def test_callers_respect_hops_and_confidence(contract_store: GraphStore) -> None:
    store = contract_store
    small_graph(store)
    near = store.callers(HELPER, hops=1, min_confidence=0.0)
    assert [(c.id, c.hops) for c in near] == [(TOP, 1)]
    far = store.callers(HELPER, hops=3, min_confidence=0.0)
    assert [(c.id, c.hops, round(c.confidence, 2)) for c in far] == [
        (TOP, 1, 0.9),
        (ROOT, 2, 0.45),
    ]
    assert [c.id for c in store.callers(HELPER, 3, 0.6)] == [TOP]
    assert store.callers(ROOT, 3, 0.0) == []


def test_callers_take_the_shortest_then_most_confident_path(contract_store: GraphStore) -> None:
    store = contract_store
    ids = {q: f"{A}::{q}" for q in ("target", "x", "y", "z", "far")}
    calls = (
        CallEdge(ids["x"], "pkg.a.target", 0.5),
        CallEdge(ids["y"], "pkg.a.target", 1.0),
        CallEdge(ids["z"], "pkg.a.x", 1.0),  # z -> x -> target: 0.5
        CallEdge(ids["z"], "pkg.a.y", 0.8),  # z -> y -> target: 0.8, the best of length 2
        CallEdge(ids["far"], "pkg.a.z", 1.0),
        CallEdge(ids["far"], "pkg.a.target", 0.1),  # direct, if weak: one hop
        CallEdge(ids["target"], "pkg.a.far", 1.0),  # a cycle back: the target is no caller
    )
    store.write_files([FileIndex(A, "1", "pkg.a", functions=tuple(fn(A, q) for q in ids),
                                 calls=calls)])  # fmt: skip
    found = [(c.id, c.hops, round(c.confidence, 2)) for c in store.callers(ids["target"], 5, 0)]
    assert found == [
        (ids["y"], 1, 1.0),
        (ids["x"], 1, 0.5),
        (ids["far"], 1, 0.1),
        (ids["z"], 2, 0.8),
    ]
    floored = store.callers(ids["target"], 5, 0.6)
    assert floored == [Caller(ids["y"], 1, 1.0), Caller(ids["z"], 2, 0.8),
                       Caller(ids["far"], 3, 0.8)]  # fmt: skip


def test_memo_callers_and_repairs_of_callees_follow_calls(contract_store: GraphStore) -> None:
    store = contract_store
    store.write_files(
        [
            FileIndex(
                A,
                "1",
                "pkg.a",
                functions=(fn(A, "helper"), fn(A, "top", memo=True), fn(A, "root", memo=True)),
                calls=(CallEdge(TOP, "pkg.a.helper"), CallEdge(ROOT, "pkg.a.top")),
            ),
            t_file("test_one", "test_two"),
        ]
    )
    assert store.memo_callers([HELPER], 1) == {TOP: HELPER}
    assert store.memo_callers([HELPER], 2) == {TOP: HELPER, ROOT: HELPER}
    assert store.memo_callers([HELPER], 0) == {}
    assert store.memo_callers([TOP], 3) == {ROOT: TOP}  # the changed function is no caller
    cover(store, [CoverEdge(HELPER, TWO)], [TWO])
    store.add_repair_edge(HELPER, ONE, "s2")
    store.add_repair_edge(TOP, TWO, "s2")
    assert store.repair_tests_of_callees([ROOT], hops=1) == [
        CoverEdge(TOP, TWO, "miss_repair", 1.0, 1, "s2")
    ]
    both = store.repair_tests_of_callees([ROOT], hops=2)  # coverage edges are no repairs
    assert sorted(both, key=lambda e: e.function) == [
        CoverEdge(HELPER, ONE, "miss_repair", 1.0, 1, "s2"),
        CoverEdge(TOP, TWO, "miss_repair", 1.0, 1, "s2"),
    ]
    assert store.repair_tests_of_callees([HELPER]) == []  # its own repair is not a callee's


def test_imports_link_and_select_the_importing_tests(contract_store: GraphStore) -> None:
    store = contract_store
    store.write_files([t_file("test_one", imports=("pkg.a", "tests.test_a", "os"))])
    assert store.stats().imports == 0  # pkg.a is not in the graph yet; nor itself, nor os
    store.write_files([a_file()])
    assert store.stats().imports == 1
    # the importer's tests, though none ran a function of pkg/a.py
    assert store.tests_of_files([A, T, "pkg/none.py"]) == {A: [ONE]}
    other = "tests/test_other.py::test_x"
    cover(store, [CoverEdge(HELPER, other)], [other])
    assert store.tests_of_files([A]) == {A: [ONE, other]}
    store.write_files([t_file("test_one", imports=())])
    assert store.stats().imports == 0 and store.tests_of_files([A]) == {A: [other]}


def test_tests_of_files_leave_out_import_time_and_shared_set_up(
    contract_store: GraphStore,
) -> None:
    store = contract_store
    body = FileIndex(A, "1", "pkg.a", functions=(fn(A, "<module>"), fn(A, "C.<body>"),
                                                 fn(A, "C.m"), fn(A, "f")))  # fmt: skip
    store.write_files([body, FileIndex(B, "2", "pkg.b", functions=(fn(B, "<module>"),
                                                                    fn(B, "g")))])  # fmt: skip
    cover(
        store,
        [
            CoverEdge(f"{A}::<module>", ONE),  # importing the module: every test does
            CoverEdge(f"{A}::C.<body>", ONE),
            CoverEdge(f"{A}::f", TWO, shared=True),  # only through shared set-up
            CoverEdge(f"{A}::C.m", THREE),
            CoverEdge(f"{B}::g", THREE),  # run, but its module body was not
        ],
        [ONE, TWO, THREE],
    )
    assert store.tests_of_files([A]) == {A: [THREE]}
    assert store.imported_files() == [A]
    of_files = store.functions_of_files(["pkg/c.py", B])
    assert {p: sorted(ids) for p, ids in of_files.items()} == {B: [f"{B}::<module>", f"{B}::g"]}


def test_names_among_the_modules_classes_and_functions(contract_store: GraphStore) -> None:
    store = contract_store
    store.write_files(
        [
            FileIndex(A, "1", "pkg.a", functions=(fn(A, "<module>"), fn(A, "C.<body>"),
                                                  fn(A, "C.m"), fn(A, "f"))),
            FileIndex("scripts/run.py", "2", None, functions=(fn("scripts/run.py", "main"),)),
        ]
    )  # fmt: skip
    asked = ["pkg", "pkg.a", "pkg.a.C", "pkg.a.C.m", "pkg.a.f", "pkg.a.g", "scripts.run.main"]
    assert store.modules_among(asked) == {"pkg.a"}
    assert store.classes_among(asked) == {"pkg.a.C"}
    assert store.functions_among(asked) == {"pkg.a.C.m", "pkg.a.f"}
    assert store.functions_named("m") == [f"{A}::C.m"]
    assert store.functions_named("main") == ["scripts/run.py::main"]
    # pkg/a.py becomes pkg/a.py of another package: its old names are gone
    store.write_files([FileIndex(A, "3", "other.a", functions=(fn(A, "f"),))])
    assert store.modules_among(["pkg.a", "other.a"]) == {"other.a"}
    assert store.classes_among(["pkg.a.C"]) == set()
    assert store.functions_among(["pkg.a.f", "other.a.f"]) == {"other.a.f"}
    store.remove_files([A])
    assert store.modules_among(["other.a"]) == set() == store.functions_among(["other.a.f"])


def test_readers_of_names_their_parts_and_attributes(contract_store: GraphStore) -> None:
    store = contract_store
    store.write_files(
        [
            FileIndex(B, "1", "pkg.b", functions=(
                fn(B, "exact", refs=("pkg.a.LIMIT",)),
                fn(B, "holder", refs=("pkg.a",)),  # holds the module: may read any name
                fn(B, "deeper", refs=("pkg.a.LIMIT.real", "os.path")),
                fn(B, "other", refs=("pkg.ab", "pkg.a.LIMITS")),
            )),
            FileIndex("run.py", "2", None, functions=(fn("run.py", "main", refs=("pkg.a",)),)),
        ]
    )  # fmt: skip
    rows = store.readers_of(["pkg.a.LIMIT"])
    assert sorted(rows) == [
        (f"{B}::deeper", "deeper", "pkg.b.deeper", "pkg.a.LIMIT.real"),
        (f"{B}::exact", "exact", "pkg.b.exact", "pkg.a.LIMIT"),
        (f"{B}::holder", "holder", "pkg.b.holder", "pkg.a"),
        ("run.py::main", "main", "", "pkg.a"),
    ]
    assert store.readers_of(["os"]) == [(f"{B}::deeper", "deeper", "pkg.b.deeper", "os.path")]
    assert store.readers_of(["nothing"]) == []


def test_modules_imported_by_another_file_under_their_name(contract_store: GraphStore) -> None:
    store = contract_store
    store.write_files(
        [
            FileIndex(A, "1", "pkg.a", imports=("pkg.a", "os")),  # itself: not an importer
            FileIndex(B, "2", "pkg.b", imports=("pkg.c",)),
            FileIndex("pkg/c.py", "3", "pkg.c"),
        ]
    )
    assert store.modules_imported(["pkg.a", "pkg.b", "pkg.c", "os"]) == {"pkg.c"}
    store.write_files([FileIndex(B, "4", "pkg.b", imports=("pkg.a",))])
    assert store.modules_imported(["pkg.a", "pkg.c"]) == {"pkg.a"}


def test_importers_and_aliases_follow_from_imports(contract_store: GraphStore) -> None:
    store = contract_store
    store.write_files(
        [
            FileIndex("pkg/__init__.py", "1", "pkg",
                      aliases=(("pkg.f", "pkg.a.f"), ("pkg.g", "pkg.a.g"))),
            FileIndex(B, "2", "pkg.b", aliases=(("pkg.b.*", "pkg.a.*"),)),
            FileIndex("pkg/c.py", "3", "pkg.c", aliases=(("pkg.c.h", "pkg.a.h"),)),
        ]
    )  # fmt: skip
    assert store.importers_of(["pkg.a.f"]) == ["pkg/__init__.py", B]
    assert store.importers_of(["pkg.a.f"], stars=False) == ["pkg/__init__.py"]
    assert store.importers_of(["pkg.a.h", "pkg.a.g"], stars=False) == ["pkg/__init__.py",
                                                                      "pkg/c.py"]  # fmt: skip
    assert store.importers_of(["pkg.x.f"]) == []
    aliases = store.aliases_of({"pkg.a.f", "pkg.a.z"})
    assert {k: sorted(v) for k, v in aliases.items()} == {
        "pkg.a.f": ["pkg.b.f", "pkg.f"],
        "pkg.a.z": ["pkg.b.z"],  # what `from pkg.a import *` brings
    }
    store.write_files([FileIndex(B, "4", "pkg.b")])  # the star import is gone
    assert store.importers_of(["pkg.a.z"]) == []
    assert store.aliases_of({"pkg.a.z"}) == {}


def test_aliases_of_reads_its_names_once(contract_store: GraphStore) -> None:
    store = contract_store
    store.write_files([FileIndex("pkg/__init__.py", "1", "pkg", aliases=(("pkg.f", "pkg.a.f"),))])
    assert store.aliases_of(n for n in ["pkg.a.f"]) == {"pkg.a.f": ["pkg.f"]}


def test_read_lines_and_statement_bindings_as_written(contract_store: GraphStore) -> None:
    store = contract_store
    body = BodyStatements(
        (StatementBinding(("X",), False), StatementBinding(("f", "g"), True)),
        (StatementRead(10, "os.sep"), StatementRead(2, "os.sep"), StatementRead(1, "pkg.a.X")),
    )
    store.write_files(
        [
            FileIndex(A, "1", "pkg.a", functions=(
                fn(A, "<module>", bindings=body.bindings, statement_refs=body.reads),
                fn(A, "f", refs=("pkg.a.X",), attributes=("y",), read_lines=(
                    ("pkg.a.X", frozenset({3, 4, 5, 9})), (".y", frozenset({7})),
                    ("pkg.a.Z", frozenset()),  # no lines: left out
                )),
                fn(A, "g", refs=("pkg.a.X",)),
            )),
        ]
    )  # fmt: skip
    assert store.read_lines([f"{A}::f", f"{A}::g", f"{A}::none"]) == {
        f"{A}::f": {"pkg.a.X": frozenset({3, 4, 5, 9}), ".y": frozenset({7})}
    }
    bodies = store.statement_bindings([f"{A}::<module>", f"{A}::g", f"{A}::none"])
    assert bodies[f"{A}::<module>"].bindings == body.bindings
    # read back in the order the store keeps them (by their text: statement 10 before 2)
    assert bodies[f"{A}::<module>"].reads == (
        StatementRead(1, "pkg.a.X"), StatementRead(10, "os.sep"), StatementRead(2, "os.sep"),
    )  # fmt: skip
    assert bodies[f"{A}::<module>"].binding(1) == StatementBinding(("f", "g"), True)
    assert bodies[f"{A}::g"] == BodyStatements() and f"{A}::none" not in bodies


def test_attribute_readers(contract_store: GraphStore) -> None:
    store = contract_store
    assert store.attribute_readers(["x"]) is None  # an index without attribute reads
    store.write_files(
        [
            FileIndex(A, "1", "pkg.a", functions=(
                fn(A, "plain"),
                fn(A, "reads_x", attributes=("x", "y")),
                fn(A, "by_name", attributes=(COMPUTED,)),
                fn(A, "any", attributes=("*",)),
                fn(A, "sig", attributes=(INTROSPECTED,)),
            )),
        ]
    )  # fmt: skip
    assert sorted(store.attribute_readers(["x"]) or []) == [
        (f"{A}::any", "*"),
        (f"{A}::by_name", COMPUTED),
        (f"{A}::reads_x", "x"),
    ]
    assert (f"{A}::sig", INTROSPECTED) in (store.attribute_readers(["__signature__"]) or [])
    assert (f"{A}::sig", INTROSPECTED) not in (store.attribute_readers(["x"]) or [])
    store.write_files([FileIndex(A, "2", "pkg.a", functions=(fn(A, "plain"),))])
    assert store.attribute_readers(["x"]) == []  # recorded, and nothing reads it
    store.remove_files([A])
    assert store.attribute_readers(["x"]) is None


# -- tests and their kinds --------------------------------------------------------------------


def test_a_doctest_of_a_source_module_keeps_its_evidence_when_the_module_is_reindexed(
    contract_store: GraphStore,
) -> None:
    """A refresh re-indexes a changed source file: its doctest items, which only the
    evidence knows (their node ids name the source file), must keep their edges, or a later
    edit of the code they run selects nothing."""
    store = contract_store
    doctest = f"{A}::pkg.a.helper"
    store.write_files([a_file(), t_file("test_one")])
    cover(store, [CoverEdge(HELPER, doctest), CoverEdge(TOP, ONE)], [doctest, ONE])
    store.set_test_kinds({doctest: (False, True)})
    store.write_files([a_file("2")])  # the module changed: indexed again
    assert [e.test for e in store.covering_tests([HELPER])] == [doctest]
    assert store.doctest_items() == [doctest]
    assert doctest in store.all_tests()


def test_a_kept_test_the_index_no_longer_lists_keeps_its_evidence_until_listed_again(
    contract_store: GraphStore,
) -> None:
    """A test pytest still collects though its file's index no longer lists it (inherited,
    built by a call) is kept by the refresh; the others that left the index go. Listed again,
    it is the index's again, and leaves with the index as any other."""
    store = contract_store
    store.write_files([a_file(), t_file("test_one", "test_two", "test_three")])
    cover(store, [CoverEdge(TOP, ONE), CoverEdge(TOP, TWO)], [ONE, TWO])
    store.keep_tests([ONE, f"{T}::test_unknown"])
    store.write_files([t_file("test_three")])
    assert [e.test for e in store.covering_tests([TOP])] == [ONE]
    assert sorted(store.all_tests()) == [ONE, THREE]
    store.write_files([t_file("test_one", "test_three")])  # listed again
    store.write_files([t_file("test_three")])
    assert store.all_tests() == [THREE] and store.covering_tests([TOP]) == []


def test_tests_come_from_the_index_the_coverage_and_failed_runs(
    contract_store: GraphStore,
) -> None:
    store = contract_store
    assert store.all_tests() == [] and store.test_count() == 0
    store.write_files([t_file("test_one", "test_two")])
    cover(store, [], ["tests/test_b.py::test_b"])  # a test the index does not have
    store.record_run(
        RunRecord(
            id="r1",
            timestamp=1.0,
            commit_sha="s1",
            duration_ms=5,
            outcomes=(
                TestOutcome("tests/test_c.py::test_c[1]", "failed", message="boom"),
                TestOutcome("tests/test_c.py::test_d", "error"),
                TestOutcome("tests/test_c.py::test_ok", "passed"),  # no node for a pass
                TestOutcome(ONE, "failed"),
            ),
        )
    )
    assert store.all_tests() == [ONE, TWO, "tests/test_b.py::test_b",
                                 "tests/test_c.py::test_c", "tests/test_c.py::test_d"]  # fmt: skip
    assert store.test_count() == 5
    stats = store.stats()
    assert (stats.runs, stats.failed_in) == (1, 3)
    # a rewrite of a file drops the tests an index wrote that left it; a test only the
    # evidence knows (a doctest, a test built at import) is no index's to drop
    store.write_files([FileIndex("tests/test_b.py", "3", "tests.test_b")])
    store.write_files([t_file("test_one")])
    assert store.all_tests() == [ONE, "tests/test_b.py::test_b", "tests/test_c.py::test_c",
                                 "tests/test_c.py::test_d"]  # fmt: skip
    store.remove_files(["tests/test_c.py"])  # a file gone takes every test of its path
    assert store.all_tests() == [ONE, "tests/test_b.py::test_b"]
    assert store.stats().failed_in == 1


def test_test_kinds_flag_known_tests_only(contract_store: GraphStore) -> None:
    store = contract_store
    store.write_files([t_file("test_one", "test_two", "test_three")])
    assert store.spawning_tests() == [] and store.doctest_items() == []
    store.set_test_kinds({TWO: (True, False), ONE: (True, True), "t.py::ghost": (True, True)})
    assert store.spawning_tests() == [ONE, TWO]
    assert store.doctest_items() == [ONE]
    assert store.all_tests() == [ONE, THREE, TWO]  # the ghost was not created
    store.set_test_kinds({ONE: (False, False), THREE: (False, True)})
    assert store.spawning_tests() == [TWO] and store.doctest_items() == [THREE]
    store.set_flake_rates({TWO: 0.5, "t.py::ghost": 1.0})
    assert store.test_count() == 3
    store.write_files([t_file("test_one", "test_two")])  # test_three left with its flags
    assert store.doctest_items() == [] and store.spawning_tests() == [TWO]


# -- evidence ---------------------------------------------------------------------------------


def test_covering_tests_order_and_floor(contract_store: GraphStore) -> None:
    store = contract_store
    small_graph(store)
    tests = [ONE, TWO]
    cover(
        store,
        [
            CoverEdge(HELPER, tests[0], confidence=0.5),
            CoverEdge(HELPER, tests[1], confidence=1.0),
            CoverEdge(TOP, tests[0], confidence=0.5),
            CoverEdge("templates/x.html", tests[0]),
        ],
        tests,
    )
    edges = store.covering_tests([HELPER, TOP])
    assert [(e.function, e.test) for e in edges] == [
        (HELPER, TWO),
        (HELPER, ONE),
        (TOP, ONE),
    ]
    assert [e.test for e in store.covering_tests([HELPER], 0.6)] == [tests[1]]
    assert store.covering_tests([HELPER], 1.0) == store.covering_tests([HELPER], 0.6)
    assert [e.test for e in store.covering_tests(["templates/x.html"])] == [tests[0]]
    assert store.tests_of_files([A]) == {A: tests}
    assert store.covering_tests([]) == [] and store.covering_tests(["pkg/a.py::nope"]) == []


def test_write_coverage_keeps_each_edge_as_written(contract_store: GraphStore) -> None:
    store = contract_store
    small_graph(store)
    written = CoverEdge(
        HELPER, ONE, source="coverage", confidence=0.75, evidence_count=3,
        last_verified_sha="ignored", lines=frozenset({3, 4, 5, 9}), shared=True,
        names=frozenset({".x", "=pkg.a.f"}),
    )  # fmt: skip
    plain = CoverEdge(TOP, ONE, names=frozenset())
    data = CoverEdge("data/table.csv", ONE, lines=frozenset({0}))
    cover(store, [written, plain, data], [ONE], sha="s1")
    [got] = store.covering_tests([HELPER])
    assert got == CoverEdge(HELPER, ONE, "coverage", 0.75, 3, "s1", frozenset({3, 4, 5, 9}),
                            True, frozenset({".x", "=pkg.a.f"}))  # fmt: skip
    [top] = store.covering_tests([TOP])
    assert top.names == frozenset() and top.lines == frozenset() and not top.shared
    [unread] = store.covering_tests([HELPER], lines=False)
    assert (unread.lines, unread.names, unread.evidence_count) == (frozenset(), None, 3)
    assert store.covering_tests(["data/table.csv"])[0].lines == frozenset({0})
    # the data file has a node now: a File without a hash
    assert store.file_hashes() == {A: "1", T: "2", "data/table.csv": None}
    assert store.stats().files == 3


def test_write_coverage_drops_edges_whose_ends_are_not_in_the_graph(
    contract_store: GraphStore,
) -> None:
    store = contract_store
    small_graph(store)
    cover(store, [CoverEdge(f"{A}::gone", ONE), CoverEdge(HELPER, "tests/test_x.py::t")], [ONE])
    assert store.stats().covered_by == 0
    assert store.all_tests() == [ONE]  # an edge's test is created only when listed
    assert store.function_facts([HELPER])[HELPER].no_evidence


def test_replace_swaps_the_listed_tests_coverage_and_keeps_repairs(
    contract_store: GraphStore,
) -> None:
    store = contract_store
    small_graph(store)
    cover(store, [CoverEdge(HELPER, ONE), CoverEdge(TOP, ONE), CoverEdge(TOP, TWO)], [ONE, TWO])
    store.add_repair_edge(ROOT, ONE, "s1")
    cover(store, [CoverEdge(ROOT, ONE, confidence=0.5)], [ONE], sha="s2")
    edges = [(e.function, e.test, e.source, e.confidence, e.last_verified_sha)
             for e in store.covering_tests([HELPER, TOP, ROOT])]  # fmt: skip
    assert edges == [
        (ROOT, ONE, "miss_repair", 1.0, "s1"),  # the repair stays
        (TOP, TWO, "coverage", 1.0, "s1"),  # another test's edges stay
        (ROOT, ONE, "coverage", 0.5, "s2"),  # created beside the repair: two edges, one pair
    ]
    assert store.function_facts([HELPER])[HELPER].no_evidence
    # without replace, an edge is merged into the pair's: the newest properties win
    store.write_coverage([CoverEdge(TOP, TWO, confidence=0.25, evidence_count=2)], sha="s3",
                         tests=[], replace=False)  # fmt: skip
    [merged] = store.covering_tests([TOP])
    assert (merged.confidence, merged.evidence_count, merged.last_verified_sha) == (0.25, 2, "s3")
    store.write_coverage([CoverEdge(HELPER, TWO)], sha="s3", tests=[], replace=False)
    assert [e.test for e in store.covering_tests([HELPER])] == [TWO]
    assert not store.function_facts([HELPER])[HELPER].no_evidence


def test_edge_lines_and_stamps_are_rewritten_in_place(contract_store: GraphStore) -> None:
    store = contract_store
    small_graph(store)
    cover(store, [CoverEdge(HELPER, ONE, lines=frozenset({1})), CoverEdge(TOP, ONE)], [ONE])
    cover(store, [CoverEdge(ROOT, TWO)], [TWO], sha="s0")
    store.set_edge_lines([
        CoverEdge(HELPER, ONE, lines=frozenset({2, 3}), names=frozenset({".a"})),
        CoverEdge(ROOT, ONE, lines=frozenset({9})),  # no such edge: nothing is created
    ])  # fmt: skip
    [helper] = store.covering_tests([HELPER])
    assert (helper.lines, helper.names) == (frozenset({2, 3}), frozenset({".a"}))
    assert [e.test for e in store.covering_tests([ROOT])] == [TWO]
    store.restamp_edges(["s1", "other"], "s9")
    shas = {e.function: e.last_verified_sha for e in store.covering_tests([HELPER, TOP, ROOT])}
    assert shas == {HELPER: "s9", TOP: "s9", ROOT: "s0"}


def test_tests_covering_keeps_every_test_with_its_best_edges(contract_store: GraphStore) -> None:
    store = contract_store
    small_graph(store)
    tests = [ONE, TWO]
    cover(
        store,
        [
            CoverEdge(HELPER, tests[0], confidence=0.5, lines=frozenset({1})),
            CoverEdge(TOP, tests[0], confidence=1.0),
            CoverEdge(HELPER, tests[1], confidence=0.9),
            CoverEdge("data/x.json", tests[1]),
        ],
        tests,
    )
    ids = [HELPER, TOP, "data/x.json"]
    one = store.tests_covering(ids, per_test=1)
    assert {(e.test, e.function) for e in one} == {
        (tests[0], TOP),  # the more confident of its two edges
        (tests[1], HELPER),  # a data file is no function
    }
    three = store.tests_covering(ids, per_test=3)
    assert len(three) == 3 and all(e.lines == frozenset() for e in three)
    assert {e.test for e in store.tests_covering(ids, 0.95)} == {tests[0]}
    assert store.tests_covering(["data/x.json"]) == []
    zero = store.tests_covering([HELPER, TOP], per_test=0)  # at least one edge a test
    assert sorted(zero, key=lambda e: e.test) == sorted(one, key=lambda e: e.test)


def test_a_reader_every_test_runs_answers_for_all_and_a_partial_one_does_not(
    contract_store: GraphStore,
) -> None:
    store = contract_store
    small_graph(store)
    tests = [ONE, TWO, THREE]
    no_edges = f"{T}::test_no_edges"
    cover(
        store,
        [
            *(CoverEdge(ROOT, t) for t in tests),  # the whole suite runs it
            CoverEdge(HELPER, tests[0]),
            CoverEdge(TOP, tests[0]),
            CoverEdge(TOP, tests[1]),
        ],
        [*tests, no_edges],  # a test that ran nothing
    )
    wide = store.tests_covering([HELPER, TOP, ROOT])
    assert sorted(e.test for e in wide) == sorted(tests)  # one edge each, from root
    assert {e.function for e in wide} == {ROOT}
    partial = store.tests_covering([HELPER, TOP])
    assert {e.test for e in partial} == set(tests[:2])
    # a less confident edge from root: the full answer, each test with its best edges
    half = [CoverEdge(ROOT, t, confidence=0.5) for t in tests]
    cover(store, [*half, CoverEdge(HELPER, tests[0])], tests, sha="s2")
    assert {e.function for e in store.tests_covering([HELPER, ROOT])} == {HELPER, ROOT}
    cover(store, [*(CoverEdge(ROOT, t) for t in tests), CoverEdge(HELPER, tests[0])], tests)
    assert {e.function for e in store.tests_covering([HELPER, ROOT])} == {ROOT}
    # a repair edge gives a test that ran nothing evidence: root no longer covers everyone
    store.add_repair_edge(HELPER, no_edges, "s3")
    wide = store.tests_covering([HELPER, ROOT])
    assert {e.test for e in wide} == {*tests, no_edges}
    assert {e.function for e in wide} == {HELPER, ROOT}


# -- runs, shards, repairs and provenance -----------------------------------------------------


def test_the_last_shard_marks_the_base_complete_in_the_same_step(
    contract_store: GraphStore,
) -> None:
    store = contract_store
    store.update_ingest_info(coverage_sha="s1", coverage_complete=False)
    assert store.mark_shard("s1", 1, 2) is False
    assert not store.ingest_info().coverage_complete
    assert store.mark_shard("s1", 2, 2) is True
    assert store.ingest_info().coverage_complete
    assert store.mark_shard("s1", 2, 2) is True  # a shard run again counts once
    assert store.mark_shard("s2", 1, 2) is False  # another commit starts over
    assert not store.ingest_info().coverage_complete
    # shards that all ran nothing (wrong test arguments) never make evidence complete
    assert store.mark_shard("s3", 1, 2, tests=0) is False
    assert store.mark_shard("s3", 2, 2, tests=0) is False
    assert not store.ingest_info().coverage_complete
    assert store.mark_shard("s4", 1, 2, tests=0) is False
    assert store.mark_shard("s4", 2, 2, tests=5) is True  # one empty shard is fine
    assert store.mark_shard("s5", 1, 3) is False
    assert store.mark_shard("s5", 1, 3) is False  # the same shard twice is one of three
    assert store.mark_shard("s5", 2, 3) is False
    assert store.mark_shard("s5", 3, 4) is False  # another count of shards starts over
    assert store.ingest_info().coverage_sha == "s1"  # marking shards sets no base


def test_repair_edge_and_run_record(contract_store: GraphStore) -> None:
    store = contract_store
    small_graph(store)
    store.add_repair_edge(TOP, ONE, "s2")
    [edge] = store.covering_tests([TOP])
    assert edge == CoverEdge(TOP, ONE, "miss_repair", 1.0, 1, "s2")
    assert not store.function_facts([TOP])[TOP].no_evidence
    with pytest.raises(UnknownId, match="no function"):
        store.add_repair_edge(f"{A}::missing", ONE, "s2")
    before = store.stats()
    with pytest.raises(UnknownId, match="no test"):  # a repair never creates a ghost test
        store.add_repair_edge(TOP, "tests/test_b.py::test_new", "s2")
    assert store.stats() == before and "tests/test_b.py::test_new" not in store.all_tests()
    store.add_repair_edge(TOP, ONE, "s3")  # again: one edge, one more piece of evidence
    [again] = store.covering_tests([TOP])
    assert (again.evidence_count, again.last_verified_sha) == (2, "s3")
    store.record_run(
        RunRecord(
            id="r1",
            timestamp=1.0,
            commit_sha="s2",
            duration_ms=5,
            outcomes=(
                TestOutcome(ONE, "failed", message="boom"),
                TestOutcome("tests/test_b.py::test_new", "passed"),
            ),
        )
    )
    stats = store.stats()
    assert (stats.runs, stats.failed_in, stats.tests) == (1, 1, 1)


def test_a_repair_over_a_coverage_edge_takes_it_over(contract_store: GraphStore) -> None:
    store = contract_store
    small_graph(store)
    cover(store, [CoverEdge(HELPER, ONE, confidence=0.5, evidence_count=2,
                            lines=frozenset({4}))], [ONE])  # fmt: skip
    store.add_repair_edge(HELPER, ONE, "s2")
    assert store.covering_tests([HELPER]) == [
        CoverEdge(HELPER, ONE, "miss_repair", 1.0, 3, "s2", frozenset({4}))
    ]
    cover(store, [], [ONE], sha="s3")  # a repair is no coverage a new run replaces
    assert [e.source for e in store.covering_tests([HELPER])] == ["miss_repair"]


def test_ingest_info_round_trip(contract_store: GraphStore) -> None:
    store = contract_store
    assert store.ingest_info() == IngestInfo()
    store.update_ingest_info(
        static_sha="st",
        coverage_sha="cov",
        coverage_complete=True,
        coverage_runs=2,
        environment="env",
        python="/usr/bin/python3",
        known_failures='{"t.py::t": "E boom"}',
        lineage=["old", "older"],
        session_ran='["pkg/a.py::<module>"]',
    )
    want = IngestInfo(
        static_sha="st",
        coverage_sha="cov",
        coverage_complete=True,
        coverage_runs=2,
        environment="env",
        python="/usr/bin/python3",
        known_failures={"t.py::t": "E boom"},
        lineage=("old", "older"),
        session_ran=frozenset({"pkg/a.py::<module>"}),
    )
    info = store.ingest_info()
    assert info == want and info.known_failures == want.known_failures
    assert info.session_ran == want.session_ran
    store.update_ingest_info(coverage_runs=3, lineage=[], extra_field="kept quietly")
    again = store.ingest_info()
    assert (again.coverage_runs, again.lineage, again.static_sha) == (3, (), "st")
    assert again.known_failures == want.known_failures and again.coverage_complete


def test_stats_count_every_kind(contract_store: GraphStore) -> None:
    store = contract_store
    assert store.stats() == GraphStats()
    small_graph(store)
    cover(store, [CoverEdge(HELPER, ONE), CoverEdge("data/x.json", ONE)], [ONE, TWO])
    store.record_run(RunRecord("r1", 1.0, "s1", 5, (TestOutcome(TWO, "failed"),)))
    store.record_run(RunRecord("r2", 2.0, "s1", 5, (TestOutcome(ONE, "passed"),)))
    assert store.stats() == GraphStats(files=3, functions=3, tests=2, runs=2, calls=2,
                                       imports=1, covered_by=2, failed_in=1)  # fmt: skip


def test_clear_deletes_everything(contract_store: GraphStore) -> None:
    store = contract_store
    small_graph(store)
    cover(store, [CoverEdge(HELPER, ONE)], [ONE])
    store.update_ingest_info(coverage_sha="s1", coverage_complete=True)
    store.clear()
    assert store.ingest_info() == IngestInfo()
    assert store.stats() == GraphStats() and store.file_hashes() == {}
    store.ensure_schema()  # the next ingest starts from nothing
    small_graph(store)
    assert (
        store.covering_tests([HELPER]) == [] and store.function_facts([HELPER])[HELPER].no_evidence
    )
