"""The static index by content: a file's index is a function of its bytes and of what it is
indexed as (path, module, test file or not, the pytest layout). Kept under that key in the
store, it is shared by every base, clone and CI worker on a server, so a file version is
parsed once.

An entry that cannot be read back (another codec, damage) is a miss: the file is parsed again.
"""

from __future__ import annotations

import base64
import hashlib
import zlib
from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol, runtime_checkable

from cattrs.preconf.json import make_converter

from guard_adapters.index.index import INDEX_VERSION, RawIndex, indexer_digest
from guard_adapters.pytest.layout import PytestLayout
from guard_core.logs import get_logger

log = get_logger("guard.index")

_CODEC = b"guard-index-codec-1\0"


_converter = make_converter()  # frozensets and tuples as JSON lists, back by type


@runtime_checkable
class SharedIndex(Protocol):
    """Indexes by content key (a store that can keep them: FalkorDB)."""

    def shared_indexes(self, keys: Sequence[str]) -> dict[str, str]:
        """The entries found among ``keys``."""
        ...

    def keep_indexes(self, entries: Mapping[str, str]) -> None: ...


IndexJob = tuple[str, str, str | None, PytestLayout, bool]  # root, path, module, layout, test


def index_key(job: IndexJob, data: bytes) -> str:
    _, path, module, layout, is_test = job
    what = repr((path, module, is_test, layout)).encode()
    digest = hashlib.sha256(INDEX_VERSION + _CODEC + indexer_digest() + what + b"\0" + data)
    return digest.hexdigest()


def encode(raw: RawIndex) -> str:
    """Compressed JSON as text (the store's client decodes its answers as UTF-8)."""
    return base64.b64encode(zlib.compress(_converter.dumps(raw).encode(), 6)).decode("ascii")


def decode(entry: str) -> RawIndex | None:
    try:
        return _converter.loads(zlib.decompress(base64.b64decode(entry, validate=True)), RawIndex)
    except Exception as exc:  # a damaged or foreign entry: parse the file again
        log.info("shared_index_unreadable", error=f"{type(exc).__name__}: {exc}"[:200])
        return None


def lookup(store: object, keys: Iterable[str]) -> dict[str, RawIndex]:
    """The readable entries among ``keys``; nothing when the store keeps none or fails."""
    if not isinstance(store, SharedIndex):
        return {}
    wanted = list(keys)
    try:
        found = store.shared_indexes(wanted)
    except Exception as exc:  # the index is parsed instead
        log.info("shared_index_unavailable", error=str(exc)[:200])
        return {}
    out = {}
    for key, entry in found.items():
        raw = decode(entry)
        if raw is not None:
            out[key] = raw
    return out


def keep(store: object, parsed: Mapping[str, RawIndex]) -> None:
    if not parsed or not isinstance(store, SharedIndex):
        return
    try:
        store.keep_indexes({key: encode(raw) for key, raw in parsed.items()})
    except Exception as exc:  # a later ingest parses them again
        log.info("shared_index_not_kept", error=str(exc)[:200])
