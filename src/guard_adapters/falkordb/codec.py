"""Compact text for an edge's executed lines (``"3-7,12"``): one short string per edge keeps
bulk writes fast, where a list of integers would multiply the query's parameter size."""

from __future__ import annotations

from collections.abc import Iterable


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


def decode_lines(text: str | None) -> frozenset[int]:
    """The lines of :func:`encode_lines`; empty (unknown) for a missing or unreadable value."""
    out: set[int] = set()
    try:
        for part in filter(None, (text or "").split(",")):
            first, _, last = part.partition("-")
            out.update(range(int(first), int(last or first) + 1))
    except ValueError:
        return frozenset()
    return frozenset(out)
