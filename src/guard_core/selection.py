"""Which tests each changed region selects, and why: the rules beyond plain covering edges.

Pure logic over the graph-store port. Every rule adds tests with a :class:`Reason`; none removes.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence

import attrs

from guard_core.model import (
    CLASS_BODY,
    MODULE_SCOPE,
    ChangedRegion,
    ChangeKind,
    ChangeSet,
    CoverEdge,
    FileRole,
    Override,
    Reason,
    RegionKind,
    node_id,
    split_id,
)
from guard_core.ports import GraphStore

_MAX_NAME_ROUNDS = 4  # alias and class-body chains followed this deep, then widen


@attrs.define
class Selection:
    """Tests picked so far, each with its reasons; plus widenings that fired."""

    reasons: dict[str, list[Reason]] = attrs.field(factory=lambda: defaultdict(list))
    overrides: list[Override] = attrs.field(factory=list)

    def add(self, test: str, reason: Reason) -> None:
        if reason not in self.reasons[test]:
            self.reasons[test].append(reason)

    def add_edges(self, edges: Iterable[CoverEdge], rule: str) -> None:
        for e in edges:
            self.add(e.test, Reason(rule, e.function, e.confidence))


def judged_id(region: ChangedRegion) -> str:
    """The id whose recorded evidence speaks for a region (the old id of a rename)."""
    return region.old_id or region.id


def module_region(path: str) -> str:
    return node_id(path, MODULE_SCOPE)


def names_closure(store: GraphStore, names: Iterable[str]) -> set[str]:
    """The names plus every re-export of them (``pkg.X`` for ``pkg.mod.X``), transitively."""
    found = set(names)
    frontier = set(found)
    for _ in range(_MAX_NAME_ROUNDS):
        if not frontier:
            break
        aliases = store.aliases_of(frontier)
        frontier = {a for alist in aliases.values() for a in alist} - found
        found |= frontier
    return found


def select_readers(
    store: GraphStore,
    names: Sequence[str],
    evidence: Mapping[str, Sequence[CoverEdge]],
    selection: Selection,
    origin: str,
    min_confidence: float,
) -> None:
    """Tests of the functions that read ``names``, following class bodies that read them
    (a subclass) to the readers of that class, and widening to a module's importers when its
    top-level code reads them."""
    seen: set[str] = set()
    pending = names_closure(store, names)
    for _ in range(_MAX_NAME_ROUNDS):
        if not pending:
            return
        seen |= pending
        readers = store.readers_of(pending)
        pending = set()
        plain: dict[str, str] = {}
        for fid, qualname, dotted, ref in readers:
            # a module body that reads the name selects its import-time evidence (everyone who
            # imports it); a class body that reads it (a subclass) changes that class too
            plain[fid] = ref
            if qualname.endswith(f".{CLASS_BODY}") and dotted:
                cls_dotted = dotted.removesuffix(f".{CLASS_BODY}")
                if cls_dotted not in seen:
                    pending.add(cls_dotted)
        missing = [f for f in plain if f not in evidence]
        extra = store.covering_tests(missing, min_confidence) if missing else []
        by_fn: dict[str, list[CoverEdge]] = defaultdict(list)
        for e in extra:
            by_fn[e.function].append(e)
        for fid, ref in plain.items():
            for e in evidence.get(fid, by_fn.get(fid, [])):
                selection.add(
                    e.test, Reason("reads-changed-name", f"{fid} reads {ref}", e.confidence)
                )
        pending = names_closure(store, pending) - seen
    if pending:
        selection.overrides.append(
            Override(
                "name_chain",
                f"names of {origin} flow through more than "
                f"{_MAX_NAME_ROUNDS} class bodies; widened to run-all",
            )
        )


def changed_source_files(cs: ChangeSet) -> list[str]:
    return sorted({f.path for f in cs.files if f.role is FileRole.SOURCE})


def data_files(cs: ChangeSet) -> list[str]:
    paths = set()
    for f in cs.files:
        if f.role is FileRole.DATA:
            paths.add(f.path)
            if f.old_path:
                paths.add(f.old_path)
    return sorted(paths)


def is_method(region: ChangedRegion) -> bool:
    qual = split_id(region.id)[1]
    parts = qual.split(".")
    return region.region is RegionKind.FUNCTION and len(parts) > 1 and "<locals>" not in parts


def needs_evidence(region: ChangedRegion) -> bool:
    return region.kind is not ChangeKind.ADDED
