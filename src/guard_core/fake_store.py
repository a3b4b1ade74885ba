"""An in-memory graph store that answers as the FalkorDB store does (a contract test suite,
``tests/integration/test_store_contract.py``, runs against both).

Its state is plain fields a unit test may also set directly (``edges``, ``functions``,
``tests``, ``refs``...); the writes keep them as the real store keeps its nodes and edges:
what a file's rewrite drops, what an unknown id leaves unwritten, which properties a write
resets. The reads are in :mod:`guard_core.fake_reads`."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import cast

import attrs

from guard_core.errors import UnknownId
from guard_core.fake_reads import CLASS_SUFFIX, FakeReads, FileNode
from guard_core.index_model import (
    BodyStatements,
    FileIndex,
    FunctionNode,
    StatementBinding,
)
from guard_core.model import (
    CoverEdge,
    GraphStats,
    IngestInfo,
    RunRecord,
    split_id,
    test_function_id,
)
from guard_core.ports import FunctionFacts

_INFO_FIELDS = frozenset(a.name for a in attrs.fields(IngestInfo))


@attrs.define
class FakeStore(FakeReads):
    """A graph store held in dicts. Set ``fail`` to make every call raise it.

    Unlike a fresh real graph, its default ``info`` says the evidence of ``base`` is complete
    (what most unit tests want); pass ``info=IngestInfo()`` for a fresh graph's."""

    edges: list[CoverEdge] = attrs.field(factory=list)  # the COVERED_BY edges
    functions: dict[str, FunctionFacts] = attrs.field(factory=dict)
    tests: list[str] = attrs.field(factory=list)
    info: IngestInfo = attrs.field(
        factory=lambda: IngestInfo(coverage_sha="base", coverage_complete=True)
    )
    fail: Exception | None = None
    runs: list[RunRecord] = attrs.field(factory=list)
    spawners: list[str] = attrs.field(factory=list)
    doctests: list[str] = attrs.field(factory=list)
    modules: list[str] = attrs.field(factory=list)  # dotted names of the repository's modules
    refs: dict[str, list[str]] = attrs.field(factory=dict)  # function id -> dotted names read
    classes: list[str] = attrs.field(factory=list)  # dotted names of the repository's classes
    dotted_functions: list[str] = attrs.field(factory=list)
    # function id -> attribute names it reads; None: an index without attribute reads
    attributes: dict[str, list[str]] | None = None
    # function id -> name read (a ref, ".attr") -> the lines that read it
    lines_read: dict[str, dict[str, frozenset[int]]] = attrs.field(factory=dict)
    # -- what only the writes fill (a unit test may set them too) --
    files: dict[str, FileNode] = attrs.field(factory=dict)  # File nodes, data files' included
    nodes: dict[str, FunctionNode] = attrs.field(factory=dict)  # functions as written
    dotted: dict[str, str] = attrs.field(factory=dict)  # function id -> its dotted name
    bodies: dict[str, BodyStatements] = attrs.field(factory=dict)
    call_targets: dict[str, list[tuple[str, float]]] = attrs.field(factory=dict)
    call_edges: dict[tuple[str, str], float] = attrs.field(factory=dict)  # (caller, callee)
    import_edges: set[tuple[str, str]] = attrs.field(factory=set)  # (importer, imported) paths
    defined_in: dict[str, str] = attrs.field(factory=dict)  # test id -> the file indexed with it
    kept_tests: set[str] = attrs.field(factory=set)  # tests no index lists any more, kept
    flake_rates: dict[str, float] = attrs.field(factory=dict)
    unproven: set[str] = attrs.field(factory=set)
    test_counts: dict[str, int] = attrs.field(factory=dict)  # as of the last evidence write
    failed_in: list[tuple[str, str]] = attrs.field(factory=list)  # (test, run id)
    meta: dict[str, object] = attrs.field(factory=dict)  # schema-node fields IngestInfo drops

    # -- lifecycle ------------------------------------------------------------------------------

    def ensure_schema(self) -> None:
        self._check()

    def close(self) -> None: ...

    def clear(self) -> None:
        """Everything goes, the provenance too (the real graph is deleted)."""
        self._check()
        for field in attrs.fields(FakeStore):
            value = getattr(self, field.name)
            if isinstance(value, list | dict | set):
                value.clear()
        self.attributes = None
        self.info = IngestInfo()

    def stats(self) -> GraphStats:
        self._check()
        return GraphStats(
            files=len(self.files),
            functions=len(self.functions),
            tests=len(self.tests),
            runs=len(self.runs),
            calls=len(self.call_edges),
            imports=len(self.import_edges),
            covered_by=len(self.edges),
            failed_in=len(self.failed_in),
        )

    def update_ingest_info(self, **fields: object) -> None:
        """As a real store keeps them: JSON-encoded fields are read back decoded, unknown
        fields kept, a tuple stored as a list."""
        self._check()
        fields = {k: list(v) if isinstance(v, tuple) else v for k, v in fields.items()}
        info = self.info
        current: dict[str, object] = {
            **attrs.asdict(info, recurse=False),
            "known_failures": json.dumps(dict(info.known_failures)),
            "lineage": list(info.lineage),
            "session_ran": None if info.session_ran is None else sorted(info.session_ran),
        }
        self.info = IngestInfo.from_mapping({**current, **fields})
        self.meta.update({k: v for k, v in fields.items() if k not in _INFO_FIELDS})

    def mark_shard(self, sha: str, shard: int, shards: int, tests: int = 1) -> bool:
        self._check()
        m = self.meta
        same = m.get("shard_sha") == sha and m.get("shard_count") == shards
        done = cast("list[int]", m.get("shards_done") or []) if same else []
        ran = cast(int, m.get("shard_tests") or 0) if same else 0
        now = done if shard in done else [*done, shard]
        ran += tests
        m.update(shard_sha=sha, shard_count=shards, shards_done=now, shard_tests=ran)
        complete = len(now) >= shards and ran > 0
        self.info = attrs.evolve(self.info, coverage_complete=complete)
        return complete

    # -- static index ---------------------------------------------------------------------------

    def file_hashes(self) -> dict[str, str]:
        """Every File node's hash: a data file some test read has a node, and None for its
        hash (as the real store answers, whatever the port's type says)."""
        self._check()
        return {path: cast(str, f.sha) for path, f in self.files.items()}

    def write_files(self, files: Sequence[FileIndex]) -> None:
        """Functions merged by id (their evidence stays); the functions and tests that left a
        file go with their edges: of the tests, only those an index wrote (a test only the
        evidence knows, a doctest or one built at import, stays)."""
        self._check()
        if not files:
            return
        for f in files:
            old = self.files.get(f.path)
            self._set_module(old.module if old else None, f.module)
            self.files[f.path] = FileNode(
                f.path, f.sha, f.module, f.parse_error, tuple(f.imports), tuple(f.aliases)
            )
        for f in files:
            keep = {fn.id for fn in f.functions}
            self._drop_functions(
                i for i, x in self.functions.items() if x.file == f.path and i not in keep
            )
            keep = {t.id for t in f.tests} | self.kept_tests
            self._drop_tests(
                t for t in self.tests if self.defined_in.get(t) == f.path and t not in keep
            )
        for f in files:
            for fn in f.functions:
                self._write_function(fn, f"{f.module}.{fn.qualname}" if f.module else None)
        for f in files:
            for t in f.tests:
                if t.id not in self.tests:
                    self.tests.append(t.id)
                self.defined_in[t.id] = t.file
                self.kept_tests.discard(t.id)  # the index's again
        self._link(files)

    def keep_tests(self, ids: Iterable[str]) -> None:
        self._check()
        self.kept_tests.update(set(ids).intersection(self.tests))

    def _set_module(self, old: str | None, new: str | None) -> None:
        if old is not None and old in self.modules:
            self.modules.remove(old)
        if new is not None:
            self.modules.append(new)

    def _write_function(self, fn: FunctionNode, dotted: str | None) -> None:
        old = self.functions.get(fn.id)
        self.functions[fn.id] = FunctionFacts(
            fn.id, fn.file, old.no_evidence if old else True, fn.has_dynamic_dispatch, fn.memo
        )
        self.nodes[fn.id] = fn
        self._set_dotted(fn.id, dotted)
        self.refs[fn.id] = list(fn.refs)
        if self.attributes is None:
            self.attributes = {}
        self.attributes[fn.id] = list(fn.attributes)
        self.lines_read.pop(fn.id, None)
        if fn.read_lines:  # as stored: a read without lines (or unreadable ones) is left out
            self.lines_read[fn.id] = {
                name: frozenset(lines)
                for name, lines in fn.read_lines
                if name and lines and min(lines) >= 0
            }
        self.bodies[fn.id] = BodyStatements(
            tuple(StatementBinding(tuple(" ".join(b.names).split()), b.side_effects)
                  for b in fn.bindings),
            tuple(sorted(fn.statement_refs, key=lambda r: f"{r.statement}\t{r.name}")),
        )  # fmt: skip

    def _set_dotted(self, fid: str, dotted: str | None) -> None:
        old = self.dotted.pop(fid, None)
        if old is not None:
            self.dotted_functions.remove(old)
            if old.endswith(CLASS_SUFFIX):
                self.classes.remove(old.removesuffix(CLASS_SUFFIX))
        if dotted is not None:
            self.dotted[fid] = dotted
            self.dotted_functions.append(dotted)
            if dotted.endswith(CLASS_SUFFIX):
                self.classes.append(dotted.removesuffix(CLASS_SUFFIX))

    def _link(self, files: Sequence[FileIndex]) -> None:
        """``CALLS`` and ``IMPORTS`` out of these files made again; into them from the others."""
        paths = {f.path for f in files}
        calls = [c for f in files for c in f.calls]
        for key in [k for k in self.call_edges if self._file_of(k[0]) in paths]:
            del self.call_edges[key]
        self.import_edges -= {e for e in self.import_edges if e[0] in paths}
        for f in files:
            for fn in f.functions:
                self.call_targets[fn.id] = [(c.callee, c.confidence) for c in calls
                                            if c.caller == fn.id]  # fmt: skip
        for c in calls:
            if c.caller in self.functions:
                for callee in self._named(c.callee, None):
                    if callee != c.caller:
                        self.call_edges[c.caller, callee] = c.confidence
        for f in files:
            for module in f.imports:
                self.import_edges |= {(f.path, p) for p in self._modules_at(module) if p != f.path}
        for caller, targets in self.call_targets.items():
            if caller in self.functions and self._file_of(caller) not in paths:
                for target, confidence in targets:
                    for callee in self._named(target, paths):
                        self.call_edges[caller, callee] = confidence
        for path, node in self.files.items():
            if path not in paths:
                for module in node.imports:
                    self.import_edges |= {(path, p) for p in self._modules_at(module) if p in paths}

    def _named(self, dotted: str, paths: set[str] | None) -> list[str]:
        return [i for i, d in self.dotted.items()
                if d == dotted and (paths is None or self._file_of(i) in paths)]  # fmt: skip

    def _modules_at(self, module: str) -> list[str]:
        return [p for p, node in self.files.items() if node.module == module]

    def remove_files(self, paths: Iterable[str]) -> None:
        self._check()
        for path in list(paths):
            self._drop_functions(i for i, f in self.functions.items() if f.file == path)
            self._drop_tests(t for t in self.tests if self._test_file(t) == path)
            node = self.files.pop(path, None)
            if node is not None:
                self._set_module(node.module, None)
                self.import_edges -= {e for e in self.import_edges if path in e}
                self.edges[:] = [e for e in self.edges if e.function != path]

    def _drop_functions(self, ids: Iterable[str]) -> None:
        """Functions deleted with their edges (the evidence of the others is not recounted)."""
        gone = set(ids)
        if not gone:
            return
        for fid in gone:
            self._set_dotted(fid, None)
            for table in (self.functions, self.nodes, self.refs, self.lines_read, self.bodies,
                          self.call_targets, self.test_counts, self.attributes or {}):  # fmt: skip
                table.pop(fid, None)
        self.unproven -= gone
        if self.attributes == {}:
            self.attributes = None  # no function left that records attribute reads
        for key in [k for k in self.call_edges if gone.intersection(k)]:
            del self.call_edges[key]
        self.edges[:] = [e for e in self.edges if e.function not in gone]

    def _drop_tests(self, ids: Iterable[str]) -> None:
        gone = set(ids)
        if not gone:
            return
        self.tests[:] = [t for t in self.tests if t not in gone]
        self.spawners[:] = [t for t in self.spawners if t not in gone]
        self.doctests[:] = [t for t in self.doctests if t not in gone]
        for table in (self.defined_in, self.flake_rates):
            for t in gone:
                table.pop(t, None)
        self.kept_tests -= gone
        self.edges[:] = [e for e in self.edges if e.test not in gone]
        self.failed_in[:] = [f for f in self.failed_in if f[0] not in gone]

    # -- evidence -------------------------------------------------------------------------------

    def write_coverage(
        self, edges: Iterable[CoverEdge], *, sha: str, tests: Iterable[str], replace: bool
    ) -> None:
        """Edges stamped with ``sha`` (their own is ignored); one whose test or function is
        not in the graph is dropped, silently; a data file's edge makes its File node."""
        self._check()
        listed = list(tests)
        for t in listed:
            if t not in self.tests:
                self.tests.append(t)
        if replace:
            dropped = set(listed)
            self.edges[:] = [e for e in self.edges
                             if not (e.test in dropped and e.source == "coverage")]  # fmt: skip
        known = set(self.tests)
        for e in edges:
            if e.test not in known:
                continue
            if "::" not in e.function:
                self.files.setdefault(e.function, FileNode(e.function))
            elif e.function not in self.functions:
                continue
            stored = attrs.evolve(e, last_verified_sha=sha, lines=_stored_lines(e.lines),
                                  names=_stored_names(e.names))  # fmt: skip
            self._merge_edge(stored, create=replace)
        self._refresh_no_evidence()

    def _merge_edge(self, edge: CoverEdge, create: bool) -> None:
        """``CREATE`` (a second edge of the same pair is another edge) or ``MERGE`` (every
        edge of the pair, whatever its source, takes the new properties)."""
        found = False
        if not create:
            for i, e in enumerate(self.edges):
                if (e.function, e.test) == (edge.function, edge.test):
                    self.edges[i], found = edge, True
        if not found:
            self.edges.append(edge)

    def _refresh_no_evidence(self) -> None:
        counts: dict[str, int] = {}
        for e in self.edges:
            counts[e.function] = counts.get(e.function, 0) + 1
        for fid, facts in self.functions.items():
            n = counts.get(fid, 0)
            self.functions[fid] = attrs.evolve(facts, no_evidence=n == 0)
            self.test_counts[fid] = n
        self.meta["evidenced_tests"] = len({e.test for e in self.edges if "::" in e.function})
        self.meta["evidenced_edges"] = len(self.edges)

    def set_flake_rates(self, rates: dict[str, float]) -> None:
        self._check()
        self.flake_rates |= {t: r for t, r in rates.items() if t in self.tests}

    def set_test_kinds(self, kinds: dict[str, tuple[bool, bool]]) -> None:
        """Flags of the tests in the graph (an unknown test is not created)."""
        self._check()
        known = {t: k for t, k in kinds.items() if t in self.tests}
        self.spawners[:] = sorted({*self.spawners, *(t for t, (s, _) in known.items() if s)}
                                  - {t for t, (s, _) in known.items() if not s})  # fmt: skip
        self.doctests[:] = sorted({*self.doctests, *(t for t, (_, d) in known.items() if d)}
                                  - {t for t, (_, d) in known.items() if not d})  # fmt: skip

    def record_run(self, run: RunRecord) -> None:
        """The run, and a ``FAILED_IN`` edge per failed test, whose Test node is created when
        the graph lacks it (parametrisations collapsed)."""
        self._check()
        self.runs.append(run)
        same_id = sum(1 for r in self.runs if r.id == run.id)
        for o in run.outcomes:
            if o.outcome in ("failed", "error"):
                test = test_function_id(o.test)
                if test not in self.tests:
                    self.tests.append(test)
                self.failed_in += [(test, run.id)] * same_id

    def set_edge_lines(self, edges: Iterable[CoverEdge]) -> None:
        self._check()
        for new in edges:
            for i, e in enumerate(self.edges):
                if (e.function, e.test) == (new.function, new.test) and "::" in e.function:
                    self.edges[i] = attrs.evolve(
                        e, lines=_stored_lines(new.lines), names=_stored_names(new.names)
                    )

    def restamp_edges(self, old_shas: Sequence[str], new_sha: str) -> None:
        self._check()
        old = set(old_shas)
        self.edges[:] = [attrs.evolve(e, last_verified_sha=new_sha)
                         if e.last_verified_sha in old else e for e in self.edges]  # fmt: skip

    def mark_unproven(self, function_ids: Iterable[str]) -> None:
        self._check()
        self.unproven |= set(function_ids) & set(self.functions)

    def clear_unproven(self) -> None:
        self._check()
        self.unproven.clear()

    def add_repair_edge(self, function_id: str, test_id: str, sha: str) -> None:
        """A ``miss_repair`` edge (confidence 1, one more piece of evidence than the pair's
        edge had, whatever its source); ``UnknownId`` when either end is not in the graph."""
        self._check()
        if function_id not in self.functions:
            raise UnknownId(f"no function {function_id!r} in the graph")
        if test_id not in self.tests:
            raise UnknownId(f"no test {test_id!r} in the graph")
        repaired = CoverEdge(function_id, test_id, "miss_repair", 1.0, 1, sha)
        pair = [
            i for i, e in enumerate(self.edges) if (e.function, e.test) == (function_id, test_id)
        ]
        for i in pair:  # every edge of the pair, its lines kept
            e = self.edges[i]
            self.edges[i] = attrs.evolve(
                repaired, evidence_count=e.evidence_count + 1, lines=e.lines, names=e.names,
                shared=e.shared,
            )  # fmt: skip
        if not pair:
            self.edges.append(repaired)
        self._refresh_no_evidence()

    def _test_file(self, test: str) -> str:
        return self.defined_in.get(test) or split_id(test)[0]


def _stored_lines(lines: frozenset[int]) -> frozenset[int]:
    """An edge's lines as the store reads them back: an unreadable set is unknown."""
    return frozenset() if lines and min(lines) < 0 else lines


def _stored_names(names: frozenset[str] | None) -> frozenset[str] | None:
    return None if names is None else frozenset(filter(None, "\t".join(names).split("\t")))


__all__ = ["FakeStore", "FileNode"]
