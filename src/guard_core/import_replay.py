"""Import-time code, replayed instead of charged to everyone.

A repository module's body runs once, for its first importer, and every test relies on what it
built, so the evidence charges what imports ran to every test (a shared edge). A change to code
that ran there then selects every test. The import probe (:class:`~guard_core.ports.ImportProbe`)
imports the modules as the base had them and as they are now; when the two imports raise alike
and differ only in the repository's own globals, those differing names stand for everything the
import-time code did: the shared edges are dropped and the readers of those names are selected
(through the same line-gated reads as any changed name).

Kept everyone's: what start-up, plug-ins and ``conftest.py`` imports ran (``<session>``: a fresh
import does not replay them), and everything, when the probe cannot compare."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from typing import Any, cast

import attrs

from guard_core.evidence import UNKNOWN_LINE
from guard_core.logs import get_logger
from guard_core.model import CLASS_BODY, ChangedRegion, CoverEdge, split_id
from guard_core.ports import EvidenceReader, ImportProbe, ImportState
from guard_core.rules import RuleInput
from guard_core.selection import Selection, judged_id, member_tail, select_readers

log = get_logger("guard.imports")

ORIGIN = "the state the changed modules' import builds"


class ImportEdges:
    """An evidence reader that tells the edges a test reached only through imports apart:
    ``replayed`` leaves them out, else they pass and ``seen`` notes that one did."""

    def __init__(self, store: EvidenceReader, session_ran: frozenset[str], replayed: bool) -> None:
        self._store = store
        self._session_ran = session_ran
        self._replayed = replayed
        self.seen = False
        # the edges left out, per id: the lines their imports ran (None: some not recorded)
        self.dropped: dict[str, set[int] | None] = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    def replayable(self, edge: CoverEdge) -> bool:
        return edge.shared and edge.function not in self._session_ran

    def _pass(self, edges: list[CoverEdge]) -> list[CoverEdge]:
        if not self._replayed:
            self.seen = self.seen or any(map(self.replayable, edges))
            return edges
        kept = []
        for e in edges:
            if not self.replayable(e):
                kept.append(e)
                continue
            lines = self.dropped.setdefault(e.function, set())
            if lines is not None and e.lines and UNKNOWN_LINE not in e.lines:
                lines |= e.lines
            else:
                self.dropped[e.function] = None
        return kept

    def fill_dropped_lines(self, min_confidence: float) -> None:
        """The lines of the edges left out whose lines were not read (``lines=False``)."""
        unread = [f for f, lines in self.dropped.items() if lines is None]
        if not unread:
            return
        for f in unread:
            self.dropped[f] = set()
        for e in self._store.covering_tests(unread, min_confidence):
            lines = self.dropped[e.function]
            if not self.replayable(e) or lines is None:
                continue
            if e.lines and UNKNOWN_LINE not in e.lines:
                lines |= e.lines
            else:
                self.dropped[e.function] = None

    def covering_tests(
        self, function_ids: Iterable[str], min_confidence: float = 0.0, lines: bool = True
    ) -> list[CoverEdge]:
        return self._pass(self._store.covering_tests(function_ids, min_confidence, lines))

    def tests_covering(
        self, function_ids: Iterable[str], min_confidence: float = 0.0, per_test: int = 3
    ) -> list[CoverEdge]:
        if not self._replayed:
            return self._pass(self._store.tests_covering(function_ids, min_confidence, per_test))
        by_test: dict[str, list[CoverEdge]] = defaultdict(list)
        for e in self.covering_tests(function_ids, min_confidence, lines=False):
            by_test[e.test].append(e)
        return [
            e
            for edges in by_test.values()
            for e in sorted(edges, key=lambda e: -e.confidence)[: max(1, per_test)]
        ]


def select_replaying_imports(
    probe: ImportProbe | None,
    data: RuleInput,
    select: Callable[[RuleInput], Selection],
    worth_it: Callable[[Selection], bool],
) -> tuple[Selection, bool]:
    """The rules' selection, with import-time code replayed when the probe can: else (no probe,
    no record of what start-up ran, a diff from another commit than the evidence's, nothing
    that only imports selected, a run-all anyway, a probe that could not compare) as the
    evidence charges it. True with a replayed selection."""
    session = data.info.session_ran
    measured = data.change.base == data.info.coverage_sha  # the old import is the measured one
    if probe is None or session is None or not data.refined or not measured:
        return select(data), False
    watched = ImportEdges(data.store, session, replayed=False)
    full = select(attrs.evolve(data, store=cast(EvidenceReader, watched)))
    through_imports = watched.seen or any(
        watched.replayable(e) for edges in data.evidence.values() for e in edges
    )
    if not through_imports or not worth_it(full):
        return full, False
    replayed = ImportEdges(data.store, session, replayed=True)
    store = cast(EvidenceReader, replayed)
    narrow_data = attrs.evolve(
        data,
        store=store,
        with_import_edges=data.store,
        evidence={k: replayed._pass(list(edges)) for k, edges in data.evidence.items()},
    )
    narrow = select(narrow_data)
    if narrow.reasons.keys() >= full.reasons.keys():
        return full, False  # imports alone selected nothing more
    state = probe.compare(data.change, data.store.imported_files())
    if state.changed is None:
        log.info("import_probe_inconclusive", detail=state.detail)
        return full, False
    log.debug("import_probe", detail=state.detail, changed=sorted(state.changed)[:50])
    if state.changed:
        select_readers(
            store,
            sorted(state.changed),
            narrow_data.evidence,
            narrow,
            ORIGIN,
            data.floor,
            data.open_classes,
            called_in_evidence=members_in_evidence(narrow_data, lambda r: r.calls_through),
            gate=data.gate,
            properties=members_in_evidence(narrow_data, lambda r: r.was_property),
            compatible_in_evidence=members_in_evidence(narrow_data, _compatible),
        )
    replayed.fill_dropped_lines(data.floor)
    missed = sorted(f for f, ran in replayed.dropped.items() if not _replayed_by(state, f, ran))
    if missed:  # the tests' imports ran it, the probe's did not: another environment
        log.info("import_probe_unreplayed", ids=missed[:20])
        return full, False
    narrow.overrides.extend(o for o in full.overrides if o not in narrow.overrides)
    return narrow, True


def members_in_evidence(data: RuleInput, kind: Callable[[ChangedRegion], bool]) -> frozenset[str]:
    """The changed functions of a ``kind`` (as :func:`member_tail`) whose evidence holds
    every use through the names the probe reports: a plain def's calls ran its body, a plain
    property's reads through instances ran its getter. Not one another changed region binds
    too (the probe's names do not tell them apart)."""
    regions = data.change.regions
    found = {
        member_tail(n) for r in regions if kind(r) and data.evidence.get(judged_id(r))
        for n in _with_owner(r.names)
    }  # fmt: skip
    others = {member_tail(n) for r in regions if not kind(r) for n in _with_owner(r.names)}
    return frozenset(found - others)


def _compatible(region: ChangedRegion) -> bool:
    """A plain def whose signature changed so that every old call binds as before (its names
    are its signature's parts, ``f.__defaults__``): no body change, no call that failed to
    bind (``pytest.raises(TypeError)``) now passing."""
    qualname = split_id(region.id)[1]
    return (
        region.calls_through
        and bool(region.names)
        and all(
            n.rpartition(".")[0].endswith(f".{qualname}")
            and _dunder(n.rpartition(".")[2])
            and not n.endswith(".__doc__")
            for n in region.names
        )
    )


def _dunder(name: str) -> bool:
    return name.startswith("__") and name.endswith("__")


def _with_owner(names: Iterable[str]) -> set[str]:
    """The names, and the function a name's dunder is of (``C.f`` for ``C.f.__defaults__``:
    the probe reports the function, a region its signature's parts)."""
    out = set(names)
    for n in names:
        owner, _, leaf = n.rpartition(".")
        if owner and _dunder(leaf):
            out.add(owner)
    return out


def _replayed_by(state: ImportState, function_id: str, lines: set[int] | None) -> bool:
    """Whether the probe's import of the base ran what the tests' imports ran of
    ``function_id``: every line they recorded (a branch an environment picks is seen), or
    for an id without edges (``lines`` empty), the function (a class body runs as its class's
    name, the n-th definition of a name as that name)."""
    path, sep, qualname = function_id.partition("::")
    if not sep or lines is None:  # a data file, or lines not recorded: not known
        return False
    if lines:
        return lines <= state.lines.get(path, frozenset())
    qualname = qualname.partition("#")[0].removesuffix(f".{CLASS_BODY}")
    return state.ran is not None and f"{path}::{qualname}" in state.ran
