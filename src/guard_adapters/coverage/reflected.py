"""What the collector's reflection recorder saw (``pytest/reflection.py``), carried through the
ingest's charges: each recorded name rides in a context's line set as a number past any line
(below 2**32, which the charges' packing keeps), so
that a test is charged the names of whatever it is charged the lines of (a fixture, a cache
fill, the shared imports), and is split off again per test."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from guard_adapters.coverage.payload import CollectorPayload
from guard_core.model import split_id

NAME_BASE = 1 << 31  # no line of a Python file is this far down


class NameCodes:
    """Names as numbers from :data:`NAME_BASE` on, and back."""

    def __init__(self) -> None:
        self._codes: dict[str, int] = {}
        self._names: list[str] = []

    def encode(self, names: Iterable[str]) -> set[int]:
        out = set()
        for name in names:
            code = self._codes.get(name)
            if code is None:
                self._names.append(name)
                code = self._codes[name] = NAME_BASE + len(self._names) - 1
            out.add(code)
        return out

    def decode(
        self, executed: Mapping[str, frozenset[int] | set[int]]
    ) -> tuple[dict[str, frozenset[int]], dict[str, frozenset[str]]]:
        """Per id: its lines, and the names among them (ids without names are left out)."""
        if not self._names:
            return dict(executed), {}  # type: ignore[arg-type]
        lines: dict[str, frozenset[int]] = {}
        names: dict[str, frozenset[str]] = {}
        for rid, seen in executed.items():
            if max(seen, default=0) < NAME_BASE:
                lines[rid] = seen  # type: ignore[assignment]
                continue
            lines[rid] = frozenset(n for n in seen if n < NAME_BASE)
            names[rid] = frozenset(self._names[n - NAME_BASE] for n in seen if n >= NAME_BASE)
        return lines, names


def recorded_files(
    payload: CollectorPayload,
    executed: Mapping[str, Mapping[str, Any]],
    spawned: Iterable[str],
    charged_only: tuple[str, ...],
) -> frozenset[str]:
    """The files whose every recorded call the run saw: none when recording was off in any
    process, or when a child process ran code for a cache fill (charged to tests that are not
    marked spawners); otherwise every file it ran but those whose module bound an
    introspection function the recorder does not wrap."""
    if not payload.reflect_active or any(c.startswith(charged_only) for c in spawned):
        return frozenset()
    if payload.children:  # measured children ran code no recorder saw
        return frozenset()
    files = {split_id(rid)[0] for ran in executed.values() for rid in ran if "::" in rid}
    # modules imported before measuring began ran their import-time calls unrecorded
    unseen = {*payload.unrecorded, *payload.preloaded}
    return frozenset(files - unseen)
