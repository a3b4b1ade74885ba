"""The FalkorDB graph store: every query parameterised, writes batched with ``UNWIND $rows``."""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import redis
from falkordb import FalkorDB
from redis.backoff import NoBackoff
from redis.retry import Retry

from guard_adapters.falkordb.codec import decode_lines, encode_lines
from guard_adapters.falkordb.schema import BATCH, INDEXES, META_KEY, SCHEMA_VERSION
from guard_core.errors import (
    GuardError,
    SchemaMismatch,
    StoreError,
    StoreUnavailable,
    UnknownId,
)
from guard_core.logs import get_logger
from guard_core.model import (
    CLASS_BODY,
    CoverEdge,
    FileIndex,
    GraphStats,
    IngestInfo,
    RunRecord,
    split_id,
    test_function_id,
)
from guard_core.ports import Caller, FunctionFacts

log = get_logger("guard.falkordb")


_URL_HINT = "check GUARD_FALKORDB_URL, or unset it to use the embedded server"


@contextlib.contextmanager
def translate_errors(where: str) -> Iterator[None]:
    """Turn whatever the redis client raises (timeouts, refused or dropped connections, replies
    that are not FalkorDB's) into the ``guard_core.errors`` tree."""
    try:
        yield
    except GuardError:
        raise
    except redis.AuthenticationError as exc:
        raise StoreUnavailable(f"FalkorDB refused the credentials ({where}): {exc}") from exc
    except (redis.TimeoutError, TimeoutError) as exc:
        raise StoreUnavailable(
            f"FalkorDB did not answer in time ({where}): {exc}",
            hint="a busy server may need more: GUARD_STORE_TIMEOUT, GUARD_STORE_QUERY_TIMEOUT "
            "(seconds); else " + _URL_HINT,
        ) from exc
    except redis.BusyLoadingError as exc:
        raise StoreUnavailable(
            f"FalkorDB is still loading its data ({where})", hint="try again in a moment"
        ) from exc
    except (redis.ConnectionError, OSError) as exc:
        raise StoreUnavailable(f"FalkorDB is unreachable ({where}): {exc}", hint=_URL_HINT) from exc
    except redis.ResponseError as exc:
        raise StoreError(f"FalkorDB query failed ({where}): {exc}") from exc
    except Exception as exc:  # a reply the client cannot parse: not a Redis/FalkorDB server
        raise StoreUnavailable(
            f"FalkorDB gave an answer Guard cannot read ({where}): {exc!r}",
            hint="is the URL a FalkorDB server? " + _URL_HINT,
        ) from exc


def _batches(rows: Sequence[Any], size: int = BATCH) -> Iterator[Sequence[Any]]:
    for start in range(0, len(rows), size):
        yield rows[start : start + size]


def _chunks_by_size(rows: list[dict[str, Any]], limit: int = BATCH) -> Iterator[list[Any]]:
    """Batches of rows holding about ``limit`` ids in their ``fs`` lists together."""
    chunk: list[Any] = []
    size = 0
    for row in rows:
        chunk.append(row)
        size += len(row["fs"])
        if size >= limit:
            yield chunk
            chunk, size = [], 0
    if chunk:
        yield chunk


def connect(url: str, timeout: float = 5.0, query_timeout: float = 60.0) -> FalkorDB:
    """Open a client for ``url`` (``redis://``, ``rediss://``, ``unix://``, or FalkorDB's
    ``falkor://`` and ``falkors://``).

    The server must connect and answer a ping within ``timeout`` seconds, so one that is down,
    silent or not Redis fails fast; then each query may take ``query_timeout``. Nothing is
    retried but a dropped connection, once: a retried timeout would multiply the wait."""
    where = f"connecting to {_redact(url)}"
    for alias, scheme in (("falkor://", "redis://"), ("falkors://", "rediss://")):
        if url.startswith(alias):
            url = scheme + url[len(alias) :]
    with translate_errors(where):
        try:
            probe = redis.Redis.from_url(
                url, socket_timeout=timeout, socket_connect_timeout=timeout,
                retry=Retry(NoBackoff(), 0),
            )  # fmt: skip
        except ValueError as exc:
            raise StoreUnavailable(
                f"not a FalkorDB URL: {_redact(url)!r} ({exc})",
                hint="use redis://host:port, rediss://host:port or unix:///path/to/socket",
            ) from exc
        try:
            probe.ping()
        finally:
            probe.close()
        return FalkorDB.from_url(
            url, socket_timeout=query_timeout, socket_connect_timeout=timeout,
            retry=Retry(NoBackoff(), 1, supported_errors=(redis.ConnectionError,)),
        )  # fmt: skip


