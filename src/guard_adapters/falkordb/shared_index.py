"""Static indexes by content key, as plain Redis strings beside the graphs: every base, clone
and CI worker on the server reads them (``guard_adapters.index.shared_index``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from falkordb import FalkorDB

from guard_adapters.falkordb.connection import translate_errors

PREFIX = "guard:index:"
# an entry no ingest asked for in this long goes; one that is read stays
KEEP_S = 90 * 24 * 3600


class SharedIndexes:
    db: FalkorDB

    def shared_indexes(self, keys: Sequence[str]) -> dict[str, str]:
        if not keys:
            return {}
        conn = self.db.connection
        with translate_errors("reading shared indexes"):
            values = conn.mget([PREFIX + k for k in keys])
            found = {k: v for k, v in zip(keys, values, strict=True) if isinstance(v, str)}
            if found:
                pipe = conn.pipeline(transaction=False)
                for key in found:
                    pipe.expire(PREFIX + key, KEEP_S)
                pipe.execute()
        return found

    def keep_indexes(self, entries: Mapping[str, str]) -> None:
        pipe = self.db.connection.pipeline(transaction=False)
        for key, entry in entries.items():
            pipe.set(PREFIX + key, entry, ex=KEEP_S)
        with translate_errors("keeping shared indexes"):
            pipe.execute()
