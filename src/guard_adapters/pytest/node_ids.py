"""Which collected items a list of selected ids stands for (stdlib only: imported inside the
measured pytest process)."""

from __future__ import annotations

from collections.abc import Collection

# a file of the ids a measured run runs, the rest collected and deselected (see the runner)
MEASURED_IDS = "GUARD_MEASURED_IDS"


def belongs_to(nodeid: str, selected: Collection[str]) -> bool:
    """Whether the item ``nodeid`` belongs to a selected id: itself, its test function
    (parameters collapse into it), or a file or class it lives in."""
    base = nodeid.split("[", 1)[0]
    if nodeid in selected or base in selected:
        return True
    parts = base.split("::")
    return any("::".join(parts[:i]) in selected for i in range(1, len(parts)))


def unmatched(selected: Collection[str], nodeids: Collection[str]) -> list[str]:
    """The selected ids no collected item belongs to (what pytest calls "not found" when the
    ids are on its command line)."""
    covered: set[str] = set()
    for nodeid in nodeids:
        base = nodeid.split("[", 1)[0]
        covered.update((nodeid, base))
        parts = base.split("::")
        covered.update("::".join(parts[:i]) for i in range(1, len(parts)))
    return sorted(set(selected) - covered)