def _redact(url: str) -> str:
    scheme, sep, rest = url.partition("://")
    if "@" in rest:
        rest = "***@" + rest.split("@", 1)[1]
    return scheme + sep + rest


class FalkorGraphStore:
    """One repository's graph in one FalkorDB database."""

    def __init__(self, db: FalkorDB, graph_name: str) -> None:
        self.db = db
        self.name = graph_name
        self.graph = db.select_graph(graph_name)
        self._down: StoreUnavailable | None = None

    # -- plumbing -------------------------------------------------------------------------------

    @contextlib.contextmanager
    def _call(self, where: str) -> Iterator[None]:
        """One client call; after the server failed once, every later call fails at once, so a
        command that falls back (run-all, a partial answer) never waits out a timeout twice."""
        if self._down is not None:
            raise StoreUnavailable(self._down.message, hint=self._down.hint)
        try:
            with translate_errors(where):
                yield
        except StoreUnavailable as exc:
            self._down = exc
            raise

    def _query(self, cypher: str, params: dict[str, Any] | None = None) -> list[list[Any]]:
        with self._call(cypher.split()[0].lower()):
            return list(self.graph.query(cypher, params or {}).result_set)

    def _read(self, cypher: str, params: dict[str, Any] | None = None) -> list[list[Any]]:
        with self._call(cypher.split()[0].lower()):
            try:
                return list(self.graph.ro_query(cypher, params or {}).result_set)
            except redis.ResponseError as exc:
                if "empty key" in str(exc):  # the graph does not exist yet
                    return [[0]] if "count(" in cypher and "UNWIND" not in cypher else []
                raise

    def _write_rows(self, cypher: str, rows: Sequence[dict[str, Any]], **params: Any) -> None:
        for chunk in _batches(rows):
            self._query(cypher, {"rows": list(chunk), **params})

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.db.connection.close()
            self.db.connection.connection_pool.disconnect()  # a pool it was given stays open

    # -- schema ---------------------------------------------------------------------------------

    def _meta(self) -> dict[str, Any] | None:
        rows = self._read("MATCH (m:Meta {key: $key}) RETURN properties(m)", {"key": META_KEY})
        return dict(rows[0][0]) if rows else None

    def ensure_schema(self) -> None:
        """Create indexes and the version node on an empty graph; refuse a foreign version."""
        meta = self._meta()
        if meta is not None:
            found = meta.get("schema_version")
            if found != SCHEMA_VERSION:
                raise SchemaMismatch(
                    f"graph {self.name!r} has schema version {found}, this Guard writes "
                    f"version {SCHEMA_VERSION}",
                    hint="rebuild it with `guard ingest-static REPO --reset` "
                    "and `guard ingest-coverage REPO`",
                )
            return
        if self._read("MATCH (n) RETURN count(n)")[0][0]:
            raise SchemaMismatch(
                f"graph {self.name!r} holds data that Guard did not write (no schema node)",
                hint="choose another graph name with GUARD_GRAPH, or rebuild with --reset",
            )
        for label, prop in INDEXES:
            try:
                self._query(f"CREATE INDEX FOR (n:{label}) ON (n.{prop})")
            except StoreError as exc:
                if "already indexed" not in str(exc):
                    raise
        self._query(
            "MERGE (m:Meta {key: $key}) SET m.schema_version = $version",
            {"key": META_KEY, "version": SCHEMA_VERSION},
        )

    def clear(self) -> None:
        """Delete the whole graph (``--reset``)."""
        with self._call("delete"):
            try:
                self.graph.delete()
            except redis.ResponseError as exc:
                if "empty key" not in str(exc).lower() and "invalid graph" not in str(exc).lower():
                    raise

    def ingest_info(self) -> IngestInfo:
        return IngestInfo.from_mapping(self._meta() or {})

    def update_ingest_info(self, **fields: object) -> None:
        self._query(
            "MERGE (m:Meta {key: $key}) SET m += $fields",
            {"key": META_KEY, "fields": {k: v for k, v in fields.items()}},
        )

    def mark_shard(self, sha: str, shard: int, shards: int) -> bool:
        """Record that ``shard`` of ``shards`` finished at ``sha``; True once all have (atomic,
        so concurrent CI workers can share one server)."""
        rows = self._query(
            "MERGE (m:Meta {key: $key}) "
            "WITH m, CASE WHEN m.shard_sha = $sha AND m.shard_count = $n "
            "THEN coalesce(m.shards_done, []) ELSE [] END AS done "
            "SET m.shard_sha = $sha, m.shard_count = $n, m.shards_done = done + [$k] "
            "RETURN m.shards_done",
            {"key": META_KEY, "sha": sha, "k": shard, "n": shards},
        )
        return len(set(rows[0][0])) >= shards

    def stats(self) -> GraphStats:
        counts = {}
        for key, pattern in (
            ("files", "(n:File)"),
            ("functions", "(n:Function)"),
            ("tests", "(n:Test)"),
            ("runs", "(n:Run)"),
            ("calls", "()-[n:CALLS]->()"),
            ("imports", "()-[n:IMPORTS]->()"),
            ("covered_by", "()-[n:COVERED_BY]->()"),
            ("failed_in", "()-[n:FAILED_IN]->()"),
        ):
            counts[key] = self._read(f"MATCH {pattern} RETURN count(n)")[0][0]
        return GraphStats(**counts)

    # -- static index ---------------------------------------------------------------------------

    def file_hashes(self) -> dict[str, str]:
        return {path: sha for path, sha in self._read("MATCH (f:File) RETURN f.path, f.sha")}

    def write_files(self, files: Sequence[FileIndex]) -> None:
        """Write (or rewrite) the static index of ``files``.

        Nodes are merged by id so the evidence on a function survives a re-ingest of its file;
        functions and tests that left a file are removed with their edges.
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
            "WHERE NOT n.id IN r.ids DETACH DELETE n",
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
                "bindings": list(fn.bindings),
                "srefs": list(fn.statement_refs),
                "attrs": list(fn.attributes),
                "memo": fn.memo,
            }
            for f in files
            for fn in f.functions
        ]
        self._write_rows(
            "UNWIND $rows AS r MERGE (n:Function {id: r.id}) "
            "ON CREATE SET n.no_evidence = true "
            "SET n.file = r.file, n.name = r.name, n.qualname = r.qualname, n.dotted = r.dotted, "
            "n.start = r.start, n.end = r.end, n.has_dynamic_dispatch = r.dyn, n.refs = r.refs, "
            "n.bindings = r.bindings, n.stmt_refs = r.srefs, n.attrs = r.attrs, n.memo = r.memo "
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
                {"id": fn.id, "targets": [t for t, _ in targets.get(fn.id, [])],
                 "conf": [c for _, c in targets.get(fn.id, [])]}
                for f in files for fn in f.functions
            ],
        )  # fmt: skip
        self._write_rows(
            "UNWIND $rows AS r MATCH (a:File {path: r.path}) SET a.import_targets = r.imports, "
            "a.alias_names = r.names, a.alias_targets = r.targets",
            [
                {"path": f.path, "imports": list(f.imports),
                 "names": [a for a, _ in f.aliases], "targets": [t for _, t in f.aliases]}
                for f in files
            ],
        )  # fmt: skip
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
        self, edges: Sequence[CoverEdge], *, sha: str, tests: Iterable[str], replace: bool
    ) -> None:
        """Write ``COVERED_BY`` edges; with ``replace``, first drop the coverage edges of
        ``tests`` (repair edges stay), then recompute ``no_evidence``."""
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
        for e in edges:
            key = ("::" in e.function, e.test, e.source, e.confidence, e.evidence_count, e.shared)
            groups.setdefault(key, []).append([e.function, encode_lines(e.lines)])
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
        self.refresh_no_evidence()

    def refresh_no_evidence(self) -> None:
        self._query(
            "MATCH (f:Function) OPTIONAL MATCH (f)-[c:COVERED_BY]->(:Test) "
            "WITH f, count(c) AS n SET f.no_evidence = (n = 0)"
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

    def spawning_tests(self) -> list[str]:
        return sorted(
            r[0] for r in self._read("MATCH (t:Test) WHERE t.spawns_python = true RETURN t.id")
        )

    def doctest_items(self) -> list[str]:
        return sorted(r[0] for r in self._read("MATCH (t:Test) WHERE t.doctest = true RETURN t.id"))

    def attribute_readers(self, names: Iterable[str]) -> list[tuple[str, str]] | None:
        """Functions whose code reads any of the attribute ``names`` on any object (or reads
        attributes by computed names, ``*``): ``(function id, name)``; None when the index
        predates attribute reads."""
        if not self._read("MATCH (f:Function) WHERE f.attrs IS NOT NULL RETURN f.id LIMIT 1"):
            return None
        wanted = sorted({*names, "*"})
        rows = self._read(
            "MATCH (f:Function) WHERE size(f.attrs) > 0 UNWIND f.attrs AS a "
            "WITH f, a WHERE a IN $names RETURN f.id, a",
            {"names": wanted},
        )
        return [(fid, a) for fid, a in rows]

    def functions_among(self, names: Iterable[str]) -> set[str]:
        """Which of ``names`` are the dotted names of the repository's functions."""
        rows = self._read("UNWIND $d AS d MATCH (f:Function {dotted: d}) RETURN f.dotted",
                          {"d": sorted(set(names))})  # fmt: skip
        return {r[0] for r in rows}

    def classes_among(self, names: Iterable[str]) -> set[str]:
        """Which of ``names`` are the dotted names of the repository's classes."""
        bodies = {f"{n}.{CLASS_BODY}": n for n in names}
        rows = self._read("UNWIND $d AS d MATCH (f:Function {dotted: d}) RETURN f.dotted",
                          {"d": sorted(bodies)})  # fmt: skip
        return {bodies[r[0]] for r in rows}

    def modules_among(self, names: Iterable[str]) -> set[str]:
        """Which of ``names`` are the dotted names of the repository's modules."""
        rows = self._read("UNWIND $names AS n MATCH (f:File {module: n}) RETURN DISTINCT n",
                          {"names": sorted(set(names))})  # fmt: skip
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
            + ("c.lines])" if lines else "null])")
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
            _cover_edge(fid, tid, source, conf, count, sha, decode_lines(lines) if lines else None)
            for fid, collected in rows
            for tid, source, conf, count, sha, lines in collected
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
        rows = self._read(
            "UNWIND $ids AS id MATCH (f:Function {id: id})-[c:COVERED_BY]->(t:Test) "
            "WHERE c.confidence >= $min WITH t, f, c ORDER BY c.confidence DESC "
            "WITH t, collect([f.id, c.source, c.confidence, c.evidence_count, "
            "c.last_verified_sha]) AS es RETURN t.id, es[0..$k]",
            {"ids": ids, "min": min_confidence, "k": max(1, per_test)},
        )
        return [
            _cover_edge(fid, tid, source, conf, count, sha)
            for tid, kept in rows
            for fid, source, conf, count, sha in kept
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
        return [CoverEdge(function=f, test=t, source="miss_repair", confidence=float(conf),
                          evidence_count=int(n or 1), last_verified_sha=sha)
                for f, t, conf, n, sha in rows]  # fmt: skip

    def function_facts(self, ids: Iterable[str]) -> dict[str, FunctionFacts]:
        rows = self._read(
            "UNWIND $ids AS id MATCH (f:Function {id: id}) "
            "RETURN f.id, f.file, f.no_evidence AND NOT coalesce(f.unproven, false), "
            "f.has_dynamic_dispatch, coalesce(f.memo, false)",
            {"ids": sorted(set(ids))},
        )
        return {
            fid: FunctionFacts(id=fid, file=file, no_evidence=bool(noev),
                               has_dynamic_dispatch=bool(dyn), memo=bool(memo))
            for fid, file, noev, dyn, memo in rows
        }  # fmt: skip

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
        out: dict[str, list[str]] = {}
        stars: dict[str, list[str]] = {}
        for n in set(names):
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

    def importers_of(self, names: Iterable[str]) -> list[str]:
        """Files that import any of ``names`` by name (``from m import name``, or ``*``)."""
        stars = {f"{n.rpartition('.')[0]}.*" for n in names if "." in n}
        rows = self._read(
            "MATCH (f:File) WHERE size(f.alias_targets) > 0 AND "
            "any(t IN f.alias_targets WHERE t IN $names) RETURN f.path",
            {"names": sorted({*names, *stars})},
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

    def statement_bindings(self, ids: Iterable[str]) -> dict[str, tuple[list[str], list[str]]]:
        """For module and class bodies: their per-statement bindings and reads."""
        rows = self._read(
            "UNWIND $ids AS id MATCH (f:Function {id: id}) "
            "RETURN f.id, coalesce(f.bindings, []), coalesce(f.stmt_refs, [])",
            {"ids": sorted(set(ids))},
        )
        return {fid: (list(b), list(r)) for fid, b, r in rows}

    def functions_named(self, name: str) -> list[str]:
        rows = self._read("MATCH (f:Function {name: $n}) RETURN f.id", {"n": name})
        return sorted(r[0] for r in rows)

    def all_tests(self) -> list[str]:
        return sorted(r[0] for r in self._read("MATCH (t:Test) RETURN t.id"))

    def all_functions(self) -> list[str]:
        return sorted(r[0] for r in self._read("MATCH (f:Function) RETURN f.id"))

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

    def refresh_edges(self, tests: Iterable[str], sha: str) -> None:
        """Mark the evidence of ``tests`` as verified at ``sha`` (after they ran and passed)."""
        self._write_rows(
            "UNWIND $rows AS r MATCH ()-[c:COVERED_BY]->(t:Test {id: r.id}) "
            "SET c.last_verified_sha = r.sha",
            [{"id": t, "sha": sha} for t in tests],
        )

    def set_edge_lines(self, edges: Iterable[CoverEdge]) -> None:
        """Overwrite the recorded lines of existing coverage edges (``function``, ``test``)."""
        self._write_rows(
            "UNWIND $rows AS r MATCH (f:Function {id: r.f})-[c:COVERED_BY]->(t:Test {id: r.t}) "
            "SET c.lines = r.l",
            [{"f": e.function, "t": e.test, "l": encode_lines(e.lines)} for e in edges],
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

    def add_repair_edge(self, function_id: str, test_id: str, sha: str) -> None:
        """A ``miss_repair`` edge with confidence 1.0; clears the function's ``no_evidence``.
        Both nodes must exist: a repair never creates a test that nothing collects."""
        rows = self._query(
            "MATCH (f:Function {id: $fid}) MATCH (t:Test {id: $tid}) "
            "MERGE (f)-[c:COVERED_BY]->(t) "
            "SET c.source = 'miss_repair', c.confidence = 1.0, "
            "c.evidence_count = coalesce(c.evidence_count, 0) + 1, c.last_verified_sha = $sha, "
            "f.no_evidence = false RETURN f.id",
            {"fid": function_id, "tid": test_id, "sha": sha},
        )
        if rows:
            return
        if not self.function_facts([function_id]):
            raise UnknownId(
                f"no function {function_id!r} in the graph",
                hint="ids look like path/to/file.py::Class.method; "
                "run `guard ingest-static` first if the function is new",
            )
        raise UnknownId(
            f"no test {test_id!r} in the graph",
            hint="test ids are pytest node ids; run `guard ingest-coverage` first if it is new",
        )


def _cover_edge(
    function: str, test: str, source: str | None, confidence: float | None, count: int | None,
    sha: str | None, lines: frozenset[int] | None = None,
) -> CoverEdge:  # fmt: skip
    """A ``COVERED_BY`` edge from its stored properties (missing ones read as defaults)."""
    return CoverEdge(
        function=function,
        test=test,
        source=source or "coverage",
        confidence=float(confidence if confidence is not None else 0.0),
        evidence_count=int(count or 0),
        last_verified_sha=sha,
        lines=lines or frozenset(),
    )
