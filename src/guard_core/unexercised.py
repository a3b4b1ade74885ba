"""Which changed ids a complete, fresh ingest proves no test ran in-process: no edges is
evidence of absence only where the code could have been measured. Child processes are no
proof either way; the tests that start them are selected apart."""

from __future__ import annotations

from collections.abc import Collection, Mapping

from guard_core.model import split_id
from guard_core.ports import FunctionFacts
from guard_core.selection import module_region


def ids_to_ask(judged: Collection[str]) -> set[str]:
    """The facts :func:`unexercised` reads: each changed id's module."""
    return {module_region(split_id(f)[0]) for f in judged}


def unexercised(
    judged: Collection[str], known: Mapping[str, FunctionFacts], complete: bool
) -> set[str]:
    """The changed ids without evidence whose module was imported under measurement: the
    ingest saw them not run. A module no test imported proves nothing: a test may read it as
    text (the ingest records no ``.py`` read), run it in a child or by its path, or import an
    installed copy; a module imported before measuring began has evidence (all of it is
    charged to every test)."""
    if not complete:
        return set()
    return {
        f
        for f in judged
        if f in known
        and known[f].no_evidence
        and (module := module_region(split_id(f)[0])) in known
        and not known[module].no_evidence
    }
