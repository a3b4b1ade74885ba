"""Writes: the static index of files, the evidence of test runs, and repairs."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from guard_adapters.falkordb.codec import (
    encode_bindings,
    encode_edge,
    encode_read_lines,
    encode_reads,
)
from guard_adapters.falkordb.connection import GraphConnection, _chunks_by_size
from guard_adapters.falkordb.schema import BATCH, META_KEY
from guard_core.errors import UnknownId
from guard_core.index_model import FileIndex
from guard_core.model import CoverEdge, RunRecord, split_id, test_function_id


class GraphWrites(GraphConnection):
    """What the ingests, the refresh and ``guard feedback`` write."""

    # -- static index ---------------------------------------------------------------------------

    def file_hashes(self) -> dict[str, str]:
        return {path: sha for path, sha in self._read("MATCH (f:File) RETURN f.path, f.sha")}

    def write_files(self, files: Sequence[FileIndex]) -> None:
        """Write (or rewrite) the static index of ``files``.

        Nodes are merged by id so the evidence on a function survives a re-ingest of its file;
        functions and tests that left a file are removed with their edges. Only tests an index
        wrote can leave a file: a test only the evidence knows (a doctest of a source module, a
        test a module builds at import) is no index's to drop, and keeps its evidence.
        """
        if not files:
            return
        self._write_rows(
            "UNWIND $rows AS r MERGE (f:File {path: r.path}) "
            "SET f.sha = r.sha, f.module = r.module, f.parse_error = r.parse_error",
            [
                {"path": f.path, "sha": f.sha, "module": f.module, "parse_error": f.parse_error}
                for f in files
            ],
        )
        self._write_rows(
            "UNWIND $rows AS r MATCH (n:Function {file: r.path}) "
            "WHERE NOT n.id IN r.ids DETACH DELETE n",
            [{"path": f.path, "ids": [fn.id for fn in f.functions]} for f in files],
        )
        self._write_rows(
            "UNWIND $rows AS r MATCH (n:Test {file: r.path}) "
            # an index wrote it (only an index sets a test's qualname, in old graphs too)
            "WHERE n.qualname IS NOT NULL AND NOT n.id IN r.ids DETACH DELETE n",
            [{"path": f.path, "ids": [t.id for t in f.tests]} for f in files],
        )
        fn_rows = [
            {
                "id": fn.id,
                "file": fn.file,
                "name": fn.name,
                "qualname": fn.qualname,
                "dotted": f"{f.module}.{fn.qualname}" if f.module else None,
                "start": fn.start,
                "end": fn.end,
                "dyn": fn.has_dynamic_dispatch,
                "refs": list(fn.refs),
                "bindings": encode_bindings(fn.bindings),
                "srefs": encode_reads(fn.statement_refs),
                "attrs": list(fn.attributes),
                "memo": fn.memo,
                "rlines": encode_read_lines(fn.read_lines),
            }
            for f in files
            for fn in f.functions
        ]
        self._write_rows(
            "UNWIND $rows AS r MERGE (n:Function {id: r.id}) "
            "ON CREATE SET n.no_evidence = true "
            "SET n.file = r.file, n.name = r.name, n.qualname = r.qualname, n.dotted = r.dotted, "
            "n.start = r.start, n.end = r.end, n.has_dynamic_dispatch = r.dyn, n.refs = r.refs, "
            "n.bindings = r.bindings, n.stmt_refs = r.srefs, n.attrs = r.attrs, n.memo = r.memo, "
            "n.read_lines = r.rlines "
            "WITH n, r MATCH (f:File {path: r.file}) MERGE (n)-[:DEFINED_IN]->(f)",
            fn_rows,
        )
        test_rows = [
            {
                "id": t.id,
                "file": t.file,
                "name": t.name,
                "qualname": t.qualname,
                "start": t.start,
                "end": t.end,
            }
            for f in files
            for t in f.tests
        ]
        self._write_rows(
            "UNWIND $rows AS r MERGE (n:Test {id: r.id}) "
            "ON CREATE SET n.flake_rate = 0.0 "
            "SET n.file = r.file, n.name = r.name, n.qualname = r.qualname, "
            "n.start = r.start, n.end = r.end "
            "WITH n, r MATCH (f:File {path: r.file}) MERGE (n)-[:DEFINED_IN]->(f)",
            test_rows,
        )
        self._link(files)

    def keep_tests(self, ids: Iterable[str]) -> None:
        """A test no index lists is one without a qualname (see :meth:`write_files`)."""
        self._write_rows(
            "UNWIND $rows AS r MATCH (n:Test {id: r.id}) SET n.qualname = NULL",
            [{"id": i} for i in sorted(set(ids))],
        )

    def _link(self, files: Sequence[FileIndex]) -> None:
        """(Re)create ``CALLS`` and ``IMPORTS`` from these files, and into them from files
        written earlier whose targets these files now define."""
        paths = [f.path for f in files]
        self._query(
            "MATCH (a:Function)-[c:CALLS]->() WHERE a.file IN $paths DELETE c", {"paths": paths}
        )
        self._query(
            "MATCH (a:File)-[i:IMPORTS]->() WHERE a.path IN $paths DELETE i", {"paths": paths}
        )
        targets: dict[str, list[tuple[str, float]]] = {}
        for f in files:
            for c in f.calls:
                targets.setdefault(c.caller, []).append((c.callee, c.confidence))
        self._write_rows(
            "UNWIND $rows AS r MATCH (a:Function {id: r.id}) SET a.call_targets = r.targets, "
            "a.call_conf = r.conf",
            [
                {
                    "id": fn.id,
                    "targets": [t for t, _ in targets.get(fn.id, [])],
                    "conf": [c for _, c in targets.get(fn.id, [])],
                }
                for f in files
                for fn in f.functions
            ],
        )
        self._write_rows(
            "UNWIND $rows AS r MATCH (a:File {path: r.path}) SET a.import_targets = r.imports, "
            "a.alias_names = r.names, a.alias_targets = r.targets",
            [
                {
                    "path": f.path,
                    "imports": list(f.imports),
                    "names": [a for a, _ in f.aliases],
                    "targets": [t for _, t in f.aliases],
                }
                for f in files
            ],
        )
        self._write_rows(
            "UNWIND $rows AS r MATCH (a:Function {id: r.caller}) "
            "MATCH (b:Function {dotted: r.callee}) WHERE b.id <> a.id "
            "MERGE (a)-[c:CALLS]->(b) SET c.source = 'static', c.confidence = r.confidence",
            [
                {"caller": c.caller, "callee": c.callee, "confidence": c.confidence}
                for f in files
                for c in f.calls
            ],
        )
        self._write_rows(
            "UNWIND $rows AS r MATCH (a:File {path: r.src}) MATCH (b:File {module: r.dst}) "
            "WHERE b.path <> a.path MERGE (a)-[i:IMPORTS]->(b) "
            "SET i.source = 'static', i.confidence = 1.0",
            [{"src": f.path, "dst": dst} for f in files for dst in f.imports],
        )
        # Edges into these files from files that were not rewritten: one pass over the other
        # functions, each call target an index lookup (nothing to do on a full ingest).
        self._query(
            "MATCH (a:Function) WHERE NOT a.file IN $paths AND size(a.call_targets) > 0 "
            "WITH a, range(0, size(a.call_targets) - 1) AS idx UNWIND idx AS i "
            "MATCH (b:Function {dotted: a.call_targets[i]}) WHERE b.file IN $paths "
            "MERGE (a)-[c:CALLS]->(b) SET c.source = 'static', c.confidence = a.call_conf[i]",
            {"paths": paths},
        )
        self._query(
            "MATCH (a:File) WHERE NOT a.path IN $paths AND size(a.import_targets) > 0 "
            "UNWIND a.import_targets AS m MATCH (b:File {module: m}) WHERE b.path IN $paths "
            "MERGE (a)-[i:IMPORTS]->(b) SET i.source = 'static', i.confidence = 1.0",
            {"paths": paths},
        )

    def remove_files(self, paths: Iterable[str]) -> None:
        rows = [{"path": p} for p in paths]
        if not rows:
            return
        self._write_rows(
            "UNWIND $rows AS r MATCH (n:Function {file: r.path}) DETACH DELETE n", rows
        )
        self._write_rows("UNWIND $rows AS r MATCH (n:Test {file: r.path}) DETACH DELETE n", rows)
        self._write_rows("UNWIND $rows AS r MATCH (n:File {path: r.path}) DETACH DELETE n", rows)

    # -- evidence -------------------------------------------------------------------------------

    def write_coverage(
        self, edges: Iterable[CoverEdge], *, sha: str, tests: Iterable[str], replace: bool
    ) -> None:
        """Write ``COVERED_BY`` edges; with ``replace``, first drop the coverage edges of
        ``tests`` (repair edges stay), then recompute ``no_evidence``. ``edges`` may be a
        stream: they are written a batch at a time, never all held at once."""
        test_rows = [{"id": t, "file": split_id(t)[0]} for t in tests]
        self._write_rows(
            "UNWIND $rows AS r MERGE (t:Test {id: r.id}) "
            "ON CREATE SET t.file = r.file, t.flake_rate = 0.0",
            test_rows,
        )
        if replace:
            self._write_rows(
                "UNWIND $rows AS r MATCH ()-[c:COVERED_BY]->(t:Test {id: r.id}) "
                "WHERE c.source = 'coverage' DELETE c",
                test_rows,
            )
        # Rows grouped by test and edge properties: the client's parameter encoding is the
        # bottleneck of bulk writes, and ids in a list encode far faster than one dict per edge.
        groups: dict[tuple[bool, str, str, float, int, bool], list[list[str]]] = {}
        held = 0
        # few distinct line sets (astroid: 4.5k among 1.26M edges): each is encoded once
        encoded: dict[tuple[frozenset[int], frozenset[str] | None], str] = {}
        for e in edges:
            key = ("::" in e.function, e.test, e.source, e.confidence, e.evidence_count, e.shared)
            text = encoded.get((e.lines, e.names))
            if text is None:
                text = encoded[e.lines, e.names] = encode_edge(e.lines, e.names)
            groups.setdefault(key, []).append([e.function, text])
            held += 1
            if held >= BATCH:
                self._write_groups(groups, sha, replace)
                groups, held = {}, 0
        self._write_groups(groups, sha, replace)
        self.refresh_no_evidence()

    def _write_groups(
        self,
        groups: dict[tuple[bool, str, str, float, int, bool], list[list[str]]],
        sha: str,
        replace: bool,
    ) -> None:
        create = (
            "CREATE (f)-[c:COVERED_BY {source: r.s, confidence: r.c, evidence_count: r.n, "
            "last_verified_sha: $sha, lines: pair[1], shared: r.sh}]->(t)"
            if replace  # the pairs were just deleted, and CREATE is twice as fast as MERGE
            else "MERGE (f)-[c:COVERED_BY]->(t) SET c.source = r.s, c.confidence = r.c, "
            "c.evidence_count = r.n, c.last_verified_sha = $sha, c.lines = pair[1], "
            "c.shared = r.sh"
        )
        for is_function, match in (
            (True, "MATCH (f:Function {id: pair[0]})"),
            (False, "MERGE (f:File {path: pair[0]}) WITH f, t, r, pair"),
        ):
            rows = [
                {"t": test, "s": source, "c": conf, "n": count, "sh": shared, "fs": fids}
                for (is_fn, test, source, conf, count, shared), fids in groups.items()
                if is_fn is is_function
            ]
            for chunk in _chunks_by_size(rows):
                self._query(
                    "UNWIND $rows AS r MATCH (t:Test {id: r.t}) UNWIND r.fs AS pair "
                    f"{match} {create}",
                    {"rows": chunk, "sha": sha},
                )

    def refresh_no_evidence(self) -> None:
        """Per function: whether no test ran it and how many did; and how many tests ran any
        function (what lets a wide read stop at one reader the whole suite runs)."""
        self._query(
            "MATCH (f:Function) OPTIONAL MATCH (f)-[c:COVERED_BY]->(:Test) "
            "WITH f, count(c) AS n SET f.no_evidence = (n = 0), f.test_count = n"
        )
        # with the number of edges it was counted at: any later write (a repair edge, an
        # older Guard that keeps no count) changes that number, and the count is not used
        self._query(
            "MATCH (:Function)-[:COVERED_BY]->(t:Test) WITH count(DISTINCT t) AS n "
            "MATCH ()-[c:COVERED_BY]->() WITH n, count(c) AS edges "
            "MERGE (m:Meta {key: $key}) SET m.evidenced_tests = n, m.evidenced_edges = edges",
            {"key": META_KEY},
        )

    def set_flake_rates(self, rates: dict[str, float]) -> None:
        self._write_rows(
            "UNWIND $rows AS r MATCH (t:Test {id: r.id}) SET t.flake_rate = r.rate",
            [{"id": t, "rate": rate} for t, rate in rates.items()],
        )

    def set_test_kinds(self, kinds: dict[str, tuple[bool, bool]]) -> None:
        self._write_rows(
            "UNWIND $rows AS r MATCH (t:Test {id: r.id}) "
            "SET t.spawns_python = r.spawns, t.doctest = r.doctest",
            [{"id": t, "spawns": bool(s), "doctest": bool(d)} for t, (s, d) in kinds.items()],
        )

    # -- runs and repairs -----------------------------------------------------------------------

    def record_run(self, run: RunRecord) -> None:
        self._query(
            "CREATE (r:Run {id: $id, timestamp: $ts, commit_sha: $sha, duration_ms: $ms, "
            "total_tests: $total, passed: $passed, failed: $failed})",
            {
                "id": run.id,
                "ts": run.timestamp,
                "sha": run.commit_sha,
                "ms": run.duration_ms,
                "total": len(run.outcomes),
                "passed": run.passed,
                "failed": run.failed,
            },
        )
        self._write_rows(
            "UNWIND $rows AS r MERGE (t:Test {id: r.test}) "
            "ON CREATE SET t.file = r.file, t.flake_rate = 0.0 "
            "WITH t, r MATCH (run:Run {id: r.run}) "
            "CREATE (t)-[:FAILED_IN {source: 'test_run', error_message: r.message}]->(run)",
            [
                {
                    "run": run.id,
                    "test": test_function_id(o.test),
                    "file": split_id(o.test)[0],
                    "message": o.message[:2000],
                }
                for o in run.outcomes
                if o.outcome in ("failed", "error")
            ],
        )

    def set_edge_lines(self, edges: Iterable[CoverEdge]) -> None:
        """Overwrite the recorded lines of existing coverage edges (``function``, ``test``)."""
        self._write_rows(
            "UNWIND $rows AS r MATCH (f:Function {id: r.f})-[c:COVERED_BY]->(t:Test {id: r.t}) "
            "SET c.lines = r.l",
            [{"f": e.function, "t": e.test, "l": encode_edge(e.lines, e.names)} for e in edges],
        )

    def restamp_edges(self, old_shas: Sequence[str], new_sha: str) -> None:
        """Carry every edge verified at one of ``old_shas`` over to ``new_sha``."""
        self._query(
            "MATCH ()-[c:COVERED_BY]->() WHERE c.last_verified_sha IN $old "
            "SET c.last_verified_sha = $new",
            {"old": list(old_shas), "new": new_sha},
        )

    def mark_unproven(self, function_ids: Iterable[str]) -> None:
        """Functions no run has shown unexercised (added since the last full ingest): having no
        edges is then no evidence of absence."""
        self._write_rows(
            "UNWIND $rows AS r MATCH (f:Function {id: r.id}) SET f.unproven = true",
            [{"id": fid} for fid in sorted(set(function_ids))],
        )

    def clear_unproven(self) -> None:
        self._query("MATCH (f:Function) WHERE f.unproven = true SET f.unproven = NULL")

    def write_repair_edges(self, pairs: Iterable[tuple[str, str]], sha: str) -> int:
        """A ``miss_repair`` edge with confidence 1.0, verified at ``sha``, per (function id,
        test id) pair whose two nodes exist (a repair never creates a test that nothing
        collects); clears the function's ``no_evidence``. The number of edges written."""
        rows = [list(pair) for pair in sorted(set(pairs))]
        if not rows:
            return 0
        found = self._query(
            "UNWIND $rows AS r MATCH (f:Function {id: r[0]}) MATCH (t:Test {id: r[1]}) "
            "MERGE (f)-[c:COVERED_BY]->(t) "
            "SET c.source = 'miss_repair', c.confidence = 1.0, "
            "c.evidence_count = coalesce(c.evidence_count, 0) + 1, c.last_verified_sha = $sha, "
            "f.no_evidence = false RETURN count(c)",
            {"rows": rows, "sha": sha},
        )
        written = int(found[0][0]) if found else 0
        if written:
            self.refresh_no_evidence()  # a test may have had no evidence before
        return written

    def add_repair_edge(self, function_id: str, test_id: str, sha: str) -> None:
        """A ``miss_repair`` edge (see :meth:`write_repair_edges`); ``UnknownId`` when the
        function or the test is not in the graph."""
        if self.write_repair_edges([(function_id, test_id)], sha):
            return
        if not self._read("MATCH (f:Function {id: $id}) RETURN f.id", {"id": function_id}):
            raise UnknownId(
                f"no function {function_id!r} in the graph",
                hint="ids look like path/to/file.py::Class.method; "
                "run `guard ingest-static` first if the function is new",
            )
        raise UnknownId(
            f"no test {test_id!r} in the graph",
            hint="test ids are pytest node ids; run `guard ingest-coverage` first if it is new",
        )
