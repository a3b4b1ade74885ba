"""The FalkorDB graph store: every query parameterised, writes batched with ``UNWIND $rows``.

Split by job: :mod:`.connection` (client, error translation), :mod:`.writes` (index and
evidence), :mod:`.queries` (what a decision reads); this module adds the schema and the
ingest metadata."""

from __future__ import annotations

from typing import Any

import redis

from guard_adapters.falkordb.connection import GraphConnection, connect, translate_errors
from guard_adapters.falkordb.queries import GraphQueries
from guard_adapters.falkordb.schema import INDEXES, META_KEY, SCHEMA_VERSION
from guard_adapters.falkordb.shared_index import SharedIndexes
from guard_adapters.falkordb.writes import GraphWrites
from guard_core.errors import (
    SchemaMismatch,
    StoreError,
)
from guard_core.model import (
    GraphStats,
    IngestInfo,
)


class FalkorGraphStore(GraphWrites, GraphQueries, SharedIndexes):
    """One repository's graph in one FalkorDB database."""

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
        if self._count("MATCH (n) RETURN count(n)"):
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
            "MERGE (m:Meta {key: $key}) SET m += $fields, m.written_at = timestamp()",
            {"key": META_KEY, "fields": {k: v for k, v in fields.items()}},
        )

    def mark_shard(self, sha: str, shard: int, shards: int, tests: int = 1) -> bool:
        """Record that ``shard`` of ``shards`` finished at ``sha`` having run ``tests``, and
        whether the evidence of ``sha`` is now complete: every shard in, and at least one of
        them ran a test. One query, so shards that finish together on one server cannot undo
        each other's answer."""
        rows = self._query(
            "MERGE (m:Meta {key: $key}) "
            "WITH m, m.shard_sha = $sha AND m.shard_count = $n AS same "
            "WITH m, CASE WHEN same THEN coalesce(m.shards_done, []) ELSE [] END AS done, "
            "CASE WHEN same THEN coalesce(m.shard_tests, 0) ELSE 0 END AS ran "
            "WITH m, CASE WHEN $k IN done THEN done ELSE done + [$k] END AS now, ran + $t AS ran "
            "SET m.shard_sha = $sha, m.shard_count = $n, m.shards_done = now, "
            "m.shard_tests = ran, m.coverage_complete = size(now) >= $n AND ran > 0, "
            "m.written_at = timestamp() "
            "RETURN m.coverage_complete",
            {"key": META_KEY, "sha": sha, "k": shard, "n": shards, "t": tests},
        )
        return bool(rows[0][0])

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
            counts[key] = self._count(f"MATCH {pattern} RETURN count(n)")
        return GraphStats(**counts)


__all__ = ["FalkorGraphStore", "GraphConnection", "connect", "translate_errors"]
