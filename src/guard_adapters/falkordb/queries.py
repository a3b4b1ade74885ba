"""The reads a decision makes: evidence, static facts, names and their readers."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from guard_adapters.falkordb.codec import (
    decode_body,
    decode_lines,
    decode_names,
    decode_read_lines,
)
from guard_adapters.falkordb.connection import GraphConnection
from guard_adapters.falkordb.schema import META_KEY
from guard_core.index_model import BodyStatements, reflective_facts
from guard_core.model import CLASS_BODY, MODULE_SCOPE, CoverEdge
from guard_core.ports import Caller, FunctionFacts


class GraphQueries(GraphConnection):
    """What the engine and the query commands read."""

    # -- decision queries -----------------------------------------------------------------------

    def spawning_tests(self) -> list[str]:
        return sorted(
            r[0] for r in self._read("MATCH (t:Test) WHERE t.spawns_python = true RETURN t.id")
        )

    def doctest_items(self) -> list[str]:
        return sorted(r[0] for r in self._read("MATCH (t:Test) WHERE t.doctest = true RETURN t.id"))

    def imported_files(self) -> list[str]:
        """The files whose module body some test's evidence ran (imported during the run)."""
        rows = self._read(
            "MATCH (f:Function {qualname: $q})-[:COVERED_BY]->(:Test) RETURN DISTINCT f.file",
            {"q": MODULE_SCOPE},
        )
        return sorted(r[0] for r in rows)

    def attribute_readers(self, names: Iterable[str]) -> list[tuple[str, str]] | None:
        """Functions whose code reads any of the attribute ``names`` on any object (or reads
        attributes by computed names, ``*`` and :data:`COMPUTED`; a signature through
        :data:`INTROSPECTED`): ``(function id, name)``; None when the index predates
        attribute reads."""
        if not self._read("MATCH (f:Function) WHERE f.attrs IS NOT NULL RETURN f.id LIMIT 1"):
            return None
        wanted = sorted(reflective_facts(names))
        rows = self._read(
            "MATCH (f:Function) WHERE size(f.attrs) > 0 UNWIND f.attrs AS a "
            "WITH f, a WHERE a IN $names RETURN f.id, a",
            {"names": wanted},
        )
        return [(fid, a) for fid, a in rows]

    def functions_among(self, names: Iterable[str]) -> set[str]:
        """Which of ``names`` are the dotted names of the repository's functions."""
        rows = self._read(
            "UNWIND $d AS d MATCH (f:Function {dotted: d}) RETURN f.dotted",
            {"d": sorted(set(names))},
        )
        return {r[0] for r in rows}

    def classes_among(self, names: Iterable[str]) -> set[str]:
        """Which of ``names`` are the dotted names of the repository's classes."""
        bodies = {f"{n}.{CLASS_BODY}": n for n in names}
        rows = self._read(
            "UNWIND $d AS d MATCH (f:Function {dotted: d}) RETURN f.dotted", {"d": sorted(bodies)}
        )
        return {bodies[r[0]] for r in rows}

    def modules_among(self, names: Iterable[str]) -> set[str]:
        """Which of ``names`` are the dotted names of the repository's modules."""
        rows = self._read(
            "UNWIND $names AS n MATCH (f:File {module: n}) RETURN DISTINCT n",
            {"names": sorted(set(names))},
        )
        return {r[0] for r in rows}

    def modules_imported(self, modules: Iterable[str]) -> set[str]:
        """Which of ``modules`` another file imports by that dotted name."""
        rows = self._read(
            "UNWIND $names AS n MATCH (:File)-[:IMPORTS]->(f:File {module: n}) RETURN DISTINCT n",
            {"names": sorted(set(modules))},
        )
        return {r[0] for r in rows}

    def covering_tests(
        self, function_ids: Iterable[str], min_confidence: float = 0.0, lines: bool = True
    ) -> list[CoverEdge]:
        """The tests that executed any of ``function_ids`` (function ids or data-file paths);
        without ``lines`` the edges' recorded lines are not read (left unknown)."""
        ids = sorted(set(function_ids))
        if not ids:
            return []
        # One row per function with its edges collected: fewer rows to decode client-side.
        returns = (
            "WHERE c.confidence >= $min RETURN id, "
            "collect([t.id, c.source, c.confidence, c.evidence_count, c.last_verified_sha, "
            + ("c.lines, " if lines else "null, ")
            + "coalesce(c.shared, false)])"
        )
        rows: list[list[Any]] = []
        fn_ids = [i for i in ids if "::" in i]
        data_files = [i for i in ids if "::" not in i]
        if fn_ids:
            rows += self._read(
                "UNWIND $ids AS id MATCH (:Function {id: id})-[c:COVERED_BY]->(t:Test) " + returns,
                {"ids": fn_ids, "min": min_confidence},
            )
        if data_files:
            rows += self._read(
                "UNWIND $ids AS id MATCH (:File {path: id})-[c:COVERED_BY]->(t:Test) " + returns,
                {"ids": data_files, "min": min_confidence},
            )
        edges = [
            _cover_edge(
                fid, tid, source, conf, count, sha, decode_lines(lines), decode_names(lines), sh
            )
            if lines
            else _cover_edge(fid, tid, source, conf, count, sha, shared=sh)
            for fid, collected in rows
            for tid, source, conf, count, sha, lines, sh in collected
        ]
        return sorted(edges, key=lambda e: (-e.confidence, e.function, e.test))

    def tests_covering(
        self, function_ids: Iterable[str], min_confidence: float = 0.0, per_test: int = 3
    ) -> list[CoverEdge]:
        """Every test that executed any of ``function_ids``, with at most ``per_test`` of its
        edges (the most confident; lines unknown): for wide selections that need the tests,
        not every edge (a constant read by a hundred functions that all tests run)."""
        ids = sorted({i for i in function_ids if "::" in i})
        if not ids:
            return []
        if len(ids) > 1 and (everyone := self._run_by_every_test(ids, min_confidence)):
            return everyone
        rows = self._read(
            "UNWIND $ids AS id MATCH (f:Function {id: id})-[c:COVERED_BY]->(t:Test) "
            "WHERE c.confidence >= $min WITH t, f, c ORDER BY c.confidence DESC "
            "WITH t, collect([f.id, c.source, c.confidence, c.evidence_count, "
            "c.last_verified_sha, coalesce(c.shared, false)]) AS es RETURN t.id, es[0..$k]",
            {"ids": ids, "min": min_confidence, "k": max(1, per_test)},
        )
        return [
            _cover_edge(fid, tid, source, conf, count, sha, shared=sh)
            for tid, kept in rows
            for fid, source, conf, count, sha, sh in kept
        ]

    def _run_by_every_test(self, ids: list[str], min_confidence: float) -> list[CoverEdge]:
        """When the most-run of ``ids`` was run by every test that ran any function, always
        (confidence 1), one edge per test from it (the answer's tests are then all of those,
        whatever the others ran, and no edge is more confident):
        a name read by code the whole suite runs need not cost every edge of every reader.
        Empty when no single one of them was (or the count is not recorded yet)."""
        widest = self._read(
            "UNWIND $ids AS id MATCH (f:Function {id: id}) WHERE f.test_count > 0 "
            "RETURN f.id ORDER BY f.test_count DESC LIMIT 1",
            {"ids": ids},
        )
        if not widest:
            return []
        rows = self._read(
            "MATCH (f:Function {id: $id})-[c:COVERED_BY]->(t:Test) WHERE c.confidence >= $min "
            "RETURN t.id, c.source, c.confidence, c.evidence_count, c.last_verified_sha, "
            "coalesce(c.shared, false)",
            {"id": widest[0][0], "min": min_confidence},
        )
        tests = {row[0] for row in rows}
        counted = self._read(
            "MATCH (m:Meta {key: $key}) RETURN m.evidenced_tests, m.evidenced_edges",
            {"key": META_KEY},
        )
        edges = self._count("MATCH ()-[c:COVERED_BY]->() RETURN count(c)")
        if not counted or None in counted[0] or counted[0][1] != edges:
            return []  # not counted, or written since it was
        if len(tests) < counted[0][0]:
            return []
        if any(row[2] is None or row[2] < 1.0 for row in rows):
            return []  # a less confident edge may not be a test's best: the full answer
        return [
            _cover_edge(widest[0][0], test, source, conf, count, sha, shared=sh)
            for test, source, conf, count, sha, sh in rows
        ]

    def callers(self, function_id: str, hops: int, min_confidence: float) -> list[Caller]:
        """Functions that reach ``function_id`` through at most ``hops`` ``CALLS`` edges, each
        at least ``min_confidence``; the confidence of a path is the product of its edges."""
        hops = max(1, min(int(hops), 10))
        rows = self._read(
            f"MATCH p = (a:Function)-[:CALLS*1..{hops}]->(b:Function {{id: $id}}) "
            "WHERE all(c IN relationships(p) WHERE c.confidence >= $min) "
            "RETURN a.id, length(p), reduce(x = 1.0, c IN relationships(p) | x * c.confidence)",
            {"id": function_id, "min": min_confidence},
        )
        best: dict[str, Caller] = {}
        for aid, length, conf in rows:
            if aid == function_id:
                continue
            current = best.get(aid)
            if current is None or (length, -conf) < (current.hops, -current.confidence):
                best[aid] = Caller(id=aid, hops=int(length), confidence=float(conf))
        return sorted(best.values(), key=lambda c: (c.hops, -c.confidence, c.id))

    def memo_callers(self, function_ids: Iterable[str], hops: int) -> dict[str, str]:
        reached = {fid: fid for fid in function_ids}  # caller -> the changed id it reaches
        frontier = sorted(reached)
        found: dict[str, str] = {}
        for _ in range(max(0, hops)):  # hop by hop: a variable-length match enumerates paths
            if not frontier:
                break
            rows = self._read(
                "UNWIND $ids AS id MATCH (a:Function)-[:CALLS]->(b:Function {id: id}) "
                "RETURN DISTINCT a.id, b.id, coalesce(a.memo, false)",
                {"ids": frontier},
            )
            frontier = []
            for caller, callee, memo in rows:
                if caller in reached:
                    continue
                reached[caller] = reached[callee]
                frontier.append(caller)
                if memo:
                    found[caller] = reached[callee]
        return found

    def repair_tests_of_callees(
        self, function_ids: Iterable[str], hops: int = 3
    ) -> list[CoverEdge]:
        """``miss_repair`` edges of the functions that ``function_ids`` reach through calls: a
        repaired miss on a callee also counts for the functions that call it."""
        rows = self._read(
            f"UNWIND $ids AS id MATCH (a:Function {{id: id}})-[:CALLS*1..{max(1, min(hops, 6))}]->"
            "(b:Function)-[c:COVERED_BY {source: 'miss_repair'}]->(t:Test) "
            "RETURN DISTINCT b.id, t.id, c.confidence, c.evidence_count, c.last_verified_sha",
            {"ids": sorted(set(function_ids))},
        )
        return [
            CoverEdge(
                function=f,
                test=t,
                source="miss_repair",
                confidence=float(conf),
                evidence_count=int(n or 1),
                last_verified_sha=sha,
            )
            for f, t, conf, n, sha in rows
        ]

    def function_facts(self, ids: Iterable[str]) -> dict[str, FunctionFacts]:
        rows = self._read(
            "UNWIND $ids AS id MATCH (f:Function {id: id}) "
            "RETURN f.id, f.file, f.no_evidence AND NOT coalesce(f.unproven, false), "
            "f.has_dynamic_dispatch, coalesce(f.memo, false)",
            {"ids": sorted(set(ids))},
        )
        return {
            fid: FunctionFacts(
                id=fid,
                file=file,
                no_evidence=bool(noev),
                has_dynamic_dispatch=bool(dyn),
                memo=bool(memo),
            )
            for fid, file, noev, dyn, memo in rows
        }

    def functions_of_files(self, paths: Iterable[str]) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for path, fid in self._read(
            "UNWIND $paths AS p MATCH (f:Function {file: p}) RETURN p, f.id",
            {"paths": sorted(set(paths))},
        ):
            out.setdefault(path, []).append(fid)
        return out

    def tests_of_files(self, paths: Iterable[str]) -> dict[str, list[str]]:
        """Tests associated with each source file: tests that executed any of its functions
        themselves (not its module or class bodies, which every importer runs, nor functions
        reached only by shared set-up), and tests whose test module imports it directly."""
        out: dict[str, set[str]] = {}
        params = {"paths": sorted(set(paths))}
        for path, tid in self._read(
            "UNWIND $paths AS p MATCH (f:Function {file: p})-[c:COVERED_BY]->(t:Test) "
            # import-time code reaches every test, so does what start-up alone ran
            "WHERE NOT f.qualname ENDS WITH '>' AND NOT coalesce(c.shared, false) "
            "RETURN DISTINCT p AS p, t.id AS t "
            "UNION "
            "UNWIND $paths AS p "
            "MATCH (:File {path: p})<-[:IMPORTS]-(:File)<-[:DEFINED_IN]-(t:Test) "
            "RETURN DISTINCT p AS p, t.id AS t",
            params,
        ):
            out.setdefault(path, set()).add(tid)
        return {p: sorted(ts) for p, ts in out.items()}

    def aliases_of(self, names: Iterable[str]) -> dict[str, list[str]]:
        """Re-exports: for each dotted name, the other names it is imported under (a
        ``from m import *`` re-exports every name of ``m``)."""
        names = set(names)  # an iterator is read once
        out: dict[str, list[str]] = {}
        stars: dict[str, list[str]] = {}
        for n in names:
            module = n.rpartition(".")[0]
            if module:
                stars.setdefault(f"{module}.*", []).append(n)
        rows = self._read(
            "MATCH (f:File) WHERE size(f.alias_targets) > 0 AND "
            "any(t IN f.alias_targets WHERE t IN $names) "
            "WITH f, range(0, size(f.alias_targets) - 1) AS idx UNWIND idx AS i "
            "WITH f, i WHERE f.alias_targets[i] IN $names "
            "RETURN f.alias_targets[i], f.alias_names[i]",
            {"names": sorted({*names, *stars})},
        )
        for target, alias in rows:
            if target in stars:
                for name in stars[target]:
                    out.setdefault(name, []).append(alias[:-1] + name.rpartition(".")[2])
            else:
                out.setdefault(target, []).append(alias)
        return out

    def importers_of(self, names: Iterable[str], stars: bool = True) -> list[str]:
        """Files that import any of ``names`` by name (``from m import name``), and with
        ``stars`` the files that import ``*`` from their modules."""
        names = set(names)
        wild = {f"{n.rpartition('.')[0]}.*" for n in names if "." in n} if stars else set()
        rows = self._read(
            "MATCH (f:File) WHERE size(f.alias_targets) > 0 AND "
            "any(t IN f.alias_targets WHERE t IN $names) RETURN f.path",
            {"names": sorted(names | wild)},
        )
        return sorted(r[0] for r in rows)

    def readers_of(self, names: Iterable[str]) -> list[tuple[str, str, str, str]]:
        """Functions whose code reads any of ``names`` (a name, a part of it, or an attribute
        of it): ``(function id, qualname, dotted name, the name read)``."""
        rows = self._read(
            "MATCH (f:Function) WHERE size(f.refs) > 0 UNWIND f.refs AS r "
            "WITH f, r WHERE r IN $names OR any(n IN $names WHERE r STARTS WITH (n + '.') "
            "OR n STARTS WITH (r + '.')) RETURN f.id, f.qualname, f.dotted, r",
            {"names": sorted(set(names))},
        )
        return [(fid, qual, dotted or "", ref) for fid, qual, dotted, ref in rows]

    def read_lines(self, ids: Iterable[str]) -> dict[str, dict[str, frozenset[int]]]:
        """For functions: each name they read (a ``readers_of`` ref, ".name" for an attribute
        read) with the lines that read it; a function or name without lines is left out."""
        rows = self._read(
            "UNWIND $ids AS id MATCH (f:Function {id: id}) WHERE size(f.read_lines) > 0 "
            "RETURN f.id, f.read_lines",
            {"ids": sorted(set(ids))},
        )
        return {fid: decode_read_lines(texts) for fid, texts in rows}

    def statement_bindings(self, ids: Iterable[str]) -> dict[str, BodyStatements]:
        """For module and class bodies: their per-statement bindings and reads."""
        rows = self._read(
            "UNWIND $ids AS id MATCH (f:Function {id: id}) "
            "RETURN f.id, coalesce(f.bindings, []), coalesce(f.stmt_refs, [])",
            {"ids": sorted(set(ids))},
        )
        return {fid: decode_body(b, r) for fid, b, r in rows}

    def functions_named(self, name: str) -> list[str]:
        rows = self._read("MATCH (f:Function {name: $n}) RETURN f.id", {"n": name})
        return sorted(r[0] for r in rows)

    def all_tests(self) -> list[str]:
        return sorted(r[0] for r in self._read("MATCH (t:Test) RETURN t.id"))

    def test_count(self) -> int:
        """How many tests the graph knows (a subset's decision needs the count, not the ids:
        astroid's 1.4k ids cost a check 20 ms)."""
        return int(self._read("MATCH (t:Test) RETURN count(t)")[0][0])

    def all_functions(self) -> list[str]:
        return sorted(r[0] for r in self._read("MATCH (f:Function) RETURN f.id"))


def _cover_edge(
    function: str,
    test: str,
    source: str | None,
    confidence: float | None,
    count: int | None,
    sha: str | None,
    lines: frozenset[int] | None = None,
    names: frozenset[str] | None = None,
    shared: bool = False,
) -> CoverEdge:
    """A ``COVERED_BY`` edge from its stored properties (missing ones read as defaults)."""
    return CoverEdge(
        function=function,
        test=test,
        source=source or "coverage",
        confidence=float(confidence if confidence is not None else 0.0),
        evidence_count=int(count or 0),
        last_verified_sha=sha,
        lines=lines or frozenset(),
        names=names,
        shared=bool(shared),
    )
