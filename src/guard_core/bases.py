"""Evidence kept per base commit: which of the graph's evidenced commits a check reads, and
which old ones a retention limit lets go.

A shared server holds the evidence of several commits (CI on main, branches, worktrees). A
check reads the nearest one to its HEAD: an ancestor first (its diff to the working tree holds
only this clone's changes), else the one sharing the most history, and a complete one over a
nearer one still being written."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING

import attrs

if TYPE_CHECKING:
    pass


@attrs.frozen
class EvidenceBase:
    """One commit whose evidence the graph holds."""

    sha: str
    complete: bool
    written_at: float  # seconds since the epoch of its last evidence write


@attrs.frozen
class Distance:
    """How far a commit is from HEAD: commits HEAD has that it lacks, and the reverse."""

    behind: int
    ahead: int

    @property
    def is_ancestor(self) -> bool:
        return self.ahead == 0


# the distance from HEAD of each of these bases this clone has (it may leave out ones that
# cannot win: a base that is not an ancestor when a complete ancestor was found)
DistanceOf = Callable[[Sequence[EvidenceBase]], dict[str, Distance]]


@attrs.frozen
class BaseChoice:
    """The base a check reads, and why (empty ``sha``: no base this clone can use)."""

    sha: str
    reason: str
    complete: bool = False  # the base's evidence was complete when it was chosen


def choose_base(bases: Iterable[EvidenceBase], distances: DistanceOf) -> BaseChoice:
    """The nearest base of those this clone has; ties go to the newest evidence."""
    known = list(bases)
    if not known:
        return BaseChoice("", "the graph holds no evidence yet")
    found = distances(known)
    usable = [b for b in known if b.sha in found]
    if not usable:
        return BaseChoice(
            "",
            f"none of the {len(known)} evidenced commits is in this clone "
            "(fetch them, or run guard ingest-coverage)",
        )

    def nearness(b: EvidenceBase) -> tuple[bool, bool, int, float]:
        d = found[b.sha]
        return (not b.complete, not d.is_ancestor, d.behind + d.ahead, -b.written_at)

    best = min(usable, key=nearness)
    return BaseChoice(best.sha, _why(best, found[best.sha], usable, found), best.complete)


def _why(
    best: EvidenceBase,
    d: Distance,
    usable: Sequence[EvidenceBase],
    found: dict[str, Distance],
) -> str:
    sha = best.sha[:12]
    if d.behind == 0 and d.ahead == 0:
        where = f"the evidence of HEAD ({sha})"
    elif d.is_ancestor:
        where = f"the evidence of {sha}, the nearest evidenced ancestor of HEAD ({d.behind} behind)"
    else:
        where = (
            f"the evidence of {sha}, which shares the most history with HEAD "
            f"({d.behind} behind, {d.ahead} ahead; no evidenced ancestor)"
        )
    if not best.complete:
        return where + "; its ingest has not completed"
    nearer = [
        b for b in usable if not b.complete and _closer(found[b.sha], d) and b.sha != best.sha
    ]
    if nearer:
        where += f"; {nearer[0].sha[:12]} is nearer but its ingest has not completed"
    return where


def _closer(a: Distance, b: Distance) -> bool:
    return (not a.is_ancestor, a.behind + a.ahead) < (not b.is_ancestor, b.behind + b.ahead)


def retired(
    bases: Iterable[EvidenceBase],
    keep: int,
    protect: Iterable[str] = (),
    *,
    now: float = 0.0,
    stale_s: float = 86400.0,
) -> list[str]:
    """The bases a retention of ``keep`` lets go: the complete ones past the ``keep`` most
    recently written, and incomplete ones not written for ``stale_s`` (an ingest that died;
    one still running is spared); never one in ``protect`` (just written, or being read)."""
    known = list(bases)
    spared = set(protect)
    complete = sorted((b for b in known if b.complete), key=lambda b: b.written_at, reverse=True)
    old = [b.sha for b in complete[max(keep, 1) :]]
    dead = [b.sha for b in known if not b.complete and b.written_at < now - stale_s]
    return [sha for sha in old + dead if sha not in spared]
