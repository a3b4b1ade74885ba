"""The connection to one graph in FalkorDB: opening it, one call at a time, and the
translation of the client's errors into Guard's."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any

import attrs
import redis
from falkordb import FalkorDB
from redis.backoff import NoBackoff
from redis.retry import Retry

from guard_adapters.falkordb.schema import BATCH
from guard_core.errors import (
    GuardError,
    StoreError,
    StoreUnavailable,
)
from guard_core.logs import get_logger

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
                url,
                socket_timeout=timeout,
                socket_connect_timeout=timeout,
                retry=Retry(NoBackoff(), 0),
            )
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
            url,
            socket_timeout=query_timeout,
            socket_connect_timeout=timeout,
            retry=Retry(NoBackoff(), 1, supported_errors=(redis.ConnectionError,)),
        )


def _redact(url: str) -> str:
    scheme, sep, rest = url.partition("://")
    if "@" in rest:
        rest = "***@" + rest.split("@", 1)[1]
    return scheme + sep + rest


@attrs.frozen
class ServerFacts:
    """What ``guard doctor`` reports about the server (empty where it would not say)."""

    version: str = ""  # the Redis server's
    graph_module: str = ""  # FalkorDB's module version
    save: str | None = None  # RDB snapshot schedule ("" = none); None: CONFIG is not allowed
    appendonly: str | None = None

    @property
    def persists(self) -> bool | None:
        """Whether written evidence survives a restart; None when the server did not say."""
        if self.save is None and self.appendonly is None:
            return None
        return bool(self.save) or self.appendonly == "yes"


def _text_keys(entry: Any) -> dict[str, Any]:
    """A ``MODULE LIST`` entry as a dict (the client parses it, or leaves a flat list)."""
    pairs = entry.items() if isinstance(entry, dict) else zip(entry[::2], entry[1::2], strict=False)
    return {
        (k.decode() if isinstance(k, bytes) else str(k)): (
            v.decode() if isinstance(v, bytes) else v
        )
        for k, v in pairs
    }


class GraphConnection:
    """One repository's graph in one FalkorDB database, and the calls every part of the store
    makes through it."""

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
                    return []
                raise

    def _count(self, cypher: str) -> int:
        """The one number a ``RETURN count(...)`` query answers (0 before the graph exists)."""
        rows = self._read(cypher)
        return int(rows[0][0]) if rows else 0

    def _write_rows(self, cypher: str, rows: Sequence[dict[str, Any]], **params: Any) -> None:
        for chunk in _batches(rows):
            self._query(cypher, {"rows": list(chunk), **params})

    def server_facts(self) -> ServerFacts:
        conn = self.db.connection
        with self._call("info"):
            version = str(conn.info("server").get("redis_version", ""))
        module = ""
        with contextlib.suppress(redis.RedisError):
            for entry in conn.execute_command("MODULE", "LIST") or ():
                fields = _text_keys(entry)
                if fields.get("name") == "graph":
                    module = str(fields.get("ver", ""))
        settings: dict[str, str | None] = {"save": None, "appendonly": None}
        for key in settings:
            with contextlib.suppress(redis.RedisError):  # managed servers may hide CONFIG
                value = conn.config_get(key).get(key)
                settings[key] = None if value is None else str(value)
        return ServerFacts(version, module, settings["save"], settings["appendonly"])

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.db.connection.close()
            self.db.connection.connection_pool.disconnect()  # a pool it was given stays open
