"""The reads of :class:`guard_core.fake_store.FakeStore`, each answering as the FalkorDB
store's query does (its order, its floors, what it leaves out)."""

from __future__ import annotations

from collections.abc import Iterable

import attrs

from guard_core.index_model import BodyStatements, FunctionNode, reflective_facts
from guard_core.model import CLASS_BODY, MODULE_SCOPE, CoverEdge, IngestInfo, split_id
from guard_core.ports import Caller, FunctionFacts

CLASS_SUFFIX = f".{CLASS_BODY}"


@attrs.frozen
class FileNode:
    """A File node: an indexed file, or a data file some test read (no hash, no module)."""

    path: str
    sha: str | None = None
    module: str | None = None
    parse_error: str | None = None
    imports: tuple[str, ...] = ()  # dotted names of the modules it imports
    aliases: tuple[tuple[str, str], ...] = ()  # (name here, the name it imports)


class FakeReads:
    """What a decision reads, from the fields of :class:`~guard_core.fake_store.FakeStore`."""

    edges: list[CoverEdge]
    functions: dict[str, FunctionFacts]
    tests: list[str]
    info: IngestInfo
    fail: Exception | None
    spawners: list[str]
    doctests: list[str]
    modules: list[str]
    refs: dict[str, list[str]]
    classes: list[str]
    dotted_functions: list[str]
    attributes: dict[str, list[str]] | None
    lines_read: dict[str, dict[str, frozenset[int]]]
    files: dict[str, FileNode]
    nodes: dict[str, FunctionNode]
    dotted: dict[str, str]
    bodies: dict[str, BodyStatements]
    call_edges: dict[tuple[str, str], float]
    import_edges: set[tuple[str, str]]
    defined_in: dict[str, str]
    unproven: set[str]
    test_counts: dict[str, int]
    meta: dict[str, object]

    def _check(self) -> None:
        if self.fail is not None:
            raise self.fail

    def ingest_info(self) -> IngestInfo:
        self._check()
        return self.info

    # -- evidence -------------------------------------------------------------------------------

    def covering_tests(
        self, function_ids: Iterable[str], min_confidence: float = 0.0, lines: bool = True
    ) -> list[CoverEdge]:
        """Most confident first, then by function and test; without ``lines`` the edges'
        lines and names are unknown."""
        self._check()
        ids = set(function_ids)
        found = [e for e in self.edges if e.function in ids and e.confidence >= min_confidence]
        if not lines:
            found = [attrs.evolve(e, lines=frozenset(), names=None) for e in found]
        return sorted(found, key=lambda e: (-e.confidence, e.function, e.test))

    def tests_covering(
        self, function_ids: Iterable[str], min_confidence: float = 0.0, per_test: int = 3
    ) -> list[CoverEdge]:
        """Functions only (data files are left out), lines unknown."""
        self._check()
        ids = sorted({i for i in function_ids if "::" in i})
        if not ids:
            return []
        if len(ids) > 1 and (everyone := self._run_by_every_test(ids, min_confidence)):
            return everyone
        kept: dict[str, list[CoverEdge]] = {}
        for e in sorted(self._edges_of(ids, min_confidence), key=lambda e: -e.confidence):
            if len(kept.setdefault(e.test, [])) < max(1, per_test):
                kept[e.test].append(e)
        return [e for edges in kept.values() for e in edges]

    def _edges_of(self, ids: Iterable[str], min_confidence: float) -> list[CoverEdge]:
        wanted = set(ids)
        return [
            attrs.evolve(e, lines=frozenset(), names=None)
            for e in self.edges
            if e.function in wanted and e.confidence >= min_confidence
        ]

    def _run_by_every_test(self, ids: list[str], min_confidence: float) -> list[CoverEdge]:
        """The real store's shortcut: one edge per test from the most-run of ``ids`` when,
        as counted at the last evidence write, every test with evidence ran it (confidence 1)."""
        counted = [(self.test_counts.get(i, 0), i) for i in ids if i in self.functions]
        widest = max((c for c in counted if c[0] > 0), key=lambda c: c[0], default=None)
        if widest is None:
            return []
        rows = self._edges_of([widest[1]], min_confidence)
        tests, edges = self.meta.get("evidenced_tests"), self.meta.get("evidenced_edges")
        if not isinstance(tests, int) or edges != len(self.edges):
            return []  # not counted, or written since it was
        if len({e.test for e in rows}) < tests:
            return []
        if any(e.confidence < 1.0 for e in rows):
            return []
        return rows

    def repair_tests_of_callees(
        self, function_ids: Iterable[str], hops: int = 3
    ) -> list[CoverEdge]:
        self._check()
        reached: set[str] = set()
        frontier = set(function_ids)
        for _ in range(max(1, min(hops, 6))):
            frontier = {b for a, b in self.call_edges if a in frontier}
            reached |= frontier
        found = {
            (e.function, e.test, e.confidence, e.evidence_count or 1, e.last_verified_sha)
            for e in self.edges
            if e.function in reached and e.source == "miss_repair"
        }
        return [
            CoverEdge(f, t, "miss_repair", c, n, sha)
            for f, t, c, n, sha in sorted(found, key=lambda r: (r[0], r[1], str(r[2:])))
        ]

    # -- static facts ---------------------------------------------------------------------------

    def function_facts(self, ids: Iterable[str]) -> dict[str, FunctionFacts]:
        """``no_evidence`` as last written, except for a function marked unproven."""
        self._check()
        out = {i: self.functions[i] for i in ids if i in self.functions}
        return {
            i: attrs.evolve(f, no_evidence=f.no_evidence and i not in self.unproven)
            for i, f in out.items()
        }

    def functions_of_files(self, paths: Iterable[str]) -> dict[str, list[str]]:
        self._check()
        wanted = set(paths)
        out: dict[str, list[str]] = {}
        for f in self.functions.values():
            if f.file in wanted:
                out.setdefault(f.file, []).append(f.id)
        return out

    def tests_of_files(self, paths: Iterable[str]) -> dict[str, list[str]]:
        """The tests that ran a function of the file themselves (not a module or class body,
        not only through shared set-up), and the tests of the files that import it."""
        self._check()
        wanted = set(paths)
        out: dict[str, set[str]] = {}
        for e in self.edges:
            facts = self.functions.get(e.function)
            if facts is None or facts.file not in wanted or e.shared:
                continue
            if not self._qualname(e.function).endswith(">"):
                out.setdefault(facts.file, set()).add(e.test)
        for importer, imported in self.import_edges:
            if imported in wanted:
                tests = {t for t, f in self.defined_in.items() if f == importer}
                if tests:
                    out.setdefault(imported, set()).update(tests)
        return {p: sorted(t) for p, t in out.items()}

    def all_tests(self) -> list[str]:
        self._check()
        return sorted(self.tests)

    def test_count(self) -> int:
        self._check()
        return len(self.tests)

    def all_functions(self) -> list[str]:
        self._check()
        return sorted(self.functions)

    def spawning_tests(self) -> list[str]:
        self._check()
        return sorted(self.spawners)

    def doctest_items(self) -> list[str]:
        self._check()
        return sorted(self.doctests)

    def imported_files(self) -> list[str]:
        """The files whose module body some test ran."""
        self._check()
        return sorted(
            {
                self._file_of(e.function)
                for e in self.edges
                if self._qualname(e.function) == MODULE_SCOPE
            }
        )

    def modules_among(self, names: Iterable[str]) -> set[str]:
        self._check()
        return set(names) & set(self.modules)

    def modules_imported(self, modules: Iterable[str]) -> set[str]:
        self._check()
        known = {node.module for node in self.files.values()}
        return {
            m
            for m in modules
            if m in known
            and any(m in node.imports and node.module != m for node in self.files.values())
        }

    def classes_among(self, names: Iterable[str]) -> set[str]:
        self._check()
        return set(names) & set(self.classes)

    def functions_among(self, names: Iterable[str]) -> set[str]:
        self._check()
        return set(names) & set(self.dotted_functions)

    def attribute_readers(self, names: Iterable[str]) -> list[tuple[str, str]] | None:
        self._check()
        if self.attributes is None:
            return None
        wanted = reflective_facts(names)
        return [(f, a) for f, read in sorted(self.attributes.items()) for a in read if a in wanted]

    def aliases_of(self, names: Iterable[str]) -> dict[str, list[str]]:
        """The other names each of ``names`` is imported under (``from m import *`` brings
        every name of ``m``)."""
        self._check()
        names = set(names)
        stars: dict[str, list[str]] = {}
        for n in names:
            module = n.rpartition(".")[0]
            if module:
                stars.setdefault(f"{module}.*", []).append(n)
        out: dict[str, list[str]] = {}
        for alias, target in self._aliases():
            if target in stars:
                for name in stars[target]:
                    out.setdefault(name, []).append(alias[:-1] + name.rpartition(".")[2])
            elif target in names:
                out.setdefault(target, []).append(alias)
        return out

    def _aliases(self) -> list[tuple[str, str]]:
        return [a for _, node in sorted(self.files.items()) for a in node.aliases]

    def importers_of(self, names: Iterable[str], stars: bool = True) -> list[str]:
        """Files that import one of ``names`` by name (``from m import name``), or with
        ``stars`` import ``*`` from its module."""
        self._check()
        wanted = set(names)
        if stars:
            wanted |= {f"{n.rpartition('.')[0]}.*" for n in wanted if "." in n}
        return sorted(
            path
            for path, node in self.files.items()
            if any(target in wanted for _, target in node.aliases)
        )

    def readers_of(self, names: Iterable[str]) -> list[tuple[str, str, str, str]]:
        """``(function id, qualname, dotted name or "", the name read)`` per matching read."""
        self._check()
        wanted = set(names)
        return [
            (fid, self._qualname(fid), self.dotted.get(fid, ""), ref)
            for fid, refs in sorted(self.refs.items())
            for ref in refs
            if ref in wanted
            or any(ref.startswith(n + ".") or n.startswith(ref + ".") for n in wanted)
        ]

    def functions_named(self, name: str) -> list[str]:
        self._check()
        return sorted(fid for fid in self.functions if self._name(fid) == name)

    def statement_bindings(self, ids: Iterable[str]) -> dict[str, BodyStatements]:
        """Every function's body as written (empty for a function without statements)."""
        self._check()
        return {i: self.bodies.get(i, BodyStatements()) for i in set(ids) if i in self.functions}

    def read_lines(self, ids: Iterable[str]) -> dict[str, dict[str, frozenset[int]]]:
        self._check()
        return {f: dict(self.lines_read[f]) for f in set(ids) if f in self.lines_read}

    def callers(self, function_id: str, hops: int, min_confidence: float) -> list[Caller]:
        """The shortest paths' callers, each at its most confident shortest path."""
        self._check()
        best: dict[str, Caller] = {}
        frontier = {function_id: 1.0}
        for length in range(1, max(1, min(int(hops), 10)) + 1):
            step: dict[str, float] = {}
            for (a, b), conf in self.call_edges.items():
                if b in frontier and conf >= min_confidence:
                    step[a] = max(step.get(a, 0.0), frontier[b] * conf)
            for a, conf in step.items():
                if a != function_id and a not in best:
                    best[a] = Caller(id=a, hops=length, confidence=conf)
            frontier = step
        return sorted(best.values(), key=lambda c: (c.hops, -c.confidence, c.id))

    def memo_callers(self, function_ids: Iterable[str], hops: int) -> dict[str, str]:
        self._check()
        reached = {fid: fid for fid in function_ids}
        frontier = set(reached)
        found: dict[str, str] = {}
        for _ in range(max(0, hops)):
            rows = sorted((a, b) for a, b in self.call_edges if b in frontier)
            frontier = set()
            for caller, callee in rows:
                if caller in reached:
                    continue
                reached[caller] = reached[callee]
                frontier.add(caller)
                facts = self.functions.get(caller)
                if facts is not None and facts.memo:
                    found[caller] = reached[callee]
        return found

    def _qualname(self, fid: str) -> str:
        node = self.nodes.get(fid)
        return node.qualname if node else split_id(fid)[1]

    def _name(self, fid: str) -> str:
        node = self.nodes.get(fid)
        return node.name if node else self._qualname(fid).rpartition(".")[2]

    def _file_of(self, fid: str) -> str:
        facts = self.functions.get(fid)
        return facts.file if facts else split_id(fid)[0]
