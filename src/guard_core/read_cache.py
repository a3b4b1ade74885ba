"""One decision's reads, each asked of the store once.

The graph does not change while a check reads it, and several rules ask the same question (the
readers of a name in two rounds, the covering tests of the same ids); on a large graph each
answer can cost tens of milliseconds. The cache lives for one check only: the next check sees
what the ingest or a refresh wrote since.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, cast

from guard_core.ports import EvidenceReader

_READS = frozenset(n for n in vars(EvidenceReader) if not n.startswith("_"))


def _materialise(value: Any) -> tuple[Any, Any]:
    """(the value to pass on, a hashable key for it); iterables are read once."""
    if isinstance(value, str | bytes | int | float | bool) or value is None:
        return value, value
    if isinstance(value, Mapping):
        items = [(k, _materialise(v)) for k, v in value.items()]
        return {k: v for k, (v, _) in items}, ("map", tuple(sorted((k, h) for k, (_, h) in items)))
    if isinstance(value, set | frozenset):
        kept = list(value)
        return kept, ("set", frozenset(kept))
    if isinstance(value, Iterable):
        kept = list(value)
        return kept, ("seq", tuple(_materialise(v)[1] for v in kept))
    return value, ("obj", id(value))


def _copy(value: Any) -> Any:
    """A copy a caller may change without changing the cached answer."""
    if isinstance(value, list):
        return [_copy(v) for v in value]
    if isinstance(value, set):
        return set(value)
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    return value


class CachedReader:
    """An :class:`~guard_core.ports.EvidenceReader` that asks the store each question once."""

    def __init__(self, store: EvidenceReader) -> None:
        self._store = store
        self._answers: dict[tuple[Any, ...], Any] = {}

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._store, name)
        if name not in _READS or not callable(method):
            return method

        def cached(*args: Any, **kwargs: Any) -> Any:
            passed = [_materialise(a) for a in args]
            named = {k: _materialise(v) for k, v in kwargs.items()}
            key = (
                name,
                tuple(h for _, h in passed),
                tuple(sorted((k, h) for k, (_, h) in named.items())),
            )
            if key not in self._answers:
                self._answers[key] = method(
                    *(v for v, _ in passed), **{k: v for k, (v, _) in named.items()}
                )
            return _copy(self._answers[key])

        return cast(Callable[..., Any], cached)


def cached(store: EvidenceReader) -> EvidenceReader:
    return cast(EvidenceReader, CachedReader(store))
