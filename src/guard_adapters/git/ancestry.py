"""How far the commits that hold evidence are from HEAD, in as few git calls as it takes."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from guard_adapters.git.repo import git
from guard_core.bases import Distance, EvidenceBase

# HEAD's ancestors listed in one call; a base further back is measured on its own
_SCAN = 2000


def commit_distances(repo: Path, bases: Sequence[EvidenceBase]) -> dict[str, Distance]:
    """The distance of each base this clone has from HEAD. Ancestors come from one listing of
    HEAD's history: ``behind`` is a base's position in topological order, the exact count on
    a straight history and at most it across merges (only the order among ancestors and the
    reason's figure depend on it: any ancestor's diff holds the whole change). The others are
    measured one by one, and only when no complete base is an ancestor, since a complete
    ancestor is always chosen over them."""
    wanted = {b.sha for b in bases}
    listed = str(git(repo, "rev-list", "--topo-order", f"--max-count={_SCAN}", "HEAD")).split()
    found = {sha: Distance(i, 0) for i, sha in enumerate(listed) if sha in wanted}
    if any(b.complete and b.sha in found for b in bases):
        return found
    for sha in sorted(wanted - found.keys()):
        out = str(git(repo, "rev-list", "--left-right", "--count", f"HEAD...{sha}", check=False))
        counts = out.split()
        if len(counts) == 2 and all(c.isdigit() for c in counts):
            found[sha] = Distance(behind=int(counts[0]), ahead=int(counts[1]))
    return found
