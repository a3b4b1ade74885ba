"""Compact text for an edge's executed lines (``"3-7,12"``): one short string per edge keeps
bulk writes fast, where a list of integers would multiply the query's parameter size."""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence

from guard_core.index_model import BodyStatements, StatementBinding, StatementRead


def encode_lines(lines: Iterable[int]) -> str:
    runs: list[str] = []
    ordered = sorted(set(lines))
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        runs.append(str(ordered[i]) if i == j else f"{ordered[i]}-{ordered[j]}")
        i = j + 1
    return ",".join(runs)


def decode_lines(text: object) -> frozenset[int]:
    """The lines of :func:`encode_lines` (or :func:`encode_edge`); empty (unknown) for a
    missing or unreadable value."""
    return _decode(text.partition(_NAMES)[0]) if isinstance(text, str) else frozenset()


_NAMES = "|"  # lines, then the edge's recorded names, tab-separated


def encode_edge(lines: Iterable[int], names: Iterable[str] | None) -> str:
    """An edge's lines and, when recorded, its names (``CoverEdge.names``) in one string."""
    text = encode_lines(lines)
    return text if names is None else text + _NAMES + "\t".join(sorted(names))


def decode_names(text: object) -> frozenset[str] | None:
    """The names of :func:`encode_edge`; None (not recorded) without them."""
    if not isinstance(text, str) or _NAMES not in text:
        return None
    return _decode_names(text.partition(_NAMES)[2])


@functools.lru_cache(maxsize=1 << 12)
def _decode_names(text: str) -> frozenset[str]:
    return frozenset(filter(None, text.split("\t")))


@functools.lru_cache(maxsize=1 << 16)  # edges share few distinct line sets
def _decode(text: str) -> frozenset[int]:
    out: set[int] = set()
    try:
        for part in filter(None, text.split(",")):
            first, _, last = part.partition("-")
            out.update(range(int(first), int(last or first) + 1))
    except ValueError:
        return frozenset()
    return frozenset(out)


# A body's statements are stored as strings too: "index<TAB>names<TAB>0|1" per binding and
# "index<TAB>name" per read.


def encode_bindings(bindings: Sequence[StatementBinding]) -> list[str]:
    return [f"{i}\t{' '.join(b.names)}\t{int(b.side_effects)}" for i, b in enumerate(bindings)]


def encode_reads(reads: Iterable[StatementRead]) -> list[str]:
    return sorted(f"{r.statement}\t{r.name}" for r in reads)


def decode_body(bindings: Iterable[str], reads: Iterable[str]) -> BodyStatements:
    """The body of :func:`encode_bindings` and :func:`encode_reads`; an entry that does not
    parse becomes a binding with side effects (the reader's tests are selected) or is kept as
    a read of statement -1 (bound to nothing: the same)."""
    by_index: dict[int, StatementBinding] = {}
    for text in bindings:
        parts = text.split("\t")
        try:
            index = int(parts[0])
        except ValueError:
            continue
        if len(parts) < 3:
            by_index[index] = StatementBinding((), True)
        else:
            by_index[index] = StatementBinding(tuple(parts[1].split()), parts[2] != "0")
    size = max(by_index, default=-1) + 1
    decoded: list[StatementRead] = []
    for text in reads:
        first, _, name = text.partition("\t")
        try:
            decoded.append(StatementRead(int(first), name))
        except ValueError:
            decoded.append(StatementRead(-1, name))
    return BodyStatements(tuple(by_index.get(i) for i in range(size)), tuple(decoded))


# A function's reads with their lines: "name<TAB>3-7,12" per name read.


def encode_read_lines(reads: Iterable[tuple[str, Iterable[int]]]) -> list[str]:
    return [f"{name}\t{encode_lines(lines)}" for name, lines in reads]


def decode_read_lines(texts: Iterable[object]) -> dict[str, frozenset[int]]:
    """The reads of :func:`encode_read_lines`; an entry that does not parse is left out (its
    read then applies to every test that ran the function)."""
    out: dict[str, frozenset[int]] = {}
    for text in texts:
        if not isinstance(text, str):
            continue
        name, sep, lines = text.rpartition("\t")
        decoded = decode_lines(lines)
        if sep and name and decoded:
            out[name] = decoded
    return out
