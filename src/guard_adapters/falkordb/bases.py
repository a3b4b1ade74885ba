"""Evidence per base commit on one server: the graph ``<name>@<sha>`` holds the index and the
evidence of one commit, written by ``guard ingest-coverage`` (all of its shards) at that
commit. A check reads the nearest base (``guard_core.bases``); retention drops the oldest.

A check leases the base it reads (a timestamp in ``<name>:readers``). Pruning marks a base
``retiring`` first, then looks at its lease, then deletes it: a check leases first, then
looks at ``retiring``. Whichever comes second sees the other, so a base is never deleted
under a check that chose it."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import attrs
from falkordb import FalkorDB

from guard_adapters.falkordb.connection import GraphConnection, translate_errors
from guard_adapters.falkordb.schema import META_KEY, SCHEMA_VERSION
from guard_adapters.falkordb.store import FalkorGraphStore
from guard_core.bases import BaseChoice, Distance, EvidenceBase, choose_base, retired
from guard_core.errors import GuardError
from guard_core.logs import get_logger
from guard_core.ports import GraphStore

log = get_logger("guard.falkordb")

SEP = "@"
_SHA = re.compile(r"[0-9a-f]{40,64}")
# longer than any one check reads (the query timeout): a base read this recently is kept
LEASE_S = 300.0
# a long-lived store (the worker, the MCP server) looks for a nearer base this often
REBIND_S = 30.0


@attrs.frozen
class _Graph:
    """One graph of the repository on the server and what its metadata says."""

    name: str
    base: EvidenceBase
    # holds coverage evidence this Guard reads (not only a static index, an ingest that has
    # only started, or another schema version's graph)
    usable: bool


class BasedGraphStore(FalkorGraphStore):
    """The graphs of one repository's evidence bases. Used as a store, it reads the base
    nearest HEAD (chosen at its first query, again after a write through :meth:`writer_for`
    and every ``REBIND_S``); a check picks its own through :meth:`at_base`."""

    def __init__(
        self,
        db: FalkorDB,
        prefix: str,
        *,
        keep: int,
        repo: Path,
        distances: Callable[[Sequence[EvidenceBase]], dict[str, Distance]],
        lease_s: float = LEASE_S,
    ) -> None:
        super().__init__(db, prefix)
        self.prefix = prefix
        self.keep = keep
        self.repo = repo
        self.distances = distances
        self.lease_s = lease_s
        self.choice: BaseChoice | None = None
        self._bound_at = 0.0
        self._graphs: dict[str, _Graph] = {}

    def _call(self, where: str) -> Any:
        now = time.monotonic()
        if self.choice is None or now - self._bound_at > REBIND_S:
            self.choice = BaseChoice("", "")  # set first: binding queries other graphs
            self._bound_at = now
            self._bind()
        return super()._call(where)

    def _bind(self) -> None:
        try:
            self.choice = choose_base(self.evidence_bases(), self._distances)
            graph = self._graphs.get(self.choice.sha)
            name = graph.name if graph is not None and self._lease(graph) else self.prefix
        except GuardError as exc:  # read the one graph of old; try again at the next query
            log.warning("bases_unreadable", error=exc.message)
            self.choice, name = None, self.prefix
        self.name = name
        self.graph = self.db.select_graph(name)

    def _distances(self, bases: Sequence[EvidenceBase]) -> dict[str, Distance]:
        try:
            return self.distances(bases)
        except GuardError as exc:  # git cannot say: no base is known to be in this clone
            log.warning("distances_unknown", error=exc.message)
            return {}

    # -- the bases ------------------------------------------------------------------------------

    def _listing(self, *, retiring: bool = False) -> dict[str, _Graph]:
        """The repository's graphs by the commit their evidence is of; ``retiring``: with the
        ones a pruning marked (and may have died before deleting)."""
        # through the connection's own gate: once the server failed, every call fails at once
        with GraphConnection._call(self, "listing the graphs"):
            names = [n.decode() if isinstance(n, bytes) else str(n) for n in self.db.list_graphs()]
        found: dict[str, _Graph] = {}
        for name in names:
            head, _, sha = name.rpartition(SEP)
            if name != self.prefix and not (head == self.prefix and _SHA.fullmatch(sha)):
                continue
            rows = GraphConnection(self.db, name)._read(
                "MATCH (m:Meta {key: $key}) RETURN m.coverage_sha, m.coverage_complete, "
                "m.written_at, m.retiring, m.schema_version",
                {"key": META_KEY},
            )
            evidenced_sha, complete, written, marked, version = (
                rows[0] if rows else (None, False, 0, None, None)
            )
            if marked and not retiring:
                continue
            named = name != self.prefix
            sha = sha if named else str(evidenced_sha or "")
            if not sha:  # the one graph of an older Guard, without evidence
                continue
            base = EvidenceBase(sha, bool(complete), float(written or 0) / 1000)
            # a graph named for a commit holds that commit's evidence only once it says so
            # (a base being forked for a refresh still holds its source's)
            evidenced = bool(evidenced_sha) and (not named or evidenced_sha == sha)
            entry = _Graph(name, base, evidenced and version == SCHEMA_VERSION)
            if sha not in found or found[sha].name == self.prefix:
                found[sha] = entry
        return found

    def evidence_bases(self) -> list[EvidenceBase]:
        self._graphs = self._listing()
        return [g.base for g in self._graphs.values() if g.usable]

    def at_base(self, sha: str) -> FalkorGraphStore | None:
        graph = self._graphs.get(sha)
        if graph is None or not graph.usable or not self._lease(graph):
            return None
        return FalkorGraphStore(self.db, graph.name)

    def writer_for(self, sha: str) -> FalkorGraphStore:
        store = FalkorGraphStore(self.db, f"{self.prefix}{SEP}{sha}")
        store.ensure_schema()
        # an ingest of a commit a pruning gave up on half-way makes it a base again
        store._query("MATCH (m:Meta {key: $key}) SET m.retiring = null", {"key": META_KEY})
        self.choice = None  # what this store reads may be the base being written
        return store

    def fork_base(self, base: str, sha: str) -> FalkorGraphStore | None:
        graphs = self._listing(retiring=True)
        source = graphs.get(base)
        target = f"{self.prefix}{SEP}{sha}"
        if source is None or sha in graphs or not self._lease(source):
            return None
        try:
            with translate_errors("copying an evidence base"):
                self.db.connection.execute_command("GRAPH.COPY", source.name, target)
        except GuardError as exc:  # another process forked the same tree a moment ago
            log.info("base_not_forked", base=base[:12], sha=sha[:12], error=exc.message)
            return None
        return self.writer_for(sha)

    def carry_repairs(self, into: GraphStore, sha: str) -> int:
        """Copy the ``miss_repair`` edges of the other bases (``guard feedback``) into the
        graph ``into`` where both ends exist there: a repaired miss stays repaired in the
        evidence of later commits. The number of edges carried."""
        assert isinstance(into, FalkorGraphStore)
        pairs: set[tuple[str, str]] = set()
        for graph in self._listing().values():
            if graph.name != into.name:
                rows = GraphConnection(self.db, graph.name)._read(
                    "MATCH (f:Function)-[c:COVERED_BY {source: 'miss_repair'}]->(t:Test) "
                    "RETURN f.id, t.id"
                )
                pairs.update((str(f), str(t)) for f, t in rows)
        return into.write_repair_edges(pairs, sha)

    def _now(self) -> float:
        """The server's clock: clients that lease and prune may disagree about the time."""
        with translate_errors("reading the time"):
            seconds, micros = self.db.connection.time()
        return float(seconds) + float(micros) / 1e6

    def _lease(self, graph: _Graph) -> bool:
        now = self._now()
        with translate_errors("leasing an evidence base"):
            self.db.connection.zadd(f"{self.prefix}:readers", {graph.name: now})
        rows = GraphConnection(self.db, graph.name)._read(
            "MATCH (m:Meta {key: $key}) RETURN m.retiring", {"key": META_KEY}
        )
        return bool(rows) and not rows[0][0]

    def prune_bases(self, protect: Iterable[str] = ()) -> list[str]:
        graphs = {g.name: g for g in self._listing(retiring=True).values() if g.name != self.prefix}
        by_sha = {g.base.sha: g for g in graphs.values()}
        dropped = []
        bases = [g.base for g in graphs.values()]
        for sha in retired(bases, self.keep, protect, now=self._now()):
            if self._retire(by_sha[sha].name):
                dropped.append(sha)
        if dropped:
            log.info("bases_pruned", graph=self.prefix, dropped=[s[:12] for s in dropped])
        return dropped

    def _retire(self, name: str) -> bool:
        conn = FalkorGraphStore(self.db, name)
        meta = "MATCH (m:Meta {key: $key}) SET m.retiring = $on"
        conn._query(meta, {"key": META_KEY, "on": True})
        with translate_errors("reading the leases"):
            leased = self.db.connection.zscore(f"{self.prefix}:readers", name)
        if leased is not None and float(leased) > self._now() - self.lease_s:
            conn._query(meta, {"key": META_KEY, "on": None})
            return False
        conn.clear()
        with translate_errors("dropping a lease"):
            self.db.connection.zrem(f"{self.prefix}:readers", name)
        return True
