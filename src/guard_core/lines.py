"""Line-level evidence: of the tests that executed a changed function, which ones can have
observed the change.

A test can be affected by an edit inside a function body only if its execution reached the
edited place: it ran one of the replaced lines, or it passed the place where new code now sits.
Passing a place is witnessed by the nearest line before or after it that some test executed.
When that cannot be decided (a change at the very end of the body that new paths may reach,
or edges without line data) every covering test stays selected.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping, Sequence

from guard_core.model import CoverEdge, Hunk


def observing_lines(hunks: Sequence[Hunk], executed: Iterable[int]) -> frozenset[int] | None:
    """Base-side lines whose execution means a test could observe ``hunks``; None: all of
    the function's tests could. ``executed``: every line any test executed in the function."""
    seen = sorted(set(executed))
    if not hunks or not seen:
        return None
    out: set[int] = set()
    for hunk in hunks:
        replaced = set(range(hunk.start, hunk.end))
        out |= replaced
        if hunk.end > hunk.start and not hunk.opens_paths and hunk.start in seen:
            continue  # same block, first replaced line is executed: its runners are the ones
        before = [line for line in seen if line < hunk.start]
        after = [line for line in seen if line >= hunk.end]
        if not after:
            return None  # at the tail: which tests fall through to here is not recorded
        out.add(after[0])
        if before:
            out.add(before[-1])
    return frozenset(out)


def observers(edges: Sequence[CoverEdge], hunks: Sequence[Hunk]) -> list[CoverEdge]:
    """The edges whose test may observe ``hunks``: those that executed an observing line, and
    every edge without line data (evidence of unknown extent is kept, never dropped)."""
    executed = [line for e in edges for line in e.lines]
    lines = observing_lines(hunks, executed)
    if lines is None:
        return list(edges)
    return [e for e in edges if not e.lines or not e.lines.isdisjoint(lines)]


def line_mapping(old: Sequence[str], new: Sequence[str]) -> dict[int, int]:
    """1-based line numbers of ``old`` that survive unchanged in ``new``, to their new number.
    Lines inside replaced, deleted or moved blocks have no entry."""
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    out: dict[int, int] = {}
    for a, b, size in matcher.get_matching_blocks():
        for i in range(size):
            out[a + i + 1] = b + i + 1
    return out


def remap_edge_lines(lines: frozenset[int], mapping: Mapping[int, int]) -> frozenset[int]:
    """An edge's recorded lines in the new version of its file; unknown (empty) when any of
    them did not survive, since what the test runs there is then unknown."""
    moved = [mapping.get(line) for line in lines]
    if not lines or any(m is None for m in moved):
        return frozenset()
    return frozenset(m for m in moved if m is not None)
